#include "http/endpoint.h"

namespace denormd::http {

expected<std::unique_ptr<endpoint>> endpoint::start(std::string_view address, route_table routes,
                                                    std::shared_ptr<web_security> security) {
  std::unique_ptr<endpoint> e(new endpoint());
  http_server::options opts;
  opts.security = std::move(security);
  auto server = http_server::create(e->io_, address, std::move(routes), opts);
  if (!server) return server.error();
  e->server_ = std::move(server).value();
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
