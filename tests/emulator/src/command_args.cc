#include "command_args.h"

#include <cmath>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

using denormd::fail;

std::string command_name(const bson::document& body) {
  return body.empty() ? std::string() : body.fields().front().name;
}

denormd::unexpected<denormd::error> wrong_type(const bson::document& body, std::string_view field,
                                               const bson::value& v, std::string_view expected) {
  return fail("BSON field '" + command_name(body) + "." + std::string(field) +
                  "' is the wrong type '" + std::string(bson::type_name(v.kind())) +
                  "', expected " + std::string(expected),
              codes::type_mismatch);
}

}  // namespace

denormd::expected<std::string> collection_arg(const bson::document& body) {
  const auto& v = body.fields().front().val;
  if (!v.is_string())
    return fail("collection name has invalid type " + std::string(bson::type_name(v.kind())),
                codes::invalid_namespace);
  const std::string& name = v.as_string();
  if (name.empty() || name.find('\0') != std::string::npos || name.front() == '.' ||
      name.find('$') != std::string::npos)
    return fail("Invalid namespace specified '" + name + "'", codes::invalid_namespace);
  return name;
}

denormd::expected<std::optional<std::int64_t>> int_arg(const bson::document& body,
                                                       std::string_view field) {
  const auto* v = body.get(field);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>{};
  if (v->is<std::int32_t>()) return std::optional<std::int64_t>{v->as<std::int32_t>()};
  if (v->is<std::int64_t>()) return std::optional<std::int64_t>{v->as<std::int64_t>()};
  if (v->is<double>() || v->is<bson::decimal128>()) {
    const double d = v->to_double();
    if (std::isfinite(d) && d == std::floor(d))
      return std::optional<std::int64_t>{static_cast<std::int64_t>(d)};
    return fail("Expected an integer for '" + std::string(field) + "'", codes::bad_value);
  }
  return wrong_type(body, field, *v, "types '[long, int, decimal, double]'");
}

denormd::expected<std::optional<bool>> bool_arg(const bson::document& body,
                                                std::string_view field) {
  const auto* v = body.get(field);
  if (v == nullptr || v->is_null()) return std::optional<bool>{};
  if (v->is<bool>()) return std::optional<bool>{v->as<bool>()};
  if (v->is_number()) return std::optional<bool>{v->to_double() != 0};
  return wrong_type(body, field, *v, "type 'bool'");
}

denormd::expected<const bson::document*> document_arg(const bson::document& body,
                                                      std::string_view field) {
  const auto* v = body.get(field);
  if (v == nullptr || v->is_null()) return static_cast<const bson::document*>(nullptr);
  if (!v->is_document()) return wrong_type(body, field, *v, "type 'object'");
  return &v->as_document();
}

denormd::expected<const bson::array*> array_arg(const bson::document& body,
                                                std::string_view field) {
  const auto* v = body.get(field);
  if (v == nullptr) return static_cast<const bson::array*>(nullptr);
  if (!v->is_array()) return wrong_type(body, field, *v, "type 'array'");
  return &v->as_array();
}

denormd::expected<std::optional<std::string>> string_arg(const bson::document& body,
                                                         std::string_view field) {
  const auto* v = body.get(field);
  if (v == nullptr || v->is_null()) return std::optional<std::string>{};
  if (!v->is_string()) return wrong_type(body, field, *v, "type 'string'");
  return std::optional<std::string>{v->as_string()};
}

bson::document cursor_reply(std::int64_t id, const std::string& ns, bson::array batch, bool first,
                            const bson::document* post_batch_resume_token,
                            std::optional<bson::timestamp> at_cluster_time) {
  bson::document c;
  c.append(first ? "firstBatch" : "nextBatch", std::move(batch));
  if (post_batch_resume_token != nullptr)
    c.append("postBatchResumeToken", *post_batch_resume_token);
  if (at_cluster_time) c.append("atClusterTime", *at_cluster_time);
  c.append("id", id);
  c.append("ns", ns);
  bson::document reply;
  reply.append("cursor", std::move(c));
  reply.append("ok", 1.0);
  return reply;
}

bool secondary_ok(const bson::document& body) {
  const auto* pref = body.get("$readPreference");
  if (pref == nullptr || !pref->is_document()) return false;
  const auto* mode = pref->as_document().get("mode");
  return mode != nullptr && mode->is_string() && mode->as_string() != "primary";
}

}  // namespace mongo_emulator
