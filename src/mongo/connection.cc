#include "mongo/connection.h"

#include <mongoc/mongoc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "bson/convert.h"
#include "common/handle.h"
#include "common/log.h"
#include "mongo/uri_redaction.h"

namespace denormd::mongo {

namespace {

// bson_t carries an alignment attribute GCC warns about in template arguments.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
using uri_ptr = c_handle<mongoc_uri_t, mongoc_uri_destroy>;
using pool_ptr = c_handle<mongoc_client_pool_t, mongoc_client_pool_destroy>;
using collection_ptr = c_handle<mongoc_collection_t, mongoc_collection_destroy>;
using database_ptr = c_handle<mongoc_database_t, mongoc_database_destroy>;
using stream_ptr = c_handle<mongoc_change_stream_t, mongoc_change_stream_destroy>;
using cursor_ptr = c_handle<mongoc_cursor_t, mongoc_cursor_destroy>;
using bulk_ptr = c_handle<mongoc_bulk_operation_t, mongoc_bulk_operation_destroy>;
using write_concern_ptr = c_handle<mongoc_write_concern_t, mongoc_write_concern_destroy>;
using apm_ptr = c_handle<mongoc_apm_callbacks_t, mongoc_apm_callbacks_destroy>;
using server_ptr = c_handle<mongoc_server_description_t, mongoc_server_description_destroy>;
using session_ptr = c_handle<mongoc_client_session_t, mongoc_client_session_destroy>;
using txn_opts_ptr = c_handle<mongoc_transaction_opt_t, mongoc_transaction_opts_destroy>;
using read_concern_ptr = c_handle<mongoc_read_concern_t, mongoc_read_concern_destroy>;
#pragma GCC diagnostic pop

// A reply the driver initializes in caller storage (its out-parameters want a bson_t it can
// bson_init); destroyed with the scope.
struct scoped_reply {
  bson_t doc = BSON_INITIALIZER;
  scoped_reply() = default;
  scoped_reply(const scoped_reply&) = delete;
  scoped_reply& operator=(const scoped_reply&) = delete;
  ~scoped_reply() { bson_destroy(&doc); }
};

// Set while this thread has the driver parse a URI: whatever it logs then is about the URI
// (its log domain does not say so reliably: "Unsupported URI option" comes as "mongoc").
thread_local bool parsing_uri = false;

// The driver's own log lines go through denormd's logger, so they obey --log-level and
// --log-format, and are redacted: they may quote the URI, a host or an option value. Its
// TRACE lines are dropped.
void route_driver_log(mongoc_log_level_t level, const char* domain, const char* message,
                      void* /*user_data*/) {
  log::level l = log::level::debug;
  switch (level) {
    case MONGOC_LOG_LEVEL_ERROR:
    case MONGOC_LOG_LEVEL_CRITICAL:
      l = log::level::error;
      break;
    case MONGOC_LOG_LEVEL_WARNING:
      l = log::level::warn;
      break;
    case MONGOC_LOG_LEVEL_MESSAGE:
    case MONGOC_LOG_LEVEL_INFO:
      l = log::level::info;
      break;
    case MONGOC_LOG_LEVEL_DEBUG:
      l = log::level::debug;
      break;
    case MONGOC_LOG_LEVEL_TRACE:
      return;
  }
  if (!log::enabled(l)) return;
  const std::string_view d = domain != nullptr ? domain : "";
  const char* text = message != nullptr ? message : "";
  // Messages about the URI quote user names, passwords, option values and pieces of them.
  const bool about_uri = parsing_uri || d == "uri";
  log::write(l, "mongoc", about_uri ? redact_known_uri_message(text) : redact_known_secrets(text),
             {{"domain", d}});
}

// libmongoc 1.23 as Debian builds it initializes itself in a library constructor, before
// main, and keeps its counters in /dev/shm/mongoc-<pid>. A process that is killed (or leaves
// through _Exit at the stop deadline) leaves that file behind; a later process that gets the
// same pid then finds it and warns on stderr in the driver's own format, before denormd's log
// handler exists. denormd does not export those counters, so it removes the name: a stale one
// in a preinit function, which runs before any library constructor, and its own as soon as it
// can. The mapping stays valid without a name.
void unlink_shared_memory_counters(int /*argc*/, char** /*argv*/, char** /*envp*/) {
  char name[32];
  std::snprintf(name, sizeof name, "/mongoc-%u", static_cast<unsigned>(getpid()));
  shm_unlink(name);
}
using preinit_function = void (*)(int, char**, char**);
[[gnu::section(".preinit_array"), gnu::used]] const preinit_function unlink_stale_counters =
    unlink_shared_memory_counters;

// mongoc_init/mongoc_cleanup once per process; the log handler before anything can log.
void init_driver() {
  static std::once_flag once;
  std::call_once(once, [] {
    mongoc_log_set_handler(route_driver_log, nullptr);
    mongoc_init();
    std::atexit(mongoc_cleanup);
    unlink_shared_memory_counters(0, nullptr, nullptr);
  });
}

std::vector<std::string> labels_of(const bson_t* reply) {
  std::vector<std::string> labels;
  bson_iter_t it;
  bson_iter_t child;
  if (reply != nullptr && bson_iter_init_find(&it, reply, "errorLabels") &&
      BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &child)) {
    while (bson_iter_next(&child)) {
      if (BSON_ITER_HOLDS_UTF8(&child)) labels.emplace_back(bson_iter_utf8(&child, nullptr));
    }
  }
  return labels;
}

driver_error to_error(const bson_error_t& e, const bson_t* reply) {
  driver_error d;
  d.code = e.code;
  d.message = redact_known_secrets(e.message);
  switch (e.domain) {
    case MONGOC_ERROR_SERVER:
    case MONGOC_ERROR_WRITE_CONCERN:
    case MONGOC_ERROR_QUERY:
      d.from = driver_error::origin::server;
      break;
    case MONGOC_ERROR_STREAM:
    case MONGOC_ERROR_SERVER_SELECTION:
    case MONGOC_ERROR_PROTOCOL:
      d.from = driver_error::origin::network;
      break;
    default:
      d.from = driver_error::origin::client;
  }
  if (e.domain == MONGOC_ERROR_CLIENT && e.code == MONGOC_ERROR_CLIENT_AUTHENTICATE) {
    // The server refused the credentials (its 18 AuthenticationFailed, which libmongoc reports
    // as its own error): counted and reported as the server's code.
    d.from = driver_error::origin::server;
    d.code = authentication_failed_code;
  }
  d.labels = labels_of(reply);
  return d;
}

driver_error client_error(std::string message) {
  return driver_error{driver_error::origin::client, 0, std::move(message), {}};
}

// Returns a pooled client to its pool (a deleter that needs the pool, so not c_deleter).
struct pool_return {
  mongoc_client_pool_t* pool = nullptr;
  void operator()(mongoc_client_t* c) const noexcept {
    if (c != nullptr) mongoc_client_pool_push(pool, c);
  }
};
using lease = std::unique_ptr<mongoc_client_t, pool_return>;

// The resume counter of the change stream whose next() runs on this thread, if any: the
// driver's internal resume is an `aggregate` it sends from inside mongoc_change_stream_next,
// on the calling thread, and APM is the only place it shows.
thread_local std::uint64_t* resumes_in_next = nullptr;

void count_driver_resume(const mongoc_apm_command_started_t* event) {
  if (resumes_in_next != nullptr &&
      std::string_view(mongoc_apm_command_started_get_command_name(event)) == "aggregate") {
    ++*resumes_in_next;
  }
}

// A URI option denormd sets unless the URI already does.
void default_uri_option(mongoc_uri_t* uri, const char* option, std::int32_t value) {
  if (value > 0 && !mongoc_uri_has_option(uri, option))
    mongoc_uri_set_option_as_int32(uri, option, value);
}

std::int64_t int_field(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &doc, key)) return 0;
  return BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0;
}

