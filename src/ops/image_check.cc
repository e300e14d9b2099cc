#include "ops/image_check.h"

namespace denormd::ops {

namespace {

// The collection's changeStreamPreAndPostImages.enabled; nullopt when it does not exist.
mongo::result<std::optional<bool>> images_enabled(mongo::connection& conn, const mapping::ns& n) {
  auto reply = conn.command(
      n.db, bson::document{{"listCollections", 1}, {"filter", bson::document{{"name", n.coll}}}});
  if (!reply) return reply.error();
  const bson::value* batch = reply->find_path("cursor.firstBatch");
  if (batch == nullptr || !batch->is_array() || batch->as_array().empty())
    return std::optional<bool>{};
  const bson::value& first = batch->as_array().front();
  const bson::value* on =
      first.is_document()
          ? first.as_document().find_path("options.changeStreamPreAndPostImages.enabled")
          : nullptr;
  return std::optional<bool>(on != nullptr && on->is<bool>() && on->as<bool>());
}

}  // namespace

std::vector<image_problem> check_images(mongo::connection& conn, const mapping::planner& planner) {
  std::vector<image_problem> out;
  for (const auto& source : planner.source_namespaces()) {
    const mapping::stream_images need = planner.needs_images(source);
    if (!need.before && !need.after) continue;
    std::string users;
    for (const auto& m : planner.mappings()) {
      if (m.source == source && m.as<mapping::aggregate_kind>() != nullptr)
        users += (users.empty() ? "" : ", ") + m.name;
    }
    auto enabled = images_enabled(conn, source);
    if (!enabled) {
      // Not fatal: a server that is down at start is waited for, as always.
      out.push_back({false, "cannot tell whether " + source.full() +
                                " keeps pre- and post-images (needed by " + users +
                                "): " + enabled.error().to_string()});
      continue;
    }
    if (*enabled && **enabled) continue;
    const std::string fix = "db.getSiblingDB(\"" + source.db + "\").runCommand({collMod: \"" +
                            source.coll + "\", changeStreamPreAndPostImages: {enabled: true}})";
    const std::string where =
        *enabled ? source.full() + " does not keep pre- and post-images"
                 : source.full() + " does not exist yet, so it keeps no pre- and post-images";
    if (need.after) {
      out.push_back({true, where + ": mapping(s) " + users +
                               " in incremental mode cannot apply a change without them; run " +
                               fix +
                               " (docs/operations.md, \"Pre-images for aggregate mappings\")"});
    } else {
      out.push_back({false, where + ": mapping(s) " + users +
                                " recompute every parent when a child is deleted or moved; run " +
                                fix + " to recompute only the parents it left"});
    }
  }
  return out;
}

}  // namespace denormd::ops
