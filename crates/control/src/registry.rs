//! The registry of running emulations.
//!
//! Every live emulation (pipelabd, a shell, a bridge, a topology) has an
//! entry in one directory, [`DEFAULT_RUN_DIR`] (or the directory named by
//! the environment variable [`RUN_DIR_ENV`], for tests):
//!
//! * `NAME.json`: its [`EmulationInfo`] (name, mode, pid, owner, socket,
//!   start time, pipes, a one-line summary), written atomically (temp file
//!   and rename) and readable by everyone;
//! * `NAME.sock`: its control socket, mode 0660, owned by the emulation's
//!   owner and the group `pipelab` (if it exists): root, the owner and the
//!   group's members may connect; what each may do there is the server's
//!   [`Access`](crate::server::Access) policy.
//!
//! A name is held by a live process: [`Registry::register`] refuses it,
//! naming the holder. An entry is live when its process exists and its
//! socket accepts connections; an entry that is not (the process was
//! killed) is *stale*, and the next [`Registry::register`] or
//! [`Registry::list`] removes it. A [`Registration`] removes its two files
//! when it is closed or dropped, so a normal exit leaves nothing behind.
//!
//! Names are 1 to [`MAX_NAME`] letters, digits, `_`, `.` and `-`, not
//! starting with `.` or `-`.

use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where emulations register by default.
pub const DEFAULT_RUN_DIR: &str = "/run/pipelab/emu";

/// The environment variable that overrides [`DEFAULT_RUN_DIR`].
pub const RUN_DIR_ENV: &str = "PIPELAB_RUN_DIR";

/// The longest emulation name.
pub const MAX_NAME: usize = 64;

/// The longest socket path the kernel takes (`sun_path` less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// One running emulation, as `NAME.json` holds it (`pipelab list
/// --json` prints these; fields are added, never renamed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulationInfo {
    /// Its name (`--name`).
    pub name: String,
    /// Its kind: `host`, `none`, `shell`, `bridge`, `topo`.
    pub mode: String,
    /// The process serving it.
    pub pid: u32,
    /// The uid it belongs to.
    pub owner: u32,
    /// Its control socket (set by [`Registry::register`]).
    #[serde(default)]
    pub socket: PathBuf,
    /// When it started, in seconds since the Unix epoch.
    pub started: u64,
    /// Pipes it runs (kept up to date by its server).
    #[serde(default)]
    pub pipes: u64,
    /// One line saying what it is (`veth-a <-> veth-b`, `20 VNs`).
    #[serde(default)]
    pub summary: String,
}

impl EmulationInfo {
    /// An entry for this process, owned by its real uid, started now.
    pub fn new(name: impl Into<String>, mode: impl Into<String>) -> EmulationInfo {
        EmulationInfo {
            name: name.into(),
            mode: mode.into(),
            pid: std::process::id(),
            owner: nix::unistd::getuid().as_raw(),
            socket: PathBuf::new(),
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            pipes: 0,
            summary: String::new(),
        }
    }
}

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The name is not a valid emulation name.
    #[error("'{name}' is not a valid emulation name: {why}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A live process holds the name.
    #[error("an emulation named '{name}' is already running ({mode}, pid {pid}); choose another name with --name")]
    Taken {
        /// The name.
        name: String,
        /// The holder's mode (`unknown` while it registers).
        mode: String,
        /// The holder's process.
        pid: u32,
    },
    /// No running emulation has the name.
    #[error("no running emulation is named '{name}'; {}", running_names(.running))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names of the running emulations.
        running: Vec<String>,
    },
    /// The socket path would be longer than a Unix socket's.
    #[error("the socket path {} is longer than the {MAX_SOCKET_PATH} bytes a Unix socket allows (shorten the name or {RUN_DIR_ENV})", .0.display())]
    PathTooLong(PathBuf),
    /// Something in the directory could not be done.
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

