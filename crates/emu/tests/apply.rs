//! The emulation core in virtual time: what `apply` keeps, replaces and
//! retires, reinjection (`one_pass 0`) and topology paths at exact
//! instants, and counters that survive a reconfiguration.

use pipelab_classify::{Answer, Direction, PacketView};
use pipelab_emu::{
    lower_config, Compiled, Departure, Egress, Emulation, Exit, Ingress, Reason, Spec,
    TOPO_PIPE_BASE,
};
use pipelab_engine::{Duration, EngineOptions, FlowKey, Instant, Packet};
use pipelab_lang::Config;
use std::net::{IpAddr, Ipv4Addr};

mod common;

fn config(text: &str) -> Config {
    let mut c = Config::new();
    c.apply_script(text).expect("valid configuration");
    c
}

/// The spec of `text` with one synthetic port whose packets enter as `in`.
fn spec(text: &str) -> Spec {
    let mut s = lower_config(&config(text), &mut |p| Err(format!("no file {p}"))).expect("lowers");
    s.ports = Spec::single_port("sim", Some(Direction::In));
    s
}

fn compiled(text: &str) -> Compiled {
    Compiled::new(spec(text), 1).expect("compiles")
}

fn view(p: &Packet) -> PacketView {
    PacketView {
        dir: Some(Direction::In),
        ..PacketView::ip(p.key, p.len)
    }
}

fn udp(tag: u64, dport: u16) -> Packet {
    Packet {
        tag,
        key: FlowKey {
            proto: 17,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            sport: 1000,
            dport,
        },
        ..Packet::new(1000)
    }
}

/// A virtual-time driver: offer packets at given instants, run to the end.
struct Run {
    emu: Emulation,
    now: Instant,
    out: Vec<Departure>,
    /// (tag, instant, exit) of every packet that left or was refused.
    done: Vec<(u64, Instant, Exit)>,
}

impl Run {
    fn new(c: Compiled) -> Run {
        let mut emu = Emulation::new(EngineOptions::default());
        emu.apply(c);
        Run {
            emu,
            now: Instant::ZERO,
            out: Vec::new(),
            done: Vec::new(),
        }
    }

    fn advance(&mut self, to: Instant) {
        while let Some(d) = self.emu.next_deadline().filter(|&d| d <= to) {
            self.step(d);
        }
        self.step(to);
    }

    fn step(&mut self, t: Instant) {
        self.now = t;
        self.emu.advance(t, &mut self.out, &mut view);
        for d in self.out.drain(..) {
            if d.exit != Exit::Duplicated {
                self.done.push((d.pkt.tag, d.at, d.exit));
            }
        }
    }

    fn offer(&mut self, at: Instant, mut p: Packet, port: u16) -> Ingress {
        self.advance(at);
        p.born = at;
        let mut v = view(&p);
        let r = self.emu.ingress(at, p, port, &mut v);
        match r {
            Ingress::Out(k) => self.done.push((p.tag, at, Exit::Deliver { port: k })),
            Ingress::Dropped(why) => self.done.push((p.tag, at, Exit::Dropped(why))),
            Ingress::Answer(a) => self.done.push((p.tag, at, Exit::Answer(a))),
            Ingress::Queued => {}
        }
        r
    }

    fn finish(&mut self) {
        while let Some(d) = self.emu.next_deadline() {
            self.step(d);
        }
    }

    fn delivered(&self) -> Vec<(u64, Instant)> {
        self.done
            .iter()
            .filter(|(_, _, e)| matches!(e, Exit::Deliver { .. }))
            .map(|&(t, at, _)| (t, at))
            .collect()
    }
}

fn ms(n: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(n)
}

/// A pass proves that reconfiguring a pipe in place keeps every packet it
/// holds and applies the new parameters from the next transmission: ten
/// 1000-byte packets queued on a 1 Mbit/s link (8 ms each) all leave; the
/// first two at the old delay, the rest at the new one, with no drop.
#[test]
fn reconfiguring_in_place_keeps_queued_packets() {
    let mut r = Run::new(compiled(
        "pipe 1 config bw 1Mbit/s delay 10ms\nadd 100 pipe 1 ip from any to any\n",
    ));
    for i in 0..10 {
        assert_eq!(r.offer(ms(0), udp(i, 5001), 0), Ingress::Queued);
    }
    r.advance(ms(12));
    let a = r.emu.apply(compiled(
        "pipe 1 config bw 1Mbit/s delay 50ms\nadd 100 pipe 1 ip from any to any\n",
    ));
    assert_eq!(a.reconfigured, vec![1]);
    assert!(a.created.is_empty() && a.retired.is_empty(), "{a:?}");
    r.finish();
    let got = r.delivered();
    assert_eq!(got.len(), 10, "{:?}", r.done);
    // Transmission k ends at 8(k+1) ms; its delay is the one in force
    // when it left the link.
    assert_eq!(got[0], (0, ms(8 + 10)));
    for &(tag, at) in &got[2..] {
        assert_eq!(at, ms(8 * (tag + 1) + 50), "packet {tag}");
    }
    assert_eq!(r.emu.pipe_totals(1).map(|s| s.drops), Some(0));
}