// The first of a write reply's `writeErrors`, as `out`'s failed statement: whether there was one.
bool take_write_error(const bson_t& reply, bulk_outcome& out) {
  bson_iter_t it;
  bson_iter_t errors;
  bson_iter_t first;
  if (!bson_iter_init_find(&it, &reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
      !bson_iter_recurse(&it, &errors) || !bson_iter_next(&errors) ||
      !BSON_ITER_HOLDS_DOCUMENT(&errors) || !bson_iter_recurse(&errors, &first)) {
    return false;
  }
  driver_error e{driver_error::origin::server, 0, "write error", {}};
  while (bson_iter_next(&first)) {
    const std::string_view key = bson_iter_key(&first);
    if (key == "index" && BSON_ITER_HOLDS_NUMBER(&first)) {
      out.failed_index = static_cast<std::size_t>(bson_iter_as_int64(&first));
    } else if (key == "code" && BSON_ITER_HOLDS_NUMBER(&first)) {
      e.code = static_cast<std::uint32_t>(bson_iter_as_int64(&first));
    } else if (key == "errmsg" && BSON_ITER_HOLDS_UTF8(&first)) {
      e.message = redact_known_secrets(bson_iter_utf8(&first, nullptr));
    }
  }
  e.labels = labels_of(&reply);
  if (!out.failed_index) out.failed_index = 0;
  out.write_error = std::move(e);
  return true;
}

// find and find_one through a client's find_each.
result<std::vector<bson::document>> find_all(document_client& client, const std::string& db,
                                             const std::string& coll, const bson::document& filter,
                                             const find_options& opts) {
  std::vector<bson::document> out;
  auto st = client.find_each(db, coll, filter, opts, [&](bson::document&& d) {
    out.push_back(std::move(d));
    return true;
  });
  if (!st) return st.error();
  return out;
}

result<std::optional<bson::document>> find_first(document_client& client, const std::string& db,
                                                 const std::string& coll,
                                                 const bson::document& filter) {
  find_options opts;
  opts.limit = 1;
  auto docs = find_all(client, db, coll, filter, opts);
  if (!docs) return docs.error();
  if (docs->empty()) return std::optional<bson::document>{};
  return std::optional<bson::document>(std::move(docs->front()));
}

// Hands every document of `cursor` to `each` until it says stop; the cursor's error, if any.
status drain(mongoc_cursor_t* cursor, const std::function<bool(bson::document&&)>& each) {
  const bson_t* doc = nullptr;
  while (mongoc_cursor_next(cursor, &doc)) {
    auto d = bson::from_bson(*doc);
    if (!d) return failure(client_error(d.error().message));
    if (!each(std::move(d).value())) return {};
  }
  bson_error_t err;
  const bson_t* reply = nullptr;
  if (mongoc_cursor_error_document(cursor, &err, &reply)) return failure(to_error(err, reply));
  return {};
}

}  // namespace

