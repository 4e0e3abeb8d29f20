#!/usr/bin/env bash
# Elastic training across real hosts on one machine (tests/support/netns_hosts.sh): 2 hosts with
# their own addresses and hostnames, one gradwire-run --nnodes 1:2 per host (2 workers each,
# host 0's launcher hosts the job store), elastic_worker on the auto backend (hierarchical across
# the 2 hosts, shm once one is left).
#  1. The link to a host is cut (ip link set down): host 0's workers time out in their collective
#     (GRADWIRE_TIMEOUT 5 s), take the other host as gone once its launcher's heartbeat stops, and
#     finish as a generation of 2, its launcher exits 0, and elastic_check finds the result equal
#     to one process following the printed membership schedule; the cut host's launcher exits
#     non-zero, its workers naming the store they lost.
#  2. A whole host is lost (every process of it killed, its launcher too): host 0's workers go on
#     and finish the same way.
# The cut host takes about 20 s more than host 0 to give up (its store connections time out), so
# it is a third host (host 2), and case 2 runs with hosts 0 and 1 while it does; its exit and
# output are checked at the end.
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
netns_make_hosts 3
steps=30
batch=2

# node HOST NODE_RANK PORT OUTPUT: one node of the elastic job in host HOST.
node() {
  netns_exec "$1" GLOO_SOCKET_IFNAME=eth0 GRADWIRE_TIMEOUT=5s GRADWIRE_RENDEZVOUS_TIMEOUT=10s \
    OMP_NUM_THREADS=1 \
    timeout -k 5 120 "$run" --nnodes 1:2 --node-rank "$2" --nproc-per-node 2 \
    --master-addr "${NET}1" --master-port "$3" --grace-period 1s \
    "$worker" "$steps" "$batch" - 100 >"$4" 2>&1
}

# Waits (up to 60 s) until the output $2 reported step $1.
wait_for_step() {
  for _ in $(seq 600); do
    grep -q "elastic-test: step $1 world" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$name: step $1 never came" >&2
  cat "$SCRATCH"/*.txt >&2
  exit 1
}

# case_ LABEL HOST ACTION: runs the job on host 0 and HOST, does ACTION to HOST after step 6,
# waits for host 0's launcher and checks its result. Leaves HOST's launcher's pid in OTHER_PID
# and the outputs in OUT0 and OUT1 (its own files).
case_() {
  local label=$1 other=$2 action=$3
  local port
  port=$(netns_free_port)
  OUT0=$SCRATCH/case$other-host0.txt
  OUT1=$SCRATCH/case$other-host$other.txt
  node 0 0 "$port" "$OUT0" &
  local pid0=$!
  node "$other" 1 "$port" "$OUT1" &
  OTHER_PID=$!
  wait_for_step 6 "$OUT0"
  local lost_at
  lost_at=$(date +%s%N)
  eval "$action"
  local status0=0
  wait "$pid0" || status0=$?
  local failed=0
  grep -q "elastic-test: generation 0 world 4 backend hierarchical" "$OUT0" || failed=1
  grep -q "elastic-test: generation 1 world 2 backend shm" "$OUT0" || failed=1
  [ "$status0" = 0 ] || failed=1
  "$check" "$OUT0" "$steps" "$batch" >"$SCRATCH/check.txt" 2>&1 || failed=1
  if [ "$failed" != 0 ]; then
    echo "--- $label: host 0 exited $status0 (want 0); its output and the check:" >&2
    cat "$OUT0" "$SCRATCH/check.txt" >&2
    echo "--- host $other (still running or exited):" >&2
    cat "$OUT1" >&2
    exit 1
  fi
  # From the loss to the survivors' next step (the line after generation 1 began).
  local resumed
  resumed=$(grep -m1 -A1000 "generation 1 world 2" "$OUT0" | grep -m1 -oE "at [0-9]+ ms" |
    grep -oE "[0-9]+")
  echo "$name: $label: host 0 went on alone and exited 0; $(cat "$SCRATCH/check.txt");" \
    "survivors' next step $((resumed - lost_at / 1000000)) ms after the loss"
}

case_ "link to host 2 cut" 2 "ip -n ${HOSTS[2]} link set eth0 down"
cut_pid=$OTHER_PID
cut_out=$OUT1
case_ "host 1 lost" 1 "netns_kill_host 1"
status1=0
wait "$OTHER_PID" || status1=$?
echo "$name: host 1 lost: its launcher exited $status1"
cut_status=0
wait "$cut_pid" || cut_status=$?
if [ "$cut_status" = 0 ]; then
  echo "$name: host 2's launcher exited 0 after its link was cut" >&2
  cat "$cut_out" >&2
  exit 1
fi
grep -q "rendezvous store\|job store\|TimeoutError\|timed out" "$cut_out" || {
  echo "$name: host 2's workers did not name what they lost:" >&2
  cat "$cut_out" >&2
  exit 1
}
echo "$name: link to host 2 cut: host 2's launcher exited $cut_status, its workers naming what" \
  "they lost"
