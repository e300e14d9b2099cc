#include "storage.h"

#include <algorithm>
#include <chrono>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

std::uint64_t pack(bson::timestamp ts) {
  return (std::uint64_t{ts.t} << 32) | ts.i;
}
bson::timestamp unpack(std::uint64_t v) {
  return {static_cast<std::uint32_t>(v >> 32), static_cast<std::uint32_t>(v)};
}

std::int64_t wall_clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

storage::storage(std::size_t oplog_max_events, std::chrono::seconds transaction_lifetime)
    : transaction_lifetime_s_(transaction_lifetime.count()), oplog_(oplog_max_events) {
  const auto now = static_cast<std::uint32_t>(wall_clock_ms() / 1000);
  clock_.store(pack({now, 0}));
}

storage::write_lock::write_lock(storage& s)
    : storage_(s), lock_(s.mutex_), changes_before_(s.change_count_) {}

storage::write_lock::~write_lock() {
  const std::uint64_t changes = storage_.change_count_;
  changed_namespaces changed = std::move(storage_.pending_);
  storage_.pending_ = {};
  lock_.unlock();
  if (changes != changes_before_) storage_.notifier_.notify(changes, changed);
}

collection* storage::find(std::string_view db, std::string_view coll) {
  auto d = databases_.find(db);
  if (d == databases_.end()) return nullptr;
  auto c = d->second.find(coll);
  return c == d->second.end() ? nullptr : c->second.get();
}

const collection* storage::find(std::string_view db, std::string_view coll) const {
  return const_cast<storage*>(this)->find(db, coll);
}

std::shared_ptr<const collection> storage::find_shared(std::string_view db,
                                                       std::string_view coll) const {
  auto d = databases_.find(db);
  if (d == databases_.end()) return nullptr;
  auto c = d->second.find(coll);
  return c == d->second.end() ? nullptr : c->second;
}

collection& storage::make(std::string_view db, std::string_view coll,
                          const bson::document& options) {
  auto& slot = databases_[std::string(db)][std::string(coll)];
  slot = std::make_shared<collection>(std::string(db), std::string(coll));
  for (const auto& f : options)
    slot->options().append(f.name, f.val);
  // The create oplog entry's fields after `create`: the options, then the _id index.
  bson::document description = options;
  description.append("idIndex", slot->index_specs().front().to_document());
  record_ddl(op_type::create, *slot, std::move(description));
  return *slot;
}

collection& storage::obtain(std::string_view db, std::string_view coll) {
  if (auto* c = find(db, coll)) return *c;
  return make(db, coll, {});
}

collection* storage::find(std::string_view db, std::string_view coll, transaction* txn) {
  return txn != nullptr ? txn->view(*this, db, coll, false) : find(db, coll);
}

collection& storage::obtain(std::string_view db, std::string_view coll, transaction* txn) {
  return txn != nullptr ? *txn->view(*this, db, coll, true) : obtain(db, coll);
}

denormd::expected<collection*> storage::create(std::string_view db, std::string_view coll,
                                               const bson::document& options) {
  if (find(db, coll) != nullptr)
    return denormd::fail(
        "Collection " + std::string(db) + "." + std::string(coll) + " already exists.",
        codes::namespace_exists);
  return &make(db, coll, options);
}

void storage::record_ddl(op_type op, const collection& c, bson::document description,
                         std::optional<bson::document> state_before) {
  oplog_entry e;
  e.op = op;
  e.db = c.db();
  e.coll = c.name();
  e.uuid = c.shared_uuid();
  e.ddl = std::make_shared<const ddl_details>(
      ddl_details{std::move(description), std::move(state_before)});
  record(std::move(e));
}

denormd::status storage::drop(std::string_view db, std::string_view coll) {
  auto d = databases_.find(db);
  if (d == databases_.end() || !d->second.contains(coll))
    return denormd::fail("ns not found", codes::namespace_not_found);
  auto it = d->second.find(coll);
  oplog_entry e;
  e.uuid = it->second->shared_uuid();
  d->second.erase(it);
  if (d->second.empty()) databases_.erase(d);
  e.op = op_type::drop;
  e.db = std::string(db);
  e.coll = std::string(coll);
  record(std::move(e));
  return {};
}

