#include "app/application.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "app/daemon.h"
#include "app/describe.h"
#include "app/partition_layout.h"
#include "app/signals.h"
#include "app/version.h"
#include "bson/json.h"
#include "common/clock.h"
#include "common/log.h"
#include "config/mapping_loader.h"
#include "http/http_get.h"
#include "http/web_security.h"
#include "mapping/coalescer.h"
#include "mapping/computed_expression.h"
#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "mongo/uri_redaction.h"
#include "ops/commands/backfiller.h"
#include "ops/commands/cost_report.h"
#include "ops/commands/image_check.h"
#include "ops/commands/status_probe.h"
#include "ops/commands/verifier.h"
#include "ops/services/mapping_versions.h"

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

// What backfill, verify and status share: the mappings, the ones chosen with --mapping, and
// the connection with the database denormd keeps its state in.
struct db_context {
  std::unique_ptr<mapping::planner> planner;
  std::vector<const mapping::mapping*> selected;
  std::unique_ptr<mongo::connection> conn;
  std::string meta_db;
};

// Loads and connects as `run` does; returns exit_ok or the exit code to stop with.
int open_db_context(const options& o, std::ostream& err, db_context& ctx) {
  log::configure(*log::parse_format(o.log_format), *log::parse_level(o.log_level), &err);
  auto mappings = load(o, err);
  if (!mappings) return exit_usage;
  auto layout = partition_layout(o.partitions, *mappings);
  if (!layout) {
    err << "error: " << layout.error().message << "\n";
    return exit_usage;
  }
  ctx.planner = std::make_unique<mapping::planner>(std::move(*mappings), *layout);
  for (const auto& name : o.only_mappings) {
    const auto& all = ctx.planner->mappings();
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& m) { return m.name == name; });
    if (it == all.end()) {
      err << "error: no mapping named \"" << name << "\" in " << o.mappings_dir
          << "; the mappings are:";
      for (const auto& m : all)
        err << " " << m.name;
      err << "\n";
      return exit_usage;
    }
    if (std::find(ctx.selected.begin(), ctx.selected.end(), &*it) == ctx.selected.end()) {
      ctx.selected.push_back(&*it);
    }
  }
  if (o.only_mappings.empty()) {
    for (const auto& m : ctx.planner->mappings())
      ctx.selected.push_back(&m);
  }
  if (o.uri.empty()) {
    err << "error: no MongoDB URI: pass --uri or set DENORMD_URI\n";
    return exit_usage;
  }
  // No single wait on an unreachable server outlasts --timeout (connecting: at most 10 s).
  const mongo::connect_options timeouts{o.timeout_s * 1000, std::min(o.timeout_s, 10) * 1000};
  auto conn = mongo::connection::open(o.uri, "denormd", timeouts);
  if (!conn) {
    err << "error: " << conn.error().to_string() << " (" << mongo::redact_uri(o.uri) << ")\n";
    return exit_usage;
  }
  ctx.conn = std::move(conn).value();
  ctx.meta_db = meta_database(o, ctx.conn->default_database());
  // Reach the server once before starting, so that every command reports an unreachable
  // one alike.
  if (auto ping = ctx.conn->command("admin", bson::document{{"ping", 1}}); !ping) {
    if (ping.error().from == mongo::driver_error::origin::network) {
      err << "error: cannot reach MongoDB at " << mongo::redact_uri(o.uri) << " within "
          << o.timeout_s << " s (--timeout): " << ping.error().to_string() << "\n";
    } else {
      err << "error: MongoDB at " << mongo::redact_uri(o.uri)
          << " refused a ping: " << ping.error().to_string() << "\n";
    }
    return exit_failure;
  }
  return exit_ok;
}

// Clears the terminal line before each line written through it, so that log lines replace the
// backfill's progress line instead of running into it.
class line_clearing_buf : public std::streambuf {
 public:
  explicit line_clearing_buf(std::streambuf* out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (at_line_start_ && out_->sputn("\r\033[K", 4) != 4) return traits_type::eof();
    at_line_start_ = traits_type::to_char_type(c) == '\n';
    return out_->sputc(traits_type::to_char_type(c));
  }
  int sync() override { return out_->pubsync(); }

 private:
  std::streambuf* out_;
  bool at_line_start_ = true;
};

}  // namespace

application::application(options opts, std::ostream& out, std::ostream& err)
    : opts_(std::move(opts)), out_(out), err_(err) {}

int application::run() {
  // run and backfill stop cleanly on a signal once their handling is in place; the others
  // keep the default action.
  if (opts_.cmd != command::run && opts_.cmd != command::backfill) unblock_stop_signals();
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
      return backfill();
    case command::verify:
      return verify();
    case command::status:
      return status();
    case command::cost:
      return cost();
  }
  return exit_failure;
}

