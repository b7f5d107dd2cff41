//! `pipelab topo gen`: the generators of `pipelab_topo::gen` (ModelNet's
//! synthetic Create phase) on the command line, written as GML or TOML.

use clap::builder::RangedU64ValueParser;
use clap::{Args, Subcommand, ValueEnum};
use pipelab_topo::gen::{self, TransitStub, Waxman};
use pipelab_topo::model::{LinkClass, RoleAttrs};
use pipelab_topo::{LinkSet, Role, Topology};
use std::path::PathBuf;

/// The most nodes `topo gen` makes (distilling even a tenth of them end to
/// end is out of reach).
pub const MAX_NODES: u128 = 1_000_000;

/// Each size option is at most this (the node count is checked as well).
const MAX_COUNT: u64 = MAX_NODES as u64;

fn count(min: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(min..=MAX_COUNT)
}

/// A value of a `topo gen` option that is refused (clap shows it after
/// the option's name).
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    /// Not a number.
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// A probability outside [0, 1].
    #[error("{0} is not in [0, 1]")]
    NotAProbability(f64),
    /// Not a positive number.
    #[error("{0} is not a positive number")]
    NotPositive(f64),
    /// A link class's attributes that do not parse (a caret under the
    /// word).
    #[error("{}", crate::caret(text, error))]
    LinkSet {
        /// The words.
        text: String,
        /// Why, at its column.
        error: Box<pipelab_topo::CommandError>,
    },
}

/// Why `pipelab topo gen` failed.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The topology would have too many nodes.
    #[error("{what} makes {nodes} nodes, more than {MAX_NODES}")]
    TooBig {
        /// The generator and its sizes.
        what: String,
        /// Its nodes.
        nodes: u128,
    },
    /// The topology would have more nodes than can be counted.
    #[error("{what} makes more than {MAX_NODES} nodes")]
    Uncounted {
        /// The generator and its sizes.
        what: String,
    },
    /// The generator refused its parameters, or the topology cannot be
    /// written as TOML.
    #[error("{what}: {error}")]
    Topology {
        /// The generator and its sizes.
        what: String,
        /// Why.
        error: pipelab_topo::TopoError,
    },
    /// `-o FILE` cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn number(s: &str) -> Result<f64, ValueError> {
    s.trim()
        .parse()
        .map_err(|_| ValueError::NotANumber(s.to_string()))
}

fn probability(s: &str) -> Result<f64, ValueError> {
    let v = number(s)?;
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(ValueError::NotAProbability(v))
    }
}

fn positive(s: &str) -> Result<f64, ValueError> {
    let v = number(s)?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ValueError::NotPositive(v))
    }
}

/// Parse a link class's attributes, `bw 2Mbit/s delay 1ms loss 1.5% queue
/// 50` and pipe words (`jitter 5ms codel ecn`; any subset, in any order;
/// `bw=2Mbit/s` works too), with the
/// topology command grammar's [`LinkSet`] (values read by the command
/// language's units, as in `link A B set`); an error shows the words with
/// a caret.
fn parse_link_set(s: &str) -> Result<Box<LinkSet>, ValueError> {
    pipelab_topo::command::parse_link_set(s)
        .map(Box::new)
        .map_err(|error| ValueError::LinkSet {
            text: s.to_string(),
            error: Box::new(error),
        })
}

/// The access links of the VNs (client–stub class).
#[derive(Args, Debug, Clone, Default)]
pub struct AccessArg {
    /// VN access links (class client–stub), any subset of
    /// 'bw RATE delay TIME loss P queue N' and any pipe words ('jitter
    /// 5ms codel ecn', as `link A B set` takes them) [default: bw
    /// 10Mbit/s delay 1ms].
    #[arg(long, visible_alias = "client-stub", value_name = "ATTRS", value_parser = parse_link_set)]
    access: Option<Box<LinkSet>>,
}

