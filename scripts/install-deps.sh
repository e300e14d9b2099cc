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
  # the HTTP port's web config file (--web-config-file): YAML, TLS, bcrypt
  libyaml-dev libssl-dev libcrypt-dev
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

# mongosh 2.x from npm, for the operator-command test (tests/emulator/tests/mongosh_ops.py):
# into the repository's .cache (git-ignored), once; bounded in time. Not fatal: without the
# registry the test installs it itself or skips, saying why.
mongosh_prefix="$(cd "$(dirname "$0")/.." && pwd)/.cache/mongosh"
if ! command -v npm > /dev/null; then  # NodeSource's nodejs has npm; Debian's needs its own
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm ||
    echo "install-deps: no npm; mongosh_ops will skip" >&2
fi
if [ ! -x "$mongosh_prefix/node_modules/.bin/mongosh" ] && command -v npm > /dev/null; then
  mkdir -p "$mongosh_prefix"
  timeout 300 npm install --prefix "$mongosh_prefix" --no-audit --no-fund --loglevel=error \
    mongosh@2 || echo "install-deps: npm install mongosh@2 failed; mongosh_ops will retry or skip" >&2
fi