struct connection::impl {
  uri_ptr uri;
  pool_ptr pool;
  std::string default_db;
  std::string credentials;  // whose credentials the URI gives (describe()); "" for none
  write_concern_ptr majority;

  lease acquire() { return lease(mongoc_client_pool_pop(pool.get()), pool_return{pool.get()}); }

  collection_ptr collection(mongoc_client_t* client, const std::string& db,
                            const std::string& coll) const {
    return collection_ptr(mongoc_client_get_collection(client, db.c_str(), coll.c_str()));
  }

  // {writeConcern: {w: "majority", wtimeout}} plus `extra`.
  bson::bson_ptr write_opts(const bson::document& extra = {}) const {
    bson::bson_ptr opts = bson::to_bson(extra);
    mongoc_write_concern_append(majority.get(), opts.get());
    return opts;
  }

  // The operations, on `client`, in `session`'s transaction when there is one (a statement in a
  // transaction carries the session and no write concern: the commit has it).
  result<bulk_outcome> update_bulk(mongoc_client_t* client, mongoc_client_session_t* session,
                                   const std::string& db, const std::string& coll,
                                   std::span<const write_request> requests, bool ordered) const;
  // One bulk write (libmongoc may send it as several commands).
  result<bulk_outcome> update_bulk_command(mongoc_client_t* client,
                                           mongoc_client_session_t* session, const std::string& db,
                                           const std::string& coll,
                                           std::span<const write_request> requests,
                                           bool ordered) const;
  status insert_one(mongoc_client_t* client, mongoc_client_session_t* session,
                    const std::string& db, const std::string& coll,
                    const bson::document& doc) const;
  status find_each(mongoc_client_t* client, mongoc_client_session_t* session, const std::string& db,
                   const std::string& coll, const bson::document& filter, const find_options& opts,
                   const std::function<bool(bson::document&&)>& each) const;
  result<std::vector<bson::document>> aggregate(mongoc_client_t* client,
                                                mongoc_client_session_t* session,
                                                const std::string& db, const std::string& coll,
                                                const bson::array& pipeline) const;

  // Write options: with `session`, its id; else the majority write concern.
  result<bson::bson_ptr> statement_opts(mongoc_client_session_t* session,
                                        const bson::document& extra = {}) const {
    if (session == nullptr) return write_opts(extra);
    return read_opts(session, extra);
  }
  // Read options: `extra` plus the session's id, if any.
  static result<bson::bson_ptr> read_opts(mongoc_client_session_t* session,
                                          const bson::document& extra = {}) {
    bson::bson_ptr opts = bson::to_bson(extra);
    bson_error_t err;
    if (session != nullptr && !mongoc_client_session_append(session, opts.get(), &err))
      return failure(to_error(err, nullptr));
    return opts;
  }
};

struct change_stream::impl {
  lease client;
  collection_ptr coll;
  stream_ptr stream;
  std::uint64_t driver_resumes = 0;
};

namespace {

// Whose credentials `uri` gives, for messages: user "NAME" (authSource DB), or the mechanism
// when it names no user (x.509 takes the name from the certificate); "" for none.
std::string credentials_of(const mongoc_uri_t* uri) {
  const char* user = mongoc_uri_get_username(uri);
  const char* mechanism = mongoc_uri_get_auth_mechanism(uri);
  if (user == nullptr || *user == '\0')
    return mechanism != nullptr ? std::string("the ") + mechanism + " credentials" : "";
  const char* source = mongoc_uri_get_auth_source(uri);
  return "user \"" + std::string(user) + "\" (authSource " +
         (source != nullptr ? source : "admin") + ")";
}

}  // namespace

