//! The host ledger: every change a live mode makes to the host, written
//! down before it is made, with what undoes it.
//!
//! A live mode opens a [`Record`] ([`Ledger::begin`]) and calls
//! [`Record::record`] before each change it makes outside its own
//! descriptors: an nftables table, an offload turned off, a named network
//! namespace, a file under `/run`, a registry entry, the processes of its
//! namespace. Shared sysctls are held ([`Record::hold_sysctl`]), not set,
//! interfaces claimed ([`Record::claim`]) and subnets reserved
//! ([`Record::reserve_subnet`]) through the same records. Dropping the
//! record (a normal exit, an early return) undoes its changes in reverse
//! order and removes it.
//!
//! A record is one JSON file in the ledger's directory
//! ([`DEFAULT_DIR`], or [`DIR_ENV`]), named by its owner's pid, the
//! owner's start time (field 22 of `/proc/PID/stat`: a reused pid is not
//! the owner) and a sequence number. Files are replaced atomically (temp
//! file, rename) and read or written only under an exclusive `flock` on
//! the directory itself (no lock file to leave behind), waited for at
//! most [`LOCK_WAIT`].
//!
//! A record whose owner no longer runs is *dead*: the next
//! [`Ledger::begin`] (every command that changes the host) undoes it and
//! prints one line saying what it restored; [`Ledger::recover`] does it on
//! request (`pipelab cleanup`). Undoing is idempotent: a change written
//! down and never made (the owner was killed between the two) undoes to
//! nothing. Host mode's rules are fail-closed by design and undone only
//! on request ([`Change::HostRules`]); `pipelab attach`'s, fail-closed
//! too, are undone by the next command ([`Change::AttachRules`]): the
//! interface they hold belongs to no daemon that would come back.
//!
//! Each entry carries the network namespace it was made in; it is undone
//! there (a thread enters it, found under `/run/netns` or through a
//! process living in it), or not at all when the namespace is gone, since
//! everything in it went with it.
//!
//! This module knows the host's objects (nft, offloads, namespaces,
//! sysctls); it does not know the modes.

use nix::fcntl::{Flock, FlockArg};
use nix::sched::{setns, CloneFlags};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where the ledger lives by default.
pub const DEFAULT_DIR: &str = "/run/pipelab/ledger";
/// The environment variable that overrides [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "PIPELAB_LEDGER_DIR";
/// How long a command waits for the ledger's lock before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The range shells take their /24 from (RFC 6598 shared address space).
pub const SHELL_RANGE: (Ipv4Addr, u8) = (Ipv4Addr::new(100, 64, 0, 0), 10);
/// How many /24s [`SHELL_RANGE`] holds.
pub const SHELL_SUBNETS: u32 = 1 << (24 - 10);
/// How many /64s a shell's IPv6 range (a ULA /48, see [`shell_range6`])
/// holds.
pub const SHELL_SUBNETS6: u32 = 1 << 16;

/// A network namespace, by the device and inode of its nsfs file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NsId {
    /// The nsfs device.
    pub dev: u64,
    /// The namespace's inode.
    pub ino: u64,
}

impl NsId {
    /// The namespace of the calling thread.
    pub fn current() -> io::Result<NsId> {
        NsId::of_path(Path::new("/proc/thread-self/ns/net"))
    }

