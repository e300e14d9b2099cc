#include "ops/commands/image_check.h"

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
  for (const auto& unit : planner.watched_namespaces()) {
    if (unit.part.index != 0) continue;  // a partitioned namespace is checked once
    const mapping::ns source = unit.collection();
    const mapping::stream_images need = planner.needs_images(source);
    if (!need.before && !need.after) continue;
    // The aggregate mappings reading it as their children, and the incremental ones whose
    // parents it holds (they tell a replaced parent from their own write by its pre-image).
    std::string users;
    std::string parents_of;
    for (const auto& m : planner.mappings()) {
      const auto [of_source, of_target] = m.visit(
          [](const auto& k) { return std::pair(k.needs_images(), k.target_needs_images()); });
      if (m.source == source && (of_source.before || of_source.after))
        users += (users.empty() ? "" : ", ") + m.name;
      if (m.target == source && m.fill_new_targets && of_target.before)
        parents_of += (parents_of.empty() ? "" : ", ") + m.name;
    }
    const std::string all = users + (users.empty() || parents_of.empty() ? "" : ", ") + parents_of;
    auto enabled = images_enabled(conn, source);
    if (!enabled) {
      // Not fatal: a server that is down at start is waited for, as always.
      out.push_back({false, "cannot tell whether " + source.full() +
                                " keeps pre- and post-images (needed by " + all +
                                "): " + enabled.error().to_string()});
      continue;
    }
    if (*enabled && **enabled) continue;
    const std::string fix = "db.getSiblingDB(\"" + source.db + "\").runCommand({collMod: \"" +
                            source.coll + "\", changeStreamPreAndPostImages: {enabled: true}})";
    const std::string where =
        *enabled ? source.full() + " does not keep pre- and post-images"
                 : source.full() + " does not exist yet, so it keeps no pre- and post-images";
    const std::string see = " (docs/operations.md, \"Pre-images for aggregate mappings\")";
    if (need.after) {
      out.push_back({true, where + ": mapping(s) " + users +
                               " in incremental mode cannot apply a change without them; run " +
                               fix + see});
    } else if (!users.empty()) {
      out.push_back({false, where + ": mapping(s) " + users +
                                " recompute every parent when a child is deleted or moved; run " +
                                fix + " to recompute only the parents it left"});
    }
    if (!parents_of.empty()) {
      out.push_back({true, where + ": mapping(s) " + parents_of +
                               " in incremental mode keep their parents there and cannot tell "
                               "a parent the application replaced from their own write without "
                               "them; run " +
                               fix + see});
    }
  }
  return out;
}

}  // namespace denormd::ops
