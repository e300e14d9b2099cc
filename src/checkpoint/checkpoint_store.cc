#include "checkpoint/checkpoint_store.h"

#include "common/clock.h"
#include "common/log.h"

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
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.unit()}});
  if (!doc) return doc.error();
  if (!*doc) return std::optional<checkpoint>{};
  return parse_checkpoint(**doc);
}

mongo::result<std::vector<std::pair<mapping::ns, checkpoint>>> checkpoint_store::load_units(
    const mapping::ns& source) {
  const mapping::ns coll = source.collection();
  // The collection's units are its name and its name with "#i/N": every _id in [name, name$).
  const std::string name = coll.full();
  const bson::document filter{{"_id", bson::document{{"$gte", name}, {"$lt", name + "$"}}}};
  auto docs = conn_.find(db_, collection_name, filter, {});
  if (!docs) return docs.error();
  std::vector<std::pair<mapping::ns, checkpoint>> out;
  for (const auto& d : *docs) {
    const bson::value* id = d.get("_id");
    if (id == nullptr || !id->is<std::string>()) continue;
    const auto unit = mapping::parse_unit(id->as<std::string>());
    if (!unit || unit->collection() != coll) continue;
    if (auto cp = parse_checkpoint(d)) out.emplace_back(*unit, std::move(*cp));
  }
  return out;
}

namespace {

// {_id} and, under a lease, "no newer lease has marked it": an upsert that matches nothing
// because of the epoch fails on the duplicate _id instead of writing.
bson::document fenced_filter(const mapping::ns& source, std::int64_t epoch) {
  bson::document filter{{"_id", source.unit()}};
  if (epoch != 0) {
    filter.append("$or",
                  bson::array{bson::document{{"leaseEpoch", bson::document{{"$lte", epoch}}}},
                              bson::document{{"leaseEpoch", bson::document{{"$exists", false}}}}});
  }
  return filter;
}

constexpr std::uint32_t duplicate_key = 11000;

bson::document writer_document(const writer_session& w) {
  return bson::document{{"lsid", w.lsid}, {"process", w.process}};
}

// The recorded writer's session ({id: UUID} only: the document is data, never a command of
// ours) and process, if a well-formed one is recorded.
std::optional<writer_session> recorded_writer(const bson::document& doc) {
  const bson::value* w = doc.get("writer");
  if (w == nullptr || !w->is_document()) return std::nullopt;
  const bson::value* lsid = w->as_document().get("lsid");
  const bson::value* process = w->as_document().get("process");
  const bson::value* id =
      lsid != nullptr && lsid->is_document() ? lsid->as_document().get("id") : nullptr;
  if (id == nullptr || !id->is<bson::binary>() || id->as<bson::binary>().subtype != 4 ||
      process == nullptr || !process->is_string())
    return std::nullopt;
  return writer_session{bson::document{{"id", *id}}, process->as_string()};
}

std::int64_t epoch_of(const bson::document& doc) {
  const bson::value* e = doc.get("leaseEpoch");
  return e != nullptr && e->is_number() ? static_cast<std::int64_t>(e->to_double()) : 0;
}

}  // namespace

mongo::write_request fence_statement(const mapping::ns& source, std::int64_t epoch,
                                     bson::document& filter, bson::document& update) {
  filter = bson::document{{"_id", source.unit()}, {"leaseEpoch", epoch}};
  // $inc, so that the statement always writes the document: a statement that changed nothing
  // (a $set of the value it has) would write nothing, and order nothing.
  update = bson::document{{"$inc", bson::document{{"fenced", std::int64_t{1}}}}};
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  return r;
}

mongo::status checkpoint_store::upsert(const mapping::ns& source, std::int64_t epoch,
                                       const bson::document& update,
                                       std::optional<std::chrono::milliseconds> max_time) {
  const bson::document filter = fenced_filter(source, epoch);
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  r.upsert = true;
  auto out = max_time ? conn_.update_one_within(db_, collection_name, r, *max_time)
                      : conn_.update_bulk(db_, collection_name, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) {
    if (epoch != 0 && out->write_error->code == duplicate_key) {
      return mongo::failure(mongo::driver_error{
          mongo::driver_error::origin::client,
          mongo::lease_fenced_code,
          "the checkpoint of " + source.unit() + " is held under a newer lease than epoch " +
              std::to_string(epoch) + ": another instance took the namespace over",
          {}});
    }
    return *out->write_error;
  }
  return {};
}

mongo::result<std::optional<fence_record>> checkpoint_store::fence_of(const mapping::ns& source) {
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.unit()}});
  if (!doc) return doc.error();
  if (!*doc || epoch_of(**doc) == 0) return std::optional<fence_record>{};
  fence_record f{epoch_of(**doc), {}};
  if (auto w = recorded_writer(**doc)) f.writer_process = w->process;
  return std::optional<fence_record>{std::move(f)};
}