connection::connection(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
connection::~connection() = default;

result<std::unique_ptr<connection>> connection::open(const std::string& uri,
                                                     const std::string& app_name,
                                                     const connect_options& timeouts) {
  // Known before the driver sees the URI: its parser may log or return them.
  remember_uri_secrets(uri);
  init_driver();
  auto i = std::make_unique<impl>();
  bson_error_t err;
  parsing_uri = true;
  i->uri.reset(mongoc_uri_new_with_error(uri.c_str(), &err));
  if (i->uri) {
    default_uri_option(i->uri.get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS,
                       timeouts.server_selection_timeout_ms);
    default_uri_option(i->uri.get(), MONGOC_URI_CONNECTTIMEOUTMS, timeouts.connect_timeout_ms);
    i->pool.reset(mongoc_client_pool_new(i->uri.get()));
  }
  parsing_uri = false;
  if (!i->uri)
    return failure(client_error("invalid MongoDB URI: " + redact_known_uri_message(err.message)));
  if (const char* db = mongoc_uri_get_database(i->uri.get())) i->default_db = db;
  i->credentials = credentials_of(i->uri.get());
  if (!i->pool) return failure(client_error("cannot create a client pool for this URI"));
  const apm_ptr apm(mongoc_apm_callbacks_new());
  mongoc_apm_set_command_started_cb(apm.get(), count_driver_resume);
  mongoc_client_pool_set_apm_callbacks(i->pool.get(), apm.get(), nullptr);
  mongoc_client_pool_set_error_api(i->pool.get(), MONGOC_ERROR_API_VERSION_2);
  mongoc_client_pool_set_appname(i->pool.get(), app_name.c_str());
  i->majority.reset(mongoc_write_concern_new());
  mongoc_write_concern_set_wmajority(i->majority.get(), 30000);
  return std::unique_ptr<connection>(new connection(std::move(i)));
}

const std::string& connection::default_database() const {
  return impl_->default_db;
}

std::string connection::describe(const driver_error& e) const {
  if (!e.authentication_failed() || impl_->credentials.empty()) return e.to_string();
  return "authentication failed for " + impl_->credentials + ": " + e.to_string();
}

result<bson::document> connection::command(const std::string& db, const bson::document& cmd) {
  lease client = impl_->acquire();
  const bson::bson_ptr c = bson::to_bson(cmd);
  scoped_reply reply;
  bson_error_t err;
  if (!mongoc_client_command_simple(client.get(), db.c_str(), c.get(), nullptr, &reply.doc, &err)) {
    return failure(to_error(err, &reply.doc));
  }
  auto doc = bson::from_bson(reply.doc);
  if (!doc) return failure(client_error(doc.error().message));
  return std::move(doc).value();
}

status connection::kill_sessions(const std::vector<bson::document>& lsids) {
  bson::array ids;
  for (const auto& lsid : lsids) {
    // Only the id: the server fills in the user.
    if (const bson::value* id = lsid.get("id")) ids.push_back(bson::document{{"id", *id}});
  }
  if (ids.empty()) return {};  // an empty list would kill every session of the user
  auto reply = command("admin", bson::document{{"killSessions", std::move(ids)}});
  if (!reply) return reply.error();
  return {};
}

result<bson::timestamp> connection::operation_time() {
  auto reply = command("admin", bson::document{{"ping", 1}});
  if (!reply) return reply.error();
  const bson::value* t = reply->get("operationTime");
  if (t == nullptr || !t->is<bson::timestamp>()) {
    return failure(
        client_error("the server's ping reply has no operationTime (not a replica set?)"));
  }
  return t->as<bson::timestamp>();
}

result<bulk_outcome> connection::update_bulk(const std::string& db, const std::string& coll,
                                             std::span<const write_request> requests,
                                             bool ordered) {
  if (requests.empty()) return bulk_outcome{};
  lease client = impl_->acquire();
  return impl_->update_bulk(client.get(), nullptr, db, coll, requests, ordered);
}

namespace {

// The bytes a statement adds to an update command, about (its documents' BSON sizes).
std::size_t statement_bytes(const write_request& r) {
  std::size_t n = 64 + bson::to_bson(*r.filter)->len;
  if (r.pipeline != nullptr && !r.pipeline->empty()) {
    n += bson::to_bson(bson::document{{"u", *r.pipeline}})->len;
  } else if (r.update != nullptr) {
    n += bson::to_bson(*r.update)->len;
  }
  if (r.array_filters != nullptr && !r.array_filters->empty())
    n += bson::to_bson(bson::document{{"a", *r.array_filters}})->len;
  return n;
}

}  // namespace

result<bulk_outcome> connection::impl::update_bulk(mongoc_client_t* client,
                                                   mongoc_client_session_t* session,
                                                   const std::string& db, const std::string& coll,
                                                   std::span<const write_request> requests,
                                                   bool ordered) const {
  if (session == nullptr || !mongoc_client_session_in_transaction(session))
    return update_bulk_command(client, session, db, coll, requests, ordered);
  // libmongoc 1.23 sends a bulk larger than one message as several commands built from one:
  // in a transaction's first statement each of them says startTransaction, and the server
  // refuses the second (117, "Only servers in a sharded cluster can start a new transaction
  // at the active transaction number"). So in a transaction a bulk goes as commands small
  // enough never to be split (16 MiB each, a third of the 48 MB message limit).
  constexpr std::size_t max_bytes = 16 * 1024 * 1024;
  constexpr std::size_t max_statements = 10000;
  bulk_outcome out;
  for (std::size_t start = 0; start < requests.size();) {
    std::size_t end = start;
    std::size_t bytes = 0;
    while (end < requests.size() && end - start < max_statements) {
      const std::size_t b = statement_bytes(requests[end]);
      if (end > start && bytes + b > max_bytes) break;
      bytes += b;
      ++end;
    }
    auto part = update_bulk_command(client, session, db, coll, requests.subspan(start, end - start),
                                    ordered);
    if (!part) return part;
    out.matched += part->matched;
    out.modified += part->modified;
    out.upserted += part->upserted;
    if (part->write_error) {
      out.write_error = std::move(part->write_error);
      if (part->failed_index) out.failed_index = start + *part->failed_index;
      return out;  // the refusal aborted the transaction: nothing after it can run
    }
    start = end;
  }
  return out;
}

result<bulk_outcome> connection::impl::update_bulk_command(
    mongoc_client_t* client, mongoc_client_session_t* session, const std::string& db,
    const std::string& coll, std::span<const write_request> requests, bool ordered) const {
  bulk_outcome out;
  if (requests.empty()) return out;
  const collection_ptr c = collection(client, db, coll);
  auto opts = statement_opts(session, bson::document{{"ordered", ordered}});
  if (!opts) return opts.error();
  bulk_ptr bulk(mongoc_collection_create_bulk_operation_with_opts(c.get(), opts->get()));
  bson_error_t err;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    const bson::bson_ptr filter = bson::to_bson(*r.filter);
    // libmongoc takes a pipeline update as a document keyed "0", "1", ... and sends it as an
    // array.
    bson::document stages;
    if (r.pipeline != nullptr && !r.pipeline->empty()) {
      for (std::size_t s = 0; s < r.pipeline->size(); ++s)
        stages.append(std::to_string(s), (*r.pipeline)[s]);
    }
    const bson::bson_ptr update = bson::to_bson(stages.empty() ? *r.update : stages);
    bson::document statement_opts;
    if (r.array_filters != nullptr && !r.array_filters->empty()) {
      statement_opts.append("arrayFilters", *r.array_filters);
    }
    if (r.upsert) statement_opts.append("upsert", true);
    const bson::bson_ptr sopts = bson::to_bson(statement_opts);
    const bool added = r.multi ? mongoc_bulk_operation_update_many_with_opts(
                                     bulk.get(), filter.get(), update.get(), sopts.get(), &err)
                               : mongoc_bulk_operation_update_one_with_opts(
                                     bulk.get(), filter.get(), update.get(), sopts.get(), &err);
    if (!added) {
      // Nothing was sent: report the statement so the caller can set it aside and go on.
      out.failed_index = i;
      out.write_error = to_error(err, nullptr);
      return out;
    }
  }
  scoped_reply reply;
  const bool ok = mongoc_bulk_operation_execute(bulk.get(), &reply.doc, &err) != 0;
  out.matched = int_field(reply.doc, "nMatched");
  out.modified = int_field(reply.doc, "nModified");
  out.upserted = int_field(reply.doc, "nUpserted");
  if (ok) return out;

  // A statement the server rejected is an outcome; anything else fails the whole bulk.
  if (take_write_error(reply.doc, out)) return out;
  return failure(to_error(err, &reply.doc));
}

