#include "common/log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace denormd::log {
namespace {

// 2026-11-21T20:41:12.123Z
constexpr std::int64_t example_ms = 1795293672123;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

class log_test : public ::testing::Test {
 protected:
  void TearDown() override { configure(format::text, level::info, &std::cerr); }
  std::ostringstream out_;
};

TEST_F(log_test, text_line_has_timestamp_level_component_message_and_fields) {
  const std::vector<field> f{
      {"source", "shop.customers"}, {"token", std::string("8263A1")}, {"batch", 12}, {"ok", true}};
  EXPECT_EQ(format_line(format::text, example_ms, level::info, "watcher", "resumed", f),
            "2026-11-21T20:41:12.123Z INFO  watcher: resumed source=shop.customers token=8263A1 "
            "batch=12 ok=true");
  EXPECT_EQ(format_line(format::text, example_ms, level::error, "writer", "rejected", {}),
            "2026-11-21T20:41:12.123Z ERROR writer: rejected");
  EXPECT_EQ(format_line(format::text, 0, level::warn, "a", "b", {}),
            "1970-01-01T00:00:00.000Z WARN  a: b");
  EXPECT_EQ(format_line(format::text, 7, level::debug, "a", "b", {}),
            "1970-01-01T00:00:00.007Z DEBUG a: b");
}

TEST_F(log_test, text_values_with_spaces_quotes_or_newlines_are_quoted_on_one_line) {
  const std::vector<field> f{{"reason", "primary stepped down"},
                             {"q", "say \"hi\""},
                             {"multi", "a\nb"},
                             {"empty", ""},
                             {"eq", "a=b"}};
  const std::string line = format_line(format::text, example_ms, level::warn, "w", "two\nlines", f);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("w: two\\nlines "), std::string::npos) << line;
  EXPECT_NE(line.find(R"(reason="primary stepped down")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"(q="say \"hi\"")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"(multi="a\nb")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"(empty="")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"(eq="a=b")"), std::string::npos) << line;
}

TEST_F(log_test, json_line_is_one_object_with_every_field_typed) {
  const std::vector<field> f{{"source", "shop.customers"},
                             {"count", 42},
                             {"negative", -7},
                             {"big", std::numeric_limits<std::uint64_t>::max()},
                             {"seconds", 1.5},
                             {"ready", false}};
  const std::string line =
      format_line(format::json, example_ms, level::info, "watcher", "resumed", f);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("ts"), "2026-11-21T20:41:12.123Z");
  EXPECT_EQ(j.at("level"), "info");
  EXPECT_EQ(j.at("component"), "watcher");
  EXPECT_EQ(j.at("msg"), "resumed");
  EXPECT_EQ(j.at("source"), "shop.customers");
  EXPECT_EQ(j.at("count"), 42);
  EXPECT_EQ(j.at("negative"), -7);
  EXPECT_EQ(j.at("big").get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_DOUBLE_EQ(j.at("seconds").get<double>(), 1.5);
  EXPECT_EQ(j.at("ready"), false);
  // The fixed keys come first, in this order, so lines read well even unparsed.
  EXPECT_EQ(line.rfind(R"({"ts":"2026-11-21T20:41:12.123Z","level":"info","component":"watcher",)"
                       R"("msg":"resumed","source":"shop.customers")",
                       0),
            0u)
      << line;
}

