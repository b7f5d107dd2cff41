//! The standing hostile suite of the control protocol and of
//! configuration text: every case names its input, its expected outcome
//! and the message a user sees, and after each the server still serves
//! and nothing was applied that should not have been.
//!
//! * the protocol: garbage, invalid UTF-8, deeply nested JSON, NUL bytes,
//!   a BOM, wrong versions and fields, oversized lines;
//! * connections: floods, idle and slow clients, clients that do not read
//!   or leave mid-request, concurrent clients, the time cap of a request,
//!   errors rendered without the state lock;
//! * other users (as root): connection quotas, connections kept for root,
//!   blocks and owners;
//! * configuration text through `pipelab check` and `pipelab -f`: each
//!   error class of the language with its exact message and position,
//!   NaN, huge and negative values, NUL bytes, a BOM, invalid UTF-8, very
//!   long lines, huge files.
//!
//! The server runs in this process (control plane only) with limits small
//! enough to test; users other than root are this test binary run again
//! under their uid.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pipelab_control::journal::Journal;
use pipelab_control::plane::ControlOnly;
use pipelab_control::server::{bind, Access, Limits, Server, ServerHandle};
use pipelab_control::{Client, Op, Response};

const BIN: &str = env!("CARGO_BIN_EXE_pipelab");

/// A server on `DIR/s.sock` (mode 0666, so that other uids connect), with
/// a journal in `DIR/state`; closed when dropped.
struct Daemon {
    sock: PathBuf,
    _handle: ServerHandle,
}

fn daemon(dir: &Path, access: Access, limits: Limits) -> Daemon {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let sock = dir.join("s.sock");
    let journal = Journal::open(&dir.join("state")).expect("journal");
    let server = Server::new(
        "hostile",
        Box::new(ControlOnly::default()),
        pipelab_lang::Config::new(),
        access,
        Some(journal),
    )
    .expect("server")
    .with_limits(limits);
    let (listener, _) = bind(&sock, "pipelab-no-such-group").expect("bind");
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let mut handle = ServerHandle::new(server);
    handle.listen(listener).expect("listen");
    Daemon {
        sock,
        _handle: handle,
    }
}

fn quick() -> Limits {
    Limits {
        idle_timeout: Duration::from_millis(300),
        read_timeout: Duration::from_millis(300),
        write_timeout: Duration::from_millis(300),
        ..Limits::default()
    }
}

impl Daemon {
    fn client(&self) -> Client {
        Client::connect(&self.sock).expect("connect")
    }

    fn exec(&self, script: &str) -> Response {
        self.client().exec(script).expect("request")
    }

    fn save(&self) -> String {
        let r = self.client().request(None, Op::Save).expect("save");
        assert!(r.ok, "{:?}", r.error);
        r.output
    }

    /// Writes `bytes` on a new connection and reads one answer.
    fn raw(&self, bytes: &[u8]) -> Response {
        let mut s = UnixStream::connect(&self.sock).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).ok();
        s.write_all(bytes).expect("write");
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).expect("answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }
}

fn error(r: &Response) -> String {
    assert!(!r.ok, "accepted: {}", r.output);
    r.error.clone().unwrap_or_default()
}