    /// The namespace a descriptor (from `/proc/.../ns/net` or a bind
    /// mount of one) refers to.
    pub fn of_fd(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<NsId> {
        let m = File::from(fd.try_clone_to_owned()?).metadata()?;
        Ok(NsId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    fn of_path(p: &Path) -> io::Result<NsId> {
        let m = fs::metadata(p)?;
        Ok(NsId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// One change to the host, and so what undoes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// An nftables table: undone by deleting it.
    NftTable {
        /// `ip`, `ip6`, `inet`.
        family: String,
        /// The table.
        table: String,
    },
    /// Host mode's rules (the nftables table `inet TABLE`, or the
    /// iptables chains named after it). Fail-closed: while no daemon
    /// listens, the host's traffic is dropped, so only an explicit
    /// [`Ledger::recover`] removes a dead owner's rules.
    HostRules {
        /// The table.
        table: String,
    },
    /// The rules of `pipelab attach` that queue one interface's traffic
    /// (the nftables table `inet TABLE`, or the iptables chains named
    /// after it). Fail-closed as host mode's, but undone by the next
    /// pipelab command: nobody else would take that traffic again.
    AttachRules {
        /// The table.
        table: String,
        /// The interface.
        dev: String,
        /// Where the namespace was entered from (`/proc/PID/ns/net`, a
        /// bind mount), tried first when it is undone; the entry's
        /// [`NsId`] decides whether it is still that namespace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        netns_path: Option<PathBuf>,
    },
    /// An xtables table (`ip mangle`) iptables made for host mode's or
    /// attach's chains (the iptables form of their rules): deleted once
    /// nothing is left in it but empty built-in chains.
    XtTable {
        /// `ip` or `ip6`.
        family: String,
        /// `filter`, `mangle`.
        table: String,
    },
    /// A built-in chain (`POSTROUTING`) iptables added to an xtables
    /// table that was there before (`ip mangle`) for host mode's or
    /// attach's jump: deleted once it has no rule (and policy accept).
    XtChain {
        /// `ip` or `ip6`.
        family: String,
        /// `filter`, `mangle`.
        table: String,
        /// `POSTROUTING`, `OUTPUT`, ...
        chain: String,
    },
    /// Generic receive offload turned off on an interface: turned back on.
    GroOff {
        /// The interface.
        ifname: String,
    },
    /// A named network namespace under `/run/netns`: what runs in it is
    /// killed, it is unmounted and its file removed.
    NamedNetns {
        /// Its name.
        name: String,
    },
    /// The processes of the (anonymous) namespace of the entry: killed.
    NetnsProcesses,
    /// A file: removed.
    File {
        /// Its path.
        path: PathBuf,
    },
    /// A directory: removed once empty (another process may still keep
    /// files in it).
    Dir {
        /// Its path.
        path: PathBuf,
    },
    /// A run's spill directory (`pipelab_io::spill`): the files of
    /// frames kept on disk have no names (or lose them at once), so at
    /// most the directory, and a file named in it in the instant before
    /// its unlink, outlive a `kill -9`. Removed with what is in it, if it
    /// is a directory of the owner's user and not a link.
    SpillDir {
        /// Its path.
        path: PathBuf,
    },
    /// An entry in the registry of emulations: forgotten if it is still
    /// the owner's.
    Registration {
        /// The registry's directory.
        dir: PathBuf,
        /// The emulation's name.
        name: String,
    },
    /// A sysctl held at a value (see [`Record::hold_sysctl`]); `original`
    /// is written back by the last holder.
    Sysctl {
        /// Its path under `/proc/sys`, e.g. `net/ipv4/ip_forward`.
        key: String,
        /// The value before the first holder changed it.
        original: String,
    },
    /// An interface used by the owner (nothing to undo).
    Claim {
        /// The interface.
        ifname: String,
    },
    /// An IPv4 subnet used by the owner (nothing to undo).
    Subnet {
        /// Its network address.
        addr: Ipv4Addr,
        /// Its prefix length.
        len: u8,
    },
    /// An IPv6 subnet used by the owner (nothing to undo).
    Subnet6 {
        /// Its network address.
        addr: Ipv6Addr,
        /// Its prefix length.
        len: u8,
    },
}

/// What a sysctl's key looks like to a person (`net.ipv4.ip_forward`).
fn sysctl_name(key: &str) -> String {
    key.replace('/', ".")
}

impl Change {
    /// What undoing it does, in words.
    pub fn describe(&self) -> String {
        match self {
            Change::NftTable { family, table } => format!("nft table {family} {table}"),
            Change::HostRules { table } => {
                format!("host-mode rules '{table}' (nftables or iptables)")
            }
            Change::AttachRules { table, dev, .. } => {
                format!("attach rules '{table}' on {dev} (nftables or iptables)")
            }
            Change::XtTable { family, table } => {
                format!("empty iptables table {family} {table}")
            }
            Change::XtChain {
                family,
                table,
                chain,
            } => format!("empty iptables chain {chain} of table {family} {table}"),
            Change::GroOff { ifname } => format!("GRO on {ifname}"),
            Change::NamedNetns { name } => format!("namespace {name}"),
            Change::NetnsProcesses => "processes left in its namespace".into(),
            Change::File { path } => format!("file {}", path.display()),
            Change::Dir { path } => format!("empty directory {}", path.display()),
            Change::SpillDir { path } => format!("spill directory {}", path.display()),
            Change::Registration { name, .. } => format!("registry entry '{name}'"),
            Change::Sysctl { key, original } => {
                format!("{} = {}", sysctl_name(key), original.trim())
            }
            Change::Claim { ifname } => format!("claim on {ifname}"),
            Change::Subnet { addr, len } => format!("subnet {addr}/{len}"),
            Change::Subnet6 { addr, len } => format!("subnet {addr}/{len}"),
        }
    }
}

/// One entry of a record: a change and the namespace it was made in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The network namespace.
    pub netns: NsId,
    /// The change.
    pub change: Change,
}

/// A record as its file holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordFile {
    /// The owner's pid.
    pub pid: u32,
    /// The owner's start time (clock ticks after boot).
    pub start: u64,
    /// The owner's mode (`shell`, `bridge`, `topo`, `host`).
    pub mode: String,
    /// The emulation's name.
    pub name: String,
    /// The changes, oldest first.
    pub entries: Vec<Entry>,
}

impl RecordFile {
    /// `pipelab MODE 'NAME' (pid N)`.
    pub fn owner(&self) -> String {
        format!("pipelab {} '{}' (pid {})", self.mode, self.name, self.pid)
    }

    fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// Why the ledger refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// Another process held the lock too long.
    #[error("the host ledger {} stayed locked by another pipelab process for {} s", .0.display(), LOCK_WAIT.as_secs())]
    Locked(PathBuf),
    /// An interface is claimed by a live emulation.
    #[error("interface {ifname} is used by {owner}")]
    Claimed {
        /// The interface.
        ifname: String,
        /// Who uses it: `pipelab bridge 'NAME' (pid N)`.
        owner: String,
    },
    /// No subnet of the range is free.
    #[error("no free /24 in {addr}/{len}: every one is used by a running pipelab or overlaps an address of this host")]
    NoSubnet {
        /// The range's network address.
        addr: Ipv4Addr,
        /// Its prefix length.
        len: u8,
    },
    /// No /64 of the IPv6 range is free.
    #[error("no free /64 in {addr}/48: every one is used by a running pipelab or overlaps an address of this host")]
    NoSubnet6 {
        /// The range's network address.
        addr: Ipv6Addr,
    },
    /// The caller may not undo what dead owners left (the message of
    /// [`crate::privilege::require`]); nothing was changed.
    #[error("{0}; nothing was changed")]
    Privilege(String),
    /// A file of the ledger could not be read or written.
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which file.
        path: PathBuf,
        /// Why not.
        source: io::Error,
    },
}

impl From<LedgerError> for io::Error {
    fn from(e: LedgerError) -> io::Error {
        let kind = match &e {
            LedgerError::Claimed { .. } => io::ErrorKind::AddrInUse,
            LedgerError::NoSubnet { .. } | LedgerError::NoSubnet6 { .. } => {
                io::ErrorKind::AddrNotAvailable
            }
            LedgerError::Locked(_) => io::ErrorKind::WouldBlock,
            LedgerError::Privilege(_) => io::ErrorKind::PermissionDenied,
            LedgerError::Io { source, .. } => source.kind(),
        };
        io::Error::new(kind, e.to_string())
    }
}

/// One thing a recovery restored (or would, or could not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// Whose change it was: `pipelab shell 'NAME' (pid N)`.
    pub owner: String,
    /// What was restored: `nft table ip pipelab_12 deleted`.
    pub what: String,
    /// Why it could not be restored (the entry is kept).
    pub error: Option<String>,
}

/// The start time of process `pid` (clock ticks after boot), if it runs
/// and is not a zombie.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command (field 2) may hold spaces and ')': fields after the
    // last ')' are state (3) ... starttime (22).
    let (_, rest) = s.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    f.nth(18)?.parse().ok()
}

/// The ledger in one directory.
#[derive(Clone, Debug)]
pub struct Ledger {
    dir: PathBuf,
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger::new()
    }
}

