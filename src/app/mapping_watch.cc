#include "app/mapping_watch.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/clock.h"
#include "common/log.h"

namespace denormd::app {

namespace {

void append_file(const std::filesystem::path& file, std::string& out) {
  out += file.filename().string();
  out += '\0';
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    out += "(unreadable)";
  } else {
    std::ostringstream text;
    text << in.rdbuf();
    out += std::to_string(text.str().size()) + ':' + text.str();
  }
  out += '\0';
}

}  // namespace

std::string mapping_files_state(const std::filesystem::path& path) {
  std::error_code ec;
  std::string out;
  if (!std::filesystem::is_directory(path, ec)) {
    append_file(path, out);
    return out;
  }
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    // The files the loader reads (config/mapping_loader.h).
    if (it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) return "(folder unreadable: " + ec.message() + ")";
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    append_file(f, out);
  return out;
}

mapping_watch::mapping_watch(std::filesystem::path path, std::function<void()> on_change,
                             std::chrono::milliseconds interval)
    : path_(std::move(path)),
      on_change_(std::move(on_change)),
      interval_(interval),
      loaded_(mapping_files_state(path_)) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

mapping_watch::~mapping_watch() {
  thread_.request_stop();
  thread_.join();
}

void mapping_watch::run(std::stop_token stop) {
  std::string seen = loaded_;
  while (sleep_unless_stopped(stop, interval_)) {
    std::string now = mapping_files_state(path_);
    // Changed since the last look: wait until it stays put for one more.
    if (now != seen) {
      seen = std::move(now);
      continue;
    }
    if (seen == loaded_) continue;
    loaded_ = seen;
    log::info("reload", "the mapping files changed", {{"path", path_.string()}});
    on_change_();
  }
}

}  // namespace denormd::app
