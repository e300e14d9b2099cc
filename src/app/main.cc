// Parses the command line and hands over to the application; nothing else lives here.
#include <cstdlib>
#include <iostream>

#include "app/application.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const char* env_uri = std::getenv("DENORMD_URI");
  auto opts = denormd::app::parse_options(args, env_uri != nullptr ? env_uri : "");
  if (!opts) {
    std::cerr << "error: " << opts.error().message << "\n";
    return denormd::app::exit_usage;
  }
  return denormd::app::application(std::move(opts).value(), std::cout, std::cerr).run();
}
