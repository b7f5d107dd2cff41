#!/usr/bin/env bash
# `pipelab attach` benchmarks (root): prints two tables.
#
# 1. Delay precision: one-way delay of 100-byte probe packets from the host
#    to a namespace over a veth (`plbm0`), for $SECS s at each of $RATES,
#    with nothing on the veth, and with `pipelab attach plbm0 -- delay
#    10ms` (egress); beside it, the interposed mechanism: a `pipelab bridge
#    --realtime` with a 10 ms pipe between two veths (AF_XDP and
#    AF_PACKET), probe from one namespace to the other. attach runs its
#    thread at real-time priority, hence --realtime for the bridge. The
#    receiver reads kernel timestamps: egress delay is what they see.
# 2. TCP goodput host -> namespace over the same veth (iperf3 -t
#    $TCP_SECS, receiver's figure, $TCP_RUNS runs per cell): nothing,
#    attach egress and attach --both with an unlimited pipe (`delay
#    0ms`), nothing again; and through the AF_PACKET bridge, namespace to
#    namespace.
#
# Usage: benches/attach.sh [path/to/pipelab]   (default: target/debug/pipelab)
set -euo pipefail
P=$(realpath "${1:-target/debug/pipelab}")
RATES=${RATES:-"1000pps 10kpps"}
SECS=${SECS:-10s}
TCP_SECS=${TCP_SECS:-5}
TCP_RUNS=${TCP_RUNS:-3}

cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    wait 2>/dev/null || true
    for l in plbm0 plbA plbB; do ip link del $l 2>/dev/null || true; done
    for n in pl-atbench pl-atbA pl-atbB; do ip netns del $n 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup

ip netns add pl-atbench; ip -n pl-atbench link set lo up
ip link add plbm0 type veth peer name eth0 netns pl-atbench
ip addr add 198.19.90.1/24 dev plbm0; ip link set plbm0 up
ip -n pl-atbench addr add 198.19.90.2/24 dev eth0; ip -n pl-atbench link set eth0 up
for s in A B; do
    ip netns add pl-atb$s; ip -n pl-atb$s link set lo up
    ip link add plb$s type veth peer name eth0 netns pl-atb$s
    ip link set plb$s up; ip -n pl-atb$s link set eth0 up
done
ip -n pl-atbA addr add 198.19.91.1/24 dev eth0
ip -n pl-atbB addr add 198.19.91.2/24 dev eth0
ping -c 2 -i 0.2 198.19.90.2 >/dev/null

row() { # label rate json-file
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[3]))
m = d["delay_ms"]
print(f"| {sys.argv[1]} | {sys.argv[2]} | {m['mean']:.3f} | {m['stddev']:.3f} | {m['p99']:.3f} | {m['max']:.3f} | {d['lost']} |")
PY
}
J=$(mktemp)
echo "| path | offered load | mean ms | stddev ms | p99 ms | max ms | lost |"
echo "|---|---|---|---|---|---|---|"
ip netns exec pl-atbench "$P" probe recv --listen 198.19.90.2:7777 >/dev/null 2>&1 &
ip netns exec pl-atbB "$P" probe recv --listen 198.19.91.2:7777 >/dev/null 2>&1 &
sleep 0.5
for rate in $RATES; do
    "$P" probe send 198.19.90.2:7777 --rate "$rate" --size 100B --duration "$SECS" --json >"$J"
    row "veth, nothing" "$rate" "$J"
    "$P" attach plbm0 -- delay 10ms 2>/dev/null & A=$!; sleep 1
    "$P" probe send 198.19.90.2:7777 --rate "$rate" --size 100B --duration "$SECS" --json >"$J"
    kill -TERM $A; wait $A
    row "attach (egress), 10 ms" "$rate" "$J"
done
printf 'pipe 1 config delay 10ms queue 100000\nadd 100 pipe 1 ip from any to any\n' >"$J.conf"
for be in af-xdp af-packet; do
    "$P" bridge plbA plbB -f "$J.conf" --realtime --backend $be 2>/dev/null & B=$!; sleep 1.5
    ip netns exec pl-atbA ping -c 2 -i 0.2 198.19.91.2 >/dev/null
    for rate in $RATES; do
        ip netns exec pl-atbA "$P" probe send 198.19.91.2:7777 --rate "$rate" --size 100B --duration "$SECS" --json >"$J"
        row "bridge --realtime ($be), 10 ms" "$rate" "$J"
    done
    kill -TERM $B; wait $B
done

gbps() { python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"]/1e9))'; }
tcp_once() { # namespace-of-server address [namespace-of-client]
    ip netns exec "$1" iperf3 -s -1 -B "$2" >/dev/null 2>&1 & S=$!; sleep 0.3
    if [ -n "${3:-}" ]; then
        ip netns exec "$3" iperf3 -c "$2" -t "$TCP_SECS" -J 2>/dev/null | gbps
    else
        iperf3 -c "$2" -t "$TCP_SECS" -J 2>/dev/null | gbps
    fi
    wait $S
}
cell() { # label, then attach's arguments (none: nothing on the veth)
    local label=$1; shift
    local r=""
    for _ in $(seq "$TCP_RUNS"); do
        if [ $# -gt 0 ]; then "$P" attach "$@" 2>/dev/null & A=$!; sleep 1; fi
        r="$r $(tcp_once pl-atbench 198.19.90.2),"
        if [ $# -gt 0 ]; then kill -TERM $A; wait $A; fi
    done
    echo "| $label |${r%,} |"
}
echo
echo "| path | Gbit/s |"
echo "|---|---|"
cell "veth, nothing"
cell "attach egress, delay 0ms" plbm0 -- delay 0ms
cell "attach --both, delay 0ms" --both plbm0 -- delay 0ms
cell "veth, nothing (again)"
printf 'pipe 1 config delay 0ms\nadd 100 pipe 1 ip from any to any\n' >"$J.conf"
"$P" bridge plbA plbB -f "$J.conf" --realtime --backend af-packet 2>/dev/null & B=$!; sleep 1.5
r=""
for _ in $(seq "$TCP_RUNS"); do r="$r $(tcp_once pl-atbB 198.19.91.2 pl-atbA),"; done
kill -TERM $B; wait $B
echo "| bridge --realtime (af-packet), delay 0ms, namespace to namespace |${r%,} |"
rm -f "$J" "$J.conf"
