#include "ops/commands/cost_probe.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "bson/convert.h"
#include "common/overloaded.h"
#include "mapping/change_event.h"
#include "mapping/computed_fields.h"
#include "mapping/write_op.h"
#include "sink/computed_evaluator.h"

namespace denormd::ops {

namespace {

// Per-copy sizes are means: this many documents measure them well enough.
constexpr std::int64_t bytes_sample = 10000;
// Documents evaluated (computed fields) and measured at a time.
constexpr std::size_t chunk = 500;
constexpr std::int64_t max_time_expired = 50;

std::int64_t element_bytes(std::string_view key, const bson::value& v) {
  bson_t b = BSON_INITIALIZER;
  bson::append_value(&b, key, v);
  const auto n = static_cast<std::int64_t>(b.len) - 5;
  bson_destroy(&b);
  return n;
}

std::int64_t number_of(const bson::value* v) {
  if (v == nullptr || !v->is_number()) return 0;
  return static_cast<std::int64_t>(std::llround(v->to_double()));
}

// The mapping's source paths as a $project that keeps them (_id too), so a scan reads what a
// copy is made of and nothing more; empty (read whole documents) when an expression reads the
// whole document. A path under another one kept is left out (MongoDB refuses the collision).
bson::document projection_of(const mapping::mapping& m) {
  std::vector<std::string> paths = m.watched_paths();
  if (std::find(paths.begin(), paths.end(), mapping::whole_document_path) != paths.end()) return {};
  std::sort(paths.begin(), paths.end());
  bson::document out;
  std::string kept;
  for (const auto& p : paths) {
    if (!kept.empty() && p.starts_with(kept + ".")) continue;
    if (p == kept) continue;
    out.append(p, 1);
    kept = p;
  }
  return out;
}

bson::document set_of(const bson::document& update) {
  const bson::value* set = update.get("$set");
  return set != nullptr && set->is_document() ? set->as_document() : bson::document{};
}

}  // namespace

std::int64_t set_bytes(const bson::document& set, std::string_view strip) {
  bson::document nested;
  for (const auto& f : set) {
    std::string_view path = f.name;
    if (!strip.empty() && path.starts_with(strip)) path.remove_prefix(strip.size());
    mapping::set_path(nested, path, f.val);
  }
  std::int64_t n = 0;
  for (const auto& f : nested)
    n += element_bytes(f.name, f.val);
  return n;
}

double array_bytes(std::int64_t n, double element) {
  // Its length and trailing zero; per element a type byte, the index as a name, and the value.
  double total = 5;
  std::int64_t digits = 1;
  for (std::int64_t start = 0; start < n; start = start == 0 ? 10 : start * 10, ++digits) {
    const std::int64_t end = start == 0 ? std::min<std::int64_t>(n, 10) : std::min(n, start * 10);
    total += static_cast<double>(end - start) * (2.0 + static_cast<double>(digits) + element);
  }
  return total;
}

cost_probe::cost_probe(mongo::connection& conn, cost_bounds bounds)
    : conn_(conn), bounds_(bounds) {}

std::string cost_probe::why(const mongo::driver_error& e) const {
  if (e.from == mongo::driver_error::origin::server && e.code == max_time_expired) {
    return "the server stopped it after --max-time (" + std::to_string(bounds_.max_time_ms / 1000) +
           " s): raise --max-time, or lower --sample-size";
  }
  return e.to_string();
}

bool cost_probe::extent_of(const mapping::ns& where, std::int64_t limit, read_extent& out,
                           bson::array& stages, std::string& error) {
  auto reply = conn_.command(where.db, bson::document{{"count", where.coll}});
  if (!reply) {
    error = "cannot count " + where.full() + ": " + why(reply.error());
    return false;
  }
  out.ns = where.full();
  out.documents = number_of(reply->get("n"));
  out.read = std::min(out.documents, limit);
  stages.clear();
  if (out.sampled()) stages.push_back(bson::document{{"$sample", bson::document{{"size", limit}}}});
  return true;
}

std::string cost_probe::run(const mapping::ns& where, const bson::array& pipeline,
                            const std::function<void(bson::document&&)>& each) {
  mongo::aggregate_options opts;
  opts.max_time_ms = bounds_.max_time_ms;
  opts.allow_disk_use = true;
  auto st = conn_.aggregate_each(where.db, where.coll, pipeline, opts, [&](bson::document&& d) {
    each(std::move(d));
    return true;
  });
  return st ? std::string() : why(st.error());
}

data_cost cost_probe::measure(const mapping::mapping& m) {
  data_cost out;
  m.visit(overloaded{[&](const mapping::copy_kind& k) {
                       copy_cost(m, k, out);
                       copy_bytes(m, k, out);
                     },
                     [&](const mapping::recent_kind& k) {
                       out.bytes.limit = k.limit;
                       recent_cost(m, k, out);
                       recent_element_bytes(m, k, out);
                       largest_parents(m, k, out);
                     },
                     [&](const mapping::aggregate_kind& k) { aggregate_cost(m, k, out); }});
  return out;
}

void cost_probe::copy_cost(const mapping::mapping& m, const mapping::copy_kind& k, data_cost& out) {
  auto& f = out.fanout;
  const bool array = !k.target_array.empty();
  f.per = std::string(k.where ? "targets inside target.where" : "targets") + " per source key" +
          (array ? " (copies in " + k.target_array + ")" : "");
  bson::array pipeline;
  if (!extent_of(m.target, bounds_.sample_size, f.extent, pipeline, f.error)) return;
  if (k.where) pipeline.push_back(bson::document{{"$match", k.where->filter()}});
  if (!array) {
    pipeline.push_back(
        bson::document{{"$group", bson::document{{"_id", "$" + k.target_key},
                                                 {"n", bson::document{{"$sum", 1}}}}}});
  } else {
    // One count per target a key is copied into, however many of its elements hold it.
    pipeline.push_back(bson::document{{"$unwind", "$" + k.target_array}});
    pipeline.push_back(bson::document{
        {"$group",
         bson::document{{"_id", bson::document{{"k", "$" + k.target_array + "." + k.target_key},
                                               {"t", "$_id"}}},
                        {"e", bson::document{{"$sum", 1}}}}}});
    pipeline.push_back(
        bson::document{{"$group", bson::document{{"_id", "$_id.k"},
                                                 {"n", bson::document{{"$sum", 1}}},
                                                 {"e", bson::document{{"$sum", "$e"}}}}}});
  }
  f.error = run(m.target, pipeline, [&](bson::document&& d) {
    const bson::value* key = d.get("_id");
    // A missing or null key references no source.
    if (key == nullptr || key->is_null()) return;
    f.summary.add(*key, number_of(d.get("n")));
    f.copies += array ? number_of(d.get("e")) : number_of(d.get("n"));
  });
}

void cost_probe::copy_bytes(const mapping::mapping& m, const mapping::copy_kind& k,
                            data_cost& out) {
  auto& b = out.bytes;
  if (!out.fanout.error.empty()) {
    b.error = "not without the fan-out";
    return;
  }
  bson::array pipeline;
  if (!extent_of(m.source, std::min(bounds_.sample_size, bytes_sample), b.extent, pipeline,
                 b.error))
    return;
  if (auto p = projection_of(m); !p.empty()) pipeline.push_back(bson::document{{"$project", p}});
  const mapping::mapping* one = &m;
  const mapping::computed_fields computed(std::span<const mapping::mapping* const>(&one, 1));
  const std::string strip = k.target_array.empty() ? "" : k.target_array + ".$[e].";
  std::vector<bson::document> docs;
  std::int64_t bytes = 0;
  std::int64_t measured = 0;
  std::string failed;
  auto flush = [&] {
    if (!computed.empty() && failed.empty()) {
      // Computed fields are the server's values: it evaluates them, as for a write.
      std::vector<bson::document*> each;
      for (auto& d : docs)
        each.push_back(&d);
      sink::computed_evaluator evaluator(conn_);
      if (auto st = evaluator.evaluate(m.source.db, computed, each); !st)
        failed = "computed fields not counted: " + why(st.error());
    }
    for (const auto& d : docs)
      bytes += set_bytes(set_of(k.update_for(m, &d)), strip);
    measured += static_cast<std::int64_t>(docs.size());
    docs.clear();
  };
  b.error = run(m.source, pipeline, [&](bson::document&& d) {
    docs.push_back(std::move(d));
    if (docs.size() == chunk) flush();
  });
  if (!b.error.empty()) return;
  flush();
  if (!failed.empty()) b.notes.push_back(failed);
  b.per_copy = measured == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(measured);
  if (measured == 0) b.notes.push_back("no source document to measure a copy on");
  b.added = b.per_copy * static_cast<double>(out.fanout.copies) * out.fanout.extent.scale();
}

void cost_probe::recent_cost(const mapping::mapping& m, const mapping::recent_kind& k,
                             data_cost& out) {
  auto& f = out.fanout;
  f.per = "children per parent";
  bson::array pipeline;
  if (!extent_of(m.source, bounds_.sample_size, f.extent, pipeline, f.error)) return;
  if (k.filter) pipeline.push_back(bson::document{{"$match", k.filter->filter()}});
  pipeline.push_back(bson::document{
      {"$group", bson::document{{"_id", "$" + k.parent_key}, {"n", bson::document{{"$sum", 1}}}}}});
  f.error = run(m.source, pipeline, [&](bson::document&& d) {
    const bson::value* key = d.get("_id");
    if (key == nullptr || key->is_null()) return;
    f.summary.add(*key, number_of(d.get("n")));
  });
}

void cost_probe::recent_element_bytes(const mapping::mapping& m, const mapping::recent_kind& k,
                                      data_cost& out) {
  auto& b = out.bytes;
  bson::array pipeline;
  if (!extent_of(m.source, std::min(bounds_.sample_size, bytes_sample), b.extent, pipeline,
                 b.error))
    return;
  if (k.filter) pipeline.push_back(bson::document{{"$match", k.filter->filter()}});
  if (auto p = projection_of(m); !p.empty()) pipeline.push_back(bson::document{{"$project", p}});
  std::int64_t bytes = 0;
  std::int64_t measured = 0;
  b.error = run(m.source, pipeline, [&](bson::document&& child) {
    bytes += static_cast<std::int64_t>(bson::to_bson(k.element(m, child))->len);
    ++measured;
  });
  if (!b.error.empty()) return;
  b.per_copy = measured == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(measured);
  if (measured == 0) b.notes.push_back("no child to measure an element on");
  if (!out.fanout.error.empty()) {
    b.error = "not without the fan-out";
    return;
  }
  // Each parent keeps its first `limit` children, as one array under `into`.
  const auto header = static_cast<double>(element_bytes(m.into, bson::array{}) - 5);
  const double scale = out.fanout.extent.scale();
  out.fanout.summary.for_each_count([&](std::int64_t count, std::int64_t keys) {
    const auto kept =
        std::min<std::int64_t>(std::llround(static_cast<double>(count) * scale), k.limit);
    b.added += static_cast<double>(keys) * (header + array_bytes(kept, b.per_copy));
  });
}

void cost_probe::largest_parents(const mapping::mapping& m, const mapping::recent_kind& k,
                                 data_cost& out) {
  auto& b = out.bytes;
  read_extent extent;
  bson::array pipeline;
  if (!extent_of(m.target, bounds_.sample_size, extent, pipeline, b.largest_error)) return;
  pipeline.push_back(bson::document{
      {"$project",
       bson::document{{"_id", 0},
                      {"k", "$" + k.parent_field},
                      {"s", bson::document{{"$bsonSize", "$$ROOT"}}},
                      {"a", bson::document{{"$bsonSize", bson::document{{"a", "$" + m.into}}}}}}}});
  pipeline.push_back(bson::document{{"$sort", bson::document{{"s", -1}}}});
  pipeline.push_back(bson::document{{"$limit", 3}});
  const std::int64_t header = element_bytes(m.into, bson::array{}) - 5;
  const auto full = static_cast<std::int64_t>(std::llround(array_bytes(k.limit, b.per_copy)));
  b.largest_error = run(m.target, pipeline, [&](bson::document&& d) {
    parent_size p;
    if (const bson::value* key = d.get("k")) p.key = *key;
    p.bytes = number_of(d.get("s"));
    // {a: <the array>} is 5 bytes of document and 3 of element around the array's own bytes.
    const std::int64_t wrapped = number_of(d.get("a"));
    const std::int64_t now = wrapped > 5 ? header + wrapped - 8 : 0;
    // An estimate from the mean element: never less than what the parent holds now.
    p.at_limit_bytes = std::max(p.bytes, p.bytes - now + header + full);
    b.largest.push_back(std::move(p));
  });
  if (extent.sampled() && b.largest_error.empty()) {
    b.notes.push_back("the largest parents are the largest of " + std::to_string(extent.read) +
                      " sampled of " + std::to_string(extent.documents));
  }
}

void cost_probe::aggregate_cost(const mapping::mapping& m, const mapping::aggregate_kind& k,
                                data_cost& out) {
  auto& f = out.fanout;
  auto& b = out.bytes;
  f.per = "children per parent";
  bson::array pipeline;
  if (!extent_of(m.source, bounds_.sample_size, f.extent, pipeline, f.error)) return;
  b.extent = f.extent;
  // The kind's own recompute of every parent, counting each parent's children besides: the
  // values it gives are what the parents hold.
  bson::array recompute = k.pipeline({});
  recompute.back().as_document().get("$group")->as_document().append("_denormdChildren",
                                                                     bson::document{{"$sum", 1}});
  pipeline.insert(pipeline.end(), recompute.begin(), recompute.end());
  std::int64_t bytes = 0;
  f.error = run(m.source, pipeline, [&](bson::document&& group) {
    const bson::value* key = group.get("_id");
    if (key == nullptr || key->is_null()) return;
    f.summary.add(*key, number_of(group.get("_denormdChildren")));
    bytes += set_bytes(set_of(k.update_for(m, &group)));
  });
  if (!f.error.empty()) {
    b.error = f.error;
    return;
  }
  const auto groups = f.summary.keys();
  b.per_copy = groups == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(groups);
  // Every parent holds the values, those without children the values of none.
  read_extent parents;
  bson::array unused;
  std::string error;
  if (!extent_of(m.target, 0, parents, unused, error)) {
    b.error = error;
    return;
  }
  const auto none = static_cast<double>(set_bytes(set_of(k.update_for(m, nullptr))));
  b.added = b.per_copy * static_cast<double>(std::min(groups, parents.documents)) +
            none * static_cast<double>(std::max<std::int64_t>(0, parents.documents - groups));
}

}  // namespace denormd::ops
