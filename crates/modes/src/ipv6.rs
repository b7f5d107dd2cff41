//! IPv6 on pipelab's own interfaces without neighbour discovery: what
//! `pipelab shell` and live topologies share.
//!
//! Both give their interfaces fixed MAC addresses and static (or no)
//! neighbour entries, so that no address resolution crosses an emulated
//! link and the first packet of a run is delayed like every other one.
//! For IPv6 that also means no duplicate address detection and no router
//! solicitation or advertisement ([`quiet_ipv6`]), and for the VNs of a
//! topology no link-local address at all ([`no_link_local`]): their only
//! IPv6 address is the one pipelab gives them. The interfaces are
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

/// No link-local address on interface `conf` (or `default`) when it comes
/// up (`addr_gen_mode` 1): its only IPv6 addresses are the ones pipelab
/// adds. A VN's `eth0` needs none (its routes are on-link, its neighbours
/// are its own MAC), and the one the kernel would make stays tentative on
/// a `NOARP` device (seen on Linux 6.18): an address in limbo that every
/// VN would share (they share a MAC). Written before the interface is up.
pub fn no_link_local(conf: &str) -> io::Result<()> {
    write_conf(conf, &[("addr_gen_mode", "1")])
}
