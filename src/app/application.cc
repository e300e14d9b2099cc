#include "app/application.h"

#include <fstream>
#include <iostream>

#include "app/daemon.h"
#include "app/describe.h"
#include "app/version.h"
#include "bson/json.h"
#include "common/log.h"
#include "config/mapping_loader.h"
#include "mapping/coalescer.h"
#include "mapping/planner.h"

namespace denormd::app {

namespace {

// Loads the mappings or prints every error; nullopt means exit 2.
std::optional<std::vector<mapping::mapping>> load(const options& o, std::ostream& err) {
  auto loaded = config::load_mappings(o.mappings_dir, o.db);
  if (!loaded) {
    for (const auto& e : loaded.error())
      err << "error: " << e.to_string() << "\n";
    err << loaded.error().size() << " error(s) in " << o.mappings_dir << "\n";
    return std::nullopt;
  }
  return std::move(loaded).value();
}

}  // namespace

application::application(options opts, std::ostream& out, std::ostream& err)
    : opts_(std::move(opts)), out_(out), err_(err) {}

int application::run() {
  switch (opts_.cmd) {
    case command::help:
      out_ << help_text(opts_.help_topic);
      return exit_ok;
    case command::version:
      out_ << "denormd " << denormd_version << "\n";
      return exit_ok;
    case command::check:
      return check();
    case command::plan:
      return plan();
    case command::run:
      return run_daemon();
    case command::backfill:
    case command::verify:
    case command::status:
      err_ << "error: this build of denormd has no database commands yet\n";
      return exit_failure;
  }
  return exit_failure;
}

int application::run_daemon() {
  log::configure(*log::parse_format(opts_.log_format), *log::parse_level(opts_.log_level), &err_);
  auto mappings = load(opts_, err_);
  if (!mappings) return exit_usage;
  daemon d(opts_, std::move(*mappings));
  return d.run();
}

int application::check() {
  auto mappings = load(opts_, err_);
  if (!mappings) return exit_usage;
  for (const auto& m : *mappings)
    out_ << describe_mapping(m) << "\n";
  out_ << mappings->size() << " mapping(s) OK\n";
  return exit_ok;
}

int application::plan() {
  auto mappings = load(opts_, err_);
  if (!mappings) return exit_usage;
  std::ifstream file;
  if (opts_.events_file != "-") {
    file.open(opts_.events_file);
    if (!file) {
      err_ << "error: cannot open events file " << opts_.events_file << "\n";
      return exit_usage;
    }
  }
  std::istream& in = opts_.events_file == "-" ? std::cin : file;

  // Read and validate every event first, so bad input produces no partial plan.
  std::vector<mapping::change_event> events;
  int bad = 0;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto doc = bson::parse_json(line);
    if (!doc) {
      err_ << "error: " << opts_.events_file << ":" << number << ": " << doc.error().message
           << "\n";
      ++bad;
      continue;
    }
    auto ev = mapping::change_event::parse(std::move(doc).value());
    if (!ev) {
      err_ << "error: " << opts_.events_file << ":" << number << ": " << ev.error().message << "\n";
      ++bad;
      continue;
    }
    events.push_back(std::move(ev).value());
  }
  if (bad > 0) return exit_usage;

  const mapping::planner planner(std::move(*mappings));
  std::vector<mapping::write_op> ops;
  std::vector<std::string> notes;
  for (const auto& ev : events)
    planner.plan(ev, ops, &notes);
  if (opts_.coalesce) ops = mapping::coalesce(std::move(ops));
  for (const auto& n : notes)
    err_ << "note: " << n << "\n";
  for (const auto& op : ops)
    out_ << mapping::to_plan_json(op) << "\n";
  return exit_ok;
}

}  // namespace denormd::app
