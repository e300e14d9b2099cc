// mongo-emulator throughput through libmongoc over loopback:
//   1. bulk inserts, 2. single-document updates sent in bulk batches of 1000,
//   3. an updateMany fanning out over an indexed field, 4. a change stream reading it back.
// Usage: emulator_bench [--docs N] [--updates N] [--fanout N] [--uri URI]
// Without --uri it starts its own emulator (the build's, or env DENORMD_EMULATOR).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "bson/convert.h"
#include "emulator_process.h"
#include "mongo_test_client.h"

namespace {

namespace bson = denormd::bson;
using denormd::test::bulk_ptr;
using denormd::test::test_client;
using clock_type = std::chrono::steady_clock;

struct options {
  long docs = 100000;
  long updates = 200000;
  long fanout = 1000000;
  std::string uri;
};

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "emulator_bench: %s\n", what.c_str());
  std::exit(1);
}

// One unordered bulk: inserts of `docs`, or updateOne(`doc`, `update`) for each.
void run_bulk(mongoc_collection_t* coll, const std::vector<bson::document>& docs,
              const bson::document* update) {
  auto opts = bson::to_bson(bson::document{{"ordered", false}});
  bulk_ptr bulk(mongoc_collection_create_bulk_operation_with_opts(coll, opts.get()));
  const auto u = update ? bson::to_bson(*update) : bson::bson_ptr{};
  for (const auto& d : docs) {
    auto b = bson::to_bson(d);
    bson_error_t error;
    const bool ok =
        update ? mongoc_bulk_operation_update_one_with_opts(bulk.get(), b.get(), u.get(), nullptr,
                                                            &error)
               : mongoc_bulk_operation_insert_with_opts(bulk.get(), b.get(), nullptr, &error);
    if (!ok) die(error.message);
  }
  bson_t reply;
  bson_error_t error;
  const bool ok = mongoc_bulk_operation_execute(bulk.get(), &reply, &error) != 0;
  bson_destroy(&reply);
  if (!ok) die(error.message);
}

// Inserts `n` documents {_id: i, g: "all", v: 0} in batches of 1000; returns docs/s.
double insert_docs(mongoc_collection_t* coll, long n) {
  const auto start = clock_type::now();
  std::vector<bson::document> batch;
  for (long i = 0; i < n; ++i) {
    batch.push_back(bson::document{{"_id", std::int64_t{i}}, {"g", "all"}, {"v", std::int32_t{0}}});
    if (batch.size() == 1000 || i + 1 == n) {
      run_bulk(coll, batch, nullptr);
      batch.clear();
    }
  }
  return static_cast<double>(n) / seconds_since(start);
}

void bench_updates(mongoc_collection_t* coll, const options& o) {
  const auto start = clock_type::now();
  std::vector<bson::document> batch;
  long done = 0;
  for (long k = 0; k < o.updates; ++k) {
    batch.push_back(bson::document{{"_id", std::int64_t{k % o.docs}}});
    if (batch.size() == 1000 || k + 1 == o.updates) {
      const bson::document update{{"$set", bson::document{{"v", std::int64_t{k}}}}};
      run_bulk(coll, batch, &update);
      done += static_cast<long>(batch.size());
      batch.clear();
    }
  }
  std::printf("updateOne by _id (bulk 1000): %10.0f updates/s (%ld updates)\n",
              static_cast<double>(done) / seconds_since(start), done);
}

void bench_fanout(test_client& client, const options& o) {
  auto fan = client.collection("bench", "fanout");
  insert_docs(fan.get(), o.fanout);
  const bson::document index_spec{{"key", bson::document{{"g", std::int32_t{1}}}}, {"name", "g_1"}};
  if (!client.command("bench", bson::document{{"createIndexes", "fanout"},
                                              {"indexes", bson::array{bson::value(index_spec)}}}))
    die("createIndexes failed");
  auto before = client.command("admin", bson::document{{"ping", std::int32_t{1}}});
  if (!before) die(before.error().message);
  const bson::value start_time = *before->get("operationTime");

  const bson::document statement{
      {"q", bson::document{{"g", "all"}}},
      {"u", bson::document{{"$set", bson::document{{"h", std::int32_t{1}}}}}},
      {"multi", true}};
  const auto start = clock_type::now();
  auto r = client.command(
      "bench",
      bson::document{{"update", "fanout"}, {"updates", bson::array{bson::value(statement)}}});
  if (!r) die(r.error().message);
  const double secs = seconds_since(start);
  const auto* modified = r->get("nModified");
  std::printf("updateMany on indexed field:  %10.2f s for %d documents (%.0f docs/s)\n", secs,
              modified ? modified->as<std::int32_t>() : -1, static_cast<double>(o.fanout) / secs);

  auto pipeline = bson::to_bson(bson::document{{"pipeline", bson::array{}}});
  auto opts = bson::to_bson(bson::document{{"startAtOperationTime", start_time}});
  denormd::test::change_stream_ptr stream(
      mongoc_collection_watch(fan.get(), pipeline.get(), opts.get()));
  const auto drain_start = clock_type::now();
  long events = 0;
  const bson_t* doc = nullptr;
  while (events < o.fanout && seconds_since(drain_start) < 300) {
    if (mongoc_change_stream_next(stream.get(), &doc)) {
      ++events;
      continue;
    }
    bson_error_t error;
    if (mongoc_change_stream_error_document(stream.get(), &error, nullptr)) die(error.message);
  }
  const double drain = seconds_since(drain_start);
  std::printf("change stream read-back:      %10.0f events/s (%ld events in %.2f s)\n",
              static_cast<double>(events) / drain, events, drain);
}

void run_all(const options& o) {
  auto client = test_client::connect(o.uri);
  if (!client) die(client.error().message);
  (void)client->run("bench", bson::document{{"dropDatabase", std::int32_t{1}}});
  auto coll = client->collection("bench", "docs");
  const double insert_rate = insert_docs(coll.get(), o.docs);
  std::printf("insert (bulk 1000):           %10.0f docs/s   (%ld docs)\n", insert_rate, o.docs);
  bench_updates(coll.get(), o);
  bench_fanout(*client, o);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--docs") {
      o.docs = std::atol(argv[i + 1]);
    } else if (a == "--updates") {
      o.updates = std::atol(argv[i + 1]);
    } else if (a == "--fanout") {
      o.fanout = std::atol(argv[i + 1]);
    } else if (a == "--uri") {
      o.uri = argv[i + 1];
    } else {
      die("unknown option " + a);
    }
  }
  std::optional<denormd::test::emulator_process> server;
  if (o.uri.empty()) {
    auto started = denormd::test::emulator_process::start(
        {"--oplog-max-events", std::to_string(std::max(2 * o.fanout, 1000000L))});
    if (!started) die(started.error().message);
    server.emplace(std::move(started).value());
    o.uri = server->uri();
  }
  run_all(o);  // the client is gone before the server stops
  if (server && server->stop() != 0) die("the emulator did not exit cleanly");
  return 0;
}
