#include "http/web_security.h"

#include <sys/stat.h>

#include <utility>

#include "common/log.h"
#include "http/tls_context.h"

namespace denormd::http {

namespace {

constexpr auto failure_log_interval = std::chrono::seconds(10);

}  // namespace

expected<std::shared_ptr<web_security>> web_security::open(std::string path,
                                                           std::chrono::milliseconds recheck) {
  auto first = read(path);
  if (!first) return first.error();
  const bool tls = (*first)->tls != nullptr;
  return std::shared_ptr<web_security>(
      new web_security(std::move(path), recheck, tls, std::move(first).value()));
}

web_security::web_security(std::string path, std::chrono::milliseconds recheck, bool tls,
                           std::shared_ptr<const settings> s)
    : path_(std::move(path)),
      recheck_(recheck),
      tls_(tls),
      current_(std::move(s)),
      checked_(std::chrono::steady_clock::now()) {
  stamps_ = stamps_of(path_, *current_);
}

expected<std::shared_ptr<const web_security::settings>> web_security::read(
    const std::string& path) {
  auto config = load_web_config(path);
  if (!config) return config.error();
  auto s = std::make_shared<settings>();
  if (config->tls) {
    auto ctx = make_tls_context(*config->tls, path);
    if (!ctx) return ctx.error();
    s->tls = std::move(ctx).value();
  }
  s->config = std::move(config).value();
  return std::shared_ptr<const settings>(std::move(s));
}

std::vector<web_security::file_stamp> web_security::stamps_of(const std::string& path,
                                                              const settings& s) {
  std::vector<std::string> files{path};
  if (const auto& tls = s.config.tls) {
    files.push_back(tls->cert_file);
    files.push_back(tls->key_file);
    if (!tls->client_ca_file.empty()) files.push_back(tls->client_ca_file);
  }
  std::vector<file_stamp> out;
  for (auto& f : files) {
    file_stamp st;
    st.path = std::move(f);
    struct stat info {};
    if (::stat(st.path.c_str(), &info) == 0) {
      st.exists = true;
      st.dev = info.st_dev;
      st.ino = info.st_ino;
      st.size = static_cast<std::int64_t>(info.st_size);
      st.mtime_ns = static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 +
                    static_cast<std::int64_t>(info.st_mtim.tv_nsec);
    }
    out.push_back(std::move(st));
  }
  return out;
}

std::shared_ptr<const web_security::settings> web_security::current() {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - checked_ < recheck_) return current_;
  checked_ = now;
  auto stamps = stamps_of(path_, *current_);
  if (stamps != stamps_) reload_locked(std::move(stamps));
  return current_;
}

void web_security::reload_locked(std::vector<file_stamp> now) {
  if (now == refused_) return;  // refused already, and said so
  auto next = read(path_);
  std::string why;
  if (!next) {
    why = next.error().message;
  } else if (((*next)->tls != nullptr) != tls_) {
    why = path_ + ": tls_server_config cannot be " + (tls_ ? "removed" : "added") +
          " while denormd listens; restart it to change the protocol";
  }
  if (!why.empty()) {
    refused_ = std::move(now);
    log::error("http", "web config file changed; keeping the settings in force: " + why,
               {{"file", path_}});
    return;
  }
  current_ = std::move(next).value();
  // The stamps from before the reading: a file changed meanwhile is read again at the next
  // look (as is a file the new settings name for the first time).
  stamps_ = std::move(now);
  refused_.clear();
  log::info("http", "web config file read again",
            {{"file", path_},
             {"tls", current_->tls != nullptr},
             {"users", static_cast<std::uint64_t>(current_->config.users.size())}});
}

void web_security::failed_login(std::string_view user, std::string_view remote) {
  std::uint64_t count = 0;
  {
    std::lock_guard lock(mutex_);
    ++failures_;
    const auto now = std::chrono::steady_clock::now();
    if (failure_ever_logged_ && now - failure_logged_ < failure_log_interval) return;
    failure_ever_logged_ = true;
    failure_logged_ = now;
    count = std::exchange(failures_, 0);
  }
  log::warn("http", "HTTP login failed",
            {{"user", user}, {"remote", remote}, {"failures_since_last_line", count}});
}

}  // namespace denormd::http