/// The exclusive lock on the ledger's directory, released when dropped.
struct Locked {
    _lock: Flock<File>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Ledger {
    /// The ledger in `$PIPELAB_LEDGER_DIR`, or [`DEFAULT_DIR`].
    pub fn new() -> Ledger {
        let dir = std::env::var_os(DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
        Ledger::at(dir)
    }

    /// The ledger in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Ledger {
        Ledger { dir: dir.into() }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, what: &'static str) -> impl FnOnce(io::Error) -> LedgerError + '_ {
        move |source| LedgerError::Io {
            what,
            path: self.dir.clone(),
            source,
        }
    }

    /// Takes the lock, creating the directory (mode 0755) if needed.
    fn lock(&self) -> Result<Locked, LedgerError> {
        if !self.dir.is_dir() {
            fs::create_dir_all(&self.dir).map_err(self.io("create"))?;
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o755));
        }
        let t0 = Instant::now();
        let mut file = File::open(&self.dir).map_err(self.io("open"))?;
        loop {
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(l) => return Ok(Locked { _lock: l }),
                Err((f, nix::errno::Errno::EWOULDBLOCK)) if t0.elapsed() < LOCK_WAIT => {
                    file = f;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                    return Err(LedgerError::Locked(self.dir.clone()))
                }
                Err((_, e)) => return Err(self.io("lock")(e.into())),
            }
        }
    }

    /// Every record, by file name (oldest first for one owner).
    fn records(&self) -> Vec<(PathBuf, RecordFile)> {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') && name.ends_with(".tmp") {
                // A write cut short: the owner's, if it still runs.
                let owner_dead = name
                    .trim_start_matches('.')
                    .split('-')
                    .next()
                    .and_then(|p| p.parse::<u32>().ok())
                    .is_none_or(|p| start_time(p).is_none());
                if owner_dead {
                    let _ = fs::remove_file(e.path());
                }
                continue;
            }
            if !name.ends_with(".json") {
                continue;
            }
            if let Some(r) = fs::read_to_string(e.path())
                .ok()
                .and_then(|t| serde_json::from_str::<RecordFile>(&t).ok())
            {
                out.push((e.path(), r));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn write(&self, path: &Path, r: &RecordFile) -> Result<(), LedgerError> {
        let err = |source| LedgerError::Io {
            what: "write",
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_string_pretty(r).map_err(|e| err(e.into()))?;
        let file = path.file_name().map(|f| f.to_string_lossy().to_string());
        let tmp = self.dir.join(format!(".{}.tmp", file.unwrap_or_default()));
        pipelab_lang::output::create_output(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, (text + "\n").as_bytes()))
            .and_then(|()| fs::rename(&tmp, path))
            .map_err(|e| {
                let _ = fs::remove_file(&tmp);
                err(e)
            })
    }

    /// Opens a record for this process (`mode`, emulation `name`), after
    /// undoing what dead owners left (as [`Ledger::recover`] without
    /// `explicit`); prints one line per dead owner saying what was
    /// restored, and what was left in place.
    pub fn begin(&self, mode: &str, name: &str) -> Result<Record, LedgerError> {
        let lock = self.lock()?;
        let restored = self.recover_locked(false, false);
        notice(&restored);
        let pid = std::process::id();
        let start = start_time(pid).unwrap_or(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{pid}-{start}-{seq}.json"));
        let data = RecordFile {
            pid,
            start,
            mode: mode.to_string(),
            name: name.to_string(),
            entries: Vec::new(),
        };
        self.write(&path, &data)?;
        drop(lock);
        Ok(Record {
            ledger: self.clone(),
            path,
            data,
            open: true,
        })
    }

    /// Undo what owners that no longer run left: each change is restored
    /// in the namespace it was made in, a shared sysctl only when no other
    /// record holds it. `explicit` (`pipelab cleanup`) also removes
    /// fail-closed host-mode rules; `dry_run` only says what would be
    /// done. Returns one line per thing restored (or that could not be).
    ///
    /// A caller without the privileges to undo them ([`crate::privilege::UNDO`])
    /// is refused before anything is touched when there is something to
    /// undo (a dry run only reads, and is not).
    pub fn recover(&self, explicit: bool, dry_run: bool) -> Result<Vec<Restored>, LedgerError> {
        if !dry_run && self.records().iter().any(|(_, r)| !r.alive()) {
            crate::privilege::require("undoing what pipelab left", crate::privilege::UNDO)
                .map_err(|e| LedgerError::Privilege(e.to_string()))?;
        }
        let _lock = self.lock()?;
        Ok(self.recover_locked(explicit, dry_run))
    }

    /// What a dead owner left, without changing anything and without the
    /// lock (for a notice).
    pub fn leftovers(&self) -> Vec<Restored> {
        let mut out = Vec::new();
        for (_, r) in self.records() {
            if !r.alive() {
                for e in &r.entries {
                    if !matches!(
                        e.change,
                        Change::Claim { .. } | Change::Subnet { .. } | Change::Subnet6 { .. }
                    ) {
                        out.push(Restored {
                            owner: r.owner(),
                            what: e.change.describe(),
                            error: None,
                        });
                    }
                }
            }
        }
        out
    }

    fn recover_locked(&self, explicit: bool, dry_run: bool) -> Vec<Restored> {
        let mut all = self.records();
        let mut out = Vec::new();
        let mut i = 0;
        while i < all.len() {
            if all[i].1.alive() {
                i += 1;
                continue;
            }
            let owner = all[i].1.owner();
            let pid = all[i].1.pid;
            let entries = std::mem::take(&mut all[i].1.entries);
            if !dry_run {
                kill_named(&entries);
            }
            let mut kept = Vec::new();
            for e in entries.into_iter().rev() {
                let outcome = match &e.change {
                    Change::HostRules { table } if !explicit => {
                        let there = in_netns(e.netns, || crate::host::rules_installed(table))
                            .unwrap_or(false);
                        if !there {
                            continue;
                        }
                        out.push(Restored {
                            owner: owner.clone(),
                            what: format!(
                                "left in place: host-mode rules '{table}' (fail-closed: the host's traffic is held until pipelabd runs again or `pipelab cleanup` removes them)"
                            ),
                            error: None,
                        });
                        kept.push(e);
                        continue;
                    }
                    // Under host-mode rules left in place: kept with them.
                    Change::XtTable { .. } | Change::XtChain { .. }
                        if kept
                            .iter()
                            .any(|k| matches!(k.change, Change::HostRules { .. })) =>
                    {
                        kept.push(e);
                        continue;
                    }
                    Change::Sysctl { key, original } => {
                        let held = all
                            .iter()
                            .enumerate()
                            .any(|(j, (_, r))| j != i && r.alive() && r.holds(e.netns, key));
                        if held {
                            Ok(None)
                        } else {
                            restore_sysctl(e.netns, key, original, !dry_run)
                        }
                    }
                    _ => undo(&e, pid, !dry_run),
                };
                match outcome {
                    Ok(Some(what)) => out.push(Restored {
                        owner: owner.clone(),
                        what,
                        error: None,
                    }),
                    Ok(None) => {}
                    Err(why) => {
                        out.push(Restored {
                            owner: owner.clone(),
                            what: e.change.describe(),
                            error: Some(why),
                        });
                        kept.push(e);
                    }
                }
            }
            kept.reverse();
            if dry_run {
                // Nothing changed: the record stays whole.
                all.remove(i);
                continue;
            }
            let path = all[i].0.clone();
            if kept.is_empty() {
                let _ = fs::remove_file(&path);
                all.remove(i);
            } else {
                all[i].1.entries = kept;
                let _ = self.write(&path, &all[i].1);
                i += 1;
            }
        }
        out
    }
}

/// Prints what a recovery did: one line per owner.
pub fn notice(restored: &[Restored]) {
    let mut owners: Vec<&str> = Vec::new();
    for r in restored {
        if !owners.contains(&r.owner.as_str()) {
            owners.push(&r.owner);
        }
    }
    for o in owners {
        let items: Vec<String> = restored
            .iter()
            .filter(|r| r.owner == o)
            .map(|r| match &r.error {
                Some(e) => format!("could not restore {}: {e}", r.what),
                None => r.what.clone(),
            })
            .collect();
        eprintln!(
            "pipelab: cleaned up after {o}, which no longer runs: {}",
            items.join("; ")
        );
    }
}

impl RecordFile {
    fn holds(&self, ns: NsId, key: &str) -> bool {
        self.entries.iter().any(|e| {
            e.netns == ns && matches!(&e.change, Change::Sysctl { key: k, .. } if k == key)
        })
    }
}

/// A record of this process's changes; dropping it undoes them.
#[derive(Debug)]
pub struct Record {
    ledger: Ledger,
    path: PathBuf,
    data: RecordFile,
    open: bool,
}

/// The calling thread's network namespace.
fn this_ns() -> Result<NsId, LedgerError> {
    NsId::current().map_err(|e| LedgerError::Io {
        what: "read the namespace of",
        path: "/proc/thread-self/ns/net".into(),
        source: e,
    })
}

impl Record {
    /// What `pick` takes of every change that this record or a live one
    /// holds (call it under the ledger's lock).
    fn held<T>(&self, pick: impl Fn(&Change) -> Option<T>) -> Vec<T> {
        let mut held = Vec::new();
        for (p, r) in self.ledger.records() {
            if p == self.path || r.alive() {
                held.extend(r.entries.iter().filter_map(|e| pick(&e.change)));
            }
        }
        held
    }

    /// Write down `change`, made (next) in the calling thread's
    /// namespace. Call it before making the change.
    pub fn record(&mut self, change: Change) -> Result<(), LedgerError> {
        let ns = this_ns()?;
        self.record_in(ns, change)
    }

    /// Write down `change`, made (next) in namespace `ns`. A dead owner's
    /// entry for the same change is dropped: this owner undoes it now.
    pub fn record_in(&mut self, ns: NsId, change: Change) -> Result<(), LedgerError> {
        self.record_all_in(ns, vec![change])
    }

    /// Write down several changes made (next) in namespace `ns`, in one
    /// write of the record.
    pub fn record_all_in(&mut self, ns: NsId, changes: Vec<Change>) -> Result<(), LedgerError> {
        let _lock = self.ledger.lock()?;
        let entries: Vec<Entry> = changes
            .into_iter()
            .map(|change| Entry { netns: ns, change })
            .collect();
        for (p, mut r) in self.ledger.records() {
            if p != self.path && !r.alive() && r.entries.iter().any(|e| entries.contains(e)) {
                r.entries.retain(|e| !entries.contains(e));
                self.ledger.write(&p, &r)?;
            }
        }
        self.data.entries.extend(entries);
        self.save()
    }

    fn save(&self) -> Result<(), LedgerError> {
        self.ledger.write(&self.path, &self.data)
    }

    /// The owner undid `change` itself: drop its entry.
    pub fn forget(&mut self, change: &Change) -> Result<(), LedgerError> {
        let _lock = self.ledger.lock()?;
        let before = self.data.entries.len();
        self.data.entries.retain(|e| &e.change != change);
        if self.data.entries.len() == before {
            return Ok(());
        }
        self.save()
    }

    /// Hold sysctl `key` (`net/ipv4/ip_forward`) at `value` in the calling
    /// thread's namespace: the first holder writes down the value it
    /// finds; a later one copies that original; the value is written if
    /// it differs. When the last holder leaves (or is found dead), the
    /// original comes back.
    pub fn hold_sysctl(&mut self, key: &str, value: &str) -> Result<(), LedgerError> {
        let path = Path::new("/proc/sys").join(key);
        let io = |what, source| LedgerError::Io {
            what,
            path: path.clone(),
            source,
        };
        let ns = NsId::current().map_err(|e| io("read the namespace for", e))?;
        let _lock = self.ledger.lock()?;
        let current = fs::read_to_string(&path).map_err(|e| io("read", e))?;
        let original = self
            .ledger
            .records()
            .into_iter()
            .filter(|(p, _)| p != &self.path)
            .flat_map(|(_, r)| r.entries)
            .find_map(|e| match e.change {
                Change::Sysctl { key: k, original } if k == key && e.netns == ns => Some(original),
                _ => None,
            })
            .unwrap_or_else(|| current.trim().to_string());
        self.data.entries.push(Entry {
            netns: ns,
            change: Change::Sysctl {
                key: key.to_string(),
                original,
            },
        });
        self.save()?;
        if current.trim() != value {
            fs::write(&path, value).map_err(|e| io("write", e))?;
        }
        Ok(())
    }

    /// Claim interface `ifname` (in the calling thread's namespace) for
    /// this record's life; refused if a live owner holds it.
    pub fn claim(&mut self, ifname: &str) -> Result<(), LedgerError> {
        let ns = this_ns()?;
        let _lock = self.ledger.lock()?;
        let claim = Entry {
            netns: ns,
            change: Change::Claim {
                ifname: ifname.to_string(),
            },
        };
        for (p, r) in self.ledger.records() {
            if p != self.path && r.alive() && r.entries.contains(&claim) {
                return Err(LedgerError::Claimed {
                    ifname: ifname.to_string(),
                    owner: r.owner(),
                });
            }
        }
        self.data.entries.push(claim);
        self.save()
    }

    /// Reserve a free /24 of [`SHELL_RANGE`]: the `first`-th one if it is
    /// free, else the next free one (wrapping); free means reserved by no
    /// live record and overlapping none of `host` (the host's networks).
    /// Returns its network address.
    pub fn reserve_subnet(
        &mut self,
        first: u32,
        host: &[(Ipv4Addr, u8)],
    ) -> Result<Ipv4Addr, LedgerError> {
        let ns = this_ns()?;
        let _lock = self.ledger.lock()?;
        let mut taken: Vec<(Ipv4Addr, u8)> = host.to_vec();
        taken.extend(self.held(|c| match *c {
            Change::Subnet { addr, len } => Some((addr, len)),
            _ => None,
        }));
        let i = pick_subnet(first, &taken).ok_or(LedgerError::NoSubnet {
            addr: SHELL_RANGE.0,
            len: SHELL_RANGE.1,
        })?;
        let addr = subnet_addr(i);
        self.data.entries.push(Entry {
            netns: ns,
            change: Change::Subnet { addr, len: 24 },
        });
        self.save()?;
        Ok(addr)
    }

    /// Reserve a free /64 of `range` (a /48, [`shell_range6`]): the
    /// `first`-th one (modulo [`SHELL_SUBNETS6`]) if it is free, else the
    /// next free one (wrapping); free as for [`Record::reserve_subnet`]:
    /// reserved by no live record and overlapping none of `host`.
    /// Returns its network address.
    pub fn reserve_subnet6(
        &mut self,
        range: Ipv6Addr,
        first: u32,
        host: &[(Ipv6Addr, u8)],
    ) -> Result<Ipv6Addr, LedgerError> {
        let ns = this_ns()?;
        let _lock = self.ledger.lock()?;
        let mut taken: Vec<(Ipv6Addr, u8)> = host.to_vec();
        taken.extend(self.held(|c| match *c {
            Change::Subnet6 { addr, len } => Some((addr, len)),
            _ => None,
        }));
        let i = pick_subnet6(range, first, &taken).ok_or(LedgerError::NoSubnet6 { addr: range })?;
        let addr = subnet6_addr(range, i);
        self.data.entries.push(Entry {
            netns: ns,
            change: Change::Subnet6 { addr, len: 64 },
        });
        self.save()?;
        Ok(addr)
    }

    /// Undo everything now, newest first, and remove the record; returns
    /// what could not be undone.
    pub fn close(mut self) -> Vec<String> {
        self.undo_all()
    }

    fn undo_all(&mut self) -> Vec<String> {
        if !std::mem::replace(&mut self.open, false) {
            return Vec::new();
        }
        let mut failed = Vec::new();
        let lock = self.ledger.lock();
        let others: Vec<RecordFile> = self
            .ledger
            .records()
            .into_iter()
            .filter(|(p, r)| p != &self.path && r.alive())
            .map(|(_, r)| r)
            .collect();
        let entries = std::mem::take(&mut self.data.entries);
        kill_named(&entries);
        for e in entries.into_iter().rev() {
            let r = match &e.change {
                Change::Sysctl { key, original } => {
                    if others.iter().any(|r| r.holds(e.netns, key)) {
                        Ok(None)
                    } else {
                        restore_sysctl(e.netns, key, original, true)
                    }
                }
                _ => undo(&e, self.data.pid, true),
            };
            if let Err(why) = r {
                failed.push(format!("{}: {why}", e.change.describe()));
            }
        }
        if lock.is_ok() {
            let _ = fs::remove_file(&self.path);
        }
        failed
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        for f in self.undo_all() {
            eprintln!("pipelab: could not restore {f}");
        }
    }
}

/// The network address of the `i`-th /24 of [`SHELL_RANGE`].
pub fn subnet_addr(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(SHELL_RANGE.0) + ((i % SHELL_SUBNETS) << 8))
}