/// (case, request line, what the error says)
const PROTOCOL: &[(&str, &[u8], &str)] = &[
    (
        "not JSON",
        b"garbage\n",
        "request is not JSON: expected value at line 1 column 1",
    ),
    (
        "empty line",
        b"\n",
        "request is not JSON: EOF while parsing a value at line 1 column 0",
    ),
    (
        "NUL bytes",
        b"\0\0\0\n",
        "request is not JSON: expected value at line 1 column 1",
    ),
    (
        "a BOM before the JSON",
        b"\xef\xbb\xbf{\"v\":1,\"op\":\"save\"}\n",
        "request is not JSON: expected value at line 1 column 1",
    ),
    (
        "invalid UTF-8",
        b"\xff\x00\x80\n",
        "request is not UTF-8 (at byte 0)",
    ),
    (
        "invalid UTF-8 inside a string",
        b"{\"v\":1,\"op\":\"exec\",\"script\":\"pipe \xc3\"}\n",
        "request is not UTF-8 (at byte 34)",
    ),
    ("an empty object", b"{}\n", "request has no protocol version (\"v\")"),
    (
        "a JSON array",
        b"[1,2]\n",
        "request has no protocol version (\"v\")",
    ),
    (
        "a negative version",
        b"{\"v\":-1,\"op\":\"save\"}\n",
        "request has no protocol version (\"v\")",
    ),
    (
        "another version",
        b"{\"v\":99,\"op\":\"save\"}\n",
        "protocol version 99 is not supported: this pipelabd speaks version 1",
    ),
    (
        "a huge version",
        b"{\"v\":1e400,\"op\":\"save\"}\n",
        "request is not JSON: number out of range at line 1 column 10",
    ),
    ("no op", b"{\"v\":1}\n", "bad request: missing field `op`"),
    (
        "an unknown op",
        b"{\"v\":1,\"op\":\"launch\"}\n",
        "bad request: unknown variant `launch`",
    ),
    (
        "a missing field",
        b"{\"v\":1,\"op\":\"exec\"}\n",
        "bad request: missing field `script`",
    ),
    (
        "a field of the wrong type",
        b"{\"v\":1,\"op\":\"exec\",\"script\":12}\n",
        "bad request: invalid type: integer `12`, expected a string",
    ),
    (
        "an unknown field",
        b"{\"v\":1,\"op\":\"exec\",\"script\":\"show\",\"extra\":true}\n",
        "bad request: unknown field `extra` for op `exec`",
    ),
    (
        "a misspelt dry_run",
        b"{\"v\":1,\"op\":\"netconfig\",\"args\":\"list\",\"dry_rn\":true}\n",
        "bad request: unknown field `dry_rn` for op `netconfig`",
    ),
    (
        "a numeric user",
        b"{\"v\":1,\"user\":5,\"op\":\"save\"}\n",
        "bad request: invalid type: integer `5`, expected a string",
    ),
    (
        "a lone surrogate",
        b"{\"v\":1,\"op\":\"exec\",\"script\":\"\\ud800\"}\n",
        "request is not JSON: unexpected end of hex escape at line 1 column 36",
    ),
    (
        "a NUL in the script",
        b"{\"v\":1,\"op\":\"exec\",\"script\":\"pipe 1 con\\u0000fig\"}\n",
        "error: NUL byte (U+0000) at line 1, column 11 (byte 10) is not allowed\n --> command:1:11\n",
    ),
    (
        "a BOM in the script",
        b"{\"v\":1,\"op\":\"exec\",\"script\":\"\\ufeffpipe 1 config\"}\n",
        "error: byte order mark (U+FEFF) at line 1, column 1 (byte 0) is not allowed\n --> command:1:1\n",
    ),
    (
        "an escape sequence in the script",
        b"{\"v\":1,\"op\":\"exec\",\"script\":\"pipe 1 config\\u001b[2J\"}\n",
        "error: control character U+001B at line 1, column 14 (byte 13) is not allowed",
    ),
];

/// Malformed requests: each is answered with its reason, on its own
/// connection, and changes nothing.
#[test]
fn malformed_requests_are_answered_with_their_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, quick());
    assert!(d.exec("pipe 1 config delay 5ms").ok);
    let before = d.save();
    for (case, line, want) in PROTOCOL {
        let e = error(&d.raw(line));
        assert!(e.contains(want), "{case}: {e}");
    }
    // Nested 100,000 deep: serde_json's recursion limit, not a stack
    // overflow.
    let mut deep = b"{\"v\":1,\"op\":\"save\",\"x\":".to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    deep.push(b'\n');
    let e = error(&d.raw(&deep));
    assert!(
        e.starts_with("request is not JSON: recursion limit exceeded"),
        "{e}"
    );
    let deep: Vec<u8> = std::iter::repeat_n(b'[', 100_000).chain([b'\n']).collect();
    let e = error(&d.raw(&deep));
    assert!(
        e.starts_with("request is not JSON: recursion limit exceeded"),
        "{e}"
    );
    assert_eq!(d.save(), before);
}

/// A line longer than 4 MiB is refused and the connection closed, with
/// or without a newline at its end.
#[test]
fn oversized_lines_are_refused_and_the_connection_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let max = pipelab_control::protocol::MAX_REQUEST;
    for newline in [false, true] {
        let mut s = UnixStream::connect(&d.sock).expect("connect");
        let w = s.try_clone().expect("clone");
        let writer = std::thread::spawn(move || {
            let mut w = w;
            let mut big = vec![b'a'; max + 10];
            if newline {
                big.push(b'\n');
            }
            let _ = w.write_all(&big);
        });
        let mut all = String::new();
        s.set_read_timeout(Some(Duration::from_secs(20))).ok();
        let _ = s.read_to_string(&mut all);
        let _ = writer.join();
        assert_eq!(
            all,
            format!(
                "{{\"v\":1,\"ok\":false,\"error\":\"request longer than the limit of {max} bytes\"}}\n"
            ),
            "then closed"
        );
    }
    assert!(d.exec("show").ok);
}

/// 2000 requests written at once on one connection (read by another
/// thread): every one is answered, in order.
#[test]
fn a_flood_of_pipelined_requests_is_answered_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let s = UnixStream::connect(&d.sock).expect("connect");
    let r = s.try_clone().expect("clone");
    let reader = std::thread::spawn(move || {
        BufReader::new(r)
            .lines()
            .take(2000)
            .map(|l| serde_json::from_str::<Response>(&l.expect("line")).expect("response"))
            .collect::<Vec<_>>()
    });
    let mut w = s;
    let mut flood = String::new();
    for k in 0..2000 {
        flood.push_str(&format!(
            "{{\"v\":1,\"op\":\"exec\",\"script\":\"pipe {} config delay {k}ms\"}}\n",
            k % 7 + 1
        ));
    }
    w.write_all(flood.as_bytes()).expect("write");
    let answers = reader.join().expect("reader");
    assert_eq!(answers.len(), 2000);
    assert!(
        answers.iter().all(|a| a.ok),
        "{:?}",
        answers.iter().find(|a| !a.ok)
    );
    assert!(d.save().contains("pipe 7 config delay 1994ms"));
}

