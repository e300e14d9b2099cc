#include "app/options.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

namespace denormd::app {

namespace {

struct command_info {
  app::command cmd;
  const char* summary;
  // The usage line: {name} stands for the flag with its value's name (flags()), [..] for
  // optional parts, | for alternatives. The flags it names are the ones the command takes.
  const char* synopsis;
};

const std::map<std::string, command_info>& commands() {
  static const std::map<std::string, command_info> all = {
      {"run",
       {command::run, "watch the sources and keep every copy true",
        "{uri} {db} {mappings} {metrics-addr} [{resume-after} | {start-at}] [{linger-ms}] "
        "[{checkpoint-interval-ms}] [{headroom-interval-ms}] [{verify-interval} "
        "[{verify-no-repair}]] [{ha} [{instance-id}] [{lease-ttl-ms}]] [{partitions}]... "
        "[{no-auto-backfill}] "
        "[{watch-mappings}] [{web-enable-lifecycle}] [{web-config-file}] [{dry-run}] "
        "[{log-format}] [{log-level}]"}},
      {"check",
       {command::check, "validate the mappings; print the writes and indexes each needs",
        "{mappings} [{uri}] [{db}]"}},
      {"plan",
       {command::plan, "print the writes planned for change events (one JSON per line)",
        "{mappings} {events} [{db}] [{coalesce}]"}},
      {"backfill",
       {command::backfill, "bring every dependent in line with its sources",
        "{uri} {db} {mappings} [{mapping}]... [{dry-run}] [{timeout}]"}},
      {"verify",
       {command::verify, "count dependents that differ from their sources",
        "{uri} {db} {mappings} [{mapping}]... [{repair} [{dry-run}]] [{json}] [{timeout}]"}},
      {"status",
       {command::status, "print the stored checkpoints, their age and whether history reaches them",
        "{uri} {db} {mappings} [{partitions}]... [{json}] [{timeout}]"}},
      {"cost",
       {command::cost,
        "measure what each mapping costs: fan-out, bytes, traffic, and whether it is worth it",
        "{uri} {db} {mappings} [{mapping}]... [{max-time}] [{sample-size}] [{metrics-url}] "
        "[{sample-seconds}] [{json}] [{timeout}]"}},
  };
  return all;
}

namespace po = boost::program_options;

// A flag's value that is not what the flag takes; `what` is what it takes ("must be ...").
struct bad_value : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A whole number from `min` to `max` into an int field; `unit` names it in the error.
class whole_number : public po::typed_value<int> {
 public:
  whole_number(int* into, int min, int max, const std::string& unit)
      : po::typed_value<int>(into), min_(min), max_(max), unit_(unit) {
    default_value(*into);
  }
  void xparse(boost::any& out, const std::vector<std::string>& tokens) const override {
    const std::string& v = tokens.front();
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < min_ || n > max_)
      throw bad_value("must be a whole number " + unit_ + "from " + std::to_string(min_) + " to " +
                      std::to_string(max_));
    out = static_cast<int>(n);
  }

