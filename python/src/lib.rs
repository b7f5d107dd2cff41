//! # _pipelab: the extension module of the `pipelab` Python package
//!
//! The Rust half of `import pipelab` (the Python half is
//! `python/pipelab/__init__.py`). It exposes three things and computes
//! nothing of its own:
//!
//! * [`sim_json`]: the virtual-time simulator of `pipelab sim`, in
//!   process: the configuration applied by the language
//!   ([`pipelab_lang::Config::apply_script`]), the sources parsed by its
//!   one traffic parser, the run and the report of
//!   [`pipelab_sim::simulate_with_loader`], serialized by
//!   [`pipelab_sim::Report::to_json`], the very function that prints
//!   `pipelab sim --json`. The interpreter's lock is released while it
//!   runs.
//! * [`read_text`]: a configuration or traffic file read by the CLI's
//!   checked reader (regular files only, size and time capped, UTF-8).
//! * [`Client`]: the control protocol's client
//!   ([`pipelab_control::Client`]) to pipelabd or to a running emulation
//!   by name (the registry, as `pipelab --target NAME`), and
//!   [`emulations_json`], the registry's list (`pipelab list --json`).
//!
//! Answers cross to Python as JSON text, which the Python half decodes
//! with `json.loads`: the report is then the same text `pipelab sim
//! --json` prints, by construction. Every failure is a `pipelab.Error`
//! whose message is the error as the CLI renders it (a configuration's
//! with its line and a caret); a configuration's or a traffic spec's
//! error also carries `line` and `column`.
//!
//! What it deliberately does not do: start live emulations (a live
//! topology is a process of its own; the Python half drives the
//! `pipelab` binary for that), or hold a connection open between
//! requests (a server closes idle connections; one connection per
//! request, as the CLI makes, never meets a stale one).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use pipelab_control::registry::Registry;
use pipelab_control::{Client as ControlClient, Op, Response};
use pipelab_lang::{Config, ParseError};
use pipelab_sim::SimOptions;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    pipelab,
    Error,
    PyException,
    "A pipelab error: bad input (its message names what and where; a \
     configuration's or traffic spec's also has `line` and `column`), a \
     refused request, or a command that failed."
);

/// A `pipelab.Error` with this message.
fn error(message: impl Into<String>) -> PyErr {
    Error::new_err(message.into())
}

/// A `pipelab.Error` at a position of the text it renders.
fn error_at(py: Python<'_>, message: String, line: u32, column: u32) -> PyErr {
    let e = error(message);
    let value = e.value(py);
    // Attributes of a fresh exception object: setting them cannot fail
    // short of memory; the message already names the position anyway.
    let _ = value.setattr("line", line);
    let _ = value.setattr("column", column);
    e
}

/// A traffic spec's error, rendered against its text under `name`.
fn traffic_error(py: Python<'_>, e: &ParseError, name: &str, text: &str) -> PyErr {
    error_at(py, e.render(name, text), e.line, e.column)
}

/// Runs a configuration in virtual time against synthetic traffic and
/// returns the report as `pipelab sim --json` prints it.
///
/// `config` is the configuration's text, shown in errors as `name`;
/// `traffic` holds one spec per element (`cbr rate 1000pps size 1000B
/// duration 10s`), `traffic_text` the text of a traffic file (one spec a
/// line, `#` comments), whose specs come after them. Files a pipe names
/// (`distribution file:PATH`, `loss trace:PATH`) are read relative to
/// `base` when it is given. `interval` (`100ms`) adds the per-interval
/// series. The interpreter's lock is released while the simulation
/// runs.
#[pyfunction]
#[pyo3(signature = (config, traffic, traffic_text=None, seed=1, workers=1, interval=None, name="config", base=None))]
#[allow(clippy::too_many_arguments)]
fn sim_json(
    py: Python<'_>,
    config: &str,
    traffic: Vec<String>,
    traffic_text: Option<&str>,
    seed: u64,
    workers: usize,
    interval: Option<&str>,
    name: &str,
    base: Option<PathBuf>,
) -> PyResult<String> {
    let mut cfg = Config::new();
    if let Err(errors) = cfg.apply_script(config) {
        let (line, column) = match errors.first().map(|e| (e, e.line())) {
            Some((pipelab_lang::ScriptError::Parse(p), _)) => (p.line, p.column),
            Some((pipelab_lang::ScriptError::Apply { column, .. }, line)) => (line, *column),
            None => (0, 0),
        };
        let n = errors.len();
        let message = format!(
            "{}{n} error{} in {name}; nothing was applied",
            pipelab_lang::render_errors(&errors, name, config),
            if n == 1 { "" } else { "s" }
        );
        return Err(error_at(py, message, line, column));
    }
    let mut specs = Vec::with_capacity(traffic.len());
    for (i, t) in traffic.iter().enumerate() {
        let spec = pipelab_lang::parse_traffic(t)
            .map_err(|e| traffic_error(py, &e, &format!("traffic[{i}]"), t))?;
        specs.push(spec);
    }
    if let Some(text) = traffic_text {
        let more = pipelab_lang::parse_traffic_lines(text)
            .map_err(|e| traffic_error(py, &e, "traffic", text))?;
        specs.extend(more);
    }
    let interval = match interval {
        Some(word) => Some(
            pipelab_lang::units::parse_duration(word)
                .map_err(|e| error(format!("error: interval '{word}': {e}")))?,
        ),
        None => None,
    };
    let opts = SimOptions {
        seed,
        workers,
        interval,
        ..SimOptions::default()
    };
    let report = py.detach(move || {
        let mut load = |path: &str| {
            let p = Path::new(path);
            let full = match &base {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p.to_path_buf(),
            };
            pipelab_lang::files::read_named_file(&full).map_err(|e| e.to_string())
        };
        pipelab_sim::simulate_with_loader(&cfg, &specs, &opts, &mut load)
    });
    match report {
        Ok(r) => Ok(r.to_json()),
        Err(e) => Err(error(format!("error: {e}"))),
    }
}

