#pragma once
// The bounded hand-over between a watcher (producer) and its applier (consumer). Bounded in
// items and bytes: when the writer falls behind, push() blocks and the watcher stops
// reading, so memory stays bounded and nothing is dropped. Thread-safe; one producer and one
// consumer in practice.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "bson/value.h"

namespace denormd::source {

// One change event (wire BSON), or, with `event` empty, only a newer resume token (the
// stream was idle). `token` is where to resume after this item.
struct stream_item {
  std::vector<std::uint8_t> event;
  bson::document token;
  std::int64_t event_ms = 0;  // the event's wall time (ms since epoch); 0 for token-only items
};

class event_queue {
 public:
  event_queue(std::size_t max_items, std::size_t max_bytes);

  // Blocks while full. False when the queue was closed, or `stop` was requested while it was
  // full (the item is dropped: nothing checkpoints past what was applied, so the next start
  // reads it again). A stopping producer must not wait for a consumer that may not drain:
  // one whose lease deadline passed writes nothing until it is stopped, after its producer.
  bool push(stream_item item, std::stop_token stop = {});
  // Waits up to `wait` for at least one item, then takes up to `max` items. Empty when
  // nothing came in time or the queue is closed and drained.
  std::vector<stream_item> pop_batch(std::size_t max, std::chrono::milliseconds wait);
  // Wakes everyone; push() fails from now on, pop_batch() drains what is left.
  void close();
  bool closed() const;

  std::size_t size() const;
  // Wall time of the oldest event waiting in the queue (token-only items are ignored).
  std::optional<std::int64_t> oldest_event_ms() const;

 private:
  static std::size_t cost(const stream_item& item) { return item.event.size() + 64; }

  const std::size_t max_items_;
  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable_any not_full_;  // waits on a stop_token too
  std::deque<stream_item> items_;
  std::size_t bytes_ = 0;
  bool closed_ = false;
};

}  // namespace denormd::source
