#!/usr/bin/env bash
# Installs gradwire from the build tree into a scratch prefix, builds examples/ddp_train as an
# outside project with find_package(gradwire) against the libtorch the build used (TORCH_DIR, its
# Torch_DIR: Debian's 1.13 or the torch wheel's 2.x), runs it as a one-rank job and checks that it
# links no gRPC, and builds examples/elastic_train the same way; then, when the build has the ps
# component (PS_COMPONENT ON), builds the hybrid example with it.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR PS_COMPONENT TORCH_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
ps_component=$3
torch_dir=$4
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
# libtorch's root (Torch_DIR is ROOT/share/cmake/Torch). It goes on CMAKE_PREFIX_PATH, as README
# says: TorchConfig finds c10 and torch with find_library, which with Torch_DIR alone looks in the
# system's directories first and would mix in Debian's libtorch.
torch_root=$(cd "$torch_dir/../../.." && pwd)
configure() {  # SOURCE BUILD: as a user would, naming gradwire's prefix and libtorch's
  cmake -S "$1" -B "$2" -DCMAKE_PREFIX_PATH="$scratch/prefix;$torch_root" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
}
configure "$source_dir/examples/ddp_train" "$scratch/build"
cmake --build "$scratch/build" -j 2 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
  "$scratch/build/example-ddp-train" 5)
echo "$out"
grep -q "rank 0 parameter checksum" <<<"$out"

# A DDP-only program (gradwire::gradwire: comm, ddp, launch, models) links no gRPC library
# (protobuf it may: libtorch itself needs it).
if ldd "$scratch/build/example-ddp-train" | grep -i grpc; then
  echo "example-ddp-train, a DDP-only program, links the libraries above" >&2
  exit 1
fi
echo "example-ddp-train links no gRPC"

# The elastic example builds against the installed core too (gradwire::gradwire has elastic).
configure "$source_dir/examples/elastic_train" "$scratch/elastic"
cmake --build "$scratch/elastic" -j 2 >/dev/null
echo "example-elastic-train builds against the installed package"

if [ "$ps_component" != ON ]; then
  echo "no parameter-server component in this build (GRADWIRE_PS=OFF): the hybrid example is left out"
  exit 0
fi
# The parameter-server component (find_package(gradwire COMPONENTS ps): gradwire::ps with gRPC,
# protobuf and zlib) comes with the package: the hybrid example builds against the installed tree.
configure "$source_dir/examples/hybrid_train" "$scratch/hybrid"
cmake --build "$scratch/hybrid" -j 2 >/dev/null
test -x "$scratch/hybrid/example-hybrid-train"
test -x "$scratch/prefix/bin/gradwire-ps-server"
echo "example-hybrid-train built against the installed gradwire"
