#pragma once
// The contract every mapping kind meets (docs/architecture.md, "Mapping kinds"). Each kind's .cc
// checks itself with static_assert(mapping_kind<K>), and the planner checks every alternative
// of any_kind, so a kind that lacks a member, or spells one differently, does not compile. The
// rest of the daemon reaches a kind only through these members, with mapping::visit.

#include <concepts>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "mapping/change_event.h"
#include "mapping/document_store.h"
#include "mapping/mapping.h"
#include "mapping/partition_route.h"
#include "mapping/spec_reader.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

template <class K>
concept mapping_kind = std::semiregular<K> &&
    requires(K& k, const K& ck, const mapping& cm, mapping& m, spec_reader& r, spec_object& o,
             const std::vector<std::string>& watched, const change_event& ev,
             std::vector<write_op>& ops, std::vector<std::string>* notes,
             std::vector<std::string>& paths, std::span<const write_op* const> batch,
             document_store& store, write_op& op, write_op&& other, std::string& text,
             std::vector<index_need>& needs, bson::document& plan_line, const key_share& share) {
  // Reading: the name in "kind", the keys it allows besides the common ones per object
  // ("", "source", "target"), its delete policies, and how "into" and "fields" read.
  { K::name } -> std::convertible_to<std::string_view>;
  { K::keys(std::string_view{}) } -> std::same_as<std::set<std::string>>;
  {
    K::delete_policies()
    } -> std::same_as<const std::vector<std::pair<std::string, delete_policy>>&>;
  { K::default_delete_policy() } -> std::same_as<delete_policy>;
  { K::into_required } -> std::convertible_to<bool>;
  { K::written_pointer } -> std::convertible_to<std::string_view>;
  // True: the kind reads "fields" itself (read_fields); false: they are source paths.
  { K::reads_own_fields } -> std::convertible_to<bool>;
  k.read_source(r, o);
  k.read_target(r, o);
  k.read_rest(r, o, cm);
  k.prepare(cm);

  // What it reads and writes.
  { ck.written_paths(cm) } -> std::same_as<std::vector<std::string>>;
  ck.add_watched_paths(cm, paths);
  // Source fields planning reads beyond the watched ones.
  { ck.key_paths() } -> std::same_as<std::vector<std::string>>;
  // Target paths whose change makes a target new (fillNewTargets), and what planning such
  // a target reads besides.
  { ck.fill_paths() } -> std::same_as<std::vector<std::string>>;
  { ck.new_target_reads() } -> std::same_as<std::vector<std::string>>;
  // The document images its source's and its target's change streams must carry.
  { ck.needs_images() } -> std::same_as<stream_images>;
  { ck.target_needs_images() } -> std::same_as<stream_images>;

  // How its source events are routed to the partitions of a partitioned source.
  { ck.route() } -> std::same_as<stream_route>;

  // Planning, merging and completing. `share`: the partition planning (whole for a namespace
  // that is not partitioned); the kind writes only the dependents whose keys it owns.
  ck.plan(cm, watched, ev, ops, notes, share);
  ck.plan_new_target(cm, watched, ev, ops);
  // `op` (kept) now also applies `other`, both the kind's ops with the same merge rule
  // and merge key (the coalescer decides which and where; it merges their event times).
  ck.absorb(cm, op, std::move(other));
  // The statement(s) of an op that absorbed others, rebuilt from what it holds.
  ck.finish(cm, std::move(other), ops);
  // Completes consecutive ops that need reads (fill, refill, recompute) in plan order.
  // False when the store failed (it keeps why).
  { ck.complete(cm, batch, store) } -> std::same_as<bool>;
  // What `denormd plan` shows of an op of this kind beyond the op itself.
  ck.explain(cm, std::as_const(op), plan_line);

  // Describing.
  ck.describe(cm, text);
  ck.indexes(cm, needs);
  ck.warnings(cm, paths);
  ck.fingerprint(text);
} &&(!K::reads_own_fields ||
     requires(K & k, spec_reader& r, spec_object& o, mapping& m) { k.read_fields(r, o, m); });

namespace detail {
template <class V>
struct all_kinds;
template <class... K>
struct all_kinds<std::variant<K...>> : std::bool_constant<(mapping_kind<K> && ...)> {};
}  // namespace detail
static_assert(detail::all_kinds<any_kind>::value, "every alternative of any_kind is a kind");

}  // namespace denormd::mapping
