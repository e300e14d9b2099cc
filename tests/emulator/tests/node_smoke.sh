#!/usr/bin/env bash
# Optional Node driver smoke test. Installs the `mongodb` npm package into a cache directory
# (once) and runs node_smoke.js against a fresh emulator. Exits 77 (CTest: skipped) when node,
# npm or the npm registry is unavailable, so CI never depends on the network.
# Usage: node_smoke.sh MONGO_EMULATOR CACHE_DIR
set -uo pipefail
emulator=$1
cache=$2
here=$(cd "$(dirname "$0")" && pwd)

[ -z "${DENORMD_SKIP_NODE:-}" ] || { echo "DENORMD_SKIP_NODE is set"; exit 77; }
command -v node > /dev/null && command -v npm > /dev/null || { echo "node/npm not found"; exit 77; }
if [ ! -d "$cache/node_modules/mongodb" ]; then
  mkdir -p "$cache"
  if ! (cd "$cache" && timeout 120 npm install mongodb --no-audit --no-fund --loglevel=error \
        > npm.log 2>&1); then
    echo "npm install mongodb failed (offline?):"; tail -5 "$cache/npm.log"; exit 77
  fi
fi

out=$(mktemp)
"$emulator" --port 0 > "$out" &
pid=$!
trap 'kill -TERM $pid 2> /dev/null; wait $pid 2> /dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do
  grep -q '^listening on ' "$out" && break
  sleep 0.05
done
address=$(sed -n 's/^listening on //p' "$out")
[ -n "$address" ] || { echo "emulator did not start"; exit 1; }
NODE_PATH="$cache/node_modules" timeout 60 node "$here/node_smoke.js" \
  "mongodb://$address/?replicaSet=rs0"
