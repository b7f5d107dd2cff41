//! The control socket and the request handler.
//!
//! One thread per connection (at most [`MAX_CONNECTIONS`]); every request
//! is handled under one lock that holds the committed state, the data
//! plane and the journal, so requests are serialized: each sees the
//! effect of all before it. A change is applied to the plane, then
//! journaled, then committed; if the journal cannot be written the plane
//! gets the previous configuration back and the request fails.
//!
//! The caller is identified by `SO_PEERCRED` (the kernel's word, not the
//! client's).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

use crate::journal::Journal;
use crate::plane::Plane;
use crate::protocol::{encode, parse_request, Op, Request, Response, MAX_REQUEST};
use crate::state::{Change, State, Target};

/// Connections served at once; more are answered with an error.
pub const MAX_CONNECTIONS: usize = 256;

/// A connection idle this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);

struct Inner {
    state: State,
    plane: Option<Box<dyn Plane>>,
    journal: Journal,
}

/// The daemon: state, plane, journal and counters.
pub struct Daemon {
    inner: Mutex<Inner>,
    latency_us: Mutex<Histogram<u64>>,
    requests: AtomicU64,
    errors: AtomicU64,
    connections: AtomicUsize,
    started: Instant,
    restore_ms: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every change
    // is computed on a copy and swapped in), so keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A user name or numeric uid to a uid.
pub fn resolve_user(name: &str) -> Result<u32, String> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(n);
    }
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(format!("no user named '{name}'")),
        Err(e) => Err(format!("cannot look up user '{name}': {e}")),
    }
}

impl Daemon {
    /// Loads the journal and applies it to `plane`.
    pub fn start(journal: Journal, mut plane: Box<dyn Plane>) -> Result<Daemon, String> {
        let t0 = Instant::now();
        let state = journal.load()?;
        plane
            .apply(&state.merged())
            .map_err(|e| format!("the journaled configuration does not apply: {e}"))?;
        let restore_ms = t0.elapsed().as_secs_f64() * 1e3;
        let hist =
            Histogram::new_with_bounds(1, 60_000_000, 3).map_err(|e| format!("histogram: {e}"))?;
        Ok(Daemon {
            inner: Mutex::new(Inner {
                state,
                plane: Some(plane),
                journal,
            }),
            latency_us: Mutex::new(hist),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            started: Instant::now(),
            restore_ms,
        })
    }

    /// How long loading and applying the journal took, in ms.
    pub fn restore_ms(&self) -> f64 {
        self.restore_ms
    }

