//! The hostile suite of configuration text, through the real `pipelab
//! check`: each case is a file's bytes and its expected outcome, a
//! refusal with the exact message at its `line:column` (and the hint,
//! where the language gives one), or the canonical text printed back.
//!
//! * every error class of the language, each at its position (a bad word
//!   on the third line is named at line 3);
//! * values: huge, negative, NaN, infinite, beyond 64 bits, finer than a
//!   nanosecond, exponents;
//! * every wrong spelling of a unit of `bw`, `delay`, `queue` and `burst`,
//!   with the hint that names the right one;
//! * garbage, binary and other encodings (UTF-16, Latin-1, overlong UTF-8,
//!   invisible and bidi characters, an ELF or gzip header, JSON, a shell
//!   script);
//! * huge files and lines: over the 64 MiB cap, a 10 MB line, a million
//!   blank lines before an error, 100,000 errors, 50,000 pipes, a rule
//!   with a 100,000-address list, brackets 100,000 deep;
//! * odd but valid text, accepted.
//!
//! Every case runs within a time bound (a hang fails), and none may
//! panic. `case_count` counts the cases (docs/HOSTILE.md).

mod hostile;

use hostile::{all_pass, pipelab, tally, verdict, Outcome, BOUND};
use std::time::Duration;
use Outcome::{Accepted, Rejected};

/// `pipelab check` of a file holding `bytes`: the outcome checked, the
/// failure if not.
fn check(
    dir: &std::path::Path,
    case: &str,
    bytes: &[u8],
    want: Outcome,
    bound: Duration,
) -> Option<String> {
    let f = dir.join("case.conf");
    std::fs::write(&f, bytes).expect("write the case");
    let name = f.display().to_string();
    let ran = pipelab(&["check", &name]);
    verdict(&ran, want, &name, bound)
        .err()
        .map(|e| format!("{case}: {e}"))
}

