#!/usr/bin/env bash
# Installs gradwire from the build tree into a scratch prefix, builds examples/allreduce as an
# outside project with find_package(gradwire), runs it as a one-rank job and checks that it links
# no gRPC; then, when the build has the ps component (PS_COMPONENT ON), builds the hybrid example
# with it. Usage: install_test.sh BUILD_DIR SOURCE_DIR PS_COMPONENT
set -euo pipefail
build_dir=$1
source_dir=$2
ps_component=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir/examples/allreduce" -B "$scratch/build" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" -j 2 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$scratch/build/example-allreduce")
echo "$out"
grep -q "rank 0 of 1: sum of ranks = 0" <<<"$out"

# A DDP-only program (gradwire::gradwire: comm, ddp, launch, models) links no gRPC library
# (protobuf it may: libtorch itself needs it).
if ldd "$scratch/build/example-allreduce" | grep -i grpc; then
  echo "example-allreduce, a DDP-only program, links the libraries above" >&2
  exit 1
fi
echo "example-allreduce links no gRPC"

if [ "$ps_component" != ON ]; then
  echo "no parameter-server component in this build (GRADWIRE_PS=OFF): the hybrid example is left out"
  exit 0
fi
# The parameter-server component (find_package(gradwire COMPONENTS ps): gradwire::ps with gRPC,
# protobuf and zlib) comes with the package: the hybrid example builds against the installed tree.
cmake -S "$source_dir/examples/hybrid_train" -B "$scratch/hybrid" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/hybrid" -j 2 >/dev/null
test -x "$scratch/hybrid/example-hybrid-train"
test -x "$scratch/prefix/bin/gradwire-ps-server"
echo "example-hybrid-train built against the installed gradwire"
