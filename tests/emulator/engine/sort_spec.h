#pragma once
// MongoDB's sort order for find's `sort` and the $sort stage: per key, a missing field sorts
// as null, an array by its smallest element ascending and its largest descending, an empty
// array before null; values compare in BSON order across types. Ties keep input order.
// Lifecycle: parsed once, immutable; safe to share between threads.

#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator::engine {

class sort_spec {
 public:
  static denormd::expected<sort_spec> parse(const denormd::bson::document& spec);

  bool empty() const { return keys_.empty(); }
  // <0, 0, >0 like strcmp.
  int compare(const denormd::bson::document& a, const denormd::bson::document& b) const;
  bool operator()(const denormd::bson::document& a, const denormd::bson::document& b) const {
    return compare(a, b) < 0;
  }
  // Stable sort of `docs` by this spec.
  void sort(std::vector<denormd::bson::document>& docs) const;

 private:
  struct key {
    std::vector<std::string> path;
    bool ascending = true;
  };
  std::vector<key> keys_;
};

denormd::expected<sort_spec> parse_sort(const denormd::bson::document& spec);

}  // namespace mongo_emulator::engine