result<bulk_outcome> connection::update_one_within(const std::string& db, const std::string& coll,
                                                   const write_request& request,
                                                   std::chrono::milliseconds max_time) {
  // The bulk API sends no maxTimeMS, so this is the update command itself.
  bson::document statement{{"q", *request.filter}};
  if (request.pipeline != nullptr && !request.pipeline->empty()) {
    statement.append("u", *request.pipeline);
  } else {
    statement.append("u", *request.update);
  }
  if (request.array_filters != nullptr && !request.array_filters->empty())
    statement.append("arrayFilters", *request.array_filters);
  statement.append("upsert", request.upsert);
  statement.append("multi", request.multi);
  const bson::bson_ptr cmd = bson::to_bson(bson::document{
      {"update", coll},
      {"updates", bson::array{std::move(statement)}},
      {"ordered", true},
      {"maxTimeMS", static_cast<std::int64_t>(std::max<std::int64_t>(1, max_time.count()))}});
  lease client = impl_->acquire();
  const bson::bson_ptr opts = impl_->write_opts();
  scoped_reply reply;
  bson_error_t err;
  const bool ok = mongoc_client_write_command_with_opts(client.get(), db.c_str(), cmd.get(),
                                                        opts.get(), &reply.doc, &err) != 0;
  bulk_outcome out;
  // The update command counts upserts in `n` and lists them in `upserted`.
  bson_iter_t it;
  bson_iter_t upserted;
  if (bson_iter_init_find(&it, &reply.doc, "upserted") && BSON_ITER_HOLDS_ARRAY(&it) &&
      bson_iter_recurse(&it, &upserted)) {
    while (bson_iter_next(&upserted))
      ++out.upserted;
  }
  out.matched = int_field(reply.doc, "n") - out.upserted;
  out.modified = int_field(reply.doc, "nModified");
  if (take_write_error(reply.doc, out)) return out;
  if (!ok) return failure(to_error(err, &reply.doc));
  return out;
}

status connection::replace_one(const std::string& db, const std::string& coll,
                               const bson::document& filter, const bson::document& replacement,
                               bool upsert) {
  lease client = impl_->acquire();
  const collection_ptr c = impl_->collection(client.get(), db, coll);
  const bson::bson_ptr f = bson::to_bson(filter);
  const bson::bson_ptr r = bson::to_bson(replacement);
  const bson::bson_ptr opts = impl_->write_opts(bson::document{{"upsert", upsert}});
  scoped_reply reply;
  bson_error_t err;
  if (!mongoc_collection_replace_one(c.get(), f.get(), r.get(), opts.get(), &reply.doc, &err)) {
    return failure(to_error(err, &reply.doc));
  }
  return {};
}

status connection::insert_one(const std::string& db, const std::string& coll,
                              const bson::document& doc) {
  lease client = impl_->acquire();
  return impl_->insert_one(client.get(), nullptr, db, coll, doc);
}

status connection::impl::insert_one(mongoc_client_t* client, mongoc_client_session_t* session,
                                    const std::string& db, const std::string& coll,
                                    const bson::document& doc) const {
  const collection_ptr c = collection(client, db, coll);
  const bson::bson_ptr d = bson::to_bson(doc);
  auto opts = statement_opts(session);
  if (!opts) return opts.error();
  scoped_reply reply;
  bson_error_t err;
  if (!mongoc_collection_insert_one(c.get(), d.get(), opts->get(), &reply.doc, &err)) {
    return failure(to_error(err, &reply.doc));
  }
  return {};
}

