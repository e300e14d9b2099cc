#!/usr/bin/env bash
# Tests deploy/docker/runtime-packages.sh, which the Dockerfile uses to pick the runtime
# image's packages: on a probe program linked like denormd (libmongoc, prometheus-cpp) it
# must name the owning Debian packages; it must fail on an unresolved library and on one no
# package owns; and, given the real binary as $1, every package it names must exist.
# Usage: runtime_packages_test.sh [path/to/denormd]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../../deploy/docker/runtime-packages.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

cat >"$tmp/probe.cc" <<'CC'
#include <mongoc/mongoc.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
int main() {
  mongoc_init();
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::Exposer exposer{"127.0.0.1:0"};
  exposer.RegisterCollectable(registry);
  mongoc_cleanup();
}
CC
# shellcheck disable=SC2046
g++ -std=c++20 -O0 "$tmp/probe.cc" -o "$tmp/probe" $(pkg-config --cflags --libs libmongoc-1.0) \
  -lprometheus-cpp-pull -lprometheus-cpp-core

out=$("$script" "$tmp/probe") || fail "runtime-packages.sh failed on the probe program"
for p in libmongoc-1.0-0 libbson-1.0-0 libprometheus-cpp-pull1.0 libprometheus-cpp-core1.0 libstdc++6 libc6; do
  grep -qx "$p" <<<"$out" || fail "probe: $p missing from: $(tr '\n' ' ' <<<"$out")"
done
[ "$(sort -u <<<"$out")" = "$out" ] || fail "probe: the list is not sorted and unique"
grep -q ':' <<<"$out" && fail "probe: architecture qualifiers left in: $out"

# A library resolved from a path no package owns must be an error, not a silent omission.
cat >"$tmp/lonely.c" <<'C'
int lonely(void) { return 1; }
C
cat >"$tmp/uses.c" <<'C'
int lonely(void);
int main(void) { return lonely() - 1; }
C
gcc -shared -fPIC -o "$tmp/liblonely.so" "$tmp/lonely.c"
gcc -o "$tmp/uses" "$tmp/uses.c" -L"$tmp" -llonely -Wl,-rpath,"$tmp"
if "$script" "$tmp/uses" >/dev/null 2>"$tmp/err"; then
  fail "a library owned by no package was accepted"
else
  grep -q 'no package owns' "$tmp/err" || fail "unowned library: unexpected message: $(cat "$tmp/err")"
fi
# ... and so must a library that does not resolve at all.
gcc -o "$tmp/missing" "$tmp/uses.c" -L"$tmp" -llonely
if "$script" "$tmp/missing" >/dev/null 2>"$tmp/err"; then
  fail "an unresolved library was accepted"
else
  grep -q 'not found' "$tmp/err" || fail "unresolved library: unexpected message: $(cat "$tmp/err")"
fi

if [ $# -ge 1 ]; then
  real=$("$script" "$1") || fail "runtime-packages.sh failed on $1"
  grep -qx libc6 <<<"$real" || fail "$1: libc6 missing from: $real"
  while read -r p; do
    [ -n "$p" ] || continue
    dpkg-query -W "$p" >/dev/null 2>&1 || apt-cache show "$p" >/dev/null 2>&1 || fail "$1: $p is not a Debian package"
  done <<<"$real"
  echo "denormd runtime packages: $(tr '\n' ' ' <<<"$real")"
fi

if ((fails)); then
  echo "runtime packages: $fails problems"
  exit 1
fi
echo "runtime packages: ok"
