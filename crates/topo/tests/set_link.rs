//! Changing a link's attributes in a running network (`Network::set_link`).

use pipelab_engine::{Duration, Rate};
use pipelab_topo::gen::ring;
use pipelab_topo::model::{LinkAttrs, RoleAttrs};
use pipelab_topo::{Metric, Mode, Network};

fn attrs() -> RoleAttrs {
    RoleAttrs {
        client_stub: LinkAttrs::new(Rate::from_bps(10_000_000), Duration::from_millis(1)),
        stub_stub: LinkAttrs::new(Rate::from_bps(100_000_000), Duration::from_millis(5)),
        ..RoleAttrs::default()
    }
}

#[test]
fn hop_by_hop_changes_the_two_pipes_of_the_link() {
    let t = ring(4, 1, &attrs()).unwrap();
    let (r0, r1) = (t.nodes[0].id, t.nodes[2].id);
    let mut net = Network::new(t, Mode::HopByHop, Metric::Delay).unwrap();
    let c = net
        .set_link(r0, r1, |l| l.delay = Duration::from_millis(7))
        .unwrap();
    assert_eq!(c.pipes.len(), 2, "{c:?}");
    for &p in &c.pipes {
        assert_eq!(
            net.distilled().pipes[p as usize].delay,
            Duration::from_millis(7)
        );
    }
    // vn0 -> vn1 keeps r0-r1 (7 ms < 15 ms around); vn0 -> vn2 had a tie
    // (10 ms either way) and now goes around r3.
    assert_eq!(c.routes, vec![(1, 5), (5, 1)], "{c:?}");
    // 20 ms: the way around (15 ms) wins, both directions reroute.
    let c = net
        .set_link(r0, r1, |l| l.delay = Duration::from_millis(20))
        .unwrap();
    assert!(
        c.routes.contains(&(1, 3)) && c.routes.contains(&(3, 1)),
        "{c:?}"
    );
    assert!(net.set_link(r0, 99, |_| {}).is_err());
}

#[test]
fn end_to_end_pipes_take_the_new_bottleneck() {
    let t = ring(4, 1, &attrs()).unwrap();
    let vns = t.vns();
    let (v0, r0) = (t.nodes[vns[0]].id, t.nodes[0].id);
    let mut net = Network::new(t, Mode::EndToEnd, Metric::Delay).unwrap();
    let c = net
        .set_link(v0, r0, |l| l.bw = Rate::from_bps(1_000_000))
        .unwrap();
    // Every pipe out of or into VN 0 crosses its access link.
    assert_eq!(c.pipes.len(), 6, "{c:?}");
    for &p in &c.pipes {
        assert_eq!(
            net.distilled().pipes[p as usize].bw,
            Rate::from_bps(1_000_000)
        );
    }
}