/// (case, the file's bytes, outcome: the refusal's first lines
/// `error: MESSAGE\n --> FILE:LINE:COLUMN`, or text of the canonical form)
const TEXT: &[(&str, &[u8], Outcome)] = &[
    (
        "an unknown command on line 3",
        b"pipe 1 config\n# a comment\nfrob 1\n",
        Rejected(2, "error: unknown command 'frob'\n --> FILE:3:1"),
    ),
    (
        "an unknown pipe command",
        b"pipe 1 configure\n",
        Rejected(2, "error: unknown pipe command 'configure'\n --> FILE:1:8"),
    ),
    (
        "a pipe without its number",
        b"pipe\n",
        Rejected(2, "error: missing pipe number after 'pipe'\n --> FILE:1:5"),
    ),
    (
        "a pipe number that is a word",
        b"pipe x config\n",
        Rejected(2, "error: invalid pipe number 'x'\n --> FILE:1:6"),
    ),
    (
        "a pipe number beyond u64",
        b"pipe 99999999999999999999 config\n",
        Rejected(2, "error: pipe number 99999999999999999999 is out of range 1..65535\n --> FILE:1:6"),
    ),
    (
        "a negative pipe number",
        b"pipe -1 config\n",
        Rejected(2, "error: invalid pipe number '-1'\n --> FILE:1:6"),
    ),
    (
        "a pipe number out of range",
        b"pipe 65536 config\n",
        Rejected(2, "error: pipe number 65536 is out of range 1..65535\n --> FILE:1:6"),
    ),
    (
        "an unknown pipe parameter",
        b"pipe 1 config bandwith 1Mbit/s\n",
        Rejected(2, "error: unknown pipe parameter 'bandwith'\n --> FILE:1:15"),
    ),
    (
        "a parameter without its value",
        b"pipe 1 config bw\n",
        Rejected(2, "error: missing value after 'bw'\n --> FILE:1:17"),
    ),
    (
        "a parameter given twice",
        b"pipe 1 config bw 1Mbit/s delay 2ms bw 2Mbit/s\n",
        Rejected(2, "error: duplicate parameter 'bw'\n --> FILE:1:36"),
    ),
    (
        "a word after a complete command",
        b"pipe 1 delete now\n",
        Rejected(2, "error: unexpected 'now' at end of command\n --> FILE:1:15"),
    ),
    (
        "rule number 0",
        b"add 0 allow\n",
        Rejected(2, "error: rule number 0 is out of range 1..65534\n --> FILE:1:5"),
    ),
    (
        "rule number 65535, the default rule",
        b"add 65535 allow\n",
        Rejected(2, "error: rule number 65535 is out of range 1..65534\n --> FILE:1:5"),
    ),
    (
        "an unknown action",
        b"add 100 reroute 10.0.0.1\n",
        Rejected(2, "error: unknown action 'reroute'\n --> FILE:1:9"),
    ),
    (
        "an action not supported",
        b"add 100 fwd 10.0.0.1\n",
        Rejected(2, "error: action 'fwd' is not supported yet\n --> FILE:1:9"),
    ),
    (
        "a rule without an action",
        b"add 100\n",
        Rejected(2, "error: missing action after '100'\n --> FILE:1:8"),
    ),
    (
        "an unknown protocol",
        b"add 100 allow sctpp from any to any\n",
        Rejected(2, "error: unknown protocol 'sctpp'\n --> FILE:1:15"),
    ),
    (
        "a protocol number above 255",
        b"add 100 allow 256 from any to any\n",
        Rejected(2, "error: protocol number 256 is out of range 0..255\n --> FILE:1:15"),
    ),
    (
        "an invalid IPv6 address",
        b"add 100 allow ip from 2001:db8::zz to any\n",
        Rejected(2, "error: invalid address '2001:db8::zz'\n --> FILE:1:23"),
    ),
    (
        "a prefix longer than 32",
        b"add 100 allow ip from 10.0.0.0/33 to any\n",
        Rejected(2, "error: invalid prefix length 33 in '10.0.0.0/33' (at most 32)\n --> FILE:1:23"),
    ),
    (
        "a port above 65535",
        b"add 100 allow tcp from any 80000 to any\n",
        Rejected(2, "error: port 80000 is out of range 0..65535\n --> FILE:1:28"),
    ),
    (
        "a reversed port range",
        b"add 100 allow tcp from any 2000-1000 to any\n",
        Rejected(2, "error: port range '2000-1000' is reversed\n --> FILE:1:28"),
    ),
    (
        "ports with icmp",
        b"add 100 allow icmp from any 80 to any\n",
        Rejected(2, "error: ports are not valid with protocol 'icmp'\n --> FILE:1:29"),
    ),
    (
        "an unclosed address list",
        b"add 100 allow ip from {10.0.0.1,10.0.0.2 to any\n",
        Rejected(2, "error: unclosed '{'\n --> FILE:1:23"),
    ),
    (
        "an empty address list",
        b"add 100 allow ip from {} to any\n",
        Rejected(2, "error: empty address list\n --> FILE:1:23"),
    ),
    (
        "a host name for an address",
        b"add 100 allow ip from any to example.org\n",
        Rejected(2, "error: invalid address 'example.org'\n --> FILE:1:30"),
    ),
    (
        "an unknown option",
        b"add 100 allow ip from any to any inbound\n",
        Rejected(2, "error: unknown option 'inbound'\n --> FILE:1:34"),
    ),
    (
        "an option not supported yet",
        b"add 100 allow ip from any to any tcpoptions mss\n",
        Rejected(2, "error: option 'tcpoptions' is not supported yet\n --> FILE:1:34"),
    ),
    (
        "an invalid MAC address",
        b"add 100 allow mac 02:00:5e:00:53:zz any\n",
        Rejected(2, "error: invalid MAC address '02:00:5e:00:53:zz'\n --> FILE:1:19"),
    ),
    (
        "an unknown TCP flag",
        b"add 100 allow tcpflags syn,fun\n",
        Rejected(2, "error: unknown TCP flag 'fun'\n --> FILE:1:28"),
    ),
    (
        "a DSCP above 63",
        b"add 100 allow dscp 64\n",
        Rejected(2, "error: DSCP 64 is out of range 0..63\n --> FILE:1:20"),
    ),
    (
        "a uid beyond 32 bits",
        b"add 100 allow uid 99999999999\n",
        Rejected(2, "error: uid 99999999999 is out of range 0..4294967295\n --> FILE:1:19"),
    ),
    (
        "a table number out of range",
        b"table 70000 flush\n",
        Rejected(2, "error: table number 70000 is out of range 0..65535\n --> FILE:1:7"),
    ),
    (
        "table all add",
        b"table all add 10.0.0.0/8\n",
        Rejected(2, "error: 'table all add' is not possible\n --> FILE:1:11"),
    ),
    (
        "an unknown table command",
        b"table 1 frobnicate\n",
        Rejected(2, "error: unknown table command 'frobnicate'\n --> FILE:1:9"),
    ),
    (
        "an unknown set variable",
        b"set fast 1\n",
        Rejected(2, "error: unknown set variable 'fast'\n --> FILE:1:5"),
    ),
    (
        "one_pass 2",
        b"set one_pass 2\n",
        Rejected(2, "error: invalid value '2' for one_pass\n --> FILE:1:14"),
    ),
    (
        "an unknown scheduler type",
        b"sched 1 config type magic\n",
        Rejected(2, "error: unknown scheduler type 'magic'\n --> FILE:1:21"),
    ),
    (
        "a flow queue without a scheduler",
        b"queue 1 config weight 5\n",
        Rejected(2, "error: missing 'sched S' or 'pipe P' in 'queue 1 config'\n --> FILE:1:24"),
    ),
    (
        "a rule to a flow queue never configured",
        b"pipe 1 config\nadd 100 queue 9\n",
        Rejected(2, "error: queue 9 is not configured (used by rule 100)\n --> FILE:2:1"),
    ),
    (
        "a flow queue on a scheduler never configured",
        b"queue 1 config weight 5 sched 5\n",
        Rejected(2, "error: queue 1: sched 5 is not configured\n --> FILE:1:1"),
    ),
    (
        "deleting a rule that does not exist",
        b"pipe 1 config\ndelete 100\n",
        Rejected(2, "error: rule 100 does not exist\n --> FILE:2:1"),
    ),
    (
        "deleting a pipe that does not exist",
        b"pipe 3 delete\n",
        Rejected(2, "error: pipe 3 does not exist\n --> FILE:1:1"),
    ),
    (
        "RED thresholds equal",
        b"pipe 1 config red 0.002/15/15/0.1\n",
        Rejected(2, "error: invalid red '0.002/15/15/0.1': min_th 15 must be less than max_th 15\n --> FILE:1:19"),
    ),
    (
        "CoDel target 0",
        b"pipe 1 config codel target 0ms\n",
        Rejected(2, "error: invalid codel: target must be positive\n --> FILE:1:15"),
    ),
    (
        "PIE beta above 2",
        b"pipe 1 config pie beta 3\n",
        Rejected(2, "error: invalid pie: beta 3 is not in [0, 2] (Hz)\n --> FILE:1:15"),
    ),
    (
        "five Gilbert-Elliott values",
        b"pipe 1 config loss gemodel 1% 2% 3% 4% 5%\n",
        Rejected(2, "error: too many values for 'gemodel'\n --> FILE:1:40"),
    ),
    (
        "4-state loss probabilities above 1",
        b"pipe 1 config loss state 60% 10% 0% 0% 50%\n",
        Rejected(2, "error: invalid loss 'state': p13 + p14 = 1.1 exceeds 1\n --> FILE:1:20"),
    ),
    (
        "plr and loss together",
        b"pipe 1 config plr 0.05 loss 1%\n",
        Rejected(2, "error: invalid loss '1%': 'plr' and 'loss' cannot both be given (plr P is loss P\u{b7}100%)\n --> FILE:1:29"),
    ),
    (
        "corrupt and ber together",
        b"pipe 1 config corrupt 1% ber 1e-6\n",
        Rejected(2, "error: invalid ber '1e-6': 'corrupt' and 'ber' cannot both be given (both corrupt packets)\n --> FILE:1:30"),
    ),
    (
        "an unknown wireless standard",
        b"pipe 1 config wireless 802.11x rate 11Mbit/s\n",
        Rejected(2, "error: unknown wireless standard '802.11x'\n --> FILE:1:24"),
    ),
    (
        "a rate the standard lacks",
        b"pipe 1 config wireless 802.11b rate 7Mbit/s\n",
        Rejected(2, "error: invalid wireless link: 802.11b has no rate 7Mbit/s\n --> FILE:1:37"),
    ),
    (
        "bw with a wireless link",
        b"pipe 1 config bw 1Mbit/s wireless 802.11b rate 11Mbit/s\n",
        Rejected(2, "error: invalid wireless '802.11b': a wireless link takes its timing from the modulation and the MAC; remove `bw`\n --> FILE:1:35"),
    ),
    (
        "a distribution without a jitter",
        b"pipe 1 config distribution normal\n",
        Rejected(2, "error: invalid distribution 'normal': a distribution needs a delay: write delay MU SIGMA distribution D\n --> FILE:1:28"),
    ),
    (
        "an unknown accounting",
        b"pipe 1 config accounting l4\n",
        Rejected(2, "error: unknown accounting 'l4'\n --> FILE:1:26"),
    ),
    (
        "celloverhead without cellsize",
        b"pipe 1 config overhead 4 celloverhead 5\n",
        Rejected(2, "error: 'celloverhead' needs a cellsize\n --> FILE:1:26"),
    ),
    (
        "a mask that is a number",
        b"pipe 1 config mask 0.1\n",
        Rejected(2, "error: expected a mask word, found '0.1'\n --> FILE:1:20"),
    ),
    (
        "buckets 0",
        b"pipe 1 config buckets 0\n",
        Rejected(2, "error: buckets 0 is out of range 1..65536\n --> FILE:1:23"),
    ),
    (
        "a reorder gap of 0",
        b"pipe 1 config reorder 25% gap 0\n",
        Rejected(2, "error: gap 0 is out of range 1..4294967295\n --> FILE:1:31"),
    ),
    (
        "a delay above an hour",
        b"pipe 1 config delay 7200s\n",
        Rejected(2, "error: invalid delay '7200s': 7200s is more than the maximum 3600s\n --> FILE:1:21"),
    ),
    (
        "a queue of 0 slots",
        b"pipe 1 config queue 0\n",
        Rejected(2, "error: invalid queue '0': a queue must hold at least one packet\n --> FILE:1:21"),
    ),
    (
        "ipfw alone",
        b"ipfw\n",
        Rejected(2, "error: missing command after 'ipfw'\n --> FILE:1:5"),
    ),
    (
        "flush with a word",
        b"flush all\n",
        Rejected(2, "error: unexpected 'all' at end of command\n --> FILE:1:7"),
    ),
    (
        "an unknown distribution",
        b"pipe 1 config delay 20ms 5ms distribution gaussian\n",
        Rejected(2, "error: unknown distribution 'gaussian'\n --> FILE:1:43"),
    ),
    (
        "a bare percentage above 100 (tc reads a bare loss in percent)",
        b"pipe 1 config loss 500\n",
        Rejected(2, "error: percentage '500' is more than 100%\n --> FILE:1:20"),
    ),
    (
        "a tablearg without a table",
        b"add 100 pipe tablearg ip from any to any\n",
        Rejected(2, "error: 'pipe tablearg' needs a table(N) lookup in the rule\n --> FILE:1:9"),
    ),
    (
        "a negative rate",
        b"pipe 1 config bw -1Mbit/s\n",
        Rejected(2, "error: negative value '-1Mbit/s' is not allowed\n --> FILE:1:18"),
    ),
    (
        "an infinite rate",
        b"pipe 1 config bw inf\n",
        Rejected(2, "error: invalid rate 'inf'\n --> FILE:1:18"),
    ),
    (
        "a negative infinite rate",
        b"pipe 1 config bw -inf\n",
        Rejected(2, "error: negative value '-inf' is not allowed\n --> FILE:1:18"),
    ),
    (
        "NaN as plr",
        b"pipe 1 config plr NaN\n",
        Rejected(2, "error: invalid probability 'NaN'\n --> FILE:1:19"),
    ),
    (
        "inf as plr",
        b"pipe 1 config plr inf\n",
        Rejected(2, "error: invalid probability 'inf'\n --> FILE:1:19"),
    ),
    (
        "a negative plr",
        b"pipe 1 config plr -0.1\n",
        Rejected(2, "error: negative value '-0.1' is not allowed\n --> FILE:1:19"),
    ),
    (
        "NaN% loss",
        b"pipe 1 config loss NaN%\n",
        Rejected(2, "error: unknown loss model 'NaN%'\n --> FILE:1:20"),
    ),
    (
        "a negative loss percentage",
        b"pipe 1 config loss -5%\n",
        Rejected(2, "error: negative value '-5%' is not allowed\n --> FILE:1:20"),
    ),
    (
        "a delay of 1e20 s",
        b"pipe 1 config delay 1e20s\n",
        Rejected(2, "error: value '1e20s' is too large\n --> FILE:1:21"),
    ),
    (
        "a delay finer than a nanosecond",
        b"pipe 1 config delay 0.5ns\n",
        Rejected(2, "error: '0.5ns' is not a whole number of nanoseconds\n --> FILE:1:21"),
    ),
    (
        "a delay of 1e-12 s",
        b"pipe 1 config delay 1e-12s\n",
        Rejected(2, "error: '1e-12s' is not a whole number of nanoseconds\n --> FILE:1:21"),
    ),
    (
        "a negative queue",
        b"pipe 1 config queue -5\n",
        Rejected(2, "error: negative value '-5' is not allowed\n --> FILE:1:21"),
    ),
    (
        "a queue of 1e3 slots",
        b"pipe 1 config queue 1e3\n",
        Accepted("set one_pass 1\npipe 1 config queue 1000\n"),
    ),
    (
        "a negative burst",
        b"pipe 1 config burst -1KB\n",
        Rejected(2, "error: negative value '-1KB' is not allowed\n --> FILE:1:21"),
    ),
    (
        "a negative weight",
        b"queue 1 config weight -1 sched 1\n",
        Rejected(2, "error: invalid weight '-1'\n --> FILE:1:23"),
    ),
    (
        "a weight beyond u64",
        b"queue 1 config weight 99999999999999999999 sched 1\n",
        Rejected(2, "error: weight 99999999999999999999 is out of range 1..65536\n --> FILE:1:23"),
    ),
    (
        "NaN as a rule probability",
        b"add 100 prob NaN pipe 1\n",
        Rejected(2, "error: invalid probability 'NaN'\n --> FILE:1:14"),
    ),
    (
        "inf as a rule probability",
        b"add 100 prob inf pipe 1\n",
        Rejected(2, "error: invalid probability 'inf'\n --> FILE:1:14"),
    ),
    (
        "a correlation above 100%",
        b"pipe 1 config delay 10ms 5ms 150%\n",
        Rejected(2, "error: percentage '150%' is more than 100%\n --> FILE:1:30"),
    ),
    (
        "a negative bit error rate",
        b"pipe 1 config ber -1e-6\n",
        Rejected(2, "error: negative value '-1e-6' is not allowed\n --> FILE:1:19"),
    ),
    (
        "NaN as bit error rate",
        b"pipe 1 config ber NaN\n",
        Rejected(2, "error: invalid bit error rate 'NaN'\n --> FILE:1:19"),
    ),
    (
        "a negative quantum",
        b"sched 1 config type drr quantum -1\n",
        Rejected(2, "error: invalid quantum '-1'\n --> FILE:1:33"),
    ),
    (
        "a quantum beyond u64",
        b"sched 1 config type drr quantum 99999999999999999999\n",
        Rejected(2, "error: quantum 99999999999999999999 is out of range 1..1048576\n --> FILE:1:33"),
    ),
    (
        "an infinite SNR",
        b"pipe 1 config wireless 802.11b rate 11Mbit/s snr inf\n",
        Rejected(2, "error: invalid decibel value 'inf'\n --> FILE:1:50"),
    ),
    (
        "retries beyond u32",
        b"pipe 1 config wireless 802.11b rate 11Mbit/s retries 99999999999\n",
        Rejected(2, "error: invalid wireless link: `99999999999` is out of range 0..4294967295\n --> FILE:1:54"),
    ),
    (
        "NaN as RED's max_p",
        b"pipe 1 config red 0.002/5/15/NaN\n",
        Rejected(2, "error: invalid probability 'NaN'\n --> FILE:1:19"),
    ),
    (
        "NaN as RED's weight",
        b"pipe 1 config red NaN/5/15/0.1\n",
        Rejected(2, "error: invalid probability 'NaN'\n --> FILE:1:19"),
    ),
    (
        "an infinite CoDel target",
        b"pipe 1 config codel target inf\n",
        Rejected(2, "error: invalid duration 'inf'\n --> FILE:1:28"),
    ),
    (
        "NaN as PIE's alpha",
        b"pipe 1 config pie alpha NaN\n",
        Rejected(2, "error: invalid number 'NaN'\n --> FILE:1:25"),
    ),
    (
        "a negative l2 header",
        b"pipe 1 config accounting l2 header -1\n",
        Rejected(2, "error: invalid header '-1'\n --> FILE:1:36"),
    ),
    (
        "a table value beyond u32",
        b"table 1 add 10.0.0.0/8 99999999999\n",
        Rejected(2, "error: table value 99999999999 is out of range 0..4294967295\n --> FILE:1:24"),
    ),
    (
        "a negative iplen",
        b"add 100 allow iplen -5\n",
        Rejected(2, "error: invalid iplen '-5'\n --> FILE:1:21"),
    ),
    (
        "a hexadecimal delay",
        b"pipe 1 config delay 0x10ms\n",
        Rejected(2, "error: unknown unit 'x10ms' in '0x10ms'\n --> FILE:1:21"),
    ),
    (
        "a delay with two dots",
        b"pipe 1 config delay 1.2.3ms\n",
        Rejected(2, "error: invalid duration '1.2.3ms'\n --> FILE:1:21"),
    ),
    (
        "a rate of 1e30",
        b"pipe 1 config bw 1e30Gbit/s\n",
        Rejected(2, "error: value '1e30Gbit/s' is too large\n --> FILE:1:18"),
    ),
    (
        "an exponent without digits",
        b"pipe 1 config bw 1eMbit/s\n",
        Rejected(2, "error: unknown unit 'eMbit/s' in '1eMbit/s'\n --> FILE:1:18"),
    ),
    (
        "a rule number beyond u64",
        b"add 99999999999999999999 allow\n",
        Rejected(2, "error: rule number 99999999999999999999 is out of range 1..65534\n --> FILE:1:5"),
    ),
    (
        "UTF-16LE text",
        b"\xff\xfep\x00i\x00p\x00e\x00 \x001\x00 \x00c\x00o\x00n\x00f\x00i\x00g\x00\n\x00",
        Rejected(2, "error: invalid UTF-8 at line 1, column 1 (byte 0): byte 0xff is not UTF-8\n --> FILE:1:1"),
    ),
    (
        "UTF-16BE text",
        b"\xfe\xff\x00p\x00i\x00p\x00e\x00 \x001\x00 \x00c\x00o\x00n\x00f\x00i\x00g\x00\n",
        Rejected(2, "error: invalid UTF-8 at line 1, column 1 (byte 0): byte 0xfe is not UTF-8\n --> FILE:1:1"),
    ),
    (
        "Latin-1 in a comment",
        b"pipe 1 config # caf\xe9\n",
        Rejected(2, "error: invalid UTF-8 at line 1, column 20 (byte 19): byte 0xe9 is not UTF-8\n --> FILE:1:20"),
    ),
    (
        "an overlong UTF-8 encoding",
        b"pipe 1 config\n\xc0\xaf\n",
        Rejected(2, "error: invalid UTF-8 at line 2, column 1 (byte 14): byte 0xc0 is not UTF-8\n --> FILE:2:1"),
    ),
    (
        "a UTF-8-encoded surrogate",
        b"pipe 1 config delay 5ms \xed\xa0\x80\n",
        Rejected(2, "error: invalid UTF-8 at line 1, column 25 (byte 24): byte 0xed is not UTF-8\n --> FILE:1:25"),
    ),
    (
        "a zero-width space inside a word",
        b"pipe\xe2\x80\x8b 1 config\n",
        Rejected(2, "error: FILE:1: not a configuration: its first line does not start with a command"),
    ),
    (
        "a right-to-left override",
        b"pipe 1 config delay \xe2\x80\xae5ms\n",
        Rejected(2, "error: invisible character U+202E at line 1, column 21 (byte 20) is not allowed\n --> FILE:1:21"),
    ),
    (
        "a no-break space between words",
        b"pipe\xc2\xa01 config\n",
        Accepted("set one_pass 1\npipe 1 config\n"),
    ),
    (
        "fullwidth digits",
        b"pipe \xef\xbc\x91 config\n",
        Rejected(2, "error: invalid pipe number '\u{ff11}'\n --> FILE:1:6"),
    ),
    (
        "an emoji as a unit",
        b"pipe 1 config delay 5\xf0\x9f\x9a\x80\n",
        Rejected(2, "error: unknown unit '\u{1f680}' in '5\u{1f680}'\n --> FILE:1:21"),
    ),
    (
        "a DEL character",
        b"pipe 1 config\x7f\n",
        Rejected(2, "error: control character U+007F at line 1, column 14 (byte 13) is not allowed\n --> FILE:1:14"),
    ),
    (
        "a form feed",
        b"pipe 1 config\x0c\n",
        Rejected(2, "error: control character U+000C at line 1, column 14 (byte 13) is not allowed\n --> FILE:1:14"),
    ),
    (
        "a shell script",
        b"#!/bin/sh\nrm -rf /\n",
        Rejected(2, "error: FILE:2: not a configuration: its first line does not start with a command"),
    ),
    (
        "JSON",
        b"{\"pipe\": 1, \"bw\": \"10Mbit/s\"}\n",
        Rejected(2, "error: FILE:1: not a configuration: its first line does not start with a command"),
    ),
    (
        "a quoted number",
        b"pipe \"1\" config\n",
        Rejected(2, "error: invalid pipe number '\"1\"'\n --> FILE:1:6"),
    ),
    (
        "an ELF header",
        b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\n",
        Rejected(2, "error: FILE:1: not a configuration: its first line does not start with a command"),
    ),
    (
        "a gzip header",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
        Rejected(2, "error: invalid UTF-8 at line 1, column 2 (byte 1): byte 0x8b is not UTF-8\n --> FILE:1:2"),
    ),
    (
        "a semicolon between commands",
        b"pipe 1 config; pipe 2 config\n",
        Rejected(2, "error: unknown pipe command 'config;'\n --> FILE:1:8"),
    ),
    (
        "keywords in capitals",
        b"PIPE 1 CONFIG BW 1Mbit/s DELAY 5MS\n",
        Accepted("set one_pass 1\npipe 1 config bw 1Mbit/s delay 5ms\n"),
    ),
    (
        "a rate unit in capitals (dummynet reads MBIT/S as bytes)",
        b"pipe 1 config bw 1MBIT/S\n",
        Rejected(2, "error: ambiguous unit 'MBIT/S' in '1MBIT/S'\n --> FILE:1:18"),
    ),
    (
        "a comment right after a word",
        b"pipe 1 config delay 5ms#late\n",
        Accepted("set one_pass 1\npipe 1 config delay 5ms\n"),
    ),
    (
        "no newline at the end",
        b"pipe 1 config delay 5ms",
        Accepted("set one_pass 1\npipe 1 config delay 5ms\n"),
    ),
    (
        "mixed CRLF and LF",
        b"pipe 1 config\r\npipe 2 config\nadd 100 pipe 2\r\n",
        Accepted("set one_pass 1\npipe 1 config\npipe 2 config\nadd 100 pipe 2 ip from any to any\n"),
    ),
    (
        "the largest delay",
        b"pipe 1 config delay 3600s\n",
        Accepted("set one_pass 1\npipe 1 config delay 3600s\n"),
    ),
    (
        "the largest pipe number",
        b"pipe 65535 config\n",
        Accepted("set one_pass 1\npipe 65535 config\n"),
    ),
    (
        "the largest rule number",
        b"add 65534 allow ip from any to any\n",
        Accepted("set one_pass 1\nadd 65534 allow ip from any to any\n"),
    ),
    (
        "a bandwidth of 0 (no limit)",
        b"pipe 1 config bw 0\n",
        Accepted("set one_pass 1\npipe 1 config bw unlimited\n"),
    ),
    (
        "ipfw before each command",
        b"ipfw pipe 1 config\nipfw add 100 pipe 1 ip from any to any\n",
        Accepted("set one_pass 1\npipe 1 config\nadd 100 pipe 1 ip from any to any\n"),
    ),
    (
        "a unit spelt another way that is accepted: delay 5mS",
        b"pipe 1 config delay 5mS\n",
        Accepted("set one_pass 1\npipe 1 config delay 5ms\n"),
    ),
    (
        "a unit spelt another way that is accepted: delay 5\u{3bc}s",
        b"pipe 1 config delay 5\xce\xbcs\n",
        Accepted("set one_pass 1\npipe 1 config delay 5us\n"),
    ),
    (
        "a unit spelt another way that is accepted: queue 10kb",
        b"pipe 1 config queue 10kb\n",
        Accepted("set one_pass 1\npipe 1 config queue 10KB\n"),
    ),
    (
        "a unit spelt another way that is accepted: queue 10Kib",
        b"pipe 1 config queue 10Kib\n",
        Accepted("set one_pass 1\npipe 1 config queue 10KB\n"),
    ),
];

