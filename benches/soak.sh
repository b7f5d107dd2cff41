#!/usr/bin/env bash
# Soak benchmark (root): a pipelab bridge between two namespaces carries
# probe traffic at 90 % of its measured loss-free forwarding rate (MLFFR)
# for DUR seconds, and is watched the whole time.
#
# 1. The MLFFR of the bridge (the configuration below, 67-byte frames,
#    sender bursts of $BURST) is measured as benches/live.sh does: a
#    ladder of rates, $STEP per step, a step passing if one of $TRIES runs
#    loses nothing. RATE=KPPS skips the measurement.
# 2. `pipelab probe send` runs through the bridge at 90 % of it for DUR
#    seconds. Every second the bridge's counters are read over the control
#    protocol (`pipelab --target NAME stats --json`, the runner's
#    accounting) and its resident memory from /proc/PID/status (VmRSS),
#    and the accounting identity is checked:
#        received = delivered + dropped (queue, loss, aqm, link, memory,
#                   rule, loop, tx) + inside
#    with every counter never decreasing. A line of the table is printed
#    every 10 s.
# 3. The summary: probe packets sent, received and lost; the bridge's
#    drops by reason, the kernel's receive-ring drops of its ports (from its
#    --stats report at exit) and the receiving socket's buffer overflows
#    (UDP RcvbufErrors in the receiver's namespace), which together explain
#    the loss; the unexplained loss (lost minus all of those, at least 0);
#    RSS minimum and maximum after the first $WARMUP seconds, and its
#    growth; the identity violations.
#
# Exit status 1 if the identity was violated even once, if any loss is
# unexplained, if a stats request failed, or if RSS grew by more than
# $RSS_SLACK_KB after the warm-up (memory not flat).
#
# Usage: [DUR=600] [RATE=KPPS] [BACKEND=af-packet] benches/soak.sh [path/to/pipelab]
#        (default binary: target/release/pipelab)
set -euo pipefail
BIN=${1:-target/release/pipelab}
BIN=$(readlink -f "$BIN")
DUR=${DUR:-600}
DUR=${DUR%s}
BACKEND=${BACKEND:-af-packet}
BURST=${BURST:-32}
TRIES=${TRIES:-2}
STEP=${STEP:-2s}
WARMUP=${WARMUP:-10}
RSS_SLACK_KB=${RSS_SLACK_KB:-8192}
LADDER=${LADDER:-5 10 25 50 75 100 150 200 250 300 400 500 600 800 1000}
ID=$$
A=plsA$ID; B=plsB$ID; PA=psxa$ID; PB=psxb$ID
NAME=soak$ID
WORK=$(mktemp -d /tmp/pipelab-soak.XXXXXX)
CONFIG=$'pipe 1 config delay 1ms queue 100000\nadd 100 pipe 1 ip from any to any'

