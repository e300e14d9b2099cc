#include "checkpoint/checkpoint_store.h"

#include "common/clock.h"

namespace denormd::checkpoint {

namespace {

bson::document to_document(const stopped_mapping& s) {
  bson::document d{{"mapping", s.mapping}, {"fingerprint", s.fingerprint}, {"token", s.token}};
  if (s.token_time) d.append("clusterTime", *s.token_time);
  if (!s.filter.empty()) d.append("filter", s.filter);
  return d;
}

std::string string_at(const bson::document& d, std::string_view key) {
  const bson::value* v = d.get(key);
  return v != nullptr && v->is_string() ? v->as_string() : std::string();
}

// The entries of `stoppedMappings` that are whole; a malformed one (edited by hand) is
// skipped: a mapping put back without its entry is backfilled instead of replayed.
std::vector<stopped_mapping> parse_stopped(const bson::value& list) {
  std::vector<stopped_mapping> out;
  if (!list.is_array()) return out;
  for (const auto& item : list.as_array()) {
    if (!item.is_document()) continue;
    const bson::document& d = item.as_document();
    const bson::value* token = d.get("token");
    stopped_mapping s{string_at(d, "mapping"),
                      string_at(d, "fingerprint"),
                      {},
                      std::nullopt,
                      string_at(d, "filter")};
    if (s.mapping.empty() || token == nullptr || !token->is_document()) continue;
    s.token = token->as_document();
    if (const bson::value* t = d.get("clusterTime"); t != nullptr && t->is<bson::timestamp>())
      s.token_time = t->as<bson::timestamp>();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

bson::document save_update(const checkpoint& cp, std::int64_t now_ms) {
  bson::document set{{"token", cp.token},
                     {"savedAt", bson::date_time{cp.saved_ms != 0 ? cp.saved_ms : now_ms}}};
  if (cp.event_ms != 0) set.append("wallTime", bson::date_time{cp.event_ms});
  // Set or removed with every save, so that they always describe the token beside them.
  bson::document unset;
  if (cp.event_time)
    set.append("clusterTime", *cp.event_time);
  else
    unset.append("clusterTime", "");
  if (!cp.filter.empty())
    set.append("filter", cp.filter);
  else
    unset.append("filter", "");
  if (cp.lease_epoch != 0) set.append("leaseEpoch", cp.lease_epoch);
  if (cp.stopped && !cp.stopped->empty()) {
    bson::array list;
    for (const auto& s : *cp.stopped)
      list.push_back(to_document(s));
    set.append("stoppedMappings", std::move(list));
  } else if (cp.stopped) {
    unset.append("stoppedMappings", "");
  }
  bson::document update{{"$set", std::move(set)}};
  if (!unset.empty()) update.append("$unset", std::move(unset));
  return update;
}

std::optional<checkpoint> parse_checkpoint(const bson::document& doc) {
  const bson::value* token = doc.get("token");
  if (token == nullptr || !token->is_document()) return std::nullopt;
  checkpoint cp;
  cp.token = token->as_document();
  if (const bson::value* w = doc.get("wallTime"); w != nullptr && w->is<bson::date_time>()) {
    cp.event_ms = w->as<bson::date_time>().millis;
  }
  if (const bson::value* s = doc.get("savedAt"); s != nullptr && s->is<bson::date_time>()) {
    cp.saved_ms = s->as<bson::date_time>().millis;
  }
  if (const bson::value* t = doc.get("clusterTime"); t != nullptr && t->is<bson::timestamp>())
    cp.event_time = t->as<bson::timestamp>();
  if (const bson::value* f = doc.get("filter"); f != nullptr && f->is_string())
    cp.filter = f->as_string();
  if (const bson::value* s = doc.get("stoppedMappings"); s != nullptr)
    cp.stopped = parse_stopped(*s);
  return cp;
}

checkpoint_store::checkpoint_store(mongo::document_client& conn, std::string db)
    : conn_(conn), db_(std::move(db)) {}

mongo::result<std::optional<checkpoint>> checkpoint_store::load(const mapping::ns& source) {
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.full()}});
  if (!doc) return doc.error();
  if (!*doc) return std::optional<checkpoint>{};
  return parse_checkpoint(**doc);
}

namespace {

// {_id} and, under a lease, "no newer lease has marked it": an upsert that matches nothing
// because of the epoch fails on the duplicate _id instead of writing.
bson::document fenced_filter(const mapping::ns& source, std::int64_t epoch) {
  bson::document filter{{"_id", source.full()}};
  if (epoch != 0) {
    filter.append("$or",
                  bson::array{bson::document{{"leaseEpoch", bson::document{{"$lte", epoch}}}},
                              bson::document{{"leaseEpoch", bson::document{{"$exists", false}}}}});
  }
  return filter;
}

constexpr std::uint32_t duplicate_key = 11000;

}  // namespace

mongo::status checkpoint_store::upsert(const mapping::ns& source, std::int64_t epoch,
                                       const bson::document& update) {
  const bson::document filter = fenced_filter(source, epoch);
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  r.upsert = true;
  auto out = conn_.update_bulk(db_, collection_name, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) {
    if (epoch != 0 && out->write_error->code == duplicate_key) {
      return mongo::failure(mongo::driver_error{
          mongo::driver_error::origin::client,
          mongo::lease_fenced_code,
          "the checkpoint of " + source.full() + " is held under a newer lease than epoch " +
              std::to_string(epoch) + ": another instance took the namespace over",
          {}});
    }
    return *out->write_error;
  }
  return {};
}

mongo::status checkpoint_store::save(const mapping::ns& source, const checkpoint& cp) {
  return upsert(source, cp.lease_epoch, save_update(cp, wall_ms()));
}

mongo::status checkpoint_store::note_stopped(const mapping::ns& source,
                                             const stopped_mapping& entry) {
  const bson::document filter{{"_id", source.full()},
                              {"token", bson::document{{"$exists", true}}},
                              {"stoppedMappings.mapping", bson::document{{"$ne", entry.mapping}}}};
  const bson::document update{{"$push", bson::document{{"stoppedMappings", to_document(entry)}}}};
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  auto out = conn_.update_bulk(db_, collection_name, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) return *out->write_error;
  return {};
}

mongo::result<std::int64_t> checkpoint_store::fence(const mapping::ns& source, std::int64_t epoch) {
  auto st = upsert(source, epoch, bson::document{{"$set", bson::document{{"leaseEpoch", epoch}}}});
  if (st) return epoch;
  if (st.error().code != mongo::lease_fenced_code) return st.error();
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.full()}});
  if (!doc) return doc.error();
  const bson::value* e = *doc ? (*doc)->get("leaseEpoch") : nullptr;
  if (e == nullptr || !e->is_number()) return st.error();
  return static_cast<std::int64_t>(e->to_double());
}

}  // namespace denormd::checkpoint
