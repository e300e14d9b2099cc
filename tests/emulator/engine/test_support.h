#pragma once
// Helpers for the engine's tests: Extended JSON in, readable failures out. Stateless.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "bson/json.h"
#include "bson/value.h"

namespace mongo_emulator::engine::testing {

inline denormd::bson::document doc(std::string_view json) {
  auto d = denormd::bson::parse_json(json);
  EXPECT_TRUE(d) << "bad test JSON: " << json << ": " << (d ? "" : d.error().message);
  return d ? *d : denormd::bson::document{};
}

// A JSON array, parsed through a wrapper document.
inline denormd::bson::array array(std::string_view json) {
  auto d = doc("{\"v\": " + std::string(json) + "}");
  const auto* v = d.get("v");
  return v != nullptr && v->is_array() ? v->as_array() : denormd::bson::array{};
}

inline std::vector<denormd::bson::document> documents(std::string_view json) {
  std::vector<denormd::bson::document> out;
  for (const auto& v : array(json)) {
    if (v.is_document()) out.push_back(v.as_document());
  }
  return out;
}

inline std::string json(const denormd::bson::document& d) {
  return denormd::bson::to_json(d, denormd::bson::json_mode::canonical);
}

}  // namespace mongo_emulator::engine::testing
