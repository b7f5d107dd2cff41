//! The hostile suite of command-line flags, through the real `pipelab`
//! and `pipelabd`: every subcommand's flags with bad values (missing, a
//! wrong unit, negative, NaN or infinite, out of range, conflicting),
//! each refused before anything is made (no namespace, interface, socket
//! or file), with a message that names the flag and the value.
//!
//! Every case runs within a time bound (a hang fails), and none may
//! panic. `case_count` counts the cases (docs/HOSTILE.md).

mod hostile;

use hostile::{all_pass, run_bounded, tally, verdict_with, Outcome, PIPELAB, PIPELABD};
use std::process::Command;
use std::time::Duration;
use Outcome::Rejected;

/// Which binary a case runs.
#[derive(Clone, Copy)]
enum Bin {
    Pipelab,
    Pipelabd,
}

/// (case, binary, arguments, outcome). In the arguments `CONF` stands for
/// a valid configuration, `GML` for a valid topology and `MISSING` for a
/// path that does not exist (in a directory that does not either); in
/// the outcome `DIR` stands for the case's directory.
const FLAGS: &[(&str, Bin, &[&str], Outcome)] = &[
    (
        "-f with a command",
        Bin::Pipelab,
        &["-f", "CONF", "show"],
        Rejected(2, "error: -f FILE takes no command: the file holds the commands"),
    ),
    (
        "--socket with --target",
        Bin::Pipelab,
        &["--socket", "/tmp/x.sock", "--target", "lab", "show"],
        Rejected(2, "error: the argument '--socket <PATH>' cannot be used with '--target <NAME>'"),
    ),
    (
        "--target naming no emulation",
        Bin::Pipelab,
        &["--target", "no-such-emulation", "show"],
        Rejected(1, "error: no running emulation is named 'no-such-emulation'; none is running (see `pipelab list`)"),
    ),
    (
        "--target with a slash",
        Bin::Pipelab,
        &["--target", "../etc", "show"],
        Rejected(2, "error: --target: '../etc' is not a valid emulation name: '/' is not allowed (letters, digits, '_', '.' and '-')"),
    ),
    (
        "no command",
        Bin::Pipelab,
        &["--socket", "MISSING"],
        Rejected(2, "error: give a command (see pipelab --help)"),
    ),
    (
        "a socket that does not exist",
        Bin::Pipelab,
        &["--socket", "MISSING", "show"],
        Rejected(1, "error: pipelabd is not running (nothing listens on DIR/missing)."),
    ),
    (
        "list --json with --socket",
        Bin::Pipelab,
        &["--socket", "MISSING", "list", "--json"],
        Rejected(2, "error: `list --json` lists the running emulations: give it without --target or --socket"),
    ),
    (
        "sim --seed negative",
        Bin::Pipelab,
        &["sim", "CONF", "--seed", "-1"],
        Rejected(2, "error: invalid value '-1' for '--seed <SEED>': '-1' is not a seed: give a whole number 0..18446744073709551615 or 'random'"),
    ),
    (
        "sim --seed a word",
        Bin::Pipelab,
        &["sim", "CONF", "--seed", "abc"],
        Rejected(2, "error: invalid value 'abc' for '--seed <SEED>': 'abc' is not a seed: give a whole number 0..18446744073709551615 or 'random'"),
    ),
    (
        "sim --seed beyond u64",
        Bin::Pipelab,
        &["sim", "CONF", "--seed", "18446744073709551616"],
        Rejected(2, "error: invalid value '18446744073709551616' for '--seed <SEED>': '18446744073709551616' is not a seed: give a whole number 0..18446744073709551615 or 'random'"),
    ),
    (
        "sim --seed with an exponent",
        Bin::Pipelab,
        &["sim", "CONF", "--seed", "1e3"],
        Rejected(2, "error: invalid value '1e3' for '--seed <SEED>': '1e3' is not a seed: give a whole number 0..18446744073709551615 or 'random'"),
    ),
    (
        "sim --traffic in Mbps",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10Mbps size 100B duration 1s"],
        Rejected(2, "error: --traffic #1: column 10: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
    ),
    (
        "sim --traffic empty",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", ""],
        Rejected(2, "error: --traffic #1: column 1: empty traffic spec: e.g. cbr rate 1000pps size 1000B duration 10s"),
    ),
    (
        "sim second --traffic bad",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10pps size 100B duration 1s", "--traffic", "cbr rate 10pps size -5B duration 1s"],
        Rejected(2, "error: --traffic #2: column 21: negative value '-5B' is not allowed"),
    ),
    (
        "sim --traffic unknown pattern",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "burst rate 10pps size 100B duration 1s"],
        Rejected(2, "error: --traffic #1: column 1: unknown traffic pattern 'burst': patterns: cbr, poisson, onoff"),
    ),
    (
        "sim --traffic NaN rate",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate NaNpps size 100B duration 1s"],
        Rejected(2, "error: --traffic #1: column 10: invalid rate 'NaNpps': rates are written like 10Mbit/s"),
    ),
    (
        "sim --traffic endless",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10pps size 100B duration 1e30s"],
        Rejected(2, "error: --traffic #1: column 35: value '1e30s' is too large"),
    ),
    (
        "sim --traffic-file missing",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic-file", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "sim without a configuration",
        Bin::Pipelab,
        &["sim"],
        Rejected(2, "error: the following required arguments were not provided:\n  <CONFIG>"),
    ),
    (
        "sim with a missing configuration",
        Bin::Pipelab,
        &["sim", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "sim --json with a value",
        Bin::Pipelab,
        &["sim", "CONF", "--json=yes"],
        Rejected(2, "error: unexpected value 'yes' for '--json' found; no more were expected"),
    ),
    (
        "sim --workers -1",
        Bin::Pipelab,
        &["sim", "CONF", "--workers", "-1"],
        Rejected(2, "error: invalid value '-1' for '--workers <WORKERS>': invalid digit found in string"),
    ),
    (
        "sim --workers 0",
        Bin::Pipelab,
        &["sim", "CONF", "--workers", "0"],
        Rejected(2, "error: invalid value '0' for '--workers <WORKERS>': 0 is not in 1..=256"),
    ),
    (
        "demo --seed a word",
        Bin::Pipelab,
        &["demo", "--seed", "x"],
        Rejected(2, "error: invalid value 'x' for '--seed <SEED>': 'x' is not a seed: give a whole number 0..18446744073709551615 or 'random'"),
    ),
    (
        "shell --link in Mbps",
        Bin::Pipelab,
        &["shell", "--link", "bw 10Mbps", "--", "true"],
        Rejected(2, "error: --link: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
    ),
    (
        "shell --uplink negative delay",
        Bin::Pipelab,
        &["shell", "--uplink", "delay -5ms", "--", "true"],
        Rejected(2, "error: --uplink: negative value '-5ms' is not allowed"),
    ),
    (
        "shell --downlink queue 0",
        Bin::Pipelab,
        &["shell", "--downlink", "queue 0", "--", "true"],
        Rejected(2, "error: --downlink: invalid queue '0': a queue must hold at least one packet"),
    ),
    (
        "shell --shared with --link",
        Bin::Pipelab,
        &["shell", "--shared", "bw 1Mbit/s", "--link", "bw 1Mbit/s", "--", "true"],
        Rejected(2, "error: the argument '--shared <PIPE PARAMETERS>' cannot be used with '--link <PIPE PARAMETERS>'"),
    ),
    (
        "shell --mem-cap unknown unit",
        Bin::Pipelab,
        &["shell", "--mem-cap", "10XB", "--", "true"],
        Rejected(2, "error: --mem-cap '10XB': unknown unit 'XB' in '10XB': known size units: B, KB, MB, GB, KiB, MiB, GiB"),
    ),
    (
        "shell --mem-cap negative",
        Bin::Pipelab,
        &["shell", "--mem-cap", "-1MB", "--", "true"],
        Rejected(2, "error: --mem-cap '-1MB': negative value '-1MB' is not allowed"),
    ),
    (
        "shell --seed negative",
        Bin::Pipelab,
        &["shell", "--seed", "-5", "--", "true"],
        Rejected(2, "error: invalid value '-5' for '--seed <SEED>': '-5' is not a seed: give a whole number 0..18446744073709551615 or 'random'"),
    ),
    (
        "shell --config missing",
        Bin::Pipelab,
        &["shell", "--config", "MISSING", "--", "true"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "shell --link unknown word",
        Bin::Pipelab,
        &["shell", "--link", "bw 1Mbit/s lateness 5ms", "--", "true"],
        Rejected(2, "error: --link: unknown pipe parameter 'lateness': known parameters: bw, delay, distribution, jitter-order, queue, spill, red, gred, codel, pie, plr, loss, duplicate, reorder, corrupt, ber, profile, burst, ecn, accounting, overhead, mask, buckets, wireless, timevarying, timeline, limit, rate, slot, seed, gap, noecn, noerror, preset"),
    ),
    (
        "shell --workers -1",
        Bin::Pipelab,
        &["shell", "--workers", "-1", "--", "true"],
        Rejected(2, "error: invalid value '-1' for '--workers <K>': --workers '-1': expected a number of workers from 1 to 64"),
    ),
    (
        "shell --workers 0",
        Bin::Pipelab,
        &["shell", "--workers", "0", "--", "true"],
        Rejected(2, "error: invalid value '0' for '--workers <K>': --workers '0': expected a number of workers from 1 to 64"),
    ),
    (
        "shell --cpus -1",
        Bin::Pipelab,
        &["shell", "--cpus", "-1", "--", "true"],
        Rejected(2, "error: --cpus '-1': '-1' is not a CPU number or range (e.g. 0,2-3, or none)"),
    ),
    (
        "shell --cpus 99999",
        Bin::Pipelab,
        &["shell", "--cpus", "99999", "--", "true"],
        Rejected(2, "error: --cpus '99999': CPU 99999 is not one this process may run on"),
    ),
    (
        "bridge without -f",
        Bin::Pipelab,
        &["bridge", "pha", "phb"],
        Rejected(2, "error: the following required arguments were not provided:\n  --file <CONFIG>"),
    ),
    (
        "bridge --duration unknown unit",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--duration", "10parsecs"],
        Rejected(2, "error: --duration '10parsecs': unknown unit 'parsecs' in '10parsecs': known duration units: s, ms, us, ns"),
    ),
    (
        "bridge --duration negative",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--duration", "-1s"],
        Rejected(2, "error: --duration '-1s': negative value '-1s' is not allowed"),
    ),
    (
        "bridge --backend unknown",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--backend", "dpdk"],
        Rejected(2, "error: invalid value 'dpdk' for '--backend <BACKEND>'\n  [possible values: auto, af-xdp, af-packet]"),
    ),
    (
        "bridge --port-loss unknown",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--port-loss", "maybe"],
        Rejected(2, "error: invalid value 'maybe' for '--port-loss <PORT_LOSS>'\n  [possible values: wait, exit]"),
    ),
    (
        "bridge --mem-cap a word",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--mem-cap", "lots"],
        Rejected(2, "error: --mem-cap 'lots': invalid size 'lots': sizes are written like 1500B or 100KB"),
    ),
    (
        "bridge -f missing",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "bridge on interfaces that do not exist",
        Bin::Pipelab,
        &["bridge", "pl-nosuch-a", "pl-nosuch-b", "-f", "CONF", "--duration", "1s"],
        Rejected(1, "pipelab bridge: pl-nosuch-a: no such interface (ENODEV: No such device)"),
    ),
    (
        "bridge --workers -1",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--workers", "-1"],
        Rejected(2, "error: invalid value '-1' for '--workers <K>': --workers '-1': expected a number of workers from 1 to 64"),
    ),
    (
        "bridge --workers 0",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--workers", "0"],
        Rejected(2, "error: invalid value '0' for '--workers <K>': --workers '0': expected a number of workers from 1 to 64"),
    ),
    (
        "bridge --cpus -1",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--cpus", "-1"],
        Rejected(2, "error: --cpus '-1': '-1' is not a CPU number or range (e.g. 0,2-3, or none)"),
    ),
    (
        "bridge --cpus 99999",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--cpus", "99999"],
        Rejected(2, "error: --cpus '99999': CPU 99999 is not one this process may run on"),
    ),
    (
        "attach without a device",
        Bin::Pipelab,
        &["attach"],
        Rejected(2, "error: the following required arguments were not provided:\n  <DEV>"),
    ),
    (
        "attach --both with --ingress",
        Bin::Pipelab,
        &["attach", "--both", "--ingress", "lo", "--", "delay", "1ms"],
        Rejected(2, "error: the argument '--both' cannot be used with '--ingress'"),
    ),
    (
        "attach with nothing to shape with",
        Bin::Pipelab,
        &["attach", "lo"],
        Rejected(2, "error: nothing to shape with: give pipe parameters after `--` (e.g. `pipelab attach eth0 -- delay 50ms`) or --config FILE"),
    ),
    (
        "attach pipe parameters in Mbps",
        Bin::Pipelab,
        &["attach", "lo", "--", "bw", "10Mbps"],
        Rejected(2, "error: pipe parameters: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s?"),
    ),
    (
        "attach --duration unknown unit",
        Bin::Pipelab,
        &["attach", "lo", "--duration", "10parsecs", "--", "delay", "1ms"],
        Rejected(2, "error: --duration '10parsecs': unknown unit 'parsecs' in '10parsecs': known duration units: s, ms, us, ns"),
    ),
    (
        "attach --mem-cap a word",
        Bin::Pipelab,
        &["attach", "lo", "--mem-cap", "lots", "--", "delay", "1ms"],
        Rejected(2, "error: --mem-cap 'lots': invalid size 'lots': sizes are written like 1500B or 100KB"),
    ),
    (
        "attach --workers 2",
        Bin::Pipelab,
        &["attach", "lo", "--workers", "2", "--", "delay", "1ms"],
        Rejected(2, "error: --workers: pipelab attach runs one worker (its one netfilter queue)"),
    ),
    (
        "attach -c missing",
        Bin::Pipelab,
        &["attach", "lo", "-c", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "attach --netns naming no namespace",
        Bin::Pipelab,
        &["attach", "--netns", "pl-nosuch-ns", "eth0", "--", "delay", "1ms"],
        Rejected(2, "error: --netns pl-nosuch-ns: no such network namespace (/run/netns/pl-nosuch-ns: No such file or directory (os error 2))"),
    ),
    (
        "attach on an interface that does not exist",
        Bin::Pipelab,
        &["attach", "pl-nosuch-dev", "--duration", "1s", "--", "delay", "1ms"],
        Rejected(2, "error: no interface 'pl-nosuch-dev' in this host's network namespace"),
    ),
    (
        "probe send --rate in Mbps",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--rate", "10Mbps"],
        Rejected(2, "error: --rate '10Mbps': unknown unit 'Mbps' in '10Mbps': known packet-rate units: pps, kpps, Mpps"),
    ),
    (
        "probe send --rate negative",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--rate", "-5pps"],
        Rejected(2, "error: --rate '-5pps': negative value '-5pps' is not allowed"),
    ),
    (
        "probe send --rate 0",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--rate", "0pps", "--duration", "1s"],
        Rejected(2, "probe send: rate must be positive"),
    ),
    (
        "probe send --size too large",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--size", "100KB"],
        Rejected(2, "probe send: size 102400B: a probe packet is 53 to 65535 bytes"),
    ),
    (
        "probe send --size 0",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--size", "0B", "--duration", "1s"],
        Rejected(2, "probe send: size 0B: a probe packet is 53 to 65535 bytes"),
    ),
    (
        "probe send --duration a word",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--duration", "forever"],
        Rejected(2, "error: --duration 'forever': invalid duration 'forever': durations are written like 20ms"),
    ),
    (
        "probe send --burst 0",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--burst", "0"],
        Rejected(2, "error: invalid value '0' for '--burst <N>': 0 is not in 1..=1024"),
    ),
    (
        "probe send --burst 2000",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--burst", "2000"],
        Rejected(2, "error: invalid value '2000' for '--burst <N>': 2000 is not in 1..=1024"),
    ),
    (
        "probe send --threads 0",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--threads", "0"],
        Rejected(2, "error: invalid value '0' for '--threads <N>': 0 is not in 1..=64"),
    ),
    (
        "probe send --threads 65",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--threads", "65"],
        Rejected(2, "error: invalid value '65' for '--threads <N>': 65 is not in 1..=64"),
    ),
    (
        "probe send with fewer packets than threads",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1:9", "--threads", "4", "--rate", "1kpps", "--duration", "2ms"],
        Rejected(2, "probe send: a duration of 2ms at 1000 packets/s sends 2 packets, fewer than the 4 sending threads: give at least 3500us (one packet a thread), or fewer threads"),
    ),
    (
        "probe send to a host name",
        Bin::Pipelab,
        &["probe", "send", "localhost:9"],
        Rejected(2, "error: invalid value 'localhost:9' for '<TO>': invalid socket address syntax"),
    ),
    (
        "probe send without a port",
        Bin::Pipelab,
        &["probe", "send", "127.0.0.1"],
        Rejected(2, "error: invalid value '127.0.0.1' for '<TO>': invalid socket address syntax"),
    ),
    (
        "probe recv --listen without a port",
        Bin::Pipelab,
        &["probe", "recv", "--listen", "0.0.0.0"],
        Rejected(2, "error: invalid value '0.0.0.0' for '--listen <LISTEN>': invalid socket address syntax"),
    ),
    (
        "gen ring --routers 0",
        Bin::Pipelab,
        &["topo", "gen", "ring", "--routers", "0"],
        Rejected(2, "error: invalid value '0' for '--routers <N>': 0 is not in 1..=1000000"),
    ),
    (
        "gen ring --routers negative",
        Bin::Pipelab,
        &["topo", "gen", "ring", "--routers", "-1"],
        Rejected(2, "error: invalid value '-1' for '--routers <N>': invalid digit found in string"),
    ),
    (
        "gen ring --routers two million",
        Bin::Pipelab,
        &["topo", "gen", "ring", "--routers", "2000000"],
        Rejected(2, "error: invalid value '2000000' for '--routers <N>': 2000000 is not in 1..=1000000"),
    ),
    (
        "gen ring --clients a word",
        Bin::Pipelab,
        &["topo", "gen", "ring", "--clients", "abc"],
        Rejected(2, "error: invalid value 'abc' for '--clients <N>': invalid digit found in string"),
    ),
    (
        "gen ring of more than a million nodes",
        Bin::Pipelab,
        &["topo", "gen", "ring", "--routers", "1000", "--clients", "1000"],
        Rejected(2, "error: ring --routers 1000 --clients 1000 makes 1001000 nodes, more than 1000000"),
    ),
    (
        "gen tree too deep",
        Bin::Pipelab,
        &["topo", "gen", "tree", "--depth", "30", "--fanout", "10"],
        Rejected(2, "error: tree --depth 30 --fanout 10 --clients 2 makes more than 1000000 nodes"),
    ),
    (
        "gen transit-stub --chord-prob 1.5",
        Bin::Pipelab,
        &["topo", "gen", "transit-stub", "--chord-prob", "1.5"],
        Rejected(2, "error: invalid value '1.5' for '--chord-prob <P>': 1.5 is not in [0, 1]"),
    ),
    (
        "gen transit-stub --chord-prob NaN",
        Bin::Pipelab,
        &["topo", "gen", "transit-stub", "--chord-prob", "NaN"],
        Rejected(2, "error: invalid value 'NaN' for '--chord-prob <P>': NaN is not in [0, 1]"),
    ),
    (
        "gen waxman --alpha inf",
        Bin::Pipelab,
        &["topo", "gen", "waxman", "--alpha", "inf"],
        Rejected(2, "error: invalid value 'inf' for '--alpha <A>': inf is not in [0, 1]"),
    ),
    (
        "gen waxman --beta 0",
        Bin::Pipelab,
        &["topo", "gen", "waxman", "--beta", "0"],
        Rejected(2, "error: invalid value '0' for '--beta <B>': 0 is not a positive number"),
    ),
    (
        "gen waxman --beta negative",
        Bin::Pipelab,
        &["topo", "gen", "waxman", "--beta", "-1"],
        Rejected(2, "error: invalid value '-1' for '--beta <B>': -1 is not a positive number"),
    ),
    (
        "gen waxman --routers 200000",
        Bin::Pipelab,
        &["topo", "gen", "waxman", "--routers", "200000"],
        Rejected(2, "error: invalid value '200000' for '--routers <N>': 200000 is not in 1..=100000"),
    ),
    (
        "gen star --access in Mbps",
        Bin::Pipelab,
        &["topo", "gen", "star", "--access", "bw 10Mbps"],
        Rejected(2, "error: invalid value 'bw 10Mbps' for '--access <ATTRS>': unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
    ),
    (
        "gen star --access without a value",
        Bin::Pipelab,
        &["topo", "gen", "star", "--access", "delay"],
        Rejected(2, "error: invalid value 'delay' for '--access <ATTRS>': missing value after 'delay': e.g. delay 20ms"),
    ),
    (
        "gen dumbbell --stub-link loss 2",
        Bin::Pipelab,
        &["topo", "gen", "dumbbell", "--stub-link", "loss 2"],
        Rejected(2, "error: invalid value 'loss 2' for '--stub-link <ATTRS>': probability '2' is outside 0..1: a loss rate is a probability (0.01) or a percentage (2%)"),
    ),
    (
        "gen transit-stub --uplink queue 0",
        Bin::Pipelab,
        &["topo", "gen", "transit-stub", "--uplink", "queue 0"],
        Rejected(2, "error: invalid value 'queue 0' for '--uplink <ATTRS>': invalid queue '0': a queue must hold at least one packet"),
    ),
    (
        "gen transit-stub --transit-link range",
        Bin::Pipelab,
        &["topo", "gen", "transit-stub", "--transit-link", "delay 1ms..2ms"],
        Rejected(2, "error: invalid value 'delay 1ms..2ms' for '--transit-link <ATTRS>': a range '1ms..2ms' is only for `every` lines: e.g. every 2s until 30s link A B set delay 5ms..50ms"),
    ),
    (
        "gen --format xml",
        Bin::Pipelab,
        &["topo", "gen", "star", "--format", "xml"],
        Rejected(2, "error: invalid value 'xml' for '--format <FORMAT>'\n  [possible values: gml, toml]"),
    ),
    (
        "gen -o in a missing directory",
        Bin::Pipelab,
        &["topo", "gen", "star", "-o", "MISSING/x.gml"],
        Rejected(2, "error: cannot write DIR/missing/x.gml: No such file or directory (os error 2)"),
    ),
    (
        "gen an unknown kind",
        Bin::Pipelab,
        &["topo", "gen", "mesh"],
        Rejected(2, "error: unrecognized subcommand 'mesh'"),
    ),
    (
        "distill --mode unknown",
        Bin::Pipelab,
        &["topo", "distill", "GML", "--mode", "sideways"],
        Rejected(2, "error: --mode 'sideways': unknown distillation `sideways` (hop-by-hop, end-to-end, last-mile, walk-in K, walk-out K, walk-in K walk-out W)"),
    ),
    (
        "distill --mode walk-in a word",
        Bin::Pipelab,
        &["topo", "distill", "GML", "--mode", "walk-in x"],
        Rejected(2, "error: --mode 'walk-in x': unknown distillation `walk-in x` (hop-by-hop, end-to-end, last-mile, walk-in K, walk-out K, walk-in K walk-out W)"),
    ),
    (
        "distill --mode walk-in negative",
        Bin::Pipelab,
        &["topo", "distill", "GML", "--mode", "walk-in -1"],
        Rejected(2, "error: --mode 'walk-in -1': unknown distillation `walk-in -1` (hop-by-hop, end-to-end, last-mile, walk-in K, walk-out K, walk-in K walk-out W)"),
    ),
    (
        "distill --metric unknown",
        Bin::Pipelab,
        &["topo", "distill", "GML", "--metric", "speed"],
        Rejected(2, "error: invalid value 'speed' for '--metric <METRIC>'\n  [possible values: delay, hops]"),
    ),
    (
        "distill --routes unknown",
        Bin::Pipelab,
        &["topo", "distill", "GML", "--routes", "both"],
        Rejected(2, "error: invalid value 'both' for '--routes <ROUTES>'\n  [possible values: symmetric, asymmetric]"),
    ),
    (
        "assign --cores 0",
        Bin::Pipelab,
        &["topo", "assign", "GML", "--cores", "0"],
        Rejected(2, "error: invalid value '0' for '--cores <K>': 0 is not in 1..=1024"),
    ),
    (
        "assign --cores negative",
        Bin::Pipelab,
        &["topo", "assign", "GML", "--cores", "-1"],
        Rejected(2, "error: invalid value '-1' for '--cores <K>': invalid digit found in string"),
    ),
    (
        "assign --method unknown",
        Bin::Pipelab,
        &["topo", "assign", "GML", "--cores", "2", "--method", "magic"],
        Rejected(2, "error: invalid value 'magic' for '--method <METHOD>'\n  [possible values: greedy, partition]"),
    ),
    (
        "assign --seed a word",
        Bin::Pipelab,
        &["topo", "assign", "GML", "--cores", "2", "--seed", "x"],
        Rejected(2, "error: invalid value 'x' for '--seed <SEED>': invalid digit found in string"),
    ),
    (
        "up --name with a slash",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "a/b"],
        Rejected(2, "error: topology name 'a/b': use 1 to 32 letters, digits, '_' or '.'"),
    ),
    (
        "up --name too long",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"],
        Rejected(2, "error: topology name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn': use 1 to 32 letters, digits, '_' or '.'"),
    ),
    (
        "up --prefix /33",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--prefix", "10.0.0.0/33"],
        Rejected(2, "error: --prefix: prefix '10.0.0.0/33': length '33' must be 0 to 30"),
    ),
    (
        "up --prefix a word",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--prefix", "garbage"],
        Rejected(2, "error: --prefix: prefix 'garbage': expected A.B.C.D/LEN"),
    ),
    (
        "up --prefix too small for the VNs",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--prefix", "10.0.0.0/31"],
        Rejected(2, "error: --prefix: prefix '10.0.0.0/31': length '31' must be 0 to 30"),
    ),
    (
        "up --distill unknown",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--distill", "sideways"],
        Rejected(2, "error: --distill 'sideways': unknown distillation `sideways` (hop-by-hop, end-to-end, last-mile, walk-in K, walk-out K, walk-in K walk-out W)"),
    ),
    (
        "up --threads negative",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--threads", "-1"],
        Rejected(2, "error: invalid value '-1' for '--threads <THREADS>': invalid digit found in string"),
    ),
    (
        "up --workers -1",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--workers", "-1"],
        Rejected(2, "error: invalid value '-1' for '--workers <K>': --workers '-1': expected a number of workers from 1 to 64"),
    ),
    (
        "up --workers 0",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--workers", "0"],
        Rejected(2, "error: invalid value '0' for '--workers <K>': --workers '0': expected a number of workers from 1 to 64"),
    ),
    (
        "up --cpus -1",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--cpus", "-1"],
        Rejected(2, "error: --cpus '-1': '-1' is not a CPU number or range (e.g. 0,2-3, or none)"),
    ),
    (
        "up --cpus 99999",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--cpus", "99999"],
        Rejected(2, "error: --cpus '99999': CPU 99999 is not one this process may run on"),
    ),
    (
        "up --config missing",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--config", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "status of a topology not running",
        Bin::Pipelab,
        &["topo", "status", "--name", "plnone"],
        Rejected(2, "error: topology 'plnone' is not up (/run/pipelab/topo/plnone.json: No such file or directory (os error 2))"),
    ),
    (
        "exec in a topology not running",
        Bin::Pipelab,
        &["topo", "exec", "--name", "plnone", "vn1", "--", "true"],
        Rejected(2, "error: topology 'plnone' is not up (/run/pipelab/topo/plnone.json: No such file or directory (os error 2))"),
    ),
    (
        "exec without a command",
        Bin::Pipelab,
        &["topo", "exec", "--name", "plnone", "vn1"],
        Rejected(2, "error: the following required arguments were not provided:\n  <COMMAND>..."),
    ),
    (
        "cross without demands",
        Bin::Pipelab,
        &["topo", "cross", "--name", "plnone"],
        Rejected(2, "error: the following required arguments were not provided:\n  <DEMANDS>..."),
    ),
    (
        "top --interval 0",
        Bin::Pipelab,
        &["--socket", "MISSING", "top", "--interval", "0"],
        Rejected(2, "error: --interval 0: give seconds above 0 and at most 3600 (e.g. 0.5)"),
    ),
    (
        "top --interval negative",
        Bin::Pipelab,
        &["--socket", "MISSING", "top", "--interval", "-1"],
        Rejected(2, "error: --interval -1: give seconds above 0 and at most 3600 (e.g. 0.5)"),
    ),
    (
        "top --interval NaN",
        Bin::Pipelab,
        &["--socket", "MISSING", "top", "--interval", "NaN"],
        Rejected(2, "error: --interval NaN: give seconds above 0 and at most 3600 (e.g. 0.5)"),
    ),
    (
        "top --interval inf",
        Bin::Pipelab,
        &["--socket", "MISSING", "top", "--interval", "inf"],
        Rejected(2, "error: --interval inf: give seconds above 0 and at most 3600 (e.g. 0.5)"),
    ),
    (
        "top --count a word",
        Bin::Pipelab,
        &["--socket", "MISSING", "top", "--count", "x"],
        Rejected(2, "error: invalid value 'x' for '--count <N>': invalid digit found in string"),
    ),
    (
        "netconfig without words",
        Bin::Pipelab,
        &["netconfig"],
        Rejected(2, "error: the following required arguments were not provided:\n  <WORDS>..."),
    ),
    (
        "netconfig --dry-run without a daemon",
        Bin::Pipelab,
        &["--socket", "MISSING", "netconfig", "--dry-run", "client", "80@10.0.0.1", "IN", "bw", "10Mbps", "OUT", "bw", "1Mbit/s"],
        Rejected(1, "error: pipelabd is not running (nothing listens on DIR/missing)."),
    ),
    (
        "limit without words",
        Bin::Pipelab,
        &["limit"],
        Rejected(2, "error: the following required arguments were not provided:\n  <WORDS>..."),
    ),
    (
        "save without a file",
        Bin::Pipelab,
        &["save"],
        Rejected(2, "error: the following required arguments were not provided:\n  <FILE>"),
    ),
    (
        "restore a missing file",
        Bin::Pipelab,
        &["--socket", "MISSING", "restore", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "pipelabd --plane unknown",
        Bin::Pipelabd,
        &["--plane", "kernel"],
        Rejected(2, "error: invalid value 'kernel' for '--plane <PLANE>'\n  [possible values: host, none]"),
    ),
    (
        "pipelabd --scope a word",
        Bin::Pipelabd,
        &["--plane", "none", "--scope", "garbage", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --scope garbage: 'garbage' is not an IP address"),
    ),
    (
        "pipelabd --name with a slash",
        Bin::Pipelabd,
        &["--plane", "none", "--name", "a/b", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --name: 'a/b' is not a valid emulation name: '/' is not allowed (letters, digits, '_', '.' and '-')"),
    ),
    (
        "pipelabd --queue-num negative",
        Bin::Pipelabd,
        &["--queue-num", "-1"],
        Rejected(2, "error: invalid value '-1' for '--queue-num <N>': -1 is not in 0..=65535"),
    ),
    (
        "pipelabd --queue-num above u16",
        Bin::Pipelabd,
        &["--queue-num", "70000"],
        Rejected(2, "error: invalid value '70000' for '--queue-num <N>': 70000 is not in 0..=65535"),
    ),
    (
        "pipelabd an unknown flag",
        Bin::Pipelabd,
        &["--frobnicate"],
        Rejected(2, "error: unexpected argument '--frobnicate' found"),
    ),
    (
        "--target with an empty name",
        Bin::Pipelab,
        &["--target", "", "show"],
        Rejected(2, "error: --target: '' is not a valid emulation name: it is empty"),
    ),
    (
        "--target of 100 characters",
        Bin::Pipelab,
        &["--target", "tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt", "show"],
        Rejected(2, "error: --target: 'tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt' is not a valid emulation name: it is longer than 64 characters"),
    ),
    (
        "check without a file",
        Bin::Pipelab,
        &["check"],
        Rejected(2, "error: the following required arguments were not provided:\n  <CONFIG>"),
    ),
    (
        "stats without a daemon",
        Bin::Pipelab,
        &["--socket", "MISSING", "stats", "--json"],
        Rejected(1, "error: pipelabd is not running (nothing listens on DIR/missing)."),
    ),
    (
        "top --count negative",
        Bin::Pipelab,
        &["--socket", "MISSING", "top", "--count", "-1"],
        Rejected(2, "error: invalid value '-1' for '--count <N>': invalid digit found in string"),
    ),
    (
        "distill a missing file",
        Bin::Pipelab,
        &["topo", "distill", "MISSING"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "assign --cores 2000",
        Bin::Pipelab,
        &["topo", "assign", "GML", "--cores", "2000"],
        Rejected(2, "error: invalid value '2000' for '--cores <K>': 2000 is not in 1..=1024"),
    ),
    (
        "gen star --clients with an exponent",
        Bin::Pipelab,
        &["topo", "gen", "star", "--clients", "1e3"],
        Rejected(2, "error: invalid value '1e3' for '--clients <N>': invalid digit found in string"),
    ),
    (
        "gen waxman --seed negative",
        Bin::Pipelab,
        &["topo", "gen", "waxman", "--seed", "-1"],
        Rejected(2, "error: invalid value '-1' for '--seed <N>': invalid digit found in string"),
    ),
    (
        "link without its state",
        Bin::Pipelab,
        &["topo", "link", "--name", "plnone", "r0", "r1"],
        Rejected(2, "error: the following required arguments were not provided:\n  <STATE>"),
    ),
    (
        "run without a file",
        Bin::Pipelab,
        &["topo", "run", "--name", "plnone"],
        Rejected(2, "error: the following required arguments were not provided:\n  <SCRIPT>"),
    ),
    (
        "up of a missing file",
        Bin::Pipelab,
        &["topo", "up", "MISSING", "--name", "plflags"],
        Rejected(2, "error: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "pipelabd --scope with --plane none",
        Bin::Pipelabd,
        &["--plane", "none", "--scope", "10.0.0.0/8", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --scope 10.0.0.0/8: a scope limits host mode's traffic; --plane none has none"),
    ),
    (
        "pipelabd --scope mask too long",
        Bin::Pipelabd,
        &["--scope", "10.0.0.0/99", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --scope 10.0.0.0/99: '99' is not a valid mask length"),
    ),
    (
        "pipelabd --pcap with --plane none",
        Bin::Pipelabd,
        &["--plane", "none", "--pcap", "MISSING/x.pcapng", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --pcap: host mode records what crosses it; --plane none has no packets"),
    ),
    (
        "pipelabd --flow-series with --plane none",
        Bin::Pipelabd,
        &["--plane", "none", "--flow-series", "MISSING/f.csv", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --flow-series: host mode records what crosses it; --plane none has no packets"),
    ),
    (
        "pipelabd --interval with --plane none",
        Bin::Pipelabd,
        &["--plane", "none", "--interval", "100ms", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --interval: host mode records what crosses it; --plane none has no packets"),
    ),
    (
        "pipelabd --pcap in a missing directory",
        Bin::Pipelabd,
        &["--pcap", "MISSING/x.pcapng", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --pcap DIR/missing/x.pcapng: cannot write: No such file or directory (os error 2)"),
    ),
    (
        "pipelabd --series in a missing directory",
        Bin::Pipelabd,
        &["--series", "MISSING/x.csv", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --series DIR/missing/x.csv: cannot write: No such file or directory (os error 2)"),
    ),
    (
        "pipelabd --events-max not a size",
        Bin::Pipelabd,
        &["--events", "MISSING/e.jsonl", "--events-max", "5XB", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --events-max '5XB': unknown unit 'XB' in '5XB': known size units: B, KB, MB, GB, KiB, MiB, GiB"),
    ),
    (
        "pipelabd --interval below 1ms",
        Bin::Pipelabd,
        &["--interval", "100us", "--socket", "MISSING/s.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --interval 100us: give at least 1ms (each sample asks every worker)"),
    ),
    (
        "pipelabd --plane without a value",
        Bin::Pipelabd,
        &["--plane"],
        Rejected(2, "error: a value is required for '--plane <PLANE>' but none was supplied"),
    ),    (
        "shell --name with a slash",
        Bin::Pipelab,
        &["shell", "--name", "a/b", "--link", "delay 1ms", "--", "true"],
        Rejected(2, "error: --name: 'a/b' is not a valid emulation name: '/' is not allowed (letters, digits, '_', '.' and '-')"),
    ),
    (
        "bridge --name starting with a dot",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--name", ".x"],
        Rejected(2, "error: --name: '.x' is not a valid emulation name: it may not start with '.' or '-'"),
    ),
    (
        "attach --name too long",
        Bin::Pipelab,
        &["attach", "lo", "--name", "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", "--", "delay", "1ms"],
        Rejected(2, "error: --name: 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn' is not a valid emulation name: it is longer than 64 characters"),
    ),
    (
        "shell --link naming a trace that does not exist",
        Bin::Pipelab,
        &["shell", "--link", "bw trace:MISSING", "--", "true"],
        Rejected(2, "error: pipe 1: bw: cannot read 'DIR/missing': No such file or directory (os error 2)"),
    ),
    (
        "shell --config whose rule names no pipe",
        Bin::Pipelab,
        &["shell", "--config", "DIR/rule.conf", "--", "true"],
        Rejected(2, "error: pipe 7 is not configured (used by rule 100)\n --> DIR/rule.conf:1:1"),
    ),
    (
        "shell --busy-poll with --realtime",
        Bin::Pipelab,
        &["shell", "--busy-poll", "--realtime", "--link", "delay 1ms", "--", "true"],
        Rejected(2, "error: the argument '--busy-poll' cannot be used with '--realtime'"),
    ),
    (
        "bridge --realtime with --busy-poll",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--realtime", "--busy-poll"],
        Rejected(2, "error: the argument '--realtime' cannot be used with '--busy-poll'"),
    ),
    (
        "attach --busy-poll with --realtime",
        Bin::Pipelab,
        &["attach", "lo", "--busy-poll", "--realtime", "--", "delay", "1ms"],
        Rejected(2, "error: the argument '--busy-poll' cannot be used with '--realtime'"),
    ),
    (
        "shell --interval negative",
        Bin::Pipelab,
        &["shell", "--interval", "-1s", "--series", "DIR/series.csv", "--link", "delay 1ms", "--", "true"],
        Rejected(2, "error: --interval -1s: negative value '-1s' is not allowed"),
    ),
    (
        "sim --interval negative",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10pps size 100B duration 1s", "--interval", "-1s", "--json"],
        Rejected(2, "error: invalid value '-1s' for '--interval <DURATION>': negative value '-1s' is not allowed"),
    ),
    (
        "plot --size negative",
        Bin::Pipelab,
        &["plot", "CONF", "-o", "DIR/x.svg", "--size", "-1x5"],
        Rejected(2, "error: invalid value '-1x5' for '--size <SIZE>': '-1x5': give WIDTHxHEIGHT in pixels, e.g. 800x480"),
    ),
    (
        "sim --pcap and --events one file",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10pps size 100B duration 1s", "--pcap", "DIR/x", "--events", "DIR/x"],
        Rejected(2, "error: --pcap and --events name the same file (DIR/x): give each output a file of its own"),
    ),
    (
        "sim --series over its configuration",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10pps size 100B duration 1s", "--interval", "100ms", "--series", "DIR/./ok.conf"],
        Rejected(2, "error: --series and CONFIG name the same file (DIR/ok.conf): an output may not overwrite what the command reads"),
    ),
    (
        "sim --events and --flow-series one file by two paths",
        Bin::Pipelab,
        &["sim", "CONF", "--traffic", "cbr rate 10pps size 100B duration 1s", "--interval", "100ms", "--flow-series", "DIR/f.csv", "--events", "DIR/../DIRNAME/f.csv"],
        Rejected(2, "error: --flow-series and --events name the same file (…/f.csv): give each output a file of its own"),
    ),
    (
        "shell --stats and --pcap one file",
        Bin::Pipelab,
        &["shell", "--stats", "DIR/out", "--pcap", "DIR/out", "--link", "delay 1ms", "--", "true"],
        Rejected(2, "error: --stats and --pcap name the same file (DIR/out): give each output a file of its own"),
    ),
    (
        "bridge --series over its configuration",
        Bin::Pipelab,
        &["bridge", "pha", "phb", "-f", "CONF", "--series", "CONF"],
        Rejected(2, "error: --series and -f name the same file (DIR/ok.conf): an output may not overwrite what the command reads"),
    ),
    (
        "attach --events and --flow-series one file",
        Bin::Pipelab,
        &["attach", "lo", "--events", "DIR/e", "--flow-series", "DIR/e", "--", "delay", "1ms"],
        Rejected(2, "error: --events and --flow-series name the same file (DIR/e): give each output a file of its own"),
    ),
    (
        "topo up --pcap and --series one file",
        Bin::Pipelab,
        &["topo", "up", "GML", "--name", "plflags", "--pcap", "DIR/t", "--series", "DIR/t"],
        Rejected(2, "error: --pcap and --series name the same file (DIR/t): give each output a file of its own"),
    ),
    (
        "plot -o over its input",
        Bin::Pipelab,
        &["plot", "DIR/r.svg", "-o", "DIR/r.svg"],
        Rejected(2, "error: -o and INPUT name the same file (DIR/r.svg): an output may not overwrite what the command reads"),
    ),
    (
        "pipelabd --pcap over its socket",
        Bin::Pipelabd,
        &["--socket", "DIR/d.sock", "--pcap", "DIR/d.sock", "--state-dir", "MISSING/st"],
        Rejected(2, "pipelabd: error: --socket and --pcap name the same file (DIR/d.sock): give each output a file of its own"),
    ),
];

/// Each case of [`FLAGS`].
#[test]
fn bad_flags_are_refused_naming_the_flag_and_the_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let conf = d.join("ok.conf");
    std::fs::write(
        &conf,
        "pipe 1 config delay 5ms\nadd 100 pipe 1 ip from any to any\n",
    )
    .expect("write");
    let gml = d.join("ok.gml");
    std::fs::write(&gml, GML).expect("write");
    let missing = d.join("missing");
    // A rule naming a pipe no line configures.
    std::fs::write(d.join("rule.conf"), "add 100 pipe 7 ip from any to any\n").expect("write");
    std::fs::write(d.join("r.svg"), "<svg/>").expect("write");
    let dir_name = d
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sub = |s: &str| {
        s.replace("CONF", &conf.display().to_string())
            .replace("GML", &gml.display().to_string())
            .replace("MISSING", &missing.display().to_string())
            .replace("DIRNAME", &dir_name)
            .replace("DIR", &d.display().to_string())
    };
    let mut failures = Vec::new();
    for (case, bin, args, want) in FLAGS {
        let mut cmd = Command::new(match bin {
            Bin::Pipelab => PIPELAB,
            Bin::Pipelabd => PIPELABD,
        });
        cmd.args(args.iter().map(|a| sub(a)));
        // Nothing may reach a registry or state of the host.
        cmd.env("PIPELAB_RUN_DIR", d.join("run"));
        let bound = Duration::from_secs(10);
        let ran = run_bounded(cmd, bound);
        let dir = d.display().to_string();
        if let Err(e) = verdict_with(&ran, *want, &[("DIR", &dir)], bound) {
            failures.push(format!("{case}: {e}"));
        }
    }
    // Had a `topo up` case been accepted, its topology would run in the
    // background: take it down (a no-op when none runs).
    let mut down = Command::new(PIPELAB);
    down.args(["topo", "down", "--name", "plflags"]);
    let _ = run_bounded(down, Duration::from_secs(20));
    all_pass(failures, FLAGS.len());
}

/// A uid with no account and no group.
const NOBODY: u32 = 4_000_112;

/// A user who may not open a running emulation's socket is told whose
/// it is and how to be let in, in one line (the words used to carry a
/// run of spaces from a broken line continuation).
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "needs root (to run pipelab under another uid); run as root or with PIPELAB_LIVE=1"
)]
fn a_target_the_user_may_not_open_is_named_with_the_way_in() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).expect("mkdir");
    for p in [dir.path(), run.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let sock = run.join("locked.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let entry = serde_json::json!({
        "name": "locked", "mode": "bridge", "pid": std::process::id(), "owner": 0,
        "socket": sock, "started": 0,
    });
    std::fs::write(run.join("locked.json"), entry.to_string()).expect("write entry");
    let mut cmd = Command::new(hostile::pipelab_for_others(dir.path()));
    cmd.args(["--target", "locked", "show"])
        .env("PIPELAB_RUN_DIR", &run)
        .uid(NOBODY)
        .gid(NOBODY);
    let ran = run_bounded(cmd, Duration::from_secs(10));
    let want = format!(
        "error: permission denied on {}: emulation locked is for its owner, root and the group 'pipelab' (ask an administrator to add you: usermod -aG pipelab $USER)\n",
        sock.display()
    );
    assert_eq!((ran.code, ran.stderr.as_str()), (Some(1), want.as_str()));
}

/// A dumbbell: two routers, two VNs on each.
const GML: &str = "graph [
  node [ id 0 role \"stub\" name \"r0\" ]
  node [ id 1 role \"stub\" name \"r1\" ]
  node [ id 2 role \"client\" name \"vn1\" ]
  node [ id 3 role \"client\" name \"vn2\" ]
  node [ id 4 role \"client\" name \"vn3\" ]
  node [ id 5 role \"client\" name \"vn4\" ]
  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 20 ]
  edge [ source 2 target 0 bandwidth \"100Mbit/s\" delay 1 ]
  edge [ source 3 target 0 bandwidth \"100Mbit/s\" delay 1 ]
  edge [ source 4 target 1 bandwidth \"100Mbit/s\" delay 1 ]
  edge [ source 5 target 1 bandwidth \"100Mbit/s\" delay 1 ]
]
";

/// The count of this file's cases (docs/HOSTILE.md).
#[test]
fn case_count() {
    let rejections = FLAGS.iter().filter(|c| c.3.is_checked_rejection()).count();
    // The table, and the user refused a target's socket.
    tally("hostile_flags", FLAGS.len() + 1, rejections + 1, 90, 85);
}
