#include "mongo/driver_error.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace denormd::mongo {

namespace {

// Unauthorized messages echo the command, which may be a whole batch of writes.
constexpr std::size_t quoted_message_limit = 300;

std::string clipped(const std::string& text) {
  if (text.size() <= quoted_message_limit) return text;
  std::size_t end = quoted_message_limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;  // not inside a UTF-8 sequence
  return text.substr(0, end) + "...";
}

// The command's name and the collection it names (its first value, when a string) in
// MongoDB's "not authorized on DB to execute command { NAME: "COLL", ... }".
struct refused_command {
  std::string db;
  std::string name;
  std::string coll;
  std::string_view rest;  // the rest of the echoed command
};

std::optional<refused_command> parse_refused(std::string_view m) {
  constexpr std::string_view on = "not authorized on ";
  constexpr std::string_view execute = " to execute command { ";
  const auto at = m.find(on);
  const auto cmd = at == std::string_view::npos ? at : m.find(execute, at);
  if (cmd == std::string_view::npos) return std::nullopt;
  refused_command r;
  r.db = std::string(m.substr(at + on.size(), cmd - at - on.size()));
  std::string_view body = m.substr(cmd + execute.size());
  const auto colon = body.find(": ");
  if (colon == std::string_view::npos || r.db.empty()) return std::nullopt;
  r.name = std::string(body.substr(0, colon));
  body.remove_prefix(colon + 2);
  if (!body.empty() && body.front() == '"') {
    std::size_t i = 1;
    for (; i < body.size() && body[i] != '"'; ++i) {
      if (body[i] == '\\' && i + 1 < body.size()) ++i;
      r.coll += body[i];
    }
    body.remove_prefix(std::min(i + 1, body.size()));
  }
  r.rest = body;
  return r;
}

// The actions a command needs, as MongoDB's authorization checks ask for them (for the
// commands denormd runs); "" for one it does not know.
std::string actions_of(const refused_command& c) {
  const auto has = [&](std::string_view s) { return c.rest.find(s) != std::string_view::npos; };
  const std::string& n = c.name;
  if (n == "find" || n == "count" || n == "distinct") return "find";
  if (n == "aggregate") return has("$changeStream") ? "changeStream and find" : "find";
  if (n == "insert") return "insert";
  if (n == "update") return has("upsert: true") ? "update and insert" : "update";
  if (n == "delete") return "remove";
  if (n == "findAndModify") {
    if (has("remove: true")) return "find and remove";
    return has("upsert: true") ? "find, update and insert" : "find and update";
  }
  if (n == "listCollections" || n == "listIndexes" || n == "collMod") return n;
  if (n == "createIndexes") return "createIndex";
  if (n == "create") return "createCollection";
  if (n == "drop") return "dropCollection";
  return "";
}

}  // namespace

bool driver_error::has_label(std::string_view label) const {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

bool driver_error::transient() const {
  if (from == origin::network) return true;
  if (has_label("RetryableWriteError") || has_label("ResumableChangeStreamError") ||
      has_label("TransientTransactionError")) {
    return true;
  }
  // Server codes the specifications treat as "try again": network-ish, elections,
  // shutdowns, not-primary, time limits.
  static constexpr std::uint32_t transient_codes[] = {
      6,  7,   89,    91,  189, 262, 9001, 10107, 11600, 11602, 13435, 13436,
      63, 150, 13388, 234, 133, 43,  50,   64,    112,   117,   251};
  return from == origin::server && std::find(std::begin(transient_codes), std::end(transient_codes),
                                             code) != std::end(transient_codes);
}

bool driver_error::history_lost() const {
  return from == origin::server && (code == 286 || code == 280 || code == 260);
}

bool driver_error::authentication_failed() const {
  return from == origin::server && code == authentication_failed_code;
}

bool driver_error::unauthorized() const {
  return from == origin::server && code == unauthorized_code;
}

std::string driver_error::needed_privilege() const {
  if (!unauthorized()) return "";
  const auto c = parse_refused(message);
  if (!c) return "";
  const std::string actions = actions_of(*c);
  if (actions.empty()) return "";
  return actions + " on " + (c->coll.empty() ? "the database " + c->db : c->db + "." + c->coll);
}

std::string driver_error::metric_code() const {
  if (from == origin::network) return "network";
  if (from == origin::client && code == lease_fenced_code) return "lease_fenced";
  if (from == origin::client && code == lease_expired_code) return "lease_expired";
  if (from == origin::client && code == lease_moved_code) return "lease_moved";
  return std::to_string(code);
}

std::string driver_error::to_string() const {
  std::string s = message;
  if (const std::string needs = needed_privilege(); !needs.empty())
    s = "the user's roles do not grant " + needs + ": " + clipped(message);
  if (from == origin::network) {
    s += " (network)";
  } else if (code != 0) {
    s += " (code " + std::to_string(code) + ")";
  }
  for (const auto& l : labels)
    s += " [" + l + "]";
  return s;
}

}  // namespace denormd::mongo
