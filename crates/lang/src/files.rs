//! The files a configuration names, and the text formats they hold.
//!
//! Two halves, one per concern:
//!
//! * **Reading a file** ([`read_named_file`]): every file a configuration
//!   or a topology names (a pipe's `profile`, `bw trace:`, `loss trace:`,
//!   `distribution file:`, `timevarying`, and GML/TOML topologies) is read
//!   by this one function. It refuses anything that is not a regular file
//!   (a FIFO, a device such as `/dev/zero`, a directory, a socket) without
//!   blocking on it, refuses a file larger than [`MAX_FILE_BYTES`], reads
//!   at most that many bytes within [`READ_TIME_BUDGET`], and refuses text
//!   that is not UTF-8, naming the byte offset. Where a path is resolved
//!   (relative to a configuration file, absolute only for the daemon) is
//!   the caller's business.
//!
//! * **Reading a format** (the `parse_*` functions): the text of a
//!   distribution file, a loss trace, a Mahimahi bandwidth trace, a
//!   Dummynet MAC profile or a time-varying Markov graph, turned into the
//!   engine's validated object. Every value with a unit is read by
//!   [`crate::units`], so a rate, a duration or a probability is spelled
//!   (and refused, with the same hint) as in a configuration line; the
//!   engine's typed constructors check the invariants. Errors name the line
//!   ([`TextError`]); the caller adds the file's name.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration as StdDuration, Instant as StdInstant};

/// The largest file a configuration may name: 64 MiB. Larger files are
/// refused before anything is read (and a file that grows past it while
/// being read is refused too).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// How long reading one named file may take. Reading stops, and the file
/// is refused, when the budget is spent (a regular file on a stalled
/// network file system, say).
pub const READ_TIME_BUDGET: StdDuration = StdDuration::from_secs(10);

/// Bytes read at a time, between two looks at the time budget.
const CHUNK: usize = 1 << 20;

/// Why a named file cannot be read. Each variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file cannot be opened or its metadata read (missing, no
    /// permission, ...).
    #[error("'{path}': {source}")]
    Open {
        /// The path as given.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// The path names something other than a regular file.
    #[error("'{path}': {kind}, not a regular file")]
    NotRegular {
        /// The path as given.
        path: String,
        /// What it is: `a FIFO`, `a character device`, `a directory`, ...
        kind: &'static str,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("'{path}': {size} bytes, more than the limit of {cap} bytes ({} MiB)", cap >> 20)]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size in bytes (at least, when it grew while being read).
        size: u64,
        /// The limit, [`MAX_FILE_BYTES`].
        cap: u64,
    },
    /// Reading failed part way.
    #[error("'{path}': reading failed: {source}")]
    Read {
        /// The path as given.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// Reading took longer than [`READ_TIME_BUDGET`].
    #[error("'{path}': reading took longer than {}s; giving up", budget.as_secs())]
    TooSlow {
        /// The path as given.
        path: String,
        /// The budget, [`READ_TIME_BUDGET`].
        budget: StdDuration,
    },
    /// The bytes are not UTF-8 text.
    #[error("'{path}': not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The path as given.
        path: String,
        /// The offset of the first byte that is not valid UTF-8.
        offset: usize,
    },
}

