#include "sink/write_tally.h"

namespace denormd::sink {

void write_tally::count_writes(std::string_view mapping, std::string_view result) {
  add({what::writes, std::string(mapping), std::string(result), 1});
}

void write_tally::count_modified(std::string_view mapping, std::uint64_t n) {
  add({what::modified, std::string(mapping), {}, static_cast<double>(n)});
}

void write_tally::observe_apply_latency(std::string_view mapping, double seconds) {
  add({what::latency, std::string(mapping), {}, seconds});
}

void write_tally::count_error(std::string_view stage, std::string_view code) {
  add({what::error, std::string(stage), std::string(code), 1});
}

void write_tally::count_deadletter(std::string_view mapping) {
  add({what::deadletter, std::string(mapping), {}, 1});
}

void write_tally::observe_fanout(std::string_view mapping, double dependents,
                                 std::uint64_t events) {
  add({what::fanout, std::string(mapping), {}, dependents, events});
}

void write_tally::add(entry e) {
  held_.push_back(std::move(e));
  if (!hold_) publish();
}

void write_tally::publish() {
  metrics::metrics& m = metrics_;
  for (const entry& e : held_) {
    switch (e.kind) {
      case what::writes:
        m.count_writes(e.a, e.b);
        break;
      case what::modified:
        m.count_modified(e.a, static_cast<std::uint64_t>(e.value));
        break;
      case what::latency:
        m.observe_apply_latency(e.a, e.value);
        break;
      case what::error:
        m.count_error(e.a, e.b);
        break;
      case what::deadletter:
        m.count_deadletter(e.a);
        break;
      case what::fanout:
        m.observe_fanout(e.a, e.value, e.events);
        break;
    }
  }
  held_.clear();
}

void write_tally::clear() {
  held_.clear();
}

}  // namespace denormd::sink