int application::run_daemon() {
  log::configure(*log::parse_format(opts_.log_format), *log::parse_level(opts_.log_level), &err_);
  auto mappings = load(opts_, err_);
  if (!mappings) return exit_usage;
  // Read with the mappings, before anything connects: a bad file is a start-up error.
  std::shared_ptr<http::web_security> security;
  if (!opts_.web_config_file.empty()) {
    auto opened = http::web_security::open(opts_.web_config_file);
    if (!opened) {
      err_ << "error: " << opened.error().message << "\n";
      return exit_usage;
    }
    security = std::move(opened).value();
  }
  daemon d(opts_, std::move(*mappings), std::move(security));
  return d.run();
}

int application::backfill() {
  db_context ctx;
  if (int rc = open_db_context(opts_, err_, ctx); rc != exit_ok) return rc;
  metrics::metrics m(denormd_version);
  ops::backfiller backfiller(*ctx.conn, *ctx.planner, m, ctx.meta_db);
  ops::backfill_options bo;
  bo.dry_run = opts_.dry_run;
  bo.give_up_after = std::chrono::seconds(opts_.timeout_s);
  // On a terminal: one progress line, rewritten in place a few times a second.
  auto last_line = std::chrono::steady_clock::time_point{};
  line_clearing_buf clearing(err_.rdbuf());
  std::ostream log_sink(&clearing);
  const bool terminal = &err_ == &std::cerr && isatty(STDERR_FILENO) == 1;
  if (terminal) {
    log::configure(*log::parse_format(opts_.log_format), *log::parse_level(opts_.log_level),
                   &log_sink);
    bo.on_progress = [&](const ops::backfill_progress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (!p.done && now - last_line < std::chrono::milliseconds(200)) return;
      last_line = now;
      err_ << "\r\033[K" << ops::progress_line(p) << (p.done ? "\n" : "") << std::flush;
    };
  }
  std::stop_source stop;
  mongo::result<ops::backfill_outcome> outcome = [&] {
    stop_on_signal on_signal(stop, "backfill",
                             "signal received; stopping after the batch in flight");
    return backfiller.run(ctx.selected, bo, stop.get_token());
  }();
  if (terminal) {
    log::configure(*log::parse_format(opts_.log_format), *log::parse_level(opts_.log_level), &err_);
  }
  if (!outcome) {
    err_ << "error: backfill failed: " << outcome.error().to_string()
         << "\n(progress up to the last finished batch is stored: run backfill again to "
            "continue)\n";
    return exit_failure;
  }
  for (const auto& mb : outcome->mappings) {
    out_ << mb.mapping << ": " << ops::format_count(mb.run_documents) << " document(s)";
    if (mb.resumed_after) {
      out_ << " (continued after _id " << bson::to_json(*mb.resumed_after)
           << (mb.resumed_in_targets ? " of the targets" : "") << "; "
           << ops::format_count(mb.documents) << " in all)";
    }
    if (mb.orphans_unset > 0) {
      out_ << ", copies unset in " << ops::format_count(mb.orphans_unset)
           << " target(s) whose source is gone";
    }
    out_ << (mb.done ? ", done" : ", stopped") << "\n";
  }
  if (!outcome->complete) {
    err_ << "backfill stopped; run it again to continue where it stopped\n";
    return exit_failure;
  }
  return exit_ok;
}

int application::verify() {
  db_context ctx;
  if (int rc = open_db_context(opts_, err_, ctx); rc != exit_ok) return rc;
  metrics::metrics m(denormd_version);
  ops::verifier verifier(*ctx.conn, *ctx.planner, m, ctx.meta_db);
  ops::verify_options vo;
  vo.repair = opts_.repair;
  vo.dry_run = opts_.dry_run;
  auto report = verifier.run(ctx.selected, vo, {});
  if (!report) {
    err_ << "error: verify failed: " << report.error().to_string() << "\n";
    return exit_failure;
  }
  out_ << (opts_.json ? ops::to_json(*report) + "\n" : ops::to_text(*report));
  // The exit code tells what was found, repaired or not.
  return report->clean() ? exit_ok : exit_drift;
}

int application::status() {
  db_context ctx;
  if (int rc = open_db_context(opts_, err_, ctx); rc != exit_ok) return rc;
  ops::status_probe probe(*ctx.conn, ctx.meta_db);
  auto sources = probe.run(ctx.planner->watched_namespaces());
  if (!sources) {
    err_ << "error: cannot read the checkpoints in " << ctx.meta_db << ": "
         << sources.error().to_string() << "\n";
    return exit_failure;
  }
  auto versions = ops::read_versions(*ctx.conn, ctx.meta_db);
  if (!versions) {
    err_ << "error: cannot read the mappings in " << ctx.meta_db << "." << ops::mappings_collection
         << ": " << versions.error().to_string() << "\n";
    return exit_failure;
  }
  if (opts_.json) {
    bson::document out = ops::to_document(*sources, wall_ms());
    out.append("mappings", ops::to_bson_array(*versions));
    if (!probe.instances().empty()) out.append("instances", ops::to_bson_array(probe.instances()));
    out_ << bson::to_json(out) << "\n";
  } else {
    out_ << ops::to_text(*sources, wall_ms(), probe.instances()) << ops::to_text(*versions);
  }
  return exit_ok;
}

