#!/usr/bin/env bash
# A parameter-server job restarted by PyTorch 2.x's torchrun (docs/ps.md "Restarts"): the hybrid
# fault trainer (tests/ps/fault_trainer.cpp) on 2 workers under `torchrun --max-restarts 1`, with
# two gradwire-ps-server processes this script starts itself (loopback, ports the servers pick,
# --checkpoint-every like ps_fault_test). Trainer 1 SIGKILLs itself in the middle of step 6 of the
# first attempt; torchrun restarts both workers with TORCHELASTIC_RESTART_COUNT=1, they resume
# from their checkpoints and the servers rewind theirs. The job must end bit for bit equal (cmp)
# to an uninterrupted run under `gradwire-run --servers 2`. Then the servers must hold attempt 1:
# a fresh torchrun (attempt 0) against the same servers is refused ("from attempt 0 of the job was
# refused: attempt 1 has started").
# Exit 77 (ctest: skipped, with the reason) when no torchrun of PyTorch 2.x is found (the
# project's .venv, else torchrun on PATH), and for a gradwire built against libtorch 1.13, which
# cannot talk to torchrun 2.x's agent store (launch.torchrun checks that refusal).
# Every process it starts is stopped on exit; every blocking command has a time limit.
# Usage: torchrun_ps_restart_test.sh SOURCE_DIR GRADWIRE_RUN PS_SERVER PS_FAULT_TRAINER
set -euo pipefail
source_dir=$1
gradwire_run=$2
ps_server=$3
trainer=$4
name=torchrun_ps_restart_test
steps=12
every=3     # trainers and servers checkpoint every 3 steps
fault=die:1:6

# shellcheck source=tests/launch/find_torchrun.sh
source "$(dirname "${BASH_SOURCE[0]}")/find_torchrun.sh"
find_torchrun "$source_dir" "$name"
if timeout 30 "$gradwire_run" --version | grep -q "libtorch 1\."; then
  echo "$name: skipped: gradwire is built against libtorch 1.13, whose store client cannot talk to" \
       "torchrun 2.x's agent store (launch.torchrun checks that it is refused, saying so)"
  exit 77
