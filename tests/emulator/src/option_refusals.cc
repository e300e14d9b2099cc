#include "option_refusals.h"

#include <string>

#include "error_codes.h"
#include "value_text.h"

namespace mongo_emulator {

namespace {

denormd::unexpected<denormd::error> refuse(std::string_view command, const std::string& where,
                                           const bson::value& v, std::string_view why) {
  return denormd::fail("mongo-emulator does not implement " + std::string(why) + ": '" +
                           std::string(command) + "." + where + "' is " + engine::value_text(v) +
                           ". It is refused rather than ignored (see tests/emulator/README.md).",
                       codes::not_implemented);
}

// Only the simple (binary) collation is implemented; any other compares strings differently.
denormd::status check_collation(std::string_view command, const std::string& where,
                                const bson::value* v) {
  if (v == nullptr) return {};
  if (!v->is_document()) {
    return denormd::fail("BSON field '" + std::string(command) + "." + where +
                             "' is the wrong type '" + std::string(bson::type_name(v->kind())) +
                             "', expected type 'object'",
                         codes::type_mismatch);
  }
  const auto& d = v->as_document();
  const auto* locale = d.get("locale");
  if (d.size() == 1 && locale != nullptr && locale->is_string() && locale->as_string() == "simple")
    return {};
  return refuse(command, where, *v, "collations other than {locale: \"simple\"}");
}

// The collation of each statement of a write (`updates`/`deletes`) or index spec (`indexes`,
// which also may not ask for a TTL).
denormd::status check_each_collation(std::string_view command, const bson::document& body,
                                     std::string_view array) {
  const auto* items = body.get(array);
  if (items == nullptr || !items->is_array()) return {};
  const auto& list = items->as_array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_document()) continue;
    const auto& item = list[i].as_document();
    if (const auto* collation = item.get("collation")) {
      const std::string where = std::string(array) + "." + std::to_string(i) + ".collation";
      if (auto s = check_collation(command, where, collation); !s) return s;
    }
    if (const auto* ttl = item.get("expireAfterSeconds"); ttl != nullptr && array == "indexes") {
      return refuse(command, std::string(array) + "." + std::to_string(i) + ".expireAfterSeconds",
                    *ttl, "TTL indexes");
    }
  }
  return {};
}

bool is_empty_document(const bson::value& v) {
  return v.is_document() && v.as_document().empty();
}

// create and collMod: views, validators and the collection types the storage does not have.
denormd::status check_collection_options(std::string_view command, const bson::document& body) {
  for (const auto& f : body) {
    if (f.name == "viewOn" || f.name == "pipeline") return refuse(command, f.name, f.val, "views");
    if (f.name == "validator" && !is_empty_document(f.val))
      return refuse(command, f.name, f.val, "schema validation");
    if (f.name == "timeseries") return refuse(command, f.name, f.val, "time series collections");
    if (f.name == "clusteredIndex") return refuse(command, f.name, f.val, "clustered collections");
    if (f.name == "expireAfterSeconds")
      return refuse(command, f.name, f.val, "collections that expire documents");
    if (f.name == "encryptedFields") return refuse(command, f.name, f.val, "queryable encryption");
  }
  return {};
}

}  // namespace

denormd::status refuse_unsupported_options(std::string_view command, const bson::document& body) {
  if (auto s = check_collation(command, "collation", body.get("collation")); !s) return s;
  if (command == "update") return check_each_collation(command, body, "updates");
  if (command == "delete") return check_each_collation(command, body, "deletes");
  if (command == "createIndexes") return check_each_collation(command, body, "indexes");
  if (command == "create" || command == "collMod") return check_collection_options(command, body);
  return {};
}

}  // namespace mongo_emulator
