//! Why a `pipelab` command failed, typed.
//!
//! [`CliError`] is every failure `main` reports: its `Display` is the text
//! the user sees (nothing is printed with `Debug`), [`CliError::code`] the
//! exit status (2 for what the user gave wrong, 1 for what went wrong
//! while running). Each variant carries what its message names (paths,
//! flags, values, positions); the errors of the live commands and of
//! `pipelab topo` are enums of their own ([`crate::live::ShellError`],
//! [`crate::live::BridgeError`], [`crate::live::AttachCliError`],
//! [`crate::live::ProbeError`],
//! [`crate::topo::TopoError`]).

use std::path::PathBuf;

use pipelab_control::{ClientError, RegistryError};
use pipelab_lang::files::FileError;
use pipelab_lang::{ParseError, ScriptError};

use crate::with_hint;

/// Why a configuration file (or a file of commands) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file cannot be read (missing, not a regular file, too big, too
    /// slow).
    #[error("error: cannot read {0}")]
    Read(FileError),
    /// The file is not UTF-8: the first bad byte, with its position.
    #[error("{}1 error in {name}; nothing was applied", error.render(name, text))]
    Encoding {
        /// The file's name as given.
        name: String,
        /// Where the first bad byte is.
        error: Box<ParseError>,
        /// The text, bad bytes replaced, for the line the error shows
        /// (empty: no line is shown).
        text: String,
    },
    /// The file's commands have errors, each at its position.
    #[error(
        "{}{} error{} in {name}; nothing was applied",
        pipelab_lang::render_errors(errors, name, text),
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    )]
    Script {
        /// The file's name as given.
        name: String,
        /// The errors.
        errors: Vec<ScriptError>,
        /// The text.
        text: String,
    },
    /// The file is not a configuration: its first line does not start
    /// with a command of the language, and it has errors. Nothing of it
    /// is quoted (it may be any file, named by mistake or to have an
    /// error print a line of it).
    #[error(
        "error: {name}:{line}: not a configuration: its first line does not start with a command ({}); the file's text is not shown; nothing was applied",
        pipelab_lang::parser::COMMANDS
    )]
    NotConfig {
        /// The file's name as given.
        name: String,
        /// The first line of text.
        line: usize,
    },
    /// The configuration cannot be lowered (a pipe's parameters, a file
    /// it names).
    #[error("{name}: {error}")]
    Lower {
        /// The file's name as given.
        name: String,
        /// Why.
        error: Box<pipelab_emu::LowerError>,
    },
}

impl ConfigFileError {
    /// Refuses `text` (of file `name`) as [`ConfigFileError::NotConfig`]
    /// if its first line of text does not start with a command: for a
    /// file sent elsewhere to be run, whose errors would come back
    /// quoting it.
    pub fn recognised(name: &str, text: &str) -> Result<(), ConfigFileError> {
        match first_line(text) {
            Some((line, first)) if !pipelab_lang::parser::is_command(first) => {
                Err(ConfigFileError::NotConfig {
                    name: name.to_string(),
                    line,
                })
            }
            _ => Ok(()),
        }
    }

    /// The errors of the configuration `text` of file `name`: each at
    /// its line, quoted, when the file starts as a configuration does
    /// (its first line of text starts with a command), else
    /// [`ConfigFileError::NotConfig`].
    pub fn script(name: String, errors: Vec<ScriptError>, text: String) -> ConfigFileError {
        match first_line(&text) {
            Some((line, first)) if !pipelab_lang::parser::is_command(first) => {
                ConfigFileError::NotConfig { name, line }
            }
            _ => ConfigFileError::Script { name, errors, text },
        }
    }

    /// A file that is not UTF-8: its first bad byte, with its line shown
    /// when the file starts as a configuration does (its first line of
    /// text starts with a command), else at its position alone.
    pub fn encoding(name: String, error: ParseError, text: String) -> ConfigFileError {
        let text = match first_line(&text) {
            Some((_, first)) if pipelab_lang::parser::is_command(first) => text,
            _ => String::new(),
        };
        ConfigFileError::Encoding {
            name,
            error: Box::new(error),
            text,
        }
    }
}

/// The first line of `text` with words other than a comment: its number
/// (from 1) and first word (a byte order mark before it is the
/// parser's to refuse, at its position: the line is a configuration's).
fn first_line(text: &str) -> Option<(usize, &str)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let word = l
            .trim_start_matches('\u{feff}')
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next()?;
        Some((i + 1, word))
    })
}

