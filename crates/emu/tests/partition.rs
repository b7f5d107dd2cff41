//! One emulation split over two workers (`pipelab_emu::partition`), in
//! virtual time: hand-offs at pipes and along topology paths give the
//! same departures, at the same instants, as one emulation owning every
//! pipe.

use pipelab_classify::PacketView;
use pipelab_emu::{
    lower_config, Compiled, Departure, Emulation, Exit, Handoff, Ingress, Partition, Spec,
    TOPO_PIPE_BASE,
};
use pipelab_engine::{Duration, EngineOptions, FlowKey, Instant, Packet};
use pipelab_lang::Config;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

mod common;

fn ms(n: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(n)
}

fn udp(tag: u64, dst: u8) -> Packet {
    Packet {
        tag,
        key: FlowKey {
            proto: 17,
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, dst)),
            sport: 1000,
            dport: 5001,
        },
        ..Packet::new(1000)
    }
}

fn view(p: &Packet) -> PacketView {
    PacketView::ip(p.key, p.len)
}

/// Three ports; port 0 to port 1 crosses the three topology pipes
/// 0, 1, 2 (5 ms each at 10 Mbit/s), port 0 to 2 crosses pipe 3 only;
/// `rules` in front.
fn spec(rules: &str) -> Spec {
    let mut c = Config::new();
    c.apply_script(rules).expect("valid");
    let mut s = lower_config(&c, &mut |p| Err(format!("no file {p}"))).expect("lowers");
    common::add_plain_pipes(&mut s, &[5, 5, 5, 5]);
    let mut paths = common::vn_paths(3);
    let t = TOPO_PIPE_BASE;
    paths.set(0, 1, Some(&[t, t + 1, t + 2]));
    paths.set(0, 2, Some(&[t + 3]));
    s.paths = Some(paths);
    s.ports = Spec::vn_ports(3, &[]);
    s
}

/// Workers in virtual time: each advanced to every instant any of them
/// has work at, hand-offs carried at once.
struct Workers {
    emus: Vec<Emulation>,
    /// (tag, instant, exit) of every departure.
    done: Vec<(u64, Instant, Exit)>,
    handoffs: u64,
}

impl Workers {
    fn new(s: &Spec, owners: &BTreeMap<u32, u16>, k: u16) -> Workers {
        let emus = (0..k)
            .map(|w| {
                let mut e = Emulation::new(EngineOptions::default());
                if k > 1 {
                    e.set_partition(Some(Partition::new(w, k, owners.clone())));
                }
                e.apply(Compiled::new(s.clone(), 1).expect("compiles"));
                e
            })
            .collect();
        Workers {
            emus,
            done: Vec::new(),
            handoffs: 0,
        }
    }

    fn carry(&mut self) {
        loop {
            let mut hs: Vec<Handoff> = Vec::new();
            for e in &mut self.emus {
                e.take_handoffs(&mut hs);
            }
            if hs.is_empty() {
                return;
            }
            for h in hs {
                self.handoffs += 1;
                let (tag, at) = (h.pkt.tag, h.at);
                match self.emus[h.to as usize].resume(h) {
                    Ingress::Queued => {}
                    Ingress::Out(p) => self.done.push((tag, at, Exit::Deliver { port: p })),
                    Ingress::Dropped(r) => self.done.push((tag, at, Exit::Dropped(r))),
                    Ingress::Answer(a) => self.done.push((tag, at, Exit::Answer(a))),
                }
            }
        }
    }

    fn step(&mut self, t: Instant) {
        let mut out: Vec<Departure> = Vec::new();
        for e in &mut self.emus {
            e.advance(t, &mut out, &mut |p| view(p));
        }
        self.done
            .extend(out.iter().map(|d| (d.pkt.tag, d.at, d.exit)));
        self.carry();
    }

    fn run_to(&mut self, to: Instant) {
        while let Some(d) = self
            .emus
            .iter_mut()
            .filter_map(|e| e.next_deadline())
            .min()
            .filter(|&d| d <= to)
        {
            self.step(d);
        }
        self.step(to);
    }

    fn offer(&mut self, w: usize, at: Instant, pkt: Packet, port: u16) {
        self.run_to(at);
        let mut v = view(&pkt);
        let tag = pkt.tag;
        match self.emus[w].ingress(at, pkt, port, &mut v) {
            Ingress::Queued => {}
            Ingress::Out(p) => self.done.push((tag, at, Exit::Deliver { port: p })),
            Ingress::Dropped(r) => self.done.push((tag, at, Exit::Dropped(r))),
            Ingress::Answer(a) => self.done.push((tag, at, Exit::Answer(a))),
        }
        self.carry();
    }
}

