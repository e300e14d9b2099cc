#include "server_parameters.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "error_codes.h"
#include "option_refusals.h"
#include "storage.h"
#include "value_text.h"

namespace mongo_emulator {

namespace {

// BSONElement::trueValue: what coerce<bool> stores (any value converts).
bool true_value(const bson::value& v) {
  if (v.is_null() || v.is<bson::undefined_t>()) return false;
  if (v.is<bool>()) return v.as<bool>();
  if (v.is_number()) return v.to_double() != 0;
  return true;
}

// BSONElement::coerce<int>: numbers only, truncated as numberInt() does.
std::optional<std::int32_t> coerce_int(const bson::value& v) {
  if (!v.is_number()) return std::nullopt;
  if (v.is<std::int32_t>()) return v.as<std::int32_t>();
  const double d = v.is<std::int64_t>() ? static_cast<double>(v.as<std::int64_t>()) : v.to_double();
  if (std::isnan(d)) return 0;
  return static_cast<std::int32_t>(std::clamp(d, double{std::numeric_limits<std::int32_t>::min()},
                                              double{std::numeric_limits<std::int32_t>::max()}));
}

std::string element_string(std::string_view name, const bson::value& v) {
  return engine::element_text(name, v);
}

}  // namespace

// One parameter as MongoDB's ServerParameter describes it: where it can be set, how it appends
// its value, and how setParameter stores a new one.
struct server_parameters::parameter {
  std::string_view name;
  bool settable_at_runtime;
  bool settable_at_startup;
  std::function<bson::value(const server_parameters&)> value;
  std::function<denormd::status(server_parameters&, const bson::value&)> set;
};

const server_parameters::parameter* server_parameters::find(std::string_view name) {
  // In name order, as MongoDB's parameter map iterates.
  static const std::array<parameter, 3> all{{
      {"featureCompatibilityVersion", true, true,
       [](const server_parameters&) {
         return bson::value(bson::document{{"version", "6.0"}});
       },
       [](server_parameters&, const bson::value&) -> denormd::status {
         return denormd::fail(
             "featureCompatibilityVersion cannot be set via setParameter. See "
             "http://dochub.mongodb.org/core/6.0-feature-compatibility.",
             codes::illegal_operation);
       }},
      {"internalChangeStreamRespectsReadPreference", true, true,
       [](const server_parameters& p) {
         return bson::value(p.change_streams_respect_read_preference_.load());
       },
       [](server_parameters& p, const bson::value& v) -> denormd::status {
         p.change_streams_respect_read_preference_.store(true_value(v));
         return {};
       }},
      {"transactionLifetimeLimitSeconds", true, true,
       [](const server_parameters& p) {
         return bson::value(static_cast<std::int32_t>(p.store_.transaction_lifetime().count()));
       },
       [](server_parameters& p, const bson::value& v) -> denormd::status {
         const auto n = coerce_int(v);
         if (!n) return denormd::fail("Can't coerce value", codes::bad_value);
         // The IDL's `validator: {gte: 1}` (IDLServerParameterWithStorage::addBound).
         if (*n < 1)
           return denormd::fail("Invalid value for parameter transactionLifetimeLimitSeconds: " +
                                    std::to_string(*n) + " is not greater than or equal to 1",
                                codes::bad_value);
         p.store_.set_transaction_lifetime(std::chrono::seconds(*n));
         return {};
       }},
  }};
  for (const auto& p : all) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

denormd::expected<bson::document> server_parameters::get(const bson::document& body) const {
  const bson::value& first = body.fields().front().val;
  bool all = first.is_string() && first.as_string() == "*";
  bool show_details = false;
  if (first.is_document()) {  // GetParameterOptions: {allParameters, showDetails}
    for (const auto& f : first.as_document()) {
      if (f.name != "allParameters" && f.name != "showDetails")
        return denormd::fail("BSON field 'getParameter." + f.name + "' is an unknown field.",
                             40415);
      if (!f.val.is<bool>())
        return denormd::fail("BSON field 'getParameter." + f.name + "' is the wrong type '" +
                                 std::string(bson::type_name(f.val.kind())) +
                                 "', expected type 'bool'",
                             codes::type_mismatch);
      (f.name == "allParameters" ? all : show_details) = f.val.as<bool>();
    }
  }
  bson::document out;
  for (std::string_view name :
       {"featureCompatibilityVersion", "internalChangeStreamRespectsReadPreference",
        "transactionLifetimeLimitSeconds"}) {
    if (!all && !body.contains(name)) continue;
    const parameter* p = find(name);
    if (show_details) {
      out.append(std::string(name), bson::document{{"value", p->value(*this)},
                                                   {"settableAtRuntime", p->settable_at_runtime},
                                                   {"settableAtStartup", p->settable_at_startup}});
    } else {
      out.append(std::string(name), p->value(*this));
    }
  }
  if (out.empty()) return denormd::fail("no option found to get", codes::invalid_options);
  return out;
}

denormd::expected<bson::document> server_parameters::set(const bson::document& body) {
  std::map<std::string, const bson::value*, std::less<>> to_set;
  for (std::size_t i = 1; i < body.size(); ++i) {
    const auto& f = body.fields()[i];
    if (is_generic_argument(f.name)) continue;
    const parameter* p = find(f.name);
    if (p == nullptr)
      return denormd::fail(
          "attempted to set unrecognized parameter [" + f.name + "], use help:true to see options ",
          codes::invalid_options);
    if (!p->settable_at_runtime)
      return denormd::fail("not allowed to change [" + f.name + "] at runtime",
                           codes::illegal_operation);
    if (auto it = to_set.find(f.name); it != to_set.end())
      return denormd::fail("attempted to set parameter [" + f.name +
                               "] twice in the same setParameter command, once to value: [" +
                               element_string(f.name, *it->second) + "], and once to value: [" +
                               element_string(f.name, f.val) + "]",
                           codes::invalid_options);
    to_set.emplace(f.name, &f.val);
  }
  bson::document out;
  for (const auto& [name, v] : to_set) {
    const parameter* p = find(name);
    if (out.empty()) out.append("was", p->value(*this));
    if (auto ok = p->set(*this, *v); !ok) return ok.error();
  }
  if (to_set.empty())
    return denormd::fail("no option found to set, use help:true to see options ",
                         codes::invalid_options);
  return out;
}

}  // namespace mongo_emulator