/// The text of a configuration or traffic file at `path`, read as the
/// CLI reads one ([`pipelab_lang::files::read_named_bytes`]): only a
/// regular file (a FIFO or a device such as `/dev/zero` is refused at
/// once, without blocking), at most
/// [`MAX_FILE_BYTES`](pipelab_lang::files::MAX_FILE_BYTES), within the
/// time budget, and UTF-8 (the first bad byte is an error at its line and
/// column). `what` names the file in errors (`configuration`, `traffic
/// file`). The interpreter's lock is released while it reads.
#[pyfunction]
fn read_text(py: Python<'_>, path: PathBuf, what: &str) -> PyResult<String> {
    let read = py.detach(|| pipelab_lang::files::read_named_bytes(&path));
    let bytes = read.map_err(|e| error(format!("error: cannot read {what} {e}")))?;
    match pipelab_lang::source::decode(&bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let name = path.display().to_string();
            // The line is shown only when the file starts as a
            // configuration does (as the CLI shows it): nothing is quoted
            // from a file of another kind.
            let text = String::from_utf8_lossy(&bytes);
            let first = text
                .lines()
                .find_map(|l| l.split('#').next().unwrap_or("").split_whitespace().next());
            let text = match first {
                Some(word) if pipelab_lang::parser::is_command(word) => text,
                _ => Default::default(),
            };
            let message = format!(
                "{}1 error in {name}; nothing was applied",
                e.render(&name, &text)
            );
            Err(error_at(py, message, e.line, e.column))
        }
    }
}

/// The running emulations, as `pipelab list --json` prints them (a JSON
/// array of the registry's entries).
#[pyfunction]
fn emulations_json() -> PyResult<String> {
    serde_json::to_string(&Registry::new().list())
        .map_err(|e| error(format!("error: cannot encode the list: {e}")))
}

/// A client of the control protocol, bound to one emulation's socket.
///
/// `target` names a running emulation (as `pipelab --target NAME`: the
/// registry gives its socket, an unknown name is an error at once);
/// `socket` is a control socket's path; neither: pipelabd's usual
/// socket. `user` (root only) acts in that user's block. Each request
/// opens a connection, as each `pipelab` command does.
#[pyclass(module = "pipelab._pipelab", frozen)]
struct Client {
    /// The socket requests go to.
    socket: PathBuf,
    /// The emulation's name, if one was given.
    target: Option<String>,
    /// Root only: act in this user's block.
    user: Option<String>,
}

impl Client {
    /// One request and its response; a refusal is an error.
    fn call(&self, py: Python<'_>, op: Op) -> PyResult<Response> {
        let socket = self.socket.clone();
        let user = self.user.clone();
        let answer = py.detach(move || {
            let mut c = ControlClient::connect(&socket)?;
            c.request(user.as_deref(), op)
        });
        let resp = answer.map_err(|e| match &self.target {
            Some(name) => error(format!("error: emulation '{name}': {e}")),
            None => error(format!("error: {e} (is pipelabd running?)")),
        })?;
        if resp.ok {
            Ok(resp)
        } else {
            Err(error(format!(
                "error: {}",
                resp.error.as_deref().unwrap_or("refused")
            )))
        }
    }
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (target=None, socket=None, user=None))]
    fn new(
        target: Option<String>,
        socket: Option<PathBuf>,
        user: Option<String>,
    ) -> PyResult<Self> {
        let path = match (&target, socket) {
            (Some(_), Some(_)) => {
                return Err(error(
                    "error: give a target or a socket, not both (a target names its socket)",
                ))
            }
            (Some(name), None) => Registry::new()
                .resolve(name)
                .map_err(|e| error(format!("error: {e}")))?,
            (None, Some(s)) => s,
            (None, None) => PathBuf::from(pipelab_control::DEFAULT_SOCKET),
        };
        Ok(Client {
            socket: path,
            target,
            user,
        })
    }

    /// The control socket requests go to.
    #[getter]
    fn socket(&self) -> PathBuf {
        self.socket.clone()
    }

    /// The emulation's name, or `None` for pipelabd's socket.
    #[getter]
    fn target(&self) -> Option<String> {
        self.target.clone()
    }

    /// Commands of the language (or a topology's), one per line, applied
    /// all or nothing: the reply's text.
    fn exec(&self, py: Python<'_>, script: String) -> PyResult<String> {
        Ok(self.call(py, Op::Exec { script })?.output)
    }

    /// Replaces the whole configuration with `script` (all or nothing).
    fn restore(&self, py: Python<'_>, script: String) -> PyResult<String> {
        Ok(self.call(py, Op::Restore { script })?.output)
    }

    /// The whole configuration, as a script.
    fn save(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.call(py, Op::Save)?.output)
    }

    /// The counters, as JSON (`pipelab stats --json`).
    fn stats_json(&self, py: Python<'_>) -> PyResult<String> {
        let data = self.call(py, Op::Stats)?.data.unwrap_or_default();
        Ok(data.to_string())
    }

    fn __repr__(&self) -> String {
        match &self.target {
            Some(t) => format!("Client(target={t:?})"),
            None => format!("Client(socket={:?})", self.socket.display().to_string()),
        }
    }
}

/// The extension module.
#[pymodule]
fn _pipelab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(sim_json, m)?)?;
    m.add_function(wrap_pyfunction!(read_text, m)?)?;
    m.add_function(wrap_pyfunction!(emulations_json, m)?)?;
    m.add_class::<Client>()?;
    Ok(())
}