/// Links between stub routers (stub–stub class).
#[derive(Args, Debug, Clone, Default)]
pub struct StubArg {
    /// Router–router links (class stub–stub) [default: bw 100Mbit/s
    /// delay 5ms]; for waxman the delay is scaled by the link's length
    /// over the unit square's diagonal.
    #[arg(long, visible_alias = "stub-stub", value_name = "ATTRS", value_parser = parse_link_set)]
    stub_link: Option<Box<LinkSet>>,
}

/// Links of the transit domain and to it.
#[derive(Args, Debug, Clone, Default)]
pub struct TransitArgs {
    /// Stub-to-transit uplinks (class stub–transit) [default: bw 100Mbit/s
    /// delay 10ms].
    #[arg(long, visible_alias = "stub-transit", value_name = "ATTRS", value_parser = parse_link_set)]
    uplink: Option<Box<LinkSet>>,
    /// Transit–transit links [default: bw 1Gbit/s delay 20ms].
    #[arg(long, visible_alias = "transit-transit", value_name = "ATTRS", value_parser = parse_link_set)]
    transit_link: Option<Box<LinkSet>>,
}

/// File formats `topo gen` writes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ModelNet's GML.
    Gml,
    /// pipelab's native TOML.
    Toml,
}

/// Where and how to write the topology.
#[derive(Args, Debug, Clone)]
pub struct OutArgs {
    /// Write to FILE instead of stdout (TOML if it ends in `.toml`, else
    /// GML, unless --format says).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// gml (default) or toml.
    #[arg(long, value_enum)]
    format: Option<Format>,
}

/// `pipelab topo gen` kinds.
#[derive(Subcommand, Debug)]
pub enum GenKind {
    /// A ring of stub routers, each with --clients VNs (ModelNet §4.1's
    /// example is --routers 20 --clients 20).
    Ring {
        /// Routers on the ring.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 20, value_parser = count(1))]
        routers: usize,
        /// VNs on each router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 20, value_parser = count(0))]
        clients: usize,
        #[command(flatten)]
        access: AccessArg,
        #[command(flatten)]
        stub: StubArg,
        #[command(flatten)]
        out: OutArgs,
    },
    /// One stub router with --clients VNs.
    Star {
        /// VNs on the router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 8, value_parser = count(0))]
        clients: usize,
        #[command(flatten)]
        access: AccessArg,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Two stub routers joined by one bottleneck link (--stub-link).
    Dumbbell {
        /// VNs on the left router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 2, value_parser = count(0))]
        left: usize,
        /// VNs on the right router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 2, value_parser = count(0))]
        right: usize,
        #[command(flatten)]
        access: AccessArg,
        #[command(flatten)]
        stub: StubArg,
        #[command(flatten)]
        out: OutArgs,
    },
    /// A tree of stub routers --depth levels below the root, --fanout
    /// children each, --clients VNs on every leaf router.
    Tree {
        /// Levels below the root (0: one router).
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 2, value_parser = count(0))]
        depth: usize,
        /// Children of each inner router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 2, value_parser = count(1))]
        fanout: usize,
        /// VNs on each leaf router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 2, value_parser = count(0))]
        clients: usize,
        #[command(flatten)]
        access: AccessArg,
        #[command(flatten)]
        stub: StubArg,
        #[command(flatten)]
        out: OutArgs,
    },
    /// GT-ITM-style transit-stub: --transit routers in a ring with random
    /// chords, --stubs stub routers on each, --clients VNs on each stub.
    ///
    /// Example:
    ///   pipelab topo gen transit-stub --transit 4 --stubs 3 --clients 10 --access 'bw 2Mbit/s delay 1ms' -o ts.gml
    TransitStub {
        /// Transit routers.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 4, value_parser = count(1))]
        transit: usize,
        /// Stub routers on each transit router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 3, value_parser = count(0))]
        stubs: usize,
        /// VNs on each stub router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 4, value_parser = count(0))]
        clients: usize,
        /// Probability of a chord between two non-adjacent transit routers.
        #[arg(long, allow_negative_numbers = true, value_name = "P", default_value_t = 0.25, value_parser = probability)]
        chord_prob: f64,
        /// Seed of the random chords.
        #[arg(
            long,
            allow_negative_numbers = true,
            value_name = "N",
            default_value_t = 1
        )]
        seed: u64,
        #[command(flatten)]
        access: AccessArg,
        #[command(flatten)]
        transit_links: TransitArgs,
        #[command(flatten)]
        out: OutArgs,
    },
    /// Waxman's random graph: --routers in the unit square, linked with
    /// probability alpha·exp(−d/(beta·√2)), then joined into one component.
    Waxman {
        /// Routers.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 20,
              value_parser = RangedU64ValueParser::<usize>::new().range(1..=100_000))]
        routers: usize,
        /// VNs on each router.
        #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 2, value_parser = count(0))]
        clients: usize,
        /// Link density, in [0, 1].
        #[arg(long, allow_negative_numbers = true, value_name = "A", default_value_t = 0.4, value_parser = probability)]
        alpha: f64,
        /// Share of long links, > 0.
        #[arg(long, allow_negative_numbers = true, value_name = "B", default_value_t = 0.2, value_parser = positive)]
        beta: f64,
        /// Seed of the placement and the links.
        #[arg(
            long,
            allow_negative_numbers = true,
            value_name = "N",
            default_value_t = 1
        )]
        seed: u64,
        #[command(flatten)]
        access: AccessArg,
        #[command(flatten)]
        stub: StubArg,
        #[command(flatten)]
        out: OutArgs,
    },
}

