#pragma once
// The change an operator update made, recorded the way MongoDB's $v:2 oplog diff records it
// (mongo::v2_log_builder) and turned into a change stream's updateDescription the way
// mongo::change_stream_document_diff_parser does. Keeping MongoDB's intermediate form is what
// makes the reported paths match: a field created under a new parent is reported as the new
// parent (`"a": {b: 1}`), appended array elements as `"arr.N"`, a rewritten array whole.
// Lifecycle: one per applied update. Not thread-safe.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"

namespace mongo_emulator::engine {

// One component of a path in the document being updated.
struct path_component {
  std::string name;
  bool array_index = false;  // the parent is an array
};
using runtime_path = std::vector<path_component>;

std::string dotted(const runtime_path& path);

struct update_description {
  denormd::bson::document updated_fields;
  std::vector<std::string> removed_fields;
  // {field, newSize} documents: an array whose kept prefix is unchanged was shortened. Only
  // pipeline updates produce them (operator updates log a shrunk array whole, as MongoDB does).
  std::vector<denormd::bson::document> truncated_arrays;
  // A replacement-style update changed the document: the server reports a `replace` event.
  bool replaced = false;

  bool empty() const {
    return !replaced && updated_fields.empty() && removed_fields.empty() &&
           truncated_arrays.empty();
  }
  // {updatedFields, removedFields, truncatedArrays} as a change event carries it.
  denormd::bson::document to_document() const&;
  // The same, moving the fields out (no copy of the updated values).
  denormd::bson::document to_document() &&;
};

// The change a pipeline update made, as MongoDB's doc_diff::computeOplogDiff computes it from
// the old and new documents (field by field, arrays element by element, a sub-document or
// array reported whole when its diff would be larger than its new value), turned into an
// updateDescription. nullopt: MongoDB logs the update as a replacement (the diff is not
// smaller than the new document), reported as a `replace` event.
std::optional<update_description> diff_documents(const denormd::bson::document& pre,
                                                 const denormd::bson::document& post);

// MongoDB's binaryEqual: same field names, order, types and bytes (so -0.0 differs from 0.0
// and a NaN equals the same NaN), what decides a pipeline update's no-op.
bool identical(const denormd::bson::document& a, const denormd::bson::document& b);

class change_diff {
 public:
  change_diff();
  ~change_diff();
  change_diff(const change_diff&) = delete;
  change_diff& operator=(const change_diff&) = delete;

  // An existing field got a new value.
  void updated(const runtime_path& path, denormd::bson::value v);
  // A field was created; components from `first_new` on did not exist before.
  void created(const runtime_path& path, std::size_t first_new, denormd::bson::value v);
  void deleted(const runtime_path& path);

  update_description describe() const;

  struct node;

 private:
  std::unique_ptr<node> root_;
};

}  // namespace mongo_emulator::engine
