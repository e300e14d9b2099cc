#pragma once
// One collection: documents in insertion (natural) order, keyed by a record id, plus its
// indexes: `_id_` (a hash map, since `_id` lookups dominate) and ordered secondary indexes.
// Documents are immutable and shared: an update swaps in a new version, so cursors and change
// events can hold snapshots without copying.
// Not synchronized: owned by storage and accessed under its lock.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bson/value.h"
#include "bson/value_hash.h"
#include "common/expected.h"
#include "index.h"

namespace denormd::query {
class matcher;
}

namespace mongo_emulator {

class transaction;

namespace bson = denormd::bson;
using doc_ptr = std::shared_ptr<const bson::document>;

// What a DuplicateKey (11000) error carries besides its message: the index's key pattern and
// the conflicting key, which MongoDB 4.4+ return as `keyPattern` and `keyValue`.
struct duplicate_key_details : denormd::error_details {
  bson::document key_pattern;
  bson::document key_value;
};
// Appends `keyPattern` and `keyValue` to an error reply or write error when `e` carries them.
void append_duplicate_key_details(const denormd::error& e, bson::document& out);

// Whether changing the document at dotted path `changed` may change the keys an index on
// `index_field` takes from it (conservative: true unless the paths are provably disjoint).
bool path_may_affect(std::string_view changed, std::string_view index_field);

class collection {
 public:
  collection(std::string db, std::string name);
  // A transaction's view of the stored collection `base`: it reads `base` as the
  // transaction's snapshot had it (see keep_snapshot_version) plus the transaction's own
  // writes, which it keeps apart. Nothing of `base` is copied, so a view costs what the
  // transaction touches, not the collection's size. A view shares `base`'s indexes and refuses
  // index changes.
  static std::unique_ptr<collection> view_of(std::shared_ptr<const collection> base);

  const std::string& db() const { return db_; }
  const std::string& name() const { return name_; }
  std::string ns() const { return db_ + "." + name_; }
  // renameCollection keeps the contents and the UUID.
  void rename(std::string db, std::string name) {
    db_ = std::move(db);
    name_ = std::move(name);
  }
  const bson::binary& uuid() const { return *uuid_; }
  // Shared, so that each change entry can carry it without a copy.
  const std::shared_ptr<const bson::binary>& shared_uuid() const { return uuid_; }
  bool record_images() const { return record_images_; }
  void set_record_images(bool on) { record_images_ = on; }
  const bson::document& options() const { return options_; }
  bson::document& options() { return options_; }
  // The transaction whose private view this is; nullptr for the stored collection.
  transaction* owner() const { return owner_; }
  void set_owner(transaction* t) { owner_ = t; }

  std::size_t size() const;
  // The document of a record (nullptr once erased or when unknown).
  const doc_ptr& get(std::uint64_t record) const;
  std::optional<std::uint64_t> find_id(const bson::value& id) const;

  // Mutations keep every index in step; unique violations fail with code 11000 and
  // MongoDB's message, leaving the collection unchanged.
  denormd::expected<std::uint64_t> insert(doc_ptr doc);
  denormd::status replace(std::uint64_t record, doc_ptr doc);
  // replace() after an operator update whose change-event description ({updatedFields,
  // removedFields, truncatedArrays}) names every path it changed: indexes on no changed path
  // keep their keys, so they are neither recomputed nor re-checked.
  denormd::status update(std::uint64_t record, doc_ptr doc,
                         const bson::document& update_description);
  void erase(std::uint64_t record);

  // Record ids that may match `m`, in natural order: an index equality lookup when the filter
  // pins an indexed key prefix (or a lookup per value of an indexed `$in`, or the union of
  // such lookups when every clause of a top-level `$or` has one), otherwise every record.
  std::vector<std::uint64_t> candidates(const denormd::query::matcher& m) const;

  // `_id_` first, then the secondary indexes in creation order.
  std::vector<index_spec> index_specs() const;
  // Builds an index over the existing documents. Returns false when an identical index already
  // exists; fails on a name or key-pattern conflict or on duplicate keys.
  denormd::expected<bool> create_index(index_spec spec);
  denormd::status drop_index(std::string_view name);
  // Hides or unhides the secondary index `name` (collMod); returns whether it was hidden.
  // Index selection skips hidden indexes, as MongoDB's planner does.
  denormd::expected<bool> set_index_hidden(std::string_view name, bool hidden);

  // A view: its base changed document `id` after the transaction's snapshot; the view keeps
  // showing the snapshot's version `before` (none: the document did not exist then), at
  // `record` when known (the base's record the document had), else at a record of its own.
  void keep_snapshot_version(const bson::value& id, doc_ptr before,
                             std::optional<std::uint64_t> record);

 private:
  using id_set = std::unordered_set<bson::value, bson::value_hash, bson::value_equal>;
  using id_records =
      std::unordered_map<bson::value, std::uint64_t, bson::value_hash, bson::value_equal>;

  // A view's unique-index check: a document the view sees, other than `self`, holding one of
  // `doc`'s keys of a unique index of the base.
  denormd::status check_unique_in_view(const bson::document& doc, std::uint64_t self) const;
  // The records an index lookup gives for `filter` (sorted, distinct), or nullopt when no
  // index serves it. `depth` bounds the descent into nested $or.
  std::optional<std::vector<std::uint64_t>> indexed_candidates(const bson::document& filter,
                                                               int depth = 0) const;
  // The view's new record ids start here, above any record the base will ever number.
  static constexpr std::uint64_t first_own_record = std::uint64_t{1} << 48;

  // `affected` (when given) says which secondary indexes may change; the others are skipped.
  denormd::status check_unique(const bson::document& doc, std::uint64_t self,
                               std::vector<index::key_set>& keys,
                               const std::vector<bool>* affected = nullptr) const;
  denormd::status replace_keys(std::uint64_t record, doc_ptr doc,
                               const std::vector<bool>* affected);
  denormd::error duplicate_error(const index_spec& spec, const index::key& k) const;

  std::string db_;
  std::string name_;
  std::shared_ptr<const bson::binary> uuid_;
  bool record_images_ = false;
  transaction* owner_ = nullptr;
  bson::document options_;
  std::vector<doc_ptr> records_;  // record id r lives at r - 1; erased records stay null
  std::unordered_map<bson::value, std::uint64_t, bson::value_hash, bson::value_equal> ids_;
  index_spec id_spec_;
  std::vector<index> indexes_;  // secondary indexes

  // A view's own state (base_ set); empty in a stored collection.
  std::shared_ptr<const collection> base_;
  // Records whose version differs from the base's: the transaction's writes and the snapshot
  // versions of documents others changed since (nullptr: not there in the view).
  std::unordered_map<std::uint64_t, doc_ptr> own_;
  id_records own_ids_;  // the _id of each own_ record holding a document
  id_set shadowed_;     // ids whose base versions the view does not see (changed since)
  std::uint64_t next_own_record_ = first_own_record;
};

}  // namespace mongo_emulator
