#!/usr/bin/env bash
# Live benchmarks (root): prints two tables.
#
# 1. Delay precision (the shape of NetPath's Table 2): a 10 ms pipe in a
#    `pipelab bridge` between two namespaces, probe traffic of 66-byte
#    packets at rising rates, mean and standard deviation of the one-way
#    delay, until the first loss.
# 2. Loss-free forwarding rate (NetPath's MLFFR) of 67-byte-frame probe
#    traffic through: the kernel's own bridge, a pipelab bridge with no pipe
#    (the bare AF_PACKET copy loop: receive ring, one copy, send), and a
#    pipelab bridge with one pipe. Ratios against the copy loop.
#
# Usage: benches/live.sh [path/to/pipelab]   (default: target/release/pipelab)
set -euo pipefail
BIN=${1:-target/release/pipelab}
BIN=$(readlink -f "$BIN")
ID=$$
A=plbA$ID; B=plbB$ID; PA=pbxa$ID; PB=pbxb$ID
DUR=${DUR:-2s}

cleanup() {
    [ -n "${BR_PID:-}" ] && kill "$BR_PID" 2>/dev/null && wait "$BR_PID" 2>/dev/null || true
    ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
    ip link del $PA 2>/dev/null || true; ip link del $PB 2>/dev/null || true
    ip link del plbr$ID 2>/dev/null || true
}
trap cleanup EXIT

ip netns add $A; ip netns add $B
ip link add $PA type veth peer name eth0 netns $A
ip link add $PB type veth peer name eth0 netns $B
ip -n $A addr add 10.78.0.1/24 dev eth0; ip -n $A link set eth0 up; ip -n $A link set lo up
ip -n $B addr add 10.78.0.2/24 dev eth0; ip -n $B link set eth0 up; ip -n $B link set lo up
ip link set $PA up; ip link set $PB up

start_bridge() { # config text
    printf '%s\n' "$1" > /tmp/plb$ID.conf
    "$BIN" bridge $PA $PB -f /tmp/plb$ID.conf 2>/dev/null & BR_PID=$!
    sleep 0.8
    ip netns exec $A ping -c 2 -i 0.2 -q 10.78.0.2 >/dev/null
}
stop_bridge() { kill "$BR_PID" 2>/dev/null; wait "$BR_PID" 2>/dev/null || true; BR_PID=; }

probe() { # rate size -> json
    ip netns exec $B "$BIN" probe recv --listen 10.78.0.2:7790 --once 2>/dev/null & local rx=$!
    sleep 0.3
    ip netns exec $A "$BIN" probe send 10.78.0.2:7790 --rate "$1" --size "$2" --duration $DUR --json
    wait $rx 2>/dev/null || true
}

field() { python3 -c "import json,sys; r=json.load(sys.stdin); d=r.get('delay_ms') or {}; print($1)"; }

echo "## Delay precision: 10 ms pipe, 67-byte frames (53-byte IP packets: the probe header's minimum) ($(date -u +%F), $(nproc) cores)"
echo
echo "| offered load | mean ms | stddev ms | p99 ms | lost |"
echo "|---|---|---|---|---|"
start_bridge $'pipe 1 config delay 10ms queue 100000\nadd 100 pipe 1 ip from any to any'
for rate in 1kpps 10kpps 25kpps 50kpps 75kpps 100kpps 150kpps; do
    j=$(probe $rate 53B)
    line=$(echo "$j" | field "'| %s | %.3f | %.3f | %.3f | %d |' % ('$rate', d.get('mean',0), d.get('stddev',0), d.get('p99',0), r['lost'])")
    echo "$line"
    lost=$(echo "$j" | field "r['lost']")
    [ "$lost" -gt 0 ] && break
done
stop_bridge

mlffr() { # finds the highest loss-free rate among a ladder
    local best=0
    for rate in 10 25 50 75 100 150 200 300 400; do
        j=$(probe ${rate}kpps 53B)
        lost=$(echo "$j" | field "r['lost']")
        if [ "$lost" -eq 0 ]; then best=$rate; else break; fi
    done
    echo $best
}

echo
echo "## Loss-free forwarding rate, 67-byte frames, $DUR per step"
echo
echo "| path | MLFFR kpps | ratio to copy loop |"
echo "|---|---|---|"
ip link add plbr$ID type bridge; ip link set $PA master plbr$ID; ip link set $PB master plbr$ID; ip link set plbr$ID up
sleep 0.5; ip netns exec $A ping -c 2 -i 0.2 -q 10.78.0.2 >/dev/null
k=$(mlffr)
ip link del plbr$ID
start_bridge 'add 100 allow ip from any to any'
c=$(mlffr); stop_bridge
start_bridge $'pipe 1 config queue 100000\nadd 100 pipe 1 ip from any to any'
p=$(mlffr); stop_bridge
ratio() { python3 -c "print('%.2f' % ($1/$2 if $2 else 0))"; }
echo "| kernel bridge | $k | $(ratio $k $c) |"
echo "| pipelab, no pipe (copy loop) | $c | 1.00 |"
echo "| pipelab, 1 pipe | $p | $(ratio $p $c) |"
echo
echo "(the probe sender, one UDP socket with a syscall per packet, bounds the highest rate measurable)"
