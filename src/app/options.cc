#include "app/options.h"

#include <algorithm>
#include <cstdlib>
#include <map>

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
        "--start-at TIME] [--linger-ms MS] [--checkpoint-interval-ms MS] [--dry-run] [--log-format "
        "text|json] [--log-level LEVEL]"}},
      {"check",
       {command::check, "validate the mappings; print the writes and indexes each needs",
        "--mappings DIR [--db NAME]"}},
      {"plan",
       {command::plan, "print the writes planned for change events (one JSON per line)",
        "--mappings DIR --events FILE|- [--db NAME] [--coalesce]"}},
      {"backfill",
       {command::backfill, "bring every dependent in line with its sources",
        "--uri URI --db NAME --mappings DIR [--mapping NAME]... [--dry-run]"}},
      {"verify",
       {command::verify, "count dependents that differ from their sources",
        "--uri URI --db NAME --mappings DIR [--mapping NAME]... [--repair [--dry-run]] [--json]"}},
      {"status",
       {command::status, "print the stored checkpoints, their age and whether history reaches them",
        "--uri URI --db NAME --mappings DIR [--json]"}},
  };
  return all;
}

}  // namespace

std::string help_text(const std::string& topic) {
  if (auto it = commands().find(topic); it != commands().end()) {
    return "usage: denormd " + topic + " " + it->second.flags + "\n\n" + it->second.summary +
           ".\n\nThe URI may also come from DENORMD_URI. Exit codes: 0 ok, 1 runtime failure, 2 "
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

std::string redact_uri(const std::string& uri) {
  const auto scheme = uri.find("://");
  if (scheme == std::string::npos) return uri;
  const auto at = uri.find('@', scheme + 3);
  const auto slash = uri.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return uri;
  const auto colon = uri.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return uri;
  return uri.substr(0, colon + 1) + "****" + uri.substr(at);
}

std::string meta_database(const options& o, const std::string& uri_database) {
  if (!o.db.empty()) return o.db;
  return !uri_database.empty() ? uri_database : "denormd";
}

expected<options> parse_options(const std::vector<std::string>& args, const std::string& env_uri) {
  options o;
  o.uri = env_uri;
  if (args.empty()) return o;  // help
  std::size_t i = 0;
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
  const std::string name = first;
  ++i;

  auto value_of = [&](const std::string& flag) -> expected<std::string> {
    if (i + 1 >= args.size()) return fail(flag + " needs a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto take = [&](std::string& into) -> status {
      if (inline_value) {
        into = *inline_value;
        return {};
      }
      auto v = value_of(flag);
      if (!v) return v.error();
      into = *v;
      return {};
    };
    static const std::map<std::string, std::string options::*> string_flags = {
        {"--uri", &options::uri},
        {"--db", &options::db},
        {"--mappings", &options::mappings_dir},
        {"--metrics-addr", &options::metrics_addr},
        {"--resume-after", &options::resume_after},
        {"--start-at", &options::start_at},
        {"--events", &options::events_file},
        {"--log-format", &options::log_format},
        {"--log-level", &options::log_level}};
    static const std::map<std::string, bool options::*> bool_flags = {
        {"--dry-run", &options::dry_run},
        {"--repair", &options::repair},
        {"--json", &options::json},
        {"--coalesce", &options::coalesce}};
    if (flag == "--help" || flag == "-h") {
      o.cmd = command::help;
      o.help_topic = name;
      return o;
    }
    if (auto s = string_flags.find(flag); s != string_flags.end()) {
      if (auto st = take(o.*(s->second)); !st) return st.error();
    } else if (auto b = bool_flags.find(flag); b != bool_flags.end() && !inline_value) {
      o.*(b->second) = true;
    } else if (flag == "--linger-ms" || flag == "--checkpoint-interval-ms") {
      std::string v;
      if (auto st = take(v); !st) return st.error();
      int& into = flag == "--linger-ms" ? o.linger_ms : o.checkpoint_interval_ms;
      const int max = flag == "--linger-ms" ? 1000 : 600000;
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0 || n > max)
        return fail(flag + " must be a whole number of milliseconds from 0 to " +
                    std::to_string(max) + ", not \"" + v + "\"");
      into = static_cast<int>(n);
    } else if (flag == "--mapping") {
      std::string v;
      if (auto st = take(v); !st) return st.error();
      o.only_mappings.push_back(v);
    } else {
      return fail("unknown flag \"" + args[i] + "\" for " + name + " (see denormd " + name +
                  " --help)");
    }
  }
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
  if (o.cmd == command::plan && o.events_file.empty())
    return fail("plan needs --events FILE (or - for stdin)");
  return o;
}

}  // namespace denormd::app
