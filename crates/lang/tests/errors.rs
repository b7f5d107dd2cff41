//! Bad inputs: each test proves the exact message, hint and column a user
//! sees, and that the parser returns an error instead of panicking.

use pipelab_lang::{parse_line, parse_script, ParseError};

fn err(line: &str) -> ParseError {
    match parse_line(line) {
        Ok(c) => panic!("{line}: expected an error, got {c:?}"),
        Err(e) => e,
    }
}

/// (input, `line:column: message[: hint]`)
const CASES: &[(&str, &str)] = &[
    // wireless links and time-varying links
    (
        "pipe 1 config wireless 802.11x rate 11Mbit/s",
        "1:24: unknown wireless standard '802.11x': expected 802.11b or 802.11g",
    ),
    (
        "pipe 1 config wireless 802.11b rate 7Mbit/s",
        "1:37: invalid wireless link: 802.11b has no rate 7Mbit/s: e.g. wireless 802.11b rate 11Mbit/s snr 20dB netload 1% collision 0.06 retries 7",
    ),
    (
        "pipe 1 config wireless 802.11b",
        "1:31: missing 'rate' after 'wireless 802.11b': e.g. wireless 802.11b rate 11Mbit/s snr 20dB netload 1% collision 0.06 retries 7",
    ),
    (
        "pipe 1 config wireless 802.11b rate 11Mbit/s snr abc",
        "1:50: invalid decibel value 'abc': decibels are written like 20dB",
    ),
    (
        "pipe 1 config wireless 802.11b rate 11Mbps",
        "1:37: unknown unit 'Mbps' in '11Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "pipe 1 config profile 802.11g-54 netload 150%",
        "1:42: probability '150%' is outside 0..1",
    ),
    (
        "pipe 1 config profile 802.11g-54 netload 100%",
        "1:42: invalid wireless link: netload 1 is not in [0, 0.99]: e.g. wireless 802.11b rate 11Mbit/s snr 20dB netload 1% collision 0.06 retries 7",
    ),
    (
        "pipe 1 config wireless 802.11b rate 11Mbit/s cw 16 cw 32",
        "1:52: duplicate wireless word 'cw'",
    ),
    (
        "pipe 1 config bw 1Mbit/s wireless 802.11b rate 11Mbit/s",
        "1:35: invalid wireless '802.11b': a wireless link takes its timing from the modulation and the MAC; remove `bw`",
    ),
    (
        "pipe 1 config wireless 802.11b rate 11Mbit/s profile 802.11b-2",
        "1:46: duplicate wireless link '802.11b-2': a wireless link was already given at column 15",
    ),
    (
        "pipe 1 config timevarying",
        "1:26: missing value after 'timevarying': e.g. timevarying link.markov",
    ),
    // units
    (
        "pipe 1 config bw 10Mbps",
        "1:18: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "pipe 1 config bw 10kbps",
        "1:18: unknown unit 'kbps' in '10kbps': did you mean Kbit/s or KByte/s? 'kbps' is Kbit/s to ipfw, KByte/s to tc (netem's rate takes tc's words)",
    ),
    (
        "pipe 1 config bw 10Mbit/sec",
        "1:18: unknown unit 'Mbit/sec' in '10Mbit/sec': did you mean Mbit/s?",
    ),
    (
        "pipe 1 config bw 10MBIT/s",
        "1:18: ambiguous unit 'MBIT/s' in '10MBIT/s': dummynet reads a capital B not followed by a small i as bytes: write Mbit/s or MByte/s",
    ),
    (
        "pipe 1 config bw 0.5bit/s",
        "1:18: '0.5bit/s' is not a whole number of bit/s",
    ),
    (
        "pipe 1 config bw 99999999999999Gbit/s",
        "1:18: value '99999999999999Gbit/s' is too large",
    ),
    (
        "pipe 1 config bw fast",
        "1:18: invalid rate 'fast': rates are written like 10Mbit/s",
    ),
    (
        "pipe 1 config delay -5ms",
        "1:21: negative value '-5ms' is not allowed",
    ),
    (
        "pipe 1 config delay 5seconds",
        "1:21: unknown unit 'seconds' in '5seconds': did you mean s?",
    ),
    (
        "pipe 1 config delay 2h",
        "1:21: unknown unit 'h' in '2h': hours are written in seconds, e.g. 3600s",
    ),
    (
        "pipe 1 config delay 7200s",
        "1:21: invalid delay '7200s': 7200s is more than the maximum 3600s",
    ),
    (
        "pipe 1 config queue 0",
        "1:21: invalid queue '0': a queue must hold at least one packet",
    ),
    (
        "pipe 1 config queue 10Kbit",
        "1:21: unknown unit 'Kbit' in '10Kbit': sizes are in bytes (KB = 1024 bytes), e.g. 100KB",
    ),
    // queue management and link-server extras
    (
        "pipe 1 config red 0.002/15/15/0.1",
        "1:19: invalid red '0.002/15/15/0.1': min_th 15 must be less than max_th 15",
    ),
    (
        "pipe 1 config red 0.002/5/15",
        "1:19: invalid red '0.002/5/15': expected w_q/min_th/max_th/max_p: e.g. red 0.002/5/15/0.1",
    ),
    (
        "pipe 1 config gred 0/5/15/0.1",
        "1:20: invalid gred '0/5/15/0.1': w_q 0 is not in (0, 1]",
    ),
    (
        "pipe 1 config red 0.002/5x/15/0.1",
        "1:19: invalid min_th '5x' in '0.002/5x/15/0.1': thresholds are whole numbers of slots, or of bytes with a queue in bytes (K = 1024)",
    ),
    (
        "pipe 1 config red 0.002/5/15/0.1 codel",
        "1:34: 'codel' cannot be combined with 'red': a pipe has one queue management (red, gred, codel or pie); 'red' was given at column 15",
    ),
    (
        "pipe 1 config codel target 0ms",
        "1:15: invalid codel: target must be positive",
    ),
    (
        "pipe 1 config codel target 5min",
        "1:28: unknown unit 'min' in '5min': did you mean ms? (minutes are written in seconds, e.g. 60s)",
    ),
    (
        "pipe 1 config codel target 5ms target 6ms",
        "1:32: duplicate 'target'",
    ),
    (
        "pipe 1 config pie beta 3",
        "1:15: invalid pie: beta 3 is not in [0, 2] (Hz)",
    ),
    (
        "pipe 1 config bw trace:",
        "1:18: missing path after 'trace:': e.g. bw trace:link.trace",
    ),
    (
        "pipe 1 config bw trace:a burst 10KB",
        "1:32: invalid burst '10KB': a burst has no meaning with a bandwidth trace (bw trace:FILE)",
    ),
    (
        "pipe 1 config burst 1000000000GB",
        "1:21: invalid burst '1000000000GB': 1073741824000000000 bytes is out of range (0..2^48-1)",
    ),
    (
        "pipe 1 config profile",
        "1:22: missing value after 'profile': e.g. profile wlan.profile",
    ),
    (
        "pipe 1 config accounting l4",
        "1:26: unknown accounting 'l4': expected l3 (IP length, Dummynet) or l2 (Ethernet frame)",
    ),
    (
        "pipe 1 config accounting l3 header 4",
        "1:29: 'header' needs accounting l2: accounting l3 charges the IP length only",
    ),
    (
        "pipe 1 config accounting l2 ifg 70000",
        "1:33: ifg 70000 is out of range 0..65535",
    ),
    (
        "pipe 1 config overhead x",
        "1:24: invalid overhead 'x': write a whole number of bytes, e.g. 14 or -4",
    ),
    (
        "pipe 1 config overhead 4 celloverhead 5",
        "1:26: 'celloverhead' needs a cellsize: e.g. overhead 10 cellsize 48 celloverhead 5",
    ),
    (
        "pipe 1 config overhead 0 cellsize 48 celloverhead -48",
        "1:24: invalid overhead '0': cellsize 48 with celloverhead -48 costs nothing",
    ),
    (
        "pipe 1 config accounting l2 overhead 4",
        "1:38: invalid overhead '4': 'accounting' and 'overhead' cannot both be given (overhead is netem's accounting)",
    ),
    // pipe command structure
    (
        "pipe 1 config bw",
        "1:17: missing value after 'bw': e.g. bw 10Mbit/s",
    ),
    (
        "pipe 1 config bw 1Mbit/s delay 2ms bw 2Mbit/s",
        "1:36: duplicate parameter 'bw': 'bw' was already given at column 15",
    ),
    (
        "pipe 1 config bandwith 1Mbit/s",
        "1:15: unknown pipe parameter 'bandwith': known parameters: bw, delay, distribution, jitter-order, queue, spill, red, gred, codel, pie, plr, loss, duplicate, reorder, corrupt, ber, profile, burst, ecn, accounting, overhead, mask, buckets, wireless, timevarying, timeline, limit, rate, slot, seed, gap, noecn, noerror, preset",
    ),
    // masks and dynamic pipes
    (
        "pipe 1 config mask 0.1",
        "1:20: expected a mask word, found '0.1': mask words: all, src-ip, dst-ip, src-ip6, dst-ip6, src-port, dst-port, proto; e.g. mask src-ip 0xffffffff or mask src-ip6 /64 dst-port 0xffff",
    ),
    (
        "pipe 1 config mask",
        "1:19: missing mask after 'mask': mask words: all, src-ip, dst-ip, src-ip6, dst-ip6, src-port, dst-port, proto; e.g. mask src-ip 0xffffffff or mask src-ip6 /64 dst-port 0xffff",
    ),
    (
        "pipe 1 config mask src-ip 0x1ffffffff",
        "1:27: invalid address mask '0x1ffffffff': e.g. 0xffffff00 or 255.255.255.0",
    ),
    (
        "pipe 1 config mask src-ip6 /129",
        "1:28: invalid IPv6 prefix length '/129': expected /0../128, e.g. src-ip6 /64",
    ),
    (
        "pipe 1 config mask dst-port 70000",
        "1:29: invalid port mask '70000': expected 0x0..0xffff or 0..65535",
    ),
    (
        "pipe 1 config buckets 0",
        "1:23: buckets 0 is out of range 1..65536",
    ),
    // schedulers and flow queues
    (
        "queue 1 config weight 5",
        "1:24: missing 'sched S' or 'pipe P' in 'queue 1 config': e.g. queue 10 config weight 20 sched 5",
    ),
    (
        "queue 1 config weight 0 sched 1",
        "1:23: weight 0 is out of range 1..65536",
    ),
    (
        "queue 1 config weight 65537 sched 1",
        "1:23: weight 65537 is out of range 1..65536",
    ),
    (
        "queue 1 config weight 5 sched 1 pipe 2",
        "1:33: 'pipe' cannot be combined with 'sched': a queue feeds one scheduler: sched S or pipe P",
    ),
    (
        "queue 1 config sched 1 red 0.002/5/15/0.1 codel",
        "1:43: 'codel' cannot be combined with 'red': a queue has one queue management (red, gred, codel or pie)",
    ),
    (
        "queue 1 config sched 1 frob 1",
        "1:24: unknown queue parameter 'frob': known parameters: weight, sched, pipe, queue, red, gred, codel, pie, mask, buckets, ecn, noecn",
    ),
    (
        "sched 1 config type drr target 5ms",
        "1:25: invalid target: 'target' is a parameter of type fq_codel or fq_pie, not drr",
    ),
    (
        "sched 1 config type qfq quantum 100000",
        "1:25: invalid quantum: qfq's largest packet 100000 is more than 65536",
    ),
    (
        "sched 1 config type drr type rr",
        "1:25: duplicate parameter 'type': 'type' was already given at column 16",
    ),
    // impairments
    (
        "pipe 1 config plr 0.05 loss 1%",
        "1:29: invalid loss '1%': 'plr' and 'loss' cannot both be given (plr P is loss P·100%)",
    ),
    (
        "pipe 1 config delay 20ms 5ms distribution gaussian",
        "1:43: unknown distribution 'gaussian': known distributions: uniform, normal, pareto, paretonormal, NAME (tc's NAME.dist), PATH.dist, file:PATH",
    ),
    (
        "pipe 1 config loss 150%",
        "1:20: percentage '150%' is more than 100%",
    ),
    (
        "pipe 1 config loss 101",
        "1:20: percentage '101' is more than 100%",
    ),
    (
        "pipe 1 config loss",
        "1:19: missing value after 'loss': e.g. loss 5%, loss gemodel 1% 10%, loss state 1% or loss trace:FILE",
    ),
    (
        "pipe 1 config duplicate",
        "1:24: missing value after 'duplicate': e.g. duplicate 1% or duplicate 1% 25%",
    ),
    (
        "pipe 1 config loss gemodel",
        "1:27: missing percentage after 'gemodel': e.g. loss gemodel 1% 10% 70% 0.1%",
    ),
    (
        "pipe 1 config loss gemodel 1% 2% 3% 4% 5%",
        "1:40: too many values for 'gemodel': 'gemodel' takes at most 4 percentages",
    ),
    (
        "pipe 1 config loss state 60% 10% 0% 0% 50%",
        "1:20: invalid loss 'state': p13 + p14 = 1.1 exceeds 1",
    ),
    (
        "pipe 1 config loss queue",
        "1:20: unknown loss model 'queue': expected a percentage, random, gemodel, state or trace:FILE",
    ),
    (
        "pipe 1 config loss trace:",
        "1:20: missing path after 'trace:': e.g. loss trace:drops.txt",
    ),
    (
        "pipe 1 config reorder 25% gap",
        "1:30: missing value after 'gap': e.g. gap 5",
    ),
    (
        "pipe 1 config reorder 25% gap 0",
        "1:31: gap 0 is out of range 1..4294967295",
    ),
    (
        "pipe 1 config reorder swap",
        "1:27: missing percentage after 'swap': e.g. reorder swap 1%",
    ),
    ("pipe 1 config ber 1", "1:19: bit error rate '1' is not below 1"),
    (
        "pipe 1 config ber 1e-x",
        "1:19: invalid bit error rate '1e-x': write a number below 1, e.g. 1e-6 or 0.000001",
    ),
    (
        "pipe 1 config corrupt 1% ber 1e-6",
        "1:30: invalid ber '1e-6': 'corrupt' and 'ber' cannot both be given (both corrupt packets)",
    ),
    (
        "pipe 1 config jitter-order random",
        "1:28: invalid jitter-order 'random': expected keep or allow",
    ),
    (
        "pipe 1 config distribution normal",
        "1:28: invalid distribution 'normal': a distribution needs a delay: write delay MU SIGMA distribution D",
    ),
    (
        "pipe 1 config delay 10ms 5ms distribution file:x.txt",
        "1:43: invalid distribution 'file:x.txt': a jitter has no meaning with file: (the file gives the spread); write delay MU distribution file:PATH",
    ),
    (
        "pipe 1 config delay 10ms distribution file:",
        "1:39: missing path after 'file:': e.g. distribution file:delays.txt",
    ),
    (
        "pipe 1 config delay 10ms 5ms 250",
        "1:30: percentage '250' is more than 100%",
    ),
    (
        "pipe 1 config jitter 5ms",
        "1:15: unknown pipe parameter 'jitter': netem's jitter follows the delay: delay 20ms 5ms",
    ),
    ("pipe 1 config plr 5", "1:19: probability '5' is outside 0..1"),
    (
        "pipe 1 config loss 5% 0.000000001%",
        "1:23: percentage '0.000000001%' has more than 7 decimal places",
    ),
    ("pipe 0 config", "1:6: pipe number 0 is out of range 1..65535"),
    (
        "pipe 70000 config",
        "1:6: pipe number 70000 is out of range 1..65535",
    ),
    ("pipe x config", "1:6: invalid pipe number 'x'"),
    (
        "pipe",
        "1:5: missing pipe number after 'pipe': e.g. pipe 1 config bw 10Mbit/s delay 20ms",
    ),
    (
        "pipe 1",
        "1:7: missing 'config', 'delete' or 'show' after 'pipe 1'",
    ),
    (
        "pipe 1 configure",
        "1:8: unknown pipe command 'configure': expected config, delete or show",
    ),
    (
        "pipe 1 delete now",
        "1:15: unexpected 'now' at end of command",
    ),
    // commands
    (
        "frobnicate 1",
        "1:1: unknown command 'frobnicate': commands: pipe, sched, queue, add, delete, flush, list, show, set, table",
    ),
    ("flush all", "1:7: unexpected 'all' at end of command"),
    (
        "ipfw",
        "1:5: missing command after 'ipfw': commands: pipe, sched, queue, add, delete, flush, list, show, set, table",
    ),
    // rules: numbers and actions
    ("add 0 allow", "1:5: rule number 0 is out of range 1..65534"),
    (
        "add 65535 allow",
        "1:5: rule number 65535 is out of range 1..65534: 65535 is the built-in default rule 'allow ip from any to any'",
    ),
    (
        "add 100 reroute 10.0.0.1",
        "1:9: unknown action 'reroute': actions: allow, deny, count, skipto N, pipe N, queue N, reset, unreach CODE, check-state",
    ),
    ("add 100 fwd 10.0.0.1", "1:9: action 'fwd' is not supported yet"),
    (
        "add 100",
        "1:8: missing action after '100': actions: allow, deny, count, skipto N, pipe N, queue N, reset, unreach CODE, check-state",
    ),
    ("add 100 pipe", "1:13: missing pipe number after 'pipe'"),
    ("add 100 pipe 0", "1:14: pipe number 0 is out of range 1..65535"),
    (
        "add 100 pipe tablearg ip from any to any",
        "1:9: 'pipe tablearg' needs a table(N) lookup in the rule: e.g. add pipe tablearg ip from table(1) to any",
    ),
    (
        "add 100 skipto tablearg ip from not table(1) to any",
        "1:9: 'skipto tablearg' needs a table(N) lookup in the rule: e.g. add skipto tablearg ip from table(1) to any",
    ),
    (
        "add 100 queue tablearg ip from table(1) to any",
        "1:15: 'queue tablearg' is not supported: tablearg works with pipe and skipto",
    ),
    (
        "add 100 deny tablearg ip from table(1) to any",
        "1:14: 'tablearg' cannot follow 'deny': tablearg works with pipe and skipto",
    ),
    (
        "add 100 prob 1.5 pipe 1",
        "1:14: probability '1.5' is outside 0..1",
    ),
    (
        "add 100 prob 0.2 pipe 1 prob 0.3",
        "1:25: duplicate 'prob'",
    ),
    (
        "add 100 prob -0.2 pipe 1",
        "1:14: negative value '-0.2' is not allowed",
    ),
    // rules: body
    (
        "add 100 allow ip from any",
        "1:26: missing 'to' after source address: e.g. from any to any",
    ),
    (
        "add 100 allow ip from any 80 at any",
        "1:30: expected 'to', found 'at'",
    ),
    (
        "add 100 allow tcp",
        "1:18: missing 'from' after 'tcp': e.g. ip from any to any",
    ),
    (
        "add 100 allow 256 from any to any",
        "1:15: protocol number 256 is out of range 0..255",
    ),
    (
        "add 100 allow sctpp from any to any",
        "1:15: unknown protocol 'sctpp': protocols: ip, all, ip4, ip6, a name of FreeBSD's /etc/protocols (tcp, udp, icmp, sctp, gre, ipv6-icmp, ...), or a number 0..255",
    ),
    (
        "add 100 allow ip from 10.0.0.0/33 to any",
        "1:23: invalid prefix length 33 in '10.0.0.0/33' (at most 32)",
    ),
    (
        "add 100 allow ip from 10.0.0.256 to any",
        "1:23: invalid address '10.0.0.256': write any, me, an address, a network like 10.0.0.0/8, or {a,b}",
    ),
    (
        "add 100 pipe 10 ip from any to xy.it",
        "1:32: invalid address 'xy.it': host names are not resolved; write an IPv4 or IPv6 address",
    ),
    (
        "add 100 allow ip from 10.0.0.0/x to any",
        "1:23: invalid prefix length 'x' in '10.0.0.0/x': write a number 0..32, e.g. 10.0.0.0/8",
    ),
    (
        "add 100 allow ip from {10.0.0.1,10.0.0.2 to any",
        "1:23: unclosed '{': expected ',' or '}' before 'to'",
    ),
    (
        "add 100 allow ip from {10.0.0.1,",
        "1:23: unclosed '{': expected '}' before the end of the line",
    ),
    ("add 100 allow ip from {} to any", "1:23: empty address list"),
    (
        "add 100 allow tcp from any 80000 to any",
        "1:28: port 80000 is out of range 0..65535",
    ),
    (
        "add 100 allow tcp from any 2000-1000 to any",
        "1:28: port range '2000-1000' is reversed: write 1000-2000",
    ),
    (
        "add 100 allow tcp from any 80, to any",
        "1:32: invalid port 'to': ports are numbers 0..65535, ranges 1000-2000 or lists 80,443",
    ),
    (
        "add 100 allow icmp from any 80 to any",
        "1:29: ports are not valid with protocol 'icmp': ports need tcp, udp or ip",
    ),
    // rules: options
    (
        "add 100 pipe 1 ip from any to any tcpoptions mss",
        "1:35: option 'tcpoptions' is not supported yet",
    ),
    (
        "add 100 pipe 1 ip from any to any inbound",
        "1:35: unknown option 'inbound': options: in, out, proto, src-ip, dst-ip, src-port, dst-port, via, recv, xmit, mac, mac-type, iplen, tcpflags, dscp, uid, layer2 (each may follow 'not'), keep-state",
    ),
    (
        "add 100 pipe 1 via",
        "1:19: missing interface name after 'via': e.g. via eth0",
    ),
    (
        "add 100 pipe 1 mac any 02:00:5e:00:53",
        "1:24: invalid MAC address '02:00:5e:00:53': write any or six hex bytes like 02:00:5e:00:53:01",
    ),
    (
        "add 100 pipe 1 mac 02:00:5e:00:53:zz any",
        "1:20: invalid MAC address '02:00:5e:00:53:zz': write any or six hex bytes like 02:00:5e:00:53:01",
    ),
    (
        "add 100 pipe 1 mac any",
        "1:23: missing source MAC address after 'any': e.g. mac any 02:00:5e:00:53:01 (destination, then source)",
    ),
    (
        "add 100 pipe 1 mac-type 0x1ffff",
        "1:25: mac-type 0x1ffff is out of range 0..0xffff",
    ),
    (
        "add 100 pipe 1 mac-type ethernet",
        "1:25: invalid mac-type 'ethernet': write a number like 0x88b5 or 2048, a range 0x0800-0x0806, or ip, ipv6, arp, vlan",
    ),
    (
        "add 100 pipe 1 mac-type 0x86dd-0x0800",
        "1:25: mac-type range '0x86dd-0x0800' is reversed: write 0x0800-0x86dd",
    ),
    (
        "add 100 pipe 1 mac-type 0x0800,",
        "1:32: missing mac-type after ',': e.g. mac-type 0x88b5 or mac-type 0x0800-0x0806,ipv6",
    ),
    ("add 100 pipe 1 iplen 70000", "1:22: iplen 70000 is out of range 0..65535"),
    (
        "add 100 pipe 1 iplen big",
        "1:22: invalid iplen 'big': write a length like 40, a range 0-100 or a list 40,1500",
    ),
    (
        "add 100 pipe 1 tcpflags syn,fun",
        "1:29: unknown TCP flag 'fun': flags: fin, syn, rst, psh, ack, urg, ece, cwr (! for clear)",
    ),
    (
        "add 100 pipe 1 tcpflags syn,!syn",
        "1:29: TCP flag 'syn' is both set and clear",
    ),
    ("add 100 pipe 1 dscp 64", "1:21: DSCP 64 is out of range 0..63"),
    (
        "add 100 pipe 1 dscp af51",
        "1:21: invalid DSCP 'af51': write 0..63 or a name: be, ef, va, cs0..cs7, af11..af43",
    ),
    (
        "add 100 pipe 1 uid 99999999999",
        "1:20: uid 99999999999 is out of range 0..4294967295",
    ),
    (
        "add 100 pipe 1 ip from table(70000) to any",
        "1:24: table number 70000 is out of range 0..65535",
    ),
    (
        "add 100 pipe 1 ip from table(1,x) to any",
        "1:32: invalid table reference 'x)': write table(T) or table(T,VALUE), e.g. table(1) or table(T1)",
    ),
    (
        "add 100 pipe 1 ip from table(1 to any",
        "1:24: invalid table reference 'table(1': write table(T) or table(T,VALUE), e.g. table(1) or table(T1)",
    ),
    // tables
    ("table 70000 flush", "1:7: table number 70000 is out of range 0..65535"),
    (
        "table 1 add 10.0.0.0/33",
        "1:13: invalid prefix length 33 in '10.0.0.0/33' (at most 32)",
    ),
    (
        "table 1 add 10.0.0.0/8 -1",
        "1:24: invalid table value '-1'",
    ),
    (
        "table 1 add 10.0.0.0/8 5 6",
        "1:26: unexpected '6' at end of command",
    ),
    (
        "table all add 10.0.0.0/8",
        "1:11: 'table all add' is not possible: 'table all' takes flush or list",
    ),
    (
        "table 1 frobnicate",
        "1:9: unknown table command 'frobnicate': expected add, delete, create, destroy, flush or list",
    ),
    (
        "table 1",
        "1:8: missing 'add', 'delete', 'create', 'destroy', 'flush' or 'list' after 'table 1': e.g. table 1 add 10.0.0.0/8 5 or table T1 create type addr",
    ),
    ("add 100 pipe 1 in not", "1:22: missing option after 'not'"),
    (
        "add 100 pipe 1 src-port",
        "1:24: missing port after 'src-port': e.g. 80, 1000-2000 or 80,443",
    ),
    (
        "add 100 pipe 1 dst-ip",
        "1:22: missing address after 'dst-ip': write any, me, an address, a network like 10.0.0.0/8, or {a,b}",
    ),
    // delete, set
    (
        "delete",
        "1:7: missing rule number after 'delete': e.g. delete 100",
    ),
    ("delete 100 x", "1:12: invalid rule number 'x'"),
    (
        "delete 65535",
        "1:8: rule number 65535 is out of range 1..65534: 65535 is the built-in default rule 'allow ip from any to any'",
    ),
    (
        "set one_pass 2",
        "1:14: invalid value '2' for one_pass: expected 0 or 1",
    ),
    (
        "set fast 1",
        "1:5: unknown set variable 'fast': known variables: one_pass",
    ),
];

