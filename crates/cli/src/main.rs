//! # pipelab: the command-line tool
//!
//! `pipelab sim` runs a configuration in virtual time against synthetic
//! traffic; `pipelab demo` runs the bundled example; `pipelab check` parses
//! a configuration and prints it back in canonical form.
//!
//! This crate only reads files and arguments and prints; the work is done
//! by `pipelab-lang` (parsing), `pipelab-sim` (the virtual-time driver) and
//! `pipelab-engine`.

#![forbid(unsafe_code)]

use pipelab_cli::{capture, daemon_args, outputs, seed, series};

mod client;
mod error;
mod install;
mod live;
mod plot;
mod progress;
mod sim;
mod topo;

use clap::{Args, Parser, Subcommand};
use error::{CliError, ConfigFileError};
use pipelab_lang::files::read_named_file;
use pipelab_lang::{Config, TrafficSpec};
use pipelab_sim::{simulate_with_loader, SimOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The bundled default example (dummynet-revisited §3.2).
const DEMO_CONFIG: &str = include_str!("../../../examples/two-links.conf");
const DEMO_TRAFFIC: &str = include_str!("../../../examples/two-links.traffic");

#[derive(Parser, Debug)]
#[command(
    name = "pipelab",
    version,
    about = "A user-space network emulator: links, paths and topologies with exact bandwidth, delay, queues and loss.",
    long_about = None,
    arg_required_else_help = true,
    after_help = "Any other command is a command of the language, sent to pipelabd (start it with `pipelabd`),\n\
                  or with --target NAME to the running emulation NAME (see `pipelab list`):\n  \
                  pipelab pipe 3 config bw 640Kbit/s delay 30ms\n  \
                  pipelab add 100 pipe 3 ip from any to any\n  \
                  pipelab show | pipelab pipe show | pipelab delete 100 | pipelab flush\n  \
                  pipelab table 1 add 10.0.0.0/8 3\n  \
                  pipelab -f links.conf          (a whole file, all or nothing)\n  \
                  pipelab --target lab link r0 r1 down   (an emulation's own commands)"
)]
pub(crate) struct Cli {
    /// pipelabd's control socket [default: /run/pipelab/pipelab.sock].
    #[arg(long, value_name = "PATH", conflicts_with = "target")]
    socket: Option<PathBuf>,
    /// Send the command to the running emulation NAME (a shell, a bridge,
    /// a topology, pipelabd; see `pipelab list`) instead of pipelabd's
    /// socket.
    #[arg(long, value_name = "NAME")]
    target: Option<String>,
    /// Root only: act in this user's block (a name or uid).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Send the commands of FILE to pipelabd (or --target), applied all or
    /// nothing.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a configuration or a topology in virtual time against synthetic traffic.
    ///
    /// Examples:
    ///   pipelab sim links.conf --traffic 'cbr rate 500pps size 1000B duration 10s'
    ///   pipelab sim --topology ring.gml --workers 2 --cross 'c0 c7 2Mbit/s' \
    ///     --traffic 'cbr rate 500pps size 1000B duration 10s from 10.0.0.1:9 to 10.0.0.9:9'
    Sim(sim::SimArgs),
    /// Run the bundled example (two links and a LAN, dummynet-revisited §3.2).
    Demo(OutputArgs),
    /// Run a command in a new network namespace behind an emulated link.
    ///
    /// Example:
    ///   pipelab shell --link 'bw 10Mbit/s delay 20ms' -- ping -c 5 $PIPELAB_OUTSIDE
    Shell(live::ShellArgs),
    /// A Dummynet bridge between two interfaces, in user space.
    ///
    /// Example:
    ///   pipelab bridge veth-a veth-b -f links.conf
    Bridge(live::BridgeArgs),
    /// Shape an existing interface in place (its traffic and forwarded
    /// traffic), as `tc qdisc add dev DEV root netem ...` does, in this
    /// or another network namespace; restored on exit, and by the next
    /// pipelab command after a crash.
    ///
    /// Egress only unless --ingress or --both. Pipe 1 shapes egress,
    /// pipe 2 ingress; change them while it runs with
    /// `pipelab --target attach-PID pipe 1 config ...`.
    ///
    /// Examples:
    ///   pipelab attach eth0 -- delay 50ms 5ms loss 0.5%
    ///   pipelab attach --both veth0 -- bw 10Mbit/s delay 20ms
    ///   pipelab attach --netns $(docker inspect -f '{{.State.Pid}}' web) eth0 -- delay 50ms
    #[command(verbatim_doc_comment)]
    Attach(live::AttachArgs),
    /// Topologies (ModelNet): generate, distill and assign them, run them live with a namespace per VN.
    #[command(subcommand)]
    Topo(topo::TopoCmd),
    /// Timestamped UDP test traffic: one-way delay, loss, reordering.
    #[command(subcommand)]
    Probe(live::ProbeCmd),
    /// Draw a report as an SVG or PNG image: capacity, arrivals and
    /// departures over time, delay over time, per-packet delay, CDF,
    /// shares.
    ///
    /// Examples:
    ///   pipelab sim link.conf --traffic 'cbr rate 1000pps size 1500B duration 10s' \
    ///     --interval 100ms --json > report.json
    ///   pipelab plot report.json -o throughput.png
    ///   pipelab plot report.json -o delay.svg --kind cdf --size 1024x600
    #[command(verbatim_doc_comment)]
    Plot(plot::PlotArgs),
    /// Undo what pipelab processes that no longer run left on this host
    /// (nft tables, host-mode and attach rules, GRO turned off,
    /// namespaces, files, ip_forward), as recorded in the host ledger;
    /// prints each thing restored.
    ///
    /// Every command that changes the host does this first (host-mode
    /// rules excepted: they hold the host's traffic, fail-closed, until
    /// pipelabd runs again or this command removes them).
    Cleanup {
        /// Only print what would be restored.
        #[arg(long)]
        dry_run: bool,
    },
    /// The named link conditions (`--link preset:NAME`, `preset NAME/down`
    /// in a pipe): each side's pipe words and where the numbers come from.
    ///
    /// Examples:
    ///   pipelab presets
    ///   pipelab shell --link preset:nlc-3g -- curl -o /dev/null http://$PIPELAB_OUTSIDE/
    ///   pipelab shell --uplink preset:geo --downlink 'preset geo queue 200' -- ping $PIPELAB_OUTSIDE
    ///   (in a configuration a pipe names its side: pipe 1 config preset wpt-cable/down)
    #[command(verbatim_doc_comment)]
    Presets,
    /// Check a configuration file and print it in canonical form.
    Check {
        /// The configuration file (one command per line, `#` comments).
        config: PathBuf,
    },
    /// The running emulations: name, mode, pid, owner, pipes, start time.
    /// (With --target or --socket, `list` is the language's rule list.)
    List(client::ListArgs),
    /// pipelabd (or --target): print the caller's whole configuration to FILE (`-`: stdout).
    Save {
        /// Where to write it.
        file: PathBuf,
    },
    /// pipelabd (or --target): replace the caller's configuration with FILE (all or nothing).
    Restore {
        /// A configuration, as `save` writes it.
        file: PathBuf,
    },
    /// pipelabd (or --target): counters per rule and pipe, lateness, request latency.
    Stats(client::StatsArgs),
    /// pipelabd (or --target): the counters, refreshed live.
    Top(client::TopArgs),
    /// pipelabd (or --target): one-line links (client|server|service PORTS@ADDR IN ... OUT ... | SHARED ...).
    ///
    /// Example:
    ///   pipelab netconfig client 80,443@10.21.0.0/24 IN bw 512kbit/s delay 8ms OUT bw 10Mbit/s delay 3ms
    Netconfig(client::NetconfigArgs),
    /// pipelabd (root): per-user limits, `limit user NAME pipes 10 rules 20 memory 1MB`, `limit list`.
    Limit(client::LimitArgs),
    /// Print the completion script for a shell (bash, zsh, fish, elvish,
    /// powershell).
    ///
    /// Example:
    ///   pipelab completions bash > /etc/bash_completion.d/pipelab
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (pipelab.1, pipelab-SUBCOMMAND.1,
    /// pipelabd.8) into DIR.
    Man {
        /// Where to write them (made if missing).
        dir: PathBuf,
    },
    /// Any command of the language (or of the target's own), sent to pipelabd or --target.
    #[command(external_subcommand)]
    Lang(Vec<String>),
}

#[derive(Args, Debug)]
struct OutputArgs {
    /// Print the report as JSON (stable field names) instead of a table.
    #[arg(long)]
    json: bool,
    /// Seed of every random decision: a number, or `random` (a fresh one,
    /// printed in the report so the run can be repeated).
    #[arg(long, default_value = "1", allow_negative_numbers = true, value_parser = seed_arg)]
    seed: u64,
}

pub(crate) use seed::seed_arg;

fn read(path: &Path) -> Result<String, CliError> {
    Ok(read_text(path)?)
}

/// A configuration file's text, or the message to print: read as every
/// named file is (a regular file under the size cap, within the time
/// budget); a file that is not UTF-8 is refused at its first bad byte,
/// with its line, column and byte offset.
pub(crate) fn read_text(path: &Path) -> Result<String, ConfigFileError> {
    let bytes = pipelab_lang::files::read_named_bytes(path).map_err(ConfigFileError::Read)?;
    match pipelab_lang::source::decode(&bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(error) => Err(ConfigFileError::encoding(
            path.display().to_string(),
            error,
            String::from_utf8_lossy(&bytes).into_owned(),
        )),
    }
}

fn load_config(name: &str, text: &str) -> Result<Config, ConfigFileError> {
    let mut cfg = Config::new();
    cfg.apply_script(text)
        .map_err(|errors| ConfigFileError::script(name.to_string(), errors, text.to_string()))?;
    Ok(cfg)
}

/// Traffic specs from a file's lines (blank lines and `#` comments skipped).
fn traffic_lines(name: &str, text: &str) -> Result<Vec<TrafficSpec>, CliError> {
    pipelab_lang::parse_traffic_lines(text).map_err(|error| CliError::TrafficLine {
        name: name.to_string(),
        line: error.line as usize,
        error: Box::new(error),
    })
}

fn with_hint(e: &pipelab_lang::ParseError) -> String {
    match &e.hint {
        Some(h) => format!("{}: {h}", e.message),
        None => e.message.clone(),
    }
}

/// A positioned error in words given on the command line (`--link`,
/// `--access`, `topo link ...`): the message and hint, then the words
/// with a caret under the column of the error (columns count from the
/// start of `text`).
pub(crate) fn caret(text: &str, e: &pipelab_lang::ParseError) -> String {
    format!(
        "{}\n  {text}\n  {}^",
        with_hint(e),
        " ".repeat((e.column as usize).saturating_sub(1))
    )
}

/// A loader for the files a configuration or a topology names
/// (`file:PATH`, `trace:PATH`, `profile PATH`): relative paths are
/// relative to the file's directory (`base`).
pub(crate) fn file_loader(base: Option<PathBuf>) -> pipelab_emu::FileLoader {
    Box::new(move |path: &str| {
        let p = Path::new(path);
        let full = match &base {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.to_path_buf(),
        };
        read_named_file(&full).map_err(|e| e.to_string())
    })
}

/// A configuration file read and applied, checked by lowering it (files
/// its pipes name read relative to it), with the loader that reads them;
/// or the error to print.
pub(crate) fn config_file(
    path: &Path,
) -> Result<(Config, pipelab_emu::FileLoader), ConfigFileError> {
    let name = path.display().to_string();
    let text = read_text(path)?;
    let cfg = load_config(&name, &text)?;
    let mut load = file_loader(config_dir(path));
    pipelab_emu::lower_config(&cfg, &mut load).map_err(|error| ConfigFileError::Lower {
        name,
        error: Box::new(error),
    })?;
    Ok((cfg, load))
}

/// The directory holding `config`, for [`file_loader`].
pub(crate) fn config_dir(config: &Path) -> Option<PathBuf> {
    config.parent().map(Path::to_path_buf)
}

fn run_sim(
    cfg: &Config,
    traffic: &[TrafficSpec],
    out: &OutputArgs,
    base: Option<PathBuf>,
) -> Result<(), CliError> {
    let opts = SimOptions {
        seed: out.seed,
        ..SimOptions::default()
    };
    let mut load = file_loader(base);
    let report = simulate_with_loader(cfg, traffic, &opts, &mut load).map_err(CliError::Sim)?;
    let text = if out.json {
        report.to_json() + "\n"
    } else {
        report.to_table()
    };
    emit(&text)
}

/// Write to stdout; a closed pipe (`pipelab demo | head`) is not an error.
fn emit(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Output(e)),
    }
}

