#include "source/watcher.h"

#include <bson/bson.h>

#include <condition_variable>
#include <random>

#include "common/log.h"

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

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

watcher::watcher(mongo::connection& conn, watcher_options opts, event_queue& queue,
                 metrics::metrics& m)
    : conn_(conn), opts_(std::move(opts)), queue_(queue), metrics_(m), name_(opts_.source.full()) {
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

bool watcher::back_off(std::stop_token& stop, std::chrono::milliseconds& backoff) {
  static thread_local std::mt19937 rng(std::random_device{}());
  // Full jitter keeps many watchers from reconnecting in lock step.
  const auto sleep = std::chrono::milliseconds(
      std::uniform_int_distribution<std::int64_t>(backoff.count() / 2, backoff.count())(rng));
  std::mutex m;
  std::unique_lock lock(m);
  std::condition_variable_any cv;
  cv.wait_for(lock, stop, sleep, [] { return false; });
  backoff = std::min(backoff * 2, opts_.max_backoff);
  return !stop.stop_requested();
}

std::optional<bson::timestamp> watcher::recover(std::stop_token& stop,
                                                const mongo::driver_error& e) {
  metrics_.count_history_lost(name_);
  if (!opts_.resync) {
    reason_ = stop_reason::history_lost;
    set_state(false, "history lost: " + e.to_string());
    log::error("watcher",
               "change stream history lost; the stored position is no longer in the oplog. Run "
               "`denormd backfill` to bring the copies in line, then start denormd again",
               {{"source", name_}, {"error", e.to_string()}});
    return std::nullopt;
  }
  set_state(false, "re-syncing after lost history");
  log::warn("watcher",
            "change stream history lost: re-syncing the affected mappings from the source, then "
            "streaming from the time taken before the re-sync; nothing is skipped",
            {{"source", name_}, {"error", e.to_string()}});
  std::chrono::milliseconds backoff{500};
  while (!stop.stop_requested()) {
    auto from = opts_.resync(stop);
    if (from) {
      log::info("watcher", "re-sync done; streaming again",
                {{"source", name_}, {"from_t", from->t}});
      return *from;
    }
    metrics_.count_error("resync", from.error().metric_code());
    log::error("watcher", "re-sync failed; retrying",
               {{"source", name_}, {"error", from.error().to_string()}});
    if (!back_off(stop, backoff)) break;
  }
  return std::nullopt;
}

void watcher::run(std::stop_token stop) {
  std::optional<bson::document> token = opts_.resume_after;
  std::string resume_reason = token ? "checkpoint" : "";
  std::chrono::milliseconds backoff{100};
  std::int64_t last_idle_token_ms = 0;
  // After a failed open or read: lost history is re-synced, anything else waits a backoff;
  // either way the stream is then reopened. False: the watcher ends.
  auto recovered = [&](const mongo::driver_error& e, const std::string& what) {
    metrics_.count_error("stream", e.metric_code());
    if (e.history_lost()) {
      auto from = recover(stop, e);
      if (!from) return false;
      token.reset();
      opts_.start_at = *from;
      resume_reason = "resync";
      return true;
    }
    set_state(false, what + ": " + e.to_string());
    log::warn("watcher", what + "; reopening from the last position",
              {{"source", name_}, {"error", e.to_string()}});
    resume_reason = "error";
    return back_off(stop, backoff);
  };

  bool stop_now = false;
  while (!stop.stop_requested() && !stop_now) {
    mongo::watch_options w;
    w.resume_after = token;
    if (!token) w.start_at_operation_time = opts_.start_at;
    w.max_await_ms = opts_.max_await_ms;
    // A getMore reply is held in memory whole: 1,000 events (about 1 MB) instead of the
    // server's 16 MB keeps memory bounded while catching up, at no cost in round trips.
    w.batch_size = 1000;
    auto stream = conn_.watch(opts_.source.db, opts_.source.coll, w);
    if (!stream) {
      if (!recovered(stream.error(), "cannot open the change stream")) break;
      continue;
    }
    if (!resume_reason.empty()) metrics_.count_resume(name_, resume_reason);
    set_state(true, "streaming");
    log::info("watcher", token ? "resumed" : "started", {{"source", name_}});
    backoff = std::chrono::milliseconds(100);

    while (!stop.stop_requested()) {
      auto next = (*stream)->next();
      if (!next) {
        if (!recovered(next.error(), "change stream failed")) stop_now = true;
        break;
      }
      auto new_token = (*stream)->resume_token();
      if (!*next) {
        // Idle: keep the checkpoint moving so it never falls off the oplog. A token-only item
        // every second is plenty.
        if (new_token && (!token || !(*new_token == *token)) &&
            now_ms() - last_idle_token_ms >= 1000) {
          if (!queue_.push(stream_item{{}, *new_token, 0})) return;
          ++pushed_;
          token = std::move(new_token);
          last_idle_token_ms = now_ms();
        }
        continue;
      }
      const event_summary s = summarize(**next);
      if (!new_token) continue;  // cannot happen with a server that follows the protocol
      token = *new_token;
      if (!queue_.push(stream_item{std::move(**next), std::move(*new_token), s.event_ms})) return;
      ++pushed_;
      if (s.op == "drop" || s.op == "rename" || s.op == "dropDatabase") {
        set_state(false,
                  s.op == "rename" ? "source collection " + s.detail : "source " + s.op + "ped");
      }
      if (s.op == "invalidate") {
        // Stop here: reading on after an invalidate only fails (and would spin).
        reason_ = stop_reason::invalidated;
        std::string why = state();
        if (why == "streaming") why = "change stream invalidated";
        set_state(false, why + " (stream invalidated; restart denormd once the source is back)");
        log::error("watcher", "change stream invalidated; this source is no longer watched",
                   {{"source", name_}, {"reason", why}});
        return;
      }
    }
  }
  if (reason_ == stop_reason::none) {  // history lost without a re-sync keeps its own state
    reason_ = stop_reason::requested;
    set_state(false, "stopped");
  }
}

}  // namespace denormd::source
