#!/usr/bin/env bash
# Delay precision as a user sees it (root): ping and probe through
# `pipelab shell`, on a quiet machine and beside CPU-bound processes.
#
# 1. ping: `pipelab shell --link 'delay $DELAY'` runs `ping -c $COUNT -i
#    $INTERVAL $PIPELAB_OUTSIDE`, $RUNS runs per cell, interleaved, with
#    0 and then each of $HOGS CPU-bound processes (`yes`) running beside
#    it, for each variant of $VARIANTS (`;`-separated pipelab flags;
#    "defaults" is no flag). Beside it: ping over a plain veth pair
#    between two namespaces (no delay: the floor of ping's own noise) and,
#    where Mahimahi is installed, `mm-delay` with the same delay. Per
#    cell: the RTTs of every run together (mean, p50, p99, max, how many
#    beyond 2 x DELAY + 1 ms), the median of the runs' mdev (ping's own
#    figure), and pipelab's own lateness meter (p99 and max of the runs'
#    --stats reports: departures after their emulated time).
# 2. probe: one-way delay of 100-byte probe packets through
#    `pipelab shell --link 'delay $PROBE_DELAY'` (namespace -> host) at
#    each rate of $PROBE_RATES for $PROBE_SECS, quiet and with hogs: mean,
#    stddev, p99, max, lost, for each variant of $VARIANTS; and the same
#    probe over the plain veth pair
#    (the machine's own floor: its stddev is the least any emulator
#    could show here).
#
# Figures depend on the CPU: the table's header names it. Compare the
# rows of one run; BENCHMARKS.md keeps the command and the date.
#
# Usage: benches/precision.sh [path/to/pipelab]   (default: target/release/pipelab)
#   RUNS=5 COUNT=50 INTERVAL=0.05 DELAY=20ms HOGS="2" VARIANTS="defaults"
#   PROBE_RATES="10kpps 50kpps" PROBE_SECS=5 PROBE_DELAY=10ms ONLY=ping|probe
#   BASE=path/to/another/pipelab   (its defaults as one more row of each table,
#                                   interleaved: a before/after in one run)
set -euo pipefail
BIN=$(readlink -f "${1:-target/release/pipelab}")
RUNS=${RUNS:-5}
COUNT=${COUNT:-50}
INTERVAL=${INTERVAL:-0.05}
DELAY=${DELAY:-20ms}
HOGS=${HOGS:-2}
VARIANTS=${VARIANTS:-defaults}
PROBE_RATES=${PROBE_RATES:-10kpps 50kpps}
PROBE_SECS=${PROBE_SECS:-5}
PROBE_DELAY=${PROBE_DELAY:-10ms}
ONLY=${ONLY:-}
BASE=${BASE:+$(readlink -f "$BASE")}
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
for t in ping ip python3; do
    command -v $t >/dev/null || { echo "precision.sh: needs $t" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "precision.sh: needs root (namespaces)" >&2; exit 1; }

