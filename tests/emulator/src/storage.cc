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

storage::storage(std::size_t oplog_max_events) : oplog_(oplog_max_events) {
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

collection& storage::make(std::string_view db, std::string_view coll,
                          const bson::document& options) {
  auto& slot = databases_[std::string(db)][std::string(coll)];
  slot = std::make_unique<collection>(std::string(db), std::string(coll));
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
  auto record_id = c.insert(doc);
  if (!record_id) return record_id;
  const auto* id = doc->get("_id");
  record_document_change(op_type::insert, c, id ? *id : bson::value{}, doc, nullptr, {});
  return record_id;
}

denormd::status storage::update(collection& c, std::uint64_t record, doc_ptr doc,
                                bson::document update_description) {
  auto before = c.get(record);
  if (auto ok = c.update(record, doc, update_description); !ok) return ok;
  const auto* id = doc->get("_id");
  const bool images = c.record_images();
  record_document_change(op_type::update, c, id ? *id : bson::value{}, images ? doc : nullptr,
                         images ? before : nullptr, std::move(update_description));
  return {};
}

denormd::status storage::replace(collection& c, std::uint64_t record, doc_ptr doc) {
  auto before = c.get(record);
  if (auto ok = c.replace(record, doc); !ok) return ok;
  const auto* id = doc->get("_id");
  record_document_change(op_type::replace, c, id ? *id : bson::value{}, doc,
                         c.record_images() ? before : nullptr, {});
  return {};
}

void storage::remove(collection& c, std::uint64_t record) {
  auto before = c.get(record);
  if (before == nullptr) return;
  c.erase(record);
  const auto* id = before->get("_id");
  record_document_change(op_type::remove, c, id ? *id : bson::value{}, nullptr,
                         c.record_images() ? before : nullptr, {});
}

void storage::record_document_change(op_type op, const collection& c, const bson::value& id,
                                     doc_ptr full_document, doc_ptr pre_image,
                                     bson::document update_description) {
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
  entry.ts = tick();
  entry.wall_ms = wall_clock_ms();
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
