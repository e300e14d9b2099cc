#pragma once
// One change-stream event, parsed from the server's document into the fields the planner
// uses. A plain value; thread-compatible.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"
#include "mapping/ns.h"

namespace denormd::mapping {

enum class operation {
  insert,
  update,
  replace,
  delete_,
  drop,
  rename,
  drop_database,
  invalidate,
  other
};

// A computed field's expression the server could not evaluate on this event's document
// (`before`: on its pre-image): the planner turns it into a dead letter of each mapping that
// writes from that document, and the field is absent meanwhile (docs/architecture.md,
// "Computed fields").
struct computed_failure {
  std::string key;  // computed_expression::key()
  std::string error;
  bool before = false;
};

struct change_event {
  operation op = operation::other;
  std::string op_name;  // operationType as received
  ns source;
  bson::value id;                               // documentKey._id; null for non-document events
  std::optional<bson::document> full_document;  // absent, or null (document gone since)
  std::optional<bson::document> full_document_before_change;
  // update: the paths in updatedFields, removedFields and truncatedArrays
  std::vector<std::string> touched;
  bson::document token;  // the event's _id (its resume token)
  bson::timestamp cluster_time;
  std::optional<bson::date_time> wall_time;
  std::vector<computed_failure> computed_failures;

  // Validates and takes apart a change event; errors say which field is wrong.
  static expected<change_event> parse(bson::document raw);
  // The same, straight from wire BSON (the daemon's path; parse() goes through it). With
  // `keep`, only those top-level fields of fullDocument and fullDocumentBeforeChange are
  // converted: the planner reads a few fields of documents that may be large.
  static expected<change_event> parse_bson(std::span<const std::uint8_t> bytes,
                                           const std::vector<std::string>* keep = nullptr);

  bool is_document_event() const {
    return op == operation::insert || op == operation::update || op == operation::replace ||
           op == operation::delete_;
  }
};

// A watched path that stands for every path: a computed field reading $$ROOT or $$CURRENT.
inline constexpr std::string_view whole_document_path = "$$ROOT";

// True when any touched path overlaps any of `paths` (whole_document_path overlaps all): with array
// indexes left out (query::field_components), one is a prefix of the other, component by component
// ("address" touches "address.city"; "items.0.status" and "items.3" touch "items.status").
// planner::stream_filter has the server apply the same rule.
bool touches(const std::vector<std::string>& touched, const std::vector<std::string>& paths);

// An event's position in its stream: the resume token's `_data`, which MongoDB encodes so that
// tokens compare in event order (a token without one: its JSON, which is at least stable).
std::string token_position(const bson::document& token);

// The cluster time a resume token is at, read from its `_data` as MongoDB encodes it (a
// KeyString that starts with the timestamp: "82", then 8 hex digits of t and 8 of i). nullopt
// for any other form. Only for tokens stored without their time (by an older denormd).
std::optional<bson::timestamp> token_time(const bson::document& token);

}  // namespace denormd::mapping
