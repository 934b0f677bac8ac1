# shellcheck shell=bash
# Simulated hosts in network namespaces, for ruccl's multi-node tests.
# Source this file; it defines lab_preflight, lab_up, lab_down, lab_mpirun.
#
# Topology of `lab_up N` (nothing is configured in the root namespace):
#   switch  netns <name>-sw : bridge br0 with ports p-h1..p-hN
#   host hI netns <name>-hI : eth0 = veth to p-hI, $RUCCL_NETNS_SUBNET.(10+I)/24
# <name> is rc-<pid of the lab owner>, so two labs (say a ctest run and a
# benchmark) never collide; lab_up removes labs whose owner died (a ctest
# timeout kills the owner before its trap can tear the lab down).
# Commands reach a host through the nsrsh agent beside this file, which gives
# each host its own hostname (hI), IPC namespace, /dev/shm and /tmp.
#
# Inputs (environment, all optional):
#   RUCCL_NETNS_SUBNET  first three octets (default 10.79.0)
#   RUCCL_NETNS_LAB     state directory (default: a new ${TMPDIR:-/tmp}/ruccl-netns-<pid>.XXXXXX)
#   RUCCL_NETNS_KEEP    extra colon-separated paths under /tmp that hosts must see
#   MPIEXEC             mpirun to use (default: mpirun from PATH)
#   RUCCL_NETNS_REQUIRE =1: fail instead of skipping where namespaces cannot be made

RUCCL_NETNS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# lab_skip REASON: the visible skip (exit 77 = ctest SKIP_RETURN_CODE), or a
# failure where RUCCL_NETNS_REQUIRE=1 (a CI that must not skip silently).
lab_skip() {
  if [ "${RUCCL_NETNS_REQUIRE:-0}" = 1 ]; then
    echo "FAIL (RUCCL_NETNS_REQUIRE=1): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# lab_preflight: skip unless namespaces, veth links and private IPC/mounts work here.
lab_preflight() {
  [ "$(id -u)" = 0 ] ||
    lab_skip "not root: simulated hosts need CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root)"
  local tool pkg
  for tool in ip:iproute2 unshare:util-linux mount:mount timeout:coreutils awk:mawk; do
    pkg=${tool#*:}; tool=${tool%%:*}
    command -v "$tool" >/dev/null 2>&1 || lab_skip "'$tool' not found (Debian package $pkg)"
  done
  command -v "${MPIEXEC:-mpirun}" >/dev/null 2>&1 || lab_skip "no mpirun ('${MPIEXEC:-mpirun}')"
  # A throw-away namespace with a veth pair and private UTS/IPC/mounts.
  local probe=rc-probe-$$ err
  ip netns del "$probe" 2>/dev/null || true
  err=$(ip netns add "$probe" 2>&1) || lab_skip "cannot create a network namespace: $err"
  err=$(ip link add rcp0 netns "$probe" type veth peer name rcp1 netns "$probe" 2>&1) ||
    { ip netns del "$probe"; lab_skip "cannot create a veth pair: $err"; }
  err=$(ip netns exec "$probe" unshare --uts --ipc \
          sh -c 'hostname rc-probe && mount -t tmpfs rcshm /dev/shm' 2>&1) ||
    { ip netns del "$probe"; lab_skip "cannot unshare UTS/IPC or mount inside a namespace: $err"; }
  ip netns del "$probe"
}

# lab_keep_path PATH: hosts get a private /tmp, so a path under /tmp (a CI
# checkout in /tmp/ci-check, the lab directory) must be bind-mounted back. The
# top-level /tmp entry of PATH is added to RUCCL_NETNS_KEEP.
lab_keep_path() {
  local p=$1 top
  case $p in /tmp/?*) ;; *) return 0 ;; esac
  top=${p#/tmp/}; top=/tmp/${top%%/*}
  case ":${RUCCL_NETNS_KEEP:-}:" in *":$top:"*) return 0 ;; esac
  RUCCL_NETNS_KEEP=${RUCCL_NETNS_KEEP:+$RUCCL_NETNS_KEEP:}$top
}

