#pragma once
// A base for fake clients in the sink tests: every read finds nothing, so a fake overrides only
// the calls its test is about.

#include <optional>
#include <string>
#include <vector>

#include "mongo/document_client.h"

namespace denormd::sink::fakes {

template <class Client>
class finds_nothing : public Client {
 public:
  using typename Client::snapshot_results;
  mongo::result<std::vector<bson::document>> find(const std::string&, const std::string&,
                                                  const bson::document&,
                                                  const mongo::find_options&) override {
    return std::vector<bson::document>{};
  }
  mongo::result<std::optional<bson::document>> find_one(const std::string&, const std::string&,
                                                        const bson::document&) override {
    return std::optional<bson::document>{};
  }
  mongo::result<std::vector<bson::document>> aggregate(const std::string&, const std::string&,
                                                       const bson::array&) override {
    return std::vector<bson::document>{};
  }
  mongo::result<snapshot_results> aggregate_snapshot(const std::string&, const std::string&,
                                                     const bson::array&) override {
    return snapshot_results{};
  }
};

}  // namespace denormd::sink::fakes