/// Do networks `a` and `b` overlap?
fn overlap(a: (Ipv4Addr, u8), b: (Ipv4Addr, u8)) -> bool {
    let len = a.1.min(b.1).min(32);
    if len == 0 {
        return true;
    }
    (u32::from(a.0) ^ u32::from(b.0)) >> (32 - len as u32) == 0
}

/// The first /24 of [`SHELL_RANGE`], from the `first`-th on (wrapping),
/// that overlaps none of `taken`.
pub fn pick_subnet(first: u32, taken: &[(Ipv4Addr, u8)]) -> Option<u32> {
    (0..SHELL_SUBNETS)
        .map(|k| (first + k) % SHELL_SUBNETS)
        .find(|&i| !taken.iter().any(|&t| overlap((subnet_addr(i), 24), t)))
}

/// The ULA /48 shells take their IPv6 /64s from (RFC 4193):
/// `fd00::/8` and a 40-bit global ID, stable for this host (derived from
/// `/etc/machine-id`, else the host name), so that a shell's addresses
/// do not change from run to run and two hosts' shells do not collide.
pub fn shell_range6() -> Ipv6Addr {
    let seed = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| fs::read_to_string(p).ok().filter(|s| !s.trim().is_empty()))
        .or_else(|| fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_default();
    ula_range(seed.trim())
}