/// A connection with no request for the idle timeout is closed (no
/// answer: none was asked for); one that keeps asking is not.
#[test]
fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, quick());
    let mut busy = d.client();
    let mut idle = UnixStream::connect(&d.sock).expect("connect");
    idle.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let t0 = Instant::now();
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(100));
        assert!(busy.exec("show").expect("busy client served").ok);
    }
    let mut rest = Vec::new();
    let n = idle.read_to_end(&mut rest).expect("closed, not timed out");
    let waited = t0.elapsed();
    assert_eq!(n, 0, "no answer: {rest:?}");
    assert!(
        waited >= Duration::from_millis(280) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert!(busy.exec("show").expect("still served").ok);
}

/// A client that sends a request a byte at a time, slower than the read
/// timeout, is answered with an error and closed.
#[test]
fn a_slow_client_is_refused_after_the_read_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, quick());
    let mut s = UnixStream::connect(&d.sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let mut got = Vec::new();
    for b in b"{\"v\":1,\"op\":\"exec\",\"script\":\"pipe 1 config\"}\n" {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        let mut buf = [0u8; 4096];
        if let Ok(n) = s.read(&mut buf) {
            got.extend_from_slice(buf.get(..n).unwrap_or_default());
            if n == 0 {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert_eq!(
        text,
        "{\"v\":1,\"ok\":false,\"error\":\"request not received whole within 300 ms of its first byte; closing the connection\"}\n"
    );
    assert_eq!(d.save(), "set one_pass 1\n", "nothing applied");
}

/// A client that asks and never reads the answers is closed once an
/// answer waits longer than the write timeout; others are served.
#[test]
fn a_client_that_does_not_read_is_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, quick());
    let mut script = String::new();
    for p in 1..=400 {
        script.push_str(&format!(
            "pipe {p} config bw {p}Kbit/s delay {p}ms queue 20\n"
        ));
    }
    assert!(d.exec(&script).ok);
    let mut s = UnixStream::connect(&d.sock).expect("connect");
    s.set_write_timeout(Some(Duration::from_secs(20))).ok();
    let t0 = Instant::now();
    let save = b"{\"v\":1,\"op\":\"save\"}\n".repeat(200);
    // Each answer is ~20 KB: the socket's buffers fill after a few.
    let _ = s.write_all(&save);
    std::thread::sleep(Duration::from_millis(800));
    assert!(d.exec("show").ok, "others are served");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let answers = got.iter().filter(|&&b| b == b'\n').count();
    assert!(answers < 200, "closed before all answers: {answers}");
    assert!(t0.elapsed() < Duration::from_secs(15));
}

/// A client that leaves in the middle of a request, or after a request
/// without its newline, harms nothing; the last request of a connection
/// needs no newline.
#[test]
fn clients_that_leave_mid_request_harm_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, quick());
    {
        let mut s = UnixStream::connect(&d.sock).expect("connect");
        s.write_all(b"{\"v\":1,\"op\":\"exec\",\"script\":\"pipe 9 con")
            .expect("write");
    }
    let mut s = UnixStream::connect(&d.sock).expect("connect");
    s.write_all(b"{\"v\":1,\"op\":\"exec\",\"script\":\"pipe 8 config\"}")
        .expect("write");
    s.shutdown(std::net::Shutdown::Write).expect("half close");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    assert_eq!(answer, "{\"v\":1,\"ok\":true}\n");
    assert_eq!(d.save(), "set one_pass 1\npipe 8 config\n");
}

/// 8 clients at once, 50 changes each: every change is committed, none
/// lost (a change computed on a state another has since replaced is
/// computed again).
#[test]
fn concurrent_clients_all_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let workers: Vec<_> = (1..=8u32)
        .map(|i| {
            let sock = d.sock.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&sock).expect("connect");
                for k in 1..=50u32 {
                    let r = c
                        .exec(&format!("pipe {i}{k:02} config delay {k}ms"))
                        .expect("request");
                    assert!(r.ok, "{:?}", r.error);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a client failed");
    }
    let saved = d.save();
    assert_eq!(
        saved.lines().filter(|l| l.starts_with("pipe ")).count(),
        400
    );
}

