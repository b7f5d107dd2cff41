//! IPv6 on pipelab's own interfaces without neighbour discovery: what
//! `pipelab shell` and live topologies share.
//!
//! Both give their interfaces fixed MAC addresses and static (or no)
//! neighbour entries, so that no address resolution crosses an emulated
//! link and the first packet of a run is delayed like every other one.
//! For IPv6 that also means no duplicate address detection and no router
//! solicitation or advertisement ([`quiet_ipv6`]), and for the VNs of a
//! topology no link-local address at all (their address generation mode,
//! set over netlink in [`crate::topo`]): their only IPv6 address is the
//! one pipelab gives them. The interfaces are
//! pipelab's and vanish with it, so nothing here is for the ledger.

use std::io;
use std::path::Path;

/// Does this namespace have IPv6 (the kernel's, not turned off for all
/// interfaces)?
pub fn ipv6_available() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6")
        .is_ok_and(|v| v.trim() == "0")
}

/// Write `values` under `/proc/sys/net/ipv6/conf/CONF` (an interface of
/// the calling thread's namespace, or `default` for the interfaces made
/// after).
fn write_conf(conf: &str, values: &[(&str, &str)]) -> io::Result<()> {
    let dir = Path::new("/proc/sys/net/ipv6/conf").join(conf);
    for (key, value) in values {
        let path = dir.join(key);
        std::fs::write(&path, value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// IPv6 on interface `conf` (or `default`) of the calling thread's
/// namespace without neighbour discovery's chatter: on (whatever the
/// namespace's default), no duplicate address detection (the addresses
/// are ours and unique; the link-local one is usable at once), no router
/// solicitation or advertisement taken (the routes are set).
pub fn quiet_ipv6(conf: &str) -> io::Result<()> {
    write_conf(
        conf,
        &[
            ("disable_ipv6", "0"),
            ("accept_dad", "0"),
            ("accept_ra", "0"),
            ("router_solicitations", "0"),
        ],
    )
}

/// IPv6 on for interface `conf` (or `all`, `default`) of the calling
/// thread's namespace, and nothing else changed.
pub fn turn_on_ipv6(conf: &str) -> io::Result<()> {
    write_conf(conf, &[("disable_ipv6", "0")])
}

/// Does a network namespace made now start with IPv6 turned off (`all` or
/// `default`)? A host's `net.core.devconf_inherit_init_net` may give new
/// namespaces its own settings. Asked once, in a namespace made for the
/// question and gone with the thread that asks.
pub fn new_namespaces_lack_ipv6() -> io::Result<bool> {
    std::thread::spawn(|| -> io::Result<bool> {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
        let off = |conf: &str| {
            std::fs::read_to_string(format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6"))
                .map(|v| v.trim() != "0")
        };
        Ok(off("all")? || off("default")?)
    })
    .join()
    .map_err(|_| io::Error::other("IPv6 question: thread panicked"))?
}
