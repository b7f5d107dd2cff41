#!/usr/bin/env bash
# Live benchmarks (root): prints two tables.
#
# 1. Delay precision (the shape of NetPath's Table 2): a 10 ms pipe in a
#    `pipelab bridge` between two namespaces, probe traffic of 66-byte
#    packets at rising rates, mean and standard deviation of the one-way
#    delay, until the first loss.
# 2. Loss-free forwarding rate (NetPath's MLFFR) of 67-byte-frame probe
#    traffic through: the kernel's own bridge, and for each backend
#    (AF_PACKET, AF_XDP) a pipelab bridge with no pipe (the bare copy loop:
#    receive ring, one copy, transmit ring) and one with one pipe. Ratios
#    against the copy loop of the same backend and against the kernel
#    bridge. The probe sends in bursts of $BURST packets per sendmmsg call,
#    so that the sender is not the bound, from $SEND_THREADS threads (each
#    its own flow, 1/N of the rate; `probe send --threads`). Unset, the
#    kernel bridge row sends from 2 threads and the pipelab rows from 1:
#    the kernel bridge forwards inside the sender's own system call, so
#    one sending thread (one CPU) is its bound, while pipelab's runner
#    forwards on its own CPU and a second sender would only take CPU from
#    it on a 2-CPU machine. Set, e.g. SEND_THREADS=2, it holds for every
#    row. The ladder ($LADDER, kpps) runs to 2000 kpps while the path
#    keeps up; "*" marks a figure where the senders fell behind first, "†"
#    one whose next step lost packets the receiving socket dropped (the
#    receiver, not the path, was the bound there).
# 3. Lateness of the bridge's own departures (its accuracy meter: actual
#    minus due time, p50/p99/p99.9) at 1, 10 and 50 kpps through a 10 ms
#    pipe, sleeping between deadlines vs --busy-poll, per backend.
# 4. Real-time priority under CPU load: the same 10 ms pipe (AF_PACKET) at
#    1 and 10 kpps while two CPU-bound processes (`yes`) compete for the
#    two CPUs, with the runner at real-time priority (--realtime) and at
#    normal priority (the default), $RT_RUNS runs each, interleaved.
# 6. CPU cost per forwarded frame: the bridge process's user and system
#    time (from /proc) while $CPU_RATE of frames carrying $CPU_SIZE IP
#    packets (default 53B: 67-byte frames) cross a bridge with one pipe
#    (no delay), per backend, divided by the frames it delivered.
# 5. TCP through `pipelab shell` with no limits: `iperf3 -c $PIPELAB_OUTSIDE
#    -t $TCP_SECS` from the shell's namespace to `iperf3 -s` on the host
#    (two TAP devices, the runners between them) with each of $TCP_WORKERS
#    (`--workers K`; `2u`: two workers, unpinned), with GSO super-frames
#    (`--offload on`, the default) and without (`--offload off`:
#    MTU-sized frames), each of $TCP_OFFLOAD, beside iperf3 over a plain
#    veth pair between two namespaces; $TCP_RUNS runs each, interleaved,
#    then the mean of each and its ratio to the veth pair's.
# 7. GSO fidelity (ONLY=gso): iperf3 TCP through `pipelab shell --link
#    'bw 100Mbit/s delay 10ms loss 0.5%'` and `--link 'bw 1Gbit/s delay
#    10ms queue 3MB'`, offloads on and off, $GSO_RUNS runs each,
#    interleaved: goodput, and the fraction of segments the loss model
#    dropped (from the shell's --stats report).
# 8. The cost of recording (ONLY=capture): the MLFFR of a bridge with one
#    pipe and the probe's delay through a 10 ms pipe at $CAP_RATE, with no
#    recording, --pcap, --events and both, $CAP_RUNS runs each,
#    interleaved (files in /tmp, removed after each run).
#
# Usage: benches/live.sh [path/to/pipelab]   (default: target/release/pipelab)
set -euo pipefail
BIN=${1:-target/release/pipelab}
BIN=$(readlink -f "$BIN")
ID=$$
A=plbA$ID; B=plbB$ID; PA=pbxa$ID; PB=pbxb$ID
DUR=${DUR:-2s}
BURST=${BURST:-32}
TRIES=${TRIES:-2}
# ONLY=precision|mlffr|lateness|realtime|tcp|cpu|gso|capture runs one table.
ONLY=${ONLY:-}
# BACKENDS: the bridge backends the MLFFR and lateness tables measure.
BACKENDS=${BACKENDS:-af-packet af-xdp}
# KERNEL=0 leaves the kernel bridge out of the MLFFR table.
KERNEL=${KERNEL:-1}
# BRIDGE_ARGS: more `pipelab bridge` flags for every table, e.g.
# "--workers 1" (one worker: with AF_XDP both ports share one UMEM).
BRIDGE_ARGS=${BRIDGE_ARGS:-}
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
BACKEND=af-packet
EXTRA=

