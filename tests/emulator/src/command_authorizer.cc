#include "command_authorizer.h"

#include <algorithm>
#include <cstdio>

#include "authorization_rules.h"
#include "command.h"
#include "error_codes.h"

namespace mongo_emulator {

namespace {

using rp = resource_pattern;

constexpr std::size_t max_cursor_owners = 100000;
constexpr std::size_t max_sessions = 100000;
constexpr auto session_idle_limit = std::chrono::minutes(30);  // localLogicalSessionTimeout

std::string hex_text(const std::vector<std::uint8_t>& data, std::size_t n, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n && i < data.size(); ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

// StringBuilder::appendDoubleNice: %.16g, with ".0" when that shows no '.', 'E' or 'N'.
std::string double_text(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.16g", d);
  std::string out = buf;
  if (out.find_first_of(".EN") == std::string::npos) out += ".0";
  return out;
}

std::string string_text(const std::string& s) {
  if (s.size() + 1 > 160) return "\"" + s.substr(0, 150) + "...\"";
  return "\"" + s + "\"";
}

std::string binary_text(const bson::binary& b) {
  if (b.subtype == 4 && b.data.size() == 16) {
    const std::string h = hex_text(b.data, 16, false);
    return "UUID(\"" + h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" +
           h.substr(16, 4) + "-" + h.substr(20) + "\")";
  }
  const std::string prefix = "BinData(" + std::to_string(b.subtype) + ", ";
  if (b.data.size() > 80) return prefix + hex_text(b.data, 70, true) + "...)";
  return prefix + hex_text(b.data, b.data.size(), true) + ")";
}

void write_value(std::string& out, const bson::value& v, int depth);

void write_fields(std::string& out, const bson::document& d, int depth) {
  if (d.empty()) {
    out += "{}";
    return;
  }
  out += "{ ";
  bool first = true;
  for (const auto& f : d) {
    if (!first) out += ", ";
    first = false;
    out += f.name + ": ";
    write_value(out, f.val, depth + 1);
  }
  out += " }";
}

void write_elements(std::string& out, const bson::array& a, int depth) {
  if (a.empty()) {
    out += "[]";
    return;
  }
  out += "[ ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i > 0) out += ", ";
    write_value(out, a[i], depth + 1);
  }
  out += " ]";
}

// BSONElement::toString without the field name.
void write_value(std::string& out, const bson::value& v, int depth) {
  if (depth > 100) {
    out += "...";
    return;
  }
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bson::document>) {
          write_fields(out, x, depth);
        } else if constexpr (std::is_same_v<T, bson::array>) {
          write_elements(out, x, depth);
        } else if constexpr (std::is_same_v<T, double>) {
          out += double_text(x);
        } else if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
          out += std::to_string(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out += string_text(x);
        } else if constexpr (std::is_same_v<T, bson::symbol>) {
          out += string_text(x.text);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, bson::binary>) {
          out += binary_text(x);
        } else if constexpr (std::is_same_v<T, bson::oid>) {
          out += "ObjectId('" + x.to_hex() + "')";
        } else if constexpr (std::is_same_v<T, bson::date_time>) {
          out += "new Date(" + std::to_string(x.millis) + ")";
        } else if constexpr (std::is_same_v<T, bson::timestamp>) {
          out += "Timestamp(" + std::to_string(x.t) + ", " + std::to_string(x.i) + ")";
        } else if constexpr (std::is_same_v<T, bson::regex>) {
          out += "/" + x.pattern + "/" + x.options;
        } else if constexpr (std::is_same_v<T, bson::decimal128>) {
          out += "NumberDecimal(\"" + x.to_string() + "\")";
        } else if constexpr (std::is_same_v<T, bson::code>) {
          out += x.text.size() + 1 > 80 ? x.text.substr(0, 70) + "..." : x.text;
        } else if constexpr (std::is_same_v<T, bson::null_t>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bson::undefined_t>) {
          out += "undefined";
        } else if constexpr (std::is_same_v<T, bson::min_key>) {
          out += "MinKey";
        } else if constexpr (std::is_same_v<T, bson::max_key>) {
          out += "MaxKey";
        }
      },
      v.data());
}

// The command as MongoDB's Unauthorized message prints it: the body without the document
// sequences (OpMsgRequest::body never holds them), sensitive fields snipped ("xxx").
std::string logged_command(const request& req) {
  bson::document body;
  for (const auto& f : req.body) {
    if (std::find(req.sequence_fields.begin(), req.sequence_fields.end(), f.name) !=
        req.sequence_fields.end())
      continue;
    const bool sensitive =
        f.name == "pwd" && (req.command == "createUser" || req.command == "updateUser");
    body.append(f.name, sensitive ? bson::value("xxx") : f.val);
  }
  return shell_text(body);
}