/// Link attributes by class: the defaults with the given changes, and
/// the pipe words each class's links take (given after generation,
/// [`pipelab_topo::gen::give_words`]).
fn role_attrs(
    access: &AccessArg,
    stub: Option<&StubArg>,
    transit: Option<&TransitArgs>,
) -> (RoleAttrs, Vec<(LinkClass, LinkSet)>) {
    let mut a = RoleAttrs::default();
    let mut words = Vec::new();
    let mut give = |s: &LinkSet, class: LinkClass, attrs: &mut pipelab_topo::LinkAttrs| {
        s.apply_to_attrs(attrs);
        words.push((class, s.clone()));
    };
    if let Some(s) = &access.access {
        give(s, LinkClass::ClientStub, &mut a.client_stub);
    }
    if let Some(s) = stub.and_then(|s| s.stub_link.as_ref()) {
        give(s, LinkClass::StubStub, &mut a.stub_stub);
    }
    if let Some(t) = transit {
        if let Some(s) = &t.uplink {
            give(s, LinkClass::StubTransit, &mut a.stub_transit);
        }
        if let Some(s) = &t.transit_link {
            give(s, LinkClass::TransitTransit, &mut a.transit_transit);
        }
    }
    (a, words)
}

/// Refuse a topology of more than [`MAX_NODES`] nodes before making it;
/// `what` names the options that set its size.
fn check_size(nodes: Option<u128>, what: &str) -> Result<(), GenError> {
    match nodes {
        Some(n) if n <= MAX_NODES => Ok(()),
        Some(nodes) => Err(GenError::TooBig {
            what: what.to_string(),
            nodes,
        }),
        None => Err(GenError::Uncounted {
            what: what.to_string(),
        }),
    }
}

/// Routers with `clients` VNs each, plus `extra` nodes.
fn routers_with_clients(routers: usize, clients: usize, extra: u128) -> Option<u128> {
    (routers as u128)
        .checked_mul(1 + clients as u128)?
        .checked_add(extra)
}

