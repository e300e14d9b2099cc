#include "source/watcher.h"

#include <bson/bson.h>

#include <utility>

#include "common/clock.h"
#include "common/log.h"
#include "common/retry.h"

namespace denormd::source {

namespace {

struct event_summary {
  std::string op;
  std::int64_t event_ms = 0;
  std::string detail;  // for drop/rename: what happened
};

// Reads the few fields the watcher itself needs, without converting the event.
event_summary summarize(const std::vector<std::uint8_t>& bytes) {
  event_summary s;
  bson_t b;
  bson_iter_t it;
  if (!bson_init_static(&b, bytes.data(), bytes.size()) || !bson_iter_init(&it, &b)) return s;
  std::int64_t cluster_ms = 0;
  while (bson_iter_next(&it)) {
    const std::string_view key = bson_iter_key(&it);
    if (key == "operationType" && BSON_ITER_HOLDS_UTF8(&it)) {
      s.op = bson_iter_utf8(&it, nullptr);
    } else if (key == "wallTime" && BSON_ITER_HOLDS_DATE_TIME(&it)) {
      s.event_ms = bson_iter_date_time(&it);
    } else if (key == "clusterTime" && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
      std::uint32_t t = 0;
      std::uint32_t i = 0;
      bson_iter_timestamp(&it, &t, &i);
      cluster_ms = static_cast<std::int64_t>(t) * 1000;
    } else if (key == "to" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_iter_t to;
      if (bson_iter_recurse(&it, &to) && bson_iter_find(&to, "coll") && BSON_ITER_HOLDS_UTF8(&to)) {
        s.detail = std::string("renamed to ") + bson_iter_utf8(&to, nullptr);
      }
    }
  }
  if (s.event_ms == 0) s.event_ms = cluster_ms;  // servers before 6.0 send no wallTime
  return s;
}

}  // namespace

watcher::watcher(mongo::connection& conn, watcher_options opts, event_queue& queue,
                 metrics::metrics& m)
    : conn_(conn),
      opts_(std::move(opts)),
      queue_(queue),
      metrics_(m),
      name_(opts_.source.unit()),
      resync_backoff_(opts_.first_resync_backoff, opts_.max_resync_backoff) {
  metrics_.set_watcher_ready(name_, false);
}

watcher::~watcher() {
  request_stop();
  join();
}

void watcher::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void watcher::request_stop() {
  if (thread_.joinable()) thread_.request_stop();
}

void watcher::join() {
  if (thread_.joinable()) thread_.join();
}

std::string watcher::state() const {
  std::lock_guard lock(state_mutex_);
  return state_;
}

void watcher::set_state(bool ready, std::string state) {
  {
    std::lock_guard lock(state_mutex_);
    state_ = std::move(state);
  }
  ready_ = ready;
  metrics_.set_watcher_ready(name_, ready);
}

retry_verdict watcher::history_lost(const mongo::driver_error& e) {
  if (!opts_.resync) {
    metrics_.count_history_lost(name_);
    reason_ = stop_reason::history_lost;
    set_state(false, "history lost: " + e.to_string());
    log::error("watcher",
               "change stream history lost; the stored position is no longer in the oplog. Run "
               "`denormd backfill` to bring the copies in line, then start denormd again",
               {{"source", name_}, {"error", e.to_string()}});
    return retry_verdict::give_up;
  }
  const auto now = std::chrono::steady_clock::now();
  // Lost again soon after a re-sync caught up: the oplog still outruns the stream, so the
  // back-off goes on growing instead of starting over.
  const bool soon_again = caught_up_at_ && now - *caught_up_at_ < opts_.max_resync_backoff;
  if (!episode_) {
    // Counted and logged once per episode, however many re-syncs it takes.
    metrics_.count_history_lost(name_);
    episode_ = episode{0, now, nullptr};
    if (!soon_again) resync_backoff_.reset();
    log::warn("watcher",
              "change stream history lost: re-syncing the affected mappings from the source "
              "while streaming from the time taken before the re-sync; nothing is skipped",
              {{"source", name_}, {"error", e.to_string()}});
  }
  if (episode_->resyncs == 0 && !soon_again) {
    set_state(false, "re-syncing after lost history (streaming beside the backfill)");
    return retry_verdict::retry_now;
  }
  // The oplog rolled past the stream's place during the last re-sync (or soon after it
  // caught up). Another re-sync at once would add its own writes to the roll and lose the
  // same race: wait longer each time.
  set_state(false, "re-syncing after lost history (attempt " +
                       std::to_string(episode_->resyncs + 1) +
                       "; the oplog rolled past the stream during the last one)");
  log::debug("watcher", "history lost again after a re-sync; re-syncing after a back-off",
             {{"source", name_},
              {"resyncs", episode_->resyncs},
              {"backoff_ms", static_cast<std::int64_t>(resync_backoff_.next().count())}});
  return retry_verdict::retry;
}

bool watcher::start_resync(position& at, std::stop_token& stop) {
  ++episode_->resyncs;
  auto started = resync_until_started(stop);
  if (!started) return false;
  episode_->finished = std::move(started->finished);
  at.token.reset();
  opts_.start_at = started->from;
  at.resume_reason = "resync";
  return true;
}

std::optional<resync_started> watcher::resync_until_started(std::stop_token& stop) {
  if (stop.stop_requested()) return std::nullopt;
  backoff retry(std::chrono::milliseconds(500), opts_.max_backoff);
  auto started = retry_with_backoff(
      stop, retry, [&] { return opts_.resync(stop); },
      [&](const mongo::driver_error& e, const retry_state&) {
        metrics_.count_error("resync", e.metric_code());
        log::error("watcher", "re-sync failed; retrying",
                   {{"source", name_}, {"error", e.to_string()}});
        return retry_verdict::retry;
      });
  if (!started || !**started) return std::nullopt;  // stopped
  log::debug("watcher", "re-sync started; streaming from its start time beside its backfill",
             {{"source", name_}, {"from_t", (***started).from.t}});
  return std::move(**started);
}

void watcher::end_episode() {
  const auto took = std::chrono::steady_clock::now() - episode_->began;
  log::info("watcher", "re-sync caught up; streaming again",
            {{"source", name_},
             {"resyncs", episode_->resyncs},
             {"seconds", std::chrono::duration_cast<std::chrono::seconds>(took).count()}});
  episode_.reset();
  caught_up_at_ = std::chrono::steady_clock::now();
  set_state(true, "streaming");
}

bool watcher::queue_event(std::vector<std::uint8_t> event, bson::document token,
                          const std::stop_token& stop) {
  const event_summary s = summarize(event);
  if (!queue_.push(stream_item{std::move(event), std::move(token), s.event_ms}, stop)) return false;
  ++pushed_;
  if (s.op == "drop" || s.op == "rename" || s.op == "dropDatabase") {
    set_state(false, s.op == "rename" ? "source collection " + s.detail : "source " + s.op + "ped");
  }
  if (s.op == "invalidate") {
    // Stop reading here: reading on after an invalidate only fails (and would spin).
    std::string why = state();
    if (why == "streaming") why = "change stream invalidated";
    if (!opts_.resync) {
      reason_ = stop_reason::invalidated;
      set_state(false, why + " (stream invalidated; restart denormd once the source is back)");
      log::error("watcher", "change stream invalidated; this source is no longer watched",
                 {{"source", name_}, {"reason", why}});
      return false;
    }
    invalidated_ = true;
    set_state(false, why + "; waiting for the collection to exist again");
    log::error("watcher",
               "change stream invalidated; streaming again, after a re-sync, once the source "
               "collection exists again",
               {{"source", name_}, {"reason", why}});
    return false;
  }
  return true;
}

bool watcher::wait_for_source(std::stop_token& stop) {
  const bson::document ask{{"listCollections", 1},
                           {"filter", bson::document{{"name", opts_.source.coll}}},
                           {"nameOnly", true}};
  backoff poll(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000));
  const std::string waiting = state();
  do {
    auto reply = conn_.command(opts_.source.db, ask);
    if (reply) {
      const bson::value* cursor = reply->get("cursor");
      const bson::value* batch = cursor != nullptr && cursor->is_document()
                                     ? cursor->as_document().get("firstBatch")
                                     : nullptr;
      if (batch != nullptr && batch->is_array() && !batch->as_array().empty()) return true;
      if (state() != waiting) set_state(false, waiting);
    } else {
      ++errors_;
      metrics_.count_error("stream", reply.error().metric_code());
      const std::string why = conn_.describe(reply.error());
      // Without listCollections on the database (or the credentials) it would wait forever
      // without saying why.
      if (reply.error().refused()) {
        if (state() == waiting)
          log::error("watcher", "cannot tell whether the source collection exists again",
                     {{"source", name_}, {"error", why}});
        set_state(false, "cannot tell whether the source collection exists again: " + why);
      }
      log::debug("watcher", "cannot list the collections; asking again",
                 {{"source", name_}, {"error", why}});
    }
  } while (poll.wait(stop));
  return false;
}

