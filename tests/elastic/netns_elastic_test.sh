#!/usr/bin/env bash
# Elastic training across real hosts on one machine (tests/support/netns_hosts.sh): 2 hosts with
# their own addresses and hostnames, one gradwire-run --nnodes 1:2 per host (2 workers each,
# host 0's launcher hosts the job store), elastic_worker on the auto backend (hierarchical across
# the 2 hosts, shm once one is left).
#  1. A whole host is lost (every process of host 1 killed, its launcher too): host 0's workers go
#     on as a generation of 2, its launcher exits 0, and elastic_check finds the result equal to
#     one process following the printed membership schedule.
#  2. The link to host 1 is cut (ip link set down): host 0's workers time out in their collective
#     (GRADWIRE_TIMEOUT 5 s), take host 1 as gone once its launcher's heartbeat stops, and finish
#     the same way; host 1's launcher exits non-zero, its workers naming the store they lost.
# Exit 77 (skipped, with the reason) when not root or without ip netns.
# Usage: netns_elastic_test.sh GRADWIRE_RUN ELASTIC_WORKER ELASTIC_CHECK
set -euo pipefail
run=$1
worker=$2
check=$3
name=netns_elastic_test
# shellcheck source=../support/netns_hosts.sh
. "$(dirname "$0")/../support/netns_hosts.sh"
netns_require "$name"
netns_make_hosts 2
steps=30
batch=2

# host INDEX PORT: one node of the elastic job, output to $SCRATCH/hostINDEX.txt.
host() {
  netns_exec "$1" GLOO_SOCKET_IFNAME=eth0 GRADWIRE_TIMEOUT=5s GRADWIRE_RENDEZVOUS_TIMEOUT=10s \
    OMP_NUM_THREADS=1 \
    timeout -k 5 120 "$run" --nnodes 1:2 --node-rank "$1" --nproc-per-node 2 \
    --master-addr "${NET}1" --master-port "$2" --grace-period 1s \
    "$worker" "$steps" "$batch" - 100 >"$SCRATCH/host$1.txt" 2>&1
}

# Waits (up to 60 s) until host 0 reported step $1.
wait_for_step() {
  for _ in $(seq 600); do
    grep -q "elastic-test: step $1 world" "$SCRATCH/host0.txt" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$name: step $1 never came" >&2
  cat "$SCRATCH"/host*.txt >&2
  exit 1
}

# case LABEL ACTION: runs the job, does ACTION to host 1 after step 6, checks host 0's result.
case_() {
  local label=$1 action=$2
  local port
  port=$(netns_free_port)
  host 0 "$port" &
  local pid0=$!
  host 1 "$port" &
  local pid1=$!
  wait_for_step 6
  local lost_at
  lost_at=$(date +%s%N)
  eval "$action"
  local status0=0 status1=0
  wait "$pid0" || status0=$?
  wait "$pid1" || status1=$?
  local out0=$SCRATCH/host0.txt
  local failed=0
  grep -q "elastic-test: generation 0 world 4 backend hierarchical" "$out0" || failed=1
  grep -q "elastic-test: generation 1 world 2 backend shm" "$out0" || failed=1
  [ "$status0" = 0 ] || failed=1
  "$check" "$out0" "$steps" "$batch" >"$SCRATCH/check.txt" 2>&1 || failed=1
  if [ "$failed" != 0 ]; then
    echo "--- $label: host 0 exited $status0 (want 0); its output and the check:" >&2
    cat "$out0" "$SCRATCH/check.txt" >&2
    echo "--- host 1 (exited $status1):" >&2
    cat "$SCRATCH/host1.txt" >&2
    exit 1
  fi
  # From the loss to the survivors' next step (the line after generation 1 began).
  local resumed
  resumed=$(grep -m1 -A1000 "generation 1 world 2" "$out0" | grep -m1 -oE "at [0-9]+ ms" |
    grep -oE "[0-9]+")
  echo "$name: $label: host 0 went on alone and exited 0; $(cat "$SCRATCH/check.txt");" \
    "host 1's launcher exited $status1; survivors' next step $((resumed - lost_at / 1000000)) ms" \
    "after the loss"
  LAST_STATUS1=$status1
}

case_ "host 1 lost" "netns_kill_host 1"
case_ "link to host 1 cut" "ip -n ${HOSTS[1]} link set eth0 down"
if [ "$LAST_STATUS1" = 0 ]; then
  echo "$name: host 1's launcher exited 0 after its link was cut" >&2
  cat "$SCRATCH/host1.txt" >&2
  exit 1
fi
grep -q "rendezvous store\|job store\|TimeoutError\|timed out" "$SCRATCH/host1.txt" || {
  echo "$name: host 1's workers did not name what they lost:" >&2
  cat "$SCRATCH/host1.txt" >&2
  exit 1
}
