//! Fuzz frame parsing and classification: any bytes, parsed as an Ethernet
//! frame and classified against a fixed ruleset that uses every rule
//! option (plain and negated), tables (numbered and named) and tablearg,
//! keep-state and check-state, must reach a decision
//! without panicking; the counters must account for every packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_classify::frame::parse_ethernet;
use pipelab_classify::{Classifier, Context, Direction};
use pipelab_lang::Config;
use std::sync::OnceLock;

const SCRIPT: &str = "
table 1 add 10.0.0.0/8 10
table 1 add 10.1.0.0/16 11
table 1 add 2001:db8::/32 12
table 2 add 0.0.0.0/0 30000
table T1 create type addr
table T1 add 192.0.2.0/24 11
pipe 10 config
pipe 11 config
pipe 12 config
add 10 count ip from any to any in
add 20 count ip from any to any not out
add 25 check-state :any
add 30 count tcp from 10.0.0.0/8 80,443 to not {192.0.2.1,2001:db8::/48} 1000-2000
add 40 count udp from me to any src-port 53 dst-port 1-1024
add 50 count ip from any to any via eth0 not recv eth1 xmit eth1
add 60 count ip from any to any mac any 02:00:00:00:00:01 not mac 02:00:00:00:00:02 any
add 70 count ip from any to any mac-type 0x88b5,ip,0x86dd-0x86ff
add 80 count ip from any to any not mac-type arp
add 90 count ip from any to any iplen 0-100,1500 not iplen 40
add 100 count tcp from any to any tcpflags syn,!ack not tcpflags rst
add 110 count ip from any to any dscp ef,af11,cs1 not dscp 0
add 120 count ip from any to any uid 1000 not uid alice
add 130 count ip6 from any to any proto tcp not proto udp
add 140 count ip4 from any to any src-ip table(1) not dst-ip table(2,5)
add 150 count icmp from any to any
add 152 count ip from any to any not layer2
add 155 count ip from table(T1) to any keep-state :web
add 157 count udp from any to any keep-state
add 160 skipto tablearg ip from any to table(2)
add 30000 pipe tablearg ip from table(1) to any
add 30010 deny ip from any to any not mac-type 0x88b5
";

struct Fixed {
    cfg: Config,
    ctx: Context,
}

fn fixed() -> &'static Fixed {
    static F: OnceLock<Fixed> = OnceLock::new();
    F.get_or_init(|| {
        let mut cfg = Config::new();
        if let Err(e) = cfg.apply_script(SCRIPT) {
            panic!("the fixed ruleset must apply: {e:?}");
        }
        let ctx = Context {
            me: vec!["10.0.0.1".parse().expect("addr")],
            tables: cfg.tables.clone(),
            ifaces: [("eth0".to_string(), 0), ("eth1".to_string(), 1)]
                .into_iter()
                .collect(),
            users: [("alice".to_string(), 1000)].into_iter().collect(),
            layer2: false,
        };
        Fixed { cfg, ctx }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixed();
    let mut c = Classifier::with_context(f.cfg.rules.iter().map(|(n, r)| (*n, r)), &f.ctx, 1);
    // The first byte chooses the metadata; the rest is the frame.
    let (meta, frame) = data.split_first().map_or((0, data), |(m, r)| (*m, r));
    let mut view = parse_ethernet(frame).view;
    assert_eq!(view.len as usize, frame.len());
    view.dir = match meta & 3 {
        1 => Some(Direction::In),
        2 => Some(Direction::Out),
        _ => None,
    };
    view.in_if = (meta & 4 != 0).then_some(u32::from(meta >> 6));
    view.out_if = (meta & 8 != 0).then_some(1);
    view.uid = (meta & 16 != 0).then_some(1000);
    let m = c.classify(&view, 0);
    assert!(m.rule < c.rules().count());
    // Reinjection after the deciding rule also terminates.
    let _ = c.classify(&view, m.rule + 1);
    // The same packet again meets the state a keep-state rule made.
    let again = c.classify(&view, 0);
    assert!(again.rule < c.rules().count());
    let deciding: u64 = c.rules().map(|(_, _, k)| k.packets).sum();
    assert!(deciding >= 1, "the deciding rule counts the packet");
});