# lab_sweep: remove labs (netns rc-<pid>-*, directories ruccl-netns-<pid>.*)
# whose owner process is gone.
lab_sweep() {
  local ns owner d
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^rc-[0-9]+-(sw|h[0-9]+)$' || true); do
    owner=$(cut -d- -f2 <<<"$ns")
    [ -d "/proc/$owner" ] && continue
    lab_del_ns "$ns"
  done
  for d in "${TMPDIR:-/tmp}"/ruccl-netns-[0-9]*.*; do
    [ -d "$d" ] || continue
    owner=${d##*/ruccl-netns-}; owner=${owner%%.*}
    [ -d "/proc/$owner" ] || lab_rm_dir "$d"
  done
}

# lab_rm_dir DIR: rm -rf DIR, unless something is still mounted under it.
lab_rm_dir() {
  # The hosts' bind mounts live in their own mount namespaces, gone with their
  # processes; never rm -rf across a mount point that is still there.
  if awk -v d="$1/" 'index($2 "/", d) == 1 {found = 1} END {exit !found}' /proc/self/mounts; then
    echo "netns_lab: mounts remain under $1, leaving it" >&2
  else
    rm -rf "$1"
  fi
}

# lab_del_ns NS: kill what still runs inside NS (only our lab's processes), delete it.
lab_del_ns() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  ip netns del "$1" 2>/dev/null || true
}

# lab_up N: create the lab, wait until every bridge port forwards.
lab_up() {
  local n=$1 i fwd
  export RUCCL_NETNS_NAME=rc-$$
  export RUCCL_NETNS_SUBNET=${RUCCL_NETNS_SUBNET:-10.79.0}
  export RUCCL_NETNS_HOSTS=$n
  if [ -z "${RUCCL_NETNS_LAB:-}" ]; then
    RUCCL_NETNS_LAB=$(mktemp -d "${TMPDIR:-/tmp}/ruccl-netns-$$.XXXXXX")
    RUCCL_NETNS_LAB_OWNED=1                                # lab_down removes it
  fi
  mkdir -p "$RUCCL_NETNS_LAB"
  RUCCL_NETNS_LAB=$(cd "$RUCCL_NETNS_LAB" && pwd -P)
  export RUCCL_NETNS_LAB
  # Paths the hosts need to see: the lab, this checkout, the working directory.
  lab_keep_path "$RUCCL_NETNS_LAB"
  lab_keep_path "$(cd "$RUCCL_NETNS_DIR/../.." && pwd -P)"
  lab_keep_path "$(pwd -P)"
  export RUCCL_NETNS_KEEP
  lab_sweep
  local sw=$RUCCL_NETNS_NAME-sw
  lab_down_namespaces
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for i in $(seq 1 "$n"); do
    local h=$RUCCL_NETNS_NAME-h$i
    ip netns add "$h"
    ip -n "$h" link set lo up
    # Created straight into the two namespaces: eth0 in the host, p-hI on the switch.
    ip link add eth0 netns "$h" type veth peer name "p-h$i" netns "$sw"
    ip -n "$sw" link set "p-h$i" master br0 up
    ip -n "$h" addr add "$RUCCL_NETNS_SUBNET.$((10 + i))/24" dev eth0
    ip -n "$h" link set eth0 up
  done
  # The hosts' /etc/hosts (nsrsh bind-mounts it; the machine's file is untouched).
  { echo "127.0.0.1 localhost"
    for i in $(seq 1 "$n"); do echo "$RUCCL_NETNS_SUBNET.$((10 + i)) h$i"; done
  } > "$RUCCL_NETNS_LAB/hosts"
  # Wait (up to 5 s) until every port forwards and every eth0 has its carrier.
  for _ in $(seq 1 50); do
    fwd=$(ip -n "$sw" -d link show type bridge_slave 2>/dev/null | grep -c 'state forwarding' || true)
    if [ "$fwd" -ge "$n" ] && ! for i in $(seq 1 "$n"); do
         ip -n "$RUCCL_NETNS_NAME-h$i" link show eth0 | grep -q 'state UP' || echo down; done | grep -q down; then
      return 0
    fi
    sleep 0.1
  done
  echo "lab_up: links not ready after 5 s" >&2
  ip -n "$sw" -d link show >&2
  return 1
}

