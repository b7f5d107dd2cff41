//! The conformance cases: every example of tc-netem(8) (iproute2 6.x) and
//! of the traffic-shaping sections of FreeBSD 14's ipfw(8)/dnctl(8), each
//! with its source section and the canonical text pipelab prints back,
//! and the refusals with their exact messages. Shared by
//! `conformance_netem.rs`, `conformance_ipfw.rs` (parse, print, parse
//! back) and `crates/sim/tests/conformance.rs` (check and simulate).
//!
//! Sources. tc-netem(8): iproute2's `man/man8/tc-netem.8` (SYNOPSIS,
//! OPTIONS, EXAMPLES), checked against `tc/q_netem.c`. ipfw(8): the
//! FreeBSD 14 page's TRAFFIC SHAPER (DUMMYNET) CONFIGURATION section, the
//! traffic-shaping, lookup-table and AQM parts of EXAMPLES, which write the
//! shaper's commands with `dnctl` (dnctl(8) takes ipfw's pipe, queue and
//! sched commands). The FreeBSD 14 source of ipfw.8 was not in the stored
//! copies available (only a 1996 revision); the examples were taken from a
//! translated copy of the FreeBSD 14 page whose command lines are
//! verbatim, and each line is quoted here as the page writes it. Lines
//! whose source names a grammar part (a command's or option's synopsis)
//! are forms of that synopsis, not verbatim examples; the DYNAMIC RULES
//! example's `my-net` is written 192.168.0.0/24.
//!
//! FreeBSD's own parser (`FREEBSD`, `FREEBSD_REJECT`): the forms
//! `sbin/ipfw/dummynet.c` and `sbin/ipfw/ipfw2.c` accept, read from the
//! freebsd-src tree (commit 6d13bb0e67972de9ad96c4eb25eb8337041a3d4c, with
//! `lib/libutil/expand_number.c` and `lib/libc/net/protocols`), each row
//! naming the function (and token) it follows; the canonical text spells
//! out the meaning FreeBSD gives it.
#![allow(dead_code)]

/// An example that pipelab accepts: `input` as the page writes it, and
/// the canonical text pipelab prints back.
pub struct ReadBack {
    /// The man page and section.
    pub source: &'static str,
    /// The line as written (for netem: the options after `netem`).
    pub input: &'static str,
    /// pipelab's canonical text (for netem: the whole `pipe 1 config` line).
    pub canonical: &'static str,
}

/// A line pipelab refuses, with its exact error (`LINE:COLUMN: message:
/// hint`).
pub struct Reject {
    /// Where the form comes from.
    pub source: &'static str,
    /// The line.
    pub input: &'static str,
    /// The error, as `ParseError`'s `Display` prints it.
    pub error: &'static str,
}

const NETEM_EX: &str = "tc-netem(8) EXAMPLES";
const NETEM_OPT: &str = "tc-netem(8) SYNOPSIS/OPTIONS";
const NETEM_UNITS: &str = "tc(8) units as netem reads them (tc/q_netem.c, lib/utils*.c)";

/// tc-netem(8): each entry's input goes after `pipe 1 config` and into
/// `--link` unchanged.
pub const NETEM: &[ReadBack] = &[
    ReadBack {
        source: NETEM_EX,
        input: "delay 100ms",
        canonical: "pipe 1 config delay 100ms",
    },
    ReadBack {
        source: NETEM_EX,
        input: "delay 100ms 10ms 25%",
        canonical: "pipe 1 config delay 100ms 10ms 25%",
    },
    ReadBack {
        source: NETEM_EX,
        input: "delay 100ms 20ms distribution normal",
        canonical: "pipe 1 config delay 100ms 20ms distribution normal",
    },
    ReadBack {
        source: NETEM_EX,
        input: "loss 0.1%",
        canonical: "pipe 1 config loss 0.1%",
    },
    ReadBack {
        source: NETEM_EX,
        input: "duplicate 1%",
        canonical: "pipe 1 config duplicate 1%",
    },
    ReadBack {
        source: NETEM_EX,
        input: "loss 0.3% 25%",
        canonical: "pipe 1 config loss 0.3% 25%",
    },
    // The page's meaning (every 5th packet at once); tc 6.x itself asks
    // for a reorder probability here.
    ReadBack {
        source: NETEM_EX,
        input: "gap 5 delay 10ms",
        canonical: "pipe 1 config delay 10ms gap 5",
    },
    ReadBack {
        source: NETEM_EX,
        input: "delay 10ms reorder 25% 50%",
        canonical: "pipe 1 config delay 10ms reorder 25% 50%",
    },
    ReadBack {
        source: NETEM_EX,
        input: "delay 100ms 75ms",
        canonical: "pipe 1 config delay 100ms 75ms",
    },
    ReadBack {
        source: NETEM_EX,
        input: "delay 10ms 100ms",
        canonical: "pipe 1 config delay 10ms 100ms",
    },
    ReadBack {
        source: NETEM_EX,
        input: "rate 5kbit 20 100 5",
        canonical: "pipe 1 config rate 5Kbit 20 100 5",
    },
    ReadBack {
        source: NETEM_EX,
        input: "delay 200ms 10ms distribution normal",
        canonical: "pipe 1 config delay 200ms 10ms distribution normal",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "limit 1000",
        canonical: "pipe 1 config limit 1000",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "delay 100ms 10ms 25% distribution pareto",
        canonical: "pipe 1 config delay 100ms 10ms 25% distribution pareto",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "delay 100ms 10ms distribution paretonormal",
        canonical: "pipe 1 config delay 100ms 10ms distribution paretonormal",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "delay 100ms 10ms distribution uniform",
        canonical: "pipe 1 config delay 100ms 10ms distribution uniform",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "loss random 1% 25%",
        canonical: "pipe 1 config loss 1% 25%",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "loss state 1% 30% 10% 40% 0.5%",
        canonical: "pipe 1 config loss state 1% 30% 10% 40% 0.5%",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "loss gemodel 1% 10% 70% 0.1%",
        canonical: "pipe 1 config loss gemodel 1% 10% 70% 0.1%",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "loss gemodel 1% ecn",
        canonical: "pipe 1 config loss gemodel 1% ecn",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "corrupt 0.1%",
        canonical: "pipe 1 config corrupt 0.1%",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "corrupt 0.1% 25%",
        canonical: "pipe 1 config corrupt 0.1% 25%",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "duplicate 1% 25%",
        canonical: "pipe 1 config duplicate 1% 25%",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "delay 10ms reorder 25% 50% gap 5",
        canonical: "pipe 1 config delay 10ms reorder 25% 50% gap 5",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "rate 10mbit",
        canonical: "pipe 1 config rate 10Mbit",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "rate 100kbit -14",
        canonical: "pipe 1 config rate 100Kbit -14",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "slot 800us 1ms",
        canonical: "pipe 1 config slot 800us 1ms",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "slot 1ms packets 32 bytes 64k",
        canonical: "pipe 1 config slot 1ms packets 32 bytes 65536",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "slot distribution normal 1ms 200us packets 16",
        canonical: "pipe 1 config slot distribution normal 1ms 200us packets 16",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "seed 42",
        canonical: "pipe 1 config seed 42",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "ecn loss 1%",
        canonical: "pipe 1 config loss 1% ecn",
    },
    ReadBack {
        source: NETEM_OPT,
        input: "latency 50ms drop 1%",
        canonical: "pipe 1 config delay 50ms loss 1%",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "rate 10mbps",
        canonical: "pipe 1 config rate 80Mbit",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "rate 1kbps",
        canonical: "pipe 1 config rate 8Kbit",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "rate 1mibit",
        canonical: "pipe 1 config rate 1048576bit",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "rate 1000",
        canonical: "pipe 1 config rate 1Kbit",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "loss 5",
        canonical: "pipe 1 config loss 5%",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "delay 100ms 10ms 25",
        canonical: "pipe 1 config delay 100ms 10ms 25%",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "delay 100msec 10usec",
        canonical: "pipe 1 config delay 100ms 10us",
    },
    ReadBack {
        source: NETEM_UNITS,
        input: "slot 800000 1000000",
        canonical: "pipe 1 config slot 800us 1ms",
    },
    ReadBack {
        source: "pipelab (README): jitter-order keep, the alternative",
        input: "delay 100ms 10ms distribution normal jitter-order keep",
        canonical: "pipe 1 config delay 100ms 10ms distribution normal jitter-order keep",
    },
];