TEST_F(log_test, json_escapes_quotes_newlines_controls_and_invalid_utf8) {
  const std::string nasty = "say \"hi\"\\ \n\r\t\x01\x7f end";
  const std::string utf8 = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";
  const std::string broken =
      "a\xFF"
      "b\xC3";  // a stray byte and a truncated sequence
  const std::vector<field> f{{"nasty", nasty}, {"utf8", utf8}, {"broken", broken}, {"k\"ey", "v"}};
  const std::string line =
      format_line(format::json, example_ms, level::error, "c\"omp", "m\nsg", f);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("nasty"), nasty);
  EXPECT_EQ(j.at("utf8"), utf8);
  EXPECT_EQ(j.at("broken"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(j.at("k\"ey"), "v");
  EXPECT_EQ(j.at("component"), "c\"omp");
  EXPECT_EQ(j.at("msg"), "m\nsg");
  EXPECT_EQ(j.at("level"), "error");
}

TEST_F(log_test, json_writes_non_finite_doubles_as_strings) {
  const std::vector<field> f{{"nan", std::nan("")},
                             {"inf", std::numeric_limits<double>::infinity()}};
  const auto j = nlohmann::json::parse(format_line(format::json, 0, level::info, "c", "m", f));
  EXPECT_EQ(j.at("nan"), "NaN");
  EXPECT_EQ(j.at("inf"), "+Inf");
}

TEST_F(log_test, configure_sets_format_level_and_sink) {
  configure(format::json, level::warn, &out_);
  EXPECT_FALSE(enabled(level::debug));
  EXPECT_FALSE(enabled(level::info));
  EXPECT_TRUE(enabled(level::warn));
  EXPECT_TRUE(enabled(level::error));
  debug("c", "dropped");
  info("c", "dropped", {{"x", 1}});
  warn("c", "kept warn", {{"source", "shop.orders"}});
  error("c", "kept error");
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), 2u) << out_.str();
  EXPECT_EQ(nlohmann::json::parse(lines[0]).at("msg"), "kept warn");
  EXPECT_EQ(nlohmann::json::parse(lines[0]).at("source"), "shop.orders");
  EXPECT_EQ(nlohmann::json::parse(lines[1]).at("level"), "error");

  std::ostringstream text;
  configure(format::text, level::debug, &text);
  EXPECT_TRUE(enabled(level::debug));
  debug("planner", "planned", {{"writes", 3}});
  const auto text_lines = lines_of(text.str());
  ASSERT_EQ(text_lines.size(), 1u);
  EXPECT_NE(text_lines[0].find(" DEBUG planner: planned writes=3"), std::string::npos)
      << text_lines[0];
  EXPECT_EQ(text_lines[0].size(), std::string("2026-11-21T20:41:12.123Z").size() +
                                      std::string(" DEBUG planner: planned writes=3").size());

  configure(format::text, level::info, nullptr);  // discards without failing
  error("c", "nowhere");
}

TEST_F(log_test, span_overload_takes_fields_built_at_run_time) {
  configure(format::json, level::info, &out_);
  std::vector<field> f;
  for (std::string name : {"a", "b"})
    f.emplace_back("key-" + name, name + "-value");
  write(level::info, "c", "m", std::span<const field>(f));
  const auto j = nlohmann::json::parse(lines_of(out_.str()).at(0));
  EXPECT_EQ(j.at("key-a"), "a-value");
  EXPECT_EQ(j.at("key-b"), "b-value");
}

TEST_F(log_test, lines_from_many_threads_never_interleave) {
  configure(format::json, level::info, &out_);
  constexpr int threads = 8;
  constexpr int per_thread = 400;
  const std::string padding(200, 'x');  // long lines make a torn write likelier to show
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([t, &padding] {
      for (int i = 0; i < per_thread; ++i)
        info("worker", "tick", {{"thread", t}, {"i", i}, {"pad", padding}});
    });
  }
  for (auto& th : pool)
    th.join();
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(threads * per_thread));
  std::map<int, int> next;  // each thread's lines appear whole and in its own order
  for (const auto& line : lines) {
    const auto j = nlohmann::json::parse(line);  // throws (fails) on a torn line
    const int t = j.at("thread");
    EXPECT_EQ(j.at("i").get<int>(), next[t]++);
    EXPECT_EQ(j.at("pad"), padding);
  }
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(next[t], per_thread);
}

TEST_F(log_test, parses_level_and_format_names) {
  EXPECT_EQ(parse_level("debug"), level::debug);
  EXPECT_EQ(parse_level("info"), level::info);
  EXPECT_EQ(parse_level("warn"), level::warn);
  EXPECT_EQ(parse_level("warning"), level::warn);
  EXPECT_EQ(parse_level("error"), level::error);
  EXPECT_EQ(parse_level("INFO"), std::nullopt);
  EXPECT_EQ(parse_level(""), std::nullopt);
  EXPECT_EQ(parse_format("text"), format::text);
  EXPECT_EQ(parse_format("json"), format::json);
  EXPECT_EQ(parse_format("yaml"), std::nullopt);
  EXPECT_EQ(to_string(level::warn), "warn");
}

}  // namespace
}  // namespace denormd::log
