#include "ops/commands/verifier.h"

#include "sink/computed_evaluator.h"
#include "sink/failing_children.h"

#include <algorithm>
#include <functional>
#include <set>

#include "bson/identical.h"
#include "common/overloaded.h"
#include "mapping/reference.h"
#include "ops/commands/computed_reads.h"
#include "ops/commands/drift.h"
#include "ops/commands/orphan_sweep.h"
#include "sink/writer.h"

namespace denormd::ops {

namespace {

using batch_handler = std::function<mongo::status(std::vector<bson::document>&)>;

// Streams a collection in _id order, `opts.batch_size` documents at a time (only those of
// `opts.only_ids`, when set). `stopped` tells whether it ended early on request.
mongo::status walk_batches(mongo::connection& conn, const mapping::ns& ns, bson::document filter,
                           mongo::find_options find, const verify_options& opts,
                           std::stop_token& stop, bool& stopped, const batch_handler& each) {
  if (opts.only_ids) {
    filter = mapping::with_filter(
        bson::document{{"_id", mapping::keys_match("_id", *opts.only_ids)}}, filter);
  }
  find.sort = bson::document{{"_id", 1}};
  find.batch_size = static_cast<std::int32_t>(opts.batch_size);
  std::vector<bson::document> batch;
  std::optional<mongo::driver_error> failed;
  auto handle = [&]() -> bool {
    const std::size_t n = batch.size();
    auto handled = each(batch);
    batch.clear();
    if (!handled) failed = handled.error();
    if (!failed && opts.after_batch && !opts.after_batch(n)) stopped = true;
    return !failed && !stopped;
  };
  auto st = conn.find_each(ns.db, ns.coll, filter, find, [&](bson::document&& doc) {
    if (stop.stop_requested()) {
      stopped = true;
      return false;
    }
    batch.push_back(std::move(doc));
    return batch.size() < opts.batch_size || handle();
  });
  if (failed) return *failed;
  if (!st) return st;
  if (stopped || batch.empty()) return {};
  handle();
  if (failed) return *failed;
  return {};
}

// The elements a recent array holds for the children matching `filter`, in `children`' order.
mongo::status read_elements(mongo::connection& conn, const mapping::mapping& m,
                            const mapping::recent_kind& k, const bson::document& filter,
                            const mongo::find_options& children, bson::array& out) {
  std::vector<bson::document> found;
  auto st = conn.find_each(m.source.db, m.source.coll, filter, children, [&](bson::document&& c) {
    found.push_back(std::move(c));
    return true;
  });
  if (!st) return st;
  // A field whose expression fails is absent from the element, as a refill writes it.
  if (auto computed = compute_fields(conn, m, found); !computed) return computed.error();
  for (const auto& child : found)
    out.push_back(k.element(m, child));
  return {};
}

// The top-level component of a dotted path.
std::string top(const std::string& path) {
  return path.substr(0, path.find('.'));
}

void project(bson::document& projection, const std::string& path) {
  const std::string field = top(path);
  if (!projection.contains(field)) projection.append(field, 1);
}

}  // namespace

verifier::verifier(mongo::connection& conn, const mapping::planner& planner, metrics::metrics& m,
                   std::string meta_db)
    : conn_(conn), planner_(planner), metrics_(m), meta_db_(std::move(meta_db)) {}

mongo::result<verify_report> verifier::run(const std::vector<const mapping::mapping*>& which,
                                           const verify_options& opts, std::stop_token stop) {
  verify_report report;
  report.repair = opts.repair;
  for (const mapping::mapping* m : which) {
    if (stop.stop_requested()) {
      report.complete = false;
      break;
    }
    mapping_report r;
    r.mapping = m->name;
    r.kind = std::string(m->kind_name());
    r.source = m->source.full();
    r.target = m->target.full();
    auto st = m->visit(overloaded{
        [&](const mapping::copy_kind& k) {
          r.reports_orphans = true;
          r.orphans_allowed = m->on_source_delete == mapping::delete_policy::keep;
          return verify_copy(*m, k, opts, stop, r);
        },
        [&](const mapping::recent_kind& k) { return verify_recent(*m, k, opts, stop, r); },
        [&](const mapping::aggregate_kind& k) { return verify_aggregate(*m, k, opts, stop, r); }});
    if (!st) return st.error();
    report.mappings.push_back(std::move(r));
  }
  if (stop.stop_requested()) report.complete = false;
  return report;
}

mongo::status verifier::verify_copy(const mapping::mapping& m, const mapping::copy_kind& kind,
                                    const verify_options& opts, std::stop_token& stop,
                                    mapping_report& out) {
  // Targets outside `where` keep their snapshot: only the others are compared.
  const bson::document filter = kind.where ? kind.where->filter() : bson::document{};
  mongo::find_options targets;
  targets.projection = copy_target_projection(m, kind);
  mongo::find_options sources;
  if (!planner_.reads_whole_document(m.source)) {
    for (const auto& f : planner_.document_fields(m.source))
      sources.projection.append(f, 1);
    project(sources.projection, kind.source_key);
  }
  sink::writer writer(conn_, metrics_, sink::writer_options{meta_db_, opts.dry_run});

  bool stopped = false;
  return walk_batches(
      conn_, m.target, filter, targets, opts, stop, stopped,
      [&](std::vector<bson::document>& batch) -> mongo::status {
        auto found = read_sources(conn_, m, kind, batch, sources);
        if (!found) return found.error();
        const mapping::source_lookup lookup = [&](const bson::value& key) -> const bson::document* {
          auto it = found->find(key);
          return it == found->end() ? nullptr : &it->second;
        };
        std::vector<mapping::write_op> repairs;
        std::vector<std::size_t> repair_target;  // for each repair, which planned target
        std::vector<written_copy> written;       // what each repair was planned from
        std::size_t planned_targets = 0;
        for (const auto& t : batch) {
          const bson::value id = t.get("_id") != nullptr ? *t.get("_id") : bson::value{};
          mapping::copy_finding finding = kind.check(m, t, lookup);
          ++out.checked;
          if (!finding.missing_keys.empty()) {
            ++out.orphaned;
            if (out.orphan_examples.size() < opts.max_examples) {
              out.orphan_examples.push_back(orphan_example{
                  id, bson::array(finding.missing_keys.begin(), finding.missing_keys.end())});
            }
          }
          if (finding.paths.empty()) continue;
          ++out.drifted;
          if (opts.on_drift) opts.on_drift(m, drift_example{id, finding.paths}, t);
          if (out.examples.size() < opts.max_examples) {
            out.examples.push_back(drift_example{id, std::move(finding.paths)});
          }
          if (!opts.repair) continue;
          bool planned = false;
          for (const auto& key : finding.drifted_keys) {
            const bson::document* source = lookup(key);
            written.push_back(
                written_copy{id, key, source != nullptr ? std::optional(*source) : std::nullopt});
            for (auto& op : plan_source(planner_, m, kind, key, source)) {
              narrow_to(op, id);
              repairs.push_back(std::move(op));
              repair_target.push_back(planned_targets);
              planned = true;
            }
          }
          if (planned) ++planned_targets;
        }
        if (repairs.empty()) return {};
        if (auto st = writer.apply(repairs, {}, m.source); !st) return st;
        if (opts.dry_run) return {};
        // A target is repaired when none of its writes was refused.
        std::set<std::size_t> refused;
        for (const mapping::write_op* op : writer.rejected())
          refused.insert(repair_target[static_cast<std::size_t>(op - repairs.data())]);
        out.repaired += planned_targets - refused.size();
        out.unrepaired += refused.size();
        return rewrite_changed(m, kind, std::move(written), sources, writer);
      });
}

mongo::status verifier::rewrite_changed(const mapping::mapping& m, const mapping::copy_kind& kind,
                                        std::vector<written_copy> written,
                                        const mongo::find_options& sources, sink::writer& writer) {
  // The stream may have applied a newer source between our read and our write: a change
  // after the last read below is applied by the stream after the write, as for a backfill.
  while (!written.empty()) {
    bson::array keys;
    for (const auto& w : written)
      keys.push_back(w.key);
    auto now = read_source_keys(conn_, m, kind, keys, sources);
    if (!now) return now.error();
    std::vector<written_copy> changed;
    std::vector<mapping::write_op> again;
    for (auto& w : written) {
      const auto it = now->find(w.key);
      const bson::document* source = it == now->end() ? nullptr : &it->second;
      // identical, not ==: a NaN in the source equals itself here, or this would never end.
      const bool same =
          source == nullptr ? !w.source : w.source && bson::identical(*w.source, *source);
      if (same) continue;
      for (auto& op : plan_source(planner_, m, kind, w.key, source)) {
        narrow_to(op, w.id);
        again.push_back(std::move(op));
      }
      changed.push_back(written_copy{std::move(w.id), std::move(w.key),
                                     source != nullptr ? std::optional(*source) : std::nullopt});
    }
    if (again.empty()) return {};
    if (auto st = writer.apply(again, {}, m.source); !st) return st;
    written = std::move(changed);
  }
  return {};
}

mongo::status verifier::verify_recent(const mapping::mapping& m, const mapping::recent_kind& k,
                                      const verify_options& opts, std::stop_token& stop,
                                      mapping_report& out) {
  mongo::find_options parents;
  parents.projection.append("_id", 1);
  project(parents.projection, k.parent_field);
  project(parents.projection, m.into);
  mongo::find_options children;
  children.sort = k.child_sort(m);
  children.limit = k.limit;
  if (!project_field_sources(children.projection, m)) children.projection = {};
  sink::writer writer(conn_, metrics_, sink::writer_options{meta_db_, opts.dry_run});

  const mapping::refill_query refill =
      std::get<mapping::refill_write>(k.refill(m, {}, mapping::merge_rule::mapping_barrier).what)
          .children;
  // The children a parent's array must equal: its first `limit`, or under "pull" the ones the
  // array names, as they are now (nullopt: it cannot be what pull keeps).
  const bool pull = m.on_source_delete == mapping::delete_policy::pull;
  auto expected_of = [&](const bson::document& parent, const bson::value& key,
                         std::optional<bson::array>& expected) -> mongo::status {
    bson::document filter = mapping::children_filter(refill, key);
    std::optional<bson::array> held;
    if (pull && !(held = k.held_ids(m, parent))) return {};
    expected.emplace();
    if (held && held->empty()) return {};
    if (held) {
      filter = mapping::with_filter(std::move(filter),
                                    bson::document{{"_id", mapping::keys_match("_id", *held)}});
    }
    return read_elements(conn_, m, k, filter, children, *expected);
  };
  bool stopped = false;
  return walk_batches(conn_, m.target, bson::document{}, parents, opts, stop, stopped,
                      [&](std::vector<bson::document>& batch) -> mongo::status {
                        bson::array drifted;
                        for (const auto& parent : batch) {
                          const bson::value* key = parent.find_path(k.parent_field);
                          const bson::value* id = parent.get("_id");
                          // A refill skips these too: no child can name such a parent.
                          if (key == nullptr || id == nullptr || mapping::reference_problem(*key) ||
                              mapping::reference_problem(*id)) {
                            continue;
                          }
                          std::optional<bson::array> expected;
                          if (auto st = expected_of(parent, *key, expected); !st) return st;
                          std::vector<std::string> paths{m.into};
                          if (expected) paths = k.check(m, parent, *expected);
                          ++out.checked;
                          if (paths.empty()) continue;
                          ++out.drifted;
                          if (opts.on_drift) opts.on_drift(m, drift_example{*id, paths}, parent);
                          if (out.examples.size() < opts.max_examples) {
                            out.examples.push_back(drift_example{*id, std::move(paths)});
                          }
                          drifted.push_back(*id);
                        }
                        if (!opts.repair || drifted.empty()) return {};
                        const std::uint64_t n = drifted.size();
                        std::vector<mapping::write_op> repairs{k.refill(
                            m, bson::document{{"_id", bson::document{{"$in", std::move(drifted)}}}},
                            mapping::merge_rule::mapping_barrier)};
                        // The daemon may be pushing to these parents meanwhile.
                        repairs.front().as<mapping::refill_write>()->recheck = true;
                        if (auto st = writer.apply(repairs, {}, m.source); !st) return st;
                        if (opts.dry_run) return {};
                        const std::uint64_t refused =
                            std::min<std::uint64_t>(writer.refused_writes(), n);
                        out.repaired += n - refused;
                        out.unrepaired += refused;
                        return {};
                      });
}

mongo::result<std::optional<std::vector<bson::document>>> verifier::group_leaving_out_failures(
    const mapping::mapping& m, const mapping::aggregate_kind& k, const bson::array& keys,
    std::vector<mapping::failing_child>& failing) {
  using mapping::aggregate_kind;
  for (int round = 0;; ++round) {
    auto groups = conn_.aggregate(m.source.db, m.source.coll, k.pipeline(keys, failing));
    if (groups) return std::optional<std::vector<bson::document>>(std::move(groups).value());
    // Only an expression can make the server refuse the aggregation for good: its children
    // that fail are found, and left out as the daemon leaves them out.
    if (!m.has_computed_fields() || !sink::refused_for_the_data(groups.error()))
      return groups.error();
    if (round == aggregate_kind::max_failing_rounds ||
        failing.size() >= aggregate_kind::max_failing_children)
      return std::optional<std::vector<bson::document>>{};
    sink::computed_evaluator evaluator(conn_);
    auto found =
        sink::find_failing_children(conn_, evaluator, m, k.children_match(keys), k.parent_key,
                                    aggregate_kind::max_failing_children - failing.size());
    if (!found) return found.error();
    if (found->empty()) return std::optional<std::vector<bson::document>>{};
    failing.insert(failing.end(), std::make_move_iterator(found->begin()),
                   std::make_move_iterator(found->end()));
  }
}

void verifier::note_failing(const std::vector<mapping::failing_child>& failing,
                            const verify_options& opts, mapping_report& out) {
  for (const auto& f : failing) {
    const bson::value* id = f.input.get("_id");
    ++out.failing;
    if (out.failing_examples.size() < opts.max_examples)
      out.failing_examples.push_back({f.parent_key, id != nullptr ? *id : bson::value(), f.error});
  }
}

void verifier::note_unverifiable(const bson::value& parent, const std::string& why,
                                 const verify_options& opts, mapping_report& out) {
  ++out.failing;
  if (out.failing_examples.size() < opts.max_examples)
    out.failing_examples.push_back({parent, bson::value(), why});
}

mongo::status verifier::verify_aggregate(const mapping::mapping& m,
                                         const mapping::aggregate_kind& k,
                                         const verify_options& opts, std::stop_token& stop,
                                         mapping_report& out) {
  mongo::find_options parents;
  parents.projection.append("_id", 1);
  project(parents.projection, k.parent_field);
  for (const auto& p : k.written_paths(m))
    project(parents.projection, p);
  sink::writer writer(conn_, metrics_, sink::writer_options{meta_db_, opts.dry_run});
  bool stopped = false;
  return walk_batches(
      conn_, m.target, bson::document{}, parents, opts, stop, stopped,
      [&](std::vector<bson::document>& batch) -> mongo::status {
        // One aggregation per batch, as a recompute makes it.
        bson::array keys;
        std::vector<const bson::document*> checked;
        for (const auto& parent : batch) {
          const bson::value* key = parent.find_path(k.parent_field);
          const bson::value* id = parent.get("_id");
          // A recompute skips these too: no child can name such a parent.
          if (key == nullptr || key->is_null() || id == nullptr ||
              mapping::reference_problem(*key) || mapping::reference_problem(*id)) {
            continue;
          }
          keys.push_back(*key);
          checked.push_back(&parent);
        }
        if (keys.empty()) return {};
        std::vector<mapping::failing_child> failing;
        auto groups = group_leaving_out_failures(m, k, keys, failing);
        if (!groups) return groups.error();
        note_failing(failing, opts, out);
        if (!*groups) {
          // The expressions fail together on children that cannot be told apart: these
          // parents cannot be checked; said, and the rest goes on.
          for (const auto& key : keys)
            note_unverifiable(key, "the server refused their aggregation", opts, out);
          return {};
        }
        const mapping::group_index by_key(**groups);
        bson::array drifted;
        for (const bson::document* parent : checked) {
          auto paths = k.check(m, *parent, by_key.find(*parent->find_path(k.parent_field)));
          ++out.checked;
          if (paths.empty()) continue;
          ++out.drifted;
          const bson::value& id = *parent->get("_id");
          if (opts.on_drift) opts.on_drift(m, drift_example{id, paths}, *parent);
          if (out.examples.size() < opts.max_examples) {
            out.examples.push_back(drift_example{id, std::move(paths)});
          }
          drifted.push_back(id);
        }
        if (!opts.repair || drifted.empty()) return {};
        const std::uint64_t n = drifted.size();
        // Rechecked: the daemon may be recomputing these parents meanwhile.
        std::vector<mapping::write_op> repairs{k.recompute_selected(
            m, bson::document{{"_id", bson::document{{"$in", std::move(drifted)}}}}, true)};
        if (auto st = writer.apply(repairs, {}, m.source); !st) return st;
        if (opts.dry_run) return {};
        const std::uint64_t refused = std::min<std::uint64_t>(writer.refused_writes(), n);
        out.repaired += n - refused;
        out.unrepaired += refused;
        return {};
      });
}

}  // namespace denormd::ops