void storage::drop_database(std::string_view db) {
  auto d = databases_.find(db);
  if (d == databases_.end()) return;  // nothing to drop, nothing to record
  std::vector<std::string> names;
  for (const auto& [name, c] : d->second)
    names.push_back(name);
  for (const auto& name : names)
    (void)drop(db, name);
  oplog_entry e;
  e.op = op_type::drop_database;
  e.db = std::string(db);
  record(std::move(e));
}

denormd::status storage::rename(std::string_view from_db, std::string_view from_coll,
                                std::string_view to_db, std::string_view to_coll,
                                bool drop_target) {
  auto* source = find(from_db, from_coll);
  if (source == nullptr)
    return denormd::fail("Source collection " + std::string(from_db) + "." +
                             std::string(from_coll) + " does not exist",
                         codes::namespace_not_found);
  if (from_db == to_db && from_coll == to_coll)
    return denormd::fail("Can't rename a collection to itself", codes::illegal_operation);
  std::shared_ptr<const ddl_details> dropped;  // the rename's `dropTarget`: the target's uuid
  if (const auto* target = find(to_db, to_coll); target != nullptr) {
    if (!drop_target) return denormd::fail("target namespace exists", codes::namespace_exists);
    dropped = std::make_shared<const ddl_details>(
        ddl_details{bson::document{{"dropTarget", target->uuid()}}, std::nullopt});
    (void)drop(to_db, to_coll);
  }
  auto& from = databases_.find(from_db)->second;
  auto node = from.extract(from.find(from_coll));
  if (from.empty()) databases_.erase(databases_.find(from_db));
  node.mapped()->rename(std::string(to_db), std::string(to_coll));
  databases_[std::string(to_db)][std::string(to_coll)] = std::move(node.mapped());
  oplog_entry e;
  e.uuid = databases_[std::string(to_db)][std::string(to_coll)]->shared_uuid();
  e.op = op_type::rename;
  e.db = std::string(from_db);
  e.coll = std::string(from_coll);
  e.to_db = std::string(to_db);
  e.to_coll = std::string(to_coll);
  e.ddl = std::move(dropped);
  record(std::move(e));
  return {};
}

std::vector<std::string> storage::database_names() const {
  std::vector<std::string> out;
  for (const auto& [name, db] : databases_)
    out.push_back(name);
  return out;
}

std::vector<const collection*> storage::collections(std::string_view db) const {
  std::vector<const collection*> out;
  auto d = databases_.find(db);
  if (d == databases_.end()) return out;
  for (const auto& [name, c] : d->second)
    out.push_back(c.get());
  return out;
}

denormd::expected<std::uint64_t> storage::insert(collection& c, doc_ptr doc) {
  const auto* found = doc->get("_id");
  const bson::value id = found ? *found : bson::value{};
  if (c.owner() != nullptr) {
    if (auto ok = claim(c, id); !ok) return ok.error();
    auto record_id = c.insert(doc);
    if (record_id) c.owner()->add_op({op_type::insert, c.db(), c.name(), id, std::move(doc), {}});
    return record_id;
  }
  if (auto ok = check_unclaimed(c, id); !ok) return ok.error();
  auto record_id = c.insert(doc);
  if (!record_id) return record_id;
  note_change(c, id, nullptr, std::nullopt);
  record_document_change(op_type::insert, c, id, doc, nullptr, {});
  return record_id;
}

denormd::status storage::update(collection& c, std::uint64_t record, doc_ptr doc,
                                bson::document update_description) {
  const auto* found = doc->get("_id");
  const bson::value id = found ? *found : bson::value{};
  if (c.owner() != nullptr) {
    if (auto ok = claim(c, id); !ok) return ok;
    if (auto ok = c.update(record, doc, update_description); !ok) return ok;
    c.owner()->add_op(
        {op_type::update, c.db(), c.name(), id, std::move(doc), std::move(update_description)});
    return {};
  }
  if (auto ok = check_unclaimed(c, id); !ok) return ok;
  auto before = c.get(record);
  if (auto ok = c.update(record, doc, update_description); !ok) return ok;
  note_change(c, id, before, record);
  const bool images = c.record_images();
  record_document_change(op_type::update, c, id, images ? doc : nullptr, images ? before : nullptr,
                         std::move(update_description));
  return {};
}

