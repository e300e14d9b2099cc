#pragma once
// Reference values: what a document says another document is called (a customer's _id in an
// order, a product's _id in a review). They are read from users' documents, so they are
// untrusted: they are checked before they are followed and matched literally in every filter,
// never read as a query (docs/mappings.md, "Reference values are data, never queries"). Pure
// functions.

#include <optional>
#include <string>
#include <string_view>

#include "bson/value.h"

namespace denormd::mapping {

// Why `v` cannot be a reference, or nullopt when it can. Not references: an array (MongoDB's
// equality would match any of its elements, so one document would stand for many), a regular
// expression (it would match as a pattern in $in), undefined, and a document with a
// $-prefixed field (it reads as query operators). Null means "no reference" and is not
// checked here.
std::optional<std::string> reference_problem(const bson::value& v);

// The filter for the documents after `last` in _id order (to page through a collection).
// MongoDB compares values of one type bracket only, so the documents whose _id has a later
// bracket are added explicitly.
bson::document after_key_filter(const bson::value& last);

// {$eq: v}: `v` matched literally wherever it is placed in a filter.
bson::document literal(const bson::value& v);

// The condition on a reference field `field` (its last path component) that selects exactly
// the documents whose field holds `key`: {$eq: key}, and not an array that merely contains
// it ({$not: {$type: "array"}}), since an array is not a reference. `_id` is never an array.
bson::document key_match(std::string_view field, const bson::value& key);

// The condition on a reference field `field` that selects exactly the documents whose field
// holds one of `keys`: {$in: keys}, plus {$not: {$type: "array"}} as key_match adds it. Every
// key must have passed reference_problem (no regex, no operator document), so $in matches
// each one literally.
bson::document keys_match(std::string_view field, const bson::array& keys);

// The value as relaxed Extended JSON, cut to `max` bytes (on a UTF-8 boundary), for messages:
// a value from a document may be megabytes long.
std::string describe_value(const bson::value& v, std::size_t max = 200);

// Where a reference was read, for the dead-letter reason.
struct reference_site {
  std::string_view mapping;  // the mapping's name
  std::string_view role;     // "source key", "parentKey", "target key", "_id"
  std::string_view field;    // the field it was read from
  std::string_view ns;       // the collection of the document it was read from
  const bson::value* id;     // that document's _id (nullptr when it is the value itself)
};

// 'mapping "m": parentKey "productId" of shop.reviews {"_id": 7} is {"$gt": -1}, <problem>;
// not a reference, so it is not followed'.
std::string reference_reason(const reference_site& at, const bson::value& v,
                             std::string_view problem);

}  // namespace denormd::mapping