/// 4 MB of changes (30,000 pipes): computing them takes longer than the
/// time cap. The answer is an error at the cap; the work is dropped and
/// nothing is applied; another client is served meanwhile.
#[test]
fn a_request_over_the_time_cap_is_refused_and_applies_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        request_timeout: Duration::from_millis(50),
        ..Limits::default()
    };
    let d = daemon(dir.path(), Access::Blocks, limits);
    assert!(d.exec("pipe 1 config delay 5ms").ok);
    let before = d.save();
    let mut script = String::new();
    let mut i = 0u32;
    while script.len() < 4_000_000 {
        i += 1;
        script.push_str(&format!("pipe {} config delay {}ms\n", i % 30_000 + 1, i));
    }
    let t0 = Instant::now();
    let alone = pipelab_control::state::State::default()
        .exec(pipelab_control::state::Target::Root, &script)
        .is_ok();
    let work = t0.elapsed();
    assert!(alone, "the script is valid");
    let t0 = Instant::now();
    let r = d.exec(&script);
    let answered = t0.elapsed();
    assert_eq!(
        error(&r),
        "the request took longer than the limit of 50 ms; nothing was applied"
    );
    eprintln!("time cap 50 ms: answered in {answered:?} (the work alone takes {work:?})");
    assert!(answered < work, "{answered:?}, the work {work:?}");
    assert_eq!(d.save(), before);
    assert!(d.exec("pipe 2 config").ok, "small requests still pass");
}

/// 180,000 bad lines (4 MB): parsing them and rendering their errors
/// happen outside the state lock, so another client's requests are
/// answered meanwhile (they used to wait for the whole rendering).
#[test]
fn many_errors_are_rendered_without_holding_the_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    assert!(d.exec("pipe 1 config delay 5ms").ok);
    let mut script = String::new();
    while script.len() < 4_000_000 {
        script.push_str("pipe 1 config bw 1Mbps\n");
    }
    let lines = script.lines().count();
    // How long the work takes alone.
    let t0 = Instant::now();
    let alone = pipelab_control::state::State::default()
        .exec(pipelab_control::state::Target::Root, &script)
        .err()
        .map(|e| e.to_string().len());
    let work = t0.elapsed();
    assert!(alone.is_some());
    let sock = d.sock.clone();
    let big = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = Client::connect(&sock)
            .expect("connect")
            .exec(&script)
            .expect("request");
        (r, t0.elapsed())
    });
    std::thread::sleep(work / 10);
    let mut c = d.client();
    let mut slowest = Duration::ZERO;
    for _ in 0..3 {
        let t = Instant::now();
        assert_eq!(
            c.exec("pipe show").expect("show").output,
            "pipe 1 config delay 5ms\n"
        );
        slowest = slowest.max(t.elapsed());
    }
    let (r, took) = big.join().expect("big request");
    let e = error(&r);
    eprintln!("{lines} errors: {took:?} (alone {work:?}); a small request meanwhile took at most {slowest:?}");
    assert!(
        e.ends_with(&format!(
            "and {} more errors\n{lines} errors; nothing was applied",
            lines - 50
        )),
        "{}",
        &e[e.len().saturating_sub(200)..]
    );
    assert!(
        slowest < work / 2,
        "{slowest:?} while the work takes {work:?}"
    );
}

