//! The control protocol's client: commands of the language sent to
//! `pipelabd`, or with `--target NAME` to any running emulation.
//!
//! `pipelab pipe 3 config bw 640Kbit/s`, `pipelab add 100 pipe 3 ip from
//! any to any`, `pipelab show`, `pipelab -f FILE` (all or nothing),
//! `pipelab save|restore FILE`, `pipelab stats [--json]`, `pipelab top`,
//! `pipelab netconfig ...`, `pipelab limit ...`; `pipelab list` (the
//! running emulations).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use pipelab_control::registry::{EmulationInfo, Registry};
use pipelab_control::{Client, ClientError, Op, Response};
use serde_json::Value;

use crate::emit;
use crate::error::CliError;

/// Where a command goes, and as whom.
pub struct Conn<'a> {
    /// pipelabd's control socket (`--socket`), if given.
    pub socket: Option<&'a Path>,
    /// A running emulation by name (`--target`), instead.
    pub target: Option<&'a str>,
    /// Root only: act in this user's block.
    pub user: Option<&'a str>,
}

impl Conn<'_> {
    /// The socket to connect to: the target's (through the registry), the
    /// one given, or pipelabd's default.
    fn socket(&self) -> Result<PathBuf, CliError> {
        match (self.target, self.socket) {
            (Some(name), _) => Ok(Registry::new().resolve(name)?),
            (None, Some(s)) => Ok(s.to_path_buf()),
            (None, None) => Ok(PathBuf::from(pipelab_control::DEFAULT_SOCKET)),
        }
    }
}

/// `pipelab list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print the registry's entries as JSON (stable field names).
    #[arg(long)]
    pub json: bool,
}

/// `pipelab stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Print the daemon's JSON (stable field names) instead of tables.
    #[arg(long)]
    json: bool,
}

/// `pipelab top`.
#[derive(Args, Debug)]
pub struct TopArgs {
    /// Seconds between refreshes (above 0, at most 3600).
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "SECONDS",
        allow_hyphen_values = true
    )]
    interval: f64,
    /// Stop after this many refreshes (default: until interrupted).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    count: Option<u64>,
}

/// `pipelab netconfig`.
#[derive(Args, Debug)]
pub struct NetconfigArgs {
    /// Print the pipes and rules it would create; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// `client|server|service PORTS@ADDR[/MASK] (IN ... OUT ... | SHARED
    /// ...)`, `delete KIND PORTS@ADDR[/MASK]`, or `list`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "WORDS"
    )]
    words: Vec<String>,
}

/// `pipelab limit`.
#[derive(Args, Debug)]
pub struct LimitArgs {
    /// `user NAME [pipes N] [rules N] [memory SIZE]`, or `list`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "WORDS"
    )]
    words: Vec<String>,
}

fn connect(c: &Conn<'_>) -> Result<Client, CliError> {
    let socket = c.socket()?;
    Client::connect(&socket).map_err(|e| match c.target {
        Some(name) => unreachable_target(name, socket.clone(), e),
        None => no_daemon(socket.clone(), e),
    })
}

fn unreachable_target(name: &str, socket: PathBuf, e: ClientError) -> CliError {
    match e {
        ClientError::Connect { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            CliError::TargetDenied {
                name: name.to_string(),
                socket,
            }
        }
        ClientError::Connect { source, .. } => CliError::TargetSilent {
            name: name.to_string(),
            socket,
            source,
        },
        other => CliError::Client(other),
    }
}

fn no_daemon(socket: PathBuf, e: ClientError) -> CliError {
    match e {
        ClientError::Connect { source, .. }
            if matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            CliError::NoDaemon { socket }
        }
        ClientError::Connect { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            CliError::SocketDenied { socket }
        }
        other => CliError::Client(other),
    }
}

fn call(c: &Conn<'_>, client: &mut Client, op: Op) -> Result<Response, CliError> {
    Ok(client.request(c.user, op)?)
}

/// The response's text, or its error as a failure.
fn answer(resp: Response, file: Option<&str>) -> Result<String, CliError> {
    if resp.ok {
        return Ok(resp.output);
    }
    Err(CliError::Refused {
        message: resp.error.unwrap_or_default(),
        file: file.map(str::to_string),
    })
}

fn once(c: &Conn<'_>, op: Op, file: Option<&str>) -> Result<(), CliError> {
    let mut client = connect(c)?;
    let resp = call(c, &mut client, op)?;
    emit(&answer(resp, file)?)
}

