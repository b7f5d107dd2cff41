#!/usr/bin/env bash
# Queues larger than memory (root): a queue held in memory against the
# same queue kept on disk (`spill`, NetPath's DiskQueue), in one run of
# this script, interleaved.
#
# `pipelab shell --uplink 'bw $BW queue 256MB[ spill]'` in a namespace of
# this script's own; from the shell's namespace `pipelab probe send`
# offers $RATE of $SIZE datagrams for $FEED (faster than the link
# drains: the queue grows) to a `probe recv` beside the shell, which
# reports what arrived once the queue has drained. Two kinds, $RUNS runs
# each, interleaved:
#
#   memory  --mem-cap $MEM_BIG: the whole queue in memory;
#   spill   --mem-cap $MEM_SMALL and `spill`: frames beyond the cap's
#           spill mark wait on disk in $SPILL_DIR (default /var/tmp),
#           read back in order ahead of their departure.
#
# Per run: packets received and delivered by the emulator, drops
# (memory, spill), what went to disk (MB, the most at once), the rates of
# the spill's write and read system calls (into and out of the page
# cache: the kernel writes to the device in its own time), frames read
# at their departure (misses), the process's peak resident memory, and
# the lateness of departures (actual minus due: p50, p99, p99.9, max).
# Then the range (min–max) of each column per kind: the added lateness of
# spilling is the spill rows' against the memory rows'.
#
# Usage: benches/spill.sh [path/to/pipelab]   (default: target/release/pipelab)
set -euo pipefail
BIN=${1:-target/release/pipelab}
BIN=$(readlink -f "$BIN")
RUNS=${RUNS:-3}
BW=${BW:-40Mbit/s}
RATE=${RATE:-11kpps}
SIZE=${SIZE:-1400B}
FEED=${FEED:-2500ms}
MEM_BIG=${MEM_BIG:-256MB}
MEM_SMALL=${MEM_SMALL:-16MB}
SPILL_DIR=${SPILL_DIR:-/var/tmp}
# SHELL_ARGS: more `pipelab shell` flags for every run, e.g. --realtime.
SHELL_ARGS=${SHELL_ARGS:-}
NS=plspill$$
PORT=47$(( $$ % 900 + 100 ))
TMP=$(mktemp -d)

cleanup() {
    ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del $NS 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add $NS
ip -n $NS link set lo up

run() { # kind n
    local kind=$1 cap=$MEM_BIG words="bw $BW queue 256MB"
    if [ "$kind" = spill ]; then cap=$MEM_SMALL; words="$words spill"; fi
    local stats=$TMP/$kind-$2.json probe=$TMP/$kind-$2.probe
    ip netns exec $NS "$BIN" probe recv --listen 0.0.0.0:$PORT >/dev/null 2>&1 &
    local rx=$!
    sleep 0.3
    # shellcheck disable=SC2086
    ip netns exec $NS "$BIN" shell --mem-cap "$cap" --spill-dir "$SPILL_DIR" $SHELL_ARGS \
        --uplink "$words" --downlink 'delay 1ms' --stats "$stats" -- \
        sh -c "exec $BIN probe send \$PIPELAB_OUTSIDE:$PORT --rate $RATE --size $SIZE --duration $FEED --burst 16 --json" \
        >"$probe" 2>/dev/null || true
    kill $rx 2>/dev/null || true
    wait $rx 2>/dev/null || true
    python3 - "$kind" "$stats" "$probe" <<'EOF'
import json, sys
kind, stats, probe = sys.argv[1:]
v = json.load(open(stats))
s, sp, l = v["stats"], v["stats"]["spill"], v["lateness"]
try:
    p = json.load(open(probe))
    lost = p.get("lost", "?")
except Exception:
    lost = "?"
row = [kind, s["received"], s["delivered"], s["dropped_memory"], s["dropped_spill"], lost,
       sp["spilled_bytes"] / 2**20, sp["max_on_disk_bytes"] / 2**20,
       sp["write_bps"] / 2**20, sp["read_bps"] / 2**20, sp["max_write_us"], sp["max_read_us"],
       sp["max_reserve_us"], sp["misses"],
       v["rss_peak_bytes"] / 2**20,
       l["p50_us"], l["p99_us"], l["p999_us"], l["max_us"]]
print("\t".join(str(round(x, 2)) if isinstance(x, float) else str(x) for x in row))
EOF
}

echo "# queues larger than memory: bw $BW, $RATE of $SIZE for $FEED, memory (--mem-cap $MEM_BIG) vs spill (--mem-cap $MEM_SMALL, $SPILL_DIR); $(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
HEAD="kind\treceived\tdelivered\tdrop_mem\tdrop_spill\tprobe_lost\tspilled_MB\tmax_disk_MB\twrite_MB/s\tread_MB/s\tmax_write_us\tmax_read_us\tmax_reserve_us\tmisses\trss_MB\tlate_p50_us\tlate_p99_us\tlate_p999_us\tlate_max_us"
echo -e "$HEAD"
for i in $(seq 1 "$RUNS"); do
    for kind in memory spill; do
        run $kind "$i" | tee -a "$TMP/rows"
    done
done
echo
echo "# range (min-max) per kind"
python3 - "$TMP/rows" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
cols = ["received", "delivered", "drop_mem", "drop_spill", "probe_lost", "spilled_MB", "max_disk_MB",
        "write_MB/s", "read_MB/s", "max_write_us", "max_read_us", "max_reserve_us", "misses", "rss_MB", "late_p50_us", "late_p99_us", "late_p999_us", "late_max_us"]
for kind in ("memory", "spill"):
    rs = [r for r in rows if r[0] == kind]
    out = [kind]
    for i, c in enumerate(cols, 1):
        try:
            vals = [float(r[i]) for r in rs]
            out.append(f"{c} {min(vals):g}-{max(vals):g}")
        except ValueError:
            out.append(f"{c} ?")
    print("  ".join(out))
EOF
