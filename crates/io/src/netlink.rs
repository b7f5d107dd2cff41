//! Links, addresses and routes through rtnetlink (never by running `ip`).
//!
//! [`Netlink`] is a synchronous facade over the `rtnetlink` crate: a
//! current-thread tokio runtime and one netlink connection, opened in the
//! network namespace of the thread that creates it. Use it from
//! [`crate::netns::NetNs::run`] to act inside another namespace.

use futures::TryStreamExt;
use rtnetlink::{Handle, LinkUnspec, LinkVeth, RouteMessageBuilder};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn nl_err(what: &str, e: rtnetlink::Error) -> io::Error {
    io::Error::other(format!("netlink: {what}: {e}"))
}

/// A netlink connection in the caller thread's network namespace.
pub struct Netlink {
    rt: tokio::runtime::Runtime,
    handle: Handle,
}

impl Netlink {
    /// Connect (in the calling thread's namespace).
    pub fn connect() -> io::Result<Netlink> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let handle = rt.block_on(async {
            let (conn, handle, _) = rtnetlink::new_connection()?;
            tokio::spawn(conn);
            Ok::<_, io::Error>(handle)
        })?;
        Ok(Netlink { rt, handle })
    }

    /// The index of interface `name`.
    pub fn index(&self, name: &str) -> io::Result<u32> {
        let h = self.handle.clone();
        let name = name.to_string();
        self.rt.block_on(async move {
            let mut links = h.link().get().match_name(name.clone()).execute();
            match links.try_next().await {
                Ok(Some(msg)) => Ok(msg.header.index),
                Ok(None) => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no interface {name}"),
                )),
                Err(e) => Err(nl_err(&format!("find {name}"), e)),
            }
        })
    }

    /// True if interface `name` exists.
    pub fn exists(&self, name: &str) -> bool {
        self.index(name).is_ok()
    }

    /// Create a veth pair `a` <-> `b`.
    pub fn add_veth(&self, a: &str, b: &str) -> io::Result<()> {
        let h = self.handle.clone();
        let msg = LinkVeth::new(a, b).build();
        self.rt
            .block_on(async move { h.link().add(msg).execute().await })
            .map_err(|e| nl_err(&format!("create veth {a}/{b}"), e))
    }

    /// Bring interface `index` up, optionally setting its MTU.
    pub fn up(&self, index: u32, mtu: Option<u32>) -> io::Result<()> {
        let h = self.handle.clone();
        let mut b = LinkUnspec::new_with_index(index).up();
        if let Some(m) = mtu {
            b = b.mtu(m);
        }
        let msg = b.build();
        self.rt
            .block_on(async move { h.link().set(msg).execute().await })
            .map_err(|e| nl_err("set link up", e))
    }

    /// Set interface `index`'s MAC address.
    pub fn set_mac(&self, index: u32, mac: [u8; 6]) -> io::Result<()> {
        let h = self.handle.clone();
        let msg = LinkUnspec::new_with_index(index)
            .address(mac.to_vec())
            .build();
        self.rt
            .block_on(async move { h.link().set(msg).execute().await })
            .map_err(|e| nl_err("set MAC address", e))
    }

    /// A permanent neighbour (ARP) entry: `ip` is at `mac` on `index`.
    pub fn add_neighbour(&self, index: u32, ip: IpAddr, mac: [u8; 6]) -> io::Result<()> {
        let h = self.handle.clone();
        self.rt
            .block_on(async move {
                h.neighbours()
                    .add(index, ip)
                    .link_layer_address(&mac)
                    .state(rtnetlink::packet_route::neighbour::NeighbourState::Permanent)
                    .replace()
                    .execute()
                    .await
            })
            .map_err(|e| nl_err(&format!("add neighbour {ip}"), e))
    }

    /// Bring interface `index` down.
    pub fn down(&self, index: u32) -> io::Result<()> {
        let h = self.handle.clone();
        let msg = LinkUnspec::new_with_index(index).down().build();
        self.rt
            .block_on(async move { h.link().set(msg).execute().await })
            .map_err(|e| nl_err("set link down", e))
    }

    /// Move interface `index` into the namespace behind `ns_fd`, renaming it.
    pub fn move_to_ns(&self, index: u32, ns_fd: i32, new_name: &str) -> io::Result<()> {
        let h = self.handle.clone();
        let msg = LinkUnspec::new_with_index(index)
            .setns_by_fd(ns_fd)
            .name(new_name.to_string())
            .build();
        self.rt
            .block_on(async move { h.link().set(msg).execute().await })
            .map_err(|e| nl_err("move link to namespace", e))
    }

    /// Delete interface `index`.
    pub fn delete(&self, index: u32) -> io::Result<()> {
        let h = self.handle.clone();
        self.rt
            .block_on(async move { h.link().del(index).execute().await })
            .map_err(|e| nl_err("delete link", e))
    }

    /// Add address `ip/prefix` to interface `index`.
    pub fn add_addr(&self, index: u32, ip: IpAddr, prefix: u8) -> io::Result<()> {
        let h = self.handle.clone();
        self.rt
            .block_on(async move { h.address().add(index, ip, prefix).execute().await })
            .map_err(|e| nl_err(&format!("add address {ip}/{prefix}"), e))
    }

    /// Add IPv6 address `ip/prefix` to interface `index`, usable at once:
    /// `nodad` (no duplicate address detection, so no neighbour
    /// solicitation on the link and no tentative period).
    pub fn add_addr6_nodad(&self, index: u32, ip: Ipv6Addr, prefix: u8) -> io::Result<()> {
        use rtnetlink::packet_route::address::{AddressAttribute, AddressFlags};
        let h = self.handle.clone();
        self.rt
            .block_on(async move {
                let mut req = h.address().add(index, IpAddr::V6(ip), prefix);
                req.message_mut()
                    .attributes
                    .push(AddressAttribute::Flags(AddressFlags::Nodad));
                req.execute().await
            })
            .map_err(|e| nl_err(&format!("add address {ip}/{prefix}"), e))
    }

    /// Add a default IPv6 route (`::/0`) via `gw`.
    pub fn add_default_route6(&self, gw: Ipv6Addr) -> io::Result<()> {
        let h = self.handle.clone();
        let msg = RouteMessageBuilder::<Ipv6Addr>::new().gateway(gw).build();
        self.rt
            .block_on(async move { h.route().add(msg).execute().await })
            .map_err(|e| nl_err(&format!("add default route via {gw}"), e))
    }

    /// Add a default IPv4 route via `gw`.
    pub fn add_default_route(&self, gw: Ipv4Addr) -> io::Result<()> {
        let h = self.handle.clone();
        let msg = RouteMessageBuilder::<Ipv4Addr>::new().gateway(gw).build();
        self.rt
            .block_on(async move { h.route().add(msg).execute().await })
            .map_err(|e| nl_err(&format!("add default route via {gw}"), e))
    }

    /// Bring `lo` up.
    pub fn loopback_up(&self) -> io::Result<()> {
        let lo = self.index("lo")?;
        self.up(lo, None)
    }
}
