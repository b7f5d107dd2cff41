//! # pipelab-io: the I/O layer
//!
//! Everything that touches the operating system's packet paths lives
//! here, so that the emulation core stays pure:
//!
//! * [`clock`]: `CLOCK_MONOTONIC` as engine time;
//! * [`netns`], [`netlink`]: network namespaces (held by descriptor, never
//!   left behind) and their links, addresses and routes via rtnetlink;
//! * [`backends`]: where frames come from and go to (TAP, AF_PACKET,
//!   AF_XDP, NFQUEUE), one file each;
//! * [`buffers`]: the frame buffer pool under a global memory cap, each
//!   frame's metadata beside its buffer, the frames ports lend into it,
//!   and the count of copies made; [`spill`]: frames kept on disk while
//!   they wait, when the cap is short (NetPath's DiskQueue);
//! * [`runner`]: the real-time driver of a [`pipelab_emu::Emulation`],
//!   with its lateness meter ([`late`]: the same, read live by another
//!   thread; [`margin`]: how long before a deadline it stops sleeping),
//!   and [`readiness`]: which of its many ports
//!   have frames waiting;
//! * [`worker`], [`spsc`]: one emulation over several runners (workers),
//!   each owning some pipes and ports, handing packets to each other on
//!   lock-free rings;
//! * [`ecn`]: CE marks written into frames;
//! * [`gso`]: GSO super-frames: virtio-net headers, segmentation in user
//!   space, and when a super-frame may cross whole;
//! * [`signals`]: the stop signals (SIGHUP, SIGINT, SIGQUIT, SIGTERM) as
//!   a descriptor to poll;
//! * [`nftables`]: nftables tables owned by this process's netlink
//!   socket, which the kernel removes when the process ends;
//! * [`capture`], [`pcapng`]: packet captures and event logs of what
//!   crosses an emulation, written by a thread of their own (the runner
//!   only hands records over), and the pcapng format they use.
//!
//! What it deliberately does not do: know which mode it serves (a shell,
//! a bridge, host mode, a topology are port plans and specs built in
//! `pipelab-modes`) or build engine objects. `unsafe` appears only in
//! [`backends`] and the ring of [`spsc`], each block with its SAFETY
//! argument.

pub mod answer;
pub mod awake;
pub mod backends;
pub mod buffers;
pub mod capture;
pub mod clock;
pub mod ecn;
pub mod gso;
pub mod late;
pub mod margin;
pub mod netlink;
pub mod netns;
pub mod nftables;
pub mod pcapng;
pub mod readiness;
pub mod runner;
pub mod signals;
pub mod spill;
pub mod spsc;
pub mod worker;
