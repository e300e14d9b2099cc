#include "app/options.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

namespace denormd::app {

namespace {

struct command_info {
  app::command cmd;
  const char* summary;
  const char* flags;
};

const std::map<std::string, command_info>& commands() {
  static const std::map<std::string, command_info> all = {
      {"run",
       {command::run, "watch the sources and keep every copy true",
        "--uri URI --db NAME --mappings DIR --metrics-addr HOST:PORT [--resume-after TOKEN | "
        "--start-at TIME] [--linger-ms MS] [--writers N] [--checkpoint-interval-ms MS] "
        "[--headroom-interval-ms MS] [--verify-interval DURATION [--verify-no-repair]] "
        "[--ha [--instance-id ID] [--lease-ttl-ms MS]] "
        "[--no-auto-backfill] "
        "[--watch-mappings] [--dry-run] [--log-format text|json] [--log-level LEVEL]"}},
      {"check",
       {command::check, "validate the mappings; print the writes and indexes each needs",
        "--mappings DIR [--uri URI] [--db NAME]"}},
      {"plan",
       {command::plan, "print the writes planned for change events (one JSON per line)",
        "--mappings DIR --events FILE|- [--db NAME] [--coalesce]"}},
      {"backfill",
       {command::backfill, "bring every dependent in line with its sources",
        "--uri URI --db NAME --mappings DIR [--mapping NAME]... [--dry-run] [--timeout SECONDS]"}},
      {"verify",
       {command::verify, "count dependents that differ from their sources",
        "--uri URI --db NAME --mappings DIR [--mapping NAME]... [--repair [--dry-run]] [--json] "
        "[--timeout SECONDS]"}},
      {"status",
       {command::status, "print the stored checkpoints, their age and whether history reaches them",
        "--uri URI --db NAME --mappings DIR [--json] [--timeout SECONDS]"}},
  };
  return all;
}

// A whole number from `min` to `max`, or nullopt.
std::optional<int> whole_number(const std::string& v, long min, long max) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < min || n > max) return std::nullopt;
  return static_cast<int>(n);
}

}  // namespace

std::string help_text(const std::string& topic) {
  if (auto it = commands().find(topic); it != commands().end()) {
    return "usage: denormd " + topic + " " + it->second.flags + "\n\n" + it->second.summary +
           ".\n\nThe URI may also come from DENORMD_URI. Exit codes: 0 ok, 1 runtime failure, 2 "
           "bad usage or bad mappings" +
           (topic == "verify" ? ", 3 drift found" : "") + ".\n" +
           (std::string(it->second.flags).find("--timeout") != std::string::npos
                ? "\n--timeout SECONDS (default 30): how long MongoDB may be unreachable, at the "
                  "start or\nin between, before the command gives up with exit 1.\n"
                : "");
  }
  std::string text =
      "denormd keeps denormalized MongoDB data true: it watches the sources' change streams and\n"
      "rewrites the copies that mapping files declare.\n\nusage: denormd COMMAND [flags]\n\n"
      "commands:\n";
  for (const auto& [name, info] : commands()) {
    text += "  " + name + std::string(10 - name.size(), ' ') + info.summary + "\n";
  }
  text += "\n'denormd COMMAND --help' shows a command's flags. --version prints the version.\n";
  return text;
}

