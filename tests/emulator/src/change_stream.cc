#include "change_stream.h"

#include <algorithm>
#include <array>

#include "bson/convert.h"
#include "bson_size.h"
#include "bson_writer.h"
#include "error_codes.h"
#include "event_stages.h"
#include "value_text.h"

namespace mongo_emulator {

namespace {

using denormd::fail;

bool internal_db(std::string_view db) {
  return db == "admin" || db == "config" || db == "local";
}
bool system_coll(std::string_view coll) {
  return coll.starts_with("system.");
}

std::string_view operation_type(op_type op) {
  switch (op) {
    case op_type::insert:
      return "insert";
    case op_type::update:
      return "update";
    case op_type::replace:
      return "replace";
    case op_type::remove:
      return "delete";
    case op_type::drop:
      return "drop";
    case op_type::rename:
      return "rename";
    case op_type::drop_database:
      return "dropDatabase";
    case op_type::create:
      return "create";
    case op_type::create_indexes:
      return "createIndexes";
    case op_type::drop_indexes:
      return "dropIndexes";
    case op_type::modify:
      return "modify";
  }
  return "";
}

bson::document ns_doc(const std::string& db, const std::string& coll) {
  bson::document d;
  d.append("db", db);
  if (!coll.empty()) d.append("coll", coll);
  return d;
}

denormd::status check_mode(const bson::value& v, std::string_view field,
                           std::initializer_list<std::string_view> allowed, std::string& out) {
  if (!v.is_string())
    return fail("BSON field '$changeStream." + std::string(field) + "' is the wrong type '" +
                    std::string(bson::type_name(v.kind())) + "', expected type 'string'",
                codes::type_mismatch);
  for (auto a : allowed) {
    if (v.as_string() == a) {
      out = v.as_string();
      return {};
    }
  }
  return fail("Enumeration value '" + v.as_string() + "' for field '$changeStream." +
                  std::string(field) + "' is not a valid value.",
              codes::bad_value);
}

// Whether an event's `_id` is still exactly `{_data: <token>}` (no document built to compare).
bool is_token(const bson::value& id, const resume_token& token) {
  if (!id.is_document()) return false;
  const auto& d = id.as_document();
  return d.size() == 1 && d.fields().front().name == "_data" &&
         d.fields().front().val.is_string() && d.fields().front().val.as_string() == token.data();
}

}  // namespace

denormd::expected<std::unique_ptr<change_stream>> change_stream::open(storage& s, std::string db,
                                                                      std::string coll,
                                                                      const bson::array& pipeline,
                                                                      const bson::document* let) {
  std::unique_ptr<change_stream> cs(new change_stream());
  cs->db_ = std::move(db);
  cs->coll_ = std::move(coll);
  const auto& first = pipeline.front().as_document();
  const auto& spec_value = first.fields().front().val;
  if (!spec_value.is_document())
    return fail("$changeStream stage expects a document as argument", 50808);
  const auto& spec = spec_value.as_document();

  bool all_for_cluster = false;
  if (const auto* v = spec.get("allChangesForCluster"); v != nullptr && v->is<bool>())
    all_for_cluster = v->as<bool>();
  if (all_for_cluster) {
    if (cs->db_ != "admin" || !cs->coll_.empty())
      return fail(
          "A $changeStream with 'allChangesForCluster:true' may only be opened on the "
          "'admin' database, and with no collection name",
          codes::invalid_namespace);
    cs->scope_ = scope::cluster;
    cs->ns_ = "admin.$cmd.aggregate";
  } else {
    if (internal_db(cs->db_))
      return fail("$changeStream may not be opened on the internal " + cs->db_ + " database",
                  codes::invalid_namespace);
    if (system_coll(cs->coll_))
      return fail("$changeStream may not be opened on the internal " + cs->db_ + "." + cs->coll_ +
                      " collection",
                  codes::invalid_namespace);
    cs->scope_ = cs->coll_.empty() ? scope::database : scope::collection;
    cs->ns_ = cs->db_ + "." + (cs->coll_.empty() ? std::string("$cmd.aggregate") : cs->coll_);
  }

  if (auto ok = cs->parse_options(spec, cs->db_ == "admin"); !ok)
    return denormd::unexpected<denormd::error>{ok.error()};
  if (auto ok = cs->parse_stages(pipeline, let); !ok)
    return denormd::unexpected<denormd::error>{ok.error()};

  const auto* resume_after = spec.get("resumeAfter");
  const auto* start_after = spec.get("startAfter");
  const auto* start_at = spec.get("startAtOperationTime");
  if (resume_after != nullptr && start_after != nullptr)
    return fail("Do not specify both 'startAfter' and 'resumeAfter' in a $changeStream stage.",
                codes::location_50865_start_after_and_resume_after);
  if (start_at != nullptr && (resume_after != nullptr || start_after != nullptr))
    return fail("Only one type of resume option is allowed, but multiple were found.",
                codes::location_40674_multiple_resume_options);

  if (const auto* token_value = resume_after != nullptr ? resume_after : start_after) {
    auto token = resume_token::parse(*token_value);
    if (!token) return token.error();
    if (token->token_kind() == resume_token::kind::invalidate && resume_after != nullptr)
      return fail(
          "Attempting to resume a change stream using 'resumeAfter' is not allowed "
          "from an invalidate notification.",
          codes::invalid_resume_token);
    if (auto ok = cs->check_resume_point(s, *token); !ok)
      return denormd::unexpected<denormd::error>{ok.error()};
    cs->position_ = *token;
  } else if (start_at != nullptr) {
    if (!start_at->is<bson::timestamp>())
      return fail("BSON field '$changeStream.startAtOperationTime' is the wrong type '" +
                      std::string(bson::type_name(start_at->kind())) +
                      "', expected type 'timestamp'",
                  codes::type_mismatch);
    cs->position_ = resume_token::before(start_at->as<bson::timestamp>());
    if (s.history().history_lost(cs->position_.ts(), false))
      return fail(
          "Resume of change stream was not possible, as the resume point may no longer "
          "be in the oplog.",
          codes::change_stream_history_lost);
  } else {
    // A new stream sees changes after "now"; the tick makes "now" a time no change has.
    cs->position_ = resume_token(s.tick(), resume_token::kind::high_water);
  }
  return cs;
}

denormd::status change_stream::parse_options(const bson::document& spec, bool on_admin) {
  for (const auto& f : spec) {
    const std::string& n = f.name;
    if (n == "fullDocument") {
      if (auto ok = check_mode(f.val, n, {"default", "updateLookup", "whenAvailable", "required"},
                               full_document_);
          !ok)
        return ok;
    } else if (n == "fullDocumentBeforeChange") {
      if (auto ok = check_mode(f.val, n, {"off", "whenAvailable", "required"}, before_change_); !ok)
        return ok;
    } else if (n == "allChangesForCluster" || n == "showExpandedEvents" ||
               n == "allowToRunOnConfigDB" || n == "allowToRunOnSystemNS") {
      if (!f.val.is<bool>())
        return fail("BSON field '$changeStream." + n + "' is the wrong type '" +
                        std::string(bson::type_name(f.val.kind())) + "', expected type 'bool'",
                    codes::type_mismatch);
      if (n == "showExpandedEvents") show_expanded_ = f.val.as<bool>();
    } else if (n != "resumeAfter" && n != "startAfter" && n != "startAtOperationTime") {
      return fail("BSON field '$changeStream." + n + "' is an unknown field.", 40415);
    }
  }
  (void)on_admin;
  return {};
}

denormd::status change_stream::parse_stages(const bson::array& pipeline,
                                            const bson::document* let) {
  for (std::size_t i = 1; i < pipeline.size(); ++i) {
    if (!pipeline[i].is_document() || pipeline[i].as_document().size() != 1)
      return fail("A pipeline stage specification object must contain exactly one field.", 40323);
    const auto& stage = pipeline[i].as_document().fields().front();
    if (stage.name == "$changeStream")
      return fail("$changeStream is only valid as the first stage in a pipeline.", 40602);
    auto built = make_event_stage(stage.name, stage.val, let);
    if (!built) return denormd::unexpected<denormd::error>{built.error()};
    if (stage.name == "$match" && leading_matches_ == stages_.size()) ++leading_matches_;
    stages_.push_back(std::move(built).value());
  }
  return {};
}

denormd::status change_stream::check_resume_point(const storage& s,
                                                  const resume_token& token) const {
  const auto& history = s.history();
  const bool needs_event = token.token_kind() != resume_token::kind::high_water;
  if (history.history_lost(token.ts(), needs_event))
    return fail(
        "Resume of change stream was not possible, as the resume point may no longer be "
        "in the oplog.",
        codes::change_stream_history_lost);
  if (!needs_event) return {};
  const oplog_entry* entry = history.find(token.ts(), token.txn_op_index());
  std::vector<produced> events;
  if (entry != nullptr) events_for(*entry, events);
  const auto it = std::find_if(events.begin(), events.end(),
                               [&](const produced& p) { return p.token == token; });
  bool found = it != events.end();
  if (found && leading_matches_ > 0) {
    if (auto ev = make_event(s, *it)) {
      std::optional<bson::document> kept(std::move(ev).value());
      for (std::size_t i = 0; i < leading_matches_ && kept; ++i) {
        auto r = stages_[i](std::move(*kept));
        if (!r) return denormd::unexpected<denormd::error>{r.error()};
        kept = std::move(r).value();
      }
      found = kept.has_value();
    }
  }
  if (!found)
    return fail("cannot resume stream; the resume token was not found. " +
                    engine::document_text(token.to_document()),
                codes::change_stream_fatal_error);
  return {};
}

watch_scope change_stream::scope_watched() const {
  switch (scope_) {
    case scope::collection:
      return {watch_scope::kind::collection, db_, coll_};
    case scope::database:
      return {watch_scope::kind::database, db_, {}};
    case scope::cluster:
      break;
  }
  return {};
}

bool change_stream::in_scope(std::string_view db, std::string_view coll) const {
  switch (scope_) {
    case scope::collection:
      return db == db_ && coll == coll_;
    case scope::database:
      return db == db_ && !system_coll(coll);
    case scope::cluster:
      return !internal_db(db) && !system_coll(coll);
  }
  return false;
}

void change_stream::events_for(const oplog_entry& e, std::vector<produced>& out) const {
  const auto event = [&] {
    out.push_back({resume_token(e.ts, resume_token::kind::event, e.txn_op_index), &e});
  };
  const auto invalidate = [&] {
    out.push_back({resume_token(e.ts, resume_token::kind::invalidate), &e});
  };
  switch (e.op) {
    case op_type::insert:
    case op_type::update:
    case op_type::replace:
    case op_type::remove:
      if (in_scope(e.db, e.coll)) event();
      break;
    case op_type::drop:
    case op_type::rename:
      if (!in_scope(e.db, e.coll)) break;
      event();
      if (scope_ == scope::collection) invalidate();
      break;
    case op_type::drop_database:
      if (scope_ == scope::collection || (scope_ == scope::database && e.db != db_) ||
          (scope_ == scope::cluster && internal_db(e.db)))
        break;
      event();
      if (scope_ == scope::database) invalidate();
      break;
    case op_type::create:
    case op_type::create_indexes:
    case op_type::drop_indexes:
    case op_type::modify:
      if (show_expanded_ && in_scope(e.db, e.coll)) event();
      break;
  }
}

namespace {

// Where an event's fields go: a value tree (for the stages after $changeStream) ...
class tree_sink {
 public:
  void add(std::string_view key, bson::value v) { ev_.append(std::string(key), std::move(v)); }
  void add_document(std::string_view key, const bson::document& d) {
    ev_.append(std::string(key), d);
  }
  std::string text() const { return engine::document_text(ev_); }
  bson::document take() { return std::move(ev_); }