cleanup() {
    [ -n "${HOG1:-}" ] && kill "$HOG1" "$HOG2" 2>/dev/null || true
    [ -n "${BR_PID:-}" ] && kill "$BR_PID" 2>/dev/null && wait "$BR_PID" 2>/dev/null || true
    ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
    ip link del $PA 2>/dev/null || true; ip link del $PB 2>/dev/null || true
    ip link del plbr$ID 2>/dev/null || true
    [ -n "${IPERF_PID:-}" ] && kill "$IPERF_PID" 2>/dev/null || true
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
    "$BIN" bridge $PA $PB -f /tmp/plb$ID.conf --backend $BACKEND --stats /tmp/plb$ID.json $EXTRA $BRIDGE_ARGS 2>/dev/null & BR_PID=$!
    sleep 0.8
    # Warm-up (neighbour entries); a lost ping does not end the run.
    ip netns exec $A ping -c 3 -i 0.2 -q 10.78.0.2 >/dev/null || true
}
stop_bridge() { kill "$BR_PID" 2>/dev/null; wait "$BR_PID" 2>/dev/null || true; BR_PID=; }

probe() { # rate size [burst [threads]] -> json
    ip netns exec $B "$BIN" probe recv --listen 10.78.0.2:7790 --once 2>/dev/null & local rx=$!
    sleep 0.3
    ip netns exec $A "$BIN" probe send 10.78.0.2:7790 --rate "$1" --size "$2" --duration $DUR --burst "${3:-1}" --threads "${4:-1}" --json
    wait $rx 2>/dev/null || true
}

field() { python3 -c "import json,sys; r=json.load(sys.stdin); d=r.get('delay_ms') or {}; print($1)"; }

if want precision; then
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
fi

mlffr() { # threads: the highest loss-free rate of a ladder; a step passes
          # if one of $TRIES runs loses nothing (a stall of a shared
          # virtual CPU loses a burst whatever the path) and the senders
          # really offered the step's rate (at least 97 % of it). When they
          # fall behind, the figure is the highest rate they offered
          # loss-free, marked "*": the path's own rate is at least that.
          # "†": the step that lost had packets dropped by the receiving
          # socket (its buffer full), so the receiver may be the bound.
    local best=0 rate i lost offered j rxdrop=0
    for rate in ${LADDER:-10 25 50 75 100 150 200 250 300 400 500 600 800 1000 1500 2000}; do
        lost=1
        for i in $(seq "$TRIES"); do
            j=$(probe ${rate}kpps 53B $BURST "$1")
            lost=$(echo "$j" | field "r['lost']")
            offered=$(echo "$j" | field "'%d' % r.get('offered_pps', 0)")
            rxdrop=$(echo "$j" | field "r.get('receiver_dropped', 0)")
            [ "$lost" -eq 0 ] && break
        done
        if [ "$lost" -ne 0 ]; then
            [ "$rxdrop" -gt 0 ] && best="${best}†"
            break
        fi
        # Offered in packets/s: in kpps, truncated, 9999 of 10000 read as
        # 9 and failed the step.
        if [ $((offered / 10)) -lt $((rate * 97)) ]; then
            offered=$((offered / 1000))
            [ "$offered" -gt "$best" ] && best=$offered
            echo "${best}*"; return
        fi
        best=$rate
    done
    echo $best
}
num() { local n=${1%†}; echo "${n%\*}"; }
# Sending threads of the kernel bridge row and of the pipelab rows.
K_THREADS=${SEND_THREADS:-2}
P_THREADS=${SEND_THREADS:-1}

