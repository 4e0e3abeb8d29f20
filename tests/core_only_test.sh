#!/usr/bin/env bash
# The core builds alone: configuring with the parameter servers and data left out
# (-DGRADWIRE_PS=OFF -DGRADWIRE_DATA=OFF, as on a machine without gRPC or zstd) says which
# components it leaves out and generates a build of the core with its tests and benchmark, in
# which gradwire-run builds. Usage: core_only_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out=$(cmake -S "$source_dir" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release \
  -DGRADWIRE_PS=OFF -DGRADWIRE_DATA=OFF 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep gradwire
grep -q "leaving out the parameter servers (ps): GRADWIRE_PS=OFF" <<<"$out"
grep -q "leaving out RecordIO data (data): GRADWIRE_DATA=OFF" <<<"$out"
if grep -q 'gradwire_ps\|gradwire_data' "$scratch/build/Makefile"; then
  echo "the core-only build still has parameter-server or data targets" >&2
  exit 1
fi
cmake --build "$scratch/build" --target gradwire-run -j 2 >/dev/null
test -x "$scratch/build/bin/gradwire-run"
echo "core-only build: configured, and gradwire-run built"