/// The ULA /48 whose 40-bit global ID is a hash (FNV-1a, 64 bits) of
/// `seed`.
pub fn ula_range(seed: &str) -> Ipv6Addr {
    let h = fnv1a(b"pipelab-ula:".iter().chain(seed.as_bytes()));
    let id = h & ((1 << 40) - 1);
    Ipv6Addr::from((0xfdu128 << 120) | (u128::from(id) << 80))
}

/// FNV-1a (64 bits) of `bytes`: stable from build to build, unlike the
/// standard library's hasher.
fn fnv1a<'a>(bytes: impl IntoIterator<Item = &'a u8>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The /64 of [`shell_range6`] (by index, for
/// [`Record::reserve_subnet6`]) that the live topology named `name`
/// takes when it is free: above the ones shells take first (a shell's is
/// its /24's index, below [`SHELL_SUBNETS`]), chosen by a hash of the
/// name, so that a topology keeps its IPv6 addresses from run to run.
pub fn topo_subnet6_index(name: &str) -> u32 {
    let above = SHELL_SUBNETS6 - SHELL_SUBNETS;
    SHELL_SUBNETS
        + (fnv1a(b"pipelab-topo:".iter().chain(name.as_bytes())) % u64::from(above)) as u32
}

/// The network address of the `i`-th /64 of the /48 `range`.
pub fn subnet6_addr(range: Ipv6Addr, i: u32) -> Ipv6Addr {
    let base = u128::from(range) & !((1u128 << 80) - 1);
    Ipv6Addr::from(base | (u128::from(i % SHELL_SUBNETS6) << 64))
}

/// Do IPv6 networks `a` and `b` overlap?
fn overlap6(a: (Ipv6Addr, u8), b: (Ipv6Addr, u8)) -> bool {
    let len = a.1.min(b.1).min(128);
    if len == 0 {
        return true;
    }
    (u128::from(a.0) ^ u128::from(b.0)) >> (128 - u32::from(len)) == 0
}

/// The first /64 of `range`, from the `first`-th on (wrapping), that
/// overlaps none of `taken`.
pub fn pick_subnet6(range: Ipv6Addr, first: u32, taken: &[(Ipv6Addr, u8)]) -> Option<u32> {
    (0..SHELL_SUBNETS6)
        .map(|k| first.wrapping_add(k) % SHELL_SUBNETS6)
        .find(|&i| {
            !taken
                .iter()
                .any(|&t| overlap6((subnet6_addr(range, i), 64), t))
        })
}

/// The IPv6 networks of the calling thread's namespace (address and
/// prefix length of every address).
pub fn host_networks6() -> Vec<(Ipv6Addr, u8)> {
    let mut out = Vec::new();
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            let (Some(addr), Some(mask)) = (a.address, a.netmask) else {
                continue;
            };
            if let (Some(ip), Some(m)) = (addr.as_sockaddr_in6(), mask.as_sockaddr_in6()) {
                out.push((ip.ip(), u128::from(m.ip()).count_ones() as u8));
            }
        }
    }
    out
}

