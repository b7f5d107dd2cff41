//! Connection faults live: `reset` and `unreach` rules answering real TCP
//! connections (curl against `python3 -m http.server` on the host), and a
//! pipe black-holed for a while from the control protocol (`pipelab
//! --target NAME pipe N down 2s`) under a real ping.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{check_accounting, in_one_of_three, live, Bg, BIN};

fn tmp(name: &str) -> String {
    format!(
        "{}/pipelab-faults-{}-{name}",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

fn free_tcp_port() -> u16 {
    TcpListener::bind("[::]:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `python3 -m http.server PORT` on the host, on every address (IPv4 and
/// IPv6), ready when this returns.
fn http_server(port: u16) -> Bg {
    let c = Command::new("python3")
        .args(["-m", "http.server", &port.to_string(), "--bind", "::"])
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "http.server on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Bg(c)
}

/// Run `pipelab shell --link 'delay 5ms' --config CONFIG -- sh -c
/// SCRIPT`: its stdout and the run's stats.
fn shell_with(config: &str, script: &str) -> (String, Value) {
    let cfg = tmp("rules.conf");
    let stats = tmp("stats.json");
    std::fs::write(&cfg, config).expect("config file");
    let out = Command::new(BIN)
        .args([
            "shell",
            "--link",
            "delay 5ms",
            "--config",
            &cfg,
            "--stats",
            &stats,
        ])
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("pipelab shell");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pipelab shell: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("stats json");
    let _ = std::fs::remove_file(&stats);
    let _ = std::fs::remove_file(&cfg);
    check_accounting(&v);
    (stdout, v)
}

/// curl `url` (at most 10 s) and print `NAME exit=N ms=T err=...`, the
/// error as curl's verbose lines say it (its short message is "Couldn't
/// connect to server" whatever the errno; `-v` names it).
fn curl(name: &str, url: &str) -> String {
    format!(
        "t0=$(date +%s%N); e=$(curl -v -sS -g -o /dev/null --max-time 10 \"{url}\" 2>&1); c=$?; \
         e=$(echo \"$e\" | grep -E '^\\* connect to|^curl:' | tr '\\n' ' '); \
         echo \"{name} exit=$c ms=$(( ($(date +%s%N) - t0) / 1000000 )) err=$e\"; "
    )
}

/// The `NAME exit=N ms=T err=...` line of `name`: (exit, ms, error text).
fn outcome(out: &str, name: &str) -> (i32, u64, String) {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no '{name}' line in: {out}"));
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or_else(|| panic!("no {k} in '{line}'"))
            .to_string()
    };
    let err = line.split("err=").nth(1).unwrap_or("").to_string();
    (
        field("exit=").parse().expect("exit"),
        field("ms=").parse().expect("ms"),
        err,
    )
}

/// `reset` live, IPv4 and IPv6: with `reset tcp ... dst-port P`, curl's
/// SYN is answered by a RST (seq 0, ACK = its seq + 1, RFC 793), so the
/// connection is refused (curl exit 7, "Connection refused") within a
/// second instead of reaching the server; with `reset ... dst-port R
/// tcpflags psh` the handshake passes and the request is answered by a
/// RST whose sequence number is the request's acknowledgment number,
/// which the client accepts (curl exit 56, "Connection reset by peer").
/// A port without a rule is served (exit 0). The answers are counted.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn reset_rules_refuse_and_reset_real_tcp_connections() {
    let Some(_g) = live() else { return };
    let (p, r, q) = (free_tcp_port(), free_tcp_port(), free_tcp_port());
    let _servers = [http_server(p), http_server(r), http_server(q)];
    let config = format!(
        "add 10 reset tcp from any to any dst-port {p}\n\
         add 20 reset tcp from any to any dst-port {r} tcpflags psh\n"
    );
    let mut script = String::new();
    for (v, host) in [("4", "$PIPELAB_OUTSIDE"), ("6", "[$PIPELAB_OUTSIDE6]")] {
        script += &curl(&format!("served{v}"), &format!("http://{host}:{q}/"));
        script += &curl(&format!("refused{v}"), &format!("http://{host}:{p}/"));
        script += &curl(&format!("reset{v}"), &format!("http://{host}:{r}/"));
    }
    let (out, v) = shell_with(&config, &script);
    for f in ["4", "6"] {
        let (code, _, err) = outcome(&out, &format!("served{f}"));
        assert_eq!(code, 0, "IPv{f} served: {err}\n{out}");
        let (code, ms, err) = outcome(&out, &format!("refused{f}"));
        assert!(
            code == 7 && err.contains("Connection refused") && ms < 1000,
            "IPv{f} SYN reset: exit {code} after {ms} ms: {err}"
        );
        let (code, ms, err) = outcome(&out, &format!("reset{f}"));
        assert!(
            code == 56 && err.contains("Connection reset by peer") && ms < 1000,
            "IPv{f} request reset: exit {code} after {ms} ms: {err}"
        );
    }
    let s = &v["stats"];
    // One RST per SYN and per request, IPv4 and IPv6; a client that
    // retransmits adds to both counts alike.
    let (dropped, answers) = (s["dropped_reset"].as_u64(), s["answers"].as_u64());
    assert!(
        dropped >= Some(4) && dropped == answers && s["answers_failed"] == 0,
        "{s}"
    );
}

/// `unreach host` live, IPv4 and IPv6: the SYN is answered with an ICMP
/// host unreachable (type 3 code 1, quoting the SYN's header and 8
/// bytes) or an ICMPv6 address unreachable (type 1 code 3), and curl
/// fails with "No route to host" (exit 7) within a second, where a
/// silent drop (`deny`) would have it wait for its 3 s timeout. `unreach
/// port` is "Connection refused" (ICMP port unreachable; ICMPv6 port
/// unreachable, code 4).
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn unreach_rules_fail_real_connections_at_once() {
    let Some(_g) = live() else { return };
    let (p, r, d) = (free_tcp_port(), free_tcp_port(), free_tcp_port());
    let _servers = [http_server(p), http_server(r), http_server(d)];
    let config = format!(
        "add 10 unreach host tcp from any to any dst-port {p}\n\
         add 20 unreach port tcp from any to any dst-port {r}\n\
         add 30 deny tcp from any to any dst-port {d}\n"
    );
    let mut script = String::new();
    for (v, host) in [("4", "$PIPELAB_OUTSIDE"), ("6", "[$PIPELAB_OUTSIDE6]")] {
        script += &curl(&format!("host{v}"), &format!("http://{host}:{p}/"));
        script += &curl(&format!("port{v}"), &format!("http://{host}:{r}/"));
    }
    // The silent drop, for contrast (IPv4 only: it takes the timeout).
    script += "t0=$(date +%s%N); curl -sS -o /dev/null --connect-timeout 3 ";
    script += &format!("http://$PIPELAB_OUTSIDE:{d}/ 2>/dev/null; ");
    script += "echo \"deny exit=$? ms=$(( ($(date +%s%N) - t0) / 1000000 )) err=\"; ";
    let (out, v) = shell_with(&config, &script);
    for f in ["4", "6"] {
        let (code, ms, err) = outcome(&out, &format!("host{f}"));
        assert!(
            code == 7 && err.contains("No route to host") && ms < 1000,
            "IPv{f} unreach host: exit {code} after {ms} ms: {err}"
        );
        let (code, ms, err) = outcome(&out, &format!("port{f}"));
        assert!(
            code == 7 && err.contains("Connection refused") && ms < 1000,
            "IPv{f} unreach port: exit {code} after {ms} ms: {err}"
        );
    }
    let (code, ms, _) = outcome(&out, "deny");
    assert!(code == 28 && ms >= 2900, "deny: exit {code} after {ms} ms");
    let s = &v["stats"];
    let (dropped, answers) = (s["dropped_unreach"].as_u64(), s["answers"].as_u64());
    assert!(
        dropped >= Some(4) && dropped == answers && s["answers_limited"] == 0,
        "{s}"
    );
}

/// `ping -D` replies in `out`: (icmp_seq, timestamp s).
fn replies(out: &str) -> Vec<(u64, f64)> {
    out.lines()
        .filter_map(|l| {
            let ts = l.strip_prefix('[')?.split(']').next()?.parse().ok()?;
            let seq = l.split("icmp_seq=").nth(1)?.split_whitespace().next()?;
            Some((seq.parse().ok()?, ts))
        })
        .collect()
}

/// A pipe black-holed from the control protocol for 2 s, under a ping
/// every 100 ms from the shell: the longest run of missing replies is
/// 2 s ± 0.3 s of pings (17..=23, a loaded machine's ping slips), the
/// replies on either side of the gap are 2.1 s ± 0.35 s apart, the
/// last ping is answered (the pipe passed again by itself, nobody sent
/// `up`), and the shell counted the requests it dropped as `down` (the
/// gap's, give or take 2 other packets of the namespace).
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_pipe_down_for_two_seconds_black_holes_ping_then_passes() {
    let Some(_g) = live() else { return };
    let r = in_one_of_three(|| {
        let name = format!("faults-{}", std::process::id());
        let stats = tmp("down.json");
        let out_file = tmp("ping.txt");
        let mut shell = Command::new(BIN)
            .args([
                "shell",
                "--name",
                &name,
                "--link",
                "delay 5ms",
                "--stats",
                &stats,
            ])
            .args(["--", "sh", "-c"])
            .arg(format!(
                "ping -D -n -c 60 -i 0.1 $PIPELAB_OUTSIDE > {out_file}"
            ))
            .stderr(Stdio::piped())
            .spawn()
            .expect("pipelab shell");
        let mut banner = String::new();
        let mut err = BufReader::new(shell.stderr.take().expect("stderr"));
        err.read_line(&mut banner).expect("shell banner");
        let shell = Bg(shell);
        std::thread::sleep(Duration::from_millis(1500));
        let down = Command::new(BIN)
            .args(["--target", &name, "pipe", "1", "down", "2s"])
            .output()
            .expect("pipelab --target pipe 1 down 2s");
        let reply = String::from_utf8_lossy(&down.stdout).into_owned();
        let mut shell = shell;
        let st = shell.0.wait().expect("wait");
        std::mem::forget(shell);
        let out = std::fs::read_to_string(&out_file).unwrap_or_default();
        let v: Value = std::fs::read_to_string(&stats)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null);
        let _ = std::fs::remove_file(&stats);
        let _ = std::fs::remove_file(&out_file);
        assert!(
            down.status.success() && reply.contains("pipe 1 down for 2s"),
            "{reply}{}",
            String::from_utf8_lossy(&down.stderr)
        );
        assert!(st.success() || st.code() == Some(1), "shell: {st:?}");
        check_accounting(&v);
        let rs = replies(&out);
        let mut gap = (0u64, 0.0f64);
        for w in rs.windows(2) {
            let missing = w[1].0 - w[0].0 - 1;
            if missing > gap.0 {
                gap = (missing, w[1].1 - w[0].1);
            }
        }
        let last = rs.last().map(|r| r.0);
        let dropped = v["stats"]["dropped_down"].as_u64().unwrap_or(0);
        let slack = common::steal_slack();
        if (17..=23).contains(&gap.0)
            && (gap.1 - 2.1).abs() <= 0.35 + slack.p99_ms / 1e3
            && last == Some(60)
            && (gap.0..=gap.0 + 2).contains(&dropped)
        {
            Ok(())
        } else {
            Err(format!(
                "gap of {} pings over {:.3} s, last reply {last:?}, dropped_down {dropped}: {out}",
                gap.0, gap.1
            ))
        }
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}
