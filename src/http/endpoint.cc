#include "http/endpoint.h"

namespace denormd::http {

expected<std::unique_ptr<endpoint>> endpoint::start(std::string_view address,
                                                    http_server::metrics_callback metrics,
                                                    http_server::readiness_callback ready,
                                                    http_server::reload_callback reload,
                                                    http_server::applied_callback applied) {
  std::unique_ptr<endpoint> e(new endpoint());
  auto server = http_server::create(e->io_, address, std::move(metrics), std::move(ready));
  if (!server) return server.error();
  e->server_ = std::move(server).value();
  if (reload) e->server_->set_reload(std::move(reload));
  if (applied) e->server_->set_applied(std::move(applied));
  e->server_->start();
  e->thread_ = std::thread([io = &e->io_] { io->run(); });
  return e;
}

endpoint::~endpoint() {
  stop();
}

void endpoint::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  // Idle connections hold timers that would keep the thread busy for seconds: stop it now
  // and run the closes stop() queued here instead, so the port is free on return.
  io_.stop();
  thread_.join();
  io_.restart();
  io_.poll();
}

}  // namespace denormd::http