/// Refusals of netem words, with their messages.
pub const NETEM_REJECT: &[Reject] = &[
    Reject { source: NETEM_UNITS, input: "pipe 1 config rate 10%", error: "1:20: rate '10%' is a percentage of a device's speed: a pipe has no device: write the rate, e.g. 10mbit" },
    Reject { source: NETEM_UNITS, input: "pipe 1 config rate 0", error: "1:20: rate '0' is zero: netem's rate must be above zero; leave it out for no limit" },
    Reject { source: NETEM_UNITS, input: "pipe 1 config rate 10furlongs", error: "1:20: unknown unit 'furlongs' in '10furlongs': tc's rate units: bit, kbit, mbit, gbit, tbit, kibit, mibit, gibit, bps, kbps, mbps, gbps (bytes per second), kibps, mibps, gibps" },
    Reject { source: NETEM_OPT, input: "pipe 1 config rate 10mbit bw 1Mbit/s", error: "1:20: invalid rate '10mbit': 'rate' and 'bw' cannot both be given (rate is netem's bw, in tc's units)" },
    Reject { source: NETEM_OPT, input: "pipe 1 config rate 1mbit 14 0", error: "1:29: cell size 0 is out of range 1..65535" },
    Reject { source: NETEM_OPT, input: "pipe 1 config rate 1mbit 14 overhead 10", error: "1:38: invalid overhead '10': the overhead is given twice (after rate and as overhead)" },
    Reject { source: NETEM_OPT, input: "pipe 1 config slot 2ms 1ms", error: "1:24: slot's longest delay 1ms is below its shortest 2ms: e.g. slot 800us 1ms packets 32 or slot distribution normal 1ms 200us" },
    Reject { source: NETEM_OPT, input: "pipe 1 config slot fast", error: "1:20: unknown slot parameter 'fast': e.g. slot 800us 1ms packets 32 or slot distribution normal 1ms 200us" },
    Reject { source: NETEM_OPT, input: "pipe 1 config slot distribution normal 1ms 0", error: "1:15: invalid slot: a slot distribution needs a jitter above zero" },
    Reject { source: NETEM_OPT, input: "pipe 1 config slot 1ms packets 0", error: "1:32: packets 0 is out of range 1..2147483647" },
    Reject { source: NETEM_OPT, input: "pipe 1 config limit 0", error: "1:21: limit 0 is out of range 1..1000000: netem's limit is a number of packets" },
    Reject { source: NETEM_OPT, input: "pipe 1 config seed x", error: "1:20: invalid seed 'x': a seed is a whole number, e.g. seed 42" },
    Reject { source: NETEM_OPT, input: "pipe 1 config loss random", error: "1:26: missing percentage after 'random': e.g. loss random 1%" },
    Reject { source: NETEM_UNITS, input: "pipe 1 config loss 150", error: "1:20: percentage '150' is more than 100%" },
    Reject { source: NETEM_OPT, input: "pipe 1 config delay 10ms 5ms distribution gaussian", error: "1:43: unknown distribution 'gaussian': known distributions: uniform, normal, pareto, paretonormal, NAME (tc's NAME.dist), PATH.dist, file:PATH" },
    Reject { source: NETEM_OPT, input: "pipe 1 config delay 10ms reorder 25% gap 5 gap 5", error: "1:48: invalid gap '5': 'gap' is given twice (with reorder and alone)" },
    Reject { source: NETEM_OPT, input: "pipe 1 config delay 10ms gap 5 reorder 25% gap 5", error: "1:30: invalid gap '5': 'gap' is given twice (with reorder and alone)" },
    Reject { source: NETEM_OPT, input: "pipe 1 config ecn noecn", error: "1:19: 'noecn' cannot be combined with 'ecn': 'ecn' was given at column 15" },
];

const SHAPER: &str = "ipfw(8) TRAFFIC SHAPER (DUMMYNET) CONFIGURATION";
const EX_SHAPING: &str = "ipfw(8) EXAMPLES, TRAFFIC SHAPING";
const EX_TABLES: &str = "ipfw(8) EXAMPLES, LOOKUP TABLES";
const EX_AQM: &str = "ipfw(8) EXAMPLES, CONFIGURING CODEL, PIE, FQ-CODEL AND FQ-PIE AQM";
const GRAMMAR: &str = "ipfw(8) PIPE, QUEUE AND SCHEDULER CONFIGURATION (the grammar)";
const TABLES: &str = "ipfw(8) LOOKUP TABLES (the table commands)";
const EX_DYNAMIC: &str = "ipfw(8) EXAMPLES, DYNAMIC RULES";
const STATEFUL: &str = "ipfw(8) STATEFUL FIREWALL, RULE OPTIONS keep-state, ACTIONS check-state";
const LAYER2: &str = "ipfw(8) RULE OPTIONS layer2, PACKET FLOW";

