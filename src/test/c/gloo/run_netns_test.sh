#!/bin/bash
# The multi-host plugin's test: two "hosts" (network namespaces ptogl-<pid>-h0
# and -h1, each a veth to a bridge in a third namespace, ptogl-<pid>-br;
# 10.77.0.1/24 and 10.77.0.2/24), two ranks per host, each rank in its host's
# namespace with a private /dev/shm. Runs the group of 4 with 1, 1000003 and
# 4194304 floats (every result bit-identical to the rank-order reference), a
# rank killed after the open (the others must fail within the timeout), the
# opens without a store and of another group, a rank passing another count,
# the subgroups (pairs across the hosts opened at once, one used by a thread
# while another subgroup opens, a group of one, a group of three, allgatherv and int32
# allreduce on each), a rank passing other allgatherv sizes, a subgroup
# member passing another rank list, a
# subgroup member killed (the survivors name it in the parent's numbering),
# and the link between the hosts
# cut after the open (every rank must time out);
# then prints the raw TCP bandwidth between the hosts and the bus bandwidth of
# an allreduce of 16 Mi floats (no assertion on either).
#
#   run_netns_test.sh <gloo_rank> <dir of libptorun_gloo.so>
#
# Root only. Fails (never skips) when the namespaces cannot be made. Removes
# every namespace (with its links) it made on exit; the tmpfs mounts live in
# the ranks' own mount namespaces and go with them. Never touches the root
# namespace's interfaces or routes.
set -u

RANK_BIN=$(readlink -f "${1:?usage: run_netns_test.sh <gloo_rank> <lib dir>}")
LIB_DIR=$(readlink -f "${2:?usage: run_netns_test.sh <gloo_rank> <lib dir>}")
HERE=$(dirname "$(readlink -f "$0")")
export PTORUN_LIB_DIR=$LIB_DIR

TAG=ptogl-$$
H0=$TAG-h0
H1=$TAG-h1
BR=$TAG-br
NETS="$H0 $H1 $BR"
IP0=10.77.0.1
IP1=10.77.0.2
RANK_LIMIT=120          # seconds any one rank may run
TIMEOUT_MS=5000         # the group's timeout in the fault and partition cases
WORK=$(mktemp -d /tmp/$TAG.XXXXXX)
PIDS=()
FAILED=0

cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    for ns in $NETS; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "run_netns_test: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (network namespaces)"
[ -x "$RANK_BIN" ] || die "no rank program $RANK_BIN"
[ -f "$LIB_DIR/libptorun_gloo.so" ] || die "no $LIB_DIR/libptorun_gloo.so"

# ---- the two hosts ----
for ns in $NETS; do ip netns add "$ns" || die "cannot create network namespace $ns"; done
ip -n "$BR" link add br0 type bridge || die "cannot create a bridge in $BR"
ip -n "$BR" link set br0 up || die "bridge up"
h=0
for ns in $H0 $H1; do
    ip -n "$ns" link add eth0 type veth peer name "h$h" netns "$BR" || die "cannot create the veth of $ns"
    ip -n "$BR" link set "h$h" master br0 up || die "cannot attach h$h to the bridge"
    ip -n "$ns" addr add "10.77.0.$((h + 1))/24" dev eth0 || die "address of $ns"
    ip -n "$ns" link set eth0 up || die "eth0 up in $ns"
    ip -n "$ns" link set lo up || die "lo up in $ns"
    h=$((h + 1))
done

# starts rank $1 of 4 in its host's namespace with a private /dev/shm; its
# stdout and stderr go to $WORK/<case>.<rank>.{out,err}
start_rank() { # rank rootinfo count mode case
    local rank=$1 ns ip
    if [ "$rank" -lt 2 ]; then ns=$H0 ip=$IP0; else ns=$H1 ip=$IP1; fi
    timeout -k 5 "$RANK_LIMIT" ip netns exec "$ns" unshare -m sh -c \
        'mount -t tmpfs tmpfs /dev/shm && exec "$0" "$@"' \
        "$RANK_BIN" "$2" "$rank" 4 "$ip" "$3" $4 \
        > "$WORK/$5.$rank.out" 2> "$WORK/$5.$rank.err" &
    RANK_PID[$rank]=$!
    PIDS+=($!)
}

rootinfo() {
    local gid
    gid=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    echo "ptorun-gloo:v1;store=$IP0:$((20000 + RANDOM % 20000));group=$gid"
}

# runs a case; $4.. the exit code each rank must end with (124: hung)
run_case() { # case count mode expect0 expect1 expect2 expect3
    local name=$1 count=$2 mode=$3 ri r code ok=1 got=""
    shift 3
    local expect=("$@")
    ri=$(rootinfo)
    local t0=$SECONDS
    for r in 0 1 2 3; do start_rank $r "$ri" "$count" "$mode" "$name"; done
    [ "$mode" = partition ] && cut_link "$name"
    for r in 0 1 2 3; do
        # (2>/dev/null: bash's notice of a rank killed by a signal; its
        # status, 128 + the signal, is checked like any other)
        wait "${RANK_PID[$r]}" 2>/dev/null
        code=$?
        got="$got $code"
        [ "$code" = "${expect[$r]}" ] || ok=0
    done
    if [ $ok = 1 ]; then
        echo "PASS $name (exit codes$got, $((SECONDS - t0)) s)"
    else
        echo "FAIL $name: exit codes$got, expected ${expect[*]} (124: a rank hung)"
        FAILED=1
    fi
    for r in 0 1 2 3; do
        if [ -s "$WORK/$name.$r.err" ]; then sed "s/^/  [$name rank $r] /" "$WORK/$name.$r.err"; fi
    done
}

