#!/usr/bin/env bash
# Workers benchmark (root): delay precision of a bridge with one worker
# and with two (pinned, and unpinned: --cpus none), interleaved.
#
# A bridge between two namespaces' veth peers with two 10 ms pipes, one
# per direction (`recv A` / `recv B`, so with two workers each owns one
# direction and nothing is handed over); probe traffic of 67-byte frames
# from A to B at $RATE for 3 s; the probe's one-way delay (mean, p99,
# loss) and each worker's lateness p99 (its own accuracy meter). $ROUNDS
# rounds, each running the three in turn.
#
# Usage: benches/workers.sh [path/to/pipelab]   (default: target/release/pipelab)
# Environment: RATE (10kpps), ROUNDS (3), BACKEND (af-packet).
set -uo pipefail
BIN=$(readlink -f "${1:-target/release/pipelab}")
RATE=${RATE:-10kpps}; ROUNDS=${ROUNDS:-3}; BACKEND=${BACKEND:-af-packet}
ID=$$; A=klA$ID; B=klB$ID; PA=kla$ID; PB=klb$ID
cleanup() { ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null; ip link del $PA 2>/dev/null; ip link del $PB 2>/dev/null; }
trap cleanup EXIT
ip netns add $A; ip netns add $B
ip link add $PA type veth peer name eth0 netns $A; ip link add $PB type veth peer name eth0 netns $B
ip -n $A addr add 10.81.0.1/24 dev eth0; ip -n $B addr add 10.81.0.2/24 dev eth0
for n in $A $B; do ip -n $n link set eth0 up; ip -n $n link set lo up; done
ip link set $PA up; ip link set $PB up
printf "pipe 1 config delay 10ms\npipe 2 config delay 10ms\nadd 100 pipe 1 ip from any to any recv $PA\nadd 200 pipe 2 ip from any to any recv $PB\n" > /tmp/kl$ID.conf
echo "| round | workers | mean ms | p99 ms | lost | lateness p99 us (per worker) |"
echo "|---|---|---|---|---|---|"
for r in $(seq $ROUNDS); do
 for k in "1" "2" "2 --cpus none"; do
  $BIN bridge $PA $PB -f /tmp/kl$ID.conf --backend $BACKEND --workers $k --stats /tmp/kl$ID.json 2>/dev/null & BR=$!
  sleep 0.8
  ip netns exec $A ping -c 2 -i 0.2 -q 10.81.0.2 >/dev/null
  ip netns exec $B $BIN probe recv --listen 10.81.0.2:7793 --once >/dev/null 2>&1 & RX=$!
  sleep 0.3
  j=$(ip netns exec $A $BIN probe send 10.81.0.2:7793 --rate $RATE --duration 3s --json)
  wait $RX 2>/dev/null
  kill -TERM $BR; wait $BR 2>/dev/null
  lat=$(python3 -c "import json; r=json.load(open('/tmp/kl$ID.json')); print(' / '.join('%.0f' % w['lateness']['p99_us'] for w in r['workers']))")
  echo "$j" | python3 -c "import json,sys; r=json.load(sys.stdin); d=r['delay_ms']; print('| $r | $k | %.3f | %.3f | %d | $lat |' % (d['mean'], d['p99'], r['lost']))"
 done
done
rm -f /tmp/kl$ID.conf /tmp/kl$ID.json