// AuthorizationSession::_getDefaultPrivileges under the localhost exception.
const privilege_set& localhost_privileges() {
  static const privilege_set set = [] {
    privilege_set s;
    s.add(privilege{rp::database("admin"), actions_of({"createUser", "grantRole"})});
    s.add(privilege{rp::database("$external"), actions_of({"createUser"})});
    s.add(
        privilege{rp::cluster(), actions_of({"addShard", "replSetConfigure", "replSetGetStatus"})});
    return s;
  }();
  return set;
}

bool is_hello(std::string_view name) {
  return name == "hello" || name == "isMaster" || name == "ismaster";
}

bool true_value(const bson::value* v) {
  if (v == nullptr || v->is_null() || v->is<bson::undefined_t>()) return false;
  if (v->is<bool>()) return v->as<bool>();
  if (v->is_number()) return v->to_double() != 0;
  return true;
}

std::string session_key(const bson::document& lsid) {
  const auto* id = lsid.get("id");
  if (id == nullptr || !id->is<bson::binary>()) return {};
  const auto& bytes = id->as<bson::binary>().data;
  return std::string(bytes.begin(), bytes.end());
}

void insert_before_ok(bson::document& reply, bson::document extra) {
  auto& fields = reply.fields();
  auto at =
      std::find_if(fields.begin(), fields.end(), [](const auto& f) { return f.name == "ok"; });
  fields.insert(at, std::make_move_iterator(extra.fields().begin()),
                std::make_move_iterator(extra.fields().end()));
}

}  // namespace

std::string shell_text(const bson::document& doc) {
  std::string out;
  write_fields(out, doc, 0);
  return out;
}

command_authorizer::command_authorizer(user_registry& users, bool enforce, bool localhost_bypass)
    : users_(users), enforce_(enforce), localhost_bypass_(localhost_bypass) {}

auth_session& command_authorizer::session(connection_info& conn) {
  if (!conn.auth) conn.auth = std::make_shared<auth_session>();
  return *conn.auth;
}

// checkAuthorizationImplPreParse, then the command's own check (CommandInvocation::
// checkAuthorization), with MongoDB's messages.
std::optional<denormd::error> command_authorizer::check(const request& req, connection_info& conn) {
  if (!enforce_) return std::nullopt;
  const authorization_rule* rule = find_authorization_rule(req.command);
  if (rule == nullptr)
    return denormd::error{"mongo-emulator has no authorization rule for '" + req.command +
                              "' (tests/emulator/src/authorization_rules.cc)",
                          codes::not_implemented};
  if (!rule->requires_auth) return std::nullopt;
  auth_session& s = session(conn);
  const resolved_roles& resolved = s.resolved(users_);  // logs out a dropped user
  const bool bypass = !s.user() && localhost_bypass_ && conn.loopback && users_.empty();
  if (!s.user() && !bypass)
    return denormd::error{
        "command " + std::string(canonical_command_name(req.command)) + " requires authentication",
        codes::unauthorized};
  record_session(req.body, s.user() ? s.user()->to_string() : std::string());
  if (!rule->check) return std::nullopt;
  const authorization_input in{req, bypass ? localhost_privileges() : resolved.privileges, s.user(),
                               resolved.roles,
                               [this](std::int64_t id) { return cursor_owner(id); }};
  auto verdict = rule->check(in);
  if (verdict && verdict->message.empty())
    verdict->message = "not authorized on " + req.db + " to execute command " + logged_command(req);
  return verdict;
}

void command_authorizer::after(const request& req, connection_info& conn, bson::document& reply) {
  if (is_hello(req.command)) answer_hello(req, conn, reply);
  if (!enforce_) return;
  auth_session& s = session(conn);
  record_cursors(req, s.user() ? s.user()->to_string() : std::string(), reply);
  if (req.command == "listCollections" || req.command == "listDatabases") {
    const bool bypass = !s.user() && localhost_bypass_ && conn.loopback && users_.empty();
    filter_listing(req, bypass ? localhost_privileges() : s.resolved(users_).privileges, reply);
  }
}

// hello's saslSupportedMechs ("db.user": the mechanisms the user has credentials for; nothing
// for an unknown user) and speculativeAuthenticate (a saslStart with `db`; its reply, or
// nothing when it fails, as MongoDB's doSpeculativeSaslStart).
void command_authorizer::answer_hello(const request& req, connection_info& conn,
                                      bson::document& reply) {
  bson::document extra;
  if (const auto* name = req.body.get("saslSupportedMechs"); name != nullptr && name->is_string()) {
    const std::string& text = name->as_string();
    const auto dot = text.find('.');
    const auto user = dot == std::string::npos
                          ? std::nullopt
                          : users_.user(user_name{text.substr(dot + 1), text.substr(0, dot)});
    if (user) {
      bson::array mechanisms;
      for (const auto& [m, c] : user->credentials)
        mechanisms.emplace_back(mechanism_name(m));
      extra.append("saslSupportedMechs", std::move(mechanisms));
    }
  }
  const auto* spec = req.body.get("speculativeAuthenticate");
  if (spec != nullptr && spec->is_document() && !spec->as_document().empty() &&
      spec->as_document().fields().front().name == "saslStart") {
    const auto* db = spec->as_document().get("db");
    if (db != nullptr && db->is_string()) {
      auto started = session(conn).sasl_start(spec->as_document(), db->as_string(), users_);
      if (started) extra.append("speculativeAuthenticate", std::move(started).value());
    }
  }
  if (!extra.empty()) insert_before_ok(reply, std::move(extra));
}

