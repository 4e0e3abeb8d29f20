#!/usr/bin/env bash
# Two real hosts on one machine (tests/support/netns_hosts.sh): two network namespaces joined by a
# veth pair, each with its own address, hostname and no GRADWIRE_HOST_ID. One gradwire-run per
# host (--nnodes 2, 2 workers each) runs hierarchical_worker with GRADWIRE_BACKEND=auto: every
# worker must detect 2 hosts ("BACKEND hierarchical", not shm), check its collectives against
# locally computed results ("WORKER OK"), and both launchers must exit 0, with the traffic across
# the veth link (GLOO_SOCKET_IFNAME=eth0: a namespace's hostname does not resolve, and Gloo would
# otherwise fall back to loopback).
# The namespaces, their processes and the link are removed on any exit.
# Exit 77 (ctest: skipped, with the reason) when not root or when `ip netns` cannot be used.
# Then parameter servers on a host of their own (host 2, reached from host 1 through host 0):
# gradwire-ps-server listening on host 2's address, example-hybrid-train on hosts 0 and 1 (one
# trainer each, remote embeddings + DDP over gRPC, since the server is on another host); both
# trainers must end with the same dense checksum and both launchers exit 0.
# Usage: netns_hosts_test.sh GRADWIRE_RUN HIERARCHICAL_WORKER [PS_SERVER HYBRID_TRAIN]
set -euo pipefail
run=$1
worker=$2
ps_server=${3:-}
hybrid=${4:-}
name=netns_hosts_test
# shellcheck source=../support/netns_hosts.sh
. "$(dirname "$0")/../support/netns_hosts.sh"
netns_require "$name"
netns_make_hosts 3
hosts=("${HOSTS[@]}")
scratch=$SCRATCH
net=$NET
port=$(netns_free_port)

# host INDEX [VAR=VALUE...]: gradwire-run for that node inside its namespace, with its own
# hostname and the environment given.
host() {
  local i=$1
  shift
  netns_exec "$i" GRADWIRE_BACKEND=auto OMP_NUM_THREADS=1 "$@" \
    timeout -k 5 90 "$run" --nnodes 2 --node-rank "$i" --nproc-per-node 2 \
    --master-addr "${net}1" --master-port "$port" --grace-period 1s "$worker" store \
    >"$scratch/host$i.txt" 2>&1
}
start=$(date +%s)
host 0 GLOO_SOCKET_IFNAME=eth0 GRADWIRE_TIMEOUT=20s &
pid0=$!
host 1 GLOO_SOCKET_IFNAME=eth0 GRADWIRE_TIMEOUT=20s &
pid1=$!
statuses=(0 0)
wait "$pid0" || statuses[0]=$?
wait "$pid1" || statuses[1]=$?
failed=0
for i in 0 1; do
  out=$scratch/host$i.txt
  status=${statuses[$i]}
  backends=$(grep -c "BACKEND hierarchical" "$out" || true)
  oks=$(grep -c "WORKER OK" "$out" || true)
  if [ "$status" != 0 ] || [ "$backends" != 2 ] || [ "$oks" != 2 ]; then
    echo "--- host $i (${hosts[$i]}): exit $status, 'BACKEND hierarchical' x$backends," \
      "'WORKER OK' x$oks (want 0, 2, 2):" >&2
    cat "$out" >&2
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1
echo "$name: 2 hosts (${hosts[0]} ${hosts[1]}), 4 workers on the hierarchical backend," \
  "collectives right, both launchers exited 0 in $(($(date +%s) - start)) s"