cleanup() {
    [ -n "${TX_PID:-}" ] && kill "$TX_PID" 2>/dev/null || true
    [ -n "${RX_PID:-}" ] && kill "$RX_PID" 2>/dev/null || true
    [ -n "${BR_PID:-}" ] && kill "$BR_PID" 2>/dev/null && wait "$BR_PID" 2>/dev/null || true
    ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
    ip link del $PA 2>/dev/null || true; ip link del $PB 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add $A; ip netns add $B
ip link add $PA type veth peer name eth0 netns $A
ip link add $PB type veth peer name eth0 netns $B
ip -n $A addr add 10.77.0.1/24 dev eth0; ip -n $A link set eth0 up; ip -n $A link set lo up
ip -n $B addr add 10.77.0.2/24 dev eth0; ip -n $B link set eth0 up; ip -n $B link set lo up
ip link set $PA up; ip link set $PB up

start_bridge() {
    printf '%s\n' "$CONFIG" > "$WORK/soak.conf"
    "$BIN" bridge $PA $PB -f "$WORK/soak.conf" --backend "$BACKEND" --name "$NAME" \
        --stats "$WORK/bridge.json" 2>"$WORK/bridge.log" & BR_PID=$!
    local i
    for i in $(seq 100); do
        "$BIN" --target "$NAME" stats --json >/dev/null 2>&1 && break
        sleep 0.1
    done
    # Warm-up (neighbour entries); a lost ping does not end the run.
    ip netns exec $A ping -c 3 -i 0.2 -q 10.77.0.2 >/dev/null || true
}
stop_bridge() { kill "$BR_PID" 2>/dev/null; wait "$BR_PID" 2>/dev/null || true; BR_PID=; }

probe() { # rate duration burst -> the receiver's report (JSON)
    ip netns exec $B "$BIN" probe recv --listen 10.77.0.2:7791 --once 2>/dev/null & local rx=$!
    sleep 0.3
    ip netns exec $A "$BIN" probe send 10.77.0.2:7791 --rate "$1" --size 53B --duration "$2" --burst "$3" --json
    wait $rx 2>/dev/null || true
}

lost_of() { python3 -c "import json,sys; print(json.load(sys.stdin)['lost'])"; }

start_bridge
if [ -z "${RATE:-}" ]; then
    RATE=0
    for r in $LADDER; do
        lost=1
        for _ in $(seq "$TRIES"); do
            lost=$(probe "${r}kpps" "$STEP" "$BURST" | lost_of)
            [ "$lost" -eq 0 ] && break
        done
        if [ "$lost" -eq 0 ]; then RATE=$r; else break; fi
    done
    [ "$RATE" -gt 0 ] || { echo "soak: the bridge lost packets at the lowest rate of the ladder" >&2; exit 1; }
    MEASURED="measured"
else
    MEASURED="given"
fi
# A fresh bridge for the soak itself, so its counters and memory start
# from the soak.
stop_bridge
start_bridge
SOAK_PPS=$(python3 -c "print(int($RATE * 1000 * 0.9))")

echo "## Soak: bridge ($BACKEND, 'pipe 1 config delay 1ms queue 100000'), MLFFR $RATE kpps ($MEASURED), ${SOAK_PPS} pps (90 %) for ${DUR} s, 67-byte frames, bursts of $BURST ($(date -u '+%F %H:%M UTC'), $(nproc) cores)"
echo

udp_rcvbuf() { ip netns exec $B awk '/^Udp:/ { if (h) { print $6 + 0; exit } h = 1 }' /proc/net/snmp; }
RCVBUF0=$(udp_rcvbuf)

ip netns exec $B "$BIN" probe recv --listen 10.77.0.2:7792 --once >/dev/null 2>&1 & RX_PID=$!
sleep 0.3
ip netns exec $A "$BIN" probe send 10.77.0.2:7792 --rate "${SOAK_PPS}pps" --size 53B \
    --duration "${DUR}s" --burst "$BURST" --json > "$WORK/probe.json" & TX_PID=$!

set +e
python3 - "$BIN" "$NAME" "$BR_PID" "$DUR" "$WARMUP" "$WORK/monitor.json" <<'PY'
import json, subprocess, sys, time
binary, name, pid, dur, warmup, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
DROPS = ["dropped_queue", "dropped_loss", "dropped_aqm", "dropped_link", "dropped_memory",
         "dropped_rule", "dropped_loop", "dropped_tx"]
def rss_kb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
t0 = time.monotonic()
checks = violations = failures = 0
prev = None
rss_all, rss_warm = [], []
last_print = None
print("| t s | received | delivered | dropped | inside | kpps (last 10 s) | RSS MiB | identity violations |")
print("|---|---|---|---|---|---|---|---|")
k = 0
while True:
    k += 1
    wake = t0 + k
    now = time.monotonic()
    if wake > now:
        time.sleep(wake - now)
    if k > dur:
        break
    try:
        r = subprocess.run([binary, "--target", name, "stats", "--json"], capture_output=True, text=True, timeout=5)
        s = json.loads(r.stdout)["plane"]["runner"] if r.returncode == 0 else None
    except Exception:
        s = None
    if s is None:
        failures += 1
        print(f"soak: t={k} s: stats request failed", file=sys.stderr)
        continue
    rss = rss_kb()
    rss_all.append(rss)
    if k > warmup:
        rss_warm.append(rss)
    dropped = sum(s[d] for d in DROPS)
    checks += 1
    bad = []
    if s["received"] != s["delivered"] + dropped + s["inside"]:
        bad.append(f"received {s['received']} != delivered {s['delivered']} + dropped {dropped} + inside {s['inside']}")
    if prev is not None:
        for key in ["received", "delivered"] + DROPS:
            if s[key] < prev[key]:
                bad.append(f"{key} went down from {prev[key]} to {s[key]}")
    if bad:
        violations += 1
        print(f"soak: t={k} s: identity violated: {'; '.join(bad)}", file=sys.stderr)
    if k % 10 == 0:
        base = last_print or {"received": 0}
        kpps = (s["received"] - base["received"]) / 10 / 1000
        print(f"| {k} | {s['received']} | {s['delivered']} | {dropped} | {s['inside']} | {kpps:.1f} | {rss / 1024:.1f} | {violations} |", flush=True)
        last_print = s
    prev = s
json.dump({"checks": checks, "violations": violations, "failures": failures,
           "rss_all": rss_all, "rss_warm": rss_warm, "last": prev}, open(out, "w"))
PY
MON=$?
set -e
wait "$TX_PID"; TX_PID=
wait "$RX_PID" 2>/dev/null || true; RX_PID=
# Let the last frames leave, then stop the bridge: its --stats report
# holds the final accounting and the ports' counters.
sleep 1
stop_bridge
RCVBUF1=$(udp_rcvbuf)

python3 - "$WORK/probe.json" "$WORK/bridge.json" "$WORK/monitor.json" "$RCVBUF0" "$RCVBUF1" "$RSS_SLACK_KB" "$MON" <<'PY'
import json, sys
probe = json.load(open(sys.argv[1])); bridge = json.load(open(sys.argv[2])); mon = json.load(open(sys.argv[3]))
rcvbuf = int(sys.argv[5]) - int(sys.argv[4]); slack = int(sys.argv[6]); mon_rc = int(sys.argv[7])
st = bridge["stats"]
drops = {k[len("dropped_"):]: v for k, v in st.items() if k.startswith("dropped_")}
ring = sum(p["rx_dropped"] for _, p in bridge["ports"])
explained = sum(drops.values()) + ring + rcvbuf
unexplained = max(0, probe["lost"] - explained)
final_identity = st["received"] == st["delivered"] + sum(drops.values()) + st["inside"]
warm = mon["rss_warm"] or mon["rss_all"] or [0]
growth = warm[-1] - warm[0]
print()
print("| figure | value |")
print("|---|---|")
print(f"| probe: sent / received / lost | {probe['sent']} / {probe['received']} / {probe['lost']} |")
print(f"| probe: one-way delay mean / p99 / max ms | {probe['delay_ms']['mean']:.3f} / {probe['delay_ms']['p99']:.3f} / {probe['delay_ms']['max']:.3f} |" if probe.get("delay_ms") else "| probe: delay | none |")
print(f"| bridge: received / delivered / inside at exit | {st['received']} / {st['delivered']} / {st['inside']} |")
print(f"| bridge: dropped by reason | {', '.join(f'{k} {v}' for k, v in drops.items() if v) or 'none'} |")
print(f"| kernel receive-ring drops (ports) | {ring} |")
print(f"| receiver socket buffer overflows | {rcvbuf} |")
print(f"| unexplained loss | {unexplained} |")
print(f"| identity checks / violations | {mon['checks']} / {mon['violations']} (final report: {'holds' if final_identity else 'VIOLATED'}) |")
print(f"| stats requests failed | {mon['failures']} |")
print(f"| RSS after {len(mon['rss_all']) - len(mon['rss_warm'])} s warm-up: min / max / growth MiB | {min(warm) / 1024:.1f} / {max(warm) / 1024:.1f} / {growth / 1024:+.1f} |")
fail = []
if mon["violations"] or not final_identity: fail.append("accounting identity violated")
if unexplained: fail.append(f"{unexplained} packets lost unexplained")
if mon["failures"]: fail.append(f"{mon['failures']} stats requests failed")
if growth > slack: fail.append(f"RSS grew by {growth} KiB after the warm-up (more than {slack} KiB)")
if mon_rc: fail.append("the monitor failed")
if fail:
    print("\nsoak: FAILED: " + "; ".join(fail), file=sys.stderr)
    sys.exit(1)
print("\nsoak: passed")
PY