fn run(rules: &str, owners: &[(u32, u16)], k: u16) -> (Vec<(u64, Instant, Exit)>, u64) {
    let owners: BTreeMap<u32, u16> = owners.iter().copied().collect();
    let mut w = Workers::new(&spec(rules), &owners, k);
    for i in 0..20u64 {
        let dst = if i % 3 == 0 { 3 } else { 2 };
        w.offer(0, ms(i), udp(i, dst), 0);
    }
    w.run_to(ms(1000));
    let mut done = w.done;
    done.sort_by_key(|&(t, at, _)| (at, t));
    (done, w.handoffs)
}

/// A pass proves a path whose hops alternate between two workers (and a
/// rule's pipe owned by the other worker before it) delivers every
/// packet at the instant, and by the port, one emulation does: the
/// hand-offs carry each packet's exact exit instant.
#[test]
fn handoffs_keep_exact_instants() {
    let t = TOPO_PIPE_BASE;
    for rules in [
        "",
        "pipe 1 config delay 3ms\nadd 100 pipe 1 udp from any to any\n",
    ] {
        let (one, none) = run(rules, &[], 1);
        let owners = [(1, 1), (t, 0), (t + 1, 1), (t + 2, 0), (t + 3, 1)];
        let (two, handed) = run(rules, &owners, 2);
        assert_eq!(none, 0);
        assert_eq!(one.len(), 20);
        assert_eq!(one, two, "rules {rules:?}");
        // Without the rule: the 13 packets to port 1 cross from worker
        // 0 to 1 and back, the 7 to port 2 from 0 to 1. With it: every
        // packet goes to worker 1 for pipe 1, then those to port 1
        // cross three times more, those to port 2 stay.
        let expected = if rules.is_empty() {
            13 * 2 + 7
        } else {
            13 * 4 + 7
        };
        assert_eq!(handed, expected, "rules {rules:?}");
    }
}

/// Answers the paths of [`spec`] on demand, counting the questions.
#[derive(Debug, Default)]
struct Asked(std::sync::Mutex<Vec<(usize, usize)>>);

impl pipelab_emu::PathSource for Asked {
    fn path(&self, src: usize, dst: usize) -> Option<Vec<u32>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((src, dst));
        let t = TOPO_PIPE_BASE;
        match (src, dst) {
            (0, 1) => Some(vec![t, t + 1, t + 2]),
            (0, 2) => Some(vec![t + 3]),
            _ => None,
        }
    }
}

/// A pass proves paths on demand ([`pipelab_emu::Paths::on_demand`], a
/// live topology's route cache) deliver every packet at the instant and
/// by the port fixed paths do, on one worker and on two whose hops
/// alternate (the worker a packet is handed to asks for the pair's path
/// itself), and that each worker asks for a pair once, at its first
/// packet, and never for a pair no packet takes.
#[test]
fn paths_on_demand_deliver_as_fixed_paths() {
    let t = TOPO_PIPE_BASE;
    let owners: BTreeMap<u32, u16> = [(t, 0), (t + 1, 1), (t + 2, 0), (t + 3, 1)]
        .into_iter()
        .collect();
    for k in [1u16, 2] {
        let fixed = {
            let mut w = Workers::new(&spec(""), &owners, k);
            for i in 0..20u64 {
                w.offer(0, ms(i), udp(i, if i % 3 == 0 { 3 } else { 2 }), 0);
            }
            w.run_to(ms(1000));
            let mut d = w.done;
            d.sort_by_key(|&(t, at, _)| (at, t));
            d
        };
        let asked = std::sync::Arc::new(Asked::default());
        let mut s = spec("");
        let fixed_paths = s.paths.take().expect("paths");
        s.paths = Some(pipelab_emu::Paths::on_demand(
            3,
            fixed_paths.dest.clone(),
            asked.clone(),
        ));
        let mut w = Workers::new(&s, &owners, k);
        for i in 0..20u64 {
            w.offer(0, ms(i), udp(i, if i % 3 == 0 { 3 } else { 2 }), 0);
        }
        w.run_to(ms(1000));
        let mut lazy = w.done;
        lazy.sort_by_key(|&(t, at, _)| (at, t));
        assert_eq!(lazy.len(), 20);
        assert_eq!(lazy, fixed, "{k} workers");
        let mut q = asked.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        q.sort_unstable();
        // Worker 0 admits both pairs; with two, worker 1 is handed
        // packets of both and asks for each once too.
        let want: Vec<(usize, usize)> = if k == 1 {
            vec![(0, 1), (0, 2)]
        } else {
            vec![(0, 1), (0, 1), (0, 2), (0, 2)]
        };
        assert_eq!(q, want, "{k} workers");
    }
}
