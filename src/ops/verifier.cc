#include "ops/verifier.h"

#include <functional>
#include <map>
#include <set>

#include "mapping/change_event.h"
#include "ops/drift.h"
#include "sink/writer.h"

namespace denormd::ops {

namespace {

using batch_handler = std::function<mongo::status(std::vector<bson::document>&)>;

// Streams a collection in _id order, `batch_size` documents at a time. `stopped` tells
// whether it ended early on request.
mongo::status walk_batches(mongo::connection& conn, const mapping::ns& ns,
                           const bson::document& filter, mongo::find_options find,
                           std::size_t batch_size, std::stop_token& stop, bool& stopped,
                           const batch_handler& each) {
  find.sort = bson::document{{"_id", 1}};
  find.batch_size = static_cast<std::int32_t>(batch_size);
  std::vector<bson::document> batch;
  std::optional<mongo::driver_error> failed;
  auto st = conn.find_each(ns.db, ns.coll, filter, find, [&](bson::document&& doc) {
    if (stop.stop_requested()) {
      stopped = true;
      return false;
    }
    batch.push_back(std::move(doc));
    if (batch.size() < batch_size) return true;
    auto handled = each(batch);
    batch.clear();
    if (!handled) failed = handled.error();
    return !failed;
  });
  if (failed) return *failed;
  if (!st) return st;
  if (stopped || batch.empty()) return {};
  return each(batch);
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
    r.kind = m->kind;
    r.source = m->source.full();
    r.target = m->target.full();
    r.orphans_allowed = m->kind == mapping::mapping_kind::copy &&
                        m->on_source_delete == mapping::delete_policy::keep;
    auto st = m->kind == mapping::mapping_kind::copy ? verify_copy(*m, opts, stop, r)
                                                     : verify_recent(*m, opts, stop, r);
    if (!st) return st.error();
    report.mappings.push_back(std::move(r));
  }
  if (stop.stop_requested()) report.complete = false;
  return report;
}

std::vector<mapping::write_op> verifier::plan_source(const mapping::mapping& m,
                                                     const bson::value& key,
                                                     const bson::document* source) const {
  mapping::change_event ev;
  ev.source = m.source;
  if (source != nullptr) {
    ev.op = mapping::operation::insert;
    ev.op_name = "insert";
    if (const bson::value* id = source->get("_id")) ev.id = *id;
    ev.full_document = *source;
  } else {
    ev.op = mapping::operation::delete_;
    ev.op_name = "delete";
    if (m.source_key == "_id") {
      ev.id = key;
    } else {
      bson::document before;
      mapping::set_path(before, m.source_key, key);
      ev.full_document_before_change = std::move(before);
    }
  }
  std::vector<mapping::write_op> planned;
  planner_.plan(ev, planned);
  std::vector<mapping::write_op> out;
  for (auto& op : planned) {
    if (op.source_mapping == &m && (op.kind == mapping::write_kind::update_one ||
                                    op.kind == mapping::write_kind::update_many)) {
      out.push_back(std::move(op));
    }
  }
  return out;
}

mongo::status verifier::verify_copy(const mapping::mapping& m, const verify_options& opts,
                                    std::stop_token& stop, mapping_report& out) {
  // Targets outside `where` keep their snapshot: only the others are compared.
  const bson::document filter = m.where ? m.where->filter() : bson::document{};
  mongo::find_options targets;
  targets.projection.append("_id", 1);
  if (m.target_array.empty()) {
    project(targets.projection, m.target_key);
    for (const auto& f : m.fields)
      project(targets.projection, m.into.empty() ? f.name : m.into);
  } else {
    project(targets.projection, m.target_array);
  }
  mongo::find_options sources;
  for (const auto& f : planner_.document_fields(m.source))
    sources.projection.append(f, 1);
  project(sources.projection, m.source_key);
  sink::writer writer(conn_, metrics_, sink::writer_options{meta_db_, opts.dry_run});

  bool stopped = false;
  return walk_batches(
      conn_, m.target, filter, targets, opts.batch_size, stop, stopped,
      [&](std::vector<bson::document>& batch) -> mongo::status {
        std::set<bson::value, value_less> keys;
        for (const auto& t : batch) {
          for (auto& k : referenced_keys(m, t))
            keys.insert(std::move(k));
        }
        std::map<bson::value, bson::document, value_less> found;
        if (!keys.empty()) {
          const bson::document query{
              {m.source_key, bson::document{{"$in", bson::array(keys.begin(), keys.end())}}}};
          auto st = conn_.find_each(m.source.db, m.source.coll, query, sources,
                                    [&](bson::document&& doc) {
                                      const bson::value* k = doc.find_path(m.source_key);
                                      // A non-unique source key: the first document wins.
                                      if (k != nullptr) found.emplace(*k, std::move(doc));
                                      return true;
                                    });
          if (!st) return st;
        }
        const source_lookup lookup = [&](const bson::value& key) -> const bson::document* {
          auto it = found.find(key);
          return it == found.end() ? nullptr : &it->second;
        };
        std::vector<mapping::write_op> repairs;
        std::uint64_t repaired = 0;
        for (const auto& t : batch) {
          const bson::value id = t.get("_id") != nullptr ? *t.get("_id") : bson::value{};
          copy_finding finding = check_copy(m, t, lookup);
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
          if (out.examples.size() < opts.max_examples) {
            out.examples.push_back(drift_example{id, std::move(finding.paths)});
          }
          if (!opts.repair) continue;
          bool planned = false;
          for (const auto& key : finding.drifted_keys) {
            for (auto& op : plan_source(m, key, lookup(key))) {
              narrow_to(op, id);
              repairs.push_back(std::move(op));
              planned = true;
            }
          }
          if (planned) ++repaired;
        }
        if (repairs.empty()) return {};
        if (auto st = writer.apply(repairs, {}, m.source); !st) return st;
        if (!opts.dry_run) out.repaired += repaired;
        return {};
      });
}

mongo::status verifier::verify_recent(const mapping::mapping& m, const verify_options& opts,
                                      std::stop_token& stop, mapping_report& out) {
  mongo::find_options parents;
  parents.projection.append("_id", 1);
  project(parents.projection, m.parent_field);
  project(parents.projection, m.into);
  mongo::find_options children;
  children.sort = mapping::planner::child_sort(m);
  children.limit = m.limit;
  for (const auto& f : m.fields)
    project(children.projection, f.source_path);
  sink::writer writer(conn_, metrics_, sink::writer_options{meta_db_, opts.dry_run});

  const mapping::refill_query refill = *mapping::make_refill(m, {}).refill;
  bool stopped = false;
  return walk_batches(
      conn_, m.target, bson::document{}, parents, opts.batch_size, stop, stopped,
      [&](std::vector<bson::document>& batch) -> mongo::status {
        bson::array drifted;
        for (const auto& parent : batch) {
          const bson::value* key = parent.find_path(m.parent_field);
          const bson::value* id = parent.get("_id");
          if (key == nullptr || id == nullptr) continue;  // a refill skips it too
          bson::array expected;
          auto st =
              conn_.find_each(m.source.db, m.source.coll, mapping::children_filter(refill, *key),
                              children, [&](bson::document&& child) {
                                expected.push_back(mapping::planner::make_element(m, child));
                                return true;
                              });
          if (!st) return st;
          auto paths = check_recent(m, parent, expected);
          ++out.checked;
          if (paths.empty()) continue;
          ++out.drifted;
          if (out.examples.size() < opts.max_examples) {
            out.examples.push_back(drift_example{*id, std::move(paths)});
          }
          drifted.push_back(*id);
        }
        if (!opts.repair || drifted.empty()) return {};
        const std::uint64_t n = drifted.size();
        const std::vector<mapping::write_op> repairs{
            refill_for(m, bson::document{{"_id", bson::document{{"$in", std::move(drifted)}}}})};
        if (auto st = writer.apply(repairs, {}, m.source); !st) return st;
        if (!opts.dry_run) out.repaired += n;
        return {};
      });
}

}  // namespace denormd::ops
