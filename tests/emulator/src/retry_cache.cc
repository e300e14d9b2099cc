#include "retry_cache.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

std::optional<std::string> retry_cache::key_of(const bson::document& command) {
  const auto* txn = command.get("txnNumber");
  const auto* lsid = command.get("lsid");
  if (txn == nullptr || lsid == nullptr || !lsid->is_document()) return std::nullopt;
  if (const auto* autocommit = command.get("autocommit"); autocommit != nullptr)
    return std::nullopt;  // multi-document transactions are not supported
  const auto* id = lsid->as_document().get("id");
  if (id == nullptr || !id->is<bson::binary>()) return std::nullopt;
  std::int64_t number = 0;
  if (txn->is<std::int64_t>()) {
    number = txn->as<std::int64_t>();
  } else if (txn->is<std::int32_t>()) {
    number = txn->as<std::int32_t>();
  } else {
    return std::nullopt;
  }
  const auto& bytes = id->as<bson::binary>().data;
  return std::string(bytes.begin(), bytes.end()) + ":" + std::to_string(number);
}

std::optional<bson::document> retry_cache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = replies_.find(key);
  if (it == replies_.end()) return std::nullopt;
  return it->second;
}

void retry_cache::store(const std::string& key, bson::document reply) {
  std::lock_guard lock(mutex_);
  if (replies_.insert_or_assign(key, std::move(reply)).second) order_.push_back(key);
  while (order_.size() > max_entries) {
    replies_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace mongo_emulator