/// ipfw(8)/dnctl(8): each line as the page writes it (a leading `ipfw`
/// or `dnctl` is accepted and not printed back).
pub const IPFW: &[ReadBack] = &[
    ReadBack {
        source: SHAPER,
        input: "dnctl pipe 1 config bw 300Kbit/s",
        canonical: "pipe 1 config bw 300Kbit/s",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add prob 0.05 deny ip from any to any in",
        canonical: "add prob 0.05 deny ip from any to any in",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl add pipe 10 ip from any to any",
        canonical: "add pipe 10 ip from any to any",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 10 config plr 0.05",
        canonical: "pipe 10 config plr 0.05",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 1 ip from 192.168.2.0/24 to any out",
        canonical: "add pipe 1 ip from 192.168.2.0/24 to any out",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 1 config bw 300Kbit/s queue 50KBytes",
        canonical: "pipe 1 config bw 300Kbit/s queue 50KB",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 1 ip from any to any out",
        canonical: "add pipe 1 ip from any to any out",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 2 ip from any to any in",
        canonical: "add pipe 2 ip from any to any in",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 1 config bw 64Kbit/s queue 10Kbytes",
        canonical: "pipe 1 config bw 64Kbit/s queue 10KB",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 2 config bw 64Kbit/s queue 10Kbytes",
        canonical: "pipe 2 config bw 64Kbit/s queue 10KB",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 1 ip from any to any",
        canonical: "add pipe 1 ip from any to any",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 1 config bw 500Kbit/s queue 100 red 0.002/30/80/0.1",
        canonical: "pipe 1 config bw 500Kbit/s queue 100 red 0.002/30/80/0.1",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 1 config delay 250ms bw 1Mbit/s",
        canonical: "pipe 1 config bw 1Mbit/s delay 250ms",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 2 config delay 250ms bw 1Mbit/s",
        canonical: "pipe 2 config bw 1Mbit/s delay 250ms",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 1 tcp from any to any",
        canonical: "add pipe 1 tcp from any to any",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 1 udp from any to any",
        canonical: "add pipe 1 udp from any to any",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 1 config mask all",
        canonical: "pipe 1 config mask all",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "ipfw add pipe 2 ip from any to 192.168.2.0/24 in",
        canonical: "add pipe 2 ip from any to 192.168.2.0/24 in",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 1 config mask src-ip 0x000000ff bw 200Kbit/s queue 20Kbytes",
        canonical: "pipe 1 config bw 200Kbit/s queue 20KB mask src-ip 0x000000ff",
    },
    ReadBack {
        source: EX_SHAPING,
        input: "dnctl pipe 2 config mask dst-ip 0x000000ff bw 200Kbit/s queue 20Kbytes",
        canonical: "pipe 2 config bw 200Kbit/s queue 20KB mask dst-ip 0x000000ff",
    },
    ReadBack {
        source: EX_TABLES,
        input: "dnctl pipe 1 config bw 1000Kbyte/s",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: EX_TABLES,
        input: "dnctl pipe 4 config bw 4000Kbyte/s",
        canonical: "pipe 4 config bw 32Mbit/s",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table T1 create type addr",
        canonical: "table T1 create type addr",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table T1 add 192.168.2.0/24 1",
        canonical: "table T1 add 192.168.2.0/24 1",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table T1 add 192.168.0.0/27 4",
        canonical: "table T1 add 192.168.0.0/27 4",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table T1 add 192.168.0.2 1",
        canonical: "table T1 add 192.168.0.2 1",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw add pipe tablearg ip from 'table(T1)' to any",
        canonical: "add pipe tablearg ip from table(T1) to any",
    },
    // The same example with the table numbered (a number is a name of
    // digits; no create needed).
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table 1 add 192.168.2.0/24 1",
        canonical: "table 1 add 192.168.2.0/24 1",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table 1 add 192.168.0.0/27 4",
        canonical: "table 1 add 192.168.0.0/27 4",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw table 1 add 192.168.0.2 1",
        canonical: "table 1 add 192.168.0.2 1",
    },
    ReadBack {
        source: EX_TABLES,
        input: "ipfw add pipe tablearg ip from 'table(1)' to any",
        canonical: "add pipe tablearg ip from table(1) to any",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw table T1 create",
        canonical: "table T1 create",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw table T1 delete 192.168.0.2",
        canonical: "table T1 delete 192.168.0.2",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw table T1 flush",
        canonical: "table T1 flush",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw table T1 list",
        canonical: "table T1 list",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw table T1 destroy",
        canonical: "table T1 destroy",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw table all flush",
        canonical: "table all flush",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw add 100 pipe 4 ip from 'table(T1,4)' to any",
        canonical: "add 100 pipe 4 ip from table(T1,4) to any",
    },
    ReadBack {
        source: TABLES,
        input: "ipfw add 100 pipe tablearg ip from any to any dst-ip 'table(T1)'",
        canonical: "add 100 pipe tablearg ip from any to any dst-ip table(T1)",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl pipe 1 config bw 1mbits/s codel",
        canonical: "pipe 1 config bw 1Mbit/s codel",
    },
    ReadBack {
        source: EX_AQM,
        input: "ipfw add 100 pipe 1 ip from 192.168.0.0/24 to any",
        canonical: "add 100 pipe 1 ip from 192.168.0.0/24 to any",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl queue 1 config pipe 1 codel target 8ms interval 160ms ecn",
        canonical: "queue 1 config pipe 1 codel target 8ms interval 160ms ecn",
    },
    ReadBack {
        source: EX_AQM,
        input: "ipfw add 100 queue 1 ip from 192.168.0.0/24 to any",
        canonical: "add 100 queue 1 ip from 192.168.0.0/24 to any",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl pipe 1 config bw 1mbits/s pie",
        canonical: "pipe 1 config bw 1Mbit/s pie",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl queue 1 config pipe 1 pie target 20ms tupdate 30ms ecn",
        canonical: "queue 1 config pipe 1 pie target 20ms tupdate 30ms ecn",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl sched 1 config pipe 1 type fq_codel",
        canonical: "sched 1 config pipe 1 type fq_codel",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl queue 1 config sched 1",
        canonical: "queue 1 config sched 1",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl sched 1 config pipe 1 type fq_codel target 10ms noecn",
        canonical: "sched 1 config pipe 1 type fq_codel target 10ms noecn",
    },
    ReadBack {
        source: EX_AQM,
        input: "dnctl sched 1 config pipe 1 type fq_pie",
        canonical: "sched 1 config pipe 1 type fq_pie",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl sched 1 config pipe 1 type fq_codel ecn",
        canonical: "sched 1 config pipe 1 type fq_codel ecn",
    },
    ReadBack {
        source: GRAMMAR,
        input:
            "dnctl sched 1 config pipe 1 type fq_codel target 5ms interval 100ms ecn quantum 1514",
        canonical: "sched 1 config pipe 1 type fq_codel quantum 1514 target 5ms interval 100ms ecn",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl sched 1 config pipe 1 type fq_pie target 15ms ecn",
        canonical: "sched 1 config pipe 1 type fq_pie target 15ms ecn",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl sched 1 config pipe 1 type fq_pie noecn",
        canonical: "sched 1 config pipe 1 type fq_pie noecn",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config bw 1Mbits/s delay 20 burst 64KBytes",
        canonical: "pipe 1 config bw 1Mbit/s delay 20ms burst 64KB",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config bw 10KByte/s queue 20",
        canonical: "pipe 1 config bw 80Kbit/s queue 20",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config bw 10KBytes/s",
        canonical: "pipe 1 config bw 80Kbit/s",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config plr 0.001,0.01,0.5,0.3",
        canonical: "pipe 1 config plr 0.001,0.01,0.5,0.3",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config bw 1Mbit/s queue 50 gred 0.002/10/30/0.1 ecn",
        canonical: "pipe 1 config bw 1Mbit/s queue 50 gred 0.002/10/30/0.1 ecn",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config bw 1Mbit/s codel target 5ms interval 100ms noecn",
        canonical: "pipe 1 config bw 1Mbit/s codel target 5ms interval 100ms noecn",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl pipe 1 config bw 1Mbit/s noerror",
        canonical: "pipe 1 config bw 1Mbit/s noerror",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl queue 2 config pipe 1 weight 20 mask src-ip 0xffffffff buckets 256",
        canonical: "queue 2 config weight 20 pipe 1 mask src-ip 0xffffffff buckets 256",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl queue 3 config sched 1 weight 10 queue 20 noecn",
        canonical: "queue 3 config weight 10 sched 1 queue 20 noecn",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl sched 2 config pipe 2 type qfq",
        canonical: "sched 2 config pipe 2 type qfq",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl sched 3 config pipe 3 type wf2q+ mask dst-ip 0x000000ff",
        canonical: "sched 3 config pipe 3 type wf2q+ mask dst-ip 0x000000ff",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl sched 4 config pipe 4 type fq_pie target 20ms quantum 3000",
        canonical: "sched 4 config pipe 4 type fq_pie quantum 3000 target 20ms",
    },
    ReadBack {
        source: GRAMMAR,
        input: "ipfw -q pipe 1 config bw 2Mbit/s",
        canonical: "pipe 1 config bw 2Mbit/s",
    },
    ReadBack {
        source: GRAMMAR,
        input: "dnctl -q pipe 1 delete",
        canonical: "pipe 1 delete",
    },
    ReadBack {
        source: EX_DYNAMIC,
        input: "ipfw add check-state",
        canonical: "add check-state",
    },
    ReadBack {
        source: STATEFUL,
        input: "ipfw add pipe 1 tcp from any to any keep-state",
        canonical: "add pipe 1 tcp from any to any keep-state",
    },
    ReadBack {
        source: STATEFUL,
        input: "ipfw add 100 check-state :OUTBOUND",
        canonical: "add 100 check-state :OUTBOUND",
    },
    ReadBack {
        source: STATEFUL,
        input: "ipfw add check-state :any",
        canonical: "add check-state :any",
    },
    ReadBack {
        source: STATEFUL,
        input: "ipfw add check-state :default",
        canonical: "add check-state",
    },
    ReadBack {
        source: STATEFUL,
        input: "ipfw add 200 pipe 1 ip from 192.168.0.0/24 to any keep-state :OUTBOUND",
        canonical: "add 200 pipe 1 ip from 192.168.0.0/24 to any keep-state :OUTBOUND",
    },
    ReadBack {
        source: STATEFUL,
        input: "ipfw add allow tcp from 192.168.0.0/24 to any keep-state :default",
        canonical: "add allow tcp from 192.168.0.0/24 to any keep-state",
    },
    ReadBack {
        source: LAYER2,
        input: "ipfw add pipe 1 ip from any to any layer2",
        canonical: "add pipe 1 ip from any to any layer2",
    },
    ReadBack {
        source: LAYER2,
        input: "ipfw add allow ip from any to any not layer2",
        canonical: "add allow ip from any to any not layer2",
    },
    ReadBack {
        source: LAYER2,
        input: "ipfw add 100 skipto 1000 ip from any to any layer2 in",
        canonical: "add 100 skipto 1000 ip from any to any layer2 in",
    },
];