status connection::find_each(const std::string& db, const std::string& coll,
                             const bson::document& filter, const find_options& opts,
                             const std::function<bool(bson::document&&)>& each) {
  lease client = impl_->acquire();
  return impl_->find_each(client.get(), nullptr, db, coll, filter, opts, each);
}

status connection::impl::find_each(mongoc_client_t* client, mongoc_client_session_t* session,
                                   const std::string& db, const std::string& coll,
                                   const bson::document& filter, const find_options& opts,
                                   const std::function<bool(bson::document&&)>& each) const {
  const collection_ptr c = collection(client, db, coll);
  bson::document o;
  if (!opts.sort.empty()) o.append("sort", opts.sort);
  if (!opts.projection.empty()) o.append("projection", opts.projection);
  if (opts.limit > 0) o.append("limit", opts.limit);
  if (opts.batch_size > 0) o.append("batchSize", opts.batch_size);
  const bson::bson_ptr f = bson::to_bson(filter);
  auto find_opts = read_opts(session, o);
  if (!find_opts) return find_opts.error();
  cursor_ptr cursor(mongoc_collection_find_with_opts(c.get(), f.get(), find_opts->get(), nullptr));
  return drain(cursor.get(), each);
}

result<std::vector<bson::document>> connection::find(const std::string& db, const std::string& coll,
                                                     const bson::document& filter,
                                                     const find_options& opts) {
  return find_all(*this, db, coll, filter, opts);
}

result<std::optional<bson::document>> connection::find_one(const std::string& db,
                                                           const std::string& coll,
                                                           const bson::document& filter) {
  return find_first(*this, db, coll, filter);
}

result<connection::snapshot_results> connection::aggregate_snapshot(const std::string& db,
                                                                    const std::string& coll,
                                                                    const bson::array& pipeline) {
  lease client = impl_->acquire();
  bson_error_t err;
  // The getMores must go where the aggregate went: one server, chosen first.
  const server_ptr server(mongoc_client_select_server(client.get(), false, nullptr, &err));
  if (!server) return failure(to_error(err, nullptr));
  const auto server_id = static_cast<std::int64_t>(mongoc_server_description_id(server.get()));
  // An explicit session: the server ties the cursor to it, so the getMores must carry it.
  const session_ptr session(mongoc_client_start_session(client.get(), nullptr, &err));
  if (!session) return failure(to_error(err, nullptr));
  const bson::bson_ptr cmd = bson::to_bson(
      bson::document{{"aggregate", coll}, {"pipeline", pipeline}, {"cursor", bson::document{}}});
  const bson::bson_ptr opts = bson::to_bson(bson::document{
      {"readConcern", bson::document{{"level", "snapshot"}}}, {"serverId", server_id}});
  const bson::bson_ptr cursor_opts = bson::to_bson(bson::document{{"serverId", server_id}});
  if (!mongoc_client_session_append(session.get(), opts.get(), &err) ||
      !mongoc_client_session_append(session.get(), cursor_opts.get(), &err)) {
    return failure(to_error(err, nullptr));
  }
  scoped_reply reply;
  if (!mongoc_client_read_command_with_opts(client.get(), db.c_str(), cmd.get(), nullptr,
                                            opts.get(), &reply.doc, &err)) {
    return failure(to_error(err, &reply.doc));
  }
  snapshot_results out;
  bson_iter_t it;
  if (!bson_iter_init(&it, &reply.doc) ||
      !bson_iter_find_descendant(&it, "cursor.atClusterTime", &it) ||
      !BSON_ITER_HOLDS_TIMESTAMP(&it)) {
    return failure(client_error(
        "the server's reply to a snapshot aggregate has no cursor.atClusterTime (MongoDB 5.0 or "
        "later is needed)"));
  }
  bson_iter_timestamp(&it, &out.at.t, &out.at.i);
  // The cursor takes the reply it starts from and destroys it.
  cursor_ptr cursor(mongoc_cursor_new_from_command_reply_with_opts(
      client.get(), bson_copy(&reply.doc), cursor_opts.get()));
  const bson_t* doc = nullptr;
  while (mongoc_cursor_next(cursor.get(), &doc)) {
    auto d = bson::from_bson(*doc);
    if (!d) return failure(client_error(d.error().message));
    out.docs.push_back(std::move(d).value());
  }
  const bson_t* error_reply = nullptr;
  if (mongoc_cursor_error_document(cursor.get(), &err, &error_reply))
    return failure(to_error(err, error_reply));
  return out;
}

result<std::vector<bson::document>> connection::aggregate(const std::string& db,
                                                          const std::string& coll,
                                                          const bson::array& pipeline) {
  lease client = impl_->acquire();
  return impl_->aggregate(client.get(), nullptr, db, coll, pipeline);
}

