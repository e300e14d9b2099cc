#pragma once
// MongoDB's hashed index key: what a {field: "hashed"} index stores for a value, what
// $toHashedIndexKey returns and what hashed sharding routes by (BSONElementHasher::hash64 with
// seed 0, src/mongo/db/hasher.cpp). The first 8 bytes, little-endian, of the MD5 of: the seed
// (int32 0), then per element its canonical type (int32: the sort-order rank of
// canonicalizeBSONType), its field name with the NUL (inside documents and arrays only) and its
// value: a number as the int64 of safeNumberLongForHash, a document or array as its elements then
// an end marker (int32 0), anything else as its BSON value bytes. So 3, 3L, 3.9 and
// Decimal128("3") share a key, as do a string and a symbol. Pure functions.

#include <cstdint>

#include "bson/value.h"

namespace denormd::bson {

std::int64_t hashed_index_key(const value& v);

// The int64 a number hashes as (BSONElement::safeNumberLongForHash): int32/int64 unchanged; a
// double truncated toward zero, NaN 0, 2^63 exactly INT64_MIN (the wrap of older servers,
// kept for on-disk compatibility), above it INT64_MAX, below -2^63 INT64_MIN; a decimal rounded
// half to even (Decimal128::toLong), NaN 0, beyond the int64 range clamped. `v` is a number.
std::int64_t number_for_hash(const value& v);

// The partition, in [0, partitions), of a document whose key hashed to `hash`: |hash % N|, what
// the server computes for {$abs: {$mod: [{$toHashedIndexKey: <key>}, N]}}. $mod first keeps it
// overflow-free ($mod keeps the dividend's sign, so the remainder is in (-N, N)); $abs first
// would fail (28680) on the one hash INT64_MIN. Uniform when the hash is. `partitions` > 0.
std::int32_t hashed_partition(std::int64_t hash, std::int32_t partitions);

}  // namespace denormd::bson