/// Refusals of ipfw/dnctl lines, with their messages.
pub const IPFW_REJECT: &[Reject] = &[
    Reject { source: SHAPER, input: "dnctl pipe 1 config bw tun0", error: "1:24: invalid rate 'tun0': rates are written like 10Mbit/s" },
    Reject { source: "ipfw(8) vs tc(8) units", input: "dnctl pipe 1 config bw 10Mbps", error: "1:24: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)" },
    Reject { source: "ipfw(8) vs tc(8) units", input: "dnctl pipe 1 config bw 1kbps", error: "1:24: unknown unit 'kbps' in '1kbps': did you mean Kbit/s or KByte/s? 'kbps' is Kbit/s to ipfw, KByte/s to tc (netem's rate takes tc's words)" },
    Reject { source: EX_AQM, input: "dnctl sched 1 config pipe 2 type fq_codel", error: "1:27: sched 1 serves pipe 1, not pipe 2: a scheduler takes its pipe's number: sched 2 config pipe 2 ..." },
    Reject { source: EX_AQM, input: "dnctl sched 1 config type fq_sfq", error: "1:27: unknown scheduler type 'fq_sfq': known types: fifo, rr, drr, wf2q+, qfq, prio, fq_codel, fq_pie" },
    Reject { source: GRAMMAR, input: "dnctl queue 1 config pipe 1 ecn noecn", error: "1:33: duplicate parameter 'noecn': 'ecn' was already given at column 29" },
    Reject { source: GRAMMAR, input: "dnctl pipe 1 config plr 0.1,0.2", error: "1:25: ipfw's Gilbert-Elliott plr takes four probabilities: e.g. plr 0.001,0.01,0.5,0.3 (K,p,H,r)" },
    Reject { source: GRAMMAR, input: "dnctl pipe 1 config plr 0.1,0.2,0.3,0.4 loss 1%", error: "1:25: invalid plr '0.1': ipfw's 'plr K,p,H,r' is the loss model: no other plr or loss" },
    Reject { source: GRAMMAR, input: "dnctl", error: "1:6: missing command after 'dnctl': commands: pipe, sched, queue, add, delete, flush, list, show, set, table" },
    Reject { source: "ipfw(8) ACTIONS", input: "ipfw add 100 unreach 256 ip from any to any", error: "1:22: unreachable code 256 is out of range 0..255: a code 0..255 or net, host, protocol, port, needfrag, srcfail, net-unknown, host-unknown, isolated, net-prohib, host-prohib, tosnet, toshost, filter-prohib, host-precedence, precedence-cutoff" },
    Reject { source: "ipfw(8) ACTIONS", input: "ipfw add 100 unreach6 admin ip6 from any to any", error: "1:14: action 'unreach6' is not supported yet" },
    Reject { source: EX_TABLES, input: "ipfw table T2 create type addr valtype ipv4", error: "1:32: table option 'valtype' is not supported yet: write table NAME create [type addr]" },
    Reject { source: EX_TABLES, input: "ipfw table IN create type iface valtype skipto,fib", error: "1:27: table type 'iface' is not supported yet: pipelab's tables hold addresses and networks: type addr" },
    Reject { source: EX_TABLES, input: "ipfw table fl create type flow:src-ip,proto,dst-ip,dst-port", error: "1:27: table type 'flow:src-ip' is not supported yet: pipelab's tables hold addresses and networks: type addr" },
    Reject { source: TABLES, input: "ipfw table T1 swap T2", error: "1:15: table command 'swap' is not supported yet: table commands: add, delete, create, destroy, flush, list" },
    Reject { source: TABLES, input: "ipfw table bad/name create", error: "1:12: invalid table name 'bad/name': a table is a number 0..65535 or a name of 1..63 of A-Z a-z 0-9 _ - . (not 'all')" },
    Reject { source: TABLES, input: "ipfw table all create", error: "1:16: 'table all create' is not possible: 'table all' takes flush or list" },
    Reject { source: TABLES, input: "ipfw table T1 create type addr type addr", error: "1:32: duplicate 'type'" },
    Reject { source: GRAMMAR, input: "dnctl sched 1 config pipe 1 type fq_codel ecn noecn", error: "1:47: duplicate parameter 'noecn': 'ecn' was already given at column 43" },
    Reject { source: GRAMMAR, input: "dnctl sched 1 config pipe 1 type drr ecn", error: "1:38: invalid ecn: 'ecn' is a parameter of type fq_codel or fq_pie, not drr" },
    Reject { source: EX_DYNAMIC, input: "ipfw add deny tcp from any to any established", error: "1:35: option 'established' is not supported yet" },
    Reject { source: EX_DYNAMIC, input: "ipfw add allow tcp from 192.168.0.0/24 to any setup keep-state", error: "1:47: option 'setup' is not supported yet" },
    Reject { source: EX_DYNAMIC, input: "ipfw add allow tcp from any to me limit src-addr 4", error: "1:35: option 'limit' is not supported yet" },
    Reject { source: STATEFUL, input: "ipfw add allow ip from any to any record-state", error: "1:35: option 'record-state' is not supported yet" },
    Reject { source: STATEFUL, input: "ipfw add check-state ip from any to any", error: "1:22: unexpected 'ip': check-state has no body: write add N check-state [:FLOW] and match in the keep-state rule" },
    Reject { source: STATEFUL, input: "ipfw add pipe 1 ip from any to any keep-state :any", error: "1:47: ':any' names every flow: it is for check-state: keep-state takes a name of its own, e.g. keep-state :web" },
    Reject { source: STATEFUL, input: "ipfw add pipe 1 ip from any to any not keep-state", error: "1:40: 'keep-state' cannot be negated: keep-state is an instruction, not a condition" },
    Reject { source: STATEFUL, input: "ipfw add pipe 1 ip from any to any keep-state keep-state", error: "1:47: duplicate 'keep-state'" },
    Reject { source: STATEFUL, input: "ipfw add pipe 1 ip from any to any keep-state :bad/flow", error: "1:47: invalid flow name ':bad/flow': a flow name is 1..63 of A-Z a-z 0-9 _ - ., e.g. keep-state :web" },
];

