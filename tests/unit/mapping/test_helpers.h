#pragma once
// Small helpers shared by the mapping tests: build mappings and events from JSON text.

#include <gtest/gtest.h>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "mapping/change_event.h"

namespace denormd::mapping::testing {

inline std::vector<mapping> load(const std::string& json) {
  auto r = config::parse_mapping("test.json", json, "shop");
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().front().to_string());
  return r ? std::move(r).value() : std::vector<mapping>{};
}

inline change_event event(const std::string& json) {
  auto doc = bson::parse_json(json);
  EXPECT_TRUE(doc.has_value()) << json;
  auto ev = change_event::parse(doc ? std::move(doc).value() : bson::document{});
  EXPECT_TRUE(ev.has_value()) << (ev ? "" : ev.error().message);
  return ev ? std::move(ev).value() : change_event{};
}

inline const char* customer_mapping = R"({"name":"oc","kind":"copy",
  "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
  "into":"customer","fields":{"name":"name","city":"address.city"}})";

inline const char* review_mapping = R"({"name":"rr","kind":"recent",
  "source":{"collection":"reviews","parentKey":"productId"},"target":{"collection":"products"},
  "into":"recent","fields":{"id":"_id","at":"at","meta.stars":"stars"},"idField":"id",
  "sort":{"at":-1},"limit":2})";

}  // namespace denormd::mapping::testing