/// A pass proves that a pipe the spec no longer has is retired, not
/// destroyed: what it holds leaves on its schedule, and new traffic
/// (which no rule sends to a pipe any more) passes unshaped at once.
#[test]
fn a_removed_pipe_drains_what_it_holds() {
    let mut r = Run::new(compiled(
        "pipe 1 config delay 30ms\nadd 100 pipe 1 ip from any to any\n",
    ));
    for i in 0..5 {
        r.offer(ms(i), udp(i, 5001), 0);
    }
    let a = r.emu.apply(compiled(""));
    assert_eq!(a.retired, vec![1]);
    assert_eq!(r.offer(ms(10), udp(99, 5001), 0), Ingress::Out(0));
    r.finish();
    let got = r.delivered();
    assert_eq!(got.len(), 6);
    for &(tag, at) in &got {
        let want = if tag == 99 { ms(10) } else { ms(tag + 30) };
        assert_eq!(at, want, "packet {tag}");
    }
    assert_eq!(r.emu.retired_pipes(), 1);
}

/// A pass proves that a change of structure (a mask added) replaces the
/// pipe: the old one drains, the new one is dynamic and takes the number.
#[test]
fn a_structural_change_replaces_the_pipe() {
    let mut r = Run::new(compiled(
        "pipe 1 config bw 1Mbit/s\nadd 100 pipe 1 ip from any to any\n",
    ));
    r.offer(ms(0), udp(0, 5001), 0);
    r.offer(ms(0), udp(1, 5002), 0);
    let a = r.emu.apply(compiled(
        "pipe 1 config bw 1Mbit/s mask dst-port 0xffff\nadd 100 pipe 1 ip from any to any\n",
    ));
    assert_eq!((a.created.clone(), a.retired.clone()), (vec![1], vec![1]));
    // Two flows, each with its own 1 Mbit/s instance: both leave at 8 ms.
    r.offer(ms(1), udp(2, 6001), 0);
    r.offer(ms(1), udp(3, 6002), 0);
    r.finish();
    let got = r.delivered();
    assert_eq!(got.len(), 4);
    assert!(
        got.contains(&(0, ms(8))) && got.contains(&(1, ms(16))),
        "{got:?}"
    );
    assert!(
        got.contains(&(2, ms(9))) && got.contains(&(3, ms(9))),
        "{got:?}"
    );
    assert_eq!(r.emu.pipe_instances(1).map(|i| i.created), Some(2));
}

/// A pass proves that rules the new spec keeps unchanged keep their
/// counters and their `prob` stream (the draws continue, they are not
/// replayed), while a changed rule starts again.
#[test]
fn unchanged_rules_keep_counters_and_draws() {
    let text = "pipe 1 config delay 1ms\nadd 100 prob 0.5 pipe 1 ip from any to any\nadd 200 count ip from any to any\n";
    let decisions = |r: &mut Run, from: u64, n: u64| -> Vec<bool> {
        (from..from + n)
            .map(|i| r.offer(ms(i), udp(i, 5001), 0) == Ingress::Queued)
            .collect()
    };
    // Reference: 200 packets without a reconfiguration.
    let mut a = Run::new(compiled(text));
    let whole = decisions(&mut a, 0, 200);
    // The same with an apply of the same rules (and a new pipe) halfway.
    let mut b = Run::new(compiled(text));
    let mut split = decisions(&mut b, 0, 100);
    b.emu
        .apply(compiled(&format!("{text}pipe 2 config delay 2ms\n")));
    split.extend(decisions(&mut b, 100, 100));
    assert_eq!(whole, split, "the prob stream continues across apply");
    let counters: Vec<(u32, u64)> = b.emu.rules().map(|(n, _, c)| (n, c.packets)).collect();
    let sent = whole.iter().filter(|x| **x).count() as u64;
    assert_eq!(counters[0], (100, sent));
    assert_eq!(counters[1], (200, 200 - sent));
    // A changed rule 200 starts from zero.
    b.emu.apply(compiled(
        "pipe 1 config delay 1ms\nadd 100 prob 0.5 pipe 1 ip from any to any\nadd 200 count udp from any to any\n",
    ));
    let counters: Vec<(u32, u64)> = b.emu.rules().map(|(n, _, c)| (n, c.packets)).collect();
    assert_eq!(counters[1], (200, 0));
}