if want mlffr; then
echo
echo "## Loss-free forwarding rate, 67-byte frames, $DUR per step (best of $TRIES), sender bursts of $BURST"
echo
echo "| path | sending threads | MLFFR kpps | ratio to its copy loop | ratio to kernel bridge |"
echo "|---|---|---|---|---|"
k=0
if [ "$KERNEL" = 1 ]; then
ip link add plbr$ID type bridge; ip link set $PA master plbr$ID; ip link set $PB master plbr$ID; ip link set plbr$ID up
sleep 0.5; ip netns exec $A ping -c 2 -i 0.2 -q 10.78.0.2 >/dev/null
k=$(mlffr $K_THREADS)
ip link del plbr$ID
echo "| kernel bridge | $K_THREADS | $k | | 1.00 |"
fi
ratio() { python3 -c "print('%.2f' % ($(num $1)/$(num $2) if $(num $2) else 0))"; }
for BACKEND in $BACKENDS; do
    start_bridge 'add 100 allow ip from any to any'
    c=$(mlffr $P_THREADS); stop_bridge
    start_bridge $'pipe 1 config queue 100000\nadd 100 pipe 1 ip from any to any'
    p=$(mlffr $P_THREADS); stop_bridge
    echo "| pipelab $BACKEND, no pipe (copy loop) | $P_THREADS | $c | 1.00 | $(ratio $c $k) |"
    echo "| pipelab $BACKEND, 1 pipe | $P_THREADS | $p | $(ratio $p $c) | $(ratio $p $k) |"
done
echo
echo "\\*: loss-free at the highest rate the senders offered (kpps), short of the next step: the path's own rate is at least this, and a ratio with a starred figure compares senders, not paths. The kernel bridge forwards in the sender's own system call, so one sending thread is its bound. †: the next step's losses include datagrams the receiving socket dropped (the receiver fell behind)."
fi

