#include "option_refusals.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

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

// How MongoDB's IDL parsers (the commands declared `strict: true`) refuse a field they do not
// declare.
denormd::unexpected<denormd::error> unknown_field(std::string_view command,
                                                  std::string_view where) {
  return denormd::fail(
      "BSON field '" + std::string(command) + "." + std::string(where) + "' is an unknown field.",
      codes::idl_unknown_field);
}

// safeBool: numbers count by their truth, like MongoDB's IDL.
bool truthy(const bson::value& v) {
  if (v.is<bool>()) return v.as<bool>();
  if (v.is_number()) return v.to_double() != 0;
  return !v.is_null();
}

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool is_generic_argument(std::string_view name) {
  return one_of(name, {"$db",
                       "$audit",
                       "$client",
                       "$clusterTime",
                       "$configServerState",
                       "$configTime",
                       "$oplogQueryData",
                       "$queryOptions",
                       "$readPreference",
                       "$replData",
                       "$topologyTime",
                       "allowImplicitCollectionCreation",
                       "apiDeprecationErrors",
                       "apiStrict",
                       "apiVersion",
                       "autocommit",
                       "clientOperationKey",
                       "comment",
                       "coordinator",
                       "databaseVersion",
                       "lsid",
                       "maxTimeMS",
                       "maxTimeMSOpOnly",
                       "mayBypassWriteBlocking",
                       "readConcern",
                       "shardVersion",
                       "startTransaction",
                       "stmtId",
                       "tracking_info",
                       "txnNumber",
                       "txnRetryCounter",
                       "writeConcern"});
}

