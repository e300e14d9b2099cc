#pragma once
// Runs one denormd command. Constructed from parsed options; `run()` returns the process exit
// code (0 ok, 1 runtime failure, 2 bad usage or bad mappings). Single-threaded caller.

#include <iosfwd>

#include "app/options.h"

namespace denormd::app {

enum exit_code : int { exit_ok = 0, exit_failure = 1, exit_usage = 2, exit_drift = 3 };

class application {
 public:
  application(options opts, std::ostream& out, std::ostream& err);
  int run();

 private:
  int run_daemon();
  int check();
  int plan();
  int backfill();
  int verify();
  int status();
  int cost();

  options opts_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace denormd::app
