# Hosts with their own addresses (sourced): each host is a network namespace whose eth0 is one end of a
# veth pair; the other end sits on a bridge inside a "switch" namespace this run creates. The switch has a
# namespace of its own because a bridge in the root namespace passes through the host's iptables FORWARD
# chain (br_netfilter; Docker sets its policy to DROP): nothing of the root namespace is touched at all.
# Only 10.77.0.0/24 addresses inside the host namespaces are used. Every name carries a per-run prefix, and
# everything created is deleted on every exit path (netns_cleanup, which the caller's EXIT trap runs).
#
#   netns_require             exit 77 (ctest SKIP) with a clear message when namespaces cannot be made
#   netns_setup N             bridge + N hosts; host i is namespace $(netns_name i) at $(netns_ip i)
#   netns_exec I CMD...       run CMD inside host I
#   netns_cut I / netns_restore I        take host I's link down / up (its process keeps running)
#   netns_split "I J.." "K L.."  two islands: the second group's links move to a second bridge
#   netns_heal                every host back on the first bridge
#   netns_cap RATE            tbf on both ends of every veth (egress of the host and towards it)
#   netns_start_gossipd I ARGS...  `gossipd run ARGS` as node I in host I (needs daemon_lib.sh)
NETNS_PFX=${NETNS_PFX:-gn$$}
NETNS_N=0
NETNS_SW="${NETNS_PFX}sw"

netns_name() { echo "${NETNS_PFX}n$1"; }
netns_veth() { echo "h$1"; }  # the switch end of host I's link (in the switch namespace)
sw() { ip -n "$NETNS_SW" "$@"; }
netns_ip() { echo "10.77.0.$(($1 + 2))"; }

netns_require() {
  local probe="${NETNS_PFX}probe"
  if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! ip netns add "$probe" 2>/dev/null; then
    echo "SKIP: network namespaces are not available here (needs root and 'ip netns add'); namespace test not run"
    exit 77
  fi
  if ! ip -n "$probe" link add name pb type bridge 2>/dev/null || ! command -v tc >/dev/null; then
    ip netns del "$probe"
    echo "SKIP: cannot create a bridge in a namespace (or no tc) here; namespace test not run"
    exit 77
  fi
  ip netns del "$probe"
}

netns_cleanup() {
  local i
  # Whatever still runs inside our hosts goes first (by pid, from `ip netns pids`): deleting a namespace
  # does not end its processes.
  for ((i = 0; i < NETNS_N; i++)); do
    for p in $(ip netns pids "$(netns_name $i)" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  done
  for ((i = 0; i < NETNS_N; i++)); do ip netns del "$(netns_name $i)" 2>/dev/null || true; done
  ip netns del "$NETNS_SW" 2>/dev/null || true  # takes the bridges and the switch ends of the veths along
}

netns_setup() {
  local n=$1 i ns veth
  ip netns add "$NETNS_SW"
  NETNS_N=0
  sw link add name br0 type bridge
  sw link set br0 up
  for ((i = 0; i < n; i++)); do
    ns=$(netns_name $i) veth=$(netns_veth $i)
    ip netns add "$ns"
    NETNS_N=$((i + 1))
    sw link add "$veth" type veth peer name eth0 netns "$ns"
    sw link set "$veth" master br0 up
    ip -n "$ns" addr add "$(netns_ip $i)/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
}

# For a background process whose pid must be the program's own, call `ip netns exec "$(netns_name I)" ...`
# directly: `netns_exec ... &` forks a subshell, and killing that leaves the program running.
netns_exec() { local i=$1; shift; ip netns exec "$(netns_name $i)" "$@"; }
netns_cut() { sw link set "$(netns_veth $1)" down; }
netns_restore() { sw link set "$(netns_veth $1)" up; }

netns_split() {
  local i
  sw link show br1 >/dev/null 2>&1 || { sw link add name br1 type bridge && sw link set br1 up; }
  for i in $2; do sw link set "$(netns_veth $i)" master br1; done
}

netns_heal() {
  local i
  for ((i = 0; i < NETNS_N; i++)); do sw link set "$(netns_veth $i)" master br0; done
}

netns_cap() {
  local rate=$1 i
  for ((i = 0; i < NETNS_N; i++)); do
    ip netns exec "$(netns_name $i)" tc qdisc replace dev eth0 root tbf rate "$rate" burst 32kbit latency 400ms
    ip netns exec "$NETNS_SW" tc qdisc replace dev "$(netns_veth $i)" root tbf rate "$rate" burst 32kbit latency 400ms
  done
}

# netns_start_gossipd I ARGS...: `$GOSSIPD run ARGS` as node I in host I, on port 7000 of the host's own
# address, seeded by host 0, data dir and log in $WORK/node-I; its pid in NODE_PID[I] and PIDS (the
# variables of tests/integration/daemon_lib.sh, which the caller sources).
netns_start_gossipd() {
  local id=$1 dir="$WORK/node-$1"
  shift
  mkdir -p "$dir"
  ip netns exec "$(netns_name $id)" "$GOSSIPD" run "$@" --set node.id="$id" --set node.data_dir="$dir" \
    --set node.listen="tcp://$(netns_ip $id):7000" --set "cluster.seeds=[\"tcp://$(netns_ip 0):7000\"]" \
    >>"$dir/log" 2>&1 &
  NODE_PID[$id]=$!
  PIDS+=($!)
}
