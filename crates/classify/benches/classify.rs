//! The classifier's cost table, after dummynet-revisited §4.2: entering the
//! classifier, the cost per simple rule (1 vs 100 non-matching rules before
//! the matching one; per rule = difference / 99), and a table lookup with 1
//! and 65536 entries (the paper: 400 ns, 36 ns/rule, 220 ns + 11 ns·log E).
//!
//! Run: `cargo bench -p pipelab-classify --bench classify`. Results and the
//! paper's figures side by side are in BENCHMARKS.md.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pipelab_classify::frame::parse_ethernet;
use pipelab_classify::{Classifier, Context, LpmTable, PacketView};
use pipelab_engine::rng::{stage_rng, StageKind};
use pipelab_engine::FlowKey;
use pipelab_lang::{parse_line, Command, IpNet, RuleSpec};
use rand::Rng;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

fn rule(line: &str) -> RuleSpec {
    match parse_line(line) {
        Ok(Some(Command::Add(r))) => r,
        other => panic!("{line}: {other:?}"),
    }
}

fn udp(src: Ipv4Addr) -> PacketView {
    PacketView::ip(
        FlowKey {
            proto: 17,
            src: IpAddr::V4(src),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            sport: 1234,
            dport: 5001,
        },
        1000,
    )
}

/// `n` simple rules that do not match (source 192.0.2.0/24 addresses),
/// then `pipe 1 ip from any to any`.
fn ruleset(n: u32) -> BTreeMap<u32, RuleSpec> {
    let mut m = BTreeMap::new();
    for i in 0..n {
        let num = 10 + i * 10;
        m.insert(
            num,
            rule(&format!(
                "add {num} pipe 2 ip from 192.0.{}.{} to any",
                i / 256,
                i % 256
            )),
        );
    }
    m.insert(60_000, rule("add 60000 pipe 1 ip from any to any"));
    m
}

fn bench_rules(c: &mut Criterion) {
    let pkt = udp(Ipv4Addr::new(10, 0, 0, 1));
    let mut g = c.benchmark_group("classify");
    // Entering the classifier: one rule, which matches.
    let one = ruleset(0);
    let mut cl = Classifier::new(one.iter().map(|(n, r)| (*n, r)), &[], 1);
    g.bench_function("enter_1_rule", |b| {
        b.iter(|| cl.classify(black_box(&pkt), 0))
    });
    for n in [1u32, 100] {
        let rs = ruleset(n);
        let mut cl = Classifier::new(rs.iter().map(|(n, r)| (*n, r)), &[], 1);
        g.bench_with_input(
            BenchmarkId::new("nonmatching_rules_before_match", n),
            &n,
            |b, _| b.iter(|| cl.classify(black_box(&pkt), 0)),
        );
    }
    g.finish();
}

/// A table of `e` IPv4 entries of random prefix lengths 8..=32, and 1024
/// addresses inside its entries to look up (cycled, so that the branch
/// predictor cannot learn one path).
fn table(e: usize) -> (BTreeMap<IpNet, u32>, Vec<Ipv4Addr>) {
    let mut rng = stage_rng(7, StageKind::Rule, 0);
    let mut t = BTreeMap::new();
    while t.len() < e {
        let a: u32 = rng.gen::<u32>() & 0x0fff_ffff;
        let p: u8 = if e == 1 { 8 } else { rng.gen_range(8..=32) };
        if let Some(n) = IpNet::new(IpAddr::V4(a.into()), p) {
            t.insert(n, rng.gen_range(1..=65_535));
        }
    }
    let nets: Vec<IpNet> = t.keys().copied().collect();
    let probes = (0..1024)
        .map(|i| match nets[i * 7919 % nets.len()].addr() {
            IpAddr::V4(a) => a,
            IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
        })
        .collect();
    (t, probes)
}

fn bench_tables(c: &mut Criterion) {
    let mut g = c.benchmark_group("table");
    for e in [1usize, 65_536] {
        let (t, probes) = table(e);
        let lpm = LpmTable::new(&t);
        let mut i = 0usize;
        g.bench_with_input(BenchmarkId::new("lookup", e), &e, |b, _| {
            b.iter(|| {
                i = (i + 1) & 1023;
                lpm.lookup(black_box(IpAddr::V4(probes[i])))
            })
        });
        // The whole path: enter the classifier, one `pipe tablearg` rule.
        let ctx = Context {
            tables: [(pipelab_lang::TableId::Number(1), t.clone())]
                .into_iter()
                .collect(),
            ..Context::default()
        };
        let r = rule("add 100 pipe tablearg ip from table(1) to any");
        let mut cl = Classifier::with_context([(100, &r)], &ctx, 1);
        let pkts: Vec<PacketView> = probes.iter().map(|a| udp(*a)).collect();
        let mut j = 0usize;
        g.bench_with_input(BenchmarkId::new("classify_tablearg", e), &e, |b, _| {
            b.iter(|| {
                j = (j + 1) & 1023;
                cl.classify(black_box(&pkts[j]), 0)
            })
        });
    }
    g.finish();
}

fn bench_frames(c: &mut Criterion) {
    let b = etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(1234, 5001);
    let mut frame = Vec::new();
    if b.write(&mut frame, &[0u8; 1000]).is_err() {
        return;
    }
    c.bench_function("frame/parse_ethernet_udp4", |bn| {
        bn.iter(|| parse_ethernet(black_box(&frame)))
    });
}

criterion_group!(benches, bench_rules, bench_tables, bench_frames);
criterion_main!(benches);