namespace {

// The session fields of a transaction statement, with MongoDB's codes
// (initializeOperationSessionInfo); the transaction's own checks are the dispatcher's.
denormd::status check_transaction(const bson::document& body) {
  const auto* autocommit = body.get("autocommit");
  const auto* start = body.get("startTransaction");
  if (autocommit == nullptr) {
    if (start == nullptr) return {};
    return denormd::fail(
        "'startTransaction' field requires 'autocommit' field to also be specified",
        codes::invalid_options);
  }
  if (!body.contains("txnNumber")) {
    return denormd::fail("'autocommit' field requires a transaction number to also be specified",
                         codes::invalid_options);
  }
  if (truthy(*autocommit))
    return denormd::fail("Specifying autocommit=true is not allowed.", codes::invalid_options);
  if (start != nullptr && !truthy(*start))
    return denormd::fail("Specifying startTransaction=false is not allowed.",
                         codes::invalid_options);
  return {};
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

// validationLevel and validationAction: MongoDB's enumerations. Only the empty validator is
// implemented, and without a validator they change nothing, on MongoDB too.
denormd::status check_validation_enum(std::string_view command, const bson::document& body,
                                      std::string_view field,
                                      std::initializer_list<std::string_view> allowed) {
  const auto* v = body.get(field);
  if (v == nullptr) return {};
  const std::string path = std::string(command) + "." + std::string(field);
  if (!v->is_string()) {
    return denormd::fail("BSON field '" + path + "' is the wrong type '" +
                             std::string(bson::type_name(v->kind())) + "', expected type 'string'",
                         codes::type_mismatch);
  }
  if (one_of(v->as_string(), allowed)) return {};
  return denormd::fail(
      "Enumeration value '" + v->as_string() + "' for field '" + path + "' is not a valid value.",
      codes::bad_value);
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
    if ((f.name == "capped" && truthy(f.val)) || f.name == "cappedSize" || f.name == "cappedMax")
      return refuse(command, f.name, f.val, "capped collections");
    if (f.name == "recordPreImages")
      return refuse(command, f.name, f.val, "oplog pre-images (use changeStreamPreAndPostImages)");
    if (f.name == "autoIndexId" && !truthy(f.val))
      return refuse(command, f.name, f.val, "collections without an _id index");
    if (f.name == "idIndex") return refuse(command, f.name, f.val, "a custom _id index");
    if (f.name == "storageEngine" || f.name == "indexOptionDefaults")
      return refuse(command, f.name, f.val, "storage engine options");
    if ((f.name == "temp" && truthy(f.val)) || f.name == "flags")
      return refuse(command, f.name, f.val, "deprecated storage flags");
    if (f.name == "dryRun" || f.name == "isTimeseriesNamespace")
      return refuse(command, f.name, f.val, "this collMod option");
  }
  if (auto s =
          check_validation_enum(command, body, "validationLevel", {"off", "strict", "moderate"});
      !s)
    return s;
  return check_validation_enum(command, body, "validationAction", {"error", "warn"});
}

// The fields MongoDB 6.0's IDL declares for the strictly parsed commands the emulator checks
// (create.idl, coll_mod.idl, find_command.idl); anything else fails with 40415.
denormd::status check_known_fields(std::string_view command, const bson::document& body,
                                   std::initializer_list<std::string_view> known) {
  for (std::size_t i = 1; i < body.size(); ++i) {
    const auto& name = body.fields()[i].name;
    if (!one_of(name, known) && !is_generic_argument(name)) return unknown_field(command, name);
  }
  return {};
}

denormd::status check_create(const bson::document& body) {
  if (auto s = check_known_fields("create", body,
                                  {"capped",
                                   "autoIndexId",
                                   "idIndex",
                                   "size",
                                   "max",
                                   "storageEngine",
                                   "validator",
                                   "validationLevel",
                                   "validationAction",
                                   "indexOptionDefaults",
                                   "viewOn",
                                   "pipeline",
                                   "collation",
                                   "changeStreamPreAndPostImages",
                                   "timeseries",
                                   "clusteredIndex",
                                   "recordPreImages",
                                   "temp",
                                   "flags",
                                   "expireAfterSeconds",
                                   "encryptedFields"});
      !s)
    return s;
  return check_collection_options("create", body);
}

// collMod's `index`: only `hidden` is implemented (ddl_commands.cc); the others change how
// documents are checked or kept.
denormd::status check_coll_mod_index(const bson::value& index) {
  if (!index.is_document()) {
    return denormd::fail("BSON field 'collMod.index' is the wrong type '" +
                             std::string(bson::type_name(index.kind())) +
                             "', expected type 'object'",
                         codes::type_mismatch);
  }
  for (const auto& f : index.as_document()) {
    if (!one_of(f.name, {"name", "keyPattern", "expireAfterSeconds", "hidden", "unique",
                         "prepareUnique", "forceNonUnique"}))
      return unknown_field("collMod", "index." + f.name);
  }
  for (const auto& f : index.as_document()) {
    if (f.name == "expireAfterSeconds")
      return refuse("collMod", "index." + f.name, f.val, "TTL indexes");
    if (f.name == "unique" || f.name == "prepareUnique" || f.name == "forceNonUnique")
      return refuse("collMod", "index." + f.name, f.val, "converting indexes to or from unique");
  }
  return {};
}

denormd::status check_coll_mod(const bson::document& body) {
  if (auto s = check_known_fields(
          "collMod", body,
          {"index", "validator", "validationLevel", "validationAction", "viewOn", "pipeline",
           "recordPreImages", "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries",
           "isTimeseriesNamespace", "dryRun", "cappedSize", "cappedMax"});
      !s)
    return s;
  if (const auto* index = body.get("index")) {
    if (auto s = check_coll_mod_index(*index); !s) return s;
  }
  return check_collection_options("collMod", body);
}

denormd::status check_find(const bson::document& body) {
  if (auto s = check_known_fields("find", body,
                                  {"filter",
                                   "projection",
                                   "sort",
                                   "hint",
                                   "collation",
                                   "skip",
                                   "limit",
                                   "batchSize",
                                   "ntoreturn",
                                   "singleBatch",
                                   "allowDiskUse",
                                   "min",
                                   "max",
                                   "returnKey",
                                   "showRecordId",
                                   "tailable",
                                   "oplogReplay",
                                   "noCursorTimeout",
                                   "awaitData",
                                   "allowPartialResults",
                                   "let",
                                   "options",
                                   "term",
                                   "readOnce",
                                   "allowSpeculativeMajorityRead",
                                   "$_requestResumeToken",
                                   "$_resumeAfter",
                                   "runtimeConstants",
                                   "collectionUUID",
                                   "encryptionInformation"});
      !s)
    return s;
  for (const auto& f : body) {
    // Tailable cursors need capped collections, which the emulator does not have.
    if ((f.name == "tailable" || f.name == "awaitData") && truthy(f.val))
      return refuse("find", f.name, f.val, "tailable cursors");
    if ((f.name == "returnKey" || f.name == "showRecordId" || f.name == "oplogReplay" ||
         f.name == "readOnce" || f.name == "allowSpeculativeMajorityRead" ||
         f.name == "$_requestResumeToken") &&
        truthy(f.val))
      return refuse("find", f.name, f.val, "this find option");
    if ((f.name == "min" || f.name == "max" || f.name == "$_resumeAfter") &&
        !is_empty_document(f.val))
      return refuse("find", f.name, f.val, "index bounds and resumable scans");
    if (one_of(f.name, {"ntoreturn", "options", "term", "runtimeConstants", "collectionUUID",
                        "encryptionInformation"}))
      return refuse("find", f.name, f.val, "this find option");
  }
  return {};
}

std::string timestamp_text(bson::timestamp ts) {
  return "Timestamp(" + std::to_string(ts.t) + ", " + std::to_string(ts.i) + ")";
}

// bsonExtractTypedField's message for a field of the wrong type.
denormd::unexpected<denormd::error> wrong_type(std::string_view field, std::string_view expected,
                                               const bson::value& v) {
  return denormd::fail("\"" + std::string(field) + "\" had the wrong type. Expected " +
                           std::string(expected) + ", found " +
                           std::string(bson::type_name(v.kind())),
                       codes::type_mismatch);
}

}  // namespace