void watcher::run(std::stop_token stop) {
  position at;
  at.token = opts_.resume_after;
  if (at.token) at.resume_reason = "checkpoint";
  backoff reopen(std::chrono::milliseconds(100), opts_.max_backoff);
  // Two loops: the stream reopens after a failure, with `reopen` (stream()), and lost history
  // re-syncs, the re-syncs of one episode after the growing `resync_backoff_` (history_lost()).
  bool resync_due = false;
  auto attempt = [&]() -> mongo::status {
    if (std::exchange(resync_due, false) && !start_resync(at, stop)) return {};  // stopped
    return stream(at, reopen, stop);
  };
  auto lost = [&](const mongo::driver_error& e, const retry_state&) {
    const retry_verdict v = history_lost(e);
    resync_due = v != retry_verdict::give_up;
    return v;
  };
  for (;;) {
    retry_with_backoff(stop, resync_backoff_, attempt, lost);
    if (!std::exchange(invalidated_, false)) break;
    // The source was dropped or renamed: once it exists again, its history before that is
    // gone for this stream, so it re-syncs as after lost history (docs/architecture.md,
    // "Correctness").
    if (!wait_for_source(stop)) break;
    log::info("watcher", "the source collection exists again; re-syncing", {{"source", name_}});
    if (!episode_) episode_ = episode{0, std::chrono::steady_clock::now(), nullptr};
    set_state(false, "re-syncing: the source collection exists again");
    resync_due = true;
  }
  if (at.ended) return;
  if (reason_ == stop_reason::none) {  // history lost without a re-sync keeps its own state
    reason_ = stop_reason::requested;
    set_state(false, "stopped");
  }
}