/// A change naming a 16 MB bandwidth trace (2 million delivery
/// opportunities): reading and lowering it takes seconds (3 s on a loaded
/// test machine; a slow file system adds its own). That work is the plane's preparation, done on
/// the requesting connection's thread without the state lock (it used to
/// run under it, so every other client waited for the file): meanwhile
/// another client's `show` and `stats` are each answered within 500 ms,
/// its changes of another pipe go on (at most one waits, once: the slow
/// request, having lost the race to them twice, prepares alone, so it
/// cannot starve), and the slow request succeeds.
#[test]
fn a_slow_named_file_blocks_no_other_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("big.trace");
    std::fs::write(&trace, "1000000\n".repeat(2_000_000)).expect("write the trace");
    let limits = Limits {
        request_timeout: Duration::from_secs(120),
        ..Limits::default()
    };
    let d = daemon(dir.path(), Access::Blocks, limits);
    assert!(d.exec("pipe 2 config delay 1ms").ok);
    let script = format!("pipe 1 config bw trace:{}", trace.display());
    // How long the plane's preparation takes alone.
    let mut cfg = pipelab_lang::Config::new();
    cfg.apply_script(&script).expect("the script applies");
    let t0 = Instant::now();
    pipelab_control::plane::check_pipes(&cfg).expect("the trace is valid");
    let work = t0.elapsed();
    let sock = d.sock.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let big_done = done.clone();
    let big = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = Client::connect(&sock)
            .expect("connect")
            .exec(&script)
            .expect("request");
        big_done.store(true, std::sync::atomic::Ordering::SeqCst);
        (r, t0.elapsed())
    });
    std::thread::sleep(work / 5);
    let mut c = d.client();
    // The slowest query (`pipe show`, `stats`) and the changes of pipe 2
    // that waited 500 ms or more, while the slow request was pending.
    let mut slowest = Duration::ZERO;
    let mut waited = Vec::new();
    let mut answered = 0;
    let mut n = 2;
    while !done.load(std::sync::atomic::Ordering::SeqCst) && n < 400 {
        let t = Instant::now();
        let shown = c.exec("pipe show").expect("show");
        assert!(shown.ok, "{:?}", shown.error);
        if shown.output.contains("trace") {
            // Committed (its thread has not said so yet).
            break;
        }
        let stats = c.request(None, Op::Stats).expect("stats");
        assert!(stats.ok, "{:?}", stats.error);
        slowest = slowest.max(t.elapsed() / 2);
        let t = Instant::now();
        let changed = c
            .exec(&format!("pipe 2 config delay {n}ms"))
            .expect("change");
        assert!(changed.ok, "{:?}", changed.error);
        if t.elapsed() >= Duration::from_millis(500) {
            waited.push(t.elapsed());
        }
        if !done.load(std::sync::atomic::Ordering::SeqCst) {
            answered += 3;
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let (r, took) = big.join().expect("big request");
    assert!(r.ok, "{:?}", r.error);
    eprintln!(
        "16 MB trace: the request took {took:?} (its preparation alone {work:?}); {answered} other requests answered meanwhile, queries at most {slowest:?}, changes that waited: {waited:?}"
    );
    assert!(
        slowest < Duration::from_millis(500),
        "a query took {slowest:?} while the file's preparation takes {work:?}"
    );
    // Changes go on while it prepares; once it has lost the race twice,
    // it prepares alone: one change of the others waits for it, once.
    assert!(waited.len() <= 1, "changes waited: {waited:?}");
    assert!(
        answered >= 3,
        "only {answered} other requests were answered while the slow one ran ({took:?})"
    );
    let last = format!("pipe 2 config delay {}ms", n - 1);
    let saved = d.save();
    assert!(
        saved.contains("pipe 1 config bw trace:") && saved.contains(&last),
        "{saved}"
    );
}

/// Not a test of its own: a client run under another uid by the tests
/// below (this binary run again with `HOSTILE_SOCKET` set). It opens
/// `HOSTILE_CONNS` connections, asks each for `stats`, prints what each
/// got, then holds them until its standard input closes.
#[test]
fn user_helper() {
    let Ok(sock) = std::env::var("HOSTILE_SOCKET") else {
        return;
    };
    let n: usize = std::env::var("HOSTILE_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut held = Vec::new();
    for i in 0..n {
        match Client::connect(Path::new(&sock)) {
            Ok(mut c) => {
                let op = match std::env::var("HOSTILE_OP") {
                    Ok(op) => serde_json::from_str(&op).expect("op"),
                    Err(_) => Op::Stats,
                };
                let user = std::env::var("HOSTILE_USER").ok();
                match c.request(user.as_deref(), op) {
                    Ok(r) if r.ok => println!("CONN {i} OK"),
                    Ok(r) => println!("CONN {i} ERR {}", r.error.unwrap_or_default()),
                    Err(e) => println!("CONN {i} LOST {e}"),
                }
                held.push(c);
            }
            Err(e) => println!("CONN {i} CONNECT {e}"),
        }
    }
    println!("HOLDING");
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
}

/// This binary run as `uid`, holding `n` connections (each asked `op`);
/// its report lines, and the process to end by closing its stdin.
fn as_user(
    sock: &Path,
    uid: u32,
    n: usize,
    op: Option<&Op>,
    user: Option<&str>,
) -> (Vec<String>, std::process::Child) {
    // A copy the user may run wherever the build is; it goes once the
    // process runs it.
    let dir = tempfile::tempdir().expect("temp dir");
    let exe =
        hostile::runnable_by_others(&std::env::current_exe().expect("test binary"), dir.path());
    let mut cmd = Command::new(&exe);
    cmd.args(["--exact", "user_helper", "--nocapture", "--test-threads=1"])
        .env("HOSTILE_SOCKET", sock)
        .env("HOSTILE_CONNS", n.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .uid(uid)
        .gid(uid);
    if let Some(op) = op {
        cmd.env("HOSTILE_OP", serde_json::to_string(op).expect("op"));
    }
    if let Some(u) = user {
        cmd.env("HOSTILE_USER", u);
    }
    // Another test's fork may hold the copy open for writing an instant
    // (ETXTBSY): try again.
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(26) && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            r => break r.expect("helper"),
        }
    };
    let out = child.stdout.take().expect("stdout");
    let mut lines = Vec::new();
    for l in BufReader::new(out).lines() {
        let l = l.expect("line");
        // The harness may print its own words before ours on a line.
        if l.ends_with("HOLDING") {
            break;
        }
        if let Some(i) = l.find("CONN ") {
            lines.push(l[i..].to_string());
        }
    }
    (lines, child)
}

fn release(mut child: std::process::Child) {
    drop(child.stdin.take());
    let _ = child.wait();
}

const ALICE: u32 = 4_000_101;
const BOB: u32 = 4_000_102;

/// A user opening connections gets at most the per-user quota (the next
/// is refused with a message naming the limit), and root still connects
/// while the user holds them; the quota frees as connections close.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "needs root (to run a client under another uid); run as root or with PIPELAB_LIVE=1"
)]
fn a_users_connections_are_capped_and_root_still_connects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        per_user: 4,
        ..Limits::default()
    };
    let d = daemon(dir.path(), Access::Blocks, limits);
    let (lines, alice) = as_user(&d.sock, ALICE, 5, None, None);
    assert_eq!(
        lines,
        vec![
            "CONN 0 OK".to_string(),
            "CONN 1 OK".into(),
            "CONN 2 OK".into(),
            "CONN 3 OK".into(),
            format!("CONN 4 ERR uid {ALICE} already has 4 connections to hostile, the limit per user; close one and try again"),
        ]
    );
    // Root and another user are not locked out.
    assert!(d.exec("pipe 1 config delay 5ms").ok);
    let (lines, bob) = as_user(&d.sock, BOB, 1, None, None);
    assert_eq!(lines, vec!["CONN 0 OK"]);
    release(bob);
    release(alice);
    std::thread::sleep(Duration::from_millis(200));
    let (lines, alice) = as_user(&d.sock, ALICE, 1, None, None);
    assert_eq!(lines, vec!["CONN 0 OK"], "freed when closed");
    release(alice);
}

