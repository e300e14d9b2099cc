#pragma once
// `denormd status`: per watched namespace, the stored checkpoint (token, the times in it,
// its age) and where removed mappings stopped in it, whether the server's history still reaches
// back to it, tested by opening a
// change stream that resumes after the token and closing it at once, its headroom: how
// far the oldest entry the server keeps is behind it (oplog_window.h), and with --ha its
// lease: which instance streams it, under which epoch, until when; and its write fence: which
// process run writes it (docs/architecture.md, "The write fence"), and what its holder last
// reported of its stream with its heartbeat (lease/unit_report.h). One run at a time; the
// renderings are pure.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "checkpoint/checkpoint_store.h"
#include "lease/unit_report.h"
#include "mapping/ns.h"
#include "mongo/connection.h"

namespace denormd::ops {

enum class history_state { reachable, lost, unknown, no_checkpoint };

// A namespace's lease as status shows it (owner "" when released).
struct lease_status {
  std::string owner;
  std::int64_t epoch = 0;
  std::int64_t expires_ms = 0;  // the server's time
  bool expired = false;         // judged by the server when read
};

struct source_status {
  mapping::ns source;
  bool has_checkpoint = false;
  bson::document token;
  std::optional<bson::timestamp> cluster_time;  // decoded from the token, when it is MongoDB's
  std::int64_t event_ms = 0;                    // wall time of the last applied event (0: unknown)
  std::int64_t saved_ms = 0;                    // when the checkpoint was stored
  // Removed mappings that stopped reading it, and where: put back with the same fingerprint,
  // each replays from there.
  std::vector<checkpoint::stopped_mapping> stopped;
  history_state history = history_state::no_checkpoint;
  std::string detail;  // the server's answer when history is lost or could not be tested
  // Seconds from the oldest kept oplog entry to the checkpoint; nullopt when not measured, and
  // then why in headroom_detail.
  std::optional<double> headroom_seconds;
  // The oldest kept entry is later than the checkpoint. Whole seconds cannot say it: on a
  // fresh cluster both can fall in one second, in either order.
  bool headroom_passed = false;
  std::string headroom_detail;
  // With --ha: the namespace's lease; nullopt when it has none.
  std::optional<lease_status> lease;
  // The namespace's write fence: which process writes it, under which epoch; nullopt before
  // any writer took it.
  std::optional<checkpoint::fence_record> fence;
  // With --ha: what the lease's live holder last said of the stream, who, and how long ago (by
  // the server's clock); nullopt when no live holder reported it.
  std::optional<lease::unit_report> report;
  std::string reported_by;
  std::int64_t report_age_ms = 0;
};

class status_probe {
 public:
  status_probe(mongo::connection& conn, std::string meta_db);

  // Fails only when a checkpoint cannot be read; a failed history test is reported.
  mongo::result<std::vector<source_status>> run(const std::vector<mapping::ns>& sources);
  // The instances' rows (--ha) as the last run read them.
  const std::vector<lease::instance_row>& instances() const { return instances_; }

 private:
  void test_history(source_status& s);

  mongo::connection& conn_;
  std::string meta_db_;
  std::vector<lease::instance_row> instances_;
};

// The cluster time at the start of a MongoDB resume token's `_data` (KeyString: 0x82, then
// the timestamp's 8 bytes big-endian); nullopt for any other format.
std::optional<bson::timestamp> token_cluster_time(const bson::document& token);

// `instances`: with --ha, the instances' rows, listed after the namespaces.
std::string to_text(const std::vector<source_status>& s, std::int64_t now_ms,
                    const std::vector<lease::instance_row>& instances = {});
std::string to_json(const std::vector<source_status>& s, std::int64_t now_ms);
// The live instances (--ha): name, how long ago the server saw them, what they hold.
bson::array to_bson_array(const std::vector<lease::instance_row>& instances);
// The same as a document ({sources: [...]}), for a caller that adds to it.
bson::document to_document(const std::vector<source_status>& s, std::int64_t now_ms);

}  // namespace denormd::ops
