#include "resume_token.h"

#include <cstdio>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

// As MongoDB's KeyString starts: "82" (the timestamp type), 8 hex t, 8 hex i; then 2 hex kind;
// then, for a transaction's events after its first, 8 hex txnOpIndex. A shorter string sorts
// before its extensions, so the strings order like the tokens.
constexpr std::size_t data_length = 20;
constexpr std::size_t txn_data_length = 28;

bool parse_hex(std::string_view s, std::uint32_t& out) {
  out = 0;
  for (char c : s) {
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
    out = (out << 4) | digit;
  }
  return true;
}

}  // namespace

resume_token resume_token::before(bson::timestamp ts) {
  if (ts.i > 0) return {bson::timestamp{ts.t, ts.i - 1}, kind::high_water};
  if (ts.t == 0) return {bson::timestamp{0, 0}, kind::event};
  return {bson::timestamp{ts.t - 1, 0xFFFFFFFFU}, kind::high_water};
}

denormd::expected<resume_token> resume_token::parse(const bson::value& token) {
  const auto bad = [](std::string why) {
    return denormd::fail("Invalid resume token: " + why, codes::location_40647_bad_resume_token);
  };
  if (!token.is_document()) return bad("the token must be an object");
  const auto* data = token.as_document().get("_data");
  if (data == nullptr) return bad("the token has no '_data' field");
  if (!data->is_string()) return bad("'_data' must be a string");
  const std::string& s = data->as_string();
  std::uint32_t t = 0;
  std::uint32_t i = 0;
  std::uint32_t k = 0;
  std::uint32_t op = 0;
  // An index of 0 is never written out, so each token has one spelling.
  const bool with_op = s.size() == txn_data_length;
  if ((s.size() != data_length && !with_op) || !s.starts_with("82") ||
      !parse_hex(std::string_view(s).substr(2, 8), t) ||
      !parse_hex(std::string_view(s).substr(10, 8), i) ||
      !parse_hex(std::string_view(s).substr(18, 2), k) || k > 2 ||
      (with_op && (!parse_hex(std::string_view(s).substr(20, 8), op) || op == 0))) {
    return bad("'_data' is not a token issued by this server: '" + s + "'");
  }
  return resume_token(bson::timestamp{t, i}, static_cast<kind>(k), op);
}

std::string resume_token::data() const {
  char buf[txn_data_length + 1];
  std::snprintf(buf, sizeof buf, "82%08X%08X%02X%08X", ts_.t, ts_.i, static_cast<unsigned>(kind_),
                txn_op_index_);
  return std::string(buf, txn_op_index_ == 0 ? data_length : txn_data_length);
}

bson::document resume_token::to_document() const {
  bson::document d;
  d.append("_data", data());
  return d;
}

}  // namespace mongo_emulator