result<std::vector<bson::document>> connection::impl::aggregate(mongoc_client_t* client,
                                                                mongoc_client_session_t* session,
                                                                const std::string& db,
                                                                const std::string& coll,
                                                                const bson::array& pipeline) const {
  const bson::bson_ptr p = bson::to_bson(bson::document{{"pipeline", pipeline}});
  auto opts = read_opts(session);
  if (!opts) return opts.error();
  cursor_ptr cursor;
  if (coll.empty()) {
    // {aggregate: 1}: a pipeline that reads no collection ($documents).
    const database_ptr d(mongoc_client_get_database(client, db.c_str()));
    cursor.reset(mongoc_database_aggregate(d.get(), p.get(), opts->get(), nullptr));
  } else {
    const collection_ptr c = collection(client, db, coll);
    cursor.reset(
        mongoc_collection_aggregate(c.get(), MONGOC_QUERY_NONE, p.get(), opts->get(), nullptr));
  }
  std::vector<bson::document> out;
  const bson_t* doc = nullptr;
  while (mongoc_cursor_next(cursor.get(), &doc)) {
    auto d = bson::from_bson(*doc);
    if (!d) return failure(client_error(d.error().message));
    out.push_back(std::move(d).value());
  }
  bson_error_t err;
  const bson_t* reply = nullptr;
  if (mongoc_cursor_error_document(cursor.get(), &err, &reply))
    return failure(to_error(err, reply));
  return out;
}

status connection::aggregate_each(const std::string& db, const std::string& coll,
                                  const bson::array& pipeline, const aggregate_options& opts,
                                  const std::function<bool(bson::document&&)>& each) {
  lease client = impl_->acquire();
  const bson::bson_ptr p = bson::to_bson(bson::document{{"pipeline", pipeline}});
  bson::document o;
  if (opts.max_time_ms > 0) o.append("maxTimeMS", opts.max_time_ms);
  if (opts.allow_disk_use) o.append("allowDiskUse", true);
  if (opts.batch_size > 0) o.append("batchSize", opts.batch_size);
  const bson::bson_ptr aggregate_opts = bson::to_bson(o);
  const collection_ptr c = impl_->collection(client.get(), db, coll);
  const cursor_ptr cursor(mongoc_collection_aggregate(c.get(), MONGOC_QUERY_NONE, p.get(),
                                                      aggregate_opts.get(), nullptr));
  return drain(cursor.get(), each);
}

namespace {

// A pooled client and one logical session on it, held as long as either is used. The session
// goes first (destroying it aborts a transaction still open), then the client goes back.
struct session_holder {
  lease client;
  session_ptr session;
};

result<session_holder> open_session(connection::impl& conn) {
  session_holder h{conn.acquire(), nullptr};
  bson_error_t err;
  h.session.reset(mongoc_client_start_session(h.client.get(), nullptr, &err));
  if (!h.session) return failure(to_error(err, nullptr));
  return h;
}

// A transaction on `session`, which `client` runs: readConcern "snapshot", w:"majority" at
// commit. Owns the two when `owned` holds them (a transaction on a session of its own);
// otherwise borrows them from a session_runner. Destroyed before its commit, it aborts.
class session_transaction final : public transaction {
 public:
  session_transaction(connection& owner, connection::impl& conn, mongoc_client_t* client,
                      mongoc_client_session_t* session, std::optional<session_holder> owned)
      : owner_(owner), conn_(conn), client_(client), session_(session), owned_(std::move(owned)) {}
  ~session_transaction() override {
    // A borrowed session outlives this transaction: end it here (an owned one ends with it).
    if (!owned_ && mongoc_client_session_in_transaction(session_)) {
      bson_error_t err;
      (void)mongoc_client_session_abort_transaction(session_, &err);
    }
  }
  session_transaction(const session_transaction&) = delete;
  session_transaction& operator=(const session_transaction&) = delete;

  static result<std::unique_ptr<transaction>> start(connection& owner, connection::impl& conn,
                                                    mongoc_client_t* client,
                                                    mongoc_client_session_t* session,
                                                    std::optional<session_holder> owned) {
    const txn_opts_ptr opts(mongoc_transaction_opts_new());
    const read_concern_ptr snapshot(mongoc_read_concern_new());
    mongoc_read_concern_set_level(snapshot.get(), MONGOC_READ_CONCERN_LEVEL_SNAPSHOT);
    mongoc_transaction_opts_set_read_concern(opts.get(), snapshot.get());
    mongoc_transaction_opts_set_write_concern(opts.get(), conn.majority.get());
    bson_error_t err;
    if (!mongoc_client_session_start_transaction(session, opts.get(), &err))
      return failure(to_error(err, nullptr));
    return std::unique_ptr<transaction>(
        std::make_unique<session_transaction>(owner, conn, client, session, std::move(owned)));
  }

