#pragma once
// One open change stream: its scope (collection, database or cluster), options, the stages after
// $changeStream, and its position in the change history. Turns oplog entries into change events
// (MongoDB 6.0 field layout), resuming strictly after its position.
// Lifecycle: created by `aggregate`, owned by the cursor registry, read by one getMore at a time
// (the registry pins it); every call needs the storage read lock.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "change_notifier.h"
#include "common/expected.h"
#include "resume_token.h"
#include "storage.h"

namespace mongo_emulator {

// A stage after $changeStream applied to one event: the event, transformed, or nullopt when
// it is filtered out.
using event_stage = std::function<denormd::expected<std::optional<bson::document>>(bson::document)>;

class change_stream {
 public:
  enum class scope { collection, database, cluster };

  struct batch {
    // Events; without stages after $changeStream each is pre-encoded (a bson::binary of
    // raw_document_subtype, see bson_writer.h) and only the reply encoder may read it.
    bson::array events;
    bson::document post_batch_resume_token;
    bool invalidated = false;  // the stream has ended: the reply carries cursor id 0
  };

  // Opens a stream for `aggregate` on `db`/`coll` (`coll` empty for `aggregate: 1`) with the
  // given pipeline, whose first stage is $changeStream. Validates options and the resume point
  // against the history (errors 40324, 40647, 40674, 50865, 260, 280, 286, ...).
  // Needs the storage read lock.
  static denormd::expected<std::unique_ptr<change_stream>> open(
      storage& s, std::string db, std::string coll, const bson::array& pipeline,
      const bson::document* let = nullptr);

  // The namespace cursor replies carry ("db.coll", or "db.$cmd.aggregate" for wider scopes).
  const std::string& ns() const { return ns_; }
  // The namespaces whose changes can produce events here (for waking await-data getMores).
  watch_scope scope_watched() const;

  // Up to `max_events` events (and about `max_bytes`) after the current position. Errors are
  // fatal for the stream (e.g. 280 when a stage changed `_id`, 286 when history was lost).
  denormd::expected<batch> next(const storage& s, std::size_t max_events, std::size_t max_bytes);

 private:
  struct produced {
    resume_token token;
    const oplog_entry* entry;
  };

  change_stream() = default;
  denormd::status parse_options(const bson::document& spec, bool on_admin);
  denormd::status parse_stages(const bson::array& pipeline, const bson::document* let);
  denormd::status check_resume_point(const storage& s, const resume_token& token) const;
  // The events this stream sees for one entry (0, 1 or 2 with an invalidate), before stages.
  void events_for(const oplog_entry& e, std::vector<produced>& out) const;
  bool in_scope(std::string_view db, std::string_view coll) const;
  // The event as a value tree (when stages follow) or as wire bytes (when none do).
  template <class Sink>
  denormd::status build_event(const storage& s, const produced& p, Sink& sink) const;
  denormd::expected<bson::document> make_event(const storage& s, const produced& p) const;
  denormd::expected<std::vector<std::uint8_t>> encode_event(const storage& s,
                                                            const produced& p) const;

  scope scope_ = scope::collection;
  std::string db_;
  std::string coll_;
  std::string ns_;
  std::string full_document_ = "default";
  std::string before_change_ = "off";
  bool show_expanded_ = false;  // showExpandedEvents: DDL events and collectionUUID
  std::vector<event_stage> stages_;
  // How many of stages_ are the $match stages right after $changeStream: MongoDB applies those
  // while scanning history, so a resume token whose event they drop is never found.
  std::size_t leading_matches_ = 0;
  resume_token position_;  // events strictly after it are still to be delivered
  bool invalidated_ = false;
};

}  // namespace mongo_emulator
