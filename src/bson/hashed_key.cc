#include "bson/hashed_key.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <variant>

#include "common/md5.h"
#include "common/overloaded.h"

namespace denormd::bson {

namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr double two_to_63 = 9223372036854775808.0;

__extension__ typedef unsigned __int128 u128;

// canonicalizeBSONType (bsontypes.h): the rank of MongoDB's comparison order (canonical_rank).
// Timestamps rank 47, apart from dates (45); the servers of 2013's hasher_test ranked both 45.
std::int32_t canonical_type(const value& v) {
  return canonical_rank(v);
}

// Decimal128::toLong with kRoundTiesToEven, saturating, for a finite BID-encoded decimal.
std::int64_t decimal_to_int64_half_even(const decimal128& d) {
  const bool negative = (d.high >> 63) != 0;
  // The large-coefficient form (combination bits 11) always exceeds 10^34 - 1: non-canonical,
  // so zero, as IEEE 754 reads it; likewise a coefficient of 10^34 or more.
  if (((d.high >> 61) & 3) == 3) return 0;
  const int exponent = static_cast<int>((d.high >> 49) & 0x3FFF) - 6176;
  const u128 coefficient = (static_cast<u128>(d.high & 0x1FFFFFFFFFFFFULL) << 64) | d.low;
  u128 ten_to_34 = 1;
  for (int i = 0; i < 34; ++i)
    ten_to_34 *= 10;
  if (coefficient == 0 || coefficient >= ten_to_34) return 0;
  const u128 limit = static_cast<u128>(1) << 64;  // past every int64 magnitude
  u128 magnitude = 0;
  if (exponent >= 0) {
    magnitude = coefficient;
    for (int i = 0; i < exponent && magnitude < limit; ++i)
      magnitude *= 10;
  } else if (exponent >= -38) {
    u128 divisor = 1;
    for (int i = 0; i < -exponent; ++i)
      divisor *= 10;
    magnitude = coefficient / divisor;
    const u128 twice_remainder = (coefficient % divisor) * 2;  // below 2 * 10^38 < 2^128
    if (twice_remainder > divisor || (twice_remainder == divisor && (magnitude & 1) != 0))
      ++magnitude;
  }  // else below 10^34 * 10^-39: rounds to 0
  if (negative) {
    if (magnitude >= static_cast<u128>(1) << 63) return int64_min;
    return -static_cast<std::int64_t>(magnitude);
  }
  if (magnitude > static_cast<u128>(int64_max)) return int64_max;
  return static_cast<std::int64_t>(magnitude);
}

class key_hasher {
 public:
  key_hasher() { add_int32(0); }  // the seed

  // recursiveHash: the canonical type, the field name when inside a document or array, then
  // the value.
  void add_element(const value& v, const std::string* name) {
    add_int32(canonical_type(v));
    if (name != nullptr) h_.update(name->c_str(), name->size() + 1);
    add_value(v);
  }

  std::int64_t finish() {
    const md5::digest d = h_.finish();
    std::uint64_t out = 0;
    for (int i = 7; i >= 0; --i)
      out = (out << 8) | d[static_cast<std::size_t>(i)];
    return static_cast<std::int64_t>(out);
  }

 private:
  void add_int32(std::int32_t v) { add_le(static_cast<std::uint32_t>(v), 4); }
  void add_int64(std::int64_t v) { add_le(static_cast<std::uint64_t>(v), 8); }
  void add_le(std::uint64_t v, int bytes) {
    std::uint8_t out[8];
    for (int i = 0; i < bytes; ++i)
      out[i] = static_cast<std::uint8_t>(v >> (8 * i));
    h_.update(out, static_cast<std::size_t>(bytes));
  }
  // A BSON string's value: int32 length with the NUL, the bytes, the NUL.
  void add_string(std::string_view s) {
    add_int32(static_cast<std::int32_t>(s.size() + 1));
    add_cstring(s);
  }
  void add_cstring(std::string_view s) {
    h_.update(s);
    h_.update("", 1);
  }
  // The elements of an embedded document or array, then EOO: its canonical type (0), with an
  // empty name and no value bytes.
  void add_end() { add_int32(0); }

  void add_value(const value& v);

  md5 h_;
};

void key_hasher::add_value(const value& v) {
  if (v.is_number()) return add_int64(number_for_hash(v));
  std::visit(
      overloaded{
          [&](const std::string& s) { add_string(s); },
          [&](const symbol& s) { add_string(s.text); }, [&](const code& c) { add_string(c.text); },
          [&](const document& d) {
            for (const auto& f : d)
              add_element(f.val, &f.name);
            add_end();
          },
          [&](const array& a) {
            for (std::size_t i = 0; i < a.size(); ++i) {
              const std::string index = std::to_string(i);
              add_element(a[i], &index);
            }
            add_end();
          },
          [&](const binary& b) {
            // Subtype 2 keeps its old inner length in the value bytes (libbson strips it).
            const bool old = b.subtype == 2;
            add_int32(static_cast<std::int32_t>(b.data.size() + (old ? 4 : 0)));
            h_.update(&b.subtype, 1);
            if (old) add_int32(static_cast<std::int32_t>(b.data.size()));
            h_.update(b.data.data(), b.data.size());
          },
          [&](const oid& o) { h_.update(o.bytes.data(), o.bytes.size()); },
          [&](bool b) {
            const std::uint8_t byte = b ? 1 : 0;
            h_.update(&byte, 1);
          },
          [&](const date_time& d) { add_int64(d.millis); },
          // BSON stores a timestamp as one uint64: the increment low, the seconds high.
          [&](const timestamp& t) { add_le((std::uint64_t{t.t} << 32) | t.i, 8); },
          [&](const regex& r) {
            add_cstring(r.pattern);
            add_cstring(r.options);
          },
          [](const auto&) {},  // null, undefined, MinKey, MaxKey: no value bytes
      },
      v.data());
}

}  // namespace

std::int64_t number_for_hash(const value& v) {
  if (v.is<std::int32_t>()) return v.as<std::int32_t>();
  if (v.is<std::int64_t>()) return v.as<std::int64_t>();
  if (v.is<double>()) {
    const double d = v.as<double>();
    if (std::isnan(d)) return 0;
    if (d == two_to_63) return int64_min;
    if (!(d < two_to_63)) return int64_max;
    if (d < -two_to_63) return int64_min;
    return static_cast<std::int64_t>(d);
  }
  if (v.is<decimal128>()) {
    const decimal128& d = v.as<decimal128>();
    const unsigned combination = static_cast<unsigned>((d.high >> 58) & 0x1F);
    if (combination == 0x1F) return 0;                                            // NaN
    if (combination == 0x1E) return (d.high >> 63) != 0 ? int64_min : int64_max;  // infinity
    return decimal_to_int64_half_even(d);
  }
  return 0;
}

std::int64_t hashed_index_key(const value& v) {
  key_hasher h;
  h.add_element(v, nullptr);
  return h.finish();
}

std::int32_t hashed_partition(std::int64_t hash, std::int32_t partitions) {
  const std::int64_t r = hash % partitions;  // C++ and $mod both keep the dividend's sign
  return static_cast<std::int32_t>(r < 0 ? -r : r);
}

}  // namespace denormd::bson
