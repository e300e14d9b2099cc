#pragma once
// Wakes await-data getMores when new changes are recorded. A waiter parks an Asio timer set to
// its deadline, with the namespaces its stream watches; notify() cancels (on the timer's own
// executor) the parked timers whose streams can see one of the changed namespaces, so waiting
// never holds the storage lock or a thread, and a write to one collection does not wake every
// stream of the server. Thread-safe.

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace mongo_emulator {

// The namespaces a waiter cares about: one collection, one database, or everything.
struct watch_scope {
  enum class kind : std::uint8_t { everything, database, collection };
  kind k = kind::everything;
  std::string db;
  std::string coll;

  bool sees(std::string_view change_db, std::string_view change_coll) const {
    return k == kind::everything ||
           (change_db == db && (k == kind::database || change_coll == coll));
  }
};

// The namespaces one write changed; `everything` for changes beyond documents (drop, rename),
// which wake all waiters.
struct changed_namespaces {
  bool everything = false;
  std::vector<std::pair<std::string, std::string>> namespaces;  // (db, coll), no repeats
};

class change_notifier {
 public:
  using timer_ptr = std::shared_ptr<boost::asio::steady_timer>;

  // Parks `timer` until a notify for a change `scope` sees. If changes past `seen` were already
  // announced, the timer is cancelled right away (no lost wake-up between checking and parking).
  void park(const timer_ptr& timer, std::uint64_t seen, watch_scope scope = {});
  // Announces that the change count reached `count` through changes to `changed`.
  void notify(std::uint64_t count, const changed_namespaces& changed = {true, {}});

 private:
  struct waiter {
    std::weak_ptr<boost::asio::steady_timer> timer;
    watch_scope scope;
  };

  std::mutex mutex_;
  std::uint64_t announced_ = 0;
  std::vector<waiter> parked_;
};

}  // namespace mongo_emulator
