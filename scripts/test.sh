#!/usr/bin/env bash
# The one test command: install dependencies, configure, build, run every test.
# Usage: scripts/test.sh [extra cmake args]   (BUILD_DIR defaults to build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDENORMD_WERROR=ON "$@"
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 300
