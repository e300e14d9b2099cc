#include "fail_point.h"

#include <algorithm>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

using denormd::fail;

std::optional<std::int64_t> as_int(const bson::value& v) {
  if (v.is<std::int32_t>()) return v.as<std::int32_t>();
  if (v.is<std::int64_t>()) return v.as<std::int64_t>();
  if (v.is<double>()) return static_cast<std::int64_t>(v.as<double>());
  return std::nullopt;
}

bool truthy(const bson::value* v) {
  if (v == nullptr) return false;
  if (v->is<bool>()) return v->as<bool>();
  if (v->is_number()) return v->to_double() != 0;
  return !v->is_null();
}

}  // namespace

denormd::expected<bson::document> fail_point::configure(const bson::document& command) {
  const auto* mode_value = command.get("mode");
  if (mode_value == nullptr) return fail("Missing mode argument", codes::bad_value);

  mode new_mode = mode::off;
  std::int64_t remaining = 0;
  double probability = 0;
  if (mode_value->is_string()) {
    if (mode_value->as_string() == "alwaysOn") {
      new_mode = mode::always_on;
    } else if (mode_value->as_string() != "off") {
      return fail("unknown mode: " + mode_value->as_string(), codes::bad_value);
    }
  } else if (mode_value->is_document() && mode_value->as_document().size() == 1) {
    const auto& f = mode_value->as_document().fields().front();
    if (f.name == "activationProbability") {
      if (!f.val.is_number())
        return fail("activationProbability must be a number", codes::bad_value);
      new_mode = mode::probability;
      probability = f.val.to_double();
    } else {
      auto n = as_int(f.val);
      if (!n || *n < 0) return fail("mode value must be a non-negative integer", codes::bad_value);
      if (f.name == "times") {
        new_mode = *n == 0 ? mode::off : mode::times;
      } else if (f.name == "skip") {
        new_mode = mode::skip;
      } else {
        return fail("unknown mode: " + f.name, codes::bad_value);
      }
      remaining = *n;
    }
  } else {
    return fail("mode must be a string or an object", codes::type_mismatch);
  }

  std::vector<std::string> commands;
  std::string app_name;
  std::string ns;
  fail_action action;
  const bool get_more_only = name_ == fail_get_more;
  if (get_more_only) {
    commands.emplace_back("getMore");
    action.error_code = codes::internal_error;
  }
  if (const auto* data = command.get("data"); data != nullptr && data->is_document()) {
    const auto& d = data->as_document();
    if (const auto* list = d.get("failCommands");
        !get_more_only && list != nullptr && list->is_array()) {
      for (const auto& c : list->as_array()) {
        if (c.is_string()) commands.push_back(c.as_string());
      }
    }
    if (const auto* v = d.get("appName"); v != nullptr && v->is_string()) app_name = v->as_string();
    if (const auto* v = d.get("namespace"); v != nullptr && v->is_string()) ns = v->as_string();
    if (const auto* v = d.get("errorCode"); v != nullptr) {
      auto n = as_int(*v);
      if (!n) return fail("errorCode must be a number", codes::type_mismatch);
      action.error_code = static_cast<int>(*n);
    }
    if (const auto* v = d.get("errorLabels"); v != nullptr && v->is_array())
      action.error_labels = v->as_array();
    action.close_connection = truthy(d.get("closeConnection"));
    if (truthy(d.get("blockConnection"))) {
      const auto* ms = d.get("blockTimeMS");
      auto n = ms ? as_int(*ms) : std::nullopt;
      if (!n) return fail("blockTimeMS is required with blockConnection", codes::bad_value);
      action.block = std::chrono::milliseconds(*n);
    }
    if (const auto* v = d.get("writeConcernError"); v != nullptr && v->is_document())
      action.write_concern_error = v->as_document();
  } else if (new_mode != mode::off && !get_more_only) {
    return fail("failCommand requires 'data'", codes::bad_value);
  }
  // The getMore fail point only raises its error; MongoDB reads nothing else from its data.
  if (get_more_only) {
    fail_action only_error;
    only_error.error_code = action.error_code;
    action = std::move(only_error);
  }

  std::lock_guard lock(mutex_);
  bson::document reply;
  reply.append("count", entered_);
  mode_ = new_mode;
  remaining_ = remaining;
  probability_ = probability;
  commands_ = std::move(commands);
  app_name_ = std::move(app_name);
  namespace_ = std::move(ns);
  action_ = std::move(action);
  entered_ = 0;
  return reply;
}

std::optional<fail_action> fail_point::check(std::string_view command, std::string_view app_name,
                                             std::string_view ns) {
  std::lock_guard lock(mutex_);
  if (mode_ == mode::off) return std::nullopt;
  if (std::find(commands_.begin(), commands_.end(), command) == commands_.end())
    return std::nullopt;
  if (!app_name_.empty() && app_name_ != app_name) return std::nullopt;
  if (!namespace_.empty() && namespace_ != ns) return std::nullopt;
  switch (mode_) {
    case mode::off:
      return std::nullopt;
    case mode::always_on:
      break;
    case mode::times:
      if (--remaining_ <= 0) mode_ = mode::off;
      break;
    case mode::skip:
      if (remaining_ > 0) {
        --remaining_;
        return std::nullopt;
      }
      break;
    case mode::probability:
      if (std::uniform_real_distribution<double>(0, 1)(rng_) >= probability_) return std::nullopt;
      break;
  }
  ++entered_;
  return action_;
}

}  // namespace mongo_emulator
