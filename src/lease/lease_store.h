#pragma once
// The lease table and the instances' heartbeats in MongoDB, `<meta db>.denormd_leases`
// {_id: unit, owner, epoch, expiresAt, acquiredAt, previousOwner} and `denormd_instances`
// {_id: instance, expiresAt, seenAt, units, report}. Every change is one conditional
// single-document update, and every expiry is dated and judged by the server's clock ($$NOW), so
// instances' clocks need not agree. Stateless apart from the connection; thread-safe.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lease/lease_table.h"
#include "lease/unit_report.h"
#include "mongo/document_client.h"

namespace denormd::lease {

inline constexpr const char* leases_collection = "denormd_leases";
inline constexpr const char* instances_collection = "denormd_instances";

class lease_store final : public lease_table {
 public:
  lease_store(mongo::document_client& conn, std::string db, std::int64_t ttl_ms);

  mongo::result<std::optional<std::int64_t>> acquire(const std::string& unit,
                                                     const std::string& me) override;
  mongo::result<bool> renew(const std::string& unit, const std::string& me,
                            std::int64_t epoch) override;
  mongo::result<bool> raise_epoch(const std::string& unit, const std::string& me, std::int64_t from,
                                  std::int64_t to) override;
  mongo::status release(const std::string& unit, const std::string& me,
                        std::int64_t epoch) override;
  mongo::status heartbeat(const std::string& me, const std::vector<std::string>& units,
                          const bson::document& report) override;
  mongo::status leave(const std::string& me) override;
  mongo::result<std::vector<std::string>> live() override;
  mongo::result<std::vector<lease_entry>> table() override;
  // Every instance's row, live or not, with what it reported.
  mongo::result<std::vector<instance_row>> instances();

  // How long the server may spend taking a lease (maxTimeMS): a tenth of the TTL, at least
  // 100 ms. Only lease statements write the rows (the write fence is the checkpoint document),
  // so a statement waits only for a slow server: this bounds what one costs the round, and
  // the renewals due after it.
  std::chrono::milliseconds acquire_time() const {
    return std::chrono::milliseconds(std::max<std::int64_t>(100, ttl_ms_ / 10));
  }
  // The same for every other statement: half the TTL; a renewal still waiting after half the
  // TTL is of no use any more.
  std::chrono::milliseconds statement_time() const {
    return std::chrono::milliseconds(std::max<std::int64_t>(100, ttl_ms_ / 2));
  }

 private:
  mongo::result<mongo::bulk_outcome> update_one(const char* coll, const bson::document& filter,
                                                const bson::array& pipeline, bool upsert,
                                                std::chrono::milliseconds max_time);

  mongo::document_client& conn_;
  const std::string db_;
  const std::int64_t ttl_ms_;
};

}  // namespace denormd::lease