/// Each case of [`TEXT`].
#[test]
fn configuration_text_is_refused_at_its_position_or_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let failures: Vec<String> = TEXT
        .iter()
        .filter_map(|(case, bytes, want)| check(dir.path(), case, bytes, *want, BOUND))
        .collect();
    all_pass(failures, TEXT.len());
}

/// (parameter, value, the refusal's first lines, the hint after the
/// carets)
const UNITS: &[(&str, &str, &str, &str)] = &[
    (
        "bw",
        "10bps",
        "error: unknown unit 'bps' in '10bps'\n --> FILE:1:18",
        "did you mean bit/s or Byte/s? 'bps' is bit/s to ipfw, Byte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "bw",
        "10kbps",
        "error: unknown unit 'kbps' in '10kbps'\n --> FILE:1:18",
        "did you mean Kbit/s or KByte/s? 'kbps' is Kbit/s to ipfw, KByte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "bw",
        "10Mbps",
        "error: unknown unit 'Mbps' in '10Mbps'\n --> FILE:1:18",
        "did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "bw",
        "10Gbps",
        "error: unknown unit 'Gbps' in '10Gbps'\n --> FILE:1:18",
        "did you mean Gbit/s or GByte/s? 'Gbps' is Gbit/s to ipfw, GByte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "bw",
        "10kbit/sec",
        "error: unknown unit 'kbit/sec' in '10kbit/sec'\n --> FILE:1:18",
        "did you mean Kbit/s?",
    ),
    (
        "bw",
        "10 Mbit/s",
        "error: unknown pipe parameter 'Mbit/s'\n --> FILE:1:21",
        "a unit follows its number without a space: write 10Mbit/s",
    ),
    (
        "delay",
        "5seconds",
        "error: unknown unit 'seconds' in '5seconds'\n --> FILE:1:21",
        "did you mean s?",
    ),
    (
        "delay",
        "5millisecond",
        "error: unknown unit 'millisecond' in '5millisecond'\n --> FILE:1:21",
        "did you mean ms?",
    ),
    (
        "delay",
        "5microseconds",
        "error: unknown unit 'microseconds' in '5microseconds'\n --> FILE:1:21",
        "did you mean us?",
    ),
    (
        "delay",
        "5min",
        "error: unknown unit 'min' in '5min'\n --> FILE:1:21",
        "did you mean ms? (minutes are written in seconds, e.g. 60s)",
    ),
    (
        "delay",
        "2h",
        "error: unknown unit 'h' in '2h'\n --> FILE:1:21",
        "hours are written in seconds, e.g. 3600s",
    ),
    (
        "delay",
        "5 ms",
        "error: unknown pipe parameter 'ms'\n --> FILE:1:23",
        "a unit follows its number without a space: write 5ms",
    ),
    (
        "delay",
        "5millis",
        "error: unknown unit 'millis' in '5millis'\n --> FILE:1:21",
        "known duration units: s, ms, us, ns",
    ),
    (
        "delay",
        "1d",
        "error: unknown unit 'd' in '1d'\n --> FILE:1:21",
        "known duration units: s, ms, us, ns",
    ),
    (
        "queue",
        "10slots",
        "error: unknown unit 'slots' in '10slots'\n --> FILE:1:21",
        "a queue in slots is a bare number: write 10",
    ),
    (
        "queue",
        "10pkts",
        "error: unknown unit 'pkts' in '10pkts'\n --> FILE:1:21",
        "a queue in slots is a bare number: write 10",
    ),
    (
        "queue",
        "10octets",
        "error: unknown unit 'octets' in '10octets'\n --> FILE:1:21",
        "known size units: B, KB, MB, GB, KiB, MiB, GiB",
    ),
    (
        "queue",
        "10M",
        "error: unknown unit 'M' in '10M'\n --> FILE:1:21",
        "did you mean MB?",
    ),
    (
        "burst",
        "64kbyt",
        "error: unknown unit 'kbyt' in '64kbyt'\n --> FILE:1:21",
        "known size units: B, KB, MB, GB, KiB, MiB, GiB",
    ),
];

