#include "sort_spec.h"

#include <algorithm>
#include <optional>

#include "expression.h"
#include "field_path.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
using denormd::expected;
using denormd::fail;

namespace {

// A sort key: the chosen value, or the empty-array key that sorts before null.
struct key_value {
  bool empty_array = false;
  bson::value v;
};

int compare_keys(const key_value& a, const key_value& b) {
  if (a.empty_array || b.empty_array) {
    if (a.empty_array && b.empty_array) return 0;
    const key_value& other = a.empty_array ? b : a;
    // Only MinKey sorts before an empty array.
    const int empty_first = other.v.is<bson::min_key>() ? 1 : -1;
    return a.empty_array ? empty_first : -empty_first;
  }
  return bson::compare(a.v, b.v);
}

// Every value the path reaches, as MongoDB's sort key generator sees them: arrays are
// expanded; a path that ends early (missing field, scalar in the way) contributes null.
void collect(const bson::value& v, const std::vector<std::string>& path, std::size_t i,
             std::vector<bson::value>& out, bool& empty_array) {
  if (i == path.size()) {
    if (!v.is_array()) {
      out.push_back(v);
    } else if (v.as_array().empty()) {
      empty_array = true;
    } else {
      for (const auto& e : v.as_array())
        out.push_back(e);
    }
    return;
  }
  if (v.is_document()) {
    const bson::value* child = v.as_document().get(path[i]);
    if (child == nullptr) {
      out.emplace_back();
    } else {
      collect(*child, path, i + 1, out, empty_array);
    }
    return;
  }
  if (v.is_array()) {
    const auto& items = v.as_array();
    if (const auto index = update_index(path[i]);
        index && path[i].size() == std::to_string(*index).size()) {
      if (*index < items.size()) {
        collect(items[*index], path, i + 1, out, empty_array);
      } else {
        out.emplace_back();
      }
      return;
    }
    if (items.empty()) out.emplace_back();
    for (const auto& e : items)
      collect(e, path, i, out, empty_array);
    return;
  }
  out.emplace_back();
}

key_value sort_key(const bson::document& doc, const std::vector<std::string>& path,
                   bool ascending) {
  std::vector<bson::value> values;
  bool empty_array = false;
  const bson::value* first = doc.get(path.front());
  if (first == nullptr) {
    values.emplace_back();
  } else {
    collect(*first, path, 1, values, empty_array);
  }
  if (values.empty()) return key_value{empty_array, {}};
  const auto pick = ascending ? std::min_element(values.begin(), values.end(),
                                                 [](const bson::value& a, const bson::value& b) {
                                                   return bson::compare(a, b) < 0;
                                                 })
                              : std::max_element(values.begin(), values.end(),
                                                 [](const bson::value& a, const bson::value& b) {
                                                   return bson::compare(a, b) < 0;
                                                 });
  return key_value{false, *pick};
}

}  // namespace

expected<sort_spec> sort_spec::parse(const bson::document& spec) {
  sort_spec out;
  for (const auto& f : spec) {
    if (f.val.is_document() && f.val.as_document().contains("$meta")) {
      return fail("$meta sort keys are not supported by mongo-emulator", 2);
    }
    if (!f.val.is_number()) {
      return fail("$sort key ordering must be specified using a number or {$meta: 'textScore'}",
                  15974);
    }
    // MongoDB reads the order with numberInt(): 1.5 means 1.
    const double order = f.val.to_double();
    const auto truncated = static_cast<long long>(order);
    if (truncated != 1 && truncated != -1) {
      return fail("$sort key ordering must be 1 (for ascending) or -1 (for descending)", 15975);
    }
    if (auto s = check_field_path(f.name); !s)
      return denormd::unexpected<denormd::error>{s.error()};
    out.keys_.push_back({split_path(f.name), truncated == 1});
  }
  return out;
}

int sort_spec::compare(const bson::document& a, const bson::document& b) const {
  for (const auto& k : keys_) {
    const int c = compare_keys(sort_key(a, k.path, k.ascending), sort_key(b, k.path, k.ascending));
    if (c != 0) return k.ascending ? c : -c;
  }
  return 0;
}

void sort_spec::sort(std::vector<bson::document>& docs) const {
  if (keys_.empty()) return;
  // Keys are computed once per document, not per comparison.
  std::vector<std::vector<key_value>> keys(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    for (const auto& k : keys_)
      keys[i].push_back(sort_key(docs[i], k.path, k.ascending));
  }
  std::vector<std::size_t> order(docs.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    for (std::size_t k = 0; k < keys_.size(); ++k) {
      const int c = compare_keys(keys[a][k], keys[b][k]);
      if (c != 0) return keys_[k].ascending ? c < 0 : c > 0;
    }
    return false;
  });
  std::vector<bson::document> sorted;
  sorted.reserve(docs.size());
  for (const auto i : order)
    sorted.push_back(std::move(docs[i]));
  docs = std::move(sorted);
}

expected<sort_spec> parse_sort(const bson::document& spec) {
  return sort_spec::parse(spec);
}

}  // namespace mongo_emulator::engine