denormd::status storage::replace(collection& c, std::uint64_t record, doc_ptr doc) {
  const auto* found = doc->get("_id");
  const bson::value id = found ? *found : bson::value{};
  if (c.owner() != nullptr) {
    if (auto ok = claim(c, id); !ok) return ok;
    if (auto ok = c.replace(record, doc); !ok) return ok;
    c.owner()->add_op({op_type::replace, c.db(), c.name(), id, std::move(doc), {}});
    return {};
  }
  if (auto ok = check_unclaimed(c, id); !ok) return ok;
  auto before = c.get(record);
  if (auto ok = c.replace(record, doc); !ok) return ok;
  note_change(c, id, before, record);
  record_document_change(op_type::replace, c, id, doc, c.record_images() ? before : nullptr, {});
  return {};
}

denormd::status storage::remove(collection& c, std::uint64_t record) {
  auto before = c.get(record);
  if (before == nullptr) return {};
  const auto* found = before->get("_id");
  const bson::value id = found ? *found : bson::value{};
  if (c.owner() != nullptr) {
    if (auto ok = claim(c, id); !ok) return ok;
    c.erase(record);
    c.owner()->add_op({op_type::remove, c.db(), c.name(), id, nullptr, {}});
    return {};
  }
  if (auto ok = check_unclaimed(c, id); !ok) return ok;
  c.erase(record);
  note_change(c, id, before, record);
  record_document_change(op_type::remove, c, id, nullptr, c.record_images() ? before : nullptr, {});
  return {};
}

namespace {

denormd::error write_conflict() {
  return {
      "WriteConflict error: this operation conflicted with another operation. Please retry your "
      "operation or multi-document transaction.",
      codes::write_conflict};
}

// A statement's error when its transaction ended while it ran (begin_or_continue's text).
denormd::error ended_error(const transaction& t) {
  const std::string n = std::to_string(t.number());
  if (t.committed())
    return {"Transaction " + n + " has been committed.", codes::transaction_committed};
  return {"Transaction " + n + " has been aborted.", codes::no_such_transaction};
}

std::string session_key(const bson::document& lsid) {
  const auto* id = lsid.get("id");
  if (id == nullptr || !id->is<bson::binary>()) return {};
  const auto& bytes = id->as<bson::binary>().data;
  return std::string(bytes.begin(), bytes.end());
}

std::string lsid_text(const bson::document& lsid) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : session_key(lsid)) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

// The lsid as MongoDB logs it: the client's `id` and `uid`, the SHA-256 of the user name,
// which is the empty string without authentication.
bson::document logged_lsid(const bson::document& lsid) {
  static const std::vector<std::uint8_t> empty_user_sha256{
      0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4,
      0xc8, 0x99, 0x6f, 0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b,
      0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55};
  bson::document out;
  if (const auto* id = lsid.get("id")) out.append("id", *id);
  out.append("uid", bson::binary{0, empty_user_sha256});
  return out;
}

}  // namespace

denormd::status storage::claim(const collection& c, const bson::value& id) {
  transaction& t = *c.owner();
  if (t.ended()) return denormd::unexpected<denormd::error>{ended_error(t)};
  const std::string ns = c.ns();
  if (t.changed_since_snapshot(ns, id))
    return denormd::unexpected<denormd::error>{write_conflict()};
  auto& writers = writers_[ns];
  auto [it, inserted] = writers.try_emplace(id, &t);
  if (!inserted && it->second != &t) {
    // The other writer may be a transaction its client left open (killed): past its lifetime
    // MongoDB has aborted it, and the document is free.
    abort_expired_transactions();  // may erase writers_[ns]: look it up again
    if (t.ended()) return denormd::unexpected<denormd::error>{ended_error(t)};  // t expired too
    auto again = writers_[ns].try_emplace(id, &t);
    if (!again.second && again.first->second != &t)
      return denormd::unexpected<denormd::error>{write_conflict()};
  }
  return {};
}

