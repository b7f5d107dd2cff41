#!/usr/bin/env bash
# Live topology benchmarks (root): prints two tables.
#
# 1. Forwarding rate through routes of 1, 4 and 8 hops (the shape of
#    ModelNet's Fig. 4): a chain a - r1 - ... - b of 10 Gb/s, zero-delay
#    links under hop-by-hop distillation, 67-byte-frame probe traffic from
#    VN a to VN b at rising rates; the highest loss-free rate (MLFFR) and
#    the delivered rate at the highest offered rate; with each of
#    $WORKERS workers (`topo up --workers K`, `--split $SPLIT` if set: by `links`,
#    the default, the chain's links split between them by `topo
#    assign`'s partitioner, so a route of 4 or 8 hops crosses from one
#    worker to the other; by `directions`, each direction of the chain
#    on its source's worker, crossing none).
# 2. Forwarding rate between two VNs of a star of $STAR_VNS VNs, the
#    others idle (10 Gb/s zero-delay links, the same probe, default
#    workers): what many ports cost a runner that reads them.
# 3. Time for `pipelab topo up` and `down` of a star of 200 and 1000 VNs
#    (default workers).
# 4. (SECTIONS=scale, not in the default) Scale: `topo up` time and the
#    emulator's resident memory (VmRSS after start, VmHWM its peak) for
#    a star and a transit-stub (10 transit routers, 10 stubs on each,
#    N/100 VNs on each stub) of $SCALE_VNS VNs; then one ping between
#    two VNs (the pair's route computed on demand) and the RSS again.
#    A size whose routing matrix would not fit ($SCALE_MAX_PAIRS ordered
#    pairs, default 30 million, about 6 GB with a binary that holds
#    every route) can be skipped with SCALE_SKIP="star:10000 ...".
#
# Usage: benches/topo.sh [path/to/pipelab]   (default: target/release/pipelab)
# SECTIONS="chain star updown" (default: these three; "scale" too) picks tables.
set -euo pipefail
BIN=${1:-target/release/pipelab}
BIN=$(readlink -f "$BIN")
DUR=${DUR:-2s}
WORKERS=${WORKERS:-1 2}
RATES=${RATES:-10 25 50 75 100 150 200 250 300 400 500 600}
BURST=${BURST:-32}
SPLIT=${SPLIT:-}
UP_ARGS=${UP_ARGS:-}   # more `topo up` flags for the first two tables, e.g. --realtime
STAR_VNS=${STAR_VNS:-2 1000}
STAR_RATES=${STAR_RATES:-50 100 150 200 250 300 400}
SECTIONS=${SECTIONS:-chain star updown}
SCALE_VNS=${SCALE_VNS:-1000 2000 5000 10000}
SCALE_SKIP=${SCALE_SKIP:-}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
TMP=$(mktemp -d)
NAME=bench$$

cleanup() { "$BIN" topo down --name $NAME >/dev/null 2>&1 || true; rm -rf "$TMP"; }
trap cleanup EXIT

chain() { # hops -> TOML on stdout
    local h=$1 i
    printf '[[node]]\nid = 0\nrole = "client"\nname = "a"\n\n'
    for ((i = 1; i < h; i++)); do printf '[[node]]\nid = %d\nrole = "stub"\nname = "r%d"\n\n' $i $i; done
    printf '[[node]]\nid = %d\nrole = "client"\nname = "b"\n\n' $h
    for ((i = 0; i < h; i++)); do
        printf '[[link]]\na = %d\nb = %d\nbw = "10Gbit/s"\ndelay = "0ms"\nqueue = 10000\n\n' $i $((i + 1))
    done
}