int application::cost() {
  db_context ctx;
  if (int rc = open_db_context(opts_, err_, ctx); rc != exit_ok) return rc;
  ops::cost_report report;
  report.bounds = {static_cast<std::int64_t>(opts_.max_time_s) * 1000, opts_.sample_size};
  ops::metrics_fetch fetch;
  if (!opts_.metrics_url.empty()) {
    fetch = [url = opts_.metrics_url,
             timeout = std::chrono::seconds(std::min(opts_.timeout_s, 10))] {
      return http::http_get(url, timeout);
    };
  }
  // The traffic's window opens before the data is measured and closes once both are done.
  ops::traffic_sampler sampler(*ctx.conn, std::move(fetch));
  const ops::traffic_reading before = sampler.read();
  const std::int64_t window_ends = steady_ms() + std::int64_t{opts_.sample_seconds} * 1000;
  ops::cost_probe probe(*ctx.conn, report.bounds);
  bool measured = true;
  for (const auto* m : ctx.selected) {
    ops::mapping_cost c;
    c.mapping = m->name;
    c.kind = std::string(m->kind_name());
    c.source = m->source.full();
    c.target = m->target.full();
    c.data = probe.measure(*m);
    measured = measured && c.data.fanout.error.empty();
    report.mappings.push_back(std::move(c));
  }
  if (ops::traffic_sampler::useful(before)) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::max<std::int64_t>(0, window_ends - steady_ms())));
    const ops::traffic_reading after = sampler.read();
    for (std::size_t i = 0; i < report.mappings.size(); ++i) {
      auto& c = report.mappings[i];
      c.traffic = ops::traffic_of(*ctx.selected[i], before, after, ops::data_amplification(c));
    }
  }
  for (auto& c : report.mappings) {
    if (!c.traffic) {
      c.traffic_note = before.top_error + (opts_.metrics_url.empty() ? "; no --metrics-url given"
                                                                     : "; " + before.metrics_error);
    }
    c.verdict = ops::verdict(c);
  }
  out_ << (opts_.json ? ops::to_json(report) + "\n" : ops::to_text(report));
  // A mapping whose fan-out could not be measured is a failure; the others are still shown.
  return measured ? exit_ok : exit_failure;
}

int application::check() {
  auto mappings = load(opts_, err_);
  if (!mappings) return exit_usage;
  for (const auto& m : *mappings)
    out_ << describe_mapping(m) << "\n";
  for (const auto& m : *mappings) {
    for (const auto& w : mapping_warnings(m))
      err_ << "warning: " << w << "\n";
  }
  // With a server to ask: do the sources keep the document images the mappings need?
  const mapping::planner planner(*mappings);
  if (opts_.uri.empty()) {
    for (const auto& source : planner.source_namespaces()) {
      if (planner.needs_images(source).after) {
        std::string incremental;
        for (const auto& m : *mappings) {
          if (m.source == source && m.visit([](const auto& k) { return k.needs_images(); }).after)
            incremental += (incremental.empty() ? "" : ", ") + m.name;
        }
        err_ << "note: " << source.full() << " must keep pre- and post-images (mapping(s) "
             << incremental << " read it incrementally); pass --uri to check\n";
      }
    }
    for (const auto& m : *mappings) {
      if (m.fill_new_targets &&
          m.visit([](const auto& k) { return k.target_needs_images(); }).before) {
        err_ << "note: " << m.target.full() << " must keep pre- and post-images (mapping " << m.name
             << " keeps incremental values there); pass --uri to check\n";
      }
    }
  } else {
    const mongo::connect_options timeouts{opts_.timeout_s * 1000,
                                          std::min(opts_.timeout_s, 10) * 1000};
    auto conn = mongo::connection::open(opts_.uri, "denormd", timeouts);
    if (!conn) {
      err_ << "error: " << conn.error().to_string() << " (" << mongo::redact_uri(opts_.uri)
           << ")\n";
      return exit_usage;
    }
    bool images_missing = false;
    for (const auto& problem : ops::check_images(**conn, planner)) {
      err_ << (problem.fatal ? "error: " : "warning: ") << problem.message << "\n";
      images_missing = images_missing || problem.fatal;
    }
    if (images_missing) return exit_usage;
  }
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
  for (auto& ev : events) {
    // No server to evaluate computed fields: each shows as what it is, not as missing.
    if (const auto* computed = planner.computed(ev.source)) {
      bson::document placeholders;
      for (const auto& e : computed->entries())
        placeholders.append(e.expression->key(),
                            "<computed by the server: " + e.expression->canonical_text() + ">");
      for (auto* doc : {&ev.full_document, &ev.full_document_before_change}) {
        if (*doc) mapping::computed_fields::put(**doc, placeholders);
      }
    }
    planner.plan(ev, ops, &notes);
  }
  if (opts_.coalesce) ops = mapping::coalesce(std::move(ops));
  for (const auto& n : notes)
    err_ << "note: " << n << "\n";
  for (const auto& op : ops)
    out_ << mapping::to_plan_json(op) << "\n";
  return exit_ok;
}

}  // namespace denormd::app
