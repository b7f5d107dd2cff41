//! Why a live mode could not do what it was asked, typed.

use std::io;

/// Why a live mode refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ModeError {
    /// The configuration cannot be lowered (a pipe's parameters, a file it
    /// names).
    #[error(transparent)]
    Lower(#[from] pipelab_emu::LowerError),
    /// A reference of the spec does not resolve.
    #[error(transparent)]
    Spec(#[from] pipelab_emu::SpecError),
    /// A topology refused a change.
    #[error(transparent)]
    Topo(#[from] pipelab_topo::TopoError),
    /// A topology command could not be run (the command grammar's message,
    /// with its position).
    #[error("{0}")]
    Command(String),
    /// The emulation's runner has stopped (it ended on an error, or was
    /// stopped).
    #[error("the emulation's runner has stopped")]
    Stopped,
    /// The name could not be registered.
    #[error(transparent)]
    Registry(#[from] pipelab_control::RegistryError),
    /// The control protocol could not be served.
    #[error(transparent)]
    Serve(#[from] pipelab_control::ServeError),
    /// The host ledger refused (an interface in use, no free subnet) or
    /// could not be written.
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
    /// The process lacks root or the capabilities the mode needs (the
    /// message of [`crate::privilege::require`]).
    #[error("{0}")]
    Privilege(String),
    /// The operating system refused.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<ModeError> for io::Error {
    fn from(e: ModeError) -> io::Error {
        match e {
            ModeError::Io(e) => e,
            ModeError::Ledger(e) => e.into(),
            ModeError::Lower(_) | ModeError::Spec(_) | ModeError::Command(_) => {
                io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
            }
            ModeError::Privilege(m) => io::Error::new(io::ErrorKind::PermissionDenied, m),
            other => io::Error::other(other.to_string()),
        }
    }
}
