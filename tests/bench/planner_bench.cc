// Planner throughput on realistic events (about 1 KB fullDocument), measured the way the
// daemon runs it: raw BSON from the driver -> value tree -> change event -> planned writes
// -> BSON for the wire. One thread, so items/s is events per second per core.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <functional>

#include "bson/convert.h"
#include "bson/json.h"
#include "config/mapping_loader.h"
#include "mapping/coalescer.h"
#include "mapping/planner.h"

namespace {

using namespace denormd;

std::string padding(std::size_t n) {
  return std::string(n, 'x');
}

// A customer with profile noise so fullDocument is about 1 KB.
std::string customer_event(int id) {
  return R"({"_id":{"_data":"82650000000000000001"},"operationType":"update",
    "clusterTime":{"$timestamp":{"t":1700000000,"i":1}},"wallTime":{"$date":"2024-01-01T00:00:00Z"},
    "ns":{"db":"shop","coll":"customers"},"documentKey":{"_id":)" +
         std::to_string(id) + R"(},
    "updateDescription":{"updatedFields":{"name":"Ann Smith"},"removedFields":[],"truncatedArrays":[]},
    "fullDocument":{"_id":)" +
         std::to_string(id) + R"(,"name":"Ann Smith","email":"ann@example.com",
    "address":{"street":"1 Main St","city":"Oslo","zip":"0150","country":"NO"},
    "phone":"+47 555 0100","tier":"gold","createdAt":{"$date":"2020-01-01T00:00:00Z"},
    "lastLogin":{"$date":"2024-01-01T00:00:00Z"},"tags":["a","b","c","d"],
    "preferences":{"newsletter":true,"language":"nb","currency":"NOK"},
    "notes":")" +
         padding(560) + R"("}})";
}

std::string product_event(int id) {
  return R"({"_id":{"_data":"82650000000000000002"},"operationType":"update",
    "clusterTime":{"$timestamp":{"t":1700000000,"i":2}},"ns":{"db":"shop","coll":"products"},
    "documentKey":{"_id":)" +
         std::to_string(id) + R"(},
    "updateDescription":{"updatedFields":{"title":"Desk lamp"},"removedFields":[]},
    "fullDocument":{"_id":)" +
         std::to_string(id) + R"(,"title":"Desk lamp","sku":"L-7","price":29.5,
    "stock":12,"categories":["home","lighting"],"dimensions":{"w":20,"h":45,"d":20},
    "description":")" +
         padding(720) + R"("}})";
}

std::string review_event(int id, int product) {
  return R"({"_id":{"_data":"82650000000000000003"},"operationType":"insert",
    "clusterTime":{"$timestamp":{"t":1700000000,"i":3}},"ns":{"db":"shop","coll":"reviews"},
    "documentKey":{"_id":)" +
         std::to_string(id) + R"(},
    "fullDocument":{"_id":)" +
         std::to_string(id) + R"(,"productId":)" + std::to_string(product) +
         R"(,"stars":4,"createdAt":{"$date":"2024-01-02T00:00:00Z"},"author":"someone",
    "text":")" +
         padding(820) + R"("}})";
}

// Raw BSON bytes for n distinct events made by `make`.
std::vector<std::vector<std::uint8_t>> wire_events(int n,
                                                   const std::function<std::string(int)>& make) {
  std::vector<std::vector<std::uint8_t>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<std::uint8_t> bytes;
    bson::append_bytes(*bson::parse_json(make(i)), bytes);
    out.push_back(std::move(bytes));
  }
  return out;
}

const mapping::planner& sample_planner() {
  static const mapping::planner p(
      *config::load_mappings(std::filesystem::path(DENORMD_SOURCE_DIR) / "mappings", ""));
  return p;
}

// One event through the whole pure path; returns the bytes of BSON produced.
std::size_t process(const mapping::planner& p, const std::vector<std::uint8_t>& raw,
                    const std::vector<std::string>& fields, std::vector<mapping::write_op>& ops) {
  // As the daemon does: convert only the fields the mappings of that source read.
  auto ev = mapping::change_event::parse_bson(raw, &fields);
  ops.clear();
  p.plan(*ev, ops);
  std::size_t bytes = 0;
  for (const auto& op : ops) {
    const auto* w = op.as<mapping::update_write>();
    if (w == nullptr) continue;
    auto filter = bson::to_bson(w->filter);
    auto update = bson::to_bson(w->update);
    bytes += filter->len + update->len;
  }
  return bytes;
}

void run(benchmark::State& state, const std::vector<std::vector<std::uint8_t>>& events,
         const mapping::ns& source) {
  const auto& p = sample_planner();
  const auto& fields = p.document_fields(source);
  std::vector<mapping::write_op> ops;
  std::size_t i = 0;
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes += process(p, events[i++ % events.size()], fields, ops);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["event_bytes"] = static_cast<double>(events.front().size());
}

void bm_copy(benchmark::State& state) {
  static const auto events = wire_events(1000, customer_event);
  run(state, events, {"shop", "customers"});
}
void bm_copy_in_array(benchmark::State& state) {
  static const auto events = wire_events(1000, product_event);
  run(state, events, {"shop", "products"});
}
void bm_recent(benchmark::State& state) {
  static const auto events = wire_events(1000, [](int i) { return review_event(i, i % 50); });
  run(state, events, {"shop", "reviews"});
}
void bm_irrelevant_update(benchmark::State& state) {
  static const auto events = wire_events(1000, [](int i) {
    std::string e = customer_event(i);
    e.replace(e.find(R"({"name":"Ann Smith"},"removedFields")"), 20, R"({"lastLogin":12345})");
    return e;
  });
  run(state, events, {"shop", "customers"});
}

// The batch step over 1000 planned review inserts for 50 parents.
void bm_coalesce_recent(benchmark::State& state) {
  const auto& p = sample_planner();
  std::vector<mapping::write_op> planned;
  for (const auto& raw : wire_events(1000, [](int i) { return review_event(i, i % 50); })) {
    p.plan(*mapping::change_event::parse(*bson::from_bson(raw)), planned);
  }
  for (auto _ : state) {
    auto merged = mapping::coalesce(planned);
    benchmark::DoNotOptimize(merged.data());
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}

BENCHMARK(bm_copy);
BENCHMARK(bm_copy_in_array);
BENCHMARK(bm_recent);
BENCHMARK(bm_irrelevant_update);
BENCHMARK(bm_coalesce_recent);

}  // namespace

// `planner_bench --fixed N`: runs N events of each kind outside the benchmark loop, so
// `valgrind --tool=callgrind` can count instructions per event independently of load.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--fixed") {
    const int n = std::stoi(argv[2]);
    const auto& p = sample_planner();
    std::vector<mapping::write_op> ops;
    std::size_t bytes = 0;
    const std::pair<mapping::ns, std::function<std::string(int)>> kinds[] = {
        {{"shop", "customers"}, customer_event},
        {{"shop", "products"}, product_event},
        {{"shop", "reviews"}, [](int i) { return review_event(i, i % 50); }}};
    for (const auto& [source, make] : kinds) {
      const auto events = wire_events(100, make);
      for (int i = 0; i < n; ++i)
        bytes += process(p, events[i % 100], p.document_fields(source), ops);
    }
    std::printf("%zu bytes\n", bytes);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
