#include "transaction.h"

#include "storage.h"

namespace mongo_emulator {

transaction::transaction(bson::document lsid, std::int64_t number, bson::timestamp snapshot)
    : lsid_(std::move(lsid)), number_(number), snapshot_(snapshot) {}

collection* transaction::view(const storage& s, std::string_view db, std::string_view coll,
                              bool create) {
  const std::string ns = std::string(db) + "." + std::string(coll);
  if (auto it = views_.find(ns); it != views_.end()) return it->second.get();
  const collection* real = s.find(db, coll);
  if (real == nullptr && !create) return nullptr;
  auto copy = real != nullptr ? std::make_unique<collection>(*real)
                              : std::make_unique<collection>(std::string(db), std::string(coll));
  copy->set_owner(this);
  if (auto changed = changed_.find(ns); changed != changed_.end() && real != nullptr) {
    // Back to the snapshot: first remove every changed document, then put back the versions
    // the snapshot had (in two passes, so that no unique key is held twice in between).
    for (const auto& [id, before] : changed->second) {
      if (auto record = copy->find_id(id)) copy->erase(*record);
    }
    for (const auto& [id, before] : changed->second) {
      if (before != nullptr) (void)copy->insert(before);
    }
  }
  return views_.emplace(ns, std::move(copy)).first->second.get();
}

void transaction::note_committed_change(const std::string& ns, const bson::value& id,
                                        doc_ptr before) {
  auto& changed = changed_[ns];
  changed.try_emplace(id, std::move(before));
}

bool transaction::changed_since_snapshot(const std::string& ns, const bson::value& id) const {
  auto changed = changed_.find(ns);
  return changed != changed_.end() && changed->second.contains(id);
}

}  // namespace mongo_emulator
