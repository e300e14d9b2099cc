#pragma once
// `denormd cost`, the data side (docs/cost.md): per mapping, from aggregations on the server,
// its fan-out (fanout_summary: copy, targets per source key; recent and aggregate, children
// per parent) and the bytes its copies, arrays or values add to the targets; for `recent`, how
// close the largest parents come to MongoDB's 16 MiB document limit. Each aggregation is
// bounded in time (maxTimeMS, --max-time) and, on a collection larger than the sample size,
// reads a $sample of it and scales what it counts: the figures say so. Values read from
// users' documents (keys) are only shown, never put into a query or a path.
//
// Lifecycle: construct, call measure() per mapping from one thread; the connection must
// outlive it.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mongo/connection.h"
#include "ops/commands/fanout_summary.h"

namespace denormd::ops {

struct cost_bounds {
  std::int64_t max_time_ms = 60000;    // per aggregation
  std::int64_t sample_size = 1000000;  // documents one measurement reads at most
};

// What one measurement read: a whole collection, or a sample of it.
struct read_extent {
  std::string ns;
  std::int64_t documents = 0;  // in the collection (the server's count)
  std::int64_t read = 0;       // read by the measurement
  bool sampled() const { return read < documents; }
  // What a count over the sample is multiplied by to estimate the collection's.
  double scale() const {
    return sampled() && read > 0 ? static_cast<double>(documents) / static_cast<double>(read) : 1.0;
  }
};

struct fanout_figures {
  std::string error;  // why it was not measured ("": measured)
  std::string per;    // what one count is ("targets per source key", "children per parent")
  read_extent extent;
  fanout_summary summary;   // the counts as read (a sample's are scaled when shown)
  std::int64_t copies = 0;  // array copies: the elements that hold copies, as read
};

// A parent of a `recent` mapping, as stored and with its array at the limit.
struct parent_size {
  bson::value key;
  std::int64_t bytes = 0;
  std::int64_t at_limit_bytes = 0;
};

struct bytes_figures {
  std::string error;    // why it was not measured ("": measured)
  read_extent extent;   // the documents one copy's size was measured on
  double per_copy = 0;  // bytes one copy (copy), element (recent) or parent's values add
  double added = 0;     // the estimate across the targets
  std::vector<std::string> notes;
  int limit = 0;                     // recent: the elements a parent keeps
  std::vector<parent_size> largest;  // recent: the largest parents, largest first
  std::string largest_error;         // recent: why they were not measured
};

struct data_cost {
  fanout_figures fanout;
  bytes_figures bytes;
};

inline constexpr std::int64_t max_document_bytes = 16 * 1024 * 1024;

class cost_probe {
 public:
  cost_probe(mongo::connection& conn, cost_bounds bounds);

  // Never fails: what could not be measured says why.
  data_cost measure(const mapping::mapping& m);

 private:
  // The collection's size and the $sample stage that reads at most `limit` of it (none when
  // it is not larger); false with `error` set when the server would not count it.
  bool extent_of(const mapping::ns& where, std::int64_t limit, read_extent& out,
                 bson::array& stages, std::string& error);
  // Runs `pipeline` on `where` bounded by --max-time, each result to `each`; "" or why not.
  std::string run(const mapping::ns& where, const bson::array& pipeline,
                  const std::function<void(bson::document&&)>& each);
  void copy_cost(const mapping::mapping& m, const mapping::copy_kind& k, data_cost& out);
  void copy_bytes(const mapping::mapping& m, const mapping::copy_kind& k, data_cost& out);
  void recent_cost(const mapping::mapping& m, const mapping::recent_kind& k, data_cost& out);
  void recent_element_bytes(const mapping::mapping& m, const mapping::recent_kind& k,
                            data_cost& out);
  void largest_parents(const mapping::mapping& m, const mapping::recent_kind& k, data_cost& out);
  void aggregate_cost(const mapping::mapping& m, const mapping::aggregate_kind& k, data_cost& out);
  std::string why(const mongo::driver_error& e) const;

  mongo::connection& conn_;
  cost_bounds bounds_;
};

// The bytes a $set document ({dotted path: value}) adds to a document that has none of its
// paths, each path with `strip` ("items.$[e].") taken off its start.
std::int64_t set_bytes(const bson::document& set, std::string_view strip = {});
// The bytes of a BSON array of `n` documents of `element` bytes each.
double array_bytes(std::int64_t n, double element);

}  // namespace denormd::ops