/// Nodes of a tree: `1 + f + ... + f^depth` routers and `clients` VNs on
/// each of the `f^depth` leaves.
fn tree_nodes(depth: usize, fanout: usize, clients: usize) -> Option<u128> {
    let mut total: u128 = 0;
    let mut level: u128 = 1;
    for d in 0..=depth {
        total = total.checked_add(level)?;
        if total > MAX_NODES {
            return None;
        }
        if d < depth {
            level = level.checked_mul(fanout as u128)?;
        }
    }
    total.checked_add(level.checked_mul(clients as u128)?)
}

/// Make the topology; returns it, the command that made it (kind and
/// sizes) and where to write it.
fn make(kind: GenKind) -> Result<(Topology, String, OutArgs), GenError> {
    let lib = |what: &str| {
        let what = what.to_string();
        move |error: pipelab_topo::TopoError| GenError::Topology { what, error }
    };
    Ok(match kind {
        GenKind::Ring {
            routers,
            clients,
            access,
            stub,
            out,
        } => {
            let what = format!("ring --routers {routers} --clients {clients}");
            check_size(routers_with_clients(routers, clients, 0), &what)?;
            let (a, words) = role_attrs(&access, Some(&stub), None);
            let mut t = gen::ring(routers, clients, &a).map_err(lib(&what))?;
            give_words(&mut t, &words, &what)?;
            (t, what, out)
        }
        GenKind::Star {
            clients,
            access,
            out,
        } => {
            let what = format!("star --clients {clients}");
            check_size(routers_with_clients(1, clients, 0), &what)?;
            let (a, words) = role_attrs(&access, None, None);
            let mut t = gen::star(clients, &a).map_err(lib(&what))?;
            give_words(&mut t, &words, &what)?;
            (t, what, out)
        }
        GenKind::Dumbbell {
            left,
            right,
            access,
            stub,
            out,
        } => {
            let what = format!("dumbbell --left {left} --right {right}");
            check_size(Some(2 + left as u128 + right as u128), &what)?;
            let (a, words) = role_attrs(&access, Some(&stub), None);
            let mut t = gen::dumbbell(left, right, &a).map_err(lib(&what))?;
            give_words(&mut t, &words, &what)?;
            (t, what, out)
        }
        GenKind::Tree {
            depth,
            fanout,
            clients,
            access,
            stub,
            out,
        } => {
            let what = format!("tree --depth {depth} --fanout {fanout} --clients {clients}");
            check_size(tree_nodes(depth, fanout, clients), &what)?;
            let (a, words) = role_attrs(&access, Some(&stub), None);
            let mut t = gen::tree(depth, fanout, clients, &a).map_err(lib(&what))?;
            give_words(&mut t, &words, &what)?;
            (t, what, out)
        }
        GenKind::TransitStub {
            transit,
            stubs,
            clients,
            chord_prob,
            seed,
            access,
            transit_links,
            out,
        } => {
            let what = format!(
                "transit-stub --transit {transit} --stubs {stubs} --clients {clients} --chord-prob {chord_prob} --seed {seed}"
            );
            let nodes = routers_with_clients(stubs, clients, 0)
                .and_then(|per_transit| (transit as u128).checked_mul(1 + per_transit));
            check_size(nodes, &what)?;
            let (attrs, words) = role_attrs(&access, None, Some(&transit_links));
            let p = TransitStub {
                transit,
                stubs,
                clients,
                chord_prob,
                seed,
                attrs,
            };
            let mut t = gen::transit_stub(&p).map_err(lib(&what))?;
            give_words(&mut t, &words, &what)?;
            (t, what, out)
        }
        GenKind::Waxman {
            routers,
            clients,
            alpha,
            beta,
            seed,
            access,
            stub,
            out,
        } => {
            let what = format!(
                "waxman --routers {routers} --clients {clients} --alpha {alpha} --beta {beta} --seed {seed}"
            );
            check_size(routers_with_clients(routers, clients, 0), &what)?;
            let (attrs, words) = role_attrs(&access, Some(&stub), None);
            let p = Waxman {
                routers,
                clients,
                alpha,
                beta,
                seed,
                attrs,
            };
            let mut t = gen::waxman(&p).map_err(lib(&what))?;
            give_words(&mut t, &words, &what)?;
            (t, what, out)
        }
    })
}

