#include "config/json_reader.h"

#include <optional>
#include <unordered_set>
#include <vector>

#include "common/json_text.h"

namespace denormd::config {

namespace {

using json = nlohmann::ordered_json;

// A SAX handler that builds the tree itself. nlohmann's parser is iterative, so only this
// handler's own stack grows with the nesting, and it stops at the limit.
class tree_builder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit tree_builder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(number_integer_t v) { return add(v); }
  bool number_unsigned(number_unsigned_t v) { return add(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) { return add(v); }
  bool string(string_t& v) { return add(std::move(v)); }
  bool binary(binary_t& v) { return add(json::binary(std::move(v))); }

  bool start_object(std::size_t /*size*/) { return open(json::object()); }
  bool start_array(std::size_t /*size*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    level& top = stack_.back();
    if (!top.keys.insert(k).second) {
      problem_ = {pointer_join(pointer(stack_.size() - 1), k), "duplicate key \"" + k + "\""};
      return false;
    }
    // Append without ordered_map's linear search for an existing key (checked above).
    auto& items = static_cast<json::object_t::Container&>(top.node->get_ref<json::object_t&>());
    items.emplace_back(k, nullptr);
    top.slot = &items.back().second;
    top.token = std::move(k);
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    // nlohmann's message includes the line and column.
    std::string what = e.what();
    if (auto pos = what.find("parse error"); pos != std::string::npos) what = what.substr(pos);
    problem_ = {"", "invalid JSON: " + what};
    return false;
  }

  json& root() { return root_; }
  const std::optional<json_problem>& problem() const { return problem_; }

 private:
  struct level {
    json* node = nullptr;
    json* slot = nullptr;                  // objects: the value of the last key
    std::unordered_set<std::string> keys;  // objects: keys seen so far
    std::string token;                     // pointer token of the current member
  };

  // The pointer through the first `levels` open containers: with all of them, the pointer of
  // the value about to be added to the innermost one; with one fewer, the innermost's own.
  std::string pointer(std::size_t levels) const {
    std::string p;
    for (std::size_t i = 0; i < levels; ++i) {
      const level& l = stack_[i];
      if (!l.node->is_array()) {
        p = pointer_join(p, l.token);
        continue;
      }
      // Outer arrays already hold the open child as their last element.
      const std::size_t size = l.node->size();
      p = pointer_join(p, std::to_string(i + 1 < stack_.size() ? size - 1 : size));
    }
    return p;
  }

  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    level& top = stack_.back();
    if (top.node->is_array()) {
      top.node->push_back(std::move(v));
      return &top.node->back();
    }
    *top.slot = std::move(v);
    return top.slot;
  }

  bool add(json&& v) {
    place(std::move(v));
    return true;
  }

  bool open(json&& container) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      problem_ = {pointer(stack_.size()), "nests objects and arrays deeper than " +
                                              std::to_string(max_depth_) +
                                              " levels (the limit of a mapping file)"};
      return false;
    }
    json* node = place(std::move(container));
    stack_.push_back(level{node, nullptr, {}, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  int max_depth_;
  json root_;
  std::vector<level> stack_;
  std::optional<json_problem> problem_;
};

}  // namespace

expected<nlohmann::ordered_json, json_problem> read_json(std::string_view text, int max_depth) {
  tree_builder builder(max_depth);
  const bool ok = json::sax_parse(text, &builder);
  if (!ok || builder.problem()) {
    return unexpected<json_problem>{builder.problem().value_or(json_problem{"", "invalid JSON"})};
  }
  return std::move(builder.root());
}

}  // namespace denormd::config