fn main_inner(cli: Cli) -> Result<(), CliError> {
    if let Some(t) = &cli.target {
        pipelab_control::registry::check_name(t).map_err(CliError::TargetName)?;
    }
    let conn = client::Conn {
        socket: cli.socket.as_deref(),
        target: cli.target.as_deref(),
        user: cli.user.as_deref(),
    };
    let addressed = cli.socket.is_some() || cli.target.is_some();
    let command = match (cli.command, &cli.file) {
        (Some(_), Some(_)) => return Err(CliError::FileAndCommand),
        (Some(c), None) => c,
        (None, Some(f)) => return client::file(&conn, f),
        (None, None) => return Err(CliError::NoCommand),
    };
    match command {
        Cmd::List(a) if addressed => {
            if a.json {
                return Err(CliError::ListJsonAddressed);
            }
            client::lang(&conn, &["list".to_string()])
        }
        Cmd::List(a) => client::list(&a),
        Cmd::Save { file } => client::save(&conn, &file),
        Cmd::Restore { file } => client::restore(&conn, &file),
        Cmd::Stats(a) => client::stats(&conn, &a),
        Cmd::Top(a) => client::top(&conn, &a),
        Cmd::Netconfig(a) => client::netconfig(&conn, &a),
        Cmd::Limit(a) => client::limit(&conn, &a),
        Cmd::Lang(words) => client::lang(&conn, &words),
        Cmd::Sim(args) => sim::run(args),
        Cmd::Demo(out) => {
            let cfg = load_config("examples/two-links.conf", DEMO_CONFIG)?;
            let traffic = traffic_lines("examples/two-links.traffic", DEMO_TRAFFIC)?;
            if !out.json {
                let mut head = format!(
                    "# configuration (examples/two-links.conf)\n{}",
                    cfg.to_script()
                );
                head.push_str("# traffic (examples/two-links.traffic)\n");
                for t in &traffic {
                    head.push_str(&format!("{t}\n"));
                }
                head.push('\n');
                emit(&head)?;
            }
            run_sim(&cfg, &traffic, &out, None)
        }
        Cmd::Shell(a) => match live::shell(a)? {
            0 => Ok(()),
            code => Err(CliError::Exit(u8::try_from(code).unwrap_or(1))),
        },
        Cmd::Bridge(a) => {
            let name = a.config.display().to_string();
            let text = read(&a.config)?;
            let cfg = load_config(&name, &text)?;
            let load = file_loader(config_dir(&a.config));
            Ok(live::bridge(a, &cfg, load)?)
        }
        Cmd::Attach(a) => Ok(live::attach(a)?),
        Cmd::Topo(t) => emit(&topo::run(t)?),
        Cmd::Probe(p) => Ok(live::probe(p)?),
        Cmd::Plot(a) => emit(&plot::run(&a)?),
        Cmd::Cleanup { dry_run } => cleanup(dry_run),
        Cmd::Presets => emit(&presets_table()),
        Cmd::Completions { shell } => emit(&install::completions(shell)),
        Cmd::Man { dir } => {
            let written = install::man_pages(&dir).map_err(|source| CliError::ManPages {
                dir: dir.clone(),
                source,
            })?;
            emit(&format!(
                "{} manual pages in {}\n",
                written.len(),
                dir.display()
            ))
        }
        Cmd::Check { config } => {
            let name = config.display().to_string();
            let text = read(&config)?;
            let cfg = load_config(&name, &text)?;
            let mut load = file_loader(config_dir(&config));
            for (&pipe, spec) in &cfg.pipes {
                spec.to_config_with(&mut load)
                    .map_err(|error| CliError::CheckPipe {
                        name: name.clone(),
                        pipe,
                        error,
                    })?;
            }
            emit(&cfg.to_script())
        }
    }
}