/// Every wrong spelling of a unit: refused with the message at its
/// column, and the hint that names the right unit.
#[test]
fn every_wrong_unit_spelling_is_refused_with_its_hint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("unit.conf");
    let name = f.display().to_string();
    let mut failures = Vec::new();
    for (param, value, first, hint) in UNITS {
        std::fs::write(&f, format!("pipe 1 config {param} {value}\n")).expect("write");
        let ran = pipelab(&["check", &name]);
        if let Err(e) = verdict(&ran, Rejected(2, first), &name, BOUND) {
            failures.push(format!("{param} {value}: {e}"));
        } else if !ran.stderr.contains(hint) {
            failures.push(format!(
                "{param} {value}: no hint {hint:?} in {}",
                ran.stderr
            ));
        }
    }
    all_pass(failures, UNITS.len());
}

/// A case built at run time (too large for a table): its name, its bytes,
/// its outcome and its time bound.
struct Big {
    case: &'static str,
    bytes: Vec<u8>,
    want: Outcome,
    bound: Duration,
}

fn big_cases() -> Vec<Big> {
    let mut cases = Vec::new();
    // A 10 MB line without a newline: not a configuration, nothing of it
    // quoted.
    cases.push(Big {
        case: "a 10 MB line without a newline",
        bytes: vec![b'x'; 10_000_000],
        want: Rejected(
            2,
            "error: FILE:1: not a configuration: its first line does not start with a command",
        ),
        bound: BOUND,
    });
    // A million blank lines, then a bad word: not a configuration, named
    // at its line, nothing of it quoted.
    let mut b = vec![b'\n'; 1_000_000];
    b.extend_from_slice(b"frob\n");
    cases.push(Big {
        case: "a bad word after a million blank lines",
        bytes: b,
        want: Rejected(2, "error: FILE:1000001: not a configuration: its first line does not start with a command"),
        bound: BOUND,
    });
    // 100,000 errors: the first 50 and a count.
    cases.push(Big {
        case: "100,000 errors",
        bytes: "pipe 1 config bw 1Mbps\n".repeat(100_000).into_bytes(),
        want: Rejected(
            2,
            "and 99950 more errors\n100000 errors in FILE; nothing was applied",
        ),
        bound: BOUND,
    });
    // 50,000 pipes: accepted.
    let mut t = String::new();
    for i in 1..=50_000 {
        t.push_str(&format!("pipe {i} config delay {i}ms\n"));
    }
    cases.push(Big {
        case: "50,000 pipes",
        bytes: t.into_bytes(),
        want: Accepted("pipe 50000 config delay 50s\n"),
        bound: BOUND,
    });
    // 50,000 rules: accepted.
    let mut t = String::from("pipe 1 config\n");
    for i in 1..=50_000 {
        t.push_str(&format!("add {i} pipe 1 ip from any to any\n"));
    }
    cases.push(Big {
        case: "50,000 rules",
        bytes: t.into_bytes(),
        want: Accepted("add 50000 pipe 1 ip from any to any\n"),
        bound: BOUND,
    });
    // A rule with 100,000 addresses in its list.
    let list: Vec<String> = (0..100_000u32)
        .map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255))
        .collect();
    cases.push(Big {
        case: "an address list of 100,000 entries",
        bytes: format!("add 100 allow ip from {{{}}} to any\n", list.join(",")).into_bytes(),
        want: Accepted("add 100 allow ip from {10.0.0.0,10.0.0.1,\u{2026},10.1.134.159} to any\n"),
        bound: BOUND,
    });
    // Braces 100,000 deep: an error, not a stack overflow.
    cases.push(Big {
        case: "braces 100,000 deep",
        bytes: format!("add 100 allow ip from {} to any\n", "{".repeat(100_000)).into_bytes(),
        want: Rejected(
            2,
            "error: expected an address in the list, found '{'\n --> FILE:1:24",
        ),
        bound: BOUND,
    });
    // One line of 200,000 words.
    cases.push(Big {
        case: "a line of 200,000 words",
        bytes: format!("pipe 1 config{}\n", " delay 5ms".repeat(100_000)).into_bytes(),
        want: Rejected(2, "error: duplicate parameter 'delay'\n --> FILE:1:25"),
        bound: BOUND,
    });
    // A value of a million digits.
    cases.push(Big {
        case: "a value of a million digits",
        bytes: format!("pipe 1 config bw {}bit/s\n", "9".repeat(1_000_000)).into_bytes(),
        want: Rejected(
            2,
            "error: value '999\u{2026}bit/s' is too large\n --> FILE:1:18",
        ),
        bound: BOUND,
    });
    // 8 MB of comments: accepted, nothing configured.
    cases.push(Big {
        case: "8 MB of comments",
        bytes: "# a comment line of sixty-four bytes, repeated many times over..\n"
            .repeat(131_072)
            .into_bytes(),
        want: Accepted("set one_pass 1\n"),
        bound: BOUND,
    });
    // A megabyte of pseudo-random bytes (fixed seed).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    cases.push(Big {
        case: "a megabyte of random bytes",
        bytes: noise,
        want: Rejected(2, "error: invalid UTF-8 at line 1, column 3 (byte 2): byte 0xe5 is not UTF-8\n --> FILE:1:3"),
        bound: BOUND,
    });
    cases
}