denormd::expected<read_concern> parse_read_concern(const bson::document& body) {
  read_concern rc;
  const auto* v = body.get("readConcern");
  if (v == nullptr) return rc;
  if (!v->is_document())
    return denormd::fail("readConcern field should be an object", codes::failed_to_parse);
  bool after_cluster_time = false;
  bool after_op_time = false;
  for (const auto& f : v->as_document()) {
    if (f.name == "level") {
      if (!f.val.is_string()) return wrong_type(f.name, "string", f.val);
      if (!one_of(f.val.as_string(),
                  {"local", "majority", "linearizable", "available", "snapshot"}))
        return denormd::fail(
            "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', "
            "or 'snapshot'",
            codes::failed_to_parse);
      rc.level = f.val.as_string();
    } else if (f.name == "atClusterTime" || f.name == "afterClusterTime") {
      if (!f.val.is<bson::timestamp>()) return wrong_type(f.name, "timestamp", f.val);
      if (f.val.as<bson::timestamp>() == bson::timestamp{})
        return denormd::fail(f.name + " cannot be a null timestamp", codes::invalid_options);
      if (f.name == "atClusterTime") {
        rc.at_cluster_time = f.val.as<bson::timestamp>();
      } else {
        after_cluster_time = true;
      }
    } else if (f.name == "afterOpTime") {
      after_op_time = true;
    } else if (f.name != "provenance") {
      return denormd::fail("Unrecognized option in readConcern: " + f.name, codes::invalid_options);
    }
  }
  if (after_cluster_time && after_op_time)
    return denormd::fail("Can not specify both afterClusterTime and afterOpTime",
                         codes::invalid_options);
  if (after_cluster_time && rc.at_cluster_time)
    return denormd::fail("Can not specify both afterClusterTime and atClusterTime",
                         codes::invalid_options);
  if (after_op_time && rc.snapshot())
    return denormd::fail("afterOpTime field cannot be set if level is equal to snapshot",
                         codes::invalid_options);
  if (rc.at_cluster_time && !rc.snapshot())
    return denormd::fail("atClusterTime field can be set only if level is equal to snapshot",
                         codes::invalid_options);
  return rc;
}

denormd::expected<bson::timestamp> snapshot_read_time(std::string_view command,
                                                      const read_concern& rc, bson::timestamp now) {
  if (!rc.at_cluster_time || *rc.at_cluster_time == now) return now;
  if (*rc.at_cluster_time > now) {
    // waitForReadConcernImpl's check (read_concern_mongod.cpp).
    return denormd::fail(
        "readConcern atClusterTime value must not be greater than the current "
        "clusterTime. Requested clusterTime: { ts: " +
            timestamp_text(*rc.at_cluster_time) +
            " }; current clusterTime: { ts: " + timestamp_text(now) + " }",
        codes::invalid_options);
  }
  return refuse(command, "readConcern.atClusterTime", bson::value(*rc.at_cluster_time),
                "reads at a past cluster time (only the current one, " + timestamp_text(now) +
                    ", can be read)");
}

denormd::status refuse_unsupported_options(std::string_view command, const bson::document& body) {
  if (auto s = check_transaction(body); !s) return s;
  if (auto rc = parse_read_concern(body); !rc) return rc.error();
  if (command == "create") {
    if (auto s = check_create(body); !s) return s;
  } else if (command == "collMod") {
    if (auto s = check_coll_mod(body); !s) return s;
  } else if (command == "find") {
    if (auto s = check_find(body); !s) return s;
  }
  if (auto s = check_collation(command, "collation", body.get("collation")); !s) return s;
  if (command == "update") return check_each_collation(command, body, "updates");
  if (command == "delete") return check_each_collation(command, body, "deletes");
  if (command == "createIndexes") return check_each_collation(command, body, "indexes");
  return {};
}

}  // namespace mongo_emulator