/// A command of the language given as words: `pipelab pipe 3 config bw
/// 640Kbit/s`.
pub fn lang(c: &Conn<'_>, words: &[String]) -> Result<(), CliError> {
    let script = words.join(" ");
    once(c, Op::Exec { script }, None)
}

/// `pipelab -f FILE`: the file's commands, all or nothing.
pub fn file(c: &Conn<'_>, path: &Path) -> Result<(), CliError> {
    let script = crate::read(path)?;
    let name = path.display().to_string();
    crate::error::ConfigFileError::recognised(&name, &script)?;
    once(c, Op::Exec { script }, Some(&name))
}

/// `pipelab save FILE` (`-` for standard output).
pub fn save(c: &Conn<'_>, path: &Path) -> Result<(), CliError> {
    let mut client = connect(c)?;
    let text = answer(call(c, &mut client, Op::Save)?, None)?;
    if path == Path::new("-") {
        return emit(&text);
    }
    pipelab_lang::output::create_output(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .map_err(|source| CliError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// `pipelab restore FILE`: replaces the configuration, all or nothing.
pub fn restore(c: &Conn<'_>, path: &Path) -> Result<(), CliError> {
    let script = crate::read(path)?;
    let name = path.display().to_string();
    crate::error::ConfigFileError::recognised(&name, &script)?;
    once(c, Op::Restore { script }, Some(&name))
}

/// `pipelab netconfig ...`.
pub fn netconfig(c: &Conn<'_>, a: &NetconfigArgs) -> Result<(), CliError> {
    let mut dry_run = a.dry_run;
    let words: Vec<&str> = a
        .words
        .iter()
        .map(String::as_str)
        .filter(|w| {
            let flag = *w == "--dry-run";
            dry_run |= flag;
            !flag
        })
        .collect();
    let args = words.join(" ");
    once(c, Op::Netconfig { args, dry_run }, None)
}

/// `pipelab limit ...` (root).
pub fn limit(c: &Conn<'_>, a: &LimitArgs) -> Result<(), CliError> {
    let args = a.words.join(" ");
    once(c, Op::Limit { args }, None)
}

fn stats_value(c: &Conn<'_>, client: &mut Client) -> Result<Value, CliError> {
    let resp = call(c, client, Op::Stats)?;
    let data = resp.data.clone();
    answer(resp, None)?;
    Ok(data.unwrap_or(Value::Null))
}

/// `pipelab stats [--json]`.
pub fn stats(c: &Conn<'_>, a: &StatsArgs) -> Result<(), CliError> {
    let mut client = connect(c)?;
    let v = stats_value(c, &mut client)?;
    if a.json {
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        return emit(&(text + "\n"));
    }
    emit(&render(&v, None, 0.0))
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_f64().unwrap_or(0.0)
}

/// The tables `stats` and `top` print; with `prev` (and the seconds since
/// it), rates per second.
fn render(v: &Value, prev: Option<&Value>, secs: f64) -> String {
    let mut out = String::new();
    let d = &v["daemon"];
    let e = &v["emulation"];
    let journaled = e["access"]["policy"].as_str() != Some("owner");
    out.push_str(&format!(
        "{}: up {:.0} s, {} requests ({} refused), latency p50 {} us p99 {} us max {} us, {} in {:.1} ms\n",
        e["name"].as_str().unwrap_or("pipelabd"),
        num(d, &["uptime_s"]),
        num(d, &["requests"]),
        num(d, &["errors"]),
        num(d, &["latency_us", "p50"]),
        num(d, &["latency_us", "p99"]),
        num(d, &["latency_us", "max"]),
        if journaled {
            "journal restored"
        } else {
            "configuration applied"
        },
        num(d, &["restore_ms"]),
    ));
    if e["access"]["may_change"] == Value::Bool(false) {
        out.push_str(&format!(
            "read only: {} belongs to uid {}\n",
            e["name"].as_str().unwrap_or("the emulation"),
            num(e, &["access", "owner"])
        ));
    }
    let cfg = &v["config"];
    out.push_str(&format!(
        "config: {} pipes, {} rules, {} netconfig links, queue memory {} B",
        num(cfg, &["pipes"]),
        num(cfg, &["rules"]),
        num(cfg, &["netconfig_links"]),
        num(cfg, &["queue_memory_bytes"]),
    ));
    if cfg.get("users").is_some() {
        out.push_str(&format!(
            "; {} user blocks; {} pipes and {} rules in all",
            num(cfg, &["users"]),
            num(cfg, &["total_pipes"]),
            num(cfg, &["total_rules"])
        ));
    }
    out.push('\n');
    let p = &v["plane"];
    out.push_str(&format!(
        "plane: {}",
        p["plane"].as_str().unwrap_or("unknown")
    ));
    if let Some(l) = p.get("lateness") {
        out.push_str(&format!(
            "; lateness over {} packets: mean {:.1} us, p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us",
            num(l, &["count"]),
            num(l, &["mean_us"]),
            num(l, &["p50_us"]),
            num(l, &["p99_us"]),
            num(l, &["p999_us"]),
            num(l, &["max_us"]),
        ));
    }
    out.push('\n');
    if let Some(r) = p.get("runner") {
        out.push_str(&format!(
            "runner: received {} delivered {} inside {} dropped queue {} loss {} memory {}",
            num(r, &["received"]),
            num(r, &["delivered"]),
            num(r, &["inside"]),
            num(r, &["dropped_queue"]),
            num(r, &["dropped_loss"]),
            num(r, &["dropped_memory"]),
        ));
        // Lost before the runner could read them: never received.
        if r["dropped_input"].as_u64().is_some_and(|n| n > 0) {
            out.push_str(&format!(
                "; {} dropped by the kernel before reading (the emulator did not keep up)",
                num(r, &["dropped_input"])
            ));
        }
        out.push('\n');
    }
    // Each worker's own figures, when there are several (the lines above
    // are their sums).
    if let Some(ws) = p["workers"].as_array().filter(|w| w.len() > 1) {
        for w in ws {
            let st = &w["stats"];
            let ports: Vec<&str> = w["ports"]
                .as_array()
                .map(|a| a.iter().filter_map(|p| p.as_str()).collect())
                .unwrap_or_default();
            let cpu = w["cpu"]
                .as_u64()
                .map_or_else(|| "any CPU".to_string(), |c| format!("CPU {c}"));
            out.push_str(&format!(
                "worker {} ({cpu}, {} pipes, ports {}): received {} delivered {} handed out {} in {} inside {} dropped handoff {}{}; lateness p99 {:.1} us, hand-off latency p99 {:.1} us\n",
                num(w, &["worker"]),
                num(w, &["pipes"]),
                match ports.len() {
                    0 => "none".to_string(),
                    1..=4 => ports.join(","),
                    n => format!("{n} of them"),
                },
                num(st, &["received"]),
                num(st, &["delivered"]),
                num(st, &["handoffs_out"]),
                num(st, &["handoffs_in"]),
                num(st, &["inside"]),
                num(st, &["dropped_handoff"]),
                if w["balanced"].as_bool() == Some(false) { " (UNBALANCED)" } else { "" },
                num(w, &["lateness", "p99_us"]),
                num(w, &["handoff_latency", "p99_us"]),
            ));
        }
    }
    let rate = prev.is_some() && secs > 0.0;
    if let Some(pipes) = p["pipes"].as_array() {
        out.push_str(&format!(
            "\n{:>6} {:>12} {:>14} {:>12} {:>8} {:>8} {:>8} {:>8}{}\n",
            "PIPE",
            "ARRIVALS",
            "BYTES",
            "DEPARTURES",
            "DROPS",
            "LOSS",
            "QUEUED",
            "IN-LINE",
            if rate { "     PKT/S      BIT/S" } else { "" }
        ));
        for pipe in pipes {
            let n = num(pipe, &["number"]);
            let mut line = format!(
                "{:>6} {:>12} {:>14} {:>12} {:>8} {:>8} {:>8} {:>8}",
                n,
                num(pipe, &["arrivals"]),
                num(pipe, &["arrival_bytes"]),
                num(pipe, &["departures"]),
                num(pipe, &["drops"]),
                num(pipe, &["loss_drops"]),
                num(pipe, &["backlog"]),
                num(pipe, &["in_delay_line"]),
            );
            if let (true, Some(old)) = (rate, prev) {
                let before = old["plane"]["pipes"]
                    .as_array()
                    .and_then(|a| a.iter().find(|q| num(q, &["number"]) == n));
                if let Some(b) = before {
                    let pk = (num(pipe, &["departures"]) - num(b, &["departures"])) / secs;
                    let bits = (num(pipe, &["departure_bytes"]) - num(b, &["departure_bytes"]))
                        * 8.0
                        / secs;
                    line.push_str(&format!(" {pk:>9.0} {bits:>10.0}"));
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    if let Some(rules) = p["rules"].as_array() {
        out.push_str(&format!(
            "\n{:>6} {:>12} {:>14}\n",
            "RULE", "PACKETS", "BYTES"
        ));
        for r in rules {
            out.push_str(&format!(
                "{:>6} {:>12} {:>14}\n",
                r[0].as_u64().unwrap_or(0),
                r[1].as_u64().unwrap_or(0),
                r[2].as_u64().unwrap_or(0)
            ));
        }
    }
    out
}

/// `pipelab top`: the counters, refreshed in place.
pub fn top(c: &Conn<'_>, a: &TopArgs) -> Result<(), CliError> {
    if !(a.interval > 0.0 && a.interval <= 3600.0) {
        return Err(CliError::Interval(a.interval));
    }
    let mut client = connect(c)?;
    let tty = std::io::stdout().is_terminal();
    let mut prev: Option<(Value, std::time::Instant)> = None;
    let mut n = 0u64;
    loop {
        let v = match stats_value(c, &mut client) {
            Ok(v) => v,
            // An emulation closes a connection idle longer than its idle
            // timeout (60 s): a long --interval connects again.
            Err(_) if n > 0 => {
                client = connect(c)?;
                stats_value(c, &mut client)?
            }
            Err(e) => return Err(e),
        };
        let now = std::time::Instant::now();
        let (pv, secs) = match &prev {
            Some((p, t)) => (Some(p), now.duration_since(*t).as_secs_f64()),
            None => (None, 0.0),
        };
        let mut screen = String::new();
        if tty {
            screen.push_str("\x1b[H\x1b[2J");
        }
        screen.push_str(&render(&v, pv, secs));
        if !tty {
            screen.push_str("--\n");
        }
        emit(&screen)?;
        prev = Some((v, now));
        n += 1;
        if a.count.is_some_and(|c| n >= c) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs_f64(a.interval));
    }
}

/// `pipelab list`: the running emulations (stale entries are removed on
/// the way).
pub fn list(a: &ListArgs) -> Result<(), CliError> {
    let entries = Registry::new().list();
    if a.json {
        let text = serde_json::to_string_pretty(&entries).map_err(CliError::Encode)?;
        return emit(&(text + "\n"));
    }
    // What dead pipelab processes left on the host, named in one line.
    let left = pipelab_modes::ledger::Ledger::new().leftovers();
    if !left.is_empty() {
        let shown: Vec<String> = left.iter().take(3).map(|r| r.what.clone()).collect();
        eprintln!(
            "note: pipelab processes that no longer run left {} change{} on this host ({}{}): run `pipelab cleanup`",
            left.len(),
            if left.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if left.len() > 3 { ", ..." } else { "" }
        );
    }
    emit(&list_table(&entries))
}

fn owner_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => u.name,
        _ => uid.to_string(),
    }
}

/// The table of `pipelab list`.
fn list_table(entries: &[EmulationInfo]) -> String {
    if entries.is_empty() {
        return "no running emulations\n".to_string();
    }
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            [
                e.name.clone(),
                e.mode.clone(),
                e.pid.to_string(),
                owner_name(e.owner),
                e.pipes.to_string(),
                utc(e.started),
            ]
        })
        .collect();
    let head = ["NAME", "MODE", "PID", "OWNER", "PIPES", "STARTED"];
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i == 5 {
                l.push_str(c);
            } else if i == 2 || i == 4 {
                l.push_str(&format!("{c:>w$}  "));
            } else {
                l.push_str(&format!("{c:<w$}  "));
            }
        }
        l.push('\n');
        l
    };
    let mut out = line(head);
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]));
    }
    out
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
fn utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn list_tables() {
        assert_eq!(list_table(&[]), "no running emulations\n");
        let mut e = EmulationInfo::new("lab", "topo");
        e.pid = 42;
        e.owner = 0;
        e.pipes = 1200;
        e.started = 1_700_000_000;
        let t = list_table(&[e]);
        assert_eq!(
            t,
            "NAME  MODE  PID  OWNER  PIPES  STARTED\n\
             lab   topo   42  root    1200  2023-11-14T22:13:20Z\n"
        );
    }
}