#[test]
fn every_bad_input_has_its_exact_message_and_column() {
    let mut failures = Vec::new();
    for (input, want) in CASES {
        let got = err(input).to_string();
        if got != *want {
            failures.push(format!("input: {input}\n want: {want}\n  got: {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    assert!(CASES.len() >= 25);
}

#[test]
fn the_error_carries_the_offending_word() {
    let e = err("pipe 1 config bw 10Mbps");
    assert_eq!((e.line, e.column, e.word.as_str()), (1, 18, "10Mbps"));
    assert_eq!(e.message, "unknown unit 'Mbps' in '10Mbps'");
    assert_eq!(e.hint.as_deref(), Some("did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"));
    let e = err("pipe 1 config bw");
    assert_eq!(e.word, "", "a missing word is empty");
}

#[test]
fn columns_count_characters_and_skip_ipfw() {
    assert_eq!(
        err("ipfw -q pipe 1 config bw 1Mbps").to_string(),
        "1:26: unknown unit 'Mbps' in '1Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"
    );
    assert_eq!(
        err("pipe 1 config delay 5µs bw 1Mbps").to_string(),
        "1:28: unknown unit 'Mbps' in '1Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"
    );
}

#[test]
fn scripts_collect_every_error_with_its_line() {
    let script = "# links\n\
                  pipe 1 config bw 3Mbit/s delay 32ms\n\
                  \n\
                  pipe 2 config bw 10Mbps\n\
                  add 100 pipe 1 ip from any to any\n\
                  add 0 allow\n";
    let errs = parse_script(script).unwrap_err();
    let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        vec![
            "4:18: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
            "6:5: rule number 0 is out of range 1..65534",
        ]
    );
    assert_eq!(
        errs[0].render("links.conf", script),
        "error: unknown unit 'Mbps' in '10Mbps'\n --> links.conf:4:18\n  |\n\
         4 | pipe 2 config bw 10Mbps\n  |                  ^^^^^^ did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n"
    );
    let ok = parse_script("pipe 1 config\n  add pipe 1 # trailing comment\n").unwrap();
    assert_eq!((ok[1].line, ok[1].column), (2, 3));
}

#[test]
fn parse_line_accepts_blank_and_comment_lines_and_one_command_only() {
    assert_eq!(parse_line(""), Ok(None));
    assert_eq!(parse_line("   # just a comment"), Ok(None));
    assert_eq!(
        err("flush\nlist").to_string(),
        "2:1: expected one command, found more than one line"
    );
}

#[test]
fn hostile_inputs_do_not_panic() {
    let long_number = "9".repeat(500);
    let inputs = [
        "{".to_string(),
        "}".to_string(),
        ",,,".to_string(),
        "add , , ,".to_string(),
        "add 1 allow ip from { { } to".to_string(),
        format!("pipe {long_number} config bw {long_number}Gbit/s"),
        format!("pipe 1 config delay 0.{long_number}s"),
        format!("pipe 1 config queue {long_number}KB"),
        format!("add 1 prob 0.{long_number} allow"),
        format!("add {long_number} allow tcp from any {long_number} to any"),
        "add 1 allow ip from ::/999 to any".to_string(),
        "add 1 allow ip from 1.2.3.4/ to any".to_string(),
        "add 1 allow tcp from any - to any".to_string(),
        "add 1 allow tcp from any 1-2-3 to any".to_string(),
        "pipe 1 config bw ..Mbit/s delay . queue .".to_string(),
        "pipe 1 config bw µ delay µµ".to_string(),
        "\u{0}\u{7f}\u{feff} \t\r".to_string(),
    ];
    for i in &inputs {
        let _ = parse_line(i);
        let _ = parse_script(i);
        let _ = pipelab_lang::parse_traffic(i);
    }
}

#[test]
fn apply_errors_render_with_the_line() {
    let mut c = pipelab_lang::Config::default();
    let src = "pipe 1 config\nadd 100 pipe 2\n";
    let errs = c.apply_script(src).unwrap_err();
    assert_eq!(
        errs[0].render("x.conf", src),
        "error: pipe 2 is not configured (used by rule 100)\n --> x.conf:2:1\n  |\n\
         2 | add 100 pipe 2\n  | ^\n"
    );
}

/// Scripts with schedulers and queues: dangling references are found at
/// the end of the script and reported at the line that makes them.
#[test]
fn scheduler_and_queue_references_are_checked_at_the_end() {
    let mut c = pipelab_lang::Config::new();
    let errs = c
        .apply_script(
            "sched 5 config type wf2q+\n\
             queue 10 config weight 20 sched 7\n\
             queue 11 config pipe 9\n\
             add 100 queue 12 ip from any to any\n",
        )
        .unwrap_err();
    let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        vec![
            "1:1: sched 5 has no pipe 5 to serve (configure pipe 5)",
            "2:1: queue 10: sched 7 is not configured",
            "3:1: queue 11: pipe 9 is not configured",
            "4:1: queue 12 is not configured (used by rule 100)",
        ]
    );
    // A pipe N implicitly has sched N: a queue may name either.
    c.apply_script(
        "pipe 5 config bw 4Mbit/s\nqueue 10 config weight 20 sched 5\n\
         queue 8 config weight 10 pipe 5 mask src-ip 0xffffffff\nadd 1000 queue 10\n",
    )
    .unwrap();
    assert_eq!(
        c.apply(
            &pipelab_lang::parse_line("queue 10 delete")
                .unwrap()
                .unwrap()
        )
        .unwrap_err()
        .to_string(),
        "queue 10 is still used by rule 1000"
    );
    assert_eq!(
        c.apply(&pipelab_lang::parse_line("sched 3 delete").unwrap().unwrap())
            .unwrap_err()
            .to_string(),
        "sched 3 does not exist"
    );
}

/// A pass proves `parse_pipe_params` (the words of `--link`) reads the
/// same parameters as `pipe N config`, with the same messages and hints,
/// and columns counted from the start of its own text.
#[test]
fn pipe_params_alone_match_a_config_line() {
    use pipelab_lang::{parse_pipe_params, Command};
    for words in [
        "bw 10Mbit/s delay 20ms",
        "bw 2Mbit/s queue 100KB loss 1% 25%",
        "delay 5ms 1ms distribution normal",
        "",
    ] {
        let line = format!("pipe 1 config {words}");
        let Ok(Some(Command::PipeConfig { spec, .. })) = parse_line(&line) else {
            panic!("{line}: not a pipe config");
        };
        assert_eq!(parse_pipe_params(words), Ok(spec), "{words}");
    }
    for (words, column) in [
        ("bw 10Mbps", 4),
        ("delay 20ms delay 5ms", 12),
        ("bw 1Mbit/s colour red", 12),
        ("queue 0", 7),
        ("bw", 3),
    ] {
        let line = format!("pipe 1 config {words}");
        let whole = err(&line);
        let alone = match parse_pipe_params(words) {
            Ok(s) => panic!("{words}: expected an error, got {s:?}"),
            Err(e) => e,
        };
        assert_eq!(alone.column, column, "{words}: {alone}");
        assert_eq!(alone.column + 14, whole.column, "{words}");
        assert_eq!(
            (&alone.message, &alone.word),
            (&whole.message, &whole.word),
            "{words}"
        );
        // A hint that points at another word counts from the same start.
        let hint = whole.hint.map(|h| h.replace("column 15", "column 1"));
        assert_eq!(alone.hint, hint, "{words}");
    }
}

/// The hint for an unknown scheduler type lists every type of the
/// engine's registry, in its order (today `fifo, rr, drr, wf2q+, qfq,
/// prio, fq_codel`), so a scheduler added to the registry is offered
/// without editing this file.
#[test]
fn unknown_scheduler_type_lists_the_registry() {
    let names: Vec<&str> = pipelab_engine::sched::registry::names().collect();
    assert_eq!(
        err("sched 1 config type foo").to_string(),
        format!(
            "1:21: unknown scheduler type 'foo': known types: {}",
            names.join(", ")
        )
    );
    assert_eq!(names[..3], ["fifo", "rr", "drr"]);
}

/// 40,000 bad lines: applying the script and rendering its errors takes
/// well under a second (it took 12.5 s when each error scanned the text
/// for its line); the first 50 are shown, then a count of the rest.
#[test]
fn forty_thousand_errors_render_in_linear_time() {
    let mut text = String::from("# a file of typos\n");
    for i in 0..40_000 {
        text.push_str(&format!("pipe {} config bw {}Mbps\n", i % 60_000 + 1, i));
    }
    let t0 = std::time::Instant::now();
    let errs = pipelab_lang::Config::new()
        .apply_script(&text)
        .expect_err("every line is bad");
    let shown = pipelab_lang::render_errors(&errs, "typos.conf", &text);
    let took = t0.elapsed();
    assert_eq!(errs.len(), 40_000);
    eprintln!("40,000 errors: applied and rendered in {took:?}");
    assert!(
        took < std::time::Duration::from_secs(2),
        "40,000 errors took {took:?}"
    );
    assert_eq!(
        shown.matches("error: unknown unit 'Mbps'").count(),
        pipelab_lang::MAX_RENDERED_ERRORS
    );
    assert!(shown.starts_with("error: unknown unit 'Mbps' in '0Mbps'\n --> typos.conf:2:18\n"));
    assert!(
        shown.contains("51 | pipe 50 config bw 49Mbps\n"),
        "{shown:.300}"
    );
    assert!(
        shown.ends_with("and 39950 more errors\n"),
        "{}",
        &shown[shown.len() - 100..]
    );
    // The last error's line is found as fast as the first's.
    let last = &errs[errs.len() - 1];
    let t0 = std::time::Instant::now();
    let r = last.render("typos.conf", &text);
    assert!(r.contains("40001 | pipe 40000 config bw 39999Mbps"), "{r}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(1));
}

/// Characters nobody sees are refused with their line, column and byte
/// offset, before any parsing, by every front door that applies a script.
#[test]
fn nul_bom_and_controls_are_named_with_their_position() {
    let cases: &[(&str, &str)] = &[
        (
            "pipe 1 config\npipe 2 con\0fig",
            "2:11: NUL byte (U+0000) at line 2, column 11 (byte 24) is not allowed: a configuration is text; is this a binary file?",
        ),
        (
            "\u{feff}pipe 1 config",
            "1:1: byte order mark (U+FEFF) at line 1, column 1 (byte 0) is not allowed: save the file as UTF-8 without a byte order mark",
        ),
        (
            "pipe 1 config delay 5ms\u{1b}[2J",
            "1:24: control character U+001B at line 1, column 24 (byte 23) is not allowed",
        ),
        (
            "pipe 1 config\rpipe 2 config",
            "1:14: carriage return (U+000D) not followed by a line feed at line 1, column 14 (byte 13) is not allowed: end lines with \\n or \\r\\n",
        ),
        (
            "add 100 pipe 1 ip from any to any // \u{202e}",
            "1:38: invisible character U+202E at line 1, column 38 (byte 37) is not allowed",
        ),
        (
            "pipe\u{200b}1 config",
            "1:5: invisible character U+200B at line 1, column 5 (byte 4) is not allowed",
        ),
    ];
    for (text, want) in cases {
        let errs = pipelab_lang::Config::new()
            .apply_script(text)
            .expect_err(text);
        assert_eq!(errs[0].to_string(), *want, "{text:?}");
    }
}
