#!/usr/bin/env bash
# Installs everything denormd needs to build, test and demo on Debian bookworm.
# Safe to run again; needs root (or sudo).
set -euo pipefail
packages=(
  # build
  g++ cmake ninja-build pkg-config clang-format
  # libraries
  libmongoc-dev libbson-dev libboost-dev libboost-system-dev libboost-program-options-dev
  prometheus-cpp-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  # tests: the Python driver for compatibility tests, tools for process checks
  python3 python3-pymongo procps curl
  # deployment checks (tests/deploy): compose file, Prometheus rules, mapping schema, seeder
  docker-compose prometheus python3-jsonschema python3-yaml nodejs
  # the operator's page, tested in a real browser (tests/integration/test_operator_page.py)
  chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
