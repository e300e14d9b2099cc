#!/usr/bin/env bash
# Prints, one per line, the Debian packages that own the shared libraries a binary loads.
# The Dockerfile runs it in the build stage and installs exactly this list in the runtime
# stage, so the image carries the binary's libraries (and what those packages depend on)
# without a hand-kept list that drifts when a link dependency is added.
# Usage: runtime-packages.sh BINARY        Exits 1 if a library is not found or not owned.
set -euo pipefail
bin=${1:?usage: runtime-packages.sh BINARY}
export LC_ALL=C

ldd_out=$(ldd "$bin")
if grep -q 'not found' <<<"$ldd_out"; then
  echo "runtime-packages: unresolved libraries:" >&2
  grep 'not found' <<<"$ldd_out" >&2
  exit 1
fi

# The package that owns a path. Debian bookworm merges /lib into /usr/lib, but dpkg's
# database still records each file under the path its package shipped, so try the path
# as ldd printed it, its /usr-toggled twin, and the symlink-resolved file.
owner() {
  local path=$1 real candidates=() c out
  real=$(readlink -f "$path")
  candidates+=("$path" "$real")
  for c in "$path" "$real"; do
    case $c in
      /usr/*) candidates+=("${c#/usr}") ;;
      *) candidates+=("/usr$c") ;;
    esac
  done
  for c in "${candidates[@]}"; do
    if out=$(dpkg-query -S "$c" 2>/dev/null); then
      # "pkg:arch, pkg2:arch: /path" -> pkg, pkg2 (diversion lines do not start with a name)
      sed -n 's/^\([^ ][^:]*\)\(:[a-z0-9]*\)\?\(, .*\)\?: \/.*$/\1\3/p' <<<"$out" |
        tr ',' '\n' | sed 's/^ *//; s/:[a-z0-9]*$//' | grep -v '^$'
      return 0
    fi
  done
  echo "runtime-packages: no package owns $path" >&2
  return 1
}

# "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)" and the loader's own line
# "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
mapfile -t libs < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$ldd_out")
owners=()
for lib in "${libs[@]}"; do
  found=$(owner "$lib") || exit 1
  mapfile -t -O "${#owners[@]}" owners <<<"$found"
done
printf '%s\n' "${owners[@]}" | sort -u
