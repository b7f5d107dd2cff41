#!/usr/bin/env bash
# Start and teardown as a user waits for them (root): the wall time of
# `pipelab shell --link 'delay $DELAY' -- true` against Mahimahi's
# `mm-delay $DELAY true` where it is installed, $RUNS runs each,
# interleaved, and a bare floor (`ip netns add` + a veth pair + `ip netns
# del`: what any shell in a namespace of its own pays).
#
# Everything runs inside a network namespace of the bench's own (with a
# veth pair as its default route), so nothing on the host
# changes: Mahimahi needs IP forwarding on, which is set there only, and
# a user that is not root (it is setuid root and refuses root): $MM_USER,
# created if missing and removed after.
#
# Usage: benches/startup.sh [path/to/pipelab]   (default: target/release/pipelab)
#   RUNS=10 DELAY=20   (ms)   MM=path/to/mm-delay (default: found on PATH
#   or under /opt/mahimahi/bin)   BASE=path/to/another/pipelab (one more
#   row, interleaved: a before/after in one run)
set -euo pipefail
BIN=$(readlink -f "${1:-target/release/pipelab}")
RUNS=${RUNS:-10}
BASE=${BASE:+$(readlink -f "$BASE")}
DELAY=${DELAY:-20}
MM=${MM:-$(command -v mm-delay || ls /opt/mahimahi/bin/mm-delay 2>/dev/null || true)}
MM_USER=${MM_USER:-pipelab-mmbench}
NS=pl-startup-$$
made_user=

cleanup() {
    ip netns del "$NS" 2>/dev/null || true
    ip netns del "$NS-floor" 2>/dev/null || true
    [ -n "$made_user" ] && userdel "$MM_USER" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add uplink type veth peer uplink-peer
ip -n "$NS" link set uplink-peer up
ip -n "$NS" addr add 192.0.2.1/24 dev uplink
ip -n "$NS" link set uplink up
ip -n "$NS" route add default via 192.0.2.2 dev uplink
ip netns exec "$NS" sysctl -qw net.ipv4.ip_forward=1

if [ -n "$MM" ] && ! id "$MM_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$MM_USER"
    made_user=1
fi

now() { echo "$EPOCHREALTIME"; }
declare -A T
run() { # name, command...
    local name=$1 t0 t1
    shift
    t0=$(now)
    "$@" >/dev/null 2>&1 || { echo "$name failed: $*" >&2; return 1; }
    t1=$(now)
    T[$name]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f", b - a}') "
}
floor() {
    ip netns add "$NS-floor"
    ip -n "$NS-floor" link add a type veth peer b
    ip -n "$NS-floor" link set a up
    ip netns del "$NS-floor"
}

for _ in $(seq "$RUNS"); do
    run floor floor
    run pipelab ip netns exec "$NS" "$BIN" shell --link "delay ${DELAY}ms" -- true
    if [ -n "$BASE" ]; then
        run base ip netns exec "$NS" "$BASE" shell --link "delay ${DELAY}ms" -- true
    fi
    if [ -n "$MM" ]; then
        run mahimahi ip netns exec "$NS" setpriv --reuid "$MM_USER" --regid "$MM_USER" \
            --clear-groups "$MM" "$DELAY" true
    fi
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "# start + teardown of \`true\`, $RUNS interleaved runs, delay ${DELAY} ms; $(nproc) CPUs, $cpu; $(date -u +%FT%TZ)"
printf '%-10s %8s %8s %8s\n' "" "min s" "median s" "max s"
for name in floor pipelab base mahimahi; do
    [ -n "${T[$name]:-}" ] || continue
    echo "${T[$name]}" | tr ' ' '\n' | sed '/^$/d' | sort -g |
        awk -v n="$name" '{v[NR]=$1} END {printf "%-10s %8.3f %8.3f %8.3f\n", n, v[1], (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[NR]}'
done