denormd::status storage::check_unclaimed(const collection& c, const bson::value& id) const {
  if (written_by_transaction(c, id)) return denormd::unexpected<denormd::error>{write_conflict()};
  return {};
}

bool storage::written_by_transaction(const collection& c, const bson::value& id) const {
  auto writers = writers_.find(c.ns());
  if (writers == writers_.end()) return false;
  auto it = writers->second.find(id);
  return it != writers->second.end() && it->second != c.owner() && it->second != committing_;
}

void storage::note_change(const collection& c, const bson::value& id, const doc_ptr& before,
                          std::optional<std::uint64_t> record) {
  if (open_.empty()) return;
  const std::string ns = c.ns();
  for (transaction* t : open_) {
    if (t != committing_) t->note_committed_change(ns, id, before, record);
  }
}

denormd::expected<std::shared_ptr<transaction>> storage::begin_or_continue(
    const bson::document& lsid, std::int64_t number, bool start) {
  session& s = sessions_[session_key(lsid)];
  const std::string n = std::to_string(number);
  if (number < s.number) {
    return denormd::fail("Cannot start transaction " + n + " on session " + lsid_text(lsid) +
                             " because a newer transaction " + std::to_string(s.number) +
                             " has already started.",
                         codes::transaction_too_old);
  }
  if (start) {
    if (number == s.number)
      return denormd::fail(
          "Only servers in a sharded cluster can start a new transaction at the active "
          "transaction number",
          codes::conflicting_operation_in_progress);
    if (s.st == session::state::in_progress) end_transaction(s, session::state::aborted);
    s.number = number;
    s.st = session::state::in_progress;
    s.txn = std::make_shared<transaction>(logged_lsid(lsid), number, cluster_time());
    open_.push_back(s.txn.get());
    return s.txn;
  }
  if (number != s.number || s.st == session::state::none)
    return denormd::fail("Given transaction number " + n +
                             " does not match any in-progress transactions. The active "
                             "transaction number is " +
                             std::to_string(s.number),
                         codes::no_such_transaction);
  // MongoDB's reaper aborts a transaction older than transactionLifetimeLimitSeconds whether
  // or not anyone waits for it: its next statement, or its commit, finds it aborted.
  if (s.st == session::state::in_progress &&
      std::chrono::steady_clock::now() - s.txn->started() > transaction_lifetime())
    end_transaction(s, session::state::aborted);
  if (s.st == session::state::aborted)
    return denormd::fail("Transaction " + n + " has been aborted.", codes::no_such_transaction);
  if (s.st == session::state::committed)
    return denormd::fail("Transaction " + n + " has been committed.", codes::transaction_committed);
  return s.txn;
}

denormd::status storage::commit_transaction(const bson::document& lsid, std::int64_t number) {
  auto it = sessions_.find(session_key(lsid));
  if (it != sessions_.end() && it->second.number == number &&
      it->second.st == session::state::committed)
    return {};  // a retried commit: MongoDB answers it again
  auto txn = begin_or_continue(lsid, number, false);
  if (!txn) return denormd::unexpected<denormd::error>{txn.error()};
  session& s = it->second;
  const transaction& t = **txn;
  if (!t.ops().empty()) {
    committing_ = s.txn.get();
    commit_info_ = std::make_shared<const txn_info>(txn_info{t.lsid(), t.number()});
    commit_ts_ = tick();
    commit_wall_ms_ = wall_clock_ms();
    commit_op_index_ = 0;
    for (const auto& o : t.ops())
      apply(o);
    committing_ = nullptr;
    commit_info_.reset();
  }
  end_transaction(s, session::state::committed);
  return {};
}