# partition: once every rank said it is open (a line each into the FIFO
# "ready", held open on fd 3), cut host 1 off the bridge, then let them go:
# opening the FIFO "go" for writing (held on fd 4 until the case ends) ends
# every rank's open of it for reading
cut_link() { # case
    local i line
    for i in 1 2 3 4; do
        read -r -t 60 line <&3 || die "the ranks did not all open within 60 s"
    done
    ip -n "$BR" link set h1 down || die "cannot cut the link"
    exec 4>"$GLOO_RANK_SYNC_DIR/go"
}

export GLOO_RANK_TIMEOUT_MS=30000
run_case count1 1 "" 0 0 0 0
run_case count1000003 1000003 "" 0 0 0 0
run_case count4194304 4194304 "" 0 0 0 0
# subgroups {0,2}, {1,3}, {0,1,2,3}, {rank} and {0,1,3} of the group of 4, every result checked
run_case sub 1000003 sub 0 0 0 0

export GLOO_RANK_TIMEOUT_MS=$TIMEOUT_MS
# rank 3 kills itself after the open: 137 (SIGKILL), the others 10 (failed in time)
run_case fault 1000003 fault 10 10 10 137
# no store (rank 0 never opens): every open times out naming the store
run_case open-timeout 1 open-timeout 10 10 10 10
# ranks 1-3 name another group: rank 0's store refuses them, rank 0 times out
run_case open-disagree 1 open-disagree 10 10 10 10
# rank 3 passes another count: every rank's allreduce fails, none aborts
run_case disagree 1000003 disagree 10 10 10 10
# rank 2 passes other allgatherv sizes on a subgroup: every rank's call fails
run_case disagree-v 1 disagree-v 10 10 10 10
# rank 3 opens the subgroup of all four as {0,1,3}: every open fails alike
run_case sub-disagree 1 sub-disagree 10 10 10 10
# rank 3 dies after the subgroup {0,2,3} opened: 0 and 2 fail in time naming
# rank 3; rank 1, no member, just closes
run_case sub-fault 1000003 sub-fault 10 0 10 137

# ---- bandwidth (printed only) ----
export GLOO_RANK_TIMEOUT_MS=60000
PY=$(command -v python3) || die "no python3 for the TCP baseline"
PORT=$((20000 + RANDOM % 20000))
mkfifo "$WORK/bw_listening"
timeout 60 ip netns exec "$H1" "$PY" "$HERE/tcp_bw.py" recv "$IP1" "$PORT" > "$WORK/bw_listening" &
RECV=$!
PIDS+=($RECV)
read -r -t 30 LISTENING < "$WORK/bw_listening" || die "the TCP receiver did not listen within 30 s"
TCP=$(timeout 60 ip netns exec "$H0" "$PY" "$HERE/tcp_bw.py" send "$IP1" "$PORT" 256) || { echo "FAIL tcp baseline"; FAILED=1; }
wait $RECV
run_case bench 16777216 bench 0 0 0 0
AR=$(cat "$WORK/bench.0.out")
echo "$TCP" | awk '{ printf "raw TCP h0 -> h1, one connection: %d MiB in %.3f s = %.3f GB/s\n", $4 / 1048576, $2, $4 / $2 / 1e9 }'
awk -v tcp="$TCP" -v ar="$AR" 'BEGIN {
    split(tcp, t, " "); split(ar, a, " ");
    n = 4; bytes = 16777216 * 4;
    bus = 2 * (n - 1) / n * bytes / a[2]; raw = t[4] / t[2];
    printf "allreduce 16 Mi floats (64 MiB), 2 hosts x 2 ranks: %.3f s, bus bandwidth 2*(N-1)/N*bytes/time = %.3f GB/s\n", a[2], bus / 1e9;
    printf "bus bandwidth / raw TCP bandwidth = %.3f\n", bus / raw }'

# ---- partition last: it cuts the link ----
export GLOO_RANK_TIMEOUT_MS=$TIMEOUT_MS
export GLOO_RANK_SYNC_DIR=$WORK/sync
mkdir -p "$GLOO_RANK_SYNC_DIR"
mkfifo "$GLOO_RANK_SYNC_DIR/ready" "$GLOO_RANK_SYNC_DIR/go"
exec 3<>"$GLOO_RANK_SYNC_DIR/ready"
run_case partition 1000003 partition 10 10 10 10
exec 3<&- 4>&-

if [ $FAILED = 0 ]; then echo "run_netns_test: all cases passed"; else echo "run_netns_test: FAILED"; fi
exit $FAILED