if want lateness; then
echo
echo "## Lateness of departures (bridge's meter), 10 ms pipe, 67-byte frames, $DUR per rate"
echo
echo "| backend | wait | offered load | lateness p50 µs | p99 µs | p99.9 µs | probe mean ms | lost |"
echo "|---|---|---|---|---|---|---|---|"
for BACKEND in $BACKENDS; do
    for EXTRA in "" "--busy-poll"; do
        for rate in 1kpps 10kpps 50kpps; do
            start_bridge $'pipe 1 config delay 10ms queue 100000\nadd 100 pipe 1 ip from any to any'
            j=$(probe $rate 53B)
            stop_bridge
            wait_kind=${EXTRA:-sleep}; wait_kind=${wait_kind#--}
            python3 - "$j" <<PY
import json, sys
r = json.loads(sys.argv[1]); s = json.load(open("/tmp/plb$ID.json")); l = s["lateness"]
d = r.get("delay_ms") or {}
print("| $BACKEND | $wait_kind | $rate | %.1f | %.1f | %.1f | %.3f | %d |" % (l["p50_us"], l["p99_us"], l["p999_us"], d.get("mean", 0), r["lost"]))
PY
        done
    done
done
EXTRA=
fi

if want realtime; then
RT_RUNS=${RT_RUNS:-3}
echo
echo "## Real-time priority under CPU load: 10 ms pipe, AF_PACKET, 2 CPU hogs, $DUR per run, $RT_RUNS runs each"
echo
echo "| priority | offered load | probe p99 ms | probe p99.9 ms | lateness p99 µs | lateness max µs | rt_demotions |"
echo "|---|---|---|---|---|---|---|"
BACKEND=af-packet
yes >/dev/null & HOG1=$!; yes >/dev/null & HOG2=$!
for rate in 1kpps 10kpps; do
    for i in $(seq "$RT_RUNS"); do
        for EXTRA in "--realtime" ""; do
            start_bridge $'pipe 1 config delay 10ms queue 100000\nadd 100 pipe 1 ip from any to any'
            j=$(probe $rate 53B)
            stop_bridge
            prio=${EXTRA:-normal}; prio=${prio#--}
            python3 - "$j" <<PY
import json, sys
r = json.loads(sys.argv[1]); s = json.load(open("/tmp/plb$ID.json")); l = s["lateness"]
d = r.get("delay_ms") or {}
print("| $prio | $rate | %.3f | %.3f | %.1f | %.1f | %d |" % (d.get("p99", 0), d.get("p999", 0), l["p99_us"], l["max_us"], l.get("rt_demotions", 0)))
PY
        done
    done
done
kill $HOG1 $HOG2 2>/dev/null || true
EXTRA=
fi
if want cpu; then
CPU_RATE=${CPU_RATE:-100kpps}
# CPU_SIZE: the probe's IP packet size (53B: 67-byte frames).
CPU_SIZE=${CPU_SIZE:-53B}
echo
echo "## CPU per forwarded frame: 1 pipe, $CPU_RATE of $CPU_SIZE IP packets, $DUR, sender bursts of $BURST"
echo
echo "| backend | delivered | lost | user ns/frame | system ns/frame | total ns/frame |"
echo "|---|---|---|---|---|---|"
ticks() { awk '{print $14, $15}' /proc/$BR_PID/stat; }
for BACKEND in $BACKENDS; do
    start_bridge $'pipe 1 config queue 100000\nadd 100 pipe 1 ip from any to any'
    t0=$(ticks)
    j=$(probe $CPU_RATE $CPU_SIZE $BURST)
    t1=$(ticks)
    stop_bridge
    python3 - "$j" "$t0" "$t1" "$(getconf CLK_TCK)" <<PY
import json, sys
r = json.loads(sys.argv[1]); s = json.load(open("/tmp/plb$ID.json"))
u0, s0 = map(int, sys.argv[2].split()); u1, s1 = map(int, sys.argv[3].split()); hz = int(sys.argv[4])
n = s["stats"]["delivered"] or 1
u = (u1 - u0) / hz * 1e9 / n; k = (s1 - s0) / hz * 1e9 / n
print("| $BACKEND | %d | %d | %.0f | %.0f | %.0f |" % (s["stats"]["delivered"], r["lost"], u, k, u + k))
PY
done
fi

if want tcp; then
TCP_RUNS=${TCP_RUNS:-3}
TCP_SECS=${TCP_SECS:-5}
echo
echo "## TCP goodput, no limits: iperf3 -t $TCP_SECS, $TCP_RUNS runs each"
echo
echo "| path | run | Gbit/s (receiver) | retransmits |"
echo "|---|---|---|---|"
TCP_WORKERS=${TCP_WORKERS:-1 2}
TCP_OFFLOAD=${TCP_OFFLOAD:-on off}
TCP_LOG=/tmp/plb$ID.tcp; : > $TCP_LOG
# A veth pair straight between the two namespaces (beside the ones the
# bridge tables use).
ip link add pvx$ID netns $A type veth peer name pvy$ID netns $B
ip -n $A addr add 10.79.0.1/24 dev pvx$ID; ip -n $A link set pvx$ID up
ip -n $B addr add 10.79.0.2/24 dev pvy$ID; ip -n $B link set pvy$ID up
iperf_json() { python3 -c "import json,sys; r=json.load(sys.stdin); e=r['end']; print('%.2f | %d' % (e['sum_received']['bits_per_second']/1e9, e['sum_sent'].get('retransmits', 0)))"; }
for i in $(seq "$TCP_RUNS"); do
    ip netns exec $B iperf3 -s -1 -p 5299 >/dev/null 2>&1 & IPERF_PID=$!
    sleep 0.5
    r=$(ip netns exec $A iperf3 -c 10.79.0.2 -p 5299 -t "$TCP_SECS" -J | iperf_json)
    wait $IPERF_PID 2>/dev/null || true; IPERF_PID=
    echo "| veth pair | $i | $r |"; echo "veth pair|$r" >> $TCP_LOG
    for k in $TCP_WORKERS; do
        case $k in
            *u) args="--workers ${k%u} --cpus none"; label="pipelab shell --workers ${k%u} --cpus none" ;;
            *) args="--workers $k"; label="pipelab shell --workers $k" ;;
        esac
        for off in $TCP_OFFLOAD; do
            iperf3 -s -1 -p 5299 >/dev/null 2>&1 & IPERF_PID=$!
            sleep 0.5
            r=$("$BIN" shell $args --offload $off -- sh -c "iperf3 -c \$PIPELAB_OUTSIDE -p 5299 -t $TCP_SECS -J" 2>/dev/null | iperf_json)
            wait $IPERF_PID 2>/dev/null || true; IPERF_PID=
            echo "| $label --offload $off | $i | $r |"; echo "$label --offload $off|$r" >> $TCP_LOG
        done
    done