# Addresses that do not route (no GLOO_SOCKET_IFNAME: a namespace's hostname does not resolve, so
# Gloo offers its peers 127.0.0.1). Every worker must fail, naming the backend's creation, within
# its 3 s limit and the 10 % margin (Note [creation deadline] in c10d_communicator.cpp: before,
# in about one run in four, a connect that timed out rather than being refused made Gloo's
# pair-by-pair connects take 5 times the limit), and both launchers must exit non-zero.
port=$(netns_free_port)
start=$(date +%s%N)
host 0 GRADWIRE_TIMEOUT=3s &
pid0=$!
host 1 GRADWIRE_TIMEOUT=3s &
pid1=$!
statuses=(0 0)
wait "$pid0" || statuses[0]=$?
wait "$pid1" || statuses[1]=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
cat "$scratch/host0.txt" "$scratch/host1.txt" >"$scratch/both.txt"
# "failed after 5.50 s" or "failed after 236 ms", in milliseconds, the longest.
longest=$(grep -oE "creating the hierarchical backend over ranks [^]]*] failed after [0-9.]+ m?s" \
  "$scratch/both.txt" | awk '{v = $(NF - 1); if ($NF == "s") v *= 1000; if (v > m) m = v}
  END {print int(m + 0.5)}')
errors=$(grep -c "creating the hierarchical backend" "$scratch/both.txt" || true)
if [ "${statuses[0]}" = 0 ] || [ "${statuses[1]}" = 0 ] || [ "$errors" -lt 2 ] ||
  [ "${longest:-99999}" -gt 3400 ] || [ "$took_ms" -gt 15000 ]; then
  echo "--- unroutable: exits ${statuses[*]} (want both non-zero), $errors creation errors" \
    "(want >= 2), the longest after $longest ms (want <= 3400), all in $took_ms ms:" >&2
  cat "$scratch/both.txt" >&2
  exit 1
fi
echo "$name: unroutable addresses: every worker failed naming the backend's creation," \
  "the longest after $longest ms of a 3 s limit; both launchers exited non-zero in $took_ms ms"

[ -n "$ps_server" ] || exit 0
# Parameter servers on host 2; trainers on hosts 0 and 1.
token=netns-test-token
ps_port0=$(netns_free_port)
ps_port1=$(netns_free_port)
netns_exec 2 GRADWIRE_TOKEN=$token timeout -k 5 120 "$ps_server" \
  --listen "${net}3:$ps_port0" --listen "${net}3:$ps_port1" >"$scratch/servers.txt" 2>&1 &
# Until both listen (up to 30 s). Only the ready lines count: a server listening on an address
# other than loopback without TLS also prints a warning naming it ("warning: listening on ...").
listening=0
for _ in $(seq 300); do
  listening=$(grep -c "^gradwire-ps-server listening on " "$scratch/servers.txt" 2>/dev/null ||
    true)
  [ "$listening" = 2 ] && break
  sleep 0.1
done
if [ "$listening" != 2 ]; then
  echo "--- servers on host 2: $listening of 2 listening after 30 s:" >&2
  cat "$scratch/servers.txt" >&2
  exit 1
fi
port=$(netns_free_port)
trainer() {
  netns_exec "$1" GLOO_SOCKET_IFNAME=eth0 GRADWIRE_TIMEOUT=30s OMP_NUM_THREADS=1 \
    GRADWIRE_PS_ADDRS="${net}3:$ps_port0,${net}3:$ps_port1" GRADWIRE_TOKEN=$token \
    timeout -k 5 120 "$run" --nnodes 2 --node-rank "$1" --nproc-per-node 1 \
    --master-addr "${net}1" --master-port "$port" --grace-period 1s "$hybrid" 20 \
    >"$scratch/trainer$1.txt" 2>&1
}
start=$(date +%s)
trainer 0 &
pid0=$!
trainer 1 &
pid1=$!
statuses=(0 0)
wait "$pid0" || statuses[0]=$?
wait "$pid1" || statuses[1]=$?
sums=$(cat "$scratch/trainer0.txt" "$scratch/trainer1.txt" | grep -oE "checksum [-0-9.e+]+" |
  sort -u | wc -l)
count=$(cat "$scratch/trainer0.txt" "$scratch/trainer1.txt" | grep -c "checksum" || true)
if [ "${statuses[0]}" != 0 ] || [ "${statuses[1]}" != 0 ] || [ "$count" != 2 ] ||
  [ "$sums" != 1 ]; then
  echo "--- servers on host 2, trainers on hosts 0 and 1: exits ${statuses[*]} (want 0 0)," \
    "$count checksums (want 2), $sums distinct (want 1):" >&2
  cat "$scratch/servers.txt" "$scratch/trainer0.txt" "$scratch/trainer1.txt" >&2
  exit 1
fi
echo "$name: parameter servers on host 2 (${net}3), a trainer on each of hosts 0 and 1:" \
  "equal dense checksums, both launchers exited 0 in $(($(date +%s) - start)) s"