fi
echo "$name: $torchrun ($("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null))"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
pids=()
# Stops what this script started: the servers and launchers it remembers, and anything left
# whose command line names the scratch folder (a worker torchrun did not stop).
cleanup() {
  local status=$? pid left
  trap - EXIT INT TERM
  for pid in "${pids[@]}" $(pgrep -f -- "$scratch" || true); do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    left=$(pgrep -f -- "$scratch" || true)
    [ -z "$left" ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}" $(pgrep -f -- "$scratch" || true); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$scratch"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {  # MESSAGE [FILE...]: shows the files, then fails with the message
  local message=$1
  shift
  for file in "$@"; do echo "--- $file"; cat "$file"; done
  echo "$name: $message" >&2
  exit 1
}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Runs a command in the background (so that a signal reaches the trap at once) with a time limit.
run_limited() {  # SECONDS OUT COMMAND...
  local limit=$1 out=$2
  shift 2
  timeout -k 10 "$limit" "$@" >"$out" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait "$pid"
}
export OMP_NUM_THREADS=1 GRADWIRE_BACKEND=gloo
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')

# Two servers, each its own process, on ports they pick; writes their addresses, comma-separated,
# to $scratch/NAME/addresses.
start_servers() {  # NAME
  local dir=$scratch/$1 i addresses=""
  local -a started=()
  mkdir -p "$dir/servers"
  for i in 0 1; do
    GRADWIRE_TOKEN=$token timeout -k 10 600 "$ps_server" --listen 127.0.0.1:0 \
      --checkpoint-dir "$dir/servers" --checkpoint-every "$every" \
      >"$dir/server_$i.out" 2>"$dir/server_$i.err" &
    pids+=("$!")
    started+=("$!")
  done
  for i in 0 1; do
    for _ in $(seq 300); do
      grep -q "^gradwire-ps-server listening on " "$dir/server_$i.out" && break
      kill -0 "${started[i]}" 2>/dev/null || fail "server $i of $1 exited before listening" "$dir/server_$i.err"
      sleep 0.1
    done
    grep -q "^gradwire-ps-server listening on " "$dir/server_$i.out" ||
      fail "server $i of $1 did not listen within 30 s" "$dir/server_$i.err"
    addresses+=${addresses:+,}$(sed -n 's/^gradwire-ps-server listening on //p' "$dir/server_$i.out")
  done
  echo "$addresses" >"$dir/addresses"
}

# The uninterrupted job, under gradwire-run with servers of its own: the reference output.
start=$SECONDS
mkdir -p "$scratch/reference"
run_limited 240 "$scratch/reference.txt" "$gradwire_run" --servers 2 --server-program "$ps_server" \
  --server-arg=--checkpoint-dir --server-arg="$scratch/reference/servers" \
  --server-arg=--checkpoint-every --server-arg="$every" --nproc-per-node 2 \
  --master-port "$(port)" "$trainer" "$steps" "$every" "$scratch/reference" \
  "$scratch/reference/out" ||
  fail "the uninterrupted job under gradwire-run failed" "$scratch/reference.txt"
[ -s "$scratch/reference/out" ] || fail "the uninterrupted job wrote no output" "$scratch/reference.txt"
echo "$name: uninterrupted job under gradwire-run --servers 2: $(stat -c %s "$scratch/reference/out") bytes ($((SECONDS - start)) s)"

# The same job under torchrun --max-restarts 1 with fresh servers; trainer 1 dies in step 6.
start=$SECONDS
start_servers restart
addresses=$(cat "$scratch/restart/addresses")
GRADWIRE_TOKEN=$token GRADWIRE_PS_ADDRS=$addresses run_limited 240 "$scratch/restart.txt" \
  "$torchrun" --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d \
  --rdzv-endpoint "127.0.0.1:$(port)" --no-python "$trainer" "$steps" "$every" \
  "$scratch/restart" "$scratch/restart/out" "$fault" ||
  fail "torchrun --max-restarts 1 failed" "$scratch/restart.txt"
grep -q "exitcode: -9) local_rank: 1 " "$scratch/restart.txt" ||
  fail "torchrun did not see rank 1 killed by SIGKILL in the first attempt ($fault)" "$scratch/restart.txt"
cmp "$scratch/reference/out" "$scratch/restart/out" ||
  fail "the restarted job's tables and parameters differ from the uninterrupted run's" \
    "$scratch/restart.txt" "$scratch/restart/server_0.err" "$scratch/restart/server_1.err"
echo "$name: torchrun --max-restarts 1 ($fault, at $addresses): rank 1 killed, restarted," \
     "output bit-identical ($((SECONDS - start)) s)"

# The servers admitted attempt 1: attempt 0 of a fresh torchrun is refused now. Its trainers load
# their checkpoints of step 12 and resume there, a call every table's shard must refuse.
start=$SECONDS
if GRADWIRE_TOKEN=$token GRADWIRE_PS_ADDRS=$addresses run_limited 120 "$scratch/stale.txt" \
    "$torchrun" --nproc-per-node 2 --max-restarts 0 --rdzv-backend c10d \
    --rdzv-endpoint "127.0.0.1:$(port)" --no-python "$trainer" "$steps" "$every" \
    "$scratch/restart" "$scratch/stale.out"; then
  fail "a trainer of attempt 0 was admitted after the restart" "$scratch/stale.txt"
fi
grep -q "from attempt 0 of the job was refused: attempt 1 has started" "$scratch/stale.txt" ||
  fail "attempt 0 after the restart failed without the servers' refusal" "$scratch/stale.txt"
echo "$name: the servers hold attempt 1: a fresh torchrun's attempt 0 is refused ($((SECONDS - start)) s)"
