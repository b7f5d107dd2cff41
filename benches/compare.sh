#!/usr/bin/env bash
# Two builds of pipelab side by side in one sitting (root): the engine's
# criterion bench, and live.sh's MLFFR, CPU-per-frame and TCP tables,
# alternating before and after for $ROUNDS rounds, so that the load of a
# shared machine falls on both alike.
#
# Usage: benches/compare.sh BEFORE_TREE BEFORE_BIN AFTER_TREE AFTER_BIN
#   *_TREE: a source tree (for `cargo bench -p pipelab-engine`), built with
#           its own target directory (TREE/target);
#   *_BIN:  its release `pipelab` binary.
# Example:
#   git worktree add /tmp/before 5b01e2f
#   (cd /tmp/before && cargo build --release -p pipelab --target-dir /tmp/before/target)
#   cargo build --release -p pipelab
#   sudo benches/compare.sh /tmp/before /tmp/before/target/release/pipelab . target/release/pipelab
set -euo pipefail
[ $# -eq 4 ] || { sed -n '2,14p' "$0"; exit 2; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
declare -A TREE=( [before]=$(readlink -f "$1") [after]=$(readlink -f "$3") )
declare -A BIN=( [before]=$(readlink -f "$2") [after]=$(readlink -f "$4") )
ROUNDS=${ROUNDS:-2}
load() { cut -d' ' -f1 /proc/loadavg; }
echo "# $(date -u '+%F %T UTC'); $(nproc) CPUs;$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); Linux $(uname -r); $(rustc --version); load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    for v in before after; do
        echo "## engine $v round $round $(date -u +%T) load $(load)"
        (cd "${TREE[$v]}" && cargo bench -q -p pipelab-engine --bench pipe --target-dir "${TREE[$v]}/target" \
            -- --warm-up-time 1 --measurement-time 3 2>&1 | grep -E "^(pipe|route|sched)")
    done
done
for round in $(seq "$ROUNDS"); do
    for v in before after; do
        echo "## mlffr $v round $round $(date -u +%T) load $(load)"
        ONLY=mlffr DUR=2s bash "$HERE/benches/live.sh" "${BIN[$v]}" | grep '^|'
        echo "## cpu $v round $round $(date -u +%T) load $(load)"
        ONLY=cpu CPU_RATE=100kpps DUR=4s bash "$HERE/benches/live.sh" "${BIN[$v]}" | grep '^|'
        echo "## tcp $v round $round $(date -u +%T) load $(load)"
        ONLY=tcp TCP_RUNS=3 TCP_SECS=5 bash "$HERE/benches/live.sh" "${BIN[$v]}" | grep '^|'
    done
done
echo "# end $(date -u '+%F %T UTC') load $(cut -d' ' -f1-3 /proc/loadavg)"
