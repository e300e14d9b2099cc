#include "cursor_registry.h"

#include <random>

namespace mongo_emulator {

namespace {
constexpr auto idle_timeout = std::chrono::minutes(10);
}

cursor_registry::cursor_registry() {
  // Ids that look like MongoDB's (large, not sequential from 1), so tests never assume them.
  std::mt19937_64 rng{std::random_device{}()};
  next_id_ = static_cast<std::int64_t>((rng() >> 8) | 1ULL << 40);
}

std::int64_t cursor_registry::add(std::unique_ptr<cursor> c) {
  std::lock_guard lock(mutex_);
  reap_idle();
  const std::int64_t id = next_id_++;
  c->last_used = std::chrono::steady_clock::now();
  cursors_.emplace(id, std::move(c));
  return id;
}

cursor* cursor_registry::pin(std::int64_t id) {
  std::lock_guard lock(mutex_);
  auto it = cursors_.find(id);
  if (it == cursors_.end() || it->second->pinned || it->second->killed) return nullptr;
  it->second->pinned = true;
  return it->second.get();
}

void cursor_registry::unpin(std::int64_t id, bool finished) {
  std::lock_guard lock(mutex_);
  auto it = cursors_.find(id);
  if (it == cursors_.end()) return;
  if (finished || it->second->killed) {
    cursors_.erase(it);
    return;
  }
  it->second->pinned = false;
  it->second->last_used = std::chrono::steady_clock::now();
}

bool cursor_registry::kill(std::int64_t id) {
  std::lock_guard lock(mutex_);
  auto it = cursors_.find(id);
  if (it == cursors_.end() || it->second->killed) return false;
  if (it->second->pinned) {
    it->second->killed = true;
  } else {
    cursors_.erase(it);
  }
  return true;
}

std::size_t cursor_registry::size() const {
  std::lock_guard lock(mutex_);
  return cursors_.size();
}

bool cursor_registry::is_change_stream(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = cursors_.find(id);
  return it != cursors_.end() && it->second->stream != nullptr;
}

void cursor_registry::reap_idle() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(cursors_, [&](const auto& entry) {
    return !entry.second->pinned && !entry.second->no_timeout &&
           now - entry.second->last_used > idle_timeout;
  });
}

}  // namespace mongo_emulator
