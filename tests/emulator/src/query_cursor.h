#pragma once
// The remaining results of a find, aggregate or list command, served batch by batch. Holds
// shared document snapshots, so it never copies the collection; projection is applied per batch.
// Lifecycle: owned by the cursor registry; used by one getMore at a time. Thread-compatible.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collection.h"

namespace mongo_emulator {

class query_cursor {
 public:
  using transform = std::function<bson::document(const bson::document&)>;

  query_cursor(std::vector<doc_ptr> docs, transform project = {})
      : docs_(std::move(docs)), project_(std::move(project)) {}

  // Up to `max_docs` documents, stopping before `max_bytes` (always at least one document).
  bson::array next(std::size_t max_docs, std::size_t max_bytes);
  bool exhausted() const { return pos_ >= docs_.size(); }

 private:
  std::vector<doc_ptr> docs_;
  transform project_;
  std::size_t pos_ = 0;
};

}  // namespace mongo_emulator