mongo::status watcher::stream(position& at, backoff& reopen, std::stop_token& stop) {
  auto failed = [&](const stream_failure& f, const retry_state&) {
    ++errors_;
    metrics_.count_error("stream", f.error.metric_code());
    if (f.error.history_lost()) return retry_verdict::give_up;
    const std::string why = conn_.describe(f.error);
    set_state(false, f.what + ": " + why);
    // Refused credentials or a missing privilege are the operator's to fix: said as errors.
    const bool refused = f.error.refused();
    log::write(refused ? log::level::error : log::level::warn, "watcher",
               f.what + "; reopening from the last position", {{"source", name_}, {"error", why}});
    at.resume_reason = "error";
    return retry_verdict::retry;
  };
  auto r = retry_with_backoff(
      stop, reopen, [&] { return open_and_read(at, reopen, stop); }, failed);
  if (r && !*r) return r->error().error;
  return {};
}

expected<void, watcher::stream_failure> watcher::open_and_read(position& at, backoff& reopen,
                                                               std::stop_token& stop) {
  if (stop.stop_requested()) return {};
  mongo::watch_options w;
  w.resume_after = at.token;
  if (!at.token) w.start_at_operation_time = opts_.start_at;
  w.max_await_ms = opts_.max_await_ms;
  w.pre_images = opts_.pre_images;
  w.post_images = opts_.post_images;
  w.pipeline = opts_.pipeline;
  // A getMore reply is held in memory whole: 1,000 events (about 1 MB) instead of the
  // server's 16 MB keeps memory bounded while catching up, at no cost in round trips.
  w.batch_size = 1000;
  auto stream = conn_.watch(opts_.source.db, opts_.source.coll, w);
  if (!stream) return stream_failure{stream.error(), "cannot open the change stream"};
  if (!at.resume_reason.empty()) metrics_.count_resume(name_, at.resume_reason);
  // After lost history, ready once the stream has read from the re-sync's time.
  if (!episode_) set_state(true, "streaming");
  log::info("watcher", at.token ? "resumed" : "started", {{"source", name_}});
  reopen.reset();
  auto read = read_stream(**stream, at, stop);
  if (!read) return stream_failure{read.error(), "change stream failed"};
  return {};
}

mongo::status watcher::read_stream(mongo::change_stream& stream, position& at,
                                   std::stop_token& stop) {
  std::uint64_t driver_resumes = 0;
  while (!stop.stop_requested()) {
    auto next = stream.next();
    // The driver reopens a stream once by itself after a resumable error (a dropped
    // connection, a step-down); those count as resumes after an error too.
    for (; driver_resumes < stream.driver_resumes(); ++driver_resumes)
      metrics_.count_resume(name_, "error");
    if (!next) return next.error();
    if (episode_ && episode_->finished && episode_->finished->load()) end_episode();
    auto new_token = stream.resume_token();
    if (!*next) {
      // Idle: keep the checkpoint moving so it never falls off the oplog. A token-only item
      // every second is plenty.
      if (new_token && (!at.token || !(*new_token == *at.token)) &&
          wall_ms() - at.last_idle_token_ms >= 1000) {
        if (!queue_.push(stream_item{{}, *new_token, 0}, stop)) {
          at.ended = true;
          return {};
        }
        ++pushed_;
        at.token = std::move(new_token);
        at.last_idle_token_ms = wall_ms();
      }
      continue;
    }
    if (!new_token) continue;  // cannot happen with a server that follows the protocol
    at.token = *new_token;
    if (!queue_event(std::move(**next), std::move(*new_token), stop)) {
      at.ended = !invalidated_;  // invalidated: run() waits for the source, then re-syncs
      return {};
    }
  }
  return {};
}

}  // namespace denormd::source