 private:
  long min_, max_;
  std::string unit_;
};

// A duration (parse_duration_ms) from 1s to 7d, in milliseconds.
class duration : public po::typed_value<std::int64_t> {
 public:
  explicit duration(std::int64_t* into) : po::typed_value<std::int64_t>(into) {}
  void xparse(boost::any& out, const std::vector<std::string>& tokens) const override {
    const auto ms = parse_duration_ms(tokens.front());
    if (!ms || *ms < 1000 || *ms > 7LL * 24 * 3600 * 1000)
      throw bad_value("must be a duration from 1s to 7d such as 90s, 10m or 1h30m");
    out = *ms;
  }
};

// One flag: its name, its value's name in the usage (nullptr: a switch), the group its help
// lists it under, its one line of meaning, and its value: typed, bounded and bound to its field
// of `options`, whose initial value is the default (shown by `shown`, or `fixed` when the
// default is not a value: "the URI's database").
struct flag {
  const char* name;
  const char* arg;
  const char* group;
  const char* help;
  std::function<po::value_semantic*(options&)> value;
  std::function<std::string(const options&)> shown;
  const char* fixed = nullptr;
};

struct binding {
  std::function<po::value_semantic*(options&)> value;
  std::function<std::string(const options&)> shown;
};

binding text(std::string options::*field) {
  return {[field](options& o) { return po::value(&(o.*field)); },
          [field](const options& o) { return o.*field; }};
}
binding on(bool options::*field) {
  return {[field](options& o) { return po::bool_switch(&(o.*field)); },
          [field](const options& o) { return std::string(o.*field ? "on" : "off"); }};
}
binding whole(int options::*field, int min, int max, const char* unit) {
  return {[=](options& o) { return new whole_number(&(o.*field), min, max, unit); },
          [field](const options& o) { return std::to_string(o.*field); }};
}

flag make_flag(const char* name, const char* arg, const char* group, const char* help, binding b,
               const char* fixed = nullptr) {
  return flag{name, arg, group, help, std::move(b.value), std::move(b.shown), fixed};
}

// The groups of a command's help, in order.
constexpr const char* help_groups[] = {
    "MongoDB",       "Mappings",          "Where to start", "Writing", "High availability",
    "HTTP endpoint", "Background checks", "Measuring",      "Output",  "Logging"};

// The flags of where data comes from and how it is written: MongoDB, the mappings, where to
// start, writing.
std::vector<flag> data_flags() {
  return {
      make_flag("uri", "URI", "MongoDB", "the replica set's connection string", text(&options::uri),
                "$DENORMD_URI"),
      make_flag("db", "NAME", "MongoDB",
                "database of mappings that name none, and of denormd's own collections",
                text(&options::db), "the URI's database, else denormd"),
      make_flag("timeout", "SECONDS", "MongoDB",
                "how long MongoDB may be unreachable, at the start or in between, before the "
                "command gives up with exit 1",
                whole(&options::timeout_s, 1, 86400, "of seconds ")),
      make_flag("mappings", "DIR", "Mappings", "the folder of mapping files (*.json)",
                text(&options::mappings_dir)),
      make_flag("mapping", "NAME", "Mappings", "only this mapping (repeatable)",
                {[](options& o) { return po::value(&o.only_mappings)->composing(); },
                 [](const options&) { return std::string("every mapping"); }}),
      make_flag("no-auto-backfill", nullptr, "Mappings",
                "leave new and changed mappings to `denormd backfill` instead of backfilling them",
                on(&options::no_auto_backfill)),
      make_flag("watch-mappings", nullptr, "Mappings",
                "reload when a mapping file changes (checked once a second)",
                on(&options::watch_mappings)),
      make_flag("resume-after", "TOKEN", "Where to start",
                "replay from this resume token (Extended JSON) instead of the checkpoints",
                text(&options::resume_after), "the stored checkpoints"),
      make_flag("start-at", "TIME", "Where to start",
                "replay from this time (ISO-8601, or T:I) instead of the checkpoints",
                text(&options::start_at), "the stored checkpoints"),
      make_flag("linger-ms", "MS", "Writing",
                "how long a batch smaller than 1,000 events waits for more",
                whole(&options::linger_ms, 0, 1000, "of milliseconds ")),
      make_flag("checkpoint-interval-ms", "MS", "Writing",
                "most time between checkpoint writes while busy (0: after every batch)",
                whole(&options::checkpoint_interval_ms, 0, 600000, "of milliseconds ")),
      make_flag("dry-run", nullptr, "Writing", "read and plan, write nothing",
                on(&options::dry_run)),
      make_flag("repair", nullptr, "Writing", "rewrite the dependents found differing",
                on(&options::repair))};
}

// The flags of the running daemon: high availability, the HTTP endpoint, background checks.
std::vector<flag> daemon_flags() {
  return {
      make_flag("ha", nullptr, "High availability",
                "share the namespaces with other instances through leases", on(&options::ha)),
      make_flag("instance-id", "ID", "High availability",
                "this instance's name in the lease table (unique per instance)",
                text(&options::instance_id), "HOSTNAME:PID"),
      make_flag("lease-ttl-ms", "MS", "High availability",
                "how long a lease lasts unrenewed: the longest a dead instance's namespaces wait",
                whole(&options::lease_ttl_ms, 1000, 600000, "of milliseconds ")),
      make_flag("partitions", "NS=N", "High availability",
                "read namespace NS as N change streams, each a share of its keys (repeatable; "
                "every instance the same)",
                {[](options& o) { return po::value(&o.partitions)->composing(); },
                 [](const options&) { return std::string("one stream per namespace"); }}),
      make_flag("metrics-addr", "HOST:PORT", "HTTP endpoint",
                "where /metrics, /healthz, /readyz, /applied, the API and the page listen",
                text(&options::metrics_addr)),
      make_flag("web-enable-lifecycle", nullptr, "HTTP endpoint",
                "serve POST /-/reload (403 without it, as Prometheus)",
                on(&options::web_enable_lifecycle)),
      make_flag("web-config-file", "FILE", "HTTP endpoint",
                "TLS and basic auth for that port, in Prometheus' web config file format",
                text(&options::web_config_file), "none: plain HTTP, no auth"),
      make_flag("headroom-interval-ms", "MS", "Background checks",
                "how often the history headroom is measured (0: never)",
                whole(&options::headroom_interval_ms, 0, 3600000, "of milliseconds ")),
      make_flag("verify-interval", "DURATION", "Background checks",
                "verify every mapping once per DURATION (90s, 10m, 1h30m), at an even pace",
                {[](options& o) { return new duration(&o.verify_interval_ms); },
                 [](const options&) { return std::string("off"); }}),
      make_flag("verify-no-repair", nullptr, "Background checks",
                "count and log the drift the background verify finds, without repairing it",
                on(&options::verify_no_repair))};
}

// The flags of measuring and of what is printed and logged.
std::vector<flag> report_flags() {
  return {
      make_flag("max-time", "SECONDS", "Measuring",
                "how long one aggregation may run on the server (maxTimeMS)",
                whole(&options::max_time_s, 1, 86400, "of seconds ")),
      make_flag("sample-size", "N", "Measuring",
                "the most documents one measurement reads; a larger collection is sampled",
                whole(&options::sample_size, 1, 1000000000, "")),
      make_flag("metrics-url", "URL", "Measuring",
                "a running denormd's /metrics, for the changes and writes of each mapping",
                text(&options::metrics_url), "none: the changes from the server's top"),
      make_flag("sample-seconds", "SECONDS", "Measuring", "how long the traffic is watched",
                whole(&options::sample_seconds, 1, 3600, "of seconds ")),
      make_flag("events", "FILE|-", "Output", "change events to plan, one JSON per line (-: stdin)",
                text(&options::events_file), "required"),
      make_flag("coalesce", nullptr, "Output",
                "plan the events as one batch, as run coalesces them", on(&options::coalesce)),
      make_flag("json", nullptr, "Output", "print JSON instead of text", on(&options::json)),
      make_flag("log-format", "text|json", "Logging",
                "one line of text, or one JSON object, per entry", text(&options::log_format)),
      make_flag("log-level", "LEVEL", "Logging", "debug, info, warn or error",
                text(&options::log_level))};
}

// Every flag, declared once. A command ignores the flags it does not use (--timeout and
// --verify-interval aside, refused where they mean nothing).
const std::vector<flag>& flags() {
  static const std::vector<flag> all = [] {
    std::vector<flag> out = data_flags();
    for (auto* group : {daemon_flags, report_flags}) {
      for (auto& f : group())
        out.push_back(std::move(f));
    }
    return out;
  }();
  return all;
}

const flag& flag_named(std::string_view name) {
  const auto& all = flags();
  const auto f =
      std::find_if(all.begin(), all.end(), [&](const flag& x) { return x.name == name; });
  assert(f != all.end() && "a synopsis names an undeclared flag");
  return *f;
}

// The flags bound to `o`, for Boost.Program_options.
po::options_description described(options& o) {
  po::options_description d;
  d.add_options()("help,h", "");
  for (const auto& f : flags())
    d.add_options()(f.name, f.value(o), f.help);
  return d;
}

// The usage line of a synopsis, and the flags it names, grouped, each with its meaning and
// default.
std::pair<std::string, std::string> usage(std::string_view synopsis) {
  std::string line;
  std::vector<const flag*> named;
  for (std::size_t i = 0; i < synopsis.size(); ++i) {
    if (synopsis[i] != '{') {
      line += synopsis[i];
      continue;
    }
    const std::size_t close = synopsis.find('}', i);
    const flag& f = flag_named(synopsis.substr(i + 1, close - i - 1));
    line += std::string("--") + f.name + (f.arg ? std::string(" ") + f.arg : "");
    named.push_back(&f);
    i = close;
  }
  const options defaults;
  std::string listed;
  for (const char* group : help_groups) {
    std::string rows;
    for (const flag* f : named) {
      if (std::string_view(f->group) != group) continue;
      std::string left = std::string("  --") + f->name + (f->arg ? std::string(" ") + f->arg : "");
      left += std::string(left.size() < 32 ? 32 - left.size() : 1, ' ');
      rows += left + f->help + " (default: " + (f->fixed ? f->fixed : f->shown(defaults)) + ")\n";
    }
    if (!rows.empty()) listed += std::string("\n") + group + ":\n" + rows;
  }
  return {line, listed};
}

}  // namespace

