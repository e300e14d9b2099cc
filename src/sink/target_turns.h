#pragma once
// Within one process, the fenced transactions that write the same target collection take
// turns. Two pipelines whose mappings fill one collection (orders.customer from customers,
// orders.items from products) would otherwise meet on the same documents in concurrent
// transactions, and MongoDB aborts the later one with a WriteConflict, to be tried again: at a
// few thousand events per second most of their transactions did (docs/performance.md, "The
// write fence"). Waiting for a turn costs what the server did anyway (writes of one document
// are applied one after another) without the aborted work. Instances of --ha still meet in
// the server; their conflicts are tried again.
//
// Lifecycle: one per process, shared by its writers. Thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace denormd::sink {

class target_turns {
 public:
  // Holds the turns of some target collections; released when destroyed.
  class held {
   public:
    held() = default;
    held(held&&) = default;
    held& operator=(held&&) = default;

   private:
    friend class target_turns;
    std::vector<std::unique_lock<std::mutex>> locks_;
  };

  // Waits for the turn of every collection in `targets` (full names; any order, repeats
  // allowed), taken in name order so that two callers never wait for each other.
  held take(std::vector<std::string> targets);

 private:
  std::mutex mutex_;  // guards the map, not the turns
  std::map<std::string, std::unique_ptr<std::mutex>> turns_;
};

}  // namespace denormd::sink
