#pragma once
// The `copy` kind, the extended reference: fields of one source document copied into every
// target that references it by key (in the target itself, or in each element of one of its
// arrays). This type holds the kind's settings and everything the kind knows: how its JSON
// reads, which writes an event needs, how a fill completes, what `describe` and the
// fingerprint say. A plain value, immutable once read; its functions are pure except
// complete(), which goes through the store it is given.

#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "mapping/fwd.h"
#include "mapping/partition_route.h"
#include "query/matcher.h"

namespace denormd::mapping {

// How one copy target differs from its sources (verify).
struct copy_finding {
  std::vector<std::string> paths;         // target paths that differ from the source
  std::vector<bson::value> drifted_keys;  // source keys whose copies differ (one repair each)
  std::vector<bson::value> missing_keys;  // referenced keys with no source document
};

// The source document whose key is `key`, or nullptr when there is none.
using source_lookup = std::function<const bson::document*(const bson::value& key)>;

struct copy_kind {
  static constexpr std::string_view name = "copy";

  std::string source_key = "_id";  // source field whose value the targets reference
  std::string target_key;          // target field (inside the array element with target_array)
  std::string target_array;        // non-empty: copies live in each matching element
  std::optional<query::matcher> where;
  // Derived by prepare(): where each field lives in the target ("customer.name",
  // "items.$[e].product.title").
  std::vector<std::string> target_paths;

  // Reading. Keys this kind allows besides the common ones, per object ("", "source",
  // "target"); its delete policies and the default one.
  static std::set<std::string> keys(std::string_view object);
  static const std::vector<std::pair<std::string, delete_policy>>& delete_policies();
  static delete_policy default_delete_policy();
  static constexpr bool into_required = false;
  static constexpr bool reads_own_fields = false;
  static constexpr std::string_view written_pointer = "/fields";
  void read_source(spec_reader& r, spec_object& source);
  void read_target(spec_reader& r, spec_object& target);
  void read_rest(spec_reader& r, spec_object& root, const mapping& m);
  void prepare(const mapping& m);

  // The field's place in the target ("customer.name"; "items.$[e].customer.name").
  std::string target_path(const mapping& m, std::string_view field) const;
  std::vector<std::string> written_paths(const mapping& m) const;
  void add_watched_paths(const mapping& m, std::vector<std::string>& out) const;
  // The source fields planning reads beyond the watched ones.
  std::vector<std::string> key_paths() const;
  // Target paths whose change makes a target need a fill (fillNewTargets).
  std::vector<std::string> fill_paths() const;
  std::vector<std::string> new_target_reads() const { return {}; }
  stream_images needs_images() const { return {}; }
  stream_images target_needs_images() const { return {}; }

  // Planning.
  stream_route route() const;
  void plan(const mapping& m, const std::vector<std::string>& watched, const change_event& ev,
            std::vector<write_op>& out, std::vector<std::string>* notes,
            const key_share& share) const;
  // Whether the target of `ev` (its pre-image `before`, if any) did not name `key` before.
  bool key_is_new(const change_event& ev, const bson::document* before,
                  const bson::value& key) const;
  // An event of the target collection (fillNewTargets): a new or re-keyed target.
  void plan_new_target(const mapping& m, const std::vector<std::string>& watched,
                       const change_event& ev, std::vector<write_op>& out) const;
  // A later copy of the same source key replaces an earlier one (merge_rule::last_wins):
  // `later` keeps its statement, so there is nothing to absorb and nothing to rebuild.
  void absorb(const mapping& m, write_op& later, write_op&& earlier) const;
  void finish(const mapping& m, write_op&& op, std::vector<write_op>& out) const;
  // Completes one fill (as complete() of consecutive fills, for one).
  bool complete(const mapping& m, const write_op& op, document_store& store) const;
  // Completes consecutive fills: reads the sources, writes the copies, and reads the sources
  // again until what was written is still current, in rounds of one read, one bulk write and
  // one read again for many fills (each round's targets distinct, so plan order holds). False
  // when the store failed.
  bool complete(const mapping& m, std::span<const write_op* const> ops,
                document_store& store) const;
  // A fill carries its source query: `plan` shows nothing more.
  void explain(const mapping& m, const write_op& op, bson::document& out) const;
  // {$set: present fields, $unset: missing ones} from `source`; nullptr unsets every copy.
  bson::document update_for(const mapping& m, const bson::document* source) const;

  // The expected state (verify). The source keys one target references: its key, or the key
  // of each element of the array (equal keys once, in element order); missing and null keys
  // and keys that cannot be references are left out, as no event ever writes those.
  std::vector<bson::value> referenced_keys(const mapping& m, const bson::document& target) const;
  // Compares a target with its sources. Where the source is gone, the copies are checked
  // only under onSourceDelete "unset" (they must be absent); under "keep" anything goes.
  copy_finding check(const mapping& m, const bson::document& target,
                     const source_lookup& source) const;

  // Describing.
  void describe(const mapping& m, std::string& out) const;
  void indexes(const mapping& m, std::vector<index_need>& out) const;
  // What a valid mapping does that its author may not expect, one sentence each.
  void warnings(const mapping& m, std::vector<std::string>& out) const;
  void fingerprint(std::string& out) const;

 private:
  // One round of fills with distinct targets.
  bool complete_round(const mapping& m, std::span<const write_op* const> ops,
                      document_store& store) const;
};

}  // namespace denormd::mapping