std::string help_text(const std::string& topic) {
  if (auto it = commands().find(topic); it != commands().end()) {
    const auto [line, listed] = usage(it->second.synopsis);
    return "usage: denormd " + topic + " " + line + "\n\n" + it->second.summary + ".\n" + listed +
           "\nThe URI may also come from DENORMD_URI. Exit codes: 0 ok, 1 runtime failure, 2 "
           "bad usage or bad mappings" +
           (topic == "verify" ? ", 3 drift found" : "") + ".\n";
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

// Long flags as --name VALUE or --name=VALUE, and -h; no abbreviations, no bundling.
constexpr int flag_style =
    po::command_line_style::allow_long | po::command_line_style::long_allow_adjacent |
    po::command_line_style::long_allow_next | po::command_line_style::allow_short |
    po::command_line_style::short_allow_next | po::command_line_style::allow_dash_for_short;

// Flags earlier releases took, and why they went.
const std::map<std::string, const char*, std::less<>>& removed_flags() {
  static const std::map<std::string, const char*, std::less<>> all = {
      {"--writers",
       "--writers was removed: every transaction of a namespace ends with the namespace's write "
       "fence, so its batches are written one transaction at a time (docs/architecture.md, \"The "
       "write fence\"); on the test server it had measured no gain. Drop the flag"},
  };
  return all;
}

std::string unknown_flag(const std::string& token, const std::string& name) {
  const auto removed = removed_flags().find(token.substr(0, token.find('=')));
  if (removed != removed_flags().end()) return removed->second;
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

// Stores one flag's value into its field, typed and checked by its declaration.
status apply_flag(const po::option& opt, const po::option_description& d, boost::any& slot,
                  const std::string& name, const options& o) {
  const std::string value = opt.value.empty() ? "" : opt.value.front();
  try {
    d.semantic()->parse(slot, opt.value, true);
  } catch (const bad_value& e) {
    return fail("--" + opt.string_key + " " + e.what() + ", not \"" + value + "\"");
  }
  if (opt.string_key == "timeout" && o.cmd != command::backfill && o.cmd != command::verify &&
      o.cmd != command::status && o.cmd != command::cost)
    return fail("--timeout is for backfill, verify, status and cost, not " + name);
  d.semantic()->notify(slot);
  return {};
}

// The flags after the command, applied in command-line order (a repeated flag's last value
// wins; --mapping collects).
status parse_flags(const std::vector<std::string>& args, const std::string& name, options& o) {
  const po::options_description described_flags = described(o);
  po::parsed_options parsed(nullptr);
  try {
    parsed = po::command_line_parser(args)
                 .options(described_flags)
                 .style(flag_style)
                 .allow_unregistered()
                 .run();
  } catch (const po::error_with_option_name& e) {
    return fail(syntax_error(e, args, name));
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see denormd " + name + " --help)");
  }
  std::map<std::string, boost::any> collected;  // what the composing flags have gathered
  for (const auto& opt : parsed.options) {
    if (opt.unregistered || opt.string_key.empty()) {
      return fail(unknown_flag(opt.original_tokens.front(), name));
    }
    if (opt.string_key == "help") {
      o.cmd = command::help;
      o.help_topic = name;
      return {};
    }
    const auto& d = described_flags.find(opt.string_key, false);
    boost::any one;
    boost::any& slot = d.semantic()->is_composing() ? collected[opt.string_key] : one;
    if (auto st = apply_flag(opt, d, slot, name, o); !st) return st;
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
  if (auto parts = parse_partitions(o.partitions); !parts) return parts.error();
  if (o.cmd == command::plan && o.events_file.empty())
    return fail("plan needs --events FILE (or - for stdin)");
  return {};
}

}  // namespace

expected<std::map<std::string, int>> parse_partitions(const std::vector<std::string>& given) {
  std::map<std::string, int> out;
  for (const auto& g : given) {
    const auto eq = g.rfind('=');
    const std::string name = g.substr(0, eq);
    const auto dot = name.find('.');
    int n = 0;
    const char* digits = eq == std::string::npos ? nullptr : g.c_str() + eq + 1;
    const auto [end, ec] = digits == nullptr ? std::from_chars(digits, digits, n)
                                             : std::from_chars(digits, g.c_str() + g.size(), n);
    if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == name.size() ||
        name.find_first_of("#/$") != std::string::npos || ec != std::errc{} ||
        end != g.c_str() + g.size() || n < 2 || n > max_partitions) {
      return fail("--partitions takes DB.COLLECTION=N with N from 2 to " +
                  std::to_string(max_partitions) + ", not \"" + g + "\"");
    }
    if (const auto [it, added] = out.emplace(name, n); !added && it->second != n)
      return fail("--partitions gives " + name + " both " + std::to_string(it->second) + " and " +
                  std::to_string(n) + " partitions");
  }
  return out;
}

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