/// The last connections are root's: users are refused once only those
/// are left, root is refused only at the total.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "needs root (to run a client under another uid); run as root or with PIPELAB_LIVE=1"
)]
fn the_last_connections_are_kept_for_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        max_connections: 6,
        root_reserved: 2,
        per_user: 3,
        ..Limits::default()
    };
    let d = daemon(dir.path(), Access::Blocks, limits);
    let (a, alice) = as_user(&d.sock, ALICE, 3, None, None);
    assert!(a.iter().all(|l| l.ends_with(" OK")), "{a:?}");
    let (b, bob) = as_user(&d.sock, BOB, 2, None, None);
    assert_eq!(
        b,
        vec![
            "CONN 0 OK".to_string(),
            "CONN 1 ERR hostile is serving 4 connections; the last 2 are kept for root; try again"
                .into()
        ]
    );
    let mut root: Vec<Client> = (0..2).map(|_| d.client()).collect();
    for c in &mut root {
        assert!(c.exec("show").expect("root").ok);
    }
    let e = d.client().exec("show").expect("answered");
    assert_eq!(
        error(&e),
        "hostile is serving 6 connections, its limit; try again"
    );
    release(alice);
    release(bob);
}

/// Users of pipelabd act in their own block only; of an owned emulation,
/// only read.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "needs root (to run a client under another uid); run as root or with PIPELAB_LIVE=1"
)]
fn other_users_are_confined() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let cases: &[(Op, Option<&str>, &str)] = &[
        (
            Op::Save,
            Some("root"),
            "CONN 0 ERR only root may act in another user's block",
        ),
        (
            Op::Limit {
                args: "user 4000101 pipes 64".into(),
            },
            None,
            "CONN 0 ERR only root may set limits",
        ),
        (
            Op::Exec {
                script: "pipe 65 config".into(),
            },
            None,
            "CONN 0 ERR error: pipe 65: a user's pipes are numbered 1..64",
        ),
        (
            Op::Exec {
                script: "pipe 1 config delay 5ms distribution file:/etc/shadow".into(),
            },
            None,
            "CONN 0 ERR error: pipe 1: distribution file /etc/shadow: a user's pipes may not read files",
        ),
        // A mask has a queue per instance: 16 × 65536 instances and the
        // overflow one of 60 slots each, not one queue of 60.
        (
            Op::Exec {
                script: "pipe 1 config mask all buckets 65536 queue 60".into(),
            },
            None,
            "CONN 0 ERR limit exceeded: the pipes' queues may hold 95252734680 bytes, the limit of uid 4000101 is 16777216 bytes",
        ),
    ];
    for (op, user, want) in cases {
        let (lines, p) = as_user(&d.sock, ALICE, 1, Some(op), *user);
        release(p);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with(want), "{op:?}: {}", lines[0]);
    }
    assert_eq!(d.save(), "set one_pass 1\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let owned = daemon(dir.path(), Access::Owner(BOB), Limits::default());
    let op = Op::Exec {
        script: "pipe 1 config".into(),
    };
    let (lines, p) = as_user(&owned.sock, ALICE, 1, Some(&op), None);
    release(p);
    assert_eq!(
        lines,
        vec![format!(
            "CONN 0 ERR emulation hostile belongs to uid {BOB}: only its owner or root may change it"
        )]
    );
}

/// `pipelab ARGS` (with `--socket` first when given).
fn pipelab(sock: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    if let Some(s) = sock {
        cmd.arg("--socket").arg(s);
    }
    cmd.args(args).output().expect("run pipelab")
}