/// The IPv4 networks of the calling thread's namespace (address and
/// prefix length of every address).
pub fn host_networks() -> Vec<(Ipv4Addr, u8)> {
    let mut out = Vec::new();
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            let (Some(addr), Some(mask)) = (a.address, a.netmask) else {
                continue;
            };
            if let (Some(ip), Some(m)) = (addr.as_sockaddr_in(), mask.as_sockaddr_in()) {
                out.push((ip.ip(), u32::from(m.ip()).count_ones() as u8));
            }
        }
    }
    out
}

/// Run `f` on a thread inside namespace `ns` (at once if it is the
/// calling thread's); `None` if the namespace no longer exists.
fn in_netns<R: Send>(ns: NsId, f: impl FnOnce() -> R + Send) -> Option<R> {
    in_netns_via(ns, None, f)
}

/// [`in_netns`], trying `hint` (a path the namespace was entered from)
/// first: used if it still is namespace `ns`.
fn in_netns_via<R: Send>(ns: NsId, hint: Option<&Path>, f: impl FnOnce() -> R + Send) -> Option<R> {
    if NsId::current().ok() == Some(ns) {
        return Some(f());
    }
    let file = hint
        .filter(|p| NsId::of_path(p).ok() == Some(ns))
        .and_then(|p| File::open(p).ok())
        .or_else(|| find_netns(ns))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            setns(file.as_fd(), CloneFlags::CLONE_NEWNET).ok()?;
            Some(f())
        })
        .join()
        .ok()
        .flatten()
    })
}

/// A descriptor of namespace `ns`: a bind mount under `/run/netns`, or a
/// process living in it.
fn find_netns(ns: NsId) -> Option<File> {
    let named = fs::read_dir(crate::topo::NETNS_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path());
    let procs = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .map(|e| e.path().join("ns/net"));
    named
        .chain(procs)
        .find(|p| NsId::of_path(p).ok() == Some(ns))
        .and_then(|p| File::open(p).ok())
}

/// Kill (SIGKILL) every process but this one living in namespace `ns`;
/// returns how many.
pub fn kill_in_netns(ns: NsId) -> usize {
    kill_in_namespaces(&[ns].into_iter().collect())
}

/// Kill (SIGKILL) every process but this one living in one of `set` (one
/// pass over `/proc`); returns how many were sent the signal.
pub fn kill_in_namespaces(set: &HashSet<NsId>) -> usize {
    if set.is_empty() {
        return 0;
    }
    let me = std::process::id();
    let mut n = 0;
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid != me
            && NsId::of_path(&e.path().join("ns/net"))
                .ok()
                .is_some_and(|ns| set.contains(&ns))
        {
            // Counted only if the signal went out.
            if let Ok(raw) = i32::try_from(pid) {
                if nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(raw),
                    nix::sys::signal::Signal::SIGKILL,
                )
                .is_ok()
                {
                    n += 1;
                }
            }
        }
    }
    n
}

/// Run a tool quietly; true on success, `Err` if it cannot be run.
fn tool(prog: &str, args: &[&str]) -> io::Result<bool> {
    Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
}

