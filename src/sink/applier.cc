#include "sink/applier.h"

#include <condition_variable>
#include <iterator>
#include <mutex>
#include <random>

#include "common/log.h"
#include "mapping/coalescer.h"

namespace denormd::sink {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

applier::applier(const mapping::planner& planner, writer& w,
                 checkpoint::checkpoint_store& checkpoints, source::event_queue& queue,
                 metrics::metrics& m, applier_options opts)
    : planner_(planner),
      writer_(w),
      checkpoints_(checkpoints),
      queue_(queue),
      metrics_(m),
      opts_(std::move(opts)),
      name_(opts_.source.full()) {
  checkpoint_ms_ = opts_.initial_checkpoint_ms;
}

applier::~applier() {
  request_stop();
  join();
}

void applier::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void applier::request_stop() {
  if (thread_.joinable()) thread_.request_stop();
}

void applier::join() {
  if (thread_.joinable()) thread_.join();
}

double applier::lag_seconds(std::int64_t now) const {
  std::int64_t oldest = in_flight_oldest_ms_.load();
  if (oldest == 0) oldest = queue_.oldest_event_ms().value_or(0);
  if (oldest == 0) return 0;
  return static_cast<double>(std::max<std::int64_t>(0, now - oldest)) / 1000.0;
}

double applier::checkpoint_age_seconds(std::int64_t now) const {
  const std::int64_t at = checkpoint_ms_.load();
  return at == 0 ? 0 : static_cast<double>(std::max<std::int64_t>(0, now - at)) / 1000.0;
}

template <class F>
bool applier::with_retry(std::stop_token& stop, const char* stage, F&& attempt) {
  static thread_local std::mt19937 rng(std::random_device{}());
  std::chrono::milliseconds backoff{100};
  for (int tries = 1;; ++tries) {
    mongo::status st = attempt();
    if (st) return true;
    const auto& e = st.error();
    metrics_.count_error(stage, e.metric_code());
    if (e.transient()) {
      log::warn(
          "applier", "transient failure; retrying the batch",
          {{"source", name_}, {"stage", stage}, {"attempt", tries}, {"error", e.to_string()}});
    } else {
      log::error(
          "applier", "write failed; retrying the batch (fix the cause: nothing is skipped)",
          {{"source", name_}, {"stage", stage}, {"attempt", tries}, {"error", e.to_string()}});
    }
    const auto sleep = std::chrono::milliseconds(
        std::uniform_int_distribution<std::int64_t>(backoff.count() / 2, backoff.count())(rng));
    std::mutex m;
    std::unique_lock lock(m);
    std::condition_variable_any cv;
    if (cv.wait_for(lock, stop, sleep, [] { return false; }) || stop.stop_requested()) return false;
    backoff = std::min(backoff * 2, opts_.max_backoff);
  }
}

bool applier::store_pending(std::stop_token& stop) {
  if (!pending_ || opts_.dry_run) return true;
  if (!with_retry(stop, "checkpoint", [&] { return checkpoints_.save(opts_.source, *pending_); }))
    return false;
  pending_.reset();
  stored_at_ = std::chrono::steady_clock::now();
  checkpoint_ms_ = now_ms();
  return true;
}

void applier::run(std::stop_token stop) {
  const auto& fields = planner_.document_fields(opts_.source);
  std::vector<mapping::change_event> events;
  std::vector<bson::document> tokens;
  std::vector<mapping::write_op> ops;
  while (!stop.stop_requested()) {
    auto items = queue_.pop_batch(opts_.max_batch, std::chrono::milliseconds(200));
    if (items.empty()) {
      if (!store_pending(stop)) break;  // quiet: store what is applied
      if (queue_.closed()) break;
      continue;
    }
    if (opts_.linger.count() > 0 && items.size() < opts_.max_batch) {
      std::this_thread::sleep_for(opts_.linger);
      auto more = queue_.pop_batch(opts_.max_batch - items.size(), std::chrono::milliseconds(0));
      std::move(more.begin(), more.end(), std::back_inserter(items));
    }
    events.clear();
    tokens.clear();
    ops.clear();
    std::int64_t last_event_ms = 0;
    for (const auto& item : items) {
      if (item.event.empty()) continue;
      if (in_flight_oldest_ms_.load() == 0) in_flight_oldest_ms_ = item.event_ms;
      last_event_ms = item.event_ms;
      auto ev = mapping::change_event::parse_bson(item.event, &fields);
      if (!ev) {
        metrics_.count_error("plan", "bad_event");
        log::error("applier", "change event not understood; skipped",
                   {{"source", name_}, {"error", ev.error().message}});
        continue;
      }
      metrics_.count_events(name_, ev->op_name);
      const std::size_t first = ops.size();
      std::vector<std::string> notes;
      planner_.plan(*ev, ops, &notes);
      for (const auto& n : notes)
        log::warn("planner", n, {{"source", name_}});
      for (std::size_t i = first; i < ops.size(); ++i) {
        ops[i].event = tokens.size();
        ops[i].event_ms = item.event_ms;
      }
      tokens.push_back(item.token);
      events.push_back(std::move(ev).value());
    }
    if (!events.empty()) metrics_.observe_batch(name_, events.size());
    ops = mapping::coalesce(std::move(ops));

    if (!with_retry(stop, "write", [&] { return writer_.apply(ops, tokens, opts_.source); })) {
      break;  // stopping mid-retry: the checkpoint stays before this batch, replay is safe
    }
    applied_ += events.size();
    if (last_event_ms == 0 && pending_) last_event_ms = pending_->event_ms;
    pending_ = checkpoint::checkpoint{items.back().token, last_event_ms, 0};
    in_flight_oldest_ms_ = 0;
    completed_items_ += items.size();
    if (std::chrono::steady_clock::now() - stored_at_ >= opts_.checkpoint_interval &&
        !store_pending(stop))
      break;
  }
  // Stopping. Token-only items queued before the first unapplied event need no write: taking
  // them keeps a quick start-then-stop from leaving no checkpoint at all.
  if (queue_.closed() && !in_flight_oldest_ms_.load()) {
    for (auto& item : queue_.pop_batch(opts_.max_batch, std::chrono::milliseconds(0))) {
      if (!item.event.empty()) break;
      pending_ = checkpoint::checkpoint{std::move(item.token),
                                        pending_ ? pending_->event_ms : std::int64_t{0}, 0};
    }
  }
  // One attempt to store what was applied; if it fails, the next start replays it.
  if (pending_ && !opts_.dry_run) {
    if (auto st = checkpoints_.save(opts_.source, *pending_); st) {
      checkpoint_ms_ = now_ms();
    } else {
      metrics_.count_error("checkpoint", st.error().metric_code());
      log::warn("applier",
                "could not store the last checkpoint; the next start replays from the one before",
                {{"source", name_}, {"error", st.error().to_string()}});
    }
  }
}

}  // namespace denormd::sink