void command_authorizer::record_session(const bson::document& body, const std::string& owner) {
  const auto* lsid = body.get("lsid");
  if (lsid == nullptr || !lsid->is_document()) return;
  std::string key = session_key(lsid->as_document());
  if (key.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  auto [it, inserted] = sessions_.try_emplace(std::move(key));
  if (inserted) {
    it->second.owner = owner;  // the first user of an id owns it
    it->second.lsid = bson::document{{"id", *lsid->as_document().get("id")}};
  }
  it->second.last_used = now;
  if (sessions_.size() > max_sessions) {
    std::erase_if(sessions_,
                  [&](const auto& e) { return now - e.second.last_used > session_idle_limit; });
  }
}

std::vector<bson::document> command_authorizer::own_sessions(
    const std::optional<user_name>& user, const std::vector<bson::document>& lsids) const {
  const std::string owner = user ? user->to_string() : std::string();
  std::vector<bson::document> out;
  std::lock_guard lock(mutex_);
  if (lsids.empty()) {
    for (const auto& [key, use] : sessions_) {
      if (use.owner == owner) out.push_back(use.lsid);
    }
    return out;
  }
  for (const auto& lsid : lsids) {
    const auto it = sessions_.find(session_key(lsid));
    // An id nobody used names no session of anyone: killing it does nothing, as on MongoDB.
    if (it == sessions_.end() || it->second.owner == owner) out.push_back(lsid);
  }
  return out;
}

std::optional<std::string> command_authorizer::cursor_owner(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  const auto it = cursor_owners_.find(id);
  if (it == cursor_owners_.end()) return std::nullopt;
  return it->second;
}

// New cursors get their owner; exhausted and killed ones are forgotten. Cursor ids grow, so
// when the map is full the oldest half goes (cursors idle for ten minutes are reaped anyway).
void command_authorizer::record_cursors(const request& req, const std::string& owner,
                                        const bson::document& reply) {
  std::lock_guard lock(mutex_);
  if (req.command == "killCursors") {
    if (const auto* killed = reply.get("cursorsKilled"); killed != nullptr && killed->is_array()) {
      for (const auto& id : killed->as_array()) {
        if (id.is<std::int64_t>()) cursor_owners_.erase(id.as<std::int64_t>());
      }
    }
    return;
  }
  const auto* id = reply.find_path("cursor.id");
  if (id == nullptr || !id->is<std::int64_t>()) return;
  if (req.command == "getMore") {
    const auto& requested = req.body.fields().front().val;
    if (id->as<std::int64_t>() == 0 && requested.is<std::int64_t>())
      cursor_owners_.erase(requested.as<std::int64_t>());
    return;
  }
  if (id->as<std::int64_t>() == 0) return;
  cursor_owners_[id->as<std::int64_t>()] = owner;
  if (cursor_owners_.size() > max_cursor_owners) {
    auto middle = cursor_owners_.begin();
    std::advance(middle, max_cursor_owners / 2);
    cursor_owners_.erase(cursor_owners_.begin(), middle);
  }
}

// listCollections with authorizedCollections and nameOnly lists the collections the user has
// some privilege on; listDatabases without the listDatabases privilege (or with
// authorizedDatabases: true) the databases it has some privilege in.
void command_authorizer::filter_listing(const request& req, const privilege_set& privileges,
                                        bson::document& reply) const {
  const auto keep = [&](bson::value* list, auto&& wanted) {
    if (list == nullptr || !list->is_array()) return;
    std::erase_if(list->as_array(), [&](const bson::value& v) {
      const auto* name = v.is_document() ? v.as_document().get("name") : nullptr;
      return name == nullptr || !name->is_string() || !wanted(name->as_string());
    });
  };
  if (req.command == "listCollections") {
    if (!true_value(req.body.get("authorizedCollections")) || !true_value(req.body.get("nameOnly")))
      return;
    bson::value* batch = nullptr;
    if (auto* cursor = reply.get("cursor"); cursor != nullptr && cursor->is_document())
      batch = cursor->as_document().get("firstBatch");
    keep(batch, [&](const std::string& coll) {
      return privileges.any_action_on(rp::exact(req.db, coll));
    });
    return;
  }
  const auto* asked = req.body.get("authorizedDatabases");
  const bool authorized_only =
      asked != nullptr ? true_value(asked) : !privileges.allows(rp::cluster(), "listDatabases");
  if (!authorized_only) return;
  keep(reply.get("databases"),
       [&](const std::string& db) { return privileges.any_action_in_db(db); });
}

}  // namespace mongo_emulator
