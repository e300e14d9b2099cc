#include "auth_session.h"

#include "error_codes.h"

namespace mongo_emulator {

namespace {

denormd::unexpected<denormd::error> authentication_failed() {
  return denormd::fail("Authentication failed.", codes::authentication_failed);
}

denormd::unexpected<denormd::error> missing(std::string_view command, std::string_view field) {
  return denormd::fail("BSON field '" + std::string(command) + "." + std::string(field) +
                           "' is missing but a required field",
                       codes::idl_failed_to_parse);
}

// The payload's bytes: BinData, or a base64 string (SaslPayload accepts both).
std::optional<std::string> payload_bytes(const bson::value& payload) {
  if (payload.is<bson::binary>()) {
    const auto& data = payload.as<bson::binary>().data;
    return std::string(data.begin(), data.end());
  }
  if (payload.is_string()) return base64_decode(payload.as_string());
  return std::nullopt;
}

// The reply's payload in the request's form.
bson::value payload_like(const bson::value& request_payload, const std::string& bytes) {
  if (request_payload.is_string()) return bson::value(base64_encode(bytes));
  return bson::value(bson::binary{0, std::vector<std::uint8_t>(bytes.begin(), bytes.end())});
}

}  // namespace

void auth_session::log_out() {
  user_.reset();
  fresh_ = false;
  direct_roles_.clear();
  resolved_ = {};
}

void auth_session::refresh(const user_registry& registry) {
  const std::uint64_t now = registry.generation();
  if (fresh_ && now == generation_) return;
  generation_ = now;
  fresh_ = true;
  direct_roles_.clear();
  resolved_ = {};
  if (!user_) return;
  const auto record = registry.user(*user_);
  if (!record) {
    user_.reset();  // dropped: MongoDB removes it from the session at the next request
    return;
  }
  direct_roles_ = record->roles;
  resolved_ = registry.resolve(direct_roles_);
}

const std::vector<role_name>& auth_session::direct_roles(const user_registry& registry) {
  refresh(registry);
  return direct_roles_;
}

const resolved_roles& auth_session::resolved(const user_registry& registry) {
  refresh(registry);
  return resolved_;
}

denormd::expected<bson::document> auth_session::sasl_start(const bson::document& command,
                                                           const std::string& db,
                                                           const user_registry& registry) {
  const auto* mechanism = command.get("mechanism");
  if (mechanism == nullptr) return missing("saslStart", "mechanism");
  if (!mechanism->is_string())
    return denormd::fail("BSON field 'saslStart.mechanism' is the wrong type '" +
                             std::string(bson::type_name(mechanism->kind())) +
                             "', expected type 'string'",
                         codes::type_mismatch);
  const auto* payload = command.get("payload");
  if (payload == nullptr) return missing("saslStart", "payload");
  const auto m = parse_mechanism(mechanism->as_string());
  if (!m)
    return denormd::fail("Unsupported mechanism '" + mechanism->as_string() +
                             "' on authentication database '" + db + "'",
                         codes::bad_value);
  bool skip_empty_exchange = false;
  if (const auto* options = command.get("options"); options != nullptr && options->is_document()) {
    if (const auto* skip = options->as_document().get("skipEmptyExchange")) {
      if (!skip->is<bool>())
        return denormd::fail("skipEmptyExchange must be boolean", codes::bad_value);
      skip_empty_exchange = skip->as<bool>();
    }
  }
  conversation_ = std::make_unique<scram_conversation>(*m, skip_empty_exchange);
  conversation_db_ = db;
  return sasl_step(*payload, db, registry);
}

denormd::expected<bson::document> auth_session::sasl_continue(const bson::document& command,
                                                              const std::string& db,
                                                              const user_registry& registry) {
  const auto* id = command.get("conversationId");
  if (id == nullptr) return missing("saslContinue", "conversationId");
  const auto* payload = command.get("payload");
  if (payload == nullptr) return missing("saslContinue", "payload");
  if (!id->is_number() || id->to_double() != 1)
    return denormd::fail("sasl: Mismatched conversation id", codes::protocol_error);
  if (conversation_ == nullptr)
    return denormd::fail("No SASL session state found", codes::protocol_error);
  if (db != conversation_db_)
    return denormd::fail("Attempt to switch database target during SASL authentication.",
                         codes::protocol_error);
  return sasl_step(*payload, db, registry);
}

// MongoDB's doSaslStep: any failure of the mechanism is "Authentication failed." and ends the
// conversation; success authenticates the connection as the conversation's user.
denormd::expected<bson::document> auth_session::sasl_step(const bson::value& payload,
                                                          const std::string& db,
                                                          const user_registry& registry) {
  const auto input = payload_bytes(payload);
  if (!input) {
    conversation_.reset();
    return authentication_failed();
  }
  const scram_mechanism m = conversation_->mechanism();
  const auto lookup = [&](std::string_view user) -> std::optional<scram_credentials> {
    const auto record = registry.user(user_name{std::string(user), db});
    if (!record) return std::nullopt;
    const auto it = record->credentials.find(m);
    if (it == record->credentials.end()) return std::nullopt;
    return it->second;
  };
  auto result = conversation_->step(*input, lookup);
  if (!result) {
    conversation_.reset();
    return authentication_failed();
  }
  if (conversation_->succeeded()) {
    user_name name{conversation_->user(), db};
    conversation_.reset();
    if (user_ && *user_ != name) {
      if (user_->db == name.db)
        return denormd::fail(
            "Each client connection may only be authenticated once. "
            "Previously authenticated as: " +
                user_->to_string(),
            5626701);
      return denormd::fail(
          "Client has attempted to authenticate on multiple databases."
          "Already authenticated as: " +
              user_->to_string(),
          5626702);
    }
    user_ = std::move(name);
    fresh_ = false;
  }
  bson::document reply;
  reply.append("conversationId", std::int32_t{1});
  reply.append("done", result->done);
  reply.append("payload", payload_like(payload, result->payload));
  return reply;
}

}  // namespace mongo_emulator