/// A pass proves reinjection (`one_pass 0`): a packet leaving pipe 1
/// re-enters the rules after the rule that sent it, at the exact instant
/// it left, and crosses pipe 2 too: 10 ms + 5 ms; with `one_pass 1` only
/// pipe 1. Past 64 passes a packet is dropped as looping.
#[test]
fn reinjection_chains_pipes_at_exact_instants() {
    let rules = "pipe 1 config delay 10ms\npipe 2 config delay 5ms\n\
                 add 100 pipe 1 ip from any to any\nadd 200 pipe 2 ip from any to any\n";
    let mut r = Run::new(compiled(&format!("{rules}set one_pass 0\n")));
    r.offer(ms(0), udp(0, 5001), 0);
    r.finish();
    assert_eq!(r.delivered(), vec![(0, ms(15))]);
    let mut r = Run::new(compiled(rules));
    r.offer(ms(0), udp(0, 5001), 0);
    r.finish();
    assert_eq!(r.delivered(), vec![(0, ms(10))]);
    // 70 rules, each sending to pipe 1: the 64th pass drops it.
    let mut text = String::from("pipe 1 config delay 1ms\nset one_pass 0\n");
    for k in 1..=70 {
        text.push_str(&format!("add {} pipe 1 ip from any to any\n", k * 10));
    }
    let mut r = Run::new(compiled(&text));
    r.offer(ms(0), udp(0, 5001), 0);
    r.finish();
    assert_eq!(r.done, vec![(0, ms(64), Exit::Dropped(Reason::Loop))]);
    assert_eq!(r.emu.counts().r#loop, 1);
}

/// Two ports whose frames leave by destination across topology paths.
fn topology_spec(rules: &str, delays_ms: [u64; 2]) -> Spec {
    let mut s = spec(rules);
    common::add_plain_pipes(&mut s, &delays_ms);
    let mut paths = common::vn_paths(2);
    paths.set(0, 1, Some(&[TOPO_PIPE_BASE]));
    paths.set(1, 0, Some(&[TOPO_PIPE_BASE + 1]));
    s.paths = Some(paths);
    s.ports = Spec::vn_ports(2, &[]);
    s
}

/// A pass proves a topology's path follows a rule's pipe at its exact
/// exit instant (10 ms on the rule's pipe, then 5 ms + 0.8 ms on the
/// path), that a destination no port owns is dropped as no route, and
/// that a rerouted pair takes its new path while the other keeps its own.
#[test]
fn topology_paths_follow_rules_exactly() {
    let rules = "pipe 1 config delay 10ms\nadd 100 pipe 1 udp from any to any 5001\n";
    let s = topology_spec(rules, [5, 7]);
    let mut r = Run::new(Compiled::new(s, 1).expect("compiles"));
    // vn0 (10.0.0.1) to vn1 (10.0.0.2): rule 100, then the path.
    r.offer(ms(0), udp(0, 5001), 0);
    // Port 1 to 10.0.0.2 (itself): no path from 1 to 1.
    assert_eq!(
        r.offer(ms(0), udp(1, 9), 1),
        Ingress::Dropped(Reason::NoRoute)
    );
    // Not 5001: straight onto the path.
    r.offer(ms(0), udp(2, 9), 0);
    r.finish();
    let got = r.delivered();
    let tx = Duration::from_micros(800); // 1000 B at 10 Mbit/s
    assert!(got.contains(&(0, ms(15) + tx)), "{got:?}");
    assert!(got.contains(&(2, ms(5) + tx)), "{got:?}");
    assert!(r
        .done
        .iter()
        .all(|&(t, _, e)| t != 0 || e == Exit::Deliver { port: 1 }));
    // Reroute 0 → 1 over pipe TOPO+1 (7 ms): only that pair changes.
    let mut s = topology_spec(rules, [5, 7]);
    if let Some(p) = s.paths.as_mut() {
        p.set(0, 1, Some(&[TOPO_PIPE_BASE + 1]));
    }
    let a = r.emu.apply(Compiled::new(s, 1).expect("compiles"));
    assert_eq!(a.paths_changed, 1);
    r.offer(ms(100), udp(3, 9), 0);
    r.finish();
    assert!(r.delivered().contains(&(3, ms(107) + tx)));
}

/// A pass proves references are checked before anything is applied: a
/// path through a pipe the spec lacks, a port leaving by a port that does
/// not exist.
#[test]
fn dangling_references_are_refused() {
    let mut s = topology_spec("", [5, 7]);
    s.pipes.remove(&(TOPO_PIPE_BASE + 1));
    let e = Compiled::new(s, 1).unwrap_err().to_string();
    assert_eq!(
        e,
        "path from port 1 to port 0: pipe 65537 is not configured"
    );
    let mut s = spec("");
    s.ports[0].egress = Egress::Port(3);
    let e = Compiled::new(s, 1).unwrap_err().to_string();
    assert_eq!(e, "port 0 (sim): leaves by port 3, which does not exist");
}

/// A pass proves a flow queue reconfigured in place keeps its queued
/// packets and counters (its weight applies from the next packet), and
/// that a pipe deleted and created again reuses the drained engine pipe
/// rather than growing the engine.
#[test]
fn queues_reconfigure_in_place_and_drained_pipes_are_reused() {
    let conf = |w: u32| {
        format!(
            "pipe 1 config bw 1Mbit/s\nsched 1 config type wf2q+\n\
             queue 10 config weight {w} sched 1\nqueue 11 config weight 1 sched 1\n\
             add 100 queue 10 udp from any to any 5001\nadd 200 queue 11 udp from any to any 5002\n"
        )
    };
    let mut r = Run::new(compiled(&conf(1)));
    for i in 0..20 {
        r.offer(ms(0), udp(i, 5001 + (i % 2) as u16), 0);
    }
    let a = r.emu.apply(compiled(&conf(3)));
    assert!(a.created.is_empty() && a.retired.is_empty(), "{a:?}");
    r.finish();
    assert_eq!(r.delivered().len(), 20, "nothing queued was lost");
    let q = r.emu.queue(10).expect("queue 10");
    assert_eq!(r.emu.queue_stats(q).map(|s| s.flows.served), Some(10));
    // Delete pipe 1 (and what uses it), let it drain, create it again.
    r.emu.apply(compiled(""));
    assert_eq!(r.emu.retired_pipes(), 1);
    r.finish();
    r.emu.apply(compiled(
        "pipe 1 config delay 1ms\nadd 100 pipe 1 ip from any to any\n",
    ));
    assert_eq!(r.emu.retired_pipes(), 0, "the drained pipe was reused");
    r.offer(ms(1000), udp(99, 9), 0);
    r.finish();
    assert!(r.delivered().contains(&(99, ms(1001))));
}

/// A pass proves dummynet's scheduler mask (`sched N config mask ...`)
/// runs as a mask on pipe N: one scheduler instance, with its own link,
/// per masked key; and that a mask given on both is refused.
#[test]
fn a_scheduler_mask_makes_instances_with_their_own_links() {
    let mut r = Run::new(compiled(
        "pipe 1 config bw 1Mbit/s\nsched 1 config type drr mask dst-port 0xffff\n\
         add 100 pipe 1 ip from any to any\n",
    ));
    r.offer(ms(0), udp(0, 5001), 0);
    r.offer(ms(0), udp(1, 5002), 0);
    r.finish();
    // Each flow on its own 1 Mbit/s link: both leave after 8 ms.
    assert_eq!(r.delivered(), vec![(0, ms(8)), (1, ms(8))]);
    assert_eq!(r.emu.pipe_instances(1).map(|i| i.created), Some(2));
    let e = lower_config(
        &config(
            "pipe 1 config bw 1Mbit/s mask all\nsched 1 config type drr mask dst-port 0xffff\n",
        ),
        &mut |_| Err(String::new()),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "sched 1: a mask on both pipe 1 and sched 1: give it once (they mean the same)"
    );
}

fn tcp(tag: u64, dport: u16) -> Packet {
    let mut p = udp(tag, dport);
    p.key.proto = 6;
    p
}

/// A pass proves that `reset` and `unreach` rules drop what they match
/// with their own reasons and ask for an answer exactly where the RFCs
/// allow one: a TCP segment to port 80 gets a reset, a UDP datagram to
/// port 53 an ICMP host unreachable; a RST, and UDP under `reset`, are
/// only dropped. Counted: 3 resets, 1 unreach, 2 answers.
#[test]
fn reset_and_unreach_rules_drop_and_ask_for_answers() {
    let mut r = Run::new(compiled(
        "pipe 1 config delay 5ms
         add 10 reset ip from any to any dst-port 80
         add 20 unreach host udp from any to any dst-port 53
         add 30 pipe 1 ip from any to any
",
    ));
    assert_eq!(
        r.offer(ms(0), tcp(1, 80), 0),
        Ingress::Answer(Answer::Reset)
    );
    assert_eq!(
        r.offer(ms(1), udp(2, 53), 0),
        Ingress::Answer(Answer::Unreach(1))
    );
    assert_eq!(
        r.offer(ms(2), udp(3, 80), 0),
        Ingress::Dropped(Reason::Reset),
        "reset answers only TCP"
    );
    // A segment that is itself a RST is never answered.
    let mut rst = tcp(4, 80);
    let mut v = view(&rst);
    v.tcp_flags = Some(0x04);
    rst.born = ms(3);
    assert_eq!(
        r.emu.ingress(ms(3), rst, 0, &mut v),
        Ingress::Dropped(Reason::Reset)
    );
    assert_eq!(r.offer(ms(4), udp(5, 5001), 0), Ingress::Queued);
    r.finish();
    let c = r.emu.counts();
    assert_eq!((c.reset, c.unreach, c.answers), (3, 1, 2), "{c:?}");
    assert_eq!(r.delivered(), vec![(5, ms(9))]);
    assert_eq!(Reason::from(Answer::Unreach(3)).name(), "unreach");
}

/// A pass proves the black-hole window of `set_pipe_down`: with packets
/// every 10 ms into a 10 ms pipe down in [100 ms, 200 ms), exactly the
/// ten arrivals of the window are dropped as `down` (counted by the pipe
/// and the engine), a packet already inside when it began still leaves,
/// and traffic passes again from 200 ms without anyone bringing the pipe
/// up. The window survives a reconfiguration that makes the pipe anew.
#[test]
fn a_down_pipe_black_holes_its_window_then_passes_again() {
    let text = "pipe 1 config delay 10ms\nadd 100 pipe 1 ip from any to any\n";
    let mut r = Run::new(compiled(text));
    assert!(r.emu.set_pipe_down(1, Some((ms(100), ms(200)))));
    assert!(!r.emu.set_pipe_down(7, Some((ms(0), ms(1)))), "no pipe 7");
    for i in 0..10 {
        r.offer(ms(10 * i), udp(i, 5001), 0);
    }
    // Made anew (a mask is structure): the window stays with number 1.
    let a = r.emu.apply(compiled(
        "pipe 1 config delay 10ms mask dst-port 0xffff\nadd 100 pipe 1 ip from any to any\n",
    ));
    assert_eq!(a.created, vec![1]);
    assert_eq!(r.emu.pipe_down(1), Some((ms(100), ms(200))));
    for i in 10..30 {
        r.offer(ms(10 * i), udp(i, 5001), 0);
    }
    r.finish();
    let down: Vec<u64> = r
        .done
        .iter()
        .filter(|(_, _, e)| *e == Exit::Dropped(Reason::Down))
        .map(|&(t, _, _)| t)
        .collect();
    assert_eq!(down, (10..20).collect::<Vec<_>>());
    let delivered = r.delivered();
    assert_eq!(delivered.len(), 20);
    assert!(delivered.contains(&(9, ms(100))), "inside at 100 ms, left");
    assert!(delivered.contains(&(20, ms(210))), "passes again at 200 ms");
    assert_eq!(r.emu.pipe_totals(1).map(|s| s.down_drops), Some(10));
    assert_eq!(r.emu.engine_stats().dropped_down, 10);
    // Up again at once.
    assert!(r.emu.set_pipe_down(1, None));
    assert_eq!(r.emu.pipe_down(1), None);
}

/// Pass proves `layer2` follows where the emulation sees its packets: at
/// layer 2 (bridge mode, `Env::layer2`) a `layer2` rule matches and a
/// `not layer2` rule does not; at layer 3 (sim, shell, host, attach,
/// topologies) the other way round; a rule without the word matches at
/// both.
#[test]
fn layer2_rules_match_where_frames_are_seen_at_layer_2() {
    for at_l2 in [false, true] {
        for (rule, dropped) in [("layer2", at_l2), ("not layer2", !at_l2), ("", true)] {
            let mut s = spec(&format!("add 100 deny ip from any to any {rule}\n"));
            s.env.layer2 = at_l2;
            let mut r = Run::new(Compiled::new(s, 1).expect("compiles"));
            let got = r.offer(ms(0), udp(1, 5001), 0);
            let want = if dropped {
                Ingress::Dropped(Reason::Rule)
            } else {
                Ingress::Out(0)
            };
            assert_eq!(got, want, "'{rule}' at layer {}", if at_l2 { 2 } else { 3 });
        }
    }
}