  result<bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                   std::span<const write_request> requests, bool ordered) override {
    return conn_.update_bulk(client_, session_, db, coll, requests, ordered);
  }
  status insert_one(const std::string& db, const std::string& coll,
                    const bson::document& doc) override {
    return conn_.insert_one(client_, session_, db, coll, doc);
  }
  status find_each(const std::string& db, const std::string& coll, const bson::document& filter,
                   const find_options& opts,
                   const std::function<bool(bson::document&&)>& each) override {
    return conn_.find_each(client_, session_, db, coll, filter, opts, each);
  }
  result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                           const bson::document& filter,
                                           const find_options& opts) override {
    return find_all(*this, db, coll, filter, opts);
  }
  result<std::optional<bson::document>> find_one(const std::string& db, const std::string& coll,
                                                 const bson::document& filter) override {
    return find_first(*this, db, coll, filter);
  }
  result<std::vector<bson::document>> aggregate(const std::string& db, const std::string& coll,
                                                const bson::array& pipeline) override {
    return conn_.aggregate(client_, session_, db, coll, pipeline);
  }
  result<snapshot_results> aggregate_snapshot(const std::string& db, const std::string& coll,
                                              const bson::array& pipeline) override {
    return owner_.aggregate_snapshot(db, coll, pipeline);
  }

  bson::document session_id() const override { return lsid_of(session_); }

  status commit() override {
    scoped_reply reply;
    bson_error_t err;
    if (!mongoc_client_session_commit_transaction(session_, &reply.doc, &err))
      return failure(to_error(err, &reply.doc));
    return {};
  }

  static bson::document lsid_of(mongoc_client_session_t* session) {
    const bson_t* lsid = mongoc_client_session_get_lsid(session);
    auto doc = bson::from_bson(*lsid);
    return doc ? std::move(doc).value() : bson::document{};
  }

 private:
  connection& owner_;
  connection::impl& conn_;
  mongoc_client_t* client_;
  mongoc_client_session_t* session_;
  std::optional<session_holder> owned_;
};

// A session kept for transactions one after another (connection::start_session).
class session_runner final : public session {
 public:
  session_runner(connection& owner, connection::impl& conn, session_holder held)
      : owner_(owner), conn_(conn), held_(std::move(held)) {}

  bson::document id() const override { return session_transaction::lsid_of(held_.session.get()); }
  result<std::unique_ptr<transaction>> start_transaction() override {
    return session_transaction::start(owner_, conn_, held_.client.get(), held_.session.get(),
                                      std::nullopt);
  }

 private:
  connection& owner_;
  connection::impl& conn_;
  session_holder held_;
};

}  // namespace

result<std::unique_ptr<transaction>> connection::start_transaction() {
  auto held = open_session(*impl_);
  if (!held) return held.error();
  mongoc_client_t* client = held->client.get();
  mongoc_client_session_t* session = held->session.get();
  return session_transaction::start(*this, *impl_, client, session, std::move(*held));
}

result<std::unique_ptr<session>> connection::start_session() {
  auto held = open_session(*impl_);
  if (!held) return held.error();
  return std::unique_ptr<session>(
      std::make_unique<session_runner>(*this, *impl_, std::move(*held)));
}

result<std::unique_ptr<change_stream>> connection::watch(const std::string& db,
                                                         const std::string& coll,
                                                         const watch_options& opts) {
  auto s = std::make_unique<change_stream::impl>();
  s->client = impl_->acquire();
  s->coll = impl_->collection(s->client.get(), db, coll);
  bson::document o;
  if (opts.post_images) {
    o.append("fullDocument", "whenAvailable");
  } else if (opts.update_lookup) {
    o.append("fullDocument", "updateLookup");
  }
  if (opts.pre_images) o.append("fullDocumentBeforeChange", "whenAvailable");
  if (opts.resume_after) o.append("resumeAfter", *opts.resume_after);
  if (opts.start_after) o.append("startAfter", *opts.start_after);
  if (opts.start_at_operation_time) o.append("startAtOperationTime", *opts.start_at_operation_time);
  o.append("maxAwaitTimeMS", static_cast<std::int64_t>(opts.max_await_ms));
  if (opts.batch_size > 0) o.append("batchSize", opts.batch_size);
  const bson::bson_ptr pipeline = bson::to_bson(bson::document{{"pipeline", opts.pipeline}});
  const bson::bson_ptr watch_opts = bson::to_bson(o);
  s->stream.reset(mongoc_collection_watch(s->coll.get(), pipeline.get(), watch_opts.get()));
  bson_error_t err;
  const bson_t* reply = nullptr;
  if (mongoc_change_stream_error_document(s->stream.get(), &err, &reply)) {
    return failure(to_error(err, reply));
  }
  return std::make_unique<change_stream>(std::move(s));
}

change_stream::change_stream(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

change_stream::~change_stream() {
  // The stream goes before the collection and the client it came from.
  if (impl_) {
    impl_->stream.reset();
    impl_->coll.reset();
  }
}

result<std::optional<std::vector<std::uint8_t>>> change_stream::next() {
  const bson_t* doc = nullptr;
  resumes_in_next = &impl_->driver_resumes;
  const bool got = mongoc_change_stream_next(impl_->stream.get(), &doc);
  resumes_in_next = nullptr;
  if (got) {
    const std::uint8_t* data = bson_get_data(doc);
    return std::optional<std::vector<std::uint8_t>>(
        std::vector<std::uint8_t>(data, data + doc->len));
  }
  bson_error_t err;
  const bson_t* reply = nullptr;
  if (mongoc_change_stream_error_document(impl_->stream.get(), &err, &reply)) {
    return failure(to_error(err, reply));
  }
  return std::optional<std::vector<std::uint8_t>>{};
}

std::uint64_t change_stream::driver_resumes() const {
  return impl_->driver_resumes;
}

std::optional<bson::document> change_stream::resume_token() const {
  const bson_t* token = mongoc_change_stream_get_resume_token(impl_->stream.get());
  if (token == nullptr) return std::nullopt;
  auto d = bson::from_bson(*token);
  if (!d) return std::nullopt;
  return std::move(d).value();
}

}  // namespace denormd::mongo