/// (case, file contents, exit code of `check` and `-f`, the first error
/// with its position as printed: `error: MESSAGE\n --> FILE:L:C`; `FILE`
/// stands for the file's path)
const TEXT: &[(&str, &[u8], i32, &str)] = &[
    (
        "an unknown command",
        b"pipe 1 config\nfrobnicate\n",
        1,
        "error: unknown command 'frobnicate'\n --> FILE:2:1",
    ),
    (
        "an unknown unit with a hint",
        b"pipe 1 config bw 10Mbps\n",
        1,
        "error: unknown unit 'Mbps' in '10Mbps'\n --> FILE:1:18",
    ),
    (
        "NaN",
        b"pipe 1 config bw NaN\n",
        1,
        "error: invalid rate 'NaN'\n --> FILE:1:18",
    ),
    (
        "inf",
        b"pipe 1 config delay inf\n",
        1,
        "error: invalid duration 'inf'\n --> FILE:1:21",
    ),
    (
        "an exponent too large",
        b"pipe 1 config bw 1e30bit/s\n",
        1,
        "error: value '1e30bit/s' is too large\n --> FILE:1:18",
    ),
    (
        "a huge value",
        b"pipe 1 config bw 99999999999Gbit/s\n",
        1,
        "error: value '99999999999Gbit/s' is too large\n --> FILE:1:18",
    ),
    (
        "a negative delay",
        b"pipe 1 config delay -5ms\n",
        1,
        "error: negative value '-5ms' is not allowed\n --> FILE:1:21",
    ),
    (
        "a probability above 1",
        b"pipe 1 config plr 1.5\n",
        1,
        "error: probability '1.5' is outside 0..1\n --> FILE:1:19",
    ),
    (
        "a queue too large",
        b"pipe 1 config queue 99999999999KB\n",
        1,
        "error: invalid queue '99999999999KB': 102399999998976 bytes is more than the maximum 4294967296\n --> FILE:1:21",
    ),
    (
        "a pipe number out of range",
        b"pipe 0 config\n",
        1,
        "error: pipe number 0 is out of range 1..65535\n --> FILE:1:6",
    ),
    (
        "an invalid address",
        b"pipe 1 config\nadd 500 pipe 1 ip from 300.1.1.1 to any\n",
        1,
        "error: invalid address '300.1.1.1'\n --> FILE:2:24",
    ),
    (
        "a rule to a pipe never configured",
        b"pipe 1 config\nadd 100 pipe 7\n",
        1,
        "error: pipe 7 is not configured (used by rule 100)\n --> FILE:2:1",
    ),
    (
        "a NUL byte",
        b"pipe 1 config\npipe 2 con\0fig\n",
        1,
        "error: NUL byte (U+0000) at line 2, column 11 (byte 24) is not allowed\n --> FILE:2:11",
    ),
    (
        "a byte order mark",
        b"\xef\xbb\xbfpipe 1 config\n",
        1,
        "error: byte order mark (U+FEFF) at line 1, column 1 (byte 0) is not allowed\n --> FILE:1:1",
    ),
    (
        "invalid UTF-8",
        b"pipe 1 config\npipe 2 \xff config\n",
        2,
        "error: invalid UTF-8 at line 2, column 8 (byte 21): byte 0xff is not UTF-8\n --> FILE:2:8",
    ),
    (
        "UTF-8 cut short at the end",
        b"pipe 1 config delay 5\xc2",
        2,
        "error: invalid UTF-8 at line 1, column 22 (byte 21): the text ends inside a character (bytes 0xc2)\n --> FILE:1:22",
    ),
    (
        "a lone carriage return",
        b"pipe 1 config\rpipe 2 config\n",
        1,
        "error: carriage return (U+000D) not followed by a line feed at line 1, column 14 (byte 13) is not allowed\n --> FILE:1:14",
    ),
    (
        "a terminal escape sequence",
        b"pipe 1 config delay 5ms \x1b[2J\n",
        1,
        "error: control character U+001B at line 1, column 25 (byte 24) is not allowed\n --> FILE:1:25",
    ),
];

/// Bad configuration text: `pipelab check` and `pipelab -f` both print
/// the exact message at its position, and the daemon applies nothing.
#[test]
fn bad_configuration_text_is_named_at_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let f = dir.path().join("bad.conf");
    let name = f.display().to_string();
    for (case, bytes, code, want) in TEXT {
        std::fs::write(&f, bytes).expect("write");
        let want = want.replace("FILE", &name);
        let check = pipelab(None, &["check", &name]);
        let e = String::from_utf8_lossy(&check.stderr);
        assert_eq!(check.status.code(), Some(2), "{case}: check: {e}");
        assert!(e.starts_with(&want), "{case}: check: {e}");
        let sent = pipelab(Some(&d.sock), &["-f", &name]);
        let e = String::from_utf8_lossy(&sent.stderr);
        assert_eq!(sent.status.code(), Some(*code), "{case}: -f: {e}");
        assert!(e.starts_with(&want), "{case}: -f: {e}");
        assert!(e.contains("nothing was applied"), "{case}: -f: {e}");
    }
    assert_eq!(d.save(), "set one_pass 1\n");
}

