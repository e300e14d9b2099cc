#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace denormd::metrics {
namespace {

using label_map = std::map<std::string, std::string>;

struct sample {
  std::string name;
  label_map labels;
  double value = 0;
};

// Parses the sample lines of the text exposition format (label values here hold no escapes).
std::vector<sample> samples_of(const std::string& text) {
  std::vector<sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    sample s;
    const auto brace = line.find('{');
    const auto space = line.rfind(' ');
    s.name = line.substr(0, std::min(brace, line.find(' ')));
    if (brace != std::string::npos) {
      const auto end = line.find('}', brace);
      std::string body = line.substr(brace + 1, end - brace - 1);
      std::size_t pos = 0;
      while (pos < body.size()) {
        const auto eq = body.find('=', pos);
        const auto close = body.find('"', eq + 2);
        s.labels[body.substr(pos, eq - pos)] = body.substr(eq + 2, close - eq - 2);
        pos = close + 2;  // skip `",`
      }
    }
    s.value = std::stod(line.substr(space + 1));
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> value_of(const std::string& text, const std::string& name,
                               const label_map& labels) {
  for (const auto& s : samples_of(text))
    if (s.name == name && s.labels == labels) return s.value;
  return std::nullopt;
}

// The cumulative count of the bucket with upper bound `le` of one histogram series.
std::optional<double> bucket_of(const std::string& text, const std::string& name, label_map labels,
                                double le) {
  for (const auto& s : samples_of(text)) {
    if (s.name != name + "_bucket") continue;
    auto l = s.labels;
    const auto it = l.find("le");
    if (it == l.end()) continue;
    const double bound = it->second == "+Inf" ? 1e300 : std::stod(it->second);
    l.erase(it);
    if (l == labels && bound == le) return s.value;
  }
  return std::nullopt;
}

std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return {};
}

void use_every_family(metrics& m) {
  m.count_events("shop.customers", "update");
  m.count_writes("orders-customer", "ok");
  m.count_modified("orders-customer", 3);
  m.set_lag("shop.customers", 0.5);
  m.observe_apply_latency("orders-customer", 0.02);
  m.observe_batch("shop.customers", 7);
  m.observe_fanout("orders-customer", 5002);
  m.set_checkpoint_age("shop.customers", 4);
  m.count_resume("shop.customers", "transient");
  m.count_history_lost("shop.customers");
  m.count_error("write", "11000");
  m.set_batch_attempts("shop.customers", 2);
  m.count_stuck_batch("shop.customers", "write");
  m.count_deadletter("orders-customer");
  m.set_watcher_ready("shop.customers", true);
  m.count_backfill("orders-customer", 100);
  m.set_mapping_info("orders-customer", "0123456789abcdef");
  m.set_backfill_progress("orders-customer", 0.5);
  m.count_reload("ok");
  m.set_applied_through("orders-customer", 1700000000);
  m.set_history_headroom("shop.customers", 7200);
  m.set_lease_held("shop.customers", true);
  m.count_lease_change("acquired");
  m.set_instances(3);
  m.count_drift_found("orders-customer", 2);
  m.count_drift_repaired("orders-customer", 2);
  m.set_verify_last_pass("orders-customer", 1700000000);
}

struct family_spec {
  std::string name;
  std::string type;
  label_map labels;
};

const std::vector<family_spec>& design_families() {
  static const std::vector<family_spec> specs{
      {"denormd_events_total", "counter", {{"source", "shop.customers"}, {"op", "update"}}},
      {"denormd_writes_total", "counter", {{"mapping", "orders-customer"}, {"result", "ok"}}},
      {"denormd_documents_modified_total", "counter", {{"mapping", "orders-customer"}}},
      {"denormd_lag_seconds", "gauge", {{"source", "shop.customers"}}},
      {"denormd_apply_latency_seconds", "histogram", {{"mapping", "orders-customer"}}},
      {"denormd_batch_events", "histogram", {{"source", "shop.customers"}}},
      {"denormd_fanout", "histogram", {{"mapping", "orders-customer"}}},
      {"denormd_checkpoint_age_seconds", "gauge", {{"source", "shop.customers"}}},
      {"denormd_resumes_total", "counter", {{"source", "shop.customers"}, {"reason", "transient"}}},
      {"denormd_history_lost_total", "counter", {{"source", "shop.customers"}}},
      {"denormd_errors_total", "counter", {{"stage", "write"}, {"code", "11000"}}},
      {"denormd_batch_attempts", "gauge", {{"source", "shop.customers"}}},
      {"denormd_stuck_batches_total",
       "counter",
       {{"source", "shop.customers"}, {"stage", "write"}}},
      {"denormd_deadletters_total", "counter", {{"mapping", "orders-customer"}}},
      {"denormd_watcher_ready", "gauge", {{"source", "shop.customers"}}},
      {"denormd_backfill_documents_total", "counter", {{"mapping", "orders-customer"}}},
      {"denormd_build_info", "gauge", {{"version", "1.2.3"}}},
      {"denormd_backfill_progress", "gauge", {{"mapping", "orders-customer"}}},
      {"denormd_mapping_info",
       "gauge",
       {{"mapping", "orders-customer"}, {"fingerprint", "0123456789abcdef"}}},
      {"denormd_mapping_reloads_total", "counter", {{"result", "ok"}}},
      {"denormd_applied_through_seconds", "gauge", {{"mapping", "orders-customer"}}},
      {"denormd_history_headroom_seconds", "gauge", {{"source", "shop.customers"}}},
      {"denormd_lease_held", "gauge", {{"unit", "shop.customers"}}},
      {"denormd_lease_changes_total", "counter", {{"reason", "acquired"}}},
      {"denormd_instances", "gauge", {}},
      {"denormd_drift_found_total", "counter", {{"mapping", "orders-customer"}}},
      {"denormd_drift_repaired_total", "counter", {{"mapping", "orders-customer"}}},
      {"denormd_verify_last_pass_timestamp_seconds", "gauge", {{"mapping", "orders-customer"}}},
  };
  return specs;
}

TEST(metrics_test, every_design_family_has_its_type_and_labels) {
  metrics m("1.2.3");
  use_every_family(m);
  const std::string text = m.serialize();
  for (const auto& f : design_families()) {
    SCOPED_TRACE(f.name);
    EXPECT_EQ(line_starting(text, "# TYPE " + f.name + " "), "# TYPE " + f.name + " " + f.type);
    EXPECT_NE(line_starting(text, "# HELP " + f.name + " "), "");
    if (f.type == "histogram") {
      EXPECT_TRUE(value_of(text, f.name + "_count", f.labels).has_value());
      EXPECT_TRUE(value_of(text, f.name + "_sum", f.labels).has_value());
      EXPECT_TRUE(bucket_of(text, f.name, f.labels, 1e300).has_value());
    } else {
      EXPECT_TRUE(value_of(text, f.name, f.labels).has_value());
    }
  }
  // Nothing beyond docs/metrics.md.
  std::istringstream in(text);
  int types = 0;
  for (std::string line; std::getline(in, line);)
    types += line.rfind("# TYPE ", 0) == 0;
  EXPECT_EQ(types, static_cast<int>(design_families().size()));
}

TEST(metrics_test, fanout_observes_each_event_and_totals_them) {
  metrics m("1.2.3");
  EXPECT_EQ(m.fanout("orders-customer").count, 0u);
  m.observe_fanout("orders-customer", 5002);
  m.observe_fanout("orders-customer", 3, 4);  // four events of three documents each
  const auto t = m.fanout("orders-customer");
  EXPECT_EQ(t.count, 5u);
  EXPECT_DOUBLE_EQ(t.sum, 5014.0);
  const std::string text = m.serialize();
  EXPECT_EQ(bucket_of(text, "denormd_fanout", {{"mapping", "orders-customer"}}, 5), 4.0);
  EXPECT_EQ(bucket_of(text, "denormd_fanout", {{"mapping", "orders-customer"}}, 5000), 4.0);
  EXPECT_EQ(bucket_of(text, "denormd_fanout", {{"mapping", "orders-customer"}}, 10000), 5.0);
  // Every mapping has its series from the start.
  m.declare_mapping("logmsgs-host");
  EXPECT_TRUE(
      value_of(m.serialize(), "denormd_fanout_count", {{"mapping", "logmsgs-host"}}).has_value());
}

TEST(metrics_test, help_strings_are_the_meanings_in_docs_metrics_md) {
  metrics m("1.2.3");
  use_every_family(m);  // prometheus-cpp leaves out families with no series yet
  const std::string text = m.serialize();
  std::ifstream docs(std::string(DENORMD_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(docs) << "docs/metrics.md not found";
  int checked = 0;
  for (std::string line; std::getline(docs, line);) {
    if (line.rfind("| `denormd_", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, '|');) {
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      std::erase(cell, '`');
      cells.push_back(cell);
    }
    ASSERT_GE(cells.size(), 5u) << line;
    EXPECT_EQ(line_starting(text, "# HELP " + cells[1] + " "),
              "# HELP " + cells[1] + " " + cells[4]);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(design_families().size()));
}

TEST(metrics_test, counters_add_and_gauges_set) {
  metrics m("0.1.0");
  m.count_events("shop.products", "insert");
  m.count_events("shop.products", "insert", 4);
  m.count_events("shop.products", "delete");
  m.count_writes("m", "ok", 10);
  m.count_writes("m", "rejected");
  m.count_modified("m", 7);
  m.count_modified("m", 0);
  m.count_backfill("m", 1000);
  m.count_backfill("m", 24);
  m.count_deadletter("m");
  m.count_deadletter("m");
  m.count_resume("s", "step_down");
  m.count_history_lost("s");
  m.count_error("stream", "286");
  m.count_error("stream", "286");
  m.set_lag("s", 12.5);
  m.set_lag("s", 0);
  m.set_checkpoint_age("s", 3.25);
  m.set_watcher_ready("s", true);
  m.set_watcher_ready("t", true);
  m.set_watcher_ready("t", false);

  const std::string text = m.serialize();
  EXPECT_EQ(value_of(text, "denormd_events_total", {{"source", "shop.products"}, {"op", "insert"}}),
            5);
  EXPECT_EQ(value_of(text, "denormd_events_total", {{"source", "shop.products"}, {"op", "delete"}}),
            1);
  EXPECT_EQ(value_of(text, "denormd_writes_total", {{"mapping", "m"}, {"result", "ok"}}), 10);
  EXPECT_EQ(value_of(text, "denormd_writes_total", {{"mapping", "m"}, {"result", "rejected"}}), 1);
  EXPECT_EQ(value_of(text, "denormd_documents_modified_total", {{"mapping", "m"}}), 7);
  EXPECT_EQ(value_of(text, "denormd_backfill_documents_total", {{"mapping", "m"}}), 1024);
  EXPECT_EQ(value_of(text, "denormd_deadletters_total", {{"mapping", "m"}}), 2);
  EXPECT_EQ(value_of(text, "denormd_resumes_total", {{"source", "s"}, {"reason", "step_down"}}), 1);
  EXPECT_EQ(value_of(text, "denormd_history_lost_total", {{"source", "s"}}), 1);
  EXPECT_EQ(value_of(text, "denormd_errors_total", {{"stage", "stream"}, {"code", "286"}}), 2);
  EXPECT_EQ(value_of(text, "denormd_lag_seconds", {{"source", "s"}}), 0);
  EXPECT_EQ(value_of(text, "denormd_checkpoint_age_seconds", {{"source", "s"}}), 3.25);
  EXPECT_EQ(value_of(text, "denormd_watcher_ready", {{"source", "s"}}), 1);
  EXPECT_EQ(value_of(text, "denormd_watcher_ready", {{"source", "t"}}), 0);
  EXPECT_EQ(value_of(text, "denormd_build_info", {{"version", "0.1.0"}}), 1);
}

TEST(metrics_test, a_reload_replaces_the_series_of_changed_removed_and_unwatched_things) {
  metrics m("1.2.3");
  m.set_mapping_info("a", "1111111111111111");
  m.set_mapping_info("b", "2222222222222222");
  m.set_backfill_progress("b", 0.5);
  m.count_writes("b", "ok");
  m.set_lag("shop.gone", 3);
  m.set_watcher_ready("shop.gone", true);
  m.set_history_headroom("shop.gone", 3600);
  m.count_events("shop.gone", "insert");
  // a changed, b removed, shop.gone no longer watched.
  m.set_mapping_info("a", "3333333333333333");
  m.remove_mapping("b");
  m.remove_source("shop.gone");
  m.count_reload("ok");
  const std::string text = m.serialize();
  EXPECT_FALSE(value_of(text, "denormd_mapping_info",
                        {{"mapping", "a"}, {"fingerprint", "1111111111111111"}}));
  EXPECT_EQ(value_of(text, "denormd_mapping_info",
                     {{"mapping", "a"}, {"fingerprint", "3333333333333333"}}),
            1.0);
  EXPECT_FALSE(value_of(text, "denormd_mapping_info",
                        {{"mapping", "b"}, {"fingerprint", "2222222222222222"}}));
  EXPECT_FALSE(value_of(text, "denormd_backfill_progress", {{"mapping", "b"}}));
  EXPECT_FALSE(value_of(text, "denormd_lag_seconds", {{"source", "shop.gone"}}));
  EXPECT_FALSE(value_of(text, "denormd_watcher_ready", {{"source", "shop.gone"}}));
  EXPECT_FALSE(value_of(text, "denormd_history_headroom_seconds", {{"source", "shop.gone"}}));
  // Counters stay: a rate over the reload must not see them vanish.
  EXPECT_EQ(value_of(text, "denormd_writes_total", {{"mapping", "b"}, {"result", "ok"}}), 1.0);
  EXPECT_EQ(value_of(text, "denormd_events_total", {{"source", "shop.gone"}, {"op", "insert"}}),
            1.0);
  EXPECT_EQ(value_of(text, "denormd_mapping_reloads_total", {{"result", "ok"}}), 1.0);
  EXPECT_EQ(value_of(text, "denormd_mapping_reloads_total", {{"result", "error"}}), 0.0);
  // Set again after removal, a series comes back.
  m.set_backfill_progress("b", 1);
  EXPECT_EQ(value_of(m.serialize(), "denormd_backfill_progress", {{"mapping", "b"}}), 1.0);
}

TEST(metrics_test, history_headroom_is_set_per_source_and_can_go) {
  metrics m("1.2.3");
  m.set_history_headroom("shop.a", 5400);
  m.set_history_headroom("shop.b", -12);
  m.remove_history_headroom("shop.a");
  const std::string text = m.serialize();
  EXPECT_FALSE(value_of(text, "denormd_history_headroom_seconds", {{"source", "shop.a"}}));
  EXPECT_EQ(value_of(text, "denormd_history_headroom_seconds", {{"source", "shop.b"}}), -12);
}

TEST(metrics_test, histograms_count_into_the_right_buckets) {
  metrics m("0.1.0");
  for (double s : {0.0005, 0.001, 0.003, 0.2, 7.0, 45.0, 120.0})
    m.observe_apply_latency("m", s);
  for (std::size_t n : {1u, 1u, 3u, 150u, 5000u, 9000u})
    m.observe_batch("s", n);

  const std::string text = m.serialize();
  const label_map lm{{"mapping", "m"}};
  const std::string lat = "denormd_apply_latency_seconds";
  EXPECT_EQ(bucket_of(text, lat, lm, 0.001), 2);  // le is inclusive
  EXPECT_EQ(bucket_of(text, lat, lm, 0.0025), 2);
  EXPECT_EQ(bucket_of(text, lat, lm, 0.005), 3);
  EXPECT_EQ(bucket_of(text, lat, lm, 0.25), 4);
  EXPECT_EQ(bucket_of(text, lat, lm, 10), 5);
  EXPECT_EQ(bucket_of(text, lat, lm, 30), 5);
  EXPECT_EQ(bucket_of(text, lat, lm, 60), 6);
  EXPECT_EQ(bucket_of(text, lat, lm, 1e300), 7);
  EXPECT_EQ(value_of(text, lat + "_count", lm), 7);
  EXPECT_NEAR(*value_of(text, lat + "_sum", lm), 172.2045, 1e-9);
  for (double le : {.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1., 2.5, 5., 10., 30., 60.})
    EXPECT_TRUE(bucket_of(text, lat, lm, le).has_value()) << le;

  const label_map ls{{"source", "s"}};
  const std::string batch = "denormd_batch_events";
  EXPECT_EQ(bucket_of(text, batch, ls, 1), 2);
  EXPECT_EQ(bucket_of(text, batch, ls, 2), 2);
  EXPECT_EQ(bucket_of(text, batch, ls, 5), 3);
  EXPECT_EQ(bucket_of(text, batch, ls, 100), 3);
  EXPECT_EQ(bucket_of(text, batch, ls, 200), 4);
  EXPECT_EQ(bucket_of(text, batch, ls, 5000), 5);
  EXPECT_EQ(bucket_of(text, batch, ls, 1e300), 6);
  for (double le : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000})
    EXPECT_TRUE(bucket_of(text, batch, ls, le).has_value()) << le;
}

TEST(metrics_test, concurrent_updates_from_many_threads_sum_exactly) {
  metrics m("0.1.0");
  constexpr int threads = 8;
  constexpr int per_thread = 5000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&m, t] {
      const std::string own = "source-" + std::to_string(t % 3);
      for (int i = 0; i < per_thread; ++i) {
        m.count_events("shared", "update");
        m.count_events(own, "insert", 2);
        m.count_writes("m", i % 2 == 0 ? "ok" : "retried");
        m.observe_batch("shared", 3);
        m.observe_apply_latency("m", 0.01);
        m.set_lag(own, i);
        if (i % 1000 == 0) (void)m.serialize();  // scrapes race with updates
      }
    });
  }
  for (auto& th : pool)
    th.join();
  const std::string text = m.serialize();
  EXPECT_EQ(value_of(text, "denormd_events_total", {{"source", "shared"}, {"op", "update"}}),
            threads * per_thread);
  double own_total = 0;
  for (int s = 0; s < 3; ++s)
    own_total += value_of(text, "denormd_events_total",
                          {{"source", "source-" + std::to_string(s)}, {"op", "insert"}})
                     .value_or(0);
  EXPECT_EQ(own_total, 2.0 * threads * per_thread);
  EXPECT_EQ(value_of(text, "denormd_writes_total", {{"mapping", "m"}, {"result", "ok"}}),
            threads * per_thread / 2);
  EXPECT_EQ(value_of(text, "denormd_batch_events_count", {{"source", "shared"}}),
            threads * per_thread);
  EXPECT_EQ(bucket_of(text, "denormd_batch_events", {{"source", "shared"}}, 2), 0);
  EXPECT_EQ(bucket_of(text, "denormd_batch_events", {{"source", "shared"}}, 5),
            threads * per_thread);
  EXPECT_EQ(value_of(text, "denormd_apply_latency_seconds_count", {{"mapping", "m"}}),
            threads * per_thread);
}

TEST(metrics_test, label_values_are_escaped_in_the_text_format) {
  metrics m("0.1.0");
  m.count_error("write", "say \"x\"\n");
  EXPECT_NE(m.serialize().find(R"(code="say \"x\"\n")"), std::string::npos) << m.serialize();
}

}  // namespace
}  // namespace denormd::metrics