/// Why a `pipelab` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A configuration file or a file of commands cannot be used.
    #[error(transparent)]
    File(#[from] ConfigFileError),
    /// `-f FILE` and a command.
    #[error("error: -f FILE takes no command: the file holds the commands")]
    FileAndCommand,
    /// Neither a command nor `-f FILE`.
    #[error("error: give a command (see pipelab --help)")]
    NoCommand,
    /// `list --json` with `--target` or `--socket`.
    #[error(
        "error: `list --json` lists the running emulations: give it without --target or --socket"
    )]
    ListJsonAddressed,
    /// A `--traffic` spec does not parse.
    #[error(
        "error: --traffic #{index}: column {}: {}\n  {text}\n  {}^",
        error.column,
        with_hint(error),
        " ".repeat((error.column as usize).saturating_sub(1))
    )]
    Traffic {
        /// Which `--traffic`, from 1.
        index: usize,
        /// Its text.
        text: String,
        /// Why, at its column.
        error: Box<ParseError>,
    },
    /// A line of a traffic file does not parse.
    #[error("error: {name}:{line}:{}: {}", error.column, with_hint(error))]
    TrafficLine {
        /// The file.
        name: String,
        /// The line, from 1.
        line: usize,
        /// Why, at its column.
        error: Box<ParseError>,
    },
    /// A pipe of `pipelab check`'s configuration cannot be built.
    #[error("error: {name}: pipe {pipe}: {error}")]
    CheckPipe {
        /// The configuration file.
        name: String,
        /// The pipe.
        pipe: u32,
        /// Why.
        error: pipelab_engine::config::ConfigError,
    },
    /// The simulation could not run.
    #[error("error: {0}")]
    Sim(pipelab_sim::SimError),
    /// `pipelab sim`'s inputs do not make a run (a topology's, its
    /// `--cross`, CONFIG given twice).
    #[error(transparent)]
    SimSetup(#[from] crate::sim::SimSetupError),
    /// `pipelab sim --pcap/--events`: a flag or a file cannot be used.
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
    /// Two paths of one command name one file, one of them written.
    #[error(transparent)]
    SameFile(#[from] crate::outputs::SameFile),
    /// `pipelab sim --pcap/--events`: writing the files failed.
    #[error("error: {0}")]
    Recording(std::io::Error),
    /// `pipelab man DIR`: the pages cannot be written.
    #[error("error: cannot write manual pages into {}: {source}", dir.display())]
    ManPages {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Standard output cannot be written.
    #[error("error: cannot write output: {0}")]
    Output(std::io::Error),
    /// A file cannot be written.
    #[error("error: cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `pipelab shell` failed.
    #[error(transparent)]
    Shell(#[from] crate::live::ShellError),
    /// The command of `pipelab shell` exited with this status (already
    /// said by the command itself).
    #[error("")]
    Exit(u8),
    /// `pipelab bridge` failed.
    #[error(transparent)]
    Bridge(#[from] crate::live::BridgeError),
    /// `pipelab attach` failed.
    #[error(transparent)]
    Attach(#[from] crate::live::AttachCliError),
    /// `pipelab probe` failed.
    #[error(transparent)]
    Probe(#[from] crate::live::ProbeError),
    /// `pipelab plot` failed.
    #[error(transparent)]
    Plot(#[from] crate::plot::PlotError),
    /// `pipelab topo` failed (a message that carries no `error:` of its
    /// own gets one).
    #[error("{}", topo_message(&.0.to_string()))]
    Topo(#[from] crate::topo::TopoError),
    /// The host ledger could not be read.
    #[error("error: {0}")]
    Cleanup(pipelab_modes::ledger::LedgerError),
    /// `pipelab cleanup` could not restore everything.
    #[error(
        "error: {count} changes could not be restored (see above); they stay in {}",
        dir.display()
    )]
    NotRestored {
        /// How many changes.
        count: usize,
        /// The ledger's directory.
        dir: PathBuf,
    },
    /// `--target NAME` is not a name an emulation can have.
    #[error("error: --target: {0}")]
    TargetName(RegistryError),
    /// `--target NAME` names no running emulation.
    #[error("error: {0}")]
    Registry(#[from] RegistryError),
    /// pipelabd's socket: nothing listens.
    #[error(
        "error: pipelabd is not running (nothing listens on {}).\nStart it as root: `{}` (options: --state-dir DIR, --plane host|none; see `pipelabd --help`).",
        socket.display(),
        start_command(socket)
    )]
    NoDaemon {
        /// The socket.
        socket: PathBuf,
    },
    /// pipelabd's socket: the caller may not connect.
    #[error(
        "error: permission denied on {}: the socket is for root and the group '{group}' (ask an administrator to add you: usermod -aG {group} $USER)",
        socket.display(),
        group = pipelab_control::DEFAULT_GROUP
    )]
    SocketDenied {
        /// The socket.
        socket: PathBuf,
    },
    /// A running emulation's socket: the caller may not connect.
    #[error(
        "error: permission denied on {}: emulation {name} is for its owner, root and the group '{group}' (ask an administrator to add you: usermod -aG {group} $USER)",
        socket.display(),
        group = pipelab_control::DEFAULT_GROUP
    )]
    TargetDenied {
        /// The emulation.
        name: String,
        /// Its socket.
        socket: PathBuf,
    },
    /// A running emulation does not answer.
    #[error(
        "error: emulation {name} does not answer on {} ({source}); see `pipelab list`",
        socket.display()
    )]
    TargetSilent {
        /// The emulation.
        name: String,
        /// Its socket.
        socket: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The request could not be made.
    #[error("error: {0}")]
    Client(#[from] ClientError),
    /// The emulation refused the request (its message, with the file's
    /// name where it says `command`).
    #[error("{}", refusal(message, file.as_deref()))]
    Refused {
        /// The emulation's message.
        message: String,
        /// The file the request came from.
        file: Option<String>,
    },
    /// `pipelab top --interval` out of range.
    #[error("error: --interval {0}: give seconds above 0 and at most 3600 (e.g. 0.5)")]
    Interval(f64),
    /// `pipelab list --json` could not encode the list.
    #[error("error: cannot encode the list: {0}")]
    Encode(serde_json::Error),
}

impl CliError {
    /// The exit status: 2 for what the user gave wrong (flags, files,
    /// configurations), 1 for what failed while running.
    pub fn code(&self) -> u8 {
        match self {
            CliError::File(_)
            | CliError::FileAndCommand
            | CliError::NoCommand
            | CliError::ListJsonAddressed
            | CliError::Traffic { .. }
            | CliError::TrafficLine { .. }
            | CliError::CheckPipe { .. }
            | CliError::Topo(_)
            | CliError::SimSetup(_)
            | CliError::Capture(_)
            | CliError::SameFile(_)
            | CliError::TargetName(_)
            | CliError::Interval(_) => 2,
            CliError::Sim(e) => sim_code(e),
            CliError::Shell(e) => e.code(),
            CliError::Probe(e) => e.code(),
            CliError::Bridge(e) => e.code(),
            CliError::Attach(e) => e.code(),
            CliError::Plot(e) => e.code(),
            CliError::Exit(code) => *code,
            _ => 1,
        }
    }
}

/// The exit status of a simulation that did not run: 2 for what its
/// input asks that cannot run (refused before the run), 1 for a failure
/// while running.
fn sim_code(e: &pipelab_sim::SimError) -> u8 {
    use pipelab_sim::SimError;
    match e {
        SimError::Pipe { .. }
        | SimError::Unsupported(_)
        | SimError::NoTraffic
        | SimError::Traffic { .. }
        | SimError::Workers
        | SimError::Interval(_) => 2,
        SimError::Worker(_) | SimError::Horizon { .. } => 1,
    }
}

/// `error: ` before a message that does not start with `error` already.
fn prefixed(message: &str) -> String {
    if message.starts_with("error") {
        message.to_string()
    } else {
        format!("error: {message}")
    }
}

/// `pipelab topo`'s message: a configuration's rendered errors carry
/// their own `error: `.
fn topo_message(message: &str) -> String {
    if message.starts_with("error: ") {
        message.to_string()
    } else {
        format!("error: {message}")
    }
}

/// An emulation's refusal as the user sees it: a script's errors point
/// into the file the script came from.
fn refusal(message: &str, file: Option<&str>) -> String {
    let message = if message.is_empty() {
        "the emulation refused"
    } else {
        message
    };
    let message = match file {
        Some(f) => message.replace(" --> command:", &format!(" --> {f}:")),
        None => message.to_string(),
    };
    prefixed(&message)
}

/// How to start pipelabd on `socket`.
fn start_command(socket: &std::path::Path) -> String {
    let mut start = String::from("pipelabd");
    if socket != std::path::Path::new(pipelab_control::DEFAULT_SOCKET) {
        start.push_str(&format!(" --socket {}", socket.display()));
    }
    start
}