// FreeBSD's own parser: the place in the FreeBSD source each form
// follows.

const BSD_BW: &str = "sbin/ipfw/dummynet.c read_bandwidth";
const BSD_PARAMS: &str = "sbin/ipfw/dummynet.c dummynet_params (bandwidth is bw)";
const BSD_QUEUE: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_QUEUE";
const BSD_BURST: &str =
    "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_BURST; lib/libutil/expand_number.c expand_number";
const BSD_DELAY: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_DELAY";
const BSD_PLR: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_PLR";
const BSD_NOERROR: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_NOERROR";
const BSD_RED: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_RED/TOK_GRED";
const BSD_ECN: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_ECN";
const BSD_DROPTAIL: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_DROPTAIL";
const BSD_MASK: &str =
    "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_MASK/TOK_SCHED_MASK/TOK_FLOW_MASK";
const BSD_BUCKETS: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_BUCKETS";
const BSD_AQM: &str = "sbin/ipfw/dummynet.c process_extra_parms, time_to_us";
const BSD_TYPE: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_TYPE; process_extra_parms";
const BSD_FLOWSET: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_PIPE/TOK_SCHED, TOK_WEIGHT";
const BSD_LMAX: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_LMAX";
const BSD_PRI: &str = "sbin/ipfw/dummynet.c ipfw_config_pipe, TOK_PRI";
pub const BSD_RULES: &str = "sbin/ipfw/ipfw2.c ipfw_add, ipfw_delete";
const BSD_PROTO: &str =
    "sbin/ipfw/ipfw2.c add_proto_compat, add_proto0 (getprotobyname, lib/libc/net/protocols)";

