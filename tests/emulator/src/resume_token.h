#pragma once
// Change-stream resume tokens. `_data` is an upper-case hex string encoding (clusterTime, kind,
// txnOpIndex) so that tokens compare in event order as strings and as values; like MongoDB's,
// it starts with "82" and the cluster time. The events of one transaction share a clusterTime
// and differ in their txnOpIndex (their position in the transaction).
// Value type; thread-compatible.

#include <compare>
#include <cstdint>
#include <string>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

class resume_token {
 public:
  // Within one clusterTime an event sorts before the invalidate it causes; a high-water mark
  // sorts after everything at its time ("all changes up to here were seen").
  enum class kind : std::uint8_t { event = 0, invalidate = 1, high_water = 2 };

  resume_token() = default;
  resume_token(bson::timestamp ts, kind k, std::uint32_t txn_op_index = 0)
      : ts_(ts), kind_(k), txn_op_index_(txn_op_index) {}

  // A high-water mark just before `ts`: resuming from it yields the changes at `ts` onwards.
  static resume_token before(bson::timestamp ts);

  // Parses `{_data: "<hex>"}`; errors carry code 40647.
  static denormd::expected<resume_token> parse(const bson::value& token);

  bson::timestamp ts() const { return ts_; }
  kind token_kind() const { return kind_; }
  std::uint32_t txn_op_index() const { return txn_op_index_; }
  std::string data() const;
  bson::document to_document() const;

  auto operator<=>(const resume_token&) const = default;
  bool operator==(const resume_token&) const = default;

 private:
  // Compared in this order: a transaction's events (kind event) sort by txnOpIndex, before any
  // invalidate or high-water mark at their clusterTime.
  bson::timestamp ts_;
  kind kind_ = kind::event;
  std::uint32_t txn_op_index_ = 0;
};

}  // namespace mongo_emulator