/// What a file type is, in words, for anything but a regular file.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Reads the text of a file a configuration or a topology names.
///
/// The file is opened with `O_NONBLOCK` (so that opening a FIFO cannot
/// wait for a writer) and its descriptor's type checked (`fstat`): only a
/// regular file is read. It must hold at most [`MAX_FILE_BYTES`] bytes,
/// be read within [`READ_TIME_BUDGET`], and be UTF-8 text. `path` is used
/// as given (the caller resolves relative paths); errors name it.
pub fn read_named_file(path: impl AsRef<Path>) -> Result<String, FileError> {
    let path = path.as_ref();
    let name = || path.display().to_string();
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| {
            // A Unix socket cannot be opened at all (ENXIO): say what it is.
            match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => FileError::NotRegular {
                    path: name(),
                    kind: kind_of(m.file_type()),
                },
                _ => FileError::Open {
                    path: name(),
                    source,
                },
            }
        })?;
    let meta = file.metadata().map_err(|source| FileError::Open {
        path: name(),
        source,
    })?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: name(),
            kind: kind_of(meta.file_type()),
        });
    }
    let too_large = |size: u64| FileError::TooLarge {
        path: name(),
        size,
        cap: MAX_FILE_BYTES,
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let deadline = StdInstant::now() + READ_TIME_BUDGET;
    // Files under /proc say 0 bytes and still have text: read until the
    // end, never past the cap (one byte more tells a file that grew).
    let mut bytes: Vec<u8> = Vec::with_capacity(meta.len() as usize);
    let mut limited = (&file).take(MAX_FILE_BYTES + 1);
    let mut chunk = vec![0u8; CHUNK];
    loop {
        if StdInstant::now() > deadline {
            return Err(FileError::TooSlow {
                path: name(),
                budget: READ_TIME_BUDGET,
            });
        }
        match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(FileError::Read {
                    path: name(),
                    source,
                })
            }
        }
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
        path: name(),
        offset: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(path: &Path) -> String {
        match read_named_file(path) {
            Ok(t) => panic!("{} was read ({} bytes)", path.display(), t.len()),
            Err(e) => e.to_string(),
        }
    }

    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("pipelab-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    /// Pass proves: a regular UTF-8 file is read whole.
    #[test]
    fn reads_a_regular_file() {
        let dir = temp_dir("ok");
        let f = dir.join("t.txt");
        std::fs::write(&f, "1ms\n2ms\n").expect("write");
        assert_eq!(read_named_file(&f).expect("read"), "1ms\n2ms\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: devices are refused before a byte is read, so
    /// `/dev/zero` and `/dev/urandom` cannot grow memory without bound.
    #[test]
    fn devices_are_refused() {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            assert_eq!(
                refused(Path::new(dev)),
                format!("'{dev}': a character device, not a regular file")
            );
        }
    }

    /// Pass proves: a FIFO with no writer is refused at once (the open does
    /// not wait for a writer, the read never starts).
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = temp_dir("fifo");
        let f = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&f)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let t0 = StdInstant::now();
        assert_eq!(
            refused(&f),
            format!("'{}': a FIFO, not a regular file", f.display())
        );
        assert!(t0.elapsed() < StdDuration::from_secs(2));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: directories, sockets and missing files are refused,
    /// each saying why.
    #[test]
    fn directories_sockets_and_missing_files_are_refused() {
        let dir = temp_dir("dir");
        assert_eq!(
            refused(&dir),
            format!("'{}': a directory, not a regular file", dir.display())
        );
        let sock = dir.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        assert_eq!(
            refused(&sock),
            format!("'{}': a socket, not a regular file", sock.display())
        );
        let missing = dir.join("missing");
        assert!(refused(&missing).starts_with(&format!("'{}': ", missing.display())));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: a file over the cap is refused from its size alone (a
    /// sparse file: nothing is read), naming the size and the cap.
    #[test]
    fn a_file_over_the_cap_is_refused() {
        let dir = temp_dir("big");
        let f = dir.join("big.trace");
        let file = File::create(&f).expect("create");
        file.set_len(MAX_FILE_BYTES + 1).expect("set_len");
        assert_eq!(
            refused(&f),
            format!(
                "'{}': 67108865 bytes, more than the limit of 67108864 bytes (64 MiB)",
                f.display()
            )
        );
        file.set_len(MAX_FILE_BYTES).expect("set_len");
        assert_eq!(
            read_named_file(&f).map(|t| t.len() as u64).ok(),
            Some(MAX_FILE_BYTES)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Pass proves: bytes that are not UTF-8 are refused with the offset of
    /// the first bad byte.
    #[test]
    fn invalid_utf8_is_refused_with_its_offset() {
        let dir = temp_dir("utf8");
        let f = dir.join("bad.txt");
        std::fs::write(&f, b"1ms\n2m\xffs\n").expect("write");
        assert_eq!(
            refused(&f),
            format!(
                "'{}': not UTF-8 text (invalid byte at offset 6)",
                f.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
