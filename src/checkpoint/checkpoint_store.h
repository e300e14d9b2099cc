#pragma once
// Where denormd keeps its place: one document per watched namespace in
// `<db>.denormd_checkpoints`, {_id: "shop.customers", token, wallTime, savedAt} (the token itself
// carries the cluster time). Written with w:"majority" only after every write up to that point was
// acknowledged. Stateless apart from the connection; thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mongo/connection.h"

namespace denormd::checkpoint {

inline constexpr const char* collection_name = "denormd_checkpoints";

struct checkpoint {
  bson::document token;
  std::int64_t event_ms = 0;  // wall time of the last applied event (0 when unknown)
  std::int64_t saved_ms = 0;  // when it was stored
};

class checkpoint_store {
 public:
  checkpoint_store(mongo::connection& conn, std::string db);

  mongo::result<std::optional<checkpoint>> load(const mapping::ns& source);
  mongo::status save(const mapping::ns& source, const checkpoint& cp);
  // Removes a stored position (used when history was lost and a re-sync starts afresh).
  mongo::status clear(const mapping::ns& source);
  const std::string& db() const { return db_; }

 private:
  mongo::connection& conn_;
  std::string db_;
};

}  // namespace denormd::checkpoint