fn running_names(names: &[String]) -> String {
    if names.is_empty() {
        "none is running (see `pipelab list`)".to_string()
    } else {
        format!("running: {}", names.join(", "))
    }
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RegistryError {
    let path = path.to_path_buf();
    move |source| RegistryError::Io { what, path, source }
}

/// Checks an emulation name: 1 to [`MAX_NAME`] letters, digits, `_`, `.`,
/// `-`, not starting with `.` or `-`.
pub fn check_name(name: &str) -> Result<(), RegistryError> {
    let bad = |why: &str| {
        Err(RegistryError::BadName {
            name: name.to_string(),
            why: why.to_string(),
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME {
        return bad(&format!("it is longer than {MAX_NAME} characters"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return bad(&format!(
            "'{c}' is not allowed (letters, digits, '_', '.' and '-')"
        ));
    }
    if name.starts_with(['.', '-']) {
        return bad("it may not start with '.' or '-'");
    }
    Ok(())
}

/// Whether process `pid` exists (a process of another user counts).
fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

/// What a socket file says about its holder.
enum SocketState {
    /// Someone accepts connections there (the listener's pid, if known).
    Live(Option<u32>),
    /// Not ours to connect to: cannot tell.
    Forbidden,
    /// Nobody listens (or no file).
    Dead,
}

/// Connects without waiting (a server that does not accept, its backlog
/// full, must not hang `pipelab list`).
fn probe_socket(path: &Path) -> SocketState {
    use nix::errno::Errno;
    use nix::sys::socket::{self, sockopt::PeerCredentials, AddressFamily, SockFlag, SockType};
    use std::os::fd::AsRawFd;
    let Ok(addr) = socket::UnixAddr::new(path) else {
        return SocketState::Dead;
    };
    let Ok(fd) = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    ) else {
        // Out of descriptors: cannot tell, so do not call it dead.
        return SocketState::Forbidden;
    };
    match socket::connect(fd.as_raw_fd(), &addr) {
        Ok(()) => {
            let pid = socket::getsockopt(&fd, PeerCredentials)
                .ok()
                .and_then(|c| u32::try_from(c.pid()).ok());
            SocketState::Live(pid)
        }
        // Bound and listening, its backlog full.
        Err(Errno::EAGAIN) => SocketState::Live(None),
        Err(Errno::EACCES) | Err(Errno::EPERM) => SocketState::Forbidden,
        Err(_) => SocketState::Dead,
    }
}

/// Whether an entry's process runs and its socket is served.
fn is_live(info: &EmulationInfo) -> bool {
    pid_alive(info.pid)
        && match probe_socket(&info.socket) {
            SocketState::Live(_) | SocketState::Forbidden => true,
            SocketState::Dead => false,
        }
}

/// The registry in one directory, and the group its sockets are given.
#[derive(Clone, Debug)]
pub struct Registry {
    dir: PathBuf,
    group: String,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

impl Registry {
    /// The registry in `$PIPELAB_RUN_DIR`, or [`DEFAULT_RUN_DIR`]; sockets
    /// go to group [`DEFAULT_GROUP`](crate::DEFAULT_GROUP).
    pub fn new() -> Registry {
        let dir = std::env::var_os(RUN_DIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_RUN_DIR));
        Registry::at(dir)
    }

    /// The registry in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Registry {
        Registry {
            dir: dir.into(),
            group: crate::DEFAULT_GROUP.to_string(),
        }
    }

    /// The same registry, giving sockets to `group` (if it exists).
    pub fn with_group(mut self, group: &str) -> Registry {
        self.group = group.to_string();
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the directory and its missing parents, mode 0755 whatever
    /// the umask (everyone lists the emulations and reaches their
    /// sockets; the sockets' own modes decide who may connect).
    fn make_dir(&self) -> Result<(), RegistryError> {
        crate::paths::make_dirs(&self.dir, 0o755).map_err(io_err("create the directory", &self.dir))
    }

    fn json_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn socket_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.sock"))
    }

    fn read(&self, name: &str) -> Option<EmulationInfo> {
        let text = fs::read_to_string(self.json_path(name)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Removes a stale entry's files (best effort: a user may not be
    /// allowed to, and another process may have removed them first).
    fn remove_stale(&self, name: &str) {
        let _ = fs::remove_file(self.json_path(name));
        let sock = self.socket_path(name);
        if matches!(probe_socket(&sock), SocketState::Dead) {
            let _ = fs::remove_file(sock);
        }
    }

    /// Registers `info` under its name: binds `NAME.sock` (mode 0660, the
    /// owner's, group `pipelab` if it exists; never wider, not for a
    /// moment) and writes `NAME.json`. `info.pid` is set to this process
    /// and `info.socket` to the socket. A name held by a live process is
    /// refused, naming it; a stale entry is replaced.
    pub fn register(&self, mut info: EmulationInfo) -> Result<Registration, RegistryError> {
        check_name(&info.name)?;
        let name = info.name.clone();
        self.make_dir()?;
        let sock = self.socket_path(&name);
        if sock.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(RegistryError::PathTooLong(sock));
        }
        if let Some(old) = self.read(&name) {
            if is_live(&old) {
                return Err(RegistryError::Taken {
                    name,
                    mode: old.mode,
                    pid: old.pid,
                });
            }
        }
        match fs::symlink_metadata(&sock) {
            Ok(meta) => {
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_socket() {
                    return Err(RegistryError::Io {
                        what: "replace",
                        path: sock,
                        source: std::io::Error::new(
                            ErrorKind::AlreadyExists,
                            "it exists and is not a socket",
                        ),
                    });
                }
                if let SocketState::Live(pid) = probe_socket(&sock) {
                    // Another process is registering this name right now
                    // (its socket is bound, its entry not yet written).
                    let mode = self.read(&name).map(|i| i.mode);
                    return Err(RegistryError::Taken {
                        name,
                        mode: mode.unwrap_or_else(|| "unknown".into()),
                        pid: pid.unwrap_or(0),
                    });
                }
                fs::remove_file(&sock).map_err(io_err("remove the stale socket", &sock))?;
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(RegistryError::Io {
                    what: "inspect",
                    path: sock,
                    source: e,
                })
            }
        }
        let _ = fs::remove_file(self.json_path(&name));
        let listener = bind_private(&sock, &self.group).map_err(|e| {
            if e.kind() == ErrorKind::AddrInUse {
                RegistryError::Taken {
                    name: name.clone(),
                    mode: "unknown".into(),
                    pid: 0,
                }
            } else {
                RegistryError::Io {
                    what: "listen on",
                    path: sock.clone(),
                    source: e,
                }
            }
        })?;
        info.pid = std::process::id();
        info.socket = sock.clone();
        let reg = Registration {
            info,
            json: self.json_path(&name),
            listener: Some(listener),
            socket_id: file_id(&sock),
            open: true,
        };
        // From here on, dropping `reg` removes what was made.
        give_socket(&sock, reg.info.owner)?;
        reg.write()?;
        Ok(reg)
    }

    /// Removes the entry of `name` if it belongs to process `pid`, which
    /// the caller knows has ended (it stopped or killed it): a crashed
    /// emulation's entry goes at once, even while the dying process still
    /// holds its socket. An entry of another process is left alone.
    pub fn forget(&self, name: &str, pid: u32) {
        if check_name(name).is_err() {
            return;
        }
        if self.read(name).is_some_and(|i| i.pid == pid) {
            let _ = fs::remove_file(self.json_path(name));
            let _ = fs::remove_file(self.socket_path(name));
        }
    }

    /// The running emulations, by name; stale entries are removed.
    pub fn list(&self) -> Vec<EmulationInfo> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let file = e.file_name();
            let Some(file) = file.to_str() else { continue };
            if let Some(name) = file.strip_suffix(".json") {
                if check_name(name).is_err() {
                    continue;
                }
                match self.read(name) {
                    Some(info) if info.name == name && is_live(&info) => out.push(info),
                    _ => self.remove_stale(name),
                }
            } else if let Some(name) = file.strip_suffix(".sock") {
                // A socket without an entry: a registration under way
                // (its socket answers) or the leftover of a crash.
                if check_name(name).is_ok() && !self.json_path(name).exists() {
                    if let SocketState::Dead = probe_socket(&e.path()) {
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The running emulation named `name`.
    pub fn get(&self, name: &str) -> Result<EmulationInfo, RegistryError> {
        check_name(name)?;
        match self.read(name) {
            Some(info) if info.name == name && is_live(&info) => Ok(info),
            _ => Err(RegistryError::Unknown {
                name: name.to_string(),
                running: self.list().into_iter().map(|i| i.name).collect(),
            }),
        }
    }

    /// The control socket of the running emulation named `name`; an
    /// unknown name's error lists the running ones.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, RegistryError> {
        self.get(name).map(|i| i.socket)
    }
}

/// Binds a socket at `path` with mode 0660 and group `group` (if it
/// exists) from its first moment ([`crate::paths::bind_socket`]).
fn bind_private(path: &Path, group: &str) -> std::io::Result<UnixListener> {
    crate::paths::bind_socket(path, 0o660, group_id(group))
}

/// The id of `group`, if it exists.
fn group_id(group: &str) -> Option<nix::unistd::Gid> {
    match nix::unistd::Group::from_name(group) {
        Ok(Some(g)) => Some(g.gid),
        _ => None,
    }
}

/// Gives the socket to its owner (root binds it for them), changing the
/// socket itself, never what a link put in its place points to.
fn give_socket(path: &Path, owner: u32) -> Result<(), RegistryError> {
    if nix::unistd::geteuid().is_root() && owner != 0 {
        crate::paths::lchown(path, Some(owner), None).map_err(|source| RegistryError::Io {
            what: "give to its owner",
            path: path.to_path_buf(),
            source,
        })
    } else {
        Ok(())
    }
}

/// A name held in the registry: the entry and the bound socket. Dropping
/// it (or [`Registration::close`]) removes both files.
#[derive(Debug)]
pub struct Registration {
    info: EmulationInfo,
    json: PathBuf,
    listener: Option<UnixListener>,
    /// The socket file's device and inode, to remove only our own.
    socket_id: Option<(u64, u64)>,
    open: bool,
}

/// A file's device and inode.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Registration {
    /// The entry as registered.
    pub fn info(&self) -> &EmulationInfo {
        &self.info
    }

    /// The emulation's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The control socket.
    pub fn socket(&self) -> &Path {
        &self.info.socket
    }

    /// The bound socket, to serve (once; [`crate::server::serve`] takes
    /// it).
    pub fn take_listener(&mut self) -> Option<UnixListener> {
        self.listener.take()
    }

    /// Records the number of pipes the emulation runs (rewrites the entry
    /// if it changed).
    pub fn set_pipes(&mut self, pipes: u64) -> Result<(), RegistryError> {
        if pipes == self.info.pipes {
            return Ok(());
        }
        self.info.pipes = pipes;
        self.write()
    }

    /// Records a new one-line summary.
    pub fn set_summary(&mut self, summary: &str) -> Result<(), RegistryError> {
        if summary == self.info.summary {
            return Ok(());
        }
        self.info.summary = summary.to_string();
        self.write()
    }

    /// Writes the entry: temp file, rename (readers see the old or the
    /// new one, never a part).
    fn write(&self) -> Result<(), RegistryError> {
        let text = serde_json::to_string_pretty(&self.info).map_err(|e| RegistryError::Io {
            what: "encode",
            path: self.json.clone(),
            source: e.into(),
        })?;
        let dir = self.json.parent().unwrap_or(Path::new("."));
        let tmp = dir.join(format!(".{}.{}.tmp", self.info.name, std::process::id()));
        let write = || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.write_all(b"\n")?;
            // The mode is exact whatever the umask.
            f.set_permissions(fs::Permissions::from_mode(0o644))?;
            fs::rename(&tmp, &self.json)
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            RegistryError::Io {
                what: "write",
                path: self.json.clone(),
                source: e,
            }
        })
    }

    /// Removes the entry and the socket now.
    pub fn close(mut self) {
        self.remove();
    }

    fn remove(&mut self) {
        if !std::mem::replace(&mut self.open, false) {
            return;
        }
        self.listener = None;
        // Only what is still ours (once the socket is gone, another
        // process may take the name at once): the socket we bound, then
        // the entry naming this process.
        if self.socket_id.is_some() && file_id(&self.info.socket) == self.socket_id {
            let _ = fs::remove_file(&self.info.socket);
        }
        let ours = fs::read_to_string(&self.json)
            .ok()
            .and_then(|t| serde_json::from_str::<EmulationInfo>(&t).ok())
            .is_some_and(|i| i.pid == self.info.pid && i.socket == self.info.socket);
        if ours {
            let _ = fs::remove_file(&self.json);
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.remove();
    }
}

/// [`Registry::register`] in the default registry.
pub fn register(info: EmulationInfo) -> Result<Registration, RegistryError> {
    Registry::new().register(info)
}

/// [`Registry::list`] of the default registry.
pub fn list() -> Vec<EmulationInfo> {
    Registry::new().list()
}

/// [`Registry::resolve`] in the default registry.
pub fn resolve(name: &str) -> Result<PathBuf, RegistryError> {
    Registry::new().resolve(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(dir: &Path) -> Registry {
        Registry::at(dir.join("emu")).with_group("pipelab-no-such-group")
    }

    #[test]
    fn names_are_checked() {
        for ok in ["lab", "a", "pipelabd", "my-lab_2.v1", &"x".repeat(64)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            (&"x".repeat(65) as &str, "longer than 64"),
            ("a/b", "'/' is not allowed"),
            ("a b", "' ' is not allowed"),
            ("..", "may not start"),
            ("-x", "may not start"),
            ("é", "'é' is not allowed"),
        ] {
            let e = check_name(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn register_list_resolve_and_remove() {
        let dir = tempfile::tempdir().unwrap();
        let r = reg(dir.path());
        assert!(r.list().is_empty());
        let e = r.resolve("lab").unwrap_err().to_string();
        assert!(
            e.contains("no running emulation is named 'lab'; none is running"),
            "{e}"
        );
        let mut info = EmulationInfo::new("lab", "topo");
        info.summary = "3 VNs".into();
        let mut a = r.register(info).unwrap();
        let sock = a.socket().to_path_buf();
        assert_eq!(sock, dir.path().join("emu/lab.sock"));
        let mode = fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        let json = dir.path().join("emu/lab.json");
        let mode = fs::metadata(&json).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        let listed = r.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "lab");
        assert_eq!(listed[0].mode, "topo");
        assert_eq!(listed[0].pid, std::process::id());
        assert_eq!(listed[0].summary, "3 VNs");
        assert_eq!(r.resolve("lab").unwrap(), sock);
        a.set_pipes(12).unwrap();
        assert_eq!(r.list()[0].pipes, 12);
        // The name is held.
        let e = r
            .register(EmulationInfo::new("lab", "shell"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "'lab' is already running (topo, pid {})",
                std::process::id()
            )),
            "{e}"
        );
        let _b = r.register(EmulationInfo::new("other", "bridge")).unwrap();
        let e = r.resolve("nope").unwrap_err().to_string();
        assert!(e.contains("running: lab, other"), "{e}");
        a.close();
        assert!(!json.exists() && !sock.exists());
        assert_eq!(r.list().len(), 1);
        let mode = fs::metadata(r.dir()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
    }

    #[test]
    fn a_registration_removes_only_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = reg(dir.path());
        let a = r.register(EmulationInfo::new("x", "shell")).unwrap();
        // Another process took the name (as after a wrong judgement of
        // staleness): its socket and entry are not ours to remove.
        let sock = a.socket().to_path_buf();
        fs::remove_file(&sock).unwrap();
        let _theirs = UnixListener::bind(&sock).unwrap();
        let mut info = EmulationInfo::new("x", "bridge");
        info.pid = 1;
        info.socket = sock.clone();
        fs::write(r.json_path("x"), serde_json::to_string(&info).unwrap()).unwrap();
        drop(a);
        assert!(sock.exists());
        assert!(r.json_path("x").exists());
    }

    #[test]
    fn stale_entries_are_removed_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let r = reg(dir.path());
        fs::create_dir_all(r.dir()).unwrap();
        // A crashed process: an entry with a pid that does not run, its
        // socket file left with nobody listening.
        let dead = u32::try_from(i32::MAX).unwrap();
        let mut info = EmulationInfo::new("old", "shell");
        info.pid = dead;
        info.socket = r.socket_path("old");
        fs::write(r.json_path("old"), serde_json::to_string(&info).unwrap()).unwrap();
        drop(UnixListener::bind(r.socket_path("old")).unwrap());
        assert!(r.socket_path("old").exists());
        // A live pid whose socket nobody serves is stale too (pid reuse).
        let mut info = EmulationInfo::new("reused", "bridge");
        info.socket = r.socket_path("reused");
        fs::write(r.json_path("reused"), serde_json::to_string(&info).unwrap()).unwrap();
        assert!(r.list().is_empty());
        assert!(!r.json_path("old").exists());
        assert!(!r.socket_path("old").exists());
        assert!(!r.json_path("reused").exists());
        // A stale entry does not hold its name.
        fs::write(r.json_path("old"), "{ not json").unwrap();
        let a = r.register(EmulationInfo::new("old", "topo")).unwrap();
        assert_eq!(r.list()[0].mode, "topo");
        drop(a);
        assert!(r.list().is_empty());
        assert!(
            fs::read_dir(r.dir()).unwrap().next().is_none(),
            "nothing left"
        );
    }

    #[test]
    fn long_socket_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(60));
        let r = Registry::at(&deep);
        let e = r
            .register(EmulationInfo::new("x".repeat(64), "none"))
            .unwrap_err();
        assert!(matches!(e, RegistryError::PathTooLong(_)), "{e}");
    }
}
