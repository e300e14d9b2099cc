#pragma once
// Which partition of a partitioned namespace plans what (docs/architecture.md, "Partitioned
// streams"): a key belongs to the partition its hashed index key gives (the server computes the
// same with $toHashedIndexKey), so that every write to one dependent is planned by one stream, in
// its order. Pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "mapping/ns.h"
#include "query/matcher.h"

namespace denormd::mapping {

// How a kind's source events are routed: by the value at `key_path` (of the document after the
// change; of the one before it for a delete), except the events that can move its dependents,
// which every partition reads (each then narrows what it writes to its own dependents).
struct stream_route {
  std::string key_path;
  // Deletes, replacements and updates of documents gone since go to every partition (where
  // the child counted is unknown).
  bool everywhere_on_delete = false;
  // An update touching one of these goes to every partition.
  std::vector<std::string> moving_paths;
};

// The route of a kind whose children name their parent in `parent_key` (recent, aggregate):
// where a deleted, replaced or moved child was listed is unknown, so every partition reads
// those changes (a change of the parent key or of a path of `filter`) and takes it out of its
// own parents.
stream_route child_route(const std::string& parent_key,
                         const std::optional<query::matcher>& filter);

// Whether `share` plans for `key`: always for a whole namespace.
bool owns(const partition& share, const bson::value& key);

// What the streams of another layout of the namespace (another partition count, or none) have
// applied, while this one takes over from them: after[i] is the position (a resume token's
// `_data`) through which old partition i of `count` applied its keys (count 1: the whole
// namespace). A key's events up to its old owner's position are applied already.
struct handover {
  int count = 1;
  std::vector<std::string> after;
  // Whether the event at `position` is after every old partition's.
  bool passed(std::string_view position) const;
  bool operator==(const handover&) const = default;
};

// A unit's stored position: its partition (whole for the namespace) and the position (a resume
// token's `_data`) its checkpoint names.
struct unit_position {
  partition part;
  std::string position;
};

// What partition `mine` takes over, given the stored positions of every unit of its namespace:
// the positions of the other layout stored most recently (the one whose least position is the
// greatest; a layout left behind by an earlier change is older), "" for an old partition that
// stored none. nullopt when there is no other layout, or `mine`'s own position is past all of
// them (nothing is left to hand over).
std::optional<handover> handover_for(const partition& mine,
                                     const std::vector<unit_position>& stored);

// The keys one event is planned for by one partition: those it owns, and while it takes over
// (`from`), only those whose old owner has not applied the event at `position`. Refers to
// `from` and `position`, which must outlive it. Plain value.
class key_share {
 public:
  key_share() = default;  // a whole namespace, no hand-over: every key
  key_share(partition mine, const handover* from, std::string_view position);
  bool owns(const bson::value& key) const;
  // `filter` narrowed to the dependents whose `field` holds a key this share owns (for a write
  // whose dependents the event does not name); `filter` itself for every key. `field` comes from
  // the mapping, never from a document.
  bson::document narrowed(bson::document filter, std::string_view field) const;
  bool every_key() const { return mine_.whole() && from_ == nullptr; }

 private:
  partition mine_;
  const handover* from_ = nullptr;
  std::string_view position_;
};

// The value an event is routed by: `_id` from the document key, any other path from the
// document after the change (before it, for a delete); null where there is none.
bson::value route_value(const bson::value& id, const bson::document* after,
                        const bson::document* before, bool is_delete, std::string_view key_path);

// The aggregation expression true where `key` (an expression) belongs to `share`:
// {$eq: [{$abs: {$mod: [{$toHashedIndexKey: {$ifNull: [key, null]}}, N]}}, i]}.
bson::document owns_expr(const partition& share, bson::value key);

// `filter` narrowed to the documents whose `field` holds a key of `share` (for a write whose
// dependents the event does not name: each partition writes only its own). `filter` as it is
// for a whole namespace. `field` comes from the mapping, never from a document.
bson::document narrowed(bson::document filter, const partition& share, std::string_view field);

// The server's side of route_value, as an expression: "$documentKey._id" for `_id`, else the path
// in fullDocument (fullDocumentBeforeChange for a delete). nullopt for a dotted path (an array
// on the way gives the server other values than route_value): such events go to every partition.
std::optional<bson::value> route_expr(std::string_view key_path);

}  // namespace denormd::mapping