    /// The data plane's name (`host`, `none`), or `stopped`.
    pub fn plane_name(&self) -> &'static str {
        lock(&self.inner)
            .plane
            .as_ref()
            .map(|p| p.name())
            .unwrap_or("stopped")
    }

    /// Stops the data plane (removing what it installed).
    pub fn stop(&self) -> Result<(), String> {
        let plane = lock(&self.inner).plane.take();
        match plane {
            Some(p) => p.stop(),
            None => Ok(()),
        }
    }

    /// Handles one request line from a caller with this uid.
    pub fn handle_line(&self, uid: u32, line: &[u8]) -> Response {
        let t0 = Instant::now();
        let resp = match parse_request(line) {
            Ok(req) => self.handle(uid, req),
            Err(e) => Response::err(e),
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        if !resp.ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
        let _ = lock(&self.latency_us).record(us.clamp(1, 60_000_000));
        resp
    }

    fn handle(&self, uid: u32, req: Request) -> Response {
        let target = match (&req.user, uid) {
            (None, 0) => Target::Root,
            (None, u) => Target::User(u),
            (Some(name), 0) => match resolve_user(name) {
                Ok(0) => Target::Root,
                Ok(u) => Target::User(u),
                Err(e) => return Response::err(e),
            },
            (Some(_), _) => return Response::err("only root may act in another user's block"),
        };
        match req.op {
            Op::Exec { script } => self.change(|s| s.exec(target, &script)),
            Op::Restore { script } => self.change(|s| s.restore(target, &script)),
            Op::Netconfig { args, dry_run } => self.change(|s| s.netconfig(target, &args, dry_run)),
            Op::Limit { args } => {
                if uid != 0 {
                    return Response::err("only root may set limits");
                }
                self.change(|s| s.limit(&args, &resolve_user))
            }
            Op::Save => Response::ok(lock(&self.inner).state.save(target)),
            Op::Stats => {
                let mut r = Response::ok("");
                r.data = Some(self.stats(target));
                r
            }
        }
    }

    /// Computes a change on a copy, applies it to the plane, journals it,
    /// commits it. Nothing changes on any error.
    fn change(&self, f: impl FnOnce(&State) -> Result<Change, String>) -> Response {
        let mut inner = lock(&self.inner);
        let change = match f(&inner.state) {
            Ok(c) => c,
            Err(e) => return Response::err(e),
        };
        if change.next != inner.state {
            let Inner {
                state,
                plane,
                journal,
            } = &mut *inner;
            let Some(plane) = plane.as_mut() else {
                return Response::err("pipelabd is stopping");
            };
            let merged = change.next.merged();
            if merged != state.merged() {
                if let Err(e) = plane.apply(&merged) {
                    return Response::err(format!("the data plane refused the change: {e}"));
                }
            }
            if let Err(e) = journal.save(&change.next) {
                let _ = plane.apply(&state.merged());
                return Response::err(format!("{e}; nothing was applied"));
            }
            *state = change.next;
        }
        Response::ok(change.output)
    }

    fn stats(&self, t: Target) -> serde_json::Value {
        let (summary, plane, numbers) = {
            let inner = lock(&self.inner);
            let plane = inner.plane.as_ref().map(|p| p.stats()).unwrap_or_default();
            let numbers = match t {
                Target::User(uid) => Some(inner.state.user_numbers(uid)),
                Target::Root => None,
            };
            (inner.state.summary(t), plane, numbers)
        };
        let plane = match numbers {
            None => plane,
            Some((pipes, rules)) => user_view(plane, &pipes, &rules),
        };
        let h = lock(&self.latency_us);
        serde_json::json!({
            "daemon": {
                "uptime_s": self.started.elapsed().as_secs_f64(),
                "restore_ms": self.restore_ms,
                "requests": self.requests.load(Ordering::Relaxed),
                "errors": self.errors.load(Ordering::Relaxed),
                "connections": self.connections.load(Ordering::Relaxed),
                "latency_us": {
                    "p50": h.value_at_quantile(0.5),
                    "p99": h.value_at_quantile(0.99),
                    "max": h.max(),
                },
            },
            "config": summary,
            "plane": plane,
        })
    }

    /// Serves connections on `listener` until the process ends.
    pub fn serve(self: &Arc<Self>, listener: UnixListener) {
        for conn in listener.incoming() {
            let Ok(stream) = conn else { continue };
            if self.connections.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                let mut s = stream;
                let _ = s.write_all(
                    encode(&Response::err(format!(
                        "pipelabd is serving {MAX_CONNECTIONS} connections; try again"
                    )))
                    .as_bytes(),
                );
                continue;
            }
            self.connections.fetch_add(1, Ordering::Relaxed);
            let d = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("pipelabd-conn".into())
                .spawn(move || {
                    d.serve_conn(stream);
                    d.connections.fetch_sub(1, Ordering::Relaxed);
                });
            if spawned.is_err() {
                self.connections.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    fn serve_conn(&self, stream: UnixStream) {
        let uid = match getsockopt(&stream, PeerCredentials) {
            Ok(c) => c.uid(),
            Err(_) => return,
        };
        let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
        let Ok(read_half) = stream.try_clone() else {
            return;
        };
        let mut reader = BufReader::new(read_half);
        let mut out = stream;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let limit = MAX_REQUEST as u64 + 1;
            match (&mut reader).take(limit).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let complete = buf.last() == Some(&b'\n');
            if !complete && buf.len() > MAX_REQUEST {
                let _ = out.write_all(
                    encode(&Response::err(format!(
                        "request longer than the limit of {MAX_REQUEST} bytes"
                    )))
                    .as_bytes(),
                );
                return;
            }
            if complete {
                buf.pop();
            }
            let resp = self.handle_line(uid, &buf);
            if out.write_all(encode(&resp).as_bytes()).is_err() {
                return;
            }
        }
    }
}

/// The plane's counters restricted to a user's pipes and rules, in the
/// user's numbers.
fn user_view(
    mut plane: serde_json::Value,
    pipes: &std::collections::BTreeMap<u32, u32>,
    rules: &std::collections::BTreeMap<u32, u32>,
) -> serde_json::Value {
    let num = |v: &serde_json::Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    if let Some(arr) = plane.get_mut("pipes").and_then(|v| v.as_array_mut()) {
        arr.retain_mut(|p| {
            let own = p.get("number").and_then(num).and_then(|g| pipes.get(&g));
            match own {
                Some(&n) => {
                    p["number"] = serde_json::Value::from(n);
                    true
                }
                None => false,
            }
        });
    }
    if let Some(arr) = plane.get_mut("rules").and_then(|v| v.as_array_mut()) {
        arr.retain_mut(|r| {
            let own = r.get(0).and_then(num).and_then(|g| rules.get(&g));
            match own {
                Some(&n) => {
                    r[0] = serde_json::Value::from(n);
                    true
                }
                None => false,
            }
        });
    }
    // Host-wide counters (the runner's, the queue's) describe everyone's
    // traffic: a user sees only their own objects.
    if let Some(obj) = plane.as_object_mut() {
        obj.retain(|k, _| matches!(k.as_str(), "pipes" | "rules" | "plane" | "lateness"));
    }
    plane
}

/// Binds the control socket at `path`: creates its directory, replaces a
/// stale socket (refusing if a daemon answers there), and gives it mode
/// 0660 and group `group` if that group exists.
pub fn bind(path: &Path, group: &str) -> Result<(UnixListener, Option<String>), String> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() && !dir.exists() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
        }
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(format!(
                "{} exists and is not a socket; not replacing it",
                path.display()
            ));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(format!(
                "another pipelabd is already listening on {}",
                path.display()
            ));
        }
        std::fs::remove_file(path)
            .map_err(|e| format!("cannot remove stale socket {}: {e}", path.display()))?;
    }
    // No moment where the socket is open to all: create it 0660.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o117));
    let listener = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = listener.map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660));
    let warning = match nix::unistd::Group::from_name(group) {
        Ok(Some(g)) => {
            nix::unistd::chown(path, None, Some(g.gid))
                .map_err(|e| format!("cannot give {} to group {group}: {e}", path.display()))?;
            None
        }
        _ => Some(format!(
            "group '{group}' does not exist: only root can use {} (create it with `groupadd {group}` and restart)",
            path.display()
        )),
    };
    Ok((listener, warning))
}

/// Where the daemon listens and keeps its state by default.
pub fn default_socket() -> PathBuf {
    PathBuf::from(crate::DEFAULT_SOCKET)
}
