//! The journal: the committed state in one file, replaced atomically.
//!
//! Each commit writes `state.json.tmp` in the state directory, fsyncs it,
//! renames it over `state.json` and fsyncs the directory, so that after a
//! crash (even `kill -9` or a power cut) the file holds either the old or
//! the new state, never a mix. The blocks are stored as scripts of the
//! language (`to_script`), so the file is readable and survives changes of
//! the in-memory types.
//!
//! A state directory belongs to one daemon at a time: [`Journal::open`]
//! takes an exclusive advisory lock (`flock`) on `lock` in it, held for as
//! long as the [`Journal`] lives and released by the kernel when the
//! process ends however it ends (`kill -9` included). The file holds the
//! holder's pid, so a second daemon on the same directory is refused with
//! [`JournalError::InUse`] naming it: two daemons writing one journal
//! would each overwrite the other's commits.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::fcntl::{Flock, FlockArg};

use pipelab_lang::Config;
use serde::{Deserialize, Serialize};

use crate::state::{Block, Limits, NetEntry, State, UserBlock};

/// The journal format version.
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct BlockFile {
    script: String,
    #[serde(default)]
    net: BTreeMap<String, NetEntry>,
}

#[derive(Serialize, Deserialize)]
struct UserFile {
    uid: u32,
    slot: u32,
    #[serde(flatten)]
    block: BlockFile,
}

#[derive(Serialize, Deserialize)]
struct LimitFile {
    uid: u32,
    #[serde(flatten)]
    limits: Limits,
}

#[derive(Serialize, Deserialize)]
struct StateFile {
    format: u32,
    root: BlockFile,
    #[serde(default)]
    users: Vec<UserFile>,
    #[serde(default)]
    limits: Vec<LimitFile>,
}

fn block_file(b: &Block) -> BlockFile {
    BlockFile {
        script: b.cfg.to_script(),
        net: b.net.clone(),
    }
}

fn load_block(f: BlockFile, what: &str, path: &Path) -> Result<Block, JournalError> {
    let mut cfg = Config::new();
    cfg.apply_script(&f.script)
        .map_err(|errors| JournalError::Block {
            path: path.to_path_buf(),
            what: what.to_string(),
            errors,
            script: f.script.clone(),
        })?;
    Ok(Block { cfg, net: f.net })
}

