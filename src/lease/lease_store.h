#pragma once
// The lease table and the instances' heartbeats in MongoDB, `<meta db>.denormd_leases`
// {_id: unit, owner, epoch, expiresAt, acquiredAt, previousOwner} and `denormd_instances`
// {_id: instance, expiresAt, seenAt, units}. Every change is one conditional single-document
// update, and every expiry is dated and judged by the server's clock ($$NOW), so instances'
// clocks need not agree. Stateless apart from the connection; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lease/lease_machine.h"
#include "mongo/document_client.h"

namespace denormd::lease {

inline constexpr const char* leases_collection = "denormd_leases";
inline constexpr const char* instances_collection = "denormd_instances";

// A lease row with its expiry, as `denormd status` shows it.
struct lease_entry {
  lease_row row;
  std::int64_t expires_ms = 0;    // server time
  std::int64_t remaining_ms = 0;  // until it expires, by the server's clock when read
};

class lease_store {
 public:
  lease_store(mongo::document_client& conn, std::string db, std::int64_t ttl_ms);

  // Takes `unit` for `me` when it is free, released, expired or already `me`'s, with a new
  // epoch (one more than the last); nullopt when another instance holds it.
  mongo::result<std::optional<std::int64_t>> acquire(const std::string& unit,
                                                     const std::string& me);
  // Extends the lease by the TTL from now; false when it is no longer `me`'s at `epoch`.
  mongo::result<bool> renew(const std::string& unit, const std::string& me, std::int64_t epoch);
  // Sets the epoch of `me`'s lease from `from` to `to`; false when it is not `me`'s at `from`.
  mongo::result<bool> raise_epoch(const std::string& unit, const std::string& me, std::int64_t from,
                                  std::int64_t to);
  // Gives the lease up (owner "", expired) if it is still `me`'s at `epoch`.
  mongo::status release(const std::string& unit, const std::string& me, std::int64_t epoch);

  // `me` is live for another TTL and holds `units`.
  mongo::status heartbeat(const std::string& me, const std::vector<std::string>& units);
  // `me` is gone (a clean stop): peers see it leave at once instead of after a TTL.
  mongo::status leave(const std::string& me);
  // The instances whose heartbeat has not expired, by name.
  mongo::result<std::vector<std::string>> live();
  // Every lease row, expiry judged by the server now.
  mongo::result<std::vector<lease_entry>> table();

 private:
  mongo::result<mongo::bulk_outcome> update_one(const char* coll, const bson::document& filter,
                                                const bson::array& pipeline, bool upsert);

  mongo::document_client& conn_;
  const std::string db_;
  const std::int64_t ttl_ms_;
};

}  // namespace denormd::lease