std::optional<std::int64_t> parse_duration_ms(const std::string& text) {
  static const std::vector<std::pair<std::string_view, std::int64_t>> units = {
      {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
  std::int64_t total = 0;
  std::size_t i = 0, next_unit = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size()) {
    std::size_t digits = i;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
      ++digits;
    if (digits == i || digits - i > 9) return std::nullopt;
    const std::int64_t n = std::stoll(text.substr(i, digits - i));
    std::size_t end = digits;
    while (end < text.size() && text[end] >= 'a' && text[end] <= 'z')
      ++end;
    const std::string_view unit(text.data() + digits, end - digits);
    // Each unit once, largest first: "1h30m", never "30m1h" or "1m1m".
    std::size_t at = 0;
    while (at < units.size() && units[at].first != unit)
      ++at;
    if (at == units.size() || at < next_unit) return std::nullopt;
    total += n * units[at].second;
    next_unit = at + 1;
    i = end;
  }
  return total;
}

std::string meta_database(const options& o, const std::string& uri_database) {
  if (!o.db.empty()) return o.db;
  return !uri_database.empty() ? uri_database : "denormd";
}

namespace {

namespace po = boost::program_options;

// Every flag, for every command: a command ignores the ones it does not use (--timeout aside).
const po::options_description& flags() {
  static const po::options_description all = [] {
    po::options_description d;
    d.add_options()("help,h", "");
    for (const char* name : {"dry-run", "repair", "json", "coalesce", "no-auto-backfill",
                             "watch-mappings", "ha", "verify-no-repair"})
      d.add_options()(name, "");
    for (const char* name : {"uri", "db", "mappings", "metrics-addr", "resume-after", "start-at",
                             "events", "log-format", "log-level", "linger-ms", "writers",
                             "checkpoint-interval-ms", "headroom-interval-ms", "timeout", "mapping",
                             "instance-id", "lease-ttl-ms", "verify-interval"}) {
      d.add_options()(name, po::value<std::string>());
    }
    return d;
  }();
  return all;
}

// Long flags as --name VALUE or --name=VALUE, and -h; no abbreviations, no bundling.
constexpr int flag_style =
    po::command_line_style::allow_long | po::command_line_style::long_allow_adjacent |
    po::command_line_style::long_allow_next | po::command_line_style::allow_short |
    po::command_line_style::short_allow_next | po::command_line_style::allow_dash_for_short;

constexpr std::int64_t min_verify_interval_ms = 1000;
constexpr std::int64_t max_verify_interval_ms = 7LL * 24 * 3600 * 1000;

status whole_number_flag(const std::string& flag, const std::string& v, int max, int& into) {
  const auto n = whole_number(v, 0, max);
  if (!n)
    return fail(flag + " must be a whole number of milliseconds from 0 to " + std::to_string(max) +
                ", not \"" + v + "\"");
  into = *n;
  return {};
}

status timeout_flag(const std::string& v, const std::string& name, options& o) {
  const auto n = whole_number(v, 1, 86400);
  if (!n)
    return fail("--timeout must be a whole number of seconds from 1 to 86400, not \"" + v + "\"");
  if (o.cmd != command::backfill && o.cmd != command::verify && o.cmd != command::status)
    return fail("--timeout is for backfill, verify and status, not " + name);
  o.timeout_s = *n;
  return {};
}

// Applies one recognized flag with its value ("" for a switch).
status apply_flag(const std::string& key, const std::string& v, const std::string& name,
                  options& o) {
  static const std::map<std::string, std::string options::*> strings = {
      {"uri", &options::uri},
      {"db", &options::db},
      {"mappings", &options::mappings_dir},
      {"metrics-addr", &options::metrics_addr},
      {"resume-after", &options::resume_after},
      {"start-at", &options::start_at},
      {"events", &options::events_file},
      {"log-format", &options::log_format},
      {"log-level", &options::log_level},
      {"instance-id", &options::instance_id}};
  static const std::map<std::string, bool options::*> switches = {
      {"dry-run", &options::dry_run},
      {"repair", &options::repair},
      {"json", &options::json},
      {"coalesce", &options::coalesce},
      {"no-auto-backfill", &options::no_auto_backfill},
      {"watch-mappings", &options::watch_mappings},
      {"ha", &options::ha},
      {"verify-no-repair", &options::verify_no_repair}};
  if (auto s = strings.find(key); s != strings.end()) {
    o.*(s->second) = v;
  } else if (auto b = switches.find(key); b != switches.end()) {
    o.*(b->second) = true;
  } else if (key == "linger-ms") {
    return whole_number_flag("--linger-ms", v, 1000, o.linger_ms);
  } else if (key == "writers") {
    const auto n = whole_number(v, 1, 16);
    if (!n) return fail("--writers must be a whole number from 1 to 16, not \"" + v + "\"");
    o.writers = *n;
  } else if (key == "lease-ttl-ms") {
    if (auto st = whole_number_flag("--lease-ttl-ms", v, 600000, o.lease_ttl_ms); !st) return st;
    if (o.lease_ttl_ms < 1000)
      return fail("--lease-ttl-ms must be at least 1000, not \"" + v + "\"");
  } else if (key == "checkpoint-interval-ms") {
    return whole_number_flag("--checkpoint-interval-ms", v, 600000, o.checkpoint_interval_ms);
  } else if (key == "headroom-interval-ms") {
    return whole_number_flag("--headroom-interval-ms", v, 3600000, o.headroom_interval_ms);
  } else if (key == "timeout") {
    return timeout_flag(v, name, o);
  } else if (key == "verify-interval") {
    const auto ms = parse_duration_ms(v);
    if (!ms || *ms < min_verify_interval_ms || *ms > max_verify_interval_ms)
      return fail(
          "--verify-interval must be a duration from 1s to 7d such as 90s, 10m or 1h30m, "
          "not \"" +
          v + "\"");
    o.verify_interval_ms = *ms;
  } else if (key == "mapping") {
    o.only_mappings.push_back(v);
  }
  return {};
}

std::string unknown_flag(const std::string& token, const std::string& name) {
  return "unknown flag \"" + token + "\" for " + name + " (see denormd " + name + " --help)";
}

// A syntax error from the parser, in this program's words.
std::string syntax_error(const po::error_with_option_name& e, const std::vector<std::string>& args,
                         const std::string& name) {
  const std::string flag = e.get_option_name();
  if (const auto* s = dynamic_cast<const po::invalid_command_line_syntax*>(&e);
      s != nullptr && s->kind() == po::invalid_command_line_syntax::extra_parameter) {
    // A switch given a value (--dry-run=yes): name the whole word as it was typed.
    for (const auto& a : args) {
      if (a.starts_with(flag + "=")) return unknown_flag(a, name);
    }
    return unknown_flag(flag, name);
  }
  return flag + " needs a value";
}

// The flags after the command, applied in command-line order (a repeated flag's last value
// wins; --mapping collects).
status parse_flags(const std::vector<std::string>& args, const std::string& name, options& o) {
  po::parsed_options parsed(nullptr);
  try {
    parsed =
        po::command_line_parser(args).options(flags()).style(flag_style).allow_unregistered().run();
  } catch (const po::error_with_option_name& e) {
    return fail(syntax_error(e, args, name));
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see denormd " + name + " --help)");
  }
  for (const auto& opt : parsed.options) {
    if (opt.unregistered || opt.string_key.empty()) {
      return fail(unknown_flag(opt.original_tokens.front(), name));
    }
    if (opt.string_key == "help") {
      o.cmd = command::help;
      o.help_topic = name;
      return {};
    }
    const std::string value = opt.value.empty() ? "" : opt.value.front();
    if (auto st = apply_flag(opt.string_key, value, name, o); !st) return st;
  }
  return {};
}

// Rules across flags, checked once all are read.
status check_combination(const options& o) {
  if (o.log_format != "text" && o.log_format != "json") {
    return fail("--log-format must be text or json, not \"" + o.log_format + "\"");
  }
  static const char* levels[] = {"debug", "info", "warn", "error"};
  if (std::find(std::begin(levels), std::end(levels), o.log_level) == std::end(levels)) {
    return fail("--log-level must be debug, info, warn or error, not \"" + o.log_level + "\"");
  }
  if (!o.resume_after.empty() && !o.start_at.empty()) {
    return fail("--resume-after and --start-at cannot be used together");
  }
  if (!o.ha && (!o.instance_id.empty() || o.lease_ttl_ms != 10000))
    return fail("--instance-id and --lease-ttl-ms are for --ha");
  if (o.ha && (!o.resume_after.empty() || !o.start_at.empty()))
    return fail(
        "--resume-after and --start-at cannot be used with --ha (stop the instances and "
        "replay with one)");
  if (o.ha && o.dry_run) return fail("--dry-run cannot be used with --ha");
  if (o.verify_no_repair && o.verify_interval_ms == 0)
    return fail("--verify-no-repair is for --verify-interval");
  if (o.verify_interval_ms > 0 && o.cmd != command::run)
    return fail("--verify-interval is for run (see denormd verify for a one-off pass)");
  if (o.cmd == command::plan && o.events_file.empty())
    return fail("plan needs --events FILE (or - for stdin)");
  return {};
}

}  // namespace

expected<options> parse_options(const std::vector<std::string>& args, const std::string& env_uri) {
  options o;
  o.uri = env_uri;
  if (args.empty()) return o;  // help
  const std::string& first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    o.cmd = command::help;
    if (args.size() > 1) o.help_topic = args[1];
    return o;
  }
  if (first == "--version") {
    o.cmd = command::version;
    return o;
  }
  auto it = commands().find(first);
  if (it == commands().end()) return fail("unknown command \"" + first + "\" (see denormd --help)");
  o.cmd = it->second.cmd;
  if (auto st = parse_flags({args.begin() + 1, args.end()}, first, o); !st) return st.error();
  if (o.cmd == command::help) return o;
  if (auto st = check_combination(o); !st) return st.error();
  return o;
}

}  // namespace denormd::app
