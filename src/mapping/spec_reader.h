#pragma once
// Reading the JSON of one mapping file into a mapping: the reader that collects every error
// of a file (file, JSON pointer, message) and the checks each kind's reader shares (field
// paths, queries). Pure; one reader per file, used by one thread.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/json_text.h"
#include "mapping/mapping.h"

namespace denormd::mapping {

using json = nlohmann::ordered_json;

struct load_error {
  std::string file;
  std::string pointer;  // JSON pointer inside the file ("" for the whole file)
  std::string message;
  std::string to_string() const;  // "file: /pointer: message"
};

// Objects and arrays in a `where` or `filter`, the query object being level 1: about 32 levels
// of `$and`/`$or`, well within what libbson's JSON reader and MongoDB (100 levels) accept.
inline constexpr int max_query_depth = 64;

// "an object", "a string"... for messages.
std::string json_type(const json& j);

// Why a dotted field path cannot be updated by MongoDB ("" when it can).
std::string path_problem(const std::string& path);

// Calls `found(prefix)` for every proper prefix of a dotted path that ends at a component
// boundary ("a" and "a.b" for "a.b.c"). Two paths overlap when one is such a prefix of the
// other or they are equal, so a hash lookup per prefix finds every overlap in linear time
// where comparing all pairs was quadratic.
template <class F>
void for_each_parent(std::string_view path, F&& found) {
  for (std::size_t dot = path.find('.'); dot != std::string_view::npos;
       dot = path.find('.', dot + 1)) {
    found(path.substr(0, dot));
  }
}

// The candidate closest to `name` by edit distance, ignoring case, for "did you mean"
// suggestions of typos: "" when none is within 2 edits.
std::string closest_name(std::string_view name, std::span<const std::string_view> candidates);

// Extended JSON wrapper keys ("$oid", "$date", ...): values, not operators.
bool is_extended_json_key(std::string_view k);

// The names in a mapping's "fields", viewing into it.
std::unordered_set<std::string_view> field_names(const mapping& m);

// Collects the errors of one file while reading its JSON.
class spec_reader {
 public:
  spec_reader(std::string file, std::vector<load_error>& errors)
      : file_(std::move(file)), errors_(errors) {}

  void error(const std::string& pointer, std::string message) {
    errors_.push_back({file_, pointer, std::move(message)});
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<load_error>& errors_;
};

// One JSON object of a mapping file; keys outside `allowed` are reported when it is made.
class spec_object {
 public:
  spec_object(spec_reader& r, const json& j, std::string pointer, std::set<std::string> allowed)
      : r_(r), j_(j), pointer_(std::move(pointer)), allowed_(std::move(allowed)) {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!allowed_.contains(it.key())) {
        r_.error(pointer_join(pointer_, it.key()), unknown_key_message(it.key()));
      }
    }
  }

  const std::string& pointer() const { return pointer_; }
  void error(std::string_view key, std::string message) { r_.error(at(key), std::move(message)); }
  std::string at(std::string_view key) const { return pointer_join(pointer_, key); }

  const json* get(const std::string& key, bool required) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) r_.error(at(key), "required key \"" + key + "\" is missing");
      return nullptr;
    }
    return &*it;
  }

  std::optional<std::string> string(const std::string& key, bool required) {
    const json* v = get(key, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      r_.error(at(key), "must be a string, not " + json_type(*v));
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  std::optional<std::string> path(const std::string& key, bool required) {
    auto s = string(key, required);
    if (!s) return s;
    if (auto problem = path_problem(*s); !problem.empty()) {
      r_.error(at(key), "\"" + *s + "\" is not a valid field path: it " + problem);
      return std::nullopt;
    }
    return s;
  }

  std::optional<bool> boolean(const std::string& key) {
    const json* v = get(key, false);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) {
      r_.error(at(key), "must be true or false, not " + json_type(*v));
      return std::nullopt;
    }
    return v->get<bool>();
  }

  const json* sub_object(const std::string& key, bool required) {
    const json* v = get(key, required);
    if (v != nullptr && !v->is_object()) {
      r_.error(at(key), "must be an object, not " + json_type(*v));
      return nullptr;
    }
    return v;
  }

 private:
  std::string unknown_key_message(const std::string& key) const {
    std::string msg = "unknown key \"" + key + "\"";
    const std::vector<std::string_view> candidates(allowed_.begin(), allowed_.end());
    if (auto best = closest_name(key, candidates); !best.empty()) {
      msg += " (did you mean \"" + best + "\"?)";
    }
    std::string list;
    for (const auto& a : allowed_)
      list += (list.empty() ? "" : ", ") + a;
    return msg + "; allowed here: " + list;
  }

  spec_reader& r_;
  const json& j_;
  std::string pointer_;
  std::set<std::string> allowed_;
};

// Reads the "fields" object of a mapping: it must be a non-empty object whose names are
// valid field paths, none inside another; `entry(pointer, name, value)` reads each value
// (appending to m.fields) and reports its own errors.
void read_fields(spec_reader& r, spec_object& root, mapping& m,
                 const std::function<void(const std::string& pointer, const std::string& name,
                                          const json& value)>& entry);

// A `where`/`filter` query in the mapping subset, or nullopt after reporting why not.
std::optional<query::matcher> read_query(spec_reader& r, const json& j, const std::string& pointer);

}  // namespace denormd::mapping
