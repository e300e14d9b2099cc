#include "query_cursor.h"

#include "bson_size.h"

namespace mongo_emulator {

bson::array query_cursor::next(std::size_t max_docs, std::size_t max_bytes) {
  bson::array out;
  std::size_t bytes = 0;
  while (pos_ < docs_.size() && out.size() < max_docs) {
    bson::document doc = project_ ? project_(*docs_[pos_]) : *docs_[pos_];
    const std::size_t size = bson_size(doc);
    if (!out.empty() && bytes + size > max_bytes) break;
    bytes += size;
    out.emplace_back(std::move(doc));
    docs_[pos_].reset();  // release the snapshot as soon as it is sent
    ++pos_;
  }
  return out;
}

}  // namespace mongo_emulator