/// Gives each class's pipe words to the links of its class; `what` names
/// the command in an error.
fn give_words(
    t: &mut Topology,
    words: &[(LinkClass, LinkSet)],
    what: &str,
) -> Result<(), GenError> {
    for (class, set) in words {
        gen::give_words(t, *class, &set.words).map_err(|error| GenError::Topology {
            what: what.to_string(),
            error,
        })?;
    }
    Ok(())
}

/// A one-line description: node counts by role and links.
pub fn describe(t: &Topology) -> String {
    let n = |r: Role| t.nodes.iter().filter(|x| x.role == r).count();
    format!(
        "{} nodes ({} VNs, {} stub, {} transit), {} links",
        t.nodes.len(),
        n(Role::Client),
        n(Role::Stub),
        n(Role::Transit),
        t.links.len()
    )
}

/// Run `pipelab topo gen`: the file's text on stdout, or a summary when
/// it was written to `-o FILE`.
pub fn run(kind: GenKind) -> Result<String, GenError> {
    let (topo, what, out) = make(kind)?;
    let format = match (out.format, &out.output) {
        (Some(f), _) => f,
        (None, Some(p)) if p.extension().is_some_and(|e| e == "toml") => Format::Toml,
        (None, _) => Format::Gml,
    };
    let header = format!("# pipelab topo gen {what}\n# {}\n", describe(&topo));
    let text = match format {
        Format::Gml => header + &pipelab_topo::gml::to_gml(&topo),
        Format::Toml => {
            header
                + &pipelab_topo::to_toml(&topo).map_err(|error| GenError::Topology {
                    what: what.clone(),
                    error,
                })?
        }
    };
    match out.output {
        None => Ok(text),
        Some(p) => {
            pipelab_lang::output::create_output(&p)
                .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
                .map_err(|source| GenError::Write {
                    path: p.clone(),
                    source,
                })?;
            Ok(format!("{}: {}\n", p.display(), describe(&topo)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves a class's attributes parse in any subset and order
    /// (`=` too), and that an error shows the word with a caret.
    #[test]
    fn link_sets_parse_and_point_at_errors() {
        use pipelab_engine::{Duration, QueueLimit, Rate};
        use pipelab_topo::model::LinkAttrs;
        let s = parse_link_set("delay 20ms bw=2Mbit/s loss 1.5% queue 50").expect("parses");
        let mut a = LinkAttrs::new(Rate::from_bps(1), Duration::ZERO);
        s.apply_to_attrs(&mut a);
        assert_eq!(a.bw, Rate::from_bps(2_000_000));
        assert_eq!(a.delay, Duration::from_millis(20));
        assert_eq!(a.loss, 0.015);
        assert_eq!(a.queue, QueueLimit::Slots(50));
        assert_eq!(
            parse_link_set("bw fast").expect_err("bad rate").to_string(),
            "invalid rate 'fast': rates are written like 10Mbit/s\n  bw fast\n     ^"
        );
        for bad in ["bw", "", "colour red", "loss 150%", "bw 10Mbps"] {
            assert!(parse_link_set(bad).is_err(), "{bad}");
        }
    }

    /// A pass proves the size check counts nodes exactly and never
    /// overflows.
    #[test]
    fn node_counts_are_exact_and_bounded() {
        assert_eq!(routers_with_clients(20, 20, 0), Some(420));
        assert_eq!(tree_nodes(3, 2, 2), Some(15 + 16));
        assert_eq!(tree_nodes(0, 5, 3), Some(4));
        assert_eq!(tree_nodes(64, 1_000_000, 1_000_000), None);
        assert!(check_size(routers_with_clients(usize::MAX, usize::MAX, 0), "x").is_err());
    }
}
