#include "transaction.h"

#include "storage.h"

namespace mongo_emulator {

transaction::transaction(bson::document lsid, std::int64_t number, bson::timestamp snapshot)
    : lsid_(std::move(lsid)), number_(number), snapshot_(snapshot) {}

collection* transaction::view(const storage& s, std::string_view db, std::string_view coll,
                              bool create) {
  const std::string ns = std::string(db) + "." + std::string(coll);
  if (auto it = views_.find(ns); it != views_.end()) return it->second.get();
  auto real = s.find_shared(db, coll);
  if (real == nullptr && !create) return nullptr;
  auto v = real != nullptr ? collection::view_of(std::move(real))
                           : std::make_unique<collection>(std::string(db), std::string(coll));
  v->set_owner(this);
  if (auto changed = changed_.find(ns); changed != changed_.end()) {
    for (const auto& [id, version] : changed->second)
      v->keep_snapshot_version(id, version.before, version.record);
  }
  return views_.emplace(ns, std::move(v)).first->second.get();
}

void transaction::note_committed_change(const std::string& ns, const bson::value& id,
                                        doc_ptr before, std::optional<std::uint64_t> record) {
  auto& changed = changed_[ns];
  const auto [it, first] = changed.try_emplace(id, snapshot_version{before, record});
  if (!first) return;
  // A view taken already shows the snapshot's version from now on.
  if (auto v = views_.find(ns); v != views_.end())
    v->second->keep_snapshot_version(id, std::move(before), record);
}

bool transaction::changed_since_snapshot(const std::string& ns, const bson::value& id) const {
  auto changed = changed_.find(ns);
  return changed != changed_.end() && changed->second.contains(id);
}

}  // namespace mongo_emulator
