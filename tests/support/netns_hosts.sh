# Real hosts on one machine for shell tests (sourced): network namespaces joined by veth pairs,
# each with its own address (NET.1, NET.2, ...) and, per command, its own UTS namespace and
# hostname: what a real host differs by (the host identity is hostname + boot_id,
# src/common/host_identity.cpp; the boot_id is the kernel's, so without its own hostname a
# namespace reads as the same host). Host 0 is joined to every other host by a pair whose ends
# are each host's "eth0" (host 0's are eth1, eth2, ... beyond the first); every host reaches host
# 0 at NET.1, and host i is NET.(i+1).
#
#   netns_require NAME          exit 77 (ctest: skipped) with the reason when not root or without
#                               ip netns, unshare
#   netns_make_hosts N          creates N hosts: HOSTS (namespace names), NET (address prefix),
#                               SCRATCH (a temporary folder); removes all of it on exit
#   netns_free_port             a free TCP port in host 0
#   netns_exec I CMD...         runs CMD in host I with its own hostname and no GRADWIRE_HOST_ID
#   netns_kill_host I           SIGKILL to every process in host I (a host lost)

netns_require() {
  local name=$1
  skip() { echo "$name: skipped: $*"; exit 77; }
  [ "$(id -u)" = 0 ] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
  command -v ip >/dev/null || skip "no ip command (iproute2)"
  command -v unshare >/dev/null || skip "no unshare (util-linux)"
  ip netns list >/dev/null 2>&1 || skip "ip netns is unavailable"
}

netns_cleanup() {
  local h
  for h in "${HOSTS[@]}"; do
    ip netns pids "$h" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  for _ in $(seq 50); do  # until they are gone (up to 5 s)
    [ -z "$(for h in "${HOSTS[@]}"; do ip netns pids "$h" 2>/dev/null; done)" ] && break
    sleep 0.1
  done
  for h in "${HOSTS[@]}"; do
    ip netns del "$h" 2>/dev/null || true  # takes its ends of the veth pairs with it
  done
  rm -rf "$SCRATCH"
}

netns_make_hosts() {
  local count=$1 i
  HOSTS=()
  for ((i = 0; i < count; i++)); do HOSTS+=("gw$$h$i"); done
  NET=10.$((200 + $$ % 50)).$(($$ % 250)).
  SCRATCH=$(mktemp -d)
  trap netns_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for h in "${HOSTS[@]}"; do
    ip netns add "$h" || { echo "cannot create a network namespace ($h)"; exit 77; }
    ip -n "$h" link set lo up
  done
  for ((i = 1; i < count; i++)); do
    ip link add "gw$$a$i" netns "${HOSTS[0]}" type veth peer name "gw$$b$i" netns "${HOSTS[$i]}"
    local zero_end=eth$((i - 1))
    ip -n "${HOSTS[0]}" link set "gw$$a$i" name "$zero_end"
    ip -n "${HOSTS[$i]}" link set "gw$$b$i" name eth0
    # Host 0 answers at NET.1 on every link; host i is NET.(i+1), reached through its own link.
    ip -n "${HOSTS[0]}" addr add "${NET}1/32" dev "$zero_end" 2>/dev/null || true
    ip -n "${HOSTS[0]}" link set "$zero_end" up
    ip -n "${HOSTS[0]}" route add "${NET}$((i + 1))/32" dev "$zero_end"
    ip -n "${HOSTS[$i]}" addr add "${NET}$((i + 1))/32" dev eth0
    ip -n "${HOSTS[$i]}" link set eth0 up
    ip -n "${HOSTS[$i]}" route add "${NET}1/32" dev eth0
    # The other hosts through host 0 (it forwards).
    ip -n "${HOSTS[$i]}" route add "${NET}0/24" via "${NET}1" dev eth0 2>/dev/null || true
  done
  ip netns exec "${HOSTS[0]}" sysctl -qw net.ipv4.ip_forward=1 2>/dev/null || true
}

netns_free_port() {
  ip netns exec "${HOSTS[0]}" python3 -c \
    'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'
}

netns_exec() {
  local i=$1
  shift
  # shellcheck disable=SC2016  # expanded by that sh: sets the hostname, then runs the rest
  ip netns exec "${HOSTS[$i]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${HOSTS[$i]}" \
    env -u GRADWIRE_HOST_ID "$@"
}

netns_kill_host() {
  ip netns pids "${HOSTS[$1]}" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
}
