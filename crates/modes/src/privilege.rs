//! What a live mode needs from the kernel, checked before it changes
//! anything: without it, the first refusal (making a namespace, a TAP
//! device, a packet socket, binding a netfilter queue) would only say
//! "Operation not permitted", or name a path under `/run/pipelab` the
//! user cannot write. A mode calls [`require`] once its input is checked
//! (a configuration's errors come first, whoever runs it) and before it
//! registers its name or touches the host.
//!
//! Root has every capability; a process given the listed ones (`setcap`,
//! ambient capabilities) passes too. The check reads the process's
//! effective set (`capget`, through the `caps` crate); it does not decide
//! what the kernel allows later, so a refusal after it still says what was
//! refused.

use crate::error::ModeError;
use caps::{CapSet, Capability};

/// What one kind of mode needs: capabilities, and what they are for.
#[derive(Clone, Copy, Debug)]
pub struct Needs {
    /// The capabilities, each required.
    pub caps: &'static [Capability],
    /// What they are for, for the message.
    pub why: &'static str,
}

/// A bridge: packet sockets and XDP on interfaces of the host.
pub const INTERFACES: Needs = Needs {
    caps: &[Capability::CAP_NET_ADMIN, Capability::CAP_NET_RAW],
    why: "packet sockets on the interfaces",
};

/// A shell or a live topology: network namespaces, TAP devices and
/// their addresses.
pub const NAMESPACES: Needs = Needs {
    caps: &[
        Capability::CAP_NET_ADMIN,
        Capability::CAP_NET_RAW,
        Capability::CAP_SYS_ADMIN,
    ],
    why: "network namespaces and TAP devices",
};

/// Host mode: a netfilter queue and the nftables rules that feed it.
pub const NETFILTER: Needs = Needs {
    caps: &[Capability::CAP_NET_ADMIN, Capability::CAP_NET_RAW],
    why: "a netfilter queue and its nftables rules",
};

/// `pipelab attach --netns`: entering another network namespace, and a
/// netfilter queue and its rules there.
pub const NETNS_NETFILTER: Needs = Needs {
    caps: &[
        Capability::CAP_NET_ADMIN,
        Capability::CAP_NET_RAW,
        Capability::CAP_SYS_ADMIN,
    ],
    why: "entering a network namespace, a netfilter queue and its rules there",
};

/// Undoing what dead pipelab processes left (`pipelab cleanup`): rules
/// and offloads, namespaces entered and removed, the processes left in
/// them killed, root's files under `/run/pipelab` removed.
pub const UNDO: Needs = Needs {
    caps: &[
        Capability::CAP_NET_ADMIN,
        Capability::CAP_SYS_ADMIN,
        Capability::CAP_KILL,
        Capability::CAP_DAC_OVERRIDE,
    ],
    why: "rules, offloads, namespaces and their processes, root's files under /run/pipelab",
};

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The capabilities of `needs` this process lacks (its effective set).
pub fn missing(needs: Needs) -> Vec<Capability> {
    needs
        .caps
        .iter()
        .copied()
        .filter(|&c| !caps::has_cap(None, CapSet::Effective, c).unwrap_or(false))
        .collect()
}

/// The message for `what` (`pipelab shell`) lacking `missing` of `needs`.
pub fn message(what: &str, needs: Needs, missing: &[Capability]) -> String {
    let names = |cs: &[Capability]| and_list(&cs.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    format!(
        "{what} needs root, or the capabilities {} ({}); this process (uid {}) lacks {}: run it as root, e.g. with sudo",
        names(needs.caps),
        needs.why,
        nix::unistd::geteuid(),
        names(missing)
    )
}

/// `Ok` if this process has every capability of `needs`, else
/// [`ModeError::Privilege`] saying that `what` needs root or them, and
/// which are missing.
pub fn require(what: &str, needs: Needs) -> Result<(), ModeError> {
    let lacking = missing(needs);
    if lacking.is_empty() {
        Ok(())
    } else {
        Err(ModeError::Privilege(message(what, needs, &lacking)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves the message names the mode, root, every capability
    /// it needs and why, the uid and the missing ones, in words.
    #[test]
    fn the_message_says_root_or_which_capabilities() {
        assert_eq!(
            message(
                "pipelab bridge",
                INTERFACES,
                &[Capability::CAP_NET_ADMIN, Capability::CAP_NET_RAW]
            ),
            format!(
                "pipelab bridge needs root, or the capabilities CAP_NET_ADMIN and CAP_NET_RAW (packet sockets on the interfaces); this process (uid {}) lacks CAP_NET_ADMIN and CAP_NET_RAW: run it as root, e.g. with sudo",
                nix::unistd::geteuid()
            )
        );
        assert!(message("pipelab shell", NAMESPACES, &[Capability::CAP_SYS_ADMIN]).contains(
            "the capabilities CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_ADMIN (network namespaces and TAP devices); this process (uid "
        ));
    }
}