mongo::result<std::optional<std::string>> checkpoint_store::end_writer_of_other(
    const mapping::ns& source, const std::string& my_process) {
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.unit()}});
  if (!doc) return doc.error();
  std::optional<writer_session> w = *doc ? recorded_writer(**doc) : std::nullopt;
  if (!w || w->process == my_process) return std::optional<std::string>{};
  if (auto st = conn_.kill_sessions({w->lsid}); !st) return st.error();
  return std::optional<std::string>{w->process};
}

mongo::result<std::int64_t> checkpoint_store::claim(const mapping::ns& source,
                                                    const writer_session& mine,
                                                    std::chrono::milliseconds max_time) {
  // Another claim between the read and the write makes the write match nothing: read again.
  constexpr int attempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.unit()}});
    if (!doc) return doc.error();
    if (*doc) {
      if (auto w = recorded_writer(**doc); w && w->process != mine.process) {
        // Not fatal: without the right to, the claim below waits for the server to abort what
        // that session left open (transactionLifetimeLimitSeconds), each try bounded by
        // max_time.
        if (auto killed = conn_.kill_sessions({w->lsid}); !killed) {
          log::warn("checkpoint",
                    "could not end the session of the namespace's previous writer; waiting for "
                    "the server to end what it left open",
                    {{"source", source.unit()},
                     {"writer", w->process},
                     {"error", killed.error().to_string()}});
        }
      }
    }
    const std::int64_t was = *doc ? epoch_of(**doc) : 0;
    bson::document filter{{"_id", source.unit()}};
    if (was == 0) {
      filter.append("leaseEpoch", bson::document{{"$exists", false}});
    } else {
      filter.append("leaseEpoch", was);
    }
    const bson::document update{
        {"$set", bson::document{{"leaseEpoch", was + 1}, {"writer", writer_document(mine)}}}};
    mongo::write_request r;
    r.filter = &filter;
    r.update = &update;
    r.upsert = true;
    auto out = conn_.update_one_within(db_, collection_name, r, max_time);
    if (!out) return out.error();
    const bool raced = (out->write_error && out->write_error->code == duplicate_key) ||
                       (!out->write_error && out->matched == 0 && out->upserted == 0);
    if (out->write_error && !raced) return *out->write_error;
    if (!raced) return was + 1;
    if (attempt == attempts) {
      return mongo::failure(mongo::driver_error{
          mongo::driver_error::origin::client,
          mongo::lease_fenced_code,
          "the checkpoint of " + source.unit() + " changed hands " + std::to_string(attempts) +
              " times while it was being claimed: is another denormd without --ha writing it?",
          {}});
    }
  }
}

mongo::result<std::int64_t> checkpoint_store::update_one(const bson::document& filter,
                                                         const bson::document& update) {
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  auto out = conn_.update_bulk(db_, collection_name, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) return *out->write_error;
  return out->matched;
}

mongo::result<bool> checkpoint_store::publish_writer(const mapping::ns& source, std::int64_t epoch,
                                                     const writer_session& mine) {
  auto matched =
      update_one(bson::document{{"_id", source.unit()}, {"leaseEpoch", epoch}},
                 bson::document{{"$set", bson::document{{"writer", writer_document(mine)}}}});
  if (!matched) return matched.error();
  return *matched == 1;
}

mongo::status checkpoint_store::save(const mapping::ns& source, const checkpoint& cp) {
  return upsert(source, cp.lease_epoch, save_update(cp, wall_ms()));
}

mongo::status checkpoint_store::note_stopped(const mapping::ns& source,
                                             const stopped_mapping& entry) {
  const bson::document filter{{"_id", source.unit()},
                              {"token", bson::document{{"$exists", true}}},
                              {"stoppedMappings.mapping", bson::document{{"$ne", entry.mapping}}}};
  auto matched = update_one(
      filter, bson::document{{"$push", bson::document{{"stoppedMappings", to_document(entry)}}}});
  if (!matched) return matched.error();
  return {};
}

mongo::result<std::int64_t> checkpoint_store::fence(const mapping::ns& source, std::int64_t epoch,
                                                    std::chrono::milliseconds max_time) {
  auto st = upsert(source, epoch, bson::document{{"$set", bson::document{{"leaseEpoch", epoch}}}},
                   max_time);
  if (st) return epoch;
  if (st.error().code != mongo::lease_fenced_code) return st.error();
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.unit()}});
  if (!doc) return doc.error();
  const bson::value* e = *doc ? (*doc)->get("leaseEpoch") : nullptr;
  if (e == nullptr || !e->is_number()) return st.error();
  return static_cast<std::int64_t>(e->to_double());
}

}  // namespace denormd::checkpoint