/// What FreeBSD's parser accepts (`sbin/ipfw/dummynet.c`, `ipfw_config_pipe`
/// and the functions it calls; `sbin/ipfw/ipfw2.c` for a rule's protocol),
/// one row per form, with the source location it follows and its meaning
/// there: rates with K, M, G = 1000 and bytes by the letter B
/// (`read_bandwidth`); queues in slots, or in bytes with K = 1024
/// (`TOK_QUEUE`); bursts with K, M, G = 1024 (`expand_number`); delays in
/// milliseconds bare; AQM times in milliseconds bare (`time_to_us`); `/N`
/// in a mask keeping the low N bits; protocols by the names of FreeBSD's
/// protocols database.
pub const FREEBSD: &[ReadBack] = &[
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mbit/s",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mb/s",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mbits/s",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mbit",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mb",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1M",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 10m",
        canonical: "pipe 1 config bw 10Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1MBit/s",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1MB/s",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1MB",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1MBps",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1MByte/s",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mbyte/s",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Mbytes",
        canonical: "pipe 1 config bw 8Mbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1Kbytes/s",
        canonical: "pipe 1 config bw 8Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1KByte/s",
        canonical: "pipe 1 config bw 8Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1KB/s",
        canonical: "pipe 1 config bw 8Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 64Kb/s",
        canonical: "pipe 1 config bw 64Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 64K",
        canonical: "pipe 1 config bw 64Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 64k",
        canonical: "pipe 1 config bw 64Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 2G",
        canonical: "pipe 1 config bw 2Gbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 2Gbit/s",
        canonical: "pipe 1 config bw 2Gbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1000bit/s",
        canonical: "pipe 1 config bw 1Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1000b/s",
        canonical: "pipe 1 config bw 1Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1000",
        canonical: "pipe 1 config bw 1Kbit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 1500",
        canonical: "pipe 1 config bw 1500bit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 100B/s",
        canonical: "pipe 1 config bw 800bit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 100bytes/s",
        canonical: "pipe 1 config bw 800bit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 100Bps",
        canonical: "pipe 1 config bw 800bit/s",
    },
    ReadBack {
        source: BSD_BW,
        input: "dnctl pipe 1 config bw 0",
        canonical: "pipe 1 config bw unlimited",
    },
    ReadBack {
        source: BSD_PARAMS,
        input: "dnctl pipe 1 config bandwidth 1Mbit/s",
        canonical: "pipe 1 config bw 1Mbit/s",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 50",
        canonical: "pipe 1 config queue 50",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 100KB",
        canonical: "pipe 1 config queue 100KB",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 100Kbytes",
        canonical: "pipe 1 config queue 100KB",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 100KBytes",
        canonical: "pipe 1 config queue 100KB",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 100K",
        canonical: "pipe 1 config queue 100KB",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 100k",
        canonical: "pipe 1 config queue 100KB",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 1500B",
        canonical: "pipe 1 config queue 1500B",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 1500bytes",
        canonical: "pipe 1 config queue 1500B",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl pipe 1 config queue 1500byte",
        canonical: "pipe 1 config queue 1500B",
    },
    ReadBack {
        source: BSD_QUEUE,
        input: "dnctl queue 1 config pipe 1 queue 20K",
        canonical: "queue 1 config pipe 1 queue 20KB",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 64K",
        canonical: "pipe 1 config bw 1Mbit/s burst 64KB",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 64KB",
        canonical: "pipe 1 config bw 1Mbit/s burst 64KB",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 64kb",
        canonical: "pipe 1 config bw 1Mbit/s burst 64KB",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 1m",
        canonical: "pipe 1 config bw 1Mbit/s burst 1MB",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 2G",
        canonical: "pipe 1 config bw 1Mbit/s burst 2048MB",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 1500",
        canonical: "pipe 1 config bw 1Mbit/s burst 1500B",
    },
    ReadBack {
        source: BSD_BURST,
        input: "dnctl pipe 1 config bw 1Mbit/s burst 1500b",
        canonical: "pipe 1 config bw 1Mbit/s burst 1500B",
    },
    ReadBack {
        source: BSD_DELAY,
        input: "dnctl pipe 1 config delay 20",
        canonical: "pipe 1 config delay 20ms",
    },
    ReadBack {
        source: BSD_DELAY,
        input: "dnctl pipe 1 config delay 250ms",
        canonical: "pipe 1 config delay 250ms",
    },
    ReadBack {
        source: BSD_PLR,
        input: "dnctl pipe 1 config plr 0.05",
        canonical: "pipe 1 config plr 0.05",
    },
    ReadBack {
        source: BSD_PLR,
        input: "dnctl pipe 1 config plr 1",
        canonical: "pipe 1 config plr 1",
    },
    ReadBack {
        source: BSD_NOERROR,
        input: "dnctl pipe 1 config plr 0.1 noerror",
        canonical: "pipe 1 config plr 0.1 noerror",
    },
    ReadBack {
        source: BSD_RED,
        input: "dnctl pipe 1 config queue 50 red 0.002/5/15/0.1",
        canonical: "pipe 1 config queue 50 red 0.002/5/15/0.1",
    },
    ReadBack {
        source: BSD_RED,
        input: "dnctl pipe 1 config queue 50 gred 0.002/5/15/0.1",
        canonical: "pipe 1 config queue 50 gred 0.002/5/15/0.1",
    },
    ReadBack {
        source: BSD_RED,
        input: "dnctl pipe 1 config queue 100KB red 0.002/5K/15K/0.1",
        canonical: "pipe 1 config queue 100KB red 0.002/5120/15360/0.1",
    },
    ReadBack {
        source: BSD_RED,
        input: "dnctl queue 1 config pipe 1 queue 50 red 0.002/5/15/0.1",
        canonical: "queue 1 config pipe 1 queue 50 red 0.002/5/15/0.1",
    },
    ReadBack {
        source: BSD_ECN,
        input: "dnctl pipe 1 config queue 50 red 0.002/5/15/0.1 ecn",
        canonical: "pipe 1 config queue 50 red 0.002/5/15/0.1 ecn",
    },
    ReadBack {
        source: BSD_DROPTAIL,
        input: "dnctl pipe 1 config bw 1Mbit/s queue 50 droptail",
        canonical: "pipe 1 config bw 1Mbit/s queue 50 droptail",
    },
    ReadBack {
        source: BSD_DROPTAIL,
        input: "dnctl queue 1 config pipe 1 droptail",
        canonical: "queue 1 config pipe 1 droptail",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask all",
        canonical: "pipe 1 config mask all",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask src-ip 0xffffff00 dst-port 0xffff",
        canonical: "pipe 1 config mask src-ip 0xffffff00 dst-port 0xffff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask dst-ip /8",
        canonical: "pipe 1 config mask dst-ip 0x000000ff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask src-ip /32",
        canonical: "pipe 1 config mask src-ip 0xffffffff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask src-port /16 proto /8",
        canonical: "pipe 1 config mask src-port 0xffff proto 0xff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask proto 6",
        canonical: "pipe 1 config mask proto 0x06",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask src-ipv6 /64",
        canonical: "pipe 1 config mask src-ip6 /64",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config mask dst-ip6 48",
        canonical: "pipe 1 config mask dst-ip6 /48",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config sched_mask dst-ip 0x000000ff",
        canonical: "pipe 1 config mask dst-ip 0x000000ff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl pipe 1 config flow_mask src-ip 0x000000ff",
        canonical: "pipe 1 config mask src-ip 0x000000ff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl queue 1 config pipe 1 flow_mask src-ip 0xffffffff",
        canonical: "queue 1 config pipe 1 mask src-ip 0xffffffff",
    },
    ReadBack {
        source: BSD_MASK,
        input: "dnctl sched 1 config pipe 1 sched_mask dst-ip 0x000000ff type wf2q+",
        canonical: "sched 1 config pipe 1 type wf2q+ mask dst-ip 0x000000ff",
    },
    ReadBack {
        source: BSD_BUCKETS,
        input: "dnctl pipe 1 config mask all buckets 64",
        canonical: "pipe 1 config mask all buckets 64",
    },
    ReadBack {
        source: BSD_BUCKETS,
        input: "dnctl queue 1 config pipe 1 mask src-ip 0xffffffff buckets 256",
        canonical: "queue 1 config pipe 1 mask src-ip 0xffffffff buckets 256",
    },
    ReadBack {
        source: BSD_BUCKETS,
        input: "dnctl sched 1 config pipe 1 mask dst-ip 0xffffffff buckets 16",
        canonical: "sched 1 config pipe 1 mask dst-ip 0xffffffff buckets 16",
    },
    ReadBack {
        source: BSD_AQM,
        input: "dnctl pipe 1 config codel",
        canonical: "pipe 1 config codel",
    },
    ReadBack {
        source: BSD_AQM,
        input: "dnctl pipe 1 config codel target 5 interval 100",
        canonical: "pipe 1 config codel target 5ms interval 100ms",
    },
    ReadBack {
        source: BSD_AQM,
        input: "dnctl pipe 1 config codel target 500us interval 0.1s",
        canonical: "pipe 1 config codel target 500us interval 100ms",
    },
    ReadBack {
        source: BSD_AQM,
        input: "dnctl pipe 1 config codel target 5ms noecn",
        canonical: "pipe 1 config codel target 5ms noecn",
    },
    ReadBack {
        source: BSD_AQM,
        input:
            "dnctl pipe 1 config pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 max_burst 150ms",
        canonical:
            "pipe 1 config pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 max_burst 150ms",
    },
    ReadBack {
        source: BSD_AQM,
        input: "dnctl pipe 1 config pie target 20 tupdate 30",
        canonical: "pipe 1 config pie target 20ms tupdate 30ms",
    },
    ReadBack {
        source: BSD_AQM,
        input: "dnctl queue 1 config pipe 1 pie target 15ms ecn",
        canonical: "queue 1 config pipe 1 pie target 15ms ecn",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type fq_codel target 5 interval 100 quantum 1514 ecn",
        canonical: "sched 1 config pipe 1 type fq_codel quantum 1514 target 5ms interval 100ms ecn",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type fq_pie target 15ms quantum 1514 noecn",
        canonical: "sched 1 config pipe 1 type fq_pie quantum 1514 target 15ms noecn",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type fifo",
        canonical: "sched 1 config pipe 1 type fifo",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type rr",
        canonical: "sched 1 config pipe 1 type rr",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type drr",
        canonical: "sched 1 config pipe 1 type drr",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type wf2q+",
        canonical: "sched 1 config pipe 1 type wf2q+",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type qfq",
        canonical: "sched 1 config pipe 1 type qfq",
    },
    ReadBack {
        source: BSD_TYPE,
        input: "dnctl sched 1 config pipe 1 type prio",
        canonical: "sched 1 config pipe 1 type prio",
    },
    ReadBack {
        source: BSD_FLOWSET,
        input: "dnctl queue 1 config sched 1 weight 20",
        canonical: "queue 1 config weight 20 sched 1",
    },
    ReadBack {
        source: BSD_FLOWSET,
        input: "dnctl queue 1 config pipe 2 weight 5",
        canonical: "queue 1 config weight 5 pipe 2",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 icmp from any to any",
        canonical: "add 100 pipe 1 icmp from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 TCP from any to any",
        canonical: "add 100 pipe 1 tcp from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 udp from any to any",
        canonical: "add 100 pipe 1 udp from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 UDP from any to any",
        canonical: "add 100 pipe 1 udp from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 all from any to any",
        canonical: "add 100 pipe 1 ip from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 ip4 from any to any",
        canonical: "add 100 pipe 1 ip4 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 ipv4 from any to any",
        canonical: "add 100 pipe 1 ip4 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 ipv6 from any to any",
        canonical: "add 100 pipe 1 ip6 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 sctp from any to any",
        canonical: "add 100 pipe 1 132 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 gre from any to any",
        canonical: "add 100 pipe 1 47 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 esp from any to any",
        canonical: "add 100 pipe 1 50 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 ah from any to any",
        canonical: "add 100 pipe 1 51 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 ipv6-icmp from any to any",
        canonical: "add 100 pipe 1 58 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 icmp6 from any to any",
        canonical: "add 100 pipe 1 58 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 igmp from any to any",
        canonical: "add 100 pipe 1 2 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 ospf from any to any",
        canonical: "add 100 pipe 1 89 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 udplite from any to any",
        canonical: "add 100 pipe 1 136 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 vrrp from any to any",
        canonical: "add 100 pipe 1 112 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 pim from any to any",
        canonical: "add 100 pipe 1 103 from any to any",
    },
    ReadBack {
        source: BSD_PROTO,
        input: "ipfw add 100 pipe 1 47 from any to any",
        canonical: "add 100 pipe 1 47 from any to any",
    },
];