/// Huge files and lines: refused (or accepted) within their bound, the
/// message short and at its position.
#[test]
fn huge_files_and_lines_are_handled_within_their_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let f = dir.path().join("big.conf");
    let name = f.display().to_string();
    for b in big_cases() {
        std::fs::write(&f, &b.bytes).expect("write");
        let ran = pipelab(&["check", &name]);
        eprintln!(
            "{}: {:?}, {} bytes of message",
            b.case,
            ran.took,
            ran.stderr.len()
        );
        if let Err(e) = verdict(&ran, b.want, &name, b.bound) {
            failures.push(format!("{}: {e}", b.case));
        } else if ran.stderr.len() > 16 << 10 {
            failures.push(format!(
                "{}: a message of {} bytes",
                b.case,
                ran.stderr.len()
            ));
        }
    }
    // The file over the cap is refused from its size, before it is read:
    // a sparse file of 64 MiB + 1 byte.
    let f = dir.path().join("over-cap.conf");
    let file = std::fs::File::create(&f).expect("create");
    file.set_len((64 << 20) + 1).expect("size");
    let name = f.display().to_string();
    let ran = pipelab(&["check", &name]);
    if let Err(e) = verdict(
        &ran,
        Rejected(2, "error: cannot read 'FILE': 67108865 bytes, more than the limit of 67108864 bytes (64 MiB)"),
        &name,
        Duration::from_secs(5),
    ) {
        failures.push(format!("a file over the cap: {e}"));
    }
    all_pass(failures, big_cases().len() + 1);
}

/// The count of this file's cases (docs/HOSTILE.md).
#[test]
fn case_count() {
    let big = big_cases();
    let cases = TEXT.len() + UNITS.len() + big.len() + 1;
    let rejections = TEXT.iter().filter(|c| c.2.is_checked_rejection()).count()
        + UNITS.len()
        + big.iter().filter(|b| b.want.is_checked_rejection()).count()
        + 1;
    tally("hostile_config", cases, rejections, 150, 120);
}