# lab_down_namespaces: delete this lab's namespaces, first killing what runs
# inside all of them at once (host by host, mpirun would see its daemons die).
lab_down_namespaces() {
  local all ns pids=""
  all=$(ip netns list 2>/dev/null | awk '{print $1}' |
        grep -E "^${RUCCL_NETNS_NAME}-(sw|h[0-9]+)\$" || true)
  for ns in $all; do pids+=" $(ip netns pids "$ns" 2>/dev/null || true)"; done
  # shellcheck disable=SC2086
  [ -z "${pids// /}" ] || kill -9 $pids 2>/dev/null || true
  for ns in $all; do lab_del_ns "$ns"; done
}

# lab_kill_hosts: kill -9 every process in the lab's hosts (an mpirun on h1,
# its daemons and ranks), leaving the namespaces up for the next job. For a
# job that Open MPI would keep until its --timeout (a faulty job under
# --enable-recovery) once its caller has read what it waited for.
lab_kill_hosts() {
  local i pids=""
  for i in $(seq 1 "$RUCCL_NETNS_HOSTS"); do
    pids+=" $(ip netns pids "$RUCCL_NETNS_NAME-h$i" 2>/dev/null || true)"
  done
  # shellcheck disable=SC2086
  [ -z "${pids// /}" ] || kill -9 $pids 2>/dev/null || true
}

# lab_down: delete the namespaces and (if lab_up created it) the lab directory.
# Idempotent; meant for `trap lab_down EXIT`.
lab_down() {
  [ -n "${RUCCL_NETNS_NAME:-}" ] || return 0
  lab_down_namespaces
  if [ "${RUCCL_NETNS_LAB_OWNED:-0}" = 1 ] && [ -d "$RUCCL_NETNS_LAB" ]; then
    lab_rm_dir "$RUCCL_NETNS_LAB"
  fi
}

# lab_mpirun PROCS_PER_HOST TIMEOUT_S [mpirun args...] -- COMMAND...:
# mpirun on host h1 over every lab host (PROCS_PER_HOST slots each), started
# through the nsrsh agent. Open MPI's oob and btl use eth0; MPI itself uses
# pml ob1 (it only bootstraps ruccl). UCX_NET_DEVICES=eth0 and, unless the
# caller set UCX_TLS (even to ""), UCX_TLS=tcp. RUCCL_*/UCX_* variables of
# the caller are forwarded with -x. Runs in a subshell: the caller's
# environment is left as it was.
lab_mpirun() (
  local ppn=$1 limit=$2; shift 2
  local hf=$RUCCL_NETNS_LAB/hostfile i v
  for i in $(seq 1 "$RUCCL_NETNS_HOSTS"); do echo "h$i slots=$ppn"; done > "$hf"
  export UCX_NET_DEVICES=${UCX_NET_DEVICES:-eth0}
  [ -n "${UCX_TLS+set}" ] || export UCX_TLS=tcp
  [ -n "$UCX_TLS" ] || unset UCX_TLS                         # "" = UCX's default list
  # --bind-to none: the hosts share this machine's cores, and each host's
  # daemon would bind its first rank to core 0 (2 hosts x 1 process: both
  # ranks on one core, a back-to-back 8 B all-reduce 121 us instead of 23).
  # shellcheck disable=SC2054  # (self,vader,tcp is one word)
  local args=("${MPIEXEC:-mpirun}" --allow-run-as-root --oversubscribe --hostfile "$hf"
    -np $((ppn * RUCCL_NETNS_HOSTS)) --timeout "$limit"
    --mca plm rsh --mca plm_rsh_agent "$RUCCL_NETNS_DIR/nsrsh" --mca plm_rsh_no_tree_spawn 1
    --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0
    --mca pml ob1 --mca btl self,vader,tcp --mca osc ^ucx --bind-to none)
  for v in $(compgen -e | grep -E '^(RUCCL|UCX)_' | grep -v '^RUCCL_NETNS_' || true); do args+=(-x "$v"); done
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  for v in "$@"; do lab_keep_path "$v"; done
  export RUCCL_NETNS_KEEP
  args+=("$@")
  # mpirun --timeout ends the job; the outer timeout catches a stuck mpirun
  # (--foreground: a rank killed by lab_down makes no "Killed" job report).
  timeout --foreground -k 5 $((limit + 10)) "$RUCCL_NETNS_DIR/nsrsh" h1 "$(printf '%q ' "${args[@]}")"
)
