// The direct BSON writer must produce exactly libbson's bytes (what the server sent before),
// and splice pre-encoded documents only into the batch array it is pointed at.

#include "bson_writer.h"

#include <gtest/gtest.h>

#include "bson/convert.h"

namespace mongo_emulator {
namespace {

std::vector<std::uint8_t> via_libbson(const bson::document& d) {
  std::vector<std::uint8_t> out;
  bson::append_bytes(d, out);
  return out;
}

std::vector<std::uint8_t> via_writer(const bson::document& d, const bson::array* splice = nullptr) {
  std::vector<std::uint8_t> out;
  write_document(d, out, splice);
  return out;
}

TEST(bson_writer, matches_libbson_for_every_type) {
  bson::oid o;
  for (std::size_t i = 0; i < o.bytes.size(); ++i)
    o.bytes[i] = static_cast<std::uint8_t>(i * 7);
  bson::array many;
  for (int i = 0; i < 12; ++i)
    many.emplace_back(std::int32_t{i});
  const bson::document d{
      {"d", 1.5},
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"s", std::string("h\0i", 3)},
      {"empty", ""},
      {"doc", bson::document{{"a", std::int32_t{1}}, {"b", bson::document{}}}},
      {"arr", bson::array{bson::value(std::int64_t{-2}), bson::value(bson::null_t{}),
                          bson::value(bson::array{})}},
      {"many", many},
      {"bin", bson::binary{0, {1, 2, 3}}},
      {"old_bin", bson::binary{2, {4, 5}}},
      {"user_bin", bson::binary{0x80, {6}}},
      {"undef", bson::undefined_t{}},
      {"oid", o},
      {"t", true},
      {"f", false},
      {"date", bson::date_time{-1234567}},
      {"null", bson::null_t{}},
      {"re", bson::regex{"a.*b", "xsmzi"}},
      {"code", bson::code{"function() {}"}},
      {"sym", bson::symbol{"sy"}},
      {"i32", std::int32_t{-7}},
      {"ts", bson::timestamp{1700000000, 42}},
      {"i64", std::int64_t{1} << 40},
      {"dec", bson::decimal128{0x1234, 0x3040000000000000ULL}},
      {"min", bson::min_key{}},
      {"max", bson::max_key{}},
  };
  EXPECT_EQ(via_writer(d), via_libbson(d));
  EXPECT_EQ(via_writer(bson::document{}), via_libbson(bson::document{}));
}

TEST(bson_writer, splices_pre_encoded_documents_into_the_named_batch_only) {
  const bson::document event{{"_id", bson::document{{"_data", "82"}}}, {"n", std::int32_t{1}}};
  const auto event_bytes = via_libbson(event);
  bson::document reply{
      {"cursor",
       bson::document{
           {"nextBatch", bson::array{bson::value(bson::binary{raw_document_subtype, event_bytes})}},
           {"other", bson::array{bson::value(bson::binary{raw_document_subtype, event_bytes})}}}},
      {"ok", 1.0}};
  const auto* batch = &reply.get("cursor")->as_document().get("nextBatch")->as_array();
  const bson::document expected{
      {"cursor",
       bson::document{
           {"nextBatch", bson::array{bson::value(event)}},
           {"other", bson::array{bson::value(bson::binary{raw_document_subtype, event_bytes})}}}},
      {"ok", 1.0}};
  EXPECT_EQ(via_writer(reply, batch), via_libbson(expected));
  // Without a splice target the marker is ordinary binary data.
  EXPECT_EQ(via_writer(reply), via_libbson(reply));
}

}  // namespace
}  // namespace mongo_emulator
