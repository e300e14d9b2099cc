#include "source/event_queue.h"

#include <algorithm>

namespace denormd::source {

event_queue::event_queue(std::size_t max_items, std::size_t max_bytes)
    : max_items_(std::max<std::size_t>(1, max_items)), max_bytes_(max_bytes) {}

bool event_queue::push(stream_item item, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  // An item larger than the byte budget still goes in once the queue is empty.
  const bool room = not_full_.wait(lock, stop, [&] {
    return closed_ || items_.empty() ||
           (items_.size() < max_items_ && bytes_ + cost(item) <= max_bytes_);
  });
  if (closed_ || !room) return false;
  bytes_ += cost(item);
  items_.push_back(std::move(item));
  not_empty_.notify_one();
  return true;
}

std::vector<stream_item> event_queue::pop_batch(std::size_t max, std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  not_empty_.wait_for(lock, wait, [&] { return closed_ || !items_.empty(); });
  std::vector<stream_item> out;
  const std::size_t n = std::min(max, items_.size());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    bytes_ -= cost(items_.front());
    out.push_back(std::move(items_.front()));
    items_.pop_front();
  }
  if (n > 0) not_full_.notify_all();
  return out;
}

void event_queue::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  not_empty_.notify_all();
  not_full_.notify_all();
}

bool event_queue::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

std::size_t event_queue::size() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

std::optional<std::int64_t> event_queue::oldest_event_ms() const {
  std::lock_guard lock(mutex_);
  for (const auto& item : items_) {
    if (!item.event.empty()) return item.event_ms;
  }
  return std::nullopt;
}

}  // namespace denormd::source