/// What FreeBSD's parser accepts and pipelab cannot emulate, or reads
/// against what the words seem to say, refused with messages naming it;
/// and spellings FreeBSD reads past that pipelab refuses.
pub const FREEBSD_REJECT: &[Reject] = &[
    Reject { source: BSD_BW, input: "dnctl pipe 1 config bw 1MBIT/s", error: "1:24: ambiguous unit 'MBIT/s' in '1MBIT/s': dummynet reads a capital B not followed by a small i as bytes: write Mbit/s or MByte/s" },
    Reject { source: BSD_BW, input: "dnctl pipe 1 config bw 10Mbit/sec", error: "1:24: unknown unit 'Mbit/sec' in '10Mbit/sec': did you mean Mbit/s?" },
    Reject { source: BSD_BW, input: "dnctl pipe 1 config bw 10Mibit/s", error: "1:24: unknown unit 'Mibit/s' in '10Mibit/s': known rate units: bit/s, Kbit/s, Mbit/s, Gbit/s, Byte/s, KByte/s, MByte/s, GByte/s" },
    Reject { source: BSD_BW, input: "dnctl pipe 1 config bw em0", error: "1:24: invalid rate 'em0': rates are written like 10Mbit/s" },
    Reject { source: BSD_QUEUE, input: "dnctl pipe 1 config queue 100Kbit", error: "1:27: unknown unit 'Kbit' in '100Kbit': sizes are in bytes (KB = 1024 bytes), e.g. 100KB" },
    Reject { source: BSD_BURST, input: "dnctl pipe 1 config burst 64Kbit", error: "1:27: unknown unit 'Kbit' in '64Kbit': sizes are in bytes (KB = 1024 bytes), e.g. 100KB" },
    Reject { source: BSD_FLOWSET, input: "dnctl pipe 1 config weight 10", error: "1:21: 'weight' is not a pipe's parameter: a weight is a flow queue's: queue N config pipe P weight W" },
    Reject { source: BSD_FLOWSET, input: "dnctl pipe 1 config sched 2", error: "1:21: 'sched' is not a pipe's parameter: a pipe's queue feeds the pipe itself: a flow queue names its scheduler, queue N config sched S" },
    Reject { source: BSD_TYPE, input: "dnctl pipe 1 config type fq_codel", error: "1:21: 'type' is not a pipe's parameter: a pipe's scheduler is configured as a scheduler: sched N config pipe N type T" },
    Reject { source: BSD_LMAX, input: "dnctl pipe 1 config lmax 1500", error: "1:21: 'lmax' is not a pipe's parameter: QFQ's largest packet is its quantum: sched N config pipe N type qfq quantum BYTES" },
    Reject { source: BSD_LMAX, input: "dnctl queue 1 config pipe 1 maxlen 1500", error: "1:29: queue parameter 'maxlen' is not supported yet: QFQ's largest packet is its quantum: sched N config pipe N type qfq quantum BYTES" },
    Reject { source: BSD_PRI, input: "dnctl queue 1 config pipe 1 pri 3", error: "1:29: queue parameter 'pri' is not supported yet: the prio scheduler takes a flow queue's priority from its weight, as dummynet's dn_sched_prio.c: queue N config sched S weight W" },
    Reject { source: BSD_PLR, input: "dnctl queue 1 config pipe 1 plr 0.1", error: "1:29: queue parameter 'plr' is not supported yet: a flow queue's losses are its pipe's: pipe P config plr X" },
    Reject { source: BSD_DROPTAIL, input: "dnctl pipe 1 config red 0.002/5/15/0.1 droptail", error: "1:40: 'droptail' cannot be combined with 'red': droptail is the tail-drop queue, without red, gred, codel or pie; 'red' was given at column 21" },
    Reject { source: BSD_DROPTAIL, input: "dnctl queue 1 config pipe 1 droptail codel", error: "1:38: 'codel' cannot be combined with 'droptail': droptail is the tail-drop queue, without red, gred, codel or pie" },
    Reject { source: BSD_TYPE, input: "dnctl sched 1 config pipe 1 type fq_codel limit 10240", error: "1:43: sched parameter 'limit' is not supported yet: pipelab's fq_codel and fq_pie take quantum, target, interval, ecn and noecn" },
    Reject { source: BSD_TYPE, input: "dnctl sched 1 config pipe 1 type fq_codel flows 1024", error: "1:43: sched parameter 'flows' is not supported yet: pipelab's fq_codel and fq_pie take quantum, target, interval, ecn and noecn" },
    Reject { source: BSD_TYPE, input: "dnctl sched 1 config pipe 1 type fq_pie tupdate 15ms", error: "1:41: sched parameter 'tupdate' is not supported yet: pipelab's fq_codel and fq_pie take quantum, target, interval, ecn and noecn" },
    Reject { source: BSD_TYPE, input: "dnctl sched 1 config pipe 1 type fq_pie capdrop", error: "1:41: sched parameter 'capdrop' is not supported yet: pipelab's fq_codel and fq_pie take quantum, target, interval, ecn and noecn" },
    Reject { source: BSD_TYPE, input: "dnctl sched 1 config pipe 1 fq_codel", error: "1:29: unknown sched parameter 'fq_codel': a scheduler's kind follows 'type': type fq_codel" },
    Reject { source: BSD_AQM, input: "dnctl pipe 1 config pie capdrop", error: "1:25: pie parameter 'capdrop' is not supported yet: pipelab's PIE takes target, tupdate, alpha, beta and max_burst (and the pipe's ecn or noecn)" },
    Reject { source: BSD_AQM, input: "dnctl pipe 1 config pie target 15ms onoff", error: "1:37: pie parameter 'onoff' is not supported yet: pipelab's PIE takes target, tupdate, alpha, beta and max_burst (and the pipe's ecn or noecn)" },
    Reject { source: BSD_AQM, input: "dnctl pipe 1 config pie max_ecnth 0.1", error: "1:25: pie parameter 'max_ecnth' is not supported yet: pipelab's PIE takes target, tupdate, alpha, beta and max_burst (and the pipe's ecn or noecn)" },
    Reject { source: BSD_AQM, input: "dnctl pipe 1 config codel limit 100", error: "1:27: 'limit' is not a parameter of codel: dummynet: limit is for fq_codel; a queue's limit is queue N" },
    Reject { source: BSD_AQM, input: "dnctl pipe 1 config pie quantum 1514", error: "1:25: 'quantum' is not a parameter of pie: dummynet: quantum is for fq_pie; a queue's limit is queue N" },
    Reject { source: BSD_AQM, input: "dnctl pipe 1 config codel target 5furlongs", error: "1:34: unknown unit 'furlongs' in '5furlongs': known duration units: s, ms, us, ns" },
    Reject { source: BSD_MASK, input: "dnctl pipe 1 config mask flow-id 0xfffff", error: "1:26: mask 'flow-id' is not supported yet: pipelab's masks keep addresses, ports and the protocol: all, src-ip, dst-ip, src-ip6, dst-ip6, src-port, dst-port, proto" },
    Reject { source: BSD_MASK, input: "dnctl pipe 1 config mask queue", error: "1:26: mask 'queue' is not supported yet: pipelab's instances are keyed by addresses, ports and the protocol" },
    Reject { source: BSD_MASK, input: "dnctl pipe 1 config mask dst-port /17", error: "1:35: invalid port mask '/17': /N keeps the low N bits, N in 0..16 (dummynet's reading); or write 0x0..0xffff" },
    Reject { source: BSD_MASK, input: "dnctl pipe 1 config mask proto 0x100", error: "1:32: invalid proto mask '0x100': expected 0x0..0xff or 0..255" },
    Reject { source: BSD_PROTO, input: "ipfw add 100 pipe 1 divert from any to any", error: "1:21: unknown protocol 'divert': protocols: ip, all, ip4, ip6, a name of FreeBSD's /etc/protocols (tcp, udp, icmp, sctp, gre, ipv6-icmp, ...), or a number 0..255" },
    Reject { source: BSD_PROTO, input: "ipfw add 100 pipe 1 sctpp from any to any", error: "1:21: unknown protocol 'sctpp': protocols: ip, all, ip4, ip6, a name of FreeBSD's /etc/protocols (tcp, udp, icmp, sctp, gre, ipv6-icmp, ...), or a number 0..255" },
];
