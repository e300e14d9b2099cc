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

# "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)" and the loader's own line
# "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
mapfile -t libs < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$ldd_out")

# Where dpkg may have recorded a library. Debian bookworm merges /lib into /usr/lib, but
# dpkg's database still records each file under the path its package shipped, so: the path
# as ldd printed it, the symlink-resolved file, and their /usr-toggled twins.
candidates() {
  local path=$1 real c
  real=$(readlink -f "$path")
  printf '%s\n' "$path" "$real"
  for c in "$path" "$real"; do
    case $c in
      /usr/*) printf '%s\n' "${c#/usr}" ;;
      *) printf '%s\n' "/usr$c" ;;
    esac
  done
}

# One dpkg-query for every candidate path (each call reads dpkg's whole file database, about
# half a second): "pkg:arch, pkg2:arch: /path" -> owners["/path"]="pkg pkg2". Diversion lines
# do not start with a package name; paths no package owns are simply absent.
all=()
for lib in "${libs[@]}"; do
  mapfile -t -O "${#all[@]}" all < <(candidates "$lib")
done
declare -A owned
while IFS= read -r line; do
  path=${line##*: }
  pkgs=$(sed -n 's/^\([^ ][^:]*\)\(:[a-z0-9]*\)\?\(, .*\)\?: \/.*$/\1\3/p' <<<"$line" |
    tr ',' '\n' | sed 's/^ *//; s/:[a-z0-9]*$//' | grep -v '^$' | tr '\n' ' ')
  [ -n "$pkgs" ] && owned[$path]=$pkgs
done < <(dpkg-query -S "${all[@]}" 2>/dev/null || true)

owners=()
for lib in "${libs[@]}"; do
  found=""
  while read -r c; do
    if [ -n "${owned[$c]:-}" ]; then
      found=${owned[$c]}
      break
    fi
  done < <(candidates "$lib")
  if [ -z "$found" ]; then
    echo "runtime-packages: no package owns $lib" >&2
    exit 1
  fi
  read -r -a pkgs <<<"$found"
  owners+=("${pkgs[@]}")
done
printf '%s\n' "${owners[@]}" | sort -u
