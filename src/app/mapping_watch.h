#pragma once
// --watch-mappings: reads the mapping files once a `interval` and asks for a reload when what
// they hold has changed and then stayed the same for one more look, so that an editor or a
// Kubernetes ConfigMap update that writes in steps is reloaded once, when it is done.
// Lifecycle: polls on a thread of its own from construction; the destructor stops and joins
// it. `on_change` is called on that thread.

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

namespace denormd::app {

// What the mapping files at `path` hold (a folder's *.json in name order, or the one file):
// names and contents; a file that cannot be read counts by its error.
std::string mapping_files_state(const std::filesystem::path& path);

class mapping_watch {
 public:
  mapping_watch(std::filesystem::path path, std::function<void()> on_change,
                std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~mapping_watch();
  mapping_watch(const mapping_watch&) = delete;
  mapping_watch& operator=(const mapping_watch&) = delete;

 private:
  void run(std::stop_token stop);

  const std::filesystem::path path_;
  const std::function<void()> on_change_;
  const std::chrono::milliseconds interval_;
  std::string loaded_;  // the state the running set was loaded from (as far as known)
  std::jthread thread_;
};

}  // namespace denormd::app