done
echo
echo "| path | mean Gbit/s | min–max | × veth pair |"
echo "|---|---|---|---|"
python3 - "$TCP_LOG" <<'PY'
import sys, collections
runs = collections.OrderedDict()
for line in open(sys.argv[1]):
    path, r = line.rstrip("\n").split("|", 1)
    runs.setdefault(path, []).append(float(r.split("|")[0]))
veth = sum(runs["veth pair"]) / len(runs["veth pair"])
for path, v in runs.items():
    m = sum(v) / len(v)
    print("| %s | %.2f | %.2f–%.2f | %.2f |" % (path, m, min(v), max(v), m / veth))
PY
rm -f $TCP_LOG
fi

if want gso; then
GSO_RUNS=${GSO_RUNS:-5}
GSO_SECS=${GSO_SECS:-10}
echo
echo "## GSO fidelity: iperf3 -t $GSO_SECS through pipelab shell, $GSO_RUNS runs each"
echo
echo "| link | offload | run | Mbit/s (receiver) | loss drops / segments | queue drops | cut | coalesced |"
echo "|---|---|---|---|---|---|---|---|"
for link in "bw 100Mbit/s delay 10ms loss 0.5%" "bw 1Gbit/s delay 10ms queue 3MB"; do
    for i in $(seq "$GSO_RUNS"); do
        for off in on off; do
            iperf3 -s -1 -p 5299 >/dev/null 2>&1 & IPERF_PID=$!
            sleep 0.5
            "$BIN" shell --offload $off --link "$link" --stats /tmp/plb$ID.json -- sh -c "iperf3 -c \$PIPELAB_OUTSIDE -p 5299 -t $GSO_SECS -J > /tmp/plb$ID.iperf" 2>/dev/null
            wait $IPERF_PID 2>/dev/null || true; IPERF_PID=
            python3 - "$link" $off $i /tmp/plb$ID.json /tmp/plb$ID.iperf <<'PY'
import json, sys
link, off, i, stats, iperf = sys.argv[1:6]
s = json.load(open(stats))["stats"]; r = json.load(open(iperf))["end"]
g = s["gso"]
print("| %s | %s | %s | %.1f | %d / %d = %.3f %% | %d | %d | %d |" % (
    link, off, i, r["sum_received"]["bits_per_second"] / 1e6, s["dropped_loss"], s["received"],
    100.0 * s["dropped_loss"] / max(1, s["received"]), s["dropped_queue"], g["segments"], g["segments_coalesced"]))
PY
        done
    done
done
fi
if want capture; then
CAP_RUNS=${CAP_RUNS:-3}
CAP_RATE=${CAP_RATE:-10kpps}
echo
echo "## Cost of --pcap and --events (AF_PACKET bridge, $CAP_RUNS runs each, interleaved, $(date -u +%F), $(nproc) cores)"
echo
echo "| recording | run | MLFFR kpps (1 pipe, no delay) | probe mean ms (10 ms pipe, $CAP_RATE) | p99 ms | lateness p99 µs | capture_lost |"
echo "|---|---|---|---|---|---|---|"
BACKEND=af-packet
for i in $(seq "$CAP_RUNS"); do
    for rec in off pcap events both; do
        case $rec in
            off) EXTRA= ;;
            pcap) EXTRA="--pcap /tmp/plb$ID.pcapng" ;;
            events) EXTRA="--events /tmp/plb$ID.jsonl" ;;
            both) EXTRA="--pcap /tmp/plb$ID.pcapng --events /tmp/plb$ID.jsonl" ;;
        esac
        start_bridge $'pipe 1 config queue 100000\nadd 100 pipe 1 ip from any to any'
        m=$(mlffr $P_THREADS); stop_bridge
        start_bridge $'pipe 1 config delay 10ms queue 100000\nadd 100 pipe 1 ip from any to any'
        j=$(probe $CAP_RATE 53B); stop_bridge
        late=$(python3 -c "import json; r=json.load(open('/tmp/plb$ID.json')); c=r.get('capture') or {}; print('%.0f | %s' % (r['lateness']['p99_us'], c.get('capture_lost', '')))")
        echo "$j" | field "'| $rec | $i | $m | %.3f | %.3f | $late |' % (d.get('mean',0), d.get('p99',0))"
        rm -f /tmp/plb$ID.pcapng /tmp/plb$ID.jsonl
    done
done
EXTRA=
fi
rm -f /tmp/plb$ID.json /tmp/plb$ID.conf /tmp/plb$ID.iperf