/// A 1 MB line and a 40,000-error file: refused quickly, with a message
/// of a few kilobytes (the word elided, the first 50 errors and a count).
#[test]
fn very_long_lines_and_huge_files_are_refused_briefly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let f = dir.path().join("long.conf");
    let name = f.display().to_string();
    // After a first line of the language (a file whose first line is not
    // a command is refused without quoting it: hostile_config).
    std::fs::write(
        &f,
        "pipe 1 config\n".to_string() + &"x".repeat(1_000_000) + "\n",
    )
    .expect("write");
    for sock in [None, Some(d.sock.as_path())] {
        let o = if sock.is_some() {
            pipelab(sock, &["-f", &name])
        } else {
            pipelab(None, &["check", &name])
        };
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.len() < 2_000, "{} bytes", e.len());
        assert!(e.starts_with("error: unknown command 'xxxx"), "{e}");
        assert!(e.contains("x…x"), "{e}");
    }
    let mut text = String::new();
    for i in 0..40_000 {
        text.push_str(&format!("pipe {} config delay {i}s bw 1Mbps\n", i + 1));
    }
    std::fs::write(&f, &text).expect("write");
    for sock in [None, Some(d.sock.as_path())] {
        let t0 = Instant::now();
        let o = if sock.is_some() {
            pipelab(sock, &["-f", &name])
        } else {
            pipelab(None, &["check", &name])
        };
        let took = t0.elapsed();
        let e = String::from_utf8_lossy(&o.stderr);
        eprintln!(
            "40,000 errors ({}): {took:?}, {} bytes",
            if sock.is_some() { "-f" } else { "check" },
            e.len()
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert_eq!(e.matches("error: unknown unit 'Mbps'").count(), 50);
        assert!(
            e.contains("and 39950 more errors\n40000 errors"),
            "{}",
            &e[e.len() - 200..]
        );
    }
    assert_eq!(d.save(), "set one_pass 1\n");
}

/// What looks odd but is valid text is accepted: an empty file, only
/// comments, CRLF line ends, tabs, an exponent within range.
#[test]
fn odd_but_valid_text_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = daemon(dir.path(), Access::Blocks, Limits::default());
    let f = dir.path().join("ok.conf");
    let name = f.display().to_string();
    let cases: &[(&[u8], &str)] = &[
        (b"", "set one_pass 1\n"),
        (b"# nothing\n   \n\t# still nothing\n", "set one_pass 1\n"),
        (
            b"pipe 1 config delay 5ms\r\nadd 100 pipe 1\r\n",
            "set one_pass 1\npipe 1 config delay 5ms\nadd 100 pipe 1 ip from any to any\n",
        ),
        (
            b"\tpipe\t1\tconfig\tbw\t1e6bit/s\n",
            "set one_pass 1\npipe 1 config bw 1Mbit/s\n",
        ),
        (
            "pipe 1 config delay 2.5e-3s # µs are fine in comments\n".as_bytes(),
            "set one_pass 1\npipe 1 config delay 2500us\n",
        ),
    ];
    for (bytes, canonical) in cases {
        std::fs::write(&f, bytes).expect("write");
        let o = pipelab(None, &["check", &name]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&o.stdout), *canonical);
        let o = pipelab(Some(&d.sock), &["restore", &name]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(d.save(), *canonical);
    }
}

mod hostile;

/// The count of this file's cases (docs/HOSTILE.md): the rows of its
/// tables, and the cases each other test holds.
#[test]
fn case_count() {
    // (test, its cases, of which rejections whose message is checked)
    let others: &[(&str, usize, usize)] = &[
        (
            "malformed requests: JSON nested 100,000 deep, in and out of an object",
            2,
            2,
        ),
        ("oversized lines, with and without a newline", 2, 2),
        ("a flood of 2000 pipelined requests", 1, 0),
        ("an idle connection", 1, 0),
        ("a slow client", 1, 1),
        ("a client that does not read", 1, 0),
        (
            "clients leaving mid-request, and without a final newline",
            2,
            0,
        ),
        ("8 concurrent clients", 1, 0),
        ("a request over the time cap", 1, 1),
        ("174,000 errors rendered outside the lock", 1, 1),
        (
            "a 16 MB named file read outside the lock: show, stats, another pipe's change",
            3,
            0,
        ),
        (
            "a user's connection quota: the cap, root, another user",
            3,
            1,
        ),
        (
            "root's reserve: a user refused, root served, root refused at the total",
            3,
            2,
        ),
        (
            "users confined: five refusals in a block (a mask's instances counted against the memory limit), one of an owned emulation",
            6,
            6,
        ),
        (
            "a 1 MB line and 40,000 errors, each through check and -f",
            4,
            4,
        ),
        ("odd but valid text", 5, 0),
    ];
    let cases = PROTOCOL.len() + TEXT.len() + others.iter().map(|o| o.1).sum::<usize>();
    let rejections = PROTOCOL.len() + TEXT.len() + others.iter().map(|o| o.2).sum::<usize>();
    hostile::tally("hostile_control", cases, rejections, 77, 60);
}