/// `pipelab cleanup [--dry-run]`: one line per thing restored (or that
/// would be, or could not be); exit 1 if anything could not.
/// `pipelab presets`: one row per preset, then the sources.
fn presets_table() -> String {
    use std::fmt::Write;
    let presets = pipelab_lang::PRESETS;
    let w = presets.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let d = presets.iter().map(|p| p.down.len()).max().unwrap_or(0);
    let mut out = format!(
        "{:w$}  {:d$}  up (to the network)\n",
        "name", "down (from the network)"
    );
    let mut sources: Vec<&str> = Vec::new();
    for p in presets {
        let _ = writeln!(out, "{:w$}  {:d$}  {}", p.name, p.down, p.up);
        if !sources.contains(&p.source) {
            sources.push(p.source);
        }
    }
    out.push_str("\nsources:\n");
    for s in sources {
        let names: Vec<String> = presets
            .iter()
            .filter(|p| p.source == s)
            .map(|p| p.name.to_string())
            .collect();
        let _ = writeln!(out, "  {}:\n    {s}", names.join(", "));
    }
    out
}

fn cleanup(dry_run: bool) -> Result<(), CliError> {
    let ledger = pipelab_modes::ledger::Ledger::new();
    let done = ledger.recover(true, dry_run).map_err(CliError::Cleanup)?;
    // Stale entries of the registry of emulations go too.
    if !dry_run {
        let _ = pipelab_control::registry::list();
    }
    let mut text = String::new();
    let mut failed = 0;
    for r in &done {
        match &r.error {
            Some(e) => {
                failed += 1;
                text += &format!("could not restore {} (left by {}): {e}\n", r.what, r.owner);
            }
            None if dry_run => text += &format!("{} (left by {})\n", r.what, r.owner),
            None => text += &format!("restored: {} (left by {})\n", r.what, r.owner),
        }
    }
    if done.is_empty() {
        text += "nothing to clean up\n";
    }
    emit(&text)?;
    if failed > 0 {
        return Err(CliError::NotRestored {
            count: failed,
            dir: ledger.dir().to_path_buf(),
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    match main_inner(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = e.to_string();
            if !message.is_empty() {
                eprintln!("{message}");
            }
            ExitCode::from(e.code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Values that are paths, names or words: a leading `-` there is
    /// more likely a forgotten value before the next flag, which the
    /// argument parser's own refusal says best.
    const WORDS: &[&str] = &[
        "FILE",
        "PATH",
        "DIR",
        "NAME",
        "USER",
        "NAME|PID|PATH",
        "PIPE PARAMETERS",
        "MAHIMAHI SHELLS",
        "SPEC",
        "'SRC DST RATE ...'",
        "CONFIG",
        "INPUT",
        "SHELL",
        "ATTRS",
        "DISTILL",
        "MODE",
        "PREFIX",
        "LISTEN",
        "HOW",
    ];

    /// Every option of every subcommand, with the words that reach it.
    fn options(cmd: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, clap::Arg)>) {
        for a in cmd.get_arguments() {
            if a.get_long().is_some() && a.get_action().takes_values() {
                out.push((path.to_vec(), a.clone()));
            }
        }
        for sub in cmd.get_subcommands() {
            let mut p = path.to_vec();
            p.push(sub.get_name().to_string());
            options(sub, &p, out);
        }
    }

    /// A pass proves every option whose value is a number, a duration, a
    /// size, a rate or a list hands a value with a leading `-` (`-1`,
    /// `-1s`, `-1x5`) to its own check, which names the flag and the
    /// value, instead of the argument parser's "unexpected argument
    /// '-1' found".
    #[test]
    fn a_negative_value_reaches_the_flags_own_check() {
        let mut all = Vec::new();
        options(&Cli::command(), &[], &mut all);
        let mut failures = Vec::new();
        let mut checked = 0;
        for (path, arg) in &all {
            let names: Vec<String> = arg
                .get_value_names()
                .map(|v| v.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default();
            let words = names.iter().any(|n| WORDS.contains(&n.as_str()));
            if words || !arg.get_possible_values().is_empty() {
                continue;
            }
            checked += 1;
            let long = format!("--{}", arg.get_long().unwrap_or_default());
            // A number everywhere; a duration, a size or a rate where
            // one is taken (a count's parser says "-1s" is not one).
            let unit = names
                .iter()
                .any(|n| ["DURATION", "SECONDS", "SIZE", "RATE"].contains(&n.as_str()));
            let values: &[&str] = if unit {
                &["-1", "-1s", "-1x5"]
            } else {
                &["-1"]
            };
            for value in values {
                let mut argv = vec!["pipelab".to_string()];
                argv.extend(path.iter().cloned());
                argv.extend([long.clone(), (*value).to_string()]);
                if let Err(e) = Cli::command().try_get_matches_from(&argv) {
                    if e.kind() == clap::error::ErrorKind::UnknownArgument {
                        failures.push(argv[1..].join(" "));
                    }
                }
            }
        }
        assert!(checked > 20, "only {checked} options checked");
        assert!(
            failures.is_empty(),
            "refused by the argument parser:\n{}",
            failures.join("\n")
        );
    }
}