// One write of the committing transaction on the stored collection. The transaction held the
// document since it wrote it and nobody else changed it since its snapshot, so the stored
// document is the one the transaction changed.
void storage::apply(const transaction::op& o) {
  collection& c = obtain(o.db, o.coll);
  const auto record = c.find_id(o.id);
  switch (o.type) {
    case op_type::insert:
      (void)insert(c, o.doc);
      break;
    case op_type::update:
      if (record) (void)update(c, *record, o.doc, o.update_description);
      break;
    case op_type::replace:
      if (record) (void)replace(c, *record, o.doc);
      break;
    case op_type::remove:
      if (record) (void)remove(c, *record);
      break;
    default:
      break;
  }
}

denormd::status storage::abort_transaction(const bson::document& lsid, std::int64_t number) {
  auto txn = begin_or_continue(lsid, number, false);
  if (!txn) return denormd::unexpected<denormd::error>{txn.error()};
  end_transaction(sessions_.find(session_key(lsid))->second, session::state::aborted);
  return {};
}

void storage::end_transaction(session& s, session::state outcome) {
  transaction* t = s.txn.get();
  std::erase(open_, t);
  for (auto it = writers_.begin(); it != writers_.end();) {
    std::erase_if(it->second, [&](const auto& w) { return w.second == t; });
    it = it->second.empty() ? writers_.erase(it) : std::next(it);
  }
  s.st = outcome;
  t->end(outcome == session::state::committed);
  s.txn.reset();
  // A write waiting for this transaction's documents may go on now.
  pending_.everything = true;
  ++change_count_;
}

void storage::abort_expired_transactions() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [key, s] : sessions_) {
    if (s.st == session::state::in_progress && now - s.txn->started() > transaction_lifetime())
      end_transaction(s, session::state::aborted);
  }
}

void storage::kill_sessions(const std::vector<bson::document>& lsids) {
  for (const auto& lsid : lsids) {
    auto it = sessions_.find(session_key(lsid));
    if (it != sessions_.end() && it->second.st == session::state::in_progress)
      end_transaction(it->second, session::state::aborted);
  }
}

void storage::abort_all_transactions() {
  for (auto& [key, s] : sessions_) {
    if (s.st == session::state::in_progress) end_transaction(s, session::state::aborted);
  }
}

void storage::record_document_change(op_type op, const collection& c, const bson::value& id,
                                     doc_ptr full_document, doc_ptr pre_image,
                                     bson::document update_description) {
  (op == op_type::insert ? inserted_ : op == op_type::remove ? deleted_ : updated_)++;
  oplog_entry e;
  e.op = op;
  e.db = c.db();
  e.coll = c.name();
  e.uuid = c.shared_uuid();
  e.id = id;
  e.full_document = std::move(full_document);
  e.pre_image = std::move(pre_image);
  e.update_description = std::move(update_description);
  e.images_recorded = c.record_images();
  record(std::move(e));
}

void storage::record(oplog_entry entry) {
  const bool document_change = entry.op == op_type::insert || entry.op == op_type::update ||
                               entry.op == op_type::replace || entry.op == op_type::remove;
  if (!document_change) {
    pending_.everything = true;
  } else if (std::none_of(
                 pending_.namespaces.begin(), pending_.namespaces.end(),
                 [&](const auto& ns) { return ns.first == entry.db && ns.second == entry.coll; })) {
    pending_.namespaces.emplace_back(entry.db, entry.coll);
  }
  if (committing_ != nullptr) {
    entry.ts = commit_ts_;
    entry.wall_ms = commit_wall_ms_;
    entry.txn = commit_info_;
    entry.txn_op_index = commit_op_index_++;
  } else {
    entry.ts = tick();
    entry.wall_ms = wall_clock_ms();
  }
  oplog_.append(std::move(entry));
  ++change_count_;
}

bson::timestamp storage::cluster_time() const {
  return unpack(clock_.load());
}

bson::timestamp storage::tick() {
  const auto now = static_cast<std::uint32_t>(wall_clock_ms() / 1000);
  std::uint64_t last = clock_.load();
  bson::timestamp next;
  do {
    const auto l = unpack(last);
    next = now > l.t ? bson::timestamp{now, 1} : bson::timestamp{l.t, l.i + 1};
  } while (!clock_.compare_exchange_weak(last, pack(next)));
  return next;
}

}  // namespace mongo_emulator