ID=$$
WORK=$(mktemp -d /tmp/plprec.XXXXXX)
A=plpA$ID; B=plpB$ID
HOG_PIDS=()
hogs_on() { local i; for i in $(seq "$1"); do yes >/dev/null & HOG_PIDS+=($!); done; sleep 0.3; }
hogs_off() { [ ${#HOG_PIDS[@]} -gt 0 ] && kill "${HOG_PIDS[@]}" 2>/dev/null; wait "${HOG_PIDS[@]}" 2>/dev/null || true; HOG_PIDS=(); }
MM_USER=${MM_USER:-pipelab-mmbench}
made_user=
cleanup() {
    hogs_off
    ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true
    [ -n "$made_user" ] && userdel "$MM_USER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The plain veth pair: two namespaces, no delay.
ip netns add $A; ip netns add $B
ip link add eth0 netns $A type veth peer name eth0 netns $B
ip -n $A addr add 10.79.0.1/24 dev eth0; ip -n $A link set eth0 up; ip -n $A link set lo up
ip -n $B addr add 10.79.0.2/24 dev eth0; ip -n $B link set eth0 up; ip -n $B link set lo up
ip netns exec $A ping -c 2 -i 0.2 -q 10.79.0.2 >/dev/null || true

# Mahimahi (setuid root, it refuses to run as root) runs as $MM_USER
# (created if missing, removed after) inside namespace A, where IP
# forwarding, which it requires, is turned on: the host's stays as it is.
MM=${MM:-$(command -v mm-delay || ls /opt/mahimahi/bin/mm-delay 2>/dev/null || true)}
if [ -n "$MM" ]; then
    ip netns exec $A sysctl -qw net.ipv4.ip_forward=1
    if ! id "$MM_USER" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$MM_USER"
        made_user=1
    fi
fi
ms() { python3 -c "import sys; s=sys.argv[1]; print(float(s[:-2]) if s.endswith('ms') else float(s[:-1])*1e3 if s.endswith('s') else float(s))" "$1"; }
DELAY_MS=$(ms "$DELAY")

# One ping run of cell $1 (a file prefix) with the command $2...
ping_run() {
    local cell=$1; shift
    local i=$(( $(ls "$WORK" | grep -c "^$cell\.ping\." || true) + 1 ))
    "$@" >"$WORK/$cell.ping.$i" 2>"$WORK/$cell.err.$i" || true
}
pipelab_ping() { # cell flags...
    local cell=$1; shift
    local bin=$BIN
    [[ $cell == base.* ]] && bin=$BASE
    local i=$(( $(ls "$WORK" | grep -c "^$cell\.ping\." || true) + 1 ))
    # shellcheck disable=SC2016
    "$bin" shell --link "delay $DELAY" --stats "$WORK/$cell.stats.$i" "$@" -- \
        sh -c "ping -c $COUNT -i $INTERVAL \$PIPELAB_OUTSIDE" \
        >"$WORK/$cell.ping.$i" 2>"$WORK/$cell.err.$i" || true
}

summary() { # cell label
    python3 - "$WORK" "$1" "$2" "$DELAY_MS" <<'EOF'
import glob, json, re, statistics as st, sys
work, cell, label, delay = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
rtts, mdevs = [], []
for f in sorted(glob.glob(f"{work}/{cell}.ping.*")):
    text = open(f).read()
    rtts += [float(x) for x in re.findall(r"time=([0-9.]+) ms", text)]
    m = re.search(r"= [0-9.]+/[0-9.]+/[0-9.]+/([0-9.]+) ms", text)
    if m:
        mdevs.append(float(m.group(1)))
late99, latemax = [], []
for f in glob.glob(f"{work}/{cell}.stats.*"):
    try:
        l = json.load(open(f))["lateness"]
        late99.append(l["p99_us"]); latemax.append(l["max_us"])
    except Exception:
        pass
if not rtts:
    print(f"| {label} | no replies | | | | | | |")
    sys.exit()
rtts.sort()
p = lambda q: rtts[min(len(rtts) - 1, int(q * len(rtts)))]
base = 2 * delay if delay > 0 else rtts[0]
beyond = sum(1 for r in rtts if r > base + 1.0)
late = f"{max(late99):.0f} / {max(latemax):.0f}" if late99 else "–"
print(f"| {label} | {len(rtts)} | {st.mean(rtts):.3f} | {st.median(mdevs) if mdevs else 0:.3f} "
      f"({min(mdevs) if mdevs else 0:.3f}–{max(mdevs) if mdevs else 0:.3f}) | {p(0.5):.3f} | {p(0.99):.3f} | "
      f"{rtts[-1]:.3f} | {beyond} | {late} |")
EOF
}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
IFS=';' read -r -a variants <<<"$VARIANTS"
if want ping; then
echo "## ping through \`pipelab shell --link 'delay $DELAY'\`: $RUNS x $COUNT pings every ${INTERVAL}s per row ($(date -u +%F), $(nproc) CPUs, $cpu, $(uname -r))"
echo
echo "| variant | pings | mean ms | mdev ms: median of runs (range) | p50 ms | p99 ms | max ms | > RTT + 1 ms | lateness p99 / max µs |"
echo "|---|---|---|---|---|---|---|---|---|"
for hogs in 0 $HOGS; do
    [ "$hogs" -gt 0 ] && hogs_on "$hogs"
    for r in $(seq "$RUNS"); do
        for v in "${!variants[@]}"; do
            flags=${variants[$v]}
            [ "$flags" = defaults ] && flags=
            # shellcheck disable=SC2086
            pipelab_ping "v$v.h$hogs" $flags
        done
        [ -n "$BASE" ] && pipelab_ping "base.h$hogs"
        ping_run "veth.h$hogs" ip netns exec $A ping -c "$COUNT" -i "$INTERVAL" 10.79.0.2
        # shellcheck disable=SC2016
        [ -n "$MM" ] && ping_run "mm.h$hogs" ip netns exec $A setpriv --reuid "$MM_USER" --regid "$MM_USER" --clear-groups \
            "$MM" "${DELAY_MS%.*}" sh -c "ping -c $COUNT -i $INTERVAL \$MAHIMAHI_BASE"
    done
    hogs_off
    for v in "${!variants[@]}"; do
        summary "v$v.h$hogs" "pipelab ${variants[$v]}, $hogs hogs"
    done
    [ -n "$BASE" ] && summary "base.h$hogs" "base defaults, $hogs hogs"
    [ -n "$MM" ] && summary "mm.h$hogs" "mm-delay $DELAY_MS, $hogs hogs"
    DELAY_MS_SAVE=$DELAY_MS; DELAY_MS=0
    summary "veth.h$hogs" "veth pair (no delay), $hogs hogs"
    DELAY_MS=$DELAY_MS_SAVE
done
echo
fi

# One row of the probe table from $WORK/probe.json (and probe.stats,
# pipelab's lateness, where there is one).
probe_row() {
    python3 - "$WORK" "$1" "$2" "$3" <<'EOF'
import json, os, sys
w, label, rate, hogs = sys.argv[1:]
try:
    r = json.load(open(f"{w}/probe.json")); d = r["delay_ms"]
    late = "—"
    if os.path.exists(f"{w}/probe.stats"):
        l = json.load(open(f"{w}/probe.stats"))["lateness"]
        late = f"{l['p99_us']:.0f} / {l['max_us']:.0f}"
    print(f"| {label} | {rate} | {hogs} | {d['mean']:.3f} | {d['stddev']:.3f} | {d['p99']:.3f} | {d['max']:.3f} | {r['lost']} | {late} |")
except Exception as e:
    print(f"| {label} | {rate} | {hogs} | failed: {e} | | | | | |")
EOF
}

if want probe; then
echo "## probe one way through \`pipelab shell --link 'delay $PROBE_DELAY'\`, 100-byte packets, ${PROBE_SECS}s per row ($(date -u +%F), $cpu)"
echo
echo "| binary | rate | hogs | mean ms | stddev ms | p99 ms | max ms | lost | lateness p99 / max µs |"
echo "|---|---|---|---|---|---|---|---|---|"
port=$((20000 + ID % 20000))
for hogs in 0 $HOGS; do
    [ "$hogs" -gt 0 ] && hogs_on "$hogs"
    for rate in $PROBE_RATES; do
      # Each variant of this binary, then the base's defaults.
      rows=()
      for v in "${!variants[@]}"; do rows+=("$BIN|${variants[$v]}"); done
      [ -n "$BASE" ] && rows+=("$BASE|defaults")
      for row in "${rows[@]}"; do
        bin=${row%%|*}; flags=${row#*|}
        label="pipelab $flags"; [ "$bin" = "$BASE" ] && label=base
        [ "$flags" = defaults ] && flags=""
        "$BIN" probe recv --listen "0.0.0.0:$port" --once >/dev/null 2>&1 & rx=$!
        sleep 0.3
        # shellcheck disable=SC2016,SC2086
        "$bin" shell $flags --link "delay $PROBE_DELAY" --stats "$WORK/probe.stats" -- \
            sh -c "$BIN probe send \$PIPELAB_OUTSIDE:$port --rate $rate --size 100B --duration ${PROBE_SECS}s --burst 8 --json" \
            >"$WORK/probe.json" 2>/dev/null || true
        kill $rx 2>/dev/null || true; wait $rx 2>/dev/null || true
        probe_row "$label" "$rate" "$hogs"
      done
      # The machine's floor: the same probe over the plain veth pair.
      rm -f "$WORK/probe.stats"
      ip netns exec $B "$BIN" probe recv --listen "10.79.0.2:$port" --once >/dev/null 2>&1 & rx=$!
      sleep 0.3
      ip netns exec $A "$BIN" probe send "10.79.0.2:$port" --rate "$rate" --size 100B \
          --duration "${PROBE_SECS}s" --burst 8 --json >"$WORK/probe.json" 2>/dev/null || true
      kill $rx 2>/dev/null || true; wait $rx 2>/dev/null || true
      probe_row "veth pair (no delay)" "$rate" "$hogs"
    done
    hogs_off
done
echo
fi