star() { # clients [bw delay queue-line] -> TOML on stdout
    local n=$1 bw=${2:-100Mbit/s} delay=${3:-1ms} queue=${4:-} i
    printf '[[node]]\nid = 0\nrole = "stub"\nname = "hub"\n\n'
    for ((i = 1; i <= n; i++)); do printf '[[node]]\nid = %d\nrole = "client"\nname = "vn%d"\n\n' $i $((i - 1)); done
    for ((i = 1; i <= n; i++)); do printf '[[link]]\na = 0\nb = %d\nbw = "%s"\ndelay = "%s"\n%s\n' $i "$bw" "$delay" "$queue"; done
}

field() { python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

probe() { # rate [from to] -> json (the receiver is 10.0.0.2)
    local from=${2:-a} to=${3:-b}
    "$BIN" topo exec --name $NAME $to -- "$BIN" probe recv --listen 10.0.0.2:7790 --once 2>/dev/null & local rx=$!
    sleep 0.3
    "$BIN" topo exec --name $NAME $from -- "$BIN" probe send 10.0.0.2:7790 --rate "$1" --size 53B --duration $DUR --burst $BURST --json
    wait $rx 2>/dev/null || true
}

mlffr() { # rates from to -> the MLFFR on stdout
    # A step counts only if the sender really offered its rate (97 %);
    # "*": the sender fell behind first, the route's rate is at least that.
    local best=0 rate j lost offered
    for rate in $1; do
        j=$(probe ${rate}kpps "${2:-a}" "${3:-b}")
        lost=$(echo "$j" | field "r['lost']")
        offered=$(echo "$j" | field "'%d' % (r.get('offered_pps', 0) / 1000)")
        [ "$lost" -eq 0 ] || break
        if [ $((offered * 100)) -lt $((rate * 97)) ]; then best="$offered*"; break; fi
        best=$rate
    done
    echo "$best"
}

if want chain; then
echo "## Forwarding rate by route length: 67-byte frames, $DUR per step ($(date -u +%F), $(nproc) cores, $(uname -r))"
echo
echo "| hops | workers | MLFFR kpps | delivered kpps at 400 kpps asked (offered) | hand-offs per packet | dropped before reading, share of sent |"
echo "|---|---|---|---|---|---|"
for hops in 1 4 8; do
  chain $hops > "$TMP/chain$hops.toml"
  for k in $WORKERS; do
    "$BIN" topo up "$TMP/chain$hops.toml" --name $NAME --workers $k ${SPLIT:+--split $SPLIT} $UP_ARGS >/dev/null
    "$BIN" topo exec --name $NAME a -- ping -c 2 -i 0.2 -q 10.0.0.2 >/dev/null
    best=$(mlffr "$RATES")
    # Delivered over the time the sender really took (sent / offered rate).
    j=$(probe 400kpps)
    got=$(echo "$j" | field "'%.0f (%.0f)' % (r['received'] * r['offered_pps'] / max(1, r['sent']) / 1e3, r['offered_pps'] / 1e3)")
    st=$("$BIN" --target $NAME stats --json)
    per=$(echo "$st" | field "'%.2f' % (r['plane']['runner']['handoffs_in'] / max(1, r['plane']['runner']['received']))")
    # Over the whole ladder: where the excess went (the kernel's TAP queue).
    inp=$(echo "$st" | field "'%.3f' % (r['plane']['runner'].get('dropped_input', 0) / max(1, r['plane']['runner']['received'] + r['plane']['runner'].get('dropped_input', 0)))")
    echo "| $hops | $k | $best | $got | $per | $inp |"
    "$BIN" topo down --name $NAME >/dev/null
  done
done
echo
echo "\\*: loss-free at the highest rate the sender offered (kpps), short of the next step: the route's own rate is at least this."
echo
fi

if want star; then
echo "## Forwarding rate between two VNs of a star, the others idle: 67-byte frames, $DUR per step"
echo
echo "| VNs | MLFFR kpps | delivered kpps at 400 kpps asked (offered) |"
echo "|---|---|---|"
for n in $STAR_VNS; do
    star $n 10Gbit/s 0ms "queue = 10000" > "$TMP/fast$n.toml"
    "$BIN" topo up "$TMP/fast$n.toml" --name $NAME $UP_ARGS >/dev/null
    "$BIN" topo exec --name $NAME vn0 -- ping -c 2 -i 0.2 -q 10.0.0.2 >/dev/null
    best=$(mlffr "$STAR_RATES" vn0 vn1)
    j=$(probe 400kpps vn0 vn1)
    got=$(echo "$j" | field "'%.0f (%.0f)' % (r['received'] * r['offered_pps'] / max(1, r['sent']) / 1e3, r['offered_pps'] / 1e3)")
    echo "| $n | $best | $got |"
    "$BIN" topo down --name $NAME >/dev/null
done
echo
fi

if want updown; then
echo "## topo up / down time, star of N VNs"
echo
echo "| VNs | up s | down s |"
echo "|---|---|---|"
for n in 200 1000; do
    star $n > "$TMP/star$n.toml"
    t0=$(date +%s.%N)
    "$BIN" topo up "$TMP/star$n.toml" --name $NAME >/dev/null
    t1=$(date +%s.%N)
    "$BIN" topo down --name $NAME >/dev/null
    t2=$(date +%s.%N)
    python3 -c "print('| $n | %.2f | %.2f |' % ($t1 - $t0, $t2 - $t1))"
done
fi

if want scale; then
echo "## Scale: topo up time and emulator memory ($(date -u '+%F %H:%M') UTC, $(nproc) CPUs, $(uname -r), $BIN)"
echo
echo "| topology | VNs | pipes | up s | RSS MB after up | peak MB (VmHWM) | RSS MB after one ping | routes cached | host MB used (MemAvailable drop) |"
echo "|---|---|---|---|---|---|---|---|---|"
kb() { awk -v k="$2" '$1 == k":" { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
avail() { awk '$1 == "MemAvailable:" { printf "%.0f", $2 / 1024 }' /proc/meminfo; }
for kind in star transit-stub; do
  for n in $SCALE_VNS; do
    if [[ " $SCALE_SKIP " == *" $kind:$n "* ]]; then
        echo "| $kind | $n | | skipped | | | | | |"
        continue
    fi
    f="$TMP/$kind$n.toml"
    case $kind in
        star) "$BIN" topo gen star --clients $n -o "$f" >/dev/null ;;
        transit-stub) "$BIN" topo gen transit-stub --transit 10 --stubs 10 --clients $((n / 100)) -o "$f" >/dev/null ;;
    esac
    a0=$(avail)
    t0=$(date +%s.%N)
    if ! out=$("$BIN" topo up "$f" --name $NAME 2>"$TMP/err"); then
        echo "| $kind | $n | | refused: $(head -c 160 "$TMP/err" | tr '\n|' '  ') | | | | | |"
        "$BIN" topo down --name $NAME >/dev/null 2>&1 || true
        continue
    fi
    t1=$(date +%s.%N)
    pid=$(echo "$out" | sed -n 's/.*, pid \([0-9]*\),.*/\1/p')
    pipes=$(echo "$out" | sed -n 's/.*, \([0-9]*\) pipes,.*/\1/p')
    rss=$(kb "$pid" VmRSS)
    # The first VN pings the last: a pair no packet took before.
    st=$("$BIN" topo status --name $NAME --json)
    first=$(echo "$st" | field "r['state']['vns'][0]['name']")
    last=$(echo "$st" | field "r['state']['vns'][-1]['addr']")
    "$BIN" topo exec --name $NAME "$first" -- ping -c 1 -W 2 -q "$last" >/dev/null || true
    after=$(kb "$pid" VmRSS)
    hwm=$(kb "$pid" VmHWM)
    host=$(($a0 - $(avail)))
    cached=$("$BIN" topo status --name $NAME --json | field "r['status'].get('routes_cached', '-')")
    "$BIN" topo down --name $NAME >/dev/null
    python3 -c "print('| $kind | $n | $pipes | %.2f | $rss | $hwm | $after | $cached | $host |' % ($t1 - $t0))"
  done
done
echo
fi
