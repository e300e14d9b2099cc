// Blocks the stop signals, parses the command line and hands over to the application.
#include <cstdlib>
#include <iostream>

#include "app/application.h"
#include "app/signals.h"

int main(int argc, char** argv) {
  // First: a SIGTERM while starting must stop denormd cleanly, not kill it (see signals.h).
  denormd::app::block_stop_signals();
  const std::vector<std::string> args(argv + 1, argv + argc);
  const char* env_uri = std::getenv("DENORMD_URI");
  auto opts = denormd::app::parse_options(args, env_uri != nullptr ? env_uri : "");
  if (!opts) {
    std::cerr << "error: " << opts.error().message << "\n";
    return denormd::app::exit_usage;
  }
  return denormd::app::application(std::move(opts).value(), std::cout, std::cerr).run();
}
