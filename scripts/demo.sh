#!/usr/bin/env bash
# The demo in one command: install, build denormd and the test server, run the sample shop.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target denormd mongo-emulator
# demo.py seeds with the tests' sample shop (the package tests.integration, from the repository root).
DENORMD_BIN="$PWD/$build/bin/denormd" DENORMD_EMULATOR="$PWD/$build/tests/emulator/mongo-emulator" \
  PYTHONPATH="$PWD" /usr/bin/python3 scripts/demo.py
