#pragma once
// Mappings for the ops tests, built from JSON like mapping files.

#include <gtest/gtest.h>

#include "bson/json.h"
#include "config/mapping_loader.h"

namespace denormd::ops::testing {

inline mapping::mapping load_one(const std::string& json) {
  auto r = config::parse_mapping("test.json", json, "shop");
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().front().to_string());
  return r && !r->empty() ? std::move(r->front()) : mapping::mapping{};
}

inline bson::document doc(const std::string& json) {
  auto d = bson::parse_json(json);
  EXPECT_TRUE(d.has_value()) << json;
  return d ? std::move(d).value() : bson::document{};
}

inline const char* customer_copy = R"({"name":"orders-customer","kind":"copy",
  "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
  "into":"customer","fields":{"name":"name","city":"address.city"}})";

inline const char* product_copy = R"({"name":"orders-items-product","kind":"copy",
  "source":{"collection":"products"},
  "target":{"collection":"orders","array":"items","key":"productId"},
  "into":"product","fields":{"title":"title","sku":"sku"}})";

inline const char* recent_reviews = R"({"name":"products-recent-reviews","kind":"recent",
  "source":{"collection":"reviews","parentKey":"productId","filter":{"hidden":{"$ne":true}}},
  "target":{"collection":"products"},"into":"recentReviews",
  "fields":{"reviewId":"_id","stars":"stars"},"idField":"reviewId",
  "sort":{"stars":-1},"limit":3})";

}  // namespace denormd::ops::testing
