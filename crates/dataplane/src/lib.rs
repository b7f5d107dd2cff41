//! # pipelab-dataplane: live packets
//!
//! Everything that touches the operating system lives here, so that the
//! engine stays pure:
//!
//! * [`clock`]: `CLOCK_MONOTONIC` as engine time;
//! * [`netns`], [`netlink`]: network namespaces (held by descriptor, never
//!   left behind) and their links, addresses and routes via rtnetlink;
//! * [`backends`]: where frames come from and go to (TAP, AF_PACKET);
//! * [`buffers`]: the frame buffer pool under a global memory cap;
//! * [`runner`]: the real-time driver of the engine, with its lateness meter;
//! * [`host`]: host mode, this host's own traffic shaped in place through
//!   a netfilter queue (nftables rules of its own, verdicts at the emulated
//!   departure time);
//! * [`shell`]: `pipelab shell`, a command in a namespace behind an
//!   emulated link;
//! * [`probe`]: timestamped UDP test traffic and its report;
//! * [`mod@topo`]: live topologies, one named namespace per virtual node.
//!
//! `unsafe` appears only in [`backends`], each block with its SAFETY
//! argument; the rest of the crate is safe code.

pub mod backends;
pub mod bridge;
pub mod buffers;
pub mod clock;
pub mod ecn;
pub mod host;
pub mod netlink;
pub mod netns;
pub mod probe;
pub mod runner;
pub mod shell;
pub mod signals;
pub mod topo;