fn restore_sysctl(
    ns: NsId,
    key: &str,
    original: &str,
    act: bool,
) -> Result<Option<String>, String> {
    let path = Path::new("/proc/sys").join(key);
    let original = original.trim().to_string();
    let name = sysctl_name(key);
    in_netns(ns, move || {
        let now = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if now.trim() == original {
            return Ok(None);
        }
        if act {
            fs::write(&path, &original).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(Some(if act {
            format!("{name} back to {original}")
        } else {
            format!("would set {name} back to {original}")
        }))
    })
    .unwrap_or(Ok(None))
}

/// Undo one entry (or, unless `act`, say whether there is something to
/// undo): `Some(what)` if something was there.
fn undo(e: &Entry, owner: u32, act: bool) -> Result<Option<String>, String> {
    match &e.change {
        Change::NftTable { family, table } => in_netns(e.netns, || {
            if !act {
                return Ok(tool("nft", &["list", "table", family, table])
                    .unwrap_or(false)
                    .then(|| say(act, &e.change, "deleted", "delete")));
            }
            // One run: deleted, or not there (no such table, or no nft
            // tool and so nothing of ours), or an error.
            match Command::new("nft")
                .args(["delete", "table", family, table])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
            {
                Ok(o) if o.status.success() => Ok(Some(say(act, &e.change, "deleted", "delete"))),
                Ok(o)
                    if String::from_utf8_lossy(&o.stderr).contains("No such file or directory") =>
                {
                    Ok(None)
                }
                Ok(o) => Err(format!(
                    "nft delete table {family} {table} failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(_) => Ok(None),
            }
        })
        .unwrap_or(Ok(None)),
        Change::HostRules { table } => in_netns(e.netns, || {
            if !crate::host::rules_installed(table) {
                return Ok(None);
            }
            if act {
                crate::host::remove_table(table).map_err(|e| e.to_string())?;
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        })
        .unwrap_or(Ok(None)),
        Change::AttachRules {
            table, netns_path, ..
        } => in_netns_via(e.netns, netns_path.as_deref(), || {
            if !crate::host::rules_installed(table) {
                return Ok(None);
            }
            if act {
                crate::host::remove_table(table).map_err(|e| e.to_string())?;
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        })
        .unwrap_or(Ok(None)),
        Change::XtTable { family, table } => in_netns(e.netns, || {
            if !act {
                return Ok(None);
            }
            match crate::host::remove_empty_xt_table(family, table) {
                Ok(true) => Ok(Some(say(act, &e.change, "removed", "remove"))),
                Ok(false) => Ok(None),
                Err(why) => Err(why.to_string()),
            }
        })
        .unwrap_or(Ok(None)),
        Change::XtChain {
            family,
            table,
            chain,
        } => in_netns(e.netns, || {
            if !act {
                return Ok(None);
            }
            match crate::host::remove_empty_xt_chain(family, table, chain) {
                Ok(true) => Ok(Some(say(act, &e.change, "removed", "remove"))),
                Ok(false) => Ok(None),
                Err(why) => Err(why.to_string()),
            }
        })
        .unwrap_or(Ok(None)),
        Change::GroOff { ifname } => in_netns(e.netns, || {
            use pipelab_io::backends::ethtool::{get, set, Offload};
            match get(ifname, Offload::Gro) {
                Ok(false) => {
                    if act {
                        set(ifname, Offload::Gro, true).map_err(|e| format!("{ifname}: {e}"))?;
                    }
                    Ok(Some(say(act, &e.change, "turned back on", "turn back on")))
                }
                // On already, or the interface is gone.
                _ => Ok(None),
            }
        })
        .unwrap_or(Ok(None)),
        Change::NamedNetns { name } => {
            let path = Path::new(crate::topo::NETNS_DIR).join(name);
            if fs::symlink_metadata(&path).is_err() {
                return Ok(None);
            }
            if act {
                // What runs in it was killed before (one pass over /proc
                // for all of a record's namespaces: `kill_named`).
                let _ = nix::mount::umount2(&path, nix::mount::MntFlags::MNT_DETACH);
                fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        }
        Change::NetnsProcesses => {
            let n = if act {
                kill_in_netns(e.netns)
            } else {
                count_in_netns(e.netns)
            };
            Ok((n > 0).then(|| {
                if act {
                    format!("{n} processes left in its namespace killed")
                } else {
                    format!("would kill {n} processes left in its namespace")
                }
            }))
        }
        Change::File { path } => {
            if fs::symlink_metadata(path).is_err() {
                return Ok(None);
            }
            if act {
                fs::remove_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        }
        Change::Dir { path } => {
            let empty = fs::read_dir(path).is_ok_and(|mut d| d.next().is_none());
            if !empty {
                return Ok(None);
            }
            if act {
                fs::remove_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        }
        Change::SpillDir { path } => {
            use std::os::unix::fs::MetadataExt;
            let ours = fs::symlink_metadata(path)
                .is_ok_and(|m| m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw());
            if !ours {
                return Ok(None);
            }
            if act {
                // Only what a spill names there: its files `wN-a`, `wN-b`.
                for entry in fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))? {
                    let Ok(entry) = entry else { continue };
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    let spill_file = name.starts_with('w')
                        && (name.ends_with("-a") || name.ends_with("-b"))
                        && entry.file_type().is_ok_and(|t| t.is_file());
                    if spill_file {
                        let f = entry.path();
                        fs::remove_file(&f).map_err(|e| format!("{}: {e}", f.display()))?;
                    }
                }
                fs::remove_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        }
        Change::Registration { dir, name } => {
            let json = dir.join(format!("{name}.json"));
            let ours = fs::read_to_string(&json)
                .ok()
                .and_then(|t| serde_json::from_str::<pipelab_control::EmulationInfo>(&t).ok())
                .is_some_and(|i| i.pid == owner);
            if !ours {
                return Ok(None);
            }
            if act {
                pipelab_control::Registry::at(dir).forget(name, owner);
                // Said only once it is so.
                if fs::symlink_metadata(&json).is_ok() {
                    return Err(format!("{}: could not be removed", json.display()));
                }
            }
            Ok(Some(say(act, &e.change, "removed", "remove")))
        }
        // Held values are restored by their last holder (see the callers).
        Change::Sysctl { .. }
        | Change::Claim { .. }
        | Change::Subnet { .. }
        | Change::Subnet6 { .. } => Ok(None),
    }
}

/// `THING DONE` once done, `would TODO THING` in a dry run.
fn say(act: bool, c: &Change, done: &str, todo: &str) -> String {
    if act {
        format!("{} {done}", c.describe())
    } else {
        format!("would {todo} {}", c.describe())
    }
}

/// Kill what runs in the named namespaces of `entries` (before they are
/// removed one by one).
fn kill_named(entries: &[Entry]) {
    let set: HashSet<NsId> = entries
        .iter()
        .filter_map(|e| match &e.change {
            Change::NamedNetns { name } => {
                NsId::of_path(&Path::new(crate::topo::NETNS_DIR).join(name)).ok()
            }
            _ => None,
        })
        .collect();
    kill_in_namespaces(&set);
}

fn count_in_netns(ns: NsId) -> usize {
    let me = std::process::id();
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
                .is_some_and(|p| p != me)
                && NsId::of_path(&e.path().join("ns/net")).ok() == Some(ns)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn the_first_subnet_is_the_pids_and_a_taken_one_is_skipped() {
        // The pid's 14 low bits pick the first candidate, as before.
        let pid = 0x1234_5678u32;
        let first = pid % SHELL_SUBNETS;
        assert_eq!(subnet_addr(first), ip("100.86.120.0"));
        assert_eq!(pick_subnet(first, &[]), Some(first));
        // Two pids 16384 apart share their first candidate: the second
        // sees the first's reservation and takes the next one.
        let held = [(subnet_addr(first), 24)];
        assert_eq!(pick_subnet(first + SHELL_SUBNETS, &held), Some(first + 1));
        // An address of the host inside the range (a /11 covering the
        // first half): the first free /24 is the one after it.
        let host = [(ip("100.64.0.1"), 11)];
        let i = pick_subnet(0, &host).unwrap();
        assert_eq!(subnet_addr(i), ip("100.96.0.0"));
        // Wrapping: from the last one, with it taken, to the first.
        let last = SHELL_SUBNETS - 1;
        assert_eq!(subnet_addr(last), ip("100.127.255.0"));
        assert_eq!(pick_subnet(last, &[(subnet_addr(last), 24)]), Some(0));
        // The whole range taken: none.
        assert_eq!(pick_subnet(5, &[(ip("100.64.0.0"), 10)]), None);
        assert_eq!(pick_subnet(5, &[(ip("0.0.0.0"), 0)]), None);
    }

    #[test]
    fn the_ipv6_range_is_a_stable_ula_and_a_taken_64_is_skipped() {
        let r = ula_range("3d1219c7c4c5404aaa1f6d2a48adfda4");
        assert_eq!(r, ula_range("3d1219c7c4c5404aaa1f6d2a48adfda4"), "stable");
        assert_ne!(r, ula_range("another host"));
        let o = r.octets();
        assert_eq!(o[0], 0xfd, "in fd00::/8");
        assert!(o[6..].iter().all(|&b| b == 0), "a /48: {r}");
        assert_eq!(shell_range6(), shell_range6());
        // The i-th /64 carries i in its subnet ID.
        let s = subnet6_addr(r, 0x1234);
        assert_eq!(&s.octets()[..6], &o[..6]);
        assert_eq!(&s.octets()[6..8], &[0x12, 0x34]);
        assert_eq!(pick_subnet6(r, 7, &[]), Some(7));
        // Held, or on the host (an address in it, any prefix): skipped.
        let held = [(subnet6_addr(r, 7), 64)];
        assert_eq!(pick_subnet6(r, 7, &held), Some(8));
        let host = [(Ipv6Addr::from(u128::from(subnet6_addr(r, 8)) | 2), 120)];
        assert_eq!(pick_subnet6(r, 8, &host), Some(9));
        // Wrapping, and a host route covering the whole /48 leaves none.
        assert_eq!(
            pick_subnet6(r, SHELL_SUBNETS6 - 1, &[(subnet6_addr(r, 0xffff), 64)]),
            Some(0)
        );
        assert_eq!(pick_subnet6(r, 3, &[(r, 48)]), None);
        assert_eq!(pick_subnet6(r, 3, &[("fc00::".parse().unwrap(), 7)]), None);
        // Link-local and other ULAs do not overlap it.
        let other = [
            ("fe80::1".parse().unwrap(), 64),
            ("fd00::2".parse().unwrap(), 64),
        ];
        assert_eq!(pick_subnet6(r, 3, &other).map(|_| ()), Some(()));
    }

    /// A pass proves a topology's preferred /64 is the same from run to
    /// run, never one a shell takes first, and differs between names.
    #[test]
    fn a_topology_prefers_a_64_of_its_own_above_the_shells() {
        let names = ["default", "lab", "t6", "tping", "a.b_c"];
        let firsts: HashSet<u32> = names.iter().map(|n| topo_subnet6_index(n)).collect();
        assert_eq!(firsts.len(), names.len(), "{firsts:?}");
        for n in names {
            let i = topo_subnet6_index(n);
            assert_eq!(i, topo_subnet6_index(n), "stable");
            assert!((SHELL_SUBNETS..SHELL_SUBNETS6).contains(&i), "{n}: {i}");
        }
    }

    #[test]
    fn held_ipv6_subnets_are_not_given_twice() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::at(dir.path());
        let r = ula_range("x");
        let mut a = ledger.begin("shell", "a").unwrap();
        let mut b = ledger.begin("shell", "b").unwrap();
        let x = a.reserve_subnet6(r, 5, &[]).unwrap();
        let y = b.reserve_subnet6(r, 5, &[]).unwrap();
        assert_eq!(x, subnet6_addr(r, 5));
        assert_eq!(y, subnet6_addr(r, 6));
        drop(a);
        assert_eq!(b.reserve_subnet6(r, 5, &[]).unwrap(), x, "released");
        let e = b.reserve_subnet6(r, 0, &[(r, 48)]).unwrap_err().to_string();
        assert!(e.contains(&format!("no free /64 in {r}/48")), "{e}");
    }

    #[test]
    fn the_start_time_tells_a_reused_pid_from_the_owner() {
        let me = std::process::id();
        let t = start_time(me).expect("own start time");
        assert_eq!(start_time(me), Some(t));
        let r = RecordFile {
            pid: me,
            start: t + 1,
            mode: "shell".into(),
            name: "x".into(),
            entries: Vec::new(),
        };
        assert!(!r.alive(), "a different start time is another process");
        assert!(RecordFile {
            start: t,
            ..r.clone()
        }
        .alive());
        assert_eq!(start_time(u32::try_from(i32::MAX).unwrap()), None);
    }

    fn dead_record(dir: &Path, file: &str, entries: Vec<Entry>) {
        let r = RecordFile {
            pid: u32::try_from(i32::MAX).unwrap(),
            start: 1,
            mode: "shell".into(),
            name: "gone".into(),
            entries,
        };
        fs::write(dir.join(file), serde_json::to_string(&r).unwrap()).unwrap();
    }

    #[test]
    fn a_dead_owners_files_are_removed_and_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::at(dir.path().join("ledger"));
        fs::create_dir_all(ledger.dir()).unwrap();
        let left = dir.path().join("state.json");
        fs::write(&left, "{}").unwrap();
        let ns = NsId::current().unwrap();
        dead_record(
            ledger.dir(),
            "1-1-0.json",
            vec![
                Entry {
                    netns: ns,
                    change: Change::File { path: left.clone() },
                },
                Entry {
                    netns: ns,
                    change: Change::Claim {
                        ifname: "veth-x".into(),
                    },
                },
            ],
        );
        let dry = ledger.recover(true, true).unwrap();
        assert_eq!(dry.len(), 1, "{dry:?}");
        assert!(left.exists(), "a dry run changes nothing");
        let done = ledger.recover(true, false).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(
            done[0].owner,
            format!("pipelab shell 'gone' (pid {})", i32::MAX)
        );
        assert_eq!(done[0].what, format!("file {} removed", left.display()));
        assert_eq!(dry[0].what, format!("would remove file {}", left.display()));
        assert!(!left.exists());
        assert!(ledger.recover(true, false).unwrap().is_empty());
        assert_eq!(
            fs::read_dir(ledger.dir()).unwrap().count(),
            0,
            "record gone"
        );
    }

    #[test]
    fn claims_of_live_owners_are_refused_and_dead_ones_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::at(dir.path());
        let ns = NsId::current().unwrap();
        dead_record(
            dir.path(),
            "1-1-0.json",
            vec![Entry {
                netns: ns,
                change: Change::Claim {
                    ifname: "veth-b".into(),
                },
            }],
        );
        let mut a = ledger.begin("bridge", "first").unwrap();
        a.claim("veth-a").unwrap();
        let mut b = ledger.begin("bridge", "second").unwrap();
        let e = b.claim("veth-a").unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "interface veth-a is used by pipelab bridge 'first' (pid {})",
                std::process::id()
            )
        );
        b.claim("veth-b").unwrap();
        drop(a);
        b.claim("veth-a").unwrap();
        drop(b);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn held_subnets_are_not_given_twice() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::at(dir.path());
        let mut a = ledger.begin("shell", "a").unwrap();
        let mut b = ledger.begin("shell", "b").unwrap();
        let x = a.reserve_subnet(7, &[]).unwrap();
        let y = b.reserve_subnet(7 + SHELL_SUBNETS, &[]).unwrap();
        assert_eq!(x, ip("100.64.7.0"));
        assert_eq!(y, ip("100.64.8.0"));
        drop(a);
        let z = b.reserve_subnet(7, &[]).unwrap();
        assert_eq!(z, ip("100.64.7.0"), "released with its record");
        let e = b
            .reserve_subnet(0, &[(ip("100.64.0.0"), 10)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no free /24 in 100.64.0.0/10"), "{e}");
    }
}
