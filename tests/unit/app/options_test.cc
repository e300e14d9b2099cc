#include "app/options.h"

#include <gtest/gtest.h>

namespace denormd::app {
namespace {

TEST(options_test, parses_flags_in_both_forms) {
  auto o = parse_options({"run", "--uri", "mongodb://h/", "--db=shop", "--mappings", "m",
                          "--dry-run", "--mapping", "a", "--mapping=b", "--log-format", "json"},
                         "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->cmd, command::run);
  EXPECT_EQ(o->uri, "mongodb://h/");
  EXPECT_EQ(o->db, "shop");
  EXPECT_EQ(o->mappings_dir, "m");
  EXPECT_TRUE(o->dry_run);
  EXPECT_EQ(o->only_mappings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o->log_format, "json");
  EXPECT_EQ(o->linger_ms, 5);
  EXPECT_EQ(o->checkpoint_interval_ms, 1000);
  EXPECT_EQ(o->headroom_interval_ms, 30000);
  EXPECT_FALSE(o->watch_mappings);
  o = parse_options({"run", "--watch-mappings", "--no-auto-backfill"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_TRUE(o->watch_mappings);
  EXPECT_TRUE(o->no_auto_backfill);
  EXPECT_NE(help_text("run").find("[--watch-mappings]"), std::string::npos);
  EXPECT_FALSE(o->web_enable_lifecycle);
  o = parse_options({"run", "--web-enable-lifecycle"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_TRUE(o->web_enable_lifecycle);
  EXPECT_NE(help_text("run").find("[--web-enable-lifecycle]"), std::string::npos);
  o = parse_options({"run", "--linger-ms", "0", "--checkpoint-interval-ms=250"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->linger_ms, 0);
  EXPECT_EQ(help_text("run").find("--writers"), std::string::npos);
  EXPECT_EQ(o->checkpoint_interval_ms, 250);
  o = parse_options({"run", "--headroom-interval-ms", "0"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->headroom_interval_ms, 0);
  EXPECT_NE(help_text("run").find("[--headroom-interval-ms MS]"), std::string::npos);
}

TEST(options_test, verify_interval_is_a_duration_and_off_by_default) {
  auto o = parse_options({"run"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->verify_interval_ms, 0);
  EXPECT_FALSE(o->verify_no_repair);
  o = parse_options({"run", "--verify-interval", "10m", "--verify-no-repair"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->verify_interval_ms, 600000);
  EXPECT_TRUE(o->verify_no_repair);
  EXPECT_NE(help_text("run").find("[--verify-interval DURATION [--verify-no-repair]]"),
            std::string::npos);
  EXPECT_EQ(parse_duration_ms("1h30m"), 5400000);
  EXPECT_EQ(parse_duration_ms("90s"), 90000);
  EXPECT_EQ(parse_duration_ms("1s500ms"), 1500);
  EXPECT_EQ(parse_duration_ms("2d"), 172800000);
  for (const char* bad : {"", "10", "m", "1x", "30m1h", "1m1m", "-1s", "1.5h", "1 h", "1h "})
    EXPECT_FALSE(parse_duration_ms(bad).has_value()) << bad;
  EXPECT_EQ(parse_options({"run", "--verify-interval", "soon"}, "").error().message,
            "--verify-interval must be a duration from 1s to 7d such as 90s, 10m or 1h30m, not "
            "\"soon\"");
  EXPECT_FALSE(parse_options({"run", "--verify-interval", "999ms"}, "").has_value());
  EXPECT_FALSE(parse_options({"run", "--verify-interval", "8d"}, "").has_value());
  EXPECT_EQ(parse_options({"run", "--verify-no-repair"}, "").error().message,
            "--verify-no-repair is for --verify-interval");
  EXPECT_EQ(parse_options({"verify", "--verify-interval", "1m"}, "").error().message,
            "--verify-interval is for run (see denormd verify for a one-off pass)");
}

// Each command's help lists every flag its usage line names, under its group, with one line of
// meaning and its default (the value options starts with).
TEST(options_test, help_lists_each_flag_with_its_meaning_and_default) {
  for (const char* cmd : {"run", "check", "plan", "backfill", "verify", "status"}) {
    const std::string help = help_text(cmd);
    const std::string usage = help.substr(0, help.find('\n'));
    std::size_t at = 0;
    while ((at = usage.find("--", at)) != std::string::npos) {
      const std::size_t end = usage.find_first_of(" ]|", at);
      const std::string name = usage.substr(at, end - at);
      const std::size_t row = help.find("\n  " + name + " ");
      EXPECT_NE(row, std::string::npos) << cmd << ": " << name;
      if (row != std::string::npos) {
        const std::string line = help.substr(row + 1, help.find('\n', row + 1) - row - 1);
        EXPECT_NE(line.find(" (default: "), std::string::npos) << cmd << ": " << line;
      }
      at = end;
    }
  }
  const std::string run = help_text("run");
  EXPECT_NE(run.find("\nHigh availability:\n  --ha "), std::string::npos) << run;
  EXPECT_NE(run.find("(default: 10000)"), std::string::npos);           // --lease-ttl-ms
  EXPECT_NE(run.find("(default: 127.0.0.1:9464)"), std::string::npos);  // --metrics-addr
}

TEST(options_test, timeout_is_for_the_operations_and_defaults_to_30_seconds) {
  EXPECT_EQ(parse_options({"status"}, "")->timeout_s, 30);
  for (const char* cmd : {"backfill", "verify", "status"}) {
    auto o = parse_options({cmd, "--timeout", "3"}, "");
    ASSERT_TRUE(o.has_value()) << cmd << ": " << o.error().message;
    EXPECT_EQ(o->timeout_s, 3);
    EXPECT_NE(help_text(cmd).find("(default: 30)"), std::string::npos) << cmd;
  }
  EXPECT_EQ(parse_options({"verify", "--timeout=0"}, "").error().message,
            "--timeout must be a whole number of seconds from 1 to 86400, not \"0\"");
  EXPECT_EQ(parse_options({"run", "--timeout", "3"}, "").error().message,
            "--timeout is for backfill, verify, status and cost, not run");
}

TEST(options_test, uri_comes_from_the_environment_unless_given) {
  EXPECT_EQ(parse_options({"status"}, "mongodb://env/")->uri, "mongodb://env/");
  EXPECT_EQ(parse_options({"status", "--uri", "mongodb://flag/"}, "mongodb://env/")->uri,
            "mongodb://flag/");
}

TEST(options_test, usage_errors_say_what_is_wrong) {
  struct bad {
    std::vector<std::string> args;
    const char* reason;
  };
  const bad cases[] = {
      {{"frobnicate"}, "unknown command \"frobnicate\""},
      {{"check", "--mapings", "x"}, "unknown flag \"--mapings\""},
      {{"check", "--mappings"}, "--mappings needs a value"},
      {{"run", "--log-format", "xml"}, "--log-format must be text or json"},
      {{"run", "--log-level", "loud"}, "--log-level must be"},
      {{"run", "--resume-after", "x", "--start-at", "y"}, "cannot be used together"},
      {{"plan", "--mappings", "m"}, "plan needs --events"},
      {{"check", "--dry-run=yes"}, "unknown flag"},
      {{"run", "--linger-ms", "-1"},
       "--linger-ms must be a whole number of milliseconds from 0 to 1000, not \"-1\""},
      {{"run", "--linger-ms=5ms"}, "not \"5ms\""},
      {{"run", "--checkpoint-interval-ms", "999999"}, "from 0 to 600000"},
      {{"run", "--headroom-interval-ms", "3600001"}, "from 0 to 3600000"},
      // A flag that went says why, in the form it was given.
      {{"run", "--writers", "2"}, "--writers was removed: every transaction of a namespace ends"},
      {{"run", "--writers=2"}, "--writers was removed"},
      // One message with the whole range (it used to say "from 0 to 600000", or "at least 1000").
      {{"run", "--lease-ttl-ms", "500"},
       "--lease-ttl-ms must be a whole number of milliseconds from 1000 to 600000, not \"500\""},
      {{"run", "--lease-ttl-ms", "600001"}, "from 1000 to 600000"},
  };
  for (const auto& c : cases) {
    auto o = parse_options(c.args, "");
    ASSERT_FALSE(o.has_value()) << c.args[0];
    EXPECT_NE(o.error().message.find(c.reason), std::string::npos) << o.error().message;
  }
}

TEST(options_test, flags_are_whole_words_and_the_last_repeat_wins) {
  // No abbreviations ("--map" is not --mappings or --mapping) and no stray words.
  EXPECT_EQ(parse_options({"check", "--map", "m"}, "").error().message,
            "unknown flag \"--map\" for check (see denormd check --help)");
  EXPECT_EQ(parse_options({"check", "m"}, "").error().message,
            "unknown flag \"m\" for check (see denormd check --help)");
  // A value may start with a dash, or look like a flag.
  auto o = parse_options({"plan", "--events", "-", "--db", "--json", "--db=a", "--db", "b"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->events_file, "-");
  EXPECT_EQ(o->db, "b");
  EXPECT_FALSE(o->json);
  // Flags after --help are not checked.
  EXPECT_EQ(parse_options({"check", "--help", "--bogus"}, "")->help_topic, "check");
}

TEST(options_test, help_and_version) {
  EXPECT_EQ(parse_options({}, "")->cmd, command::help);
  auto h = parse_options({"plan", "--help"}, "");
  EXPECT_EQ(h->cmd, command::help);
  EXPECT_EQ(h->help_topic, "plan");
  EXPECT_NE(help_text("plan").find("--events"), std::string::npos);
  EXPECT_NE(help_text("").find("backfill"), std::string::npos);
  EXPECT_EQ(parse_options({"--version"}, "")->cmd, command::version);
}

TEST(options_test, web_config_file_is_a_run_flag_of_the_http_endpoint) {
  auto o = parse_options({"run"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->web_config_file, "");
  o = parse_options({"run", "--web-config-file", "/etc/denormd/web.yml"}, "");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->web_config_file, "/etc/denormd/web.yml");
  auto missing = parse_options({"run", "--web-config-file"}, "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message, "--web-config-file needs a value");
  const std::string help = help_text("run");
  EXPECT_NE(help.find("[--web-config-file FILE]"), std::string::npos) << help;
  const auto group = help.find("\nHTTP endpoint:\n");
  const auto row = help.find("\n  --web-config-file FILE ");
  ASSERT_NE(group, std::string::npos);
  ASSERT_NE(row, std::string::npos);
  EXPECT_LT(group, row);
  EXPECT_LT(row, help.find("\nBackground checks:\n"));
  EXPECT_NE(help.find("(default: none: plain HTTP, no auth)"), std::string::npos);
}

}  // namespace
}  // namespace denormd::app