/// Why a state directory cannot be opened, or its journal read or
/// written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The directory cannot be created.
    #[error("cannot create state directory {}: {source}", dir.display())]
    Create {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The lock file cannot be opened, locked or written.
    #[error("cannot lock state directory {} ({}): {source}", dir.display(), path.display())]
    Lock {
        /// The state directory.
        dir: PathBuf,
        /// Its lock file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another process holds the directory's lock.
    #[error(
        "state directory {} is in use by {holder} (lock file {}): one daemon owns a state directory; stop that one or give this one another --state-dir",
        dir.display(),
        path.display()
    )]
    InUse {
        /// The state directory.
        dir: PathBuf,
        /// Its lock file.
        path: PathBuf,
        /// Who holds it: `pid N (NAME)`, as its lock file says.
        holder: String,
    },
    /// The journal exists but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The journal file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The journal is not JSON of the journal's shape.
    #[error("{}: not a pipelabd journal: {source}", path.display())]
    NotJournal {
        /// The journal file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The journal is of another format.
    #[error(
        "{}: journal format {found} is not supported (this pipelabd reads format {FORMAT})",
        path.display()
    )]
    Format {
        /// The journal file.
        path: PathBuf,
        /// Its format.
        found: u32,
    },
    /// A block of the journal does not apply (the language changed, or
    /// the file was edited).
    #[error(
        "{}: the {what} configuration does not apply:\n{}",
        path.display(),
        pipelab_lang::render_errors(errors, what, script)
    )]
    Block {
        /// The journal file.
        path: PathBuf,
        /// Whose block: `root`, `uid N`.
        what: String,
        /// The errors of its script.
        errors: Vec<pipelab_lang::ScriptError>,
        /// Its script.
        script: String,
    },
    /// The state cannot be encoded.
    #[error("cannot encode the journal: {0}")]
    Encode(serde_json::Error),
    /// The journal cannot be written.
    #[error("cannot write the journal in {}: {source}", dir.display())]
    Write {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The journal in a state directory, which it owns (see the module's
/// documentation) for as long as it lives (clones share the lock).
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
    _lock: Arc<Flock<File>>,
}

/// The lock file's name in a state directory.
pub const LOCK_FILE: &str = "lock";

/// `pid N (NAME)` of the holder a lock file names.
fn holder(mut file: &File) -> String {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    match text.trim().parse::<u32>() {
        Ok(pid) => match fs::read_to_string(format!("/proc/{pid}/comm")) {
            Ok(name) => format!("pid {pid} ({})", name.trim()),
            Err(_) => format!("pid {pid}"),
        },
        Err(_) => "another process".to_string(),
    }
}

impl Journal {
    /// The journal in `dir` (created, mode 0700, if missing), locked for
    /// this process; refused if another process holds it.
    pub fn open(dir: &Path) -> Result<Journal, JournalError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| JournalError::Create {
                dir: dir.to_path_buf(),
                source,
            })?;
        let path = dir.join(LOCK_FILE);
        let lock_err = |source| JournalError::Lock {
            dir: dir.to_path_buf(),
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(lock_err)?;
        let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => {
                return Err(JournalError::InUse {
                    dir: dir.to_path_buf(),
                    path: path.clone(),
                    holder: holder(&file),
                })
            }
            Err((_, e)) => return Err(lock_err(std::io::Error::from(e))),
        };
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.rewind()?;
            writeln!(f, "{}", std::process::id())
        };
        write(&mut lock).map_err(lock_err)?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            _lock: Arc::new(lock),
        })
    }

    /// The journal file.
    pub fn path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    /// Whether a state has been committed here.
    pub fn has_state(&self) -> bool {
        self.path().exists()
    }

    /// The committed state, or an empty one if there is no journal yet.
    /// A journal that cannot be read or applied is an error: the daemon
    /// must not start with less than what was committed.
    pub fn load(&self) -> Result<State, JournalError> {
        let path = self.path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(source) => return Err(JournalError::Read { path, source }),
        };
        let f: StateFile = match serde_json::from_str(&text) {
            Ok(f) => f,
            Err(source) => return Err(JournalError::NotJournal { path, source }),
        };
        if f.format != FORMAT {
            return Err(JournalError::Format {
                path,
                found: f.format,
            });
        }
        let mut state = State {
            root: load_block(f.root, "root", &path)?,
            ..State::default()
        };
        for u in f.users {
            let block = load_block(u.block, &format!("uid {}", u.uid), &path)?;
            state.users.insert(
                u.uid,
                UserBlock {
                    slot: u.slot,
                    block,
                },
            );
        }
        for l in f.limits {
            state.limits.insert(l.uid, l.limits);
        }
        Ok(state)
    }

    /// Commits `state`: temp file, fsync, rename, fsync of the directory.
    pub fn save(&self, state: &State) -> Result<(), JournalError> {
        let f = StateFile {
            format: FORMAT,
            root: block_file(&state.root),
            users: state
                .users
                .iter()
                .map(|(&uid, u)| UserFile {
                    uid,
                    slot: u.slot,
                    block: block_file(&u.block),
                })
                .collect(),
            limits: state
                .limits
                .iter()
                .map(|(&uid, &limits)| LimitFile { uid, limits })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&f).map_err(JournalError::Encode)?;
        let tmp = self.dir.join("state.json.tmp");
        let write = || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            fs::rename(&tmp, self.path())?;
            File::open(&self.dir)?.sync_all()
        };
        write().map_err(|source| JournalError::Write {
            dir: self.dir.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Target;

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        assert_eq!(j.load().unwrap(), State::default());
        let s = State::default();
        let s = s
            .exec(Target::Root, "pipe 1 config bw 1Mbit/s\nadd 100 pipe 1")
            .unwrap()
            .next;
        let s = s
            .exec(Target::User(1001), "pipe 3 config delay 5ms\nadd 7 pipe 3")
            .unwrap()
            .next;
        let s = s
            .netconfig(
                Target::User(1001),
                "client 80@10.0.0.0/8 SHARED bw 1Mbit/s",
                false,
            )
            .unwrap()
            .next;
        let s = s.limit("user 1002 pipes 3", &|_| Ok(1002)).unwrap().next;
        j.save(&s).unwrap();
        assert_eq!(j.load().unwrap(), s);
        assert!(!dir.path().join("state.json.tmp").exists());
        // A damaged journal is an error, not an empty state.
        fs::write(j.path(), "{").unwrap();
        let e = j.load().unwrap_err();
        assert!(matches!(e, JournalError::NotJournal { .. }), "{e}");
        assert!(e.to_string().contains("not a pipelabd journal"), "{e}");
    }

    /// Two daemons on one state directory lost each other's commits: the
    /// second is refused, naming the holder, until the first is gone.
    #[test]
    fn a_state_directory_has_one_owner() {
        let dir = tempfile::tempdir().unwrap();
        let first = Journal::open(dir.path()).unwrap();
        let e = Journal::open(dir.path()).unwrap_err();
        let me = std::process::id();
        assert!(
            matches!(&e, JournalError::InUse { holder, .. } if holder.starts_with(&format!("pid {me} ("))),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(&format!(
                "state directory {} is in use by pid {me} (",
                dir.path().display()
            )) && text.contains("one daemon owns a state directory"),
            "{text}"
        );
        // A clone shares the lock; the last one gone releases it.
        let clone = first.clone();
        drop(first);
        assert!(Journal::open(dir.path()).is_err());
        drop(clone);
        let again = Journal::open(dir.path()).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(),
            format!("{me}\n")
        );
        drop(again);
    }
}
