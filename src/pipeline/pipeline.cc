#include "pipeline/pipeline.h"

namespace denormd::pipeline {

pipeline::pipeline(mapping::ns source, std::shared_ptr<const mapping::planner> planner,
                   start_position from, parts_factory& parts, metrics::metrics& m,
                   const pipeline_options& opts)
    : source_(std::move(source)),
      planner_(std::move(planner)),
      from_(std::move(from)),
      parts_(parts),
      metrics_(m),
      name_(source_.full()),
      queue_(std::make_unique<source::event_queue>(opts.queue_items, opts.queue_bytes)),
      writer_(parts.make_writer()) {
  sink::applier_options ao = opts.applier;
  ao.source = source_;
  ao.initial_checkpoint_ms = from_.saved_ms;
  applier_ = std::make_unique<sink::applier>(planner_, *writer_, parts.positions(), *queue_, m, ao);
  reader_ = parts.make_source(source_, from_, *queue_,
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
}

void pipeline::finish() {
  queue_->close();
  applier_->request_stop();
}

void pipeline::join() {
  applier_->join();
}

void pipeline::report_lag(std::int64_t now_ms) const {
  metrics_.set_lag(name_, applier_->lag_seconds(now_ms));
  metrics_.set_checkpoint_age(name_, applier_->checkpoint_age_seconds(now_ms));
}

start_position pipeline::resume_position() const {
  const auto& applied = applier_->applied_position();
  if (!applied) return from_;  // nothing applied: the old start is still where to begin
  return start_position{applied->token, std::nullopt, applier_->checkpoint_ms()};
}

mongo::result<std::optional<bson::timestamp>> pipeline::resync(std::stop_token stop) {
  // Everything read before the history was lost is applied first, so that no write from the
  // stream lands after the re-sync's newer ones.
  if (!applier_->wait_until_completed(reader_->pushed(), stop))
    return std::optional<bson::timestamp>{};
  return parts_.resync(*planner_, source_, stop);
}

}  // namespace denormd::pipeline
