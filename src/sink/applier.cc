#include "sink/applier.h"

#include <cassert>
#include <iterator>

#include "common/clock.h"
#include "common/log.h"
#include "common/retry.h"
#include "mapping/coalescer.h"

namespace denormd::sink {

namespace {

std::uint64_t pack(bson::timestamp t) {
  return (std::uint64_t{t.t} << 32) | t.i;
}

std::optional<bson::timestamp> unpack(std::uint64_t packed) {
  if (packed == 0) return std::nullopt;
  return bson::timestamp{static_cast<std::uint32_t>(packed >> 32),
                         static_cast<std::uint32_t>(packed & 0xFFFFFFFFU)};
}

mongo::status lease_expired(const std::string& source) {
  return mongo::failure(mongo::driver_error{
      mongo::driver_error::origin::client,
      mongo::lease_expired_code,
      "the lease of " + source + " was not renewed in time; nothing is written under it",
      {}});
}

// The cluster time of a checkpoint's position: its event's, or the one its token encodes.
std::optional<bson::timestamp> position_time(const checkpoint::checkpoint& cp) {
  return cp.event_time ? cp.event_time : mapping::token_time(cp.token);
}

}  // namespace

applier::applier(std::shared_ptr<const mapping::planner> planner, batch_writer& w,
                 checkpoint::position_store& checkpoints, source::event_queue& queue,
                 metrics::metrics& m, applier_options opts)
    : planner_(std::move(planner)),
      writer_(w),
      checkpoints_(checkpoints),
      queue_(queue),
      metrics_(m),
      opts_(std::move(opts)),
      name_(opts_.source.unit()) {
  checkpoint_ms_ = opts_.initial_checkpoint_ms;
  if (opts_.initial_position_time) stored_through_ = pack(*opts_.initial_position_time);
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
  // Nothing read yet (a long catch-up's first read can take a while): not "caught up".
  if (oldest == 0 && !read_any_.load()) {
    oldest = opts_.initial_checkpoint_ms != 0 ? opts_.initial_checkpoint_ms : opts_.start_at_ms;
  }
  if (oldest == 0) return 0;
  return static_cast<double>(std::max<std::int64_t>(0, now - oldest)) / 1000.0;
}

double applier::checkpoint_age_seconds(std::int64_t now) const {
  const std::int64_t at = checkpoint_ms_.load();
  return at == 0 ? 0 : static_cast<double>(std::max<std::int64_t>(0, now - at)) / 1000.0;
}

bool applier::wait_until_completed(std::uint64_t n, std::stop_token stop) {
  std::unique_lock lock(completed_mutex_);
  return completed_cv_.wait(lock, stop, [&] { return completed_items_.load() >= n; });
}

template <class F>
bool applier::with_retry(std::stop_token& stop, const char* stage, F&& attempt) {
  backoff retry(std::chrono::milliseconds(100), opts_.max_backoff);
  auto failed = [&](const mongo::driver_error& e, const retry_state& s) {
    const int tries = s.attempt;
    ++errors_;
    metrics_.count_error(stage, e.metric_code());
    metrics_.set_batch_attempts(name_, tries);
    if (e.refused()) note_refused(stage, &e);
    if (fenced_out(e)) {
      if (!ended_fenced_out_) {
        ended_fenced_out_ = true;
        opts_.fenced_out(e);
      }
      return retry_verdict::give_up;
    }
    if (tries == metrics::metrics::stuck_attempts) {
      // Said once per batch, loudly: a batch that cannot be written holds its source back.
      metrics_.count_stuck_batch(name_, stage);
      log::error("applier",
                 "a batch failed " + std::to_string(tries) +
                     " times in a row; it is retried until it is written (fix the cause)",
                 {{"source", name_}, {"stage", stage}, {"error", e.to_string()}});
    } else if (e.from == mongo::driver_error::origin::client &&
               (e.code == mongo::lease_moved_code || e.code == mongo::lease_expired_code)) {
      log::warn(
          "applier", "not written: the lease is gone; the pipeline stops at the next round",
          {{"source", name_}, {"stage", stage}, {"attempt", tries}, {"error", e.to_string()}});
    } else if (e.transient()) {
      log::warn(
          "applier", "transient failure; retrying the batch",
          {{"source", name_}, {"stage", stage}, {"attempt", tries}, {"error", e.to_string()}});
    } else {
      log::error(
          "applier", "write failed; retrying the batch (fix the cause: nothing is skipped)",
          {{"source", name_}, {"stage", stage}, {"attempt", tries}, {"error", e.to_string()}});
    }
    return retry_verdict::retry;
  };
  auto done = retry_with_backoff(
      stop, retry, [&]() -> mongo::status { return attempt(); }, failed);
  if (done && *done) {
    metrics_.set_batch_attempts(name_, 0);
    if (any_refused_) note_refused(stage, nullptr);
  }
  return done && *done;
}

void applier::note_refused(const char* stage, const mongo::driver_error* e) {
  const std::string_view s = stage;
  const char* what = s == "write"        ? "cannot write the copies"
                     : s == "checkpoint" ? "cannot store the checkpoint"
                     : s == "fence"      ? "cannot take the write fence"
                                         : "cannot compute the computed fields";
  std::lock_guard lock(refused_mutex_);
  refused_ = e != nullptr ? std::string(what) + ": " + e->to_string() : std::string();
  any_refused_ = e != nullptr;
}

std::string applier::refused() const {
  if (!any_refused_) return "";
  std::lock_guard lock(refused_mutex_);
  return refused_;
}

bool applier::fenced_out(const mongo::driver_error& e) const {
  // Only without a lease: with one, the coordinator stops the pipeline when the lease is gone.
  return !opts_.lease_deadline && opts_.fenced_out &&
         e.from == mongo::driver_error::origin::client &&
         (e.code == mongo::lease_moved_code || e.code == mongo::lease_fenced_code);
}

bool applier::open_writer(std::stop_token& stop) {
  if (opened_) return true;
  opened_ = with_retry(stop, "fence", [&]() -> mongo::status {
    if (!lease_valid()) return lease_expired(name_);
    auto epoch = writer_.open(opts_.lease_epoch);
    if (!epoch) return epoch.error();
    epoch_ = *epoch;
    return {};
  });
  return opened_;
}

bool applier::lease_valid() const {
  return !opts_.lease_deadline || steady_ms() < opts_.lease_deadline->load();
}

mongo::status applier::save_position() {
  if (!lease_valid()) return lease_expired(name_);
  checkpoint::checkpoint cp = *position_;
  cp.lease_epoch = epoch_;
  return checkpoints_.save(opts_.source, cp);
}

bool applier::store_pending(std::stop_token& stop) {
  if (!pending_ || opts_.dry_run || held_) return true;
  if (!open_writer(stop)) return false;
  if (!with_retry(stop, "checkpoint", [&] { return save_position(); })) return false;
  pending_ = false;
  stored(*position_);
  stored_at_ = std::chrono::steady_clock::now();
  checkpoint_ms_ = wall_ms();
  return true;
}

std::optional<std::int64_t> applier::plan_batch(const std::vector<source::stream_item>& items,
                                                std::stop_token& stop) {
  const std::vector<std::string>* keep = planner_->reads_whole_document(opts_.source)
                                             ? nullptr
                                             : &planner_->document_fields(opts_.source);
  events_.clear();
  tokens_.clear();
  ops_.clear();
  std::vector<const source::stream_item*> item_of;  // the item each event came in
  std::int64_t last_event_ms = 0;
  for (const auto& item : items) {
    last_item_time_.reset();  // set below when this item is an event
    if (item.event.empty()) continue;
    if (in_flight_oldest_ms_.load() == 0) in_flight_oldest_ms_ = item.event_ms;
    last_event_ms = item.event_ms;
    auto ev = mapping::change_event::parse_bson(item.event, keep);
    if (!ev) {
      metrics_.count_error("plan", "bad_event");
      log::error("applier", "change event not understood; skipped",
                 {{"source", name_}, {"error", ev.error().message}});
      continue;
    }
    metrics_.count_events(name_, ev->op_name);
    last_item_time_ = ev->cluster_time;
    events_.push_back(std::move(ev).value());
    item_of.push_back(&item);
  }
  if (!evaluate_computed(stop)) return std::nullopt;
  for (std::size_t e = 0; e < events_.size(); ++e) {
    const mapping::change_event& ev = events_[e];
    const std::size_t first = ops_.size();
    std::vector<std::string> notes;
    if (opts_.gate && opts_.gate->passed(mapping::token_position(ev.token))) opts_.gate.reset();
    if (opts_.handover && opts_.handover->passed(mapping::token_position(ev.token)))
      opts_.handover.reset();
    planner_->plan(ev, ops_, &notes, opts_.gate ? &*opts_.gate : nullptr, opts_.source.part,
                   opts_.handover ? &*opts_.handover : nullptr);
    for (const auto& n : notes)
      log::warn("planner", n, {{"source", name_}});
    for (std::size_t i = first; i < ops_.size(); ++i) {
      ops_[i].event = tokens_.size();
      ops_[i].event_ms = item_of[e]->event_ms;
    }
    tokens_.push_back(item_of[e]->token);
  }
  if (!events_.empty()) metrics_.observe_batch(name_, events_.size());
  ops_ = mapping::coalesce(std::move(ops_));
  written_ops_ = 0;
  return last_event_ms;
}

bool applier::evaluate_computed(std::stop_token& stop) {
  const mapping::computed_fields* fields = planner_->computed(opts_.source);
  if (fields == nullptr || !opts_.evaluator) return true;
  std::vector<bson::document*> docs;
  struct origin {
    std::size_t event;
    bool before;
  };
  std::vector<origin> origins;
  for (std::size_t e = 0; e < events_.size(); ++e) {
    auto& ev = events_[e];
    if (ev.full_document) {
      docs.push_back(&*ev.full_document);
      origins.push_back({e, false});
    }
    if (ev.full_document_before_change) {
      docs.push_back(&*ev.full_document_before_change);
      origins.push_back({e, true});
    }
  }
  if (docs.empty()) return true;
  std::vector<computed_evaluator::failure> failures;
  if (!with_retry(stop, "compute", [&]() -> mongo::status {
        auto r = opts_.evaluator->evaluate(opts_.source.db, *fields, docs);
        if (!r) return r.error();
        failures = std::move(r).value();
        return {};
      })) {
    return false;
  }
  for (auto& f : failures) {
    f.what.before = origins[f.doc].before;
    events_[origins[f.doc].event].computed_failures.push_back(std::move(f.what));
  }
  return true;
}

mongo::status applier::write_rest() {
  if (!lease_valid()) return lease_expired(name_);
  const std::span<const mapping::write_op> rest(ops_.data() + written_ops_,
                                                ops_.size() - written_ops_);
  auto st = writer_.apply(rest, tokens_, opts_.source);
  written_ops_ += st ? rest.size() : std::min(writer_.committed(), rest.size());
  return st;
}

std::optional<bson::timestamp> applier::applied_through() const {
  return unpack(applied_through_.load());
}

std::optional<bson::timestamp> applier::stored_through() const {
  return unpack(stored_through_.load());
}

void applier::stored(const checkpoint::checkpoint& cp) {
  if (const auto at = position_time(cp)) stored_through_ = pack(*at);
}

void applier::advance(checkpoint::checkpoint cp) {
  const auto through = position_time(cp);
  if (through && !held_) {
    const std::uint64_t packed = pack(*through);
    if (packed > applied_through_.load()) applied_through_ = packed;
  }
  position_ = std::move(cp);
  pending_ = true;
}

void applier::run(std::stop_token stop) {
  // The fence first: a predecessor's transaction left open is ended now, not at the first
  // write, and nothing it sent can land after this pipeline's writes.
  (void)open_writer(stop);
  while (opened_ && !stop.stop_requested()) {
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
    const auto planned = plan_batch(items, stop);
    if (!planned) break;  // stopped while computing: nothing of this batch was written
    const std::int64_t last_event_ms = *planned;
    read_any_ = true;

    // The checkpoint rule: the batch's token is taken only once its writes are acknowledged.
    if (!open_writer(stop) || !with_retry(stop, "write", [&] { return write_rest(); })) {
      break;  // stopping mid-retry (or fenced out): the checkpoint stays before this batch
    }
    applied_ += events_.size();
    if (last_event_ms != 0) last_event_ms_ = last_event_ms;
    advance(checkpoint::checkpoint{items.back().token, last_event_ms_.load(), 0, last_item_time_,
                                   opts_.filter});
    in_flight_oldest_ms_ = 0;
    {
      std::lock_guard lock(completed_mutex_);
      completed_items_ += items.size();
    }
    completed_cv_.notify_all();
    if (std::chrono::steady_clock::now() - stored_at_ >= opts_.checkpoint_interval &&
        !store_pending(stop))
      break;
  }
  // Stopping. Token-only items queued before the first unapplied event need no write: taking
  // them keeps a quick start-then-stop from leaving no checkpoint at all.
  if (queue_.closed() && !in_flight_oldest_ms_.load()) {
    for (auto& item : queue_.pop_batch(opts_.max_batch, std::chrono::milliseconds(0))) {
      if (!item.event.empty()) break;
      advance(checkpoint::checkpoint{std::move(item.token), last_event_ms_.load(), 0, std::nullopt,
                                     opts_.filter});
    }
  }
  if (pending_ && held_) {
    log::info("applier",
              "stopping during a re-sync: the checkpoint stays before the lost history, so the "
              "next start re-syncs again",
              {{"source", name_}});
  }
  // One attempt to store what was applied; if it fails, the next start replays it.
  if (pending_ && !opts_.dry_run && !held_ && opened_ && !ended_fenced_out_) {
    if (auto st = save_position(); st) {
      stored(*position_);
      checkpoint_ms_ = wall_ms();
    } else {
      metrics_.count_error("checkpoint", st.error().metric_code());
      log::warn("applier",
                "could not store the last checkpoint; the next start replays from the one before",
                {{"source", name_}, {"error", st.error().to_string()}});
    }
  }
}

}  // namespace denormd::sink
