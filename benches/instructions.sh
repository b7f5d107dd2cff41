#!/usr/bin/env bash
# Instructions per hop of the engine (the `route/H` case of
# crates/engine/benches/pipe.rs), counted by valgrind's cachegrind: a
# figure the machine's load does not move, where the nanoseconds of
# `cargo bench -p pipelab-engine --bench pipe` move by ±20 % on a shared
# machine. Each route length runs N and 2N packets and the difference is
# taken, so set-up and warm-up cancel out; per hop is (route/8 −
# route/1) / 7.
#
# Usage: benches/instructions.sh [N]   (default 200000; needs valgrind)
set -euo pipefail
N=${1:-200000}
command -v valgrind >/dev/null || { echo "needs valgrind (apt install valgrind)" >&2; exit 1; }
cargo build --release -q -p pipelab-engine --example route
BIN=target/release/examples/route
count() { # hops packets -> instructions
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$BIN" "$1" "$2" 2>&1 |
        sed -n 's/.*I *refs: *//p' | tr -d ,
}
declare -A per
printf '%-8s %14s\n' route "instr/packet"
for h in 1 8; do
    a=$(count $h "$N")
    b=$(count $h $((2 * N)))
    per[$h]=$(( (b - a) / N ))
    printf 'route/%-2s %14s\n' "$h" "${per[$h]}"
done
printf 'per hop  %14s\n' $(( (per[8] - per[1]) / 7 ))
