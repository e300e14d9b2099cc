#include "pipeline/pipeline.h"

#include "bson/json.h"
#include "common/log.h"
#include "common/retry.h"

namespace denormd::pipeline {

namespace {

// `from` for a stream whose server-side filter is `filter`. A token from a stream with another
// filter may name an event this one drops, and MongoDB cannot resume from that (error 280,
// which would re-sync): start at that event's cluster time instead (at, not after it), and let
// a gate skip what the token covered, so nothing is applied twice.
start_position for_filter(start_position from, const std::string& filter, const std::string& name) {
  if (!from.resume_after || from.filter == filter || !from.token_time) return from;
  if (!from.gate) from.gate = mapping::replay_gate{mapping::token_position(*from.resume_after), {}};
  from.start_at = from.token_time;
  log::info("pipeline",
            "the stream's server-side filter changed; starting at the cluster time of its last "
            "event instead of its resume token",
            {{"source", name},
             {"cluster_time",
              std::to_string(from.start_at->t) + ":" + std::to_string(from.start_at->i)}});
  from.resume_after.reset();
  from.token_time.reset();
  from.filter = filter;
  return from;
}

bson::array with_projection(bson::array stages, const bson::array& projection) {
  stages.insert(stages.end(), projection.begin(), projection.end());
  return stages;
}

}  // namespace

std::string filter_text(const bson::array& filter) {
  return filter.empty() ? std::string() : bson::to_json(bson::document{{"f", filter}});
}

pipeline::pipeline(mapping::ns source, std::shared_ptr<const mapping::planner> planner,
                   start_position from, parts_factory& parts, metrics::metrics& m,
                   const pipeline_options& opts)
    : source_(std::move(source)),
      planner_(std::move(planner)),
      filter_(planner_->stream_filter(source_)),
      filter_text_(filter_text(filter_)),
      stages_(with_projection(filter_, planner_->stream_projection(source_))),
      from_(for_filter(std::move(from), filter_text_, source_.unit())),
      parts_(parts),
      metrics_(m),
      name_(source_.unit()),
      queue_(std::make_unique<source::event_queue>(opts.queue_items, opts.queue_bytes)) {
  // One writer: every transaction of a namespace ends with the same fence statement, so two at
  // a time would only conflict with each other.
  writer_ = parts.make_writer(source_);
  sink::applier_options ao = opts.applier;
  ao.source = source_;
  ao.initial_checkpoint_ms = from_.saved_ms;
  ao.gate = from_.gate;
  ao.handover = from_.handover;
  ao.filter = filter_text_;
  ao.lease_epoch = from_.lease_epoch;
  ao.lease_deadline = from_.lease_deadline;
  if (planner_->computed(source_) != nullptr) ao.evaluator = parts.make_evaluator(source_);
  if (from_.start_at) ao.start_at_ms = static_cast<std::int64_t>(from_.start_at->t) * 1000;
  // Where a restart resumes until this pipeline stores a position of its own.
  if (from_.resume_after) {
    ao.initial_position_time =
        from_.token_time ? from_.token_time : mapping::token_time(*from_.resume_after);
  } else {
    ao.initial_position_time = from_.start_at;
  }
  applier_ = std::make_unique<sink::applier>(planner_, *writer_, parts.positions(), *queue_, m, ao);
  reader_ = parts.make_source(source_, from_, planner_->needs_images(source_), stages_, *queue_,
                              [this](std::stop_token stop) { return resync(stop); });
}

pipeline::~pipeline() {
  stop_reading();
  join_reading();
  finish();
  join();
}

void pipeline::start() {
  applier_->start();
  reader_->start();
}

void pipeline::stop_reading() {
  reader_->request_stop();
}

void pipeline::join_reading() {
  reader_->join();
  stop_backfill();
}

void pipeline::finish() {
  queue_->close();
  applier_->request_stop();
}

void pipeline::join() {
  applier_->join();
}

void pipeline::report_lag(std::int64_t now_ms) const {
  metrics_.set_lag(name_, lag_seconds(now_ms));
  metrics_.set_checkpoint_age(name_, checkpoint_age_seconds(now_ms));
}

double pipeline::lag_seconds(std::int64_t now_ms) const {
  return applier_->lag_seconds(now_ms);
}

double pipeline::checkpoint_age_seconds(std::int64_t now_ms) const {
  return applier_->checkpoint_age_seconds(now_ms);
}

start_position pipeline::resume_position() const {
  if (resync_unfinished_) return from_;
  const auto& applied = applier_->applied_position();
  if (!applied) return from_;  // nothing applied: the old start is still where to begin
  start_position next{applied->token,    std::nullopt,         applier_->checkpoint_ms(),
                      std::nullopt,      applied->event_time,  applied->filter,
                      from_.lease_epoch, from_.lease_deadline, std::nullopt};
  // A replay that has not reached the end of what it holds back goes on holding it back.
  if (from_.gate && !from_.gate->passed(mapping::token_position(applied->token)))
    next.gate = from_.gate;
  if (from_.handover && !from_.handover->passed(mapping::token_position(applied->token)))
    next.handover = from_.handover;
  return next;
}

mongo::result<std::optional<source::resync_started>> pipeline::resync(std::stop_token source_stop) {
  // A re-sync under way is superseded: the stream lost its place again.
  stop_backfill();
  // Everything read before the history was lost is applied first, so that no write from the
  // old stream lands after the backfill's newer ones.
  if (!applier_->wait_until_completed(reader_->pushed(), source_stop))
    return std::optional<source::resync_started>{};
  // Until the backfill is done the checkpoint stays where it is, before the lost history: a
  // restart meanwhile re-syncs again instead of trusting a backfill that did not finish.
  applier_->hold_checkpoints(true);
  resync_unfinished_ = true;
  auto from = parts_.resync_start(source_);
  if (!from) return from.error();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  backfill_ = std::jthread([this, finished, source_stop](std::stop_token own) {
    // Stops with the pipeline's source as well as on its own (a newer re-sync).
    std::stop_source either;
    std::stop_callback on_own(own, [&] { either.request_stop(); });
    std::stop_callback on_source(source_stop, [&] { either.request_stop(); });
    run_backfill(either.get_token(), *finished);
  });
  return std::optional<source::resync_started>{source::resync_started{*from, finished}};
}

void pipeline::run_backfill(std::stop_token stop, std::atomic<bool>& finished) {
  if (stop.stop_requested()) return;
  backoff retry(std::chrono::milliseconds(500), std::chrono::milliseconds(10000));
  auto done = retry_with_backoff(
      stop, retry, [&] { return parts_.resync_backfill(*planner_, source_, stop); },
      [&](const mongo::driver_error& e, const retry_state&) {
        metrics_.count_error("resync", e.metric_code());
        log::error("pipeline", "re-sync backfill failed; retrying",
                   {{"source", name_}, {"error", e.to_string()}});
        return retry_verdict::retry;
      });
  if (!done || !**done) return;  // stopped
  resync_unfinished_ = false;
  applier_->hold_checkpoints(false);
  finished = true;
}

void pipeline::stop_backfill() {
  if (!backfill_.joinable()) return;
  backfill_.request_stop();
  backfill_.join();
}

}  // namespace denormd::pipeline