 private:
  bson::document ev_;
};

// ... or straight into wire bytes, so the shared stored documents an event shows are encoded
// once instead of copied into a tree, encoded and freed.
class bytes_sink {
 public:
  // Room for a typical event up front instead of growing through several reallocations.
  bytes_sink() : start_((out_.reserve(1024), begin_document(out_))) {}
  void add(std::string_view key, const bson::value& v) { write_element(key, v, out_); }
  void add_document(std::string_view key, const bson::document& d) {
    write_document_element(key, d, out_);
  }
  std::string text() const {
    auto copy = out_;
    finish_document(copy, start_);
    auto d = bson::from_bson(copy);
    return d ? engine::document_text(*d) : std::string("{}");
  }
  std::vector<std::uint8_t> take() {
    finish_document(out_, start_);
    return std::move(out_);
  }

 private:
  std::vector<std::uint8_t> out_;
  std::size_t start_;
};

}  // namespace

template <class Sink>
denormd::status change_stream::build_event(const storage& s, const produced& p, Sink& ev) const {
  const oplog_entry& e = *p.entry;
  const bool is_invalidate = p.token.token_kind() == resume_token::kind::invalidate;
  if (e.txn != nullptr && !is_invalidate) {
    // MongoDB 6.0 puts a transaction's fields first (change_stream_event_transform.cpp).
    ev.add("txnNumber", e.txn->number);
    ev.add_document("lsid", e.txn->lsid);
  }
  ev.add("_id", p.token.to_document());
  ev.add("operationType", std::string(is_invalidate ? "invalidate" : operation_type(e.op)));
  ev.add("clusterTime", e.ts);
  if (show_expanded_ && !is_invalidate && e.uuid != nullptr) ev.add("collectionUUID", *e.uuid);
  ev.add("wallTime", bson::date_time{e.wall_ms});
  if (is_invalidate) return {};

  const auto document_key = [&] {
    bson::document k;
    k.append("_id", e.id);
    return k;
  };
  const auto image_missing = [&](std::string_view which) {
    return fail("Change stream was configured to require a " + std::string(which) +
                    "-image for all update, delete and replace events, but the " +
                    std::string(which) + "-image was not found for event: " + ev.text(),
                codes::no_matching_document);
  };
  const auto add_before_change = [&]() -> denormd::status {
    if (before_change_ == "off") return {};
    if (e.pre_image != nullptr) {
      ev.add_document("fullDocumentBeforeChange", *e.pre_image);
    } else if (before_change_ == "required") {
      return image_missing("pre");
    } else {
      ev.add("fullDocumentBeforeChange", bson::null_t{});
    }
    return {};
  };

  switch (e.op) {
    case op_type::insert:
    case op_type::replace:
      ev.add_document("fullDocument", *e.full_document);
      ev.add("ns", ns_doc(e.db, e.coll));
      ev.add("documentKey", document_key());
      break;
    case op_type::update: {
      ev.add("ns", ns_doc(e.db, e.coll));
      ev.add("documentKey", document_key());
      ev.add_document("updateDescription", e.update_description);
      if (full_document_ == "updateLookup") {
        const collection* c = s.find(e.db, e.coll);
        std::optional<std::uint64_t> record = c ? c->find_id(e.id) : std::nullopt;
        if (record) {
          ev.add_document("fullDocument", *c->get(*record));
        } else {
          ev.add("fullDocument", bson::null_t{});
        }
      } else if (full_document_ != "default") {
        if (e.full_document != nullptr) {
          ev.add_document("fullDocument", *e.full_document);
        } else if (full_document_ == "required") {
          return image_missing("post");
        } else {
          ev.add("fullDocument", bson::null_t{});
        }
      }
      break;
    }
    case op_type::remove:
      ev.add("ns", ns_doc(e.db, e.coll));
      ev.add("documentKey", document_key());
      break;
    case op_type::drop:
      ev.add("ns", ns_doc(e.db, e.coll));
      break;
    case op_type::rename:
      ev.add("ns", ns_doc(e.db, e.coll));
      ev.add("to", ns_doc(e.to_db, e.to_coll));
      if (show_expanded_) {
        bson::document description{{"to", ns_doc(e.to_db, e.to_coll)}};
        if (e.ddl) {
          for (const auto& f : e.ddl->description)
            description.append(f.name, f.val);
        }
        ev.add("operationDescription", std::move(description));
      }
      break;
    case op_type::drop_database:
      ev.add("ns", ns_doc(e.db, ""));
      break;
    case op_type::create:
    case op_type::create_indexes:
    case op_type::drop_indexes:
    case op_type::modify:
      ev.add("ns", ns_doc(e.db, e.coll));
      ev.add_document("operationDescription", e.ddl->description);
      if (e.ddl->state_before) ev.add_document("stateBeforeChange", *e.ddl->state_before);
      break;
  }
  if (e.op == op_type::update || e.op == op_type::replace || e.op == op_type::remove) {
    if (auto ok = add_before_change(); !ok) return ok;
  }
  return {};
}

denormd::expected<bson::document> change_stream::make_event(const storage& s,
                                                            const produced& p) const {
  tree_sink ev;
  if (auto ok = build_event(s, p, ev); !ok) return denormd::unexpected<denormd::error>{ok.error()};
  return ev.take();
}

denormd::expected<std::vector<std::uint8_t>> change_stream::encode_event(const storage& s,
                                                                         const produced& p) const {
  bytes_sink ev;
  if (auto ok = build_event(s, p, ev); !ok) return denormd::unexpected<denormd::error>{ok.error()};
  return ev.take();
}

denormd::expected<change_stream::batch> change_stream::next(const storage& s,
                                                            std::size_t max_events,
                                                            std::size_t max_bytes) {
  batch out;
  // Moves the batch out rather than copying it: events are whole documents.
  const auto finish = [&]() -> batch {
    out.post_batch_resume_token = position_.to_document();
    out.invalidated = invalidated_;
    return std::move(out);
  };
  if (invalidated_ || max_events == 0) return finish();
  const auto& history = s.history();
  if (history.history_lost(position_.ts(), false))
    return fail(
        "Resume of change stream was not possible, as the resume point may no longer be "
        "in the oplog.",
        codes::change_stream_history_lost);
  std::size_t bytes = 0;
  std::optional<resume_token> last_delivered;  // the `_id` of the batch's last event
  std::vector<produced> produced_events;
  for (std::size_t i = history.lower_bound(position_.ts()); i < history.size(); ++i) {
    produced_events.clear();
    events_for(history.at(i), produced_events);
    for (const auto& p : produced_events) {
      if (p.token <= position_) continue;
      if (stages_.empty()) {
        // No stage to run: the event goes out as bytes, spliced into the reply as it is.
        auto raw = encode_event(s, p);
        if (!raw) return raw.error();
        if (!out.events.empty() && bytes + raw->size() > max_bytes) return finish();
        bytes += raw->size();
        out.events.emplace_back(bson::binary{raw_document_subtype, std::move(raw).value()});
        last_delivered = p.token;
        position_ = p.token;
        if (p.token.token_kind() == resume_token::kind::invalidate) {
          invalidated_ = true;
          return finish();
        }
        if (out.events.size() >= max_events) return finish();
        continue;
      }
      auto ev = make_event(s, p);
      if (!ev) return ev.error();
      std::optional<bson::document> result(std::move(ev).value());
      for (const auto& stage : stages_) {
        auto r = stage(std::move(*result));
        if (!r) return r.error();
        result = std::move(r).value();
        if (!result) break;
      }
      if (result) {
        const auto* id = result->get("_id");
        if (id == nullptr || !is_token(*id, p.token)) {
          const auto expected_id = bson::value(p.token.to_document());
          return fail(
              "Encountered an event whose _id field, which contains the resume token, "
              "was modified by the pipeline. Modifying the _id field of an event makes "
              "it impossible to resume the stream from that point. Only transformations "
              "that retain the unmodified _id field are allowed. Expected: " +
                  engine::document_text(bson::document{{"_id", expected_id}}) + " but found: " +
                  (id ? engine::document_text(bson::document{{"_id", *id}}) : "{}"),
              codes::change_stream_fatal_error);
        }
        const std::size_t size = bson_size(*result);
        if (!out.events.empty() && bytes + size > max_bytes) return finish();
        bytes += size;
        out.events.emplace_back(std::move(*result));
        last_delivered = p.token;
      }
      position_ = p.token;
      if (p.token.token_kind() == resume_token::kind::invalidate) {
        invalidated_ = true;
        return finish();
      }
      if (out.events.size() >= max_events) return finish();
    }
  }
  // Everything up to the newest clusterTime has been seen: advance to a high-water mark. A
  // batch with events still reports its last event's token, as MongoDB does.
  position_ = std::max(position_, resume_token(s.cluster_time(), resume_token::kind::high_water));
  out.post_batch_resume_token = position_.to_document();
  out.invalidated = invalidated_;
  if (last_delivered) out.post_batch_resume_token = last_delivered->to_document();
  return out;
}

}  // namespace mongo_emulator
