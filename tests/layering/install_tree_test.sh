#!/usr/bin/env bash
# The install tree holds the public surface only (docs/architecture.md "Walls"): installs the
# build into a scratch prefix, then checks that none of common's plumbing headers (byte order,
# futexes, process liveness, enum name tables: internal since 0.2.0) is there and that every
# installed header's quoted includes name installed headers, so no installed header needs an
# internal one. Prints the count and the list of installed headers.
# Usage: install_tree_test.sh BUILD_DIR
set -euo pipefail
build_dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
include=$scratch/prefix/include
status=0
for plumbing in byte_order futex process enum_names; do
  if [ -e "$include/gradwire/common/$plumbing.h" ]; then
    echo "installed, but internal: gradwire/common/$plumbing.h" >&2
    status=1
  fi
done
headers=$(cd "$include" && find gradwire -type f | LC_ALL=C sort)
for header in $headers; do
  for included in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
      "$include/$header"); do
    if [ ! -e "$include/$included" ]; then
      echo "$header includes \"$included\", which is not installed" >&2
      status=1
    fi
  done
done
echo "installed headers: $(wc -w <<<"$headers")"
echo "$headers"
exit $status
