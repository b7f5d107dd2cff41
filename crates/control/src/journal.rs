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

use crate::state::{Block, Held, Limits, NetEntry, State, Target, UserBlock};

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

/// A block held at start-up ([`Held`]), kept as the journal had it.
#[derive(Serialize, Deserialize)]
struct HeldFile {
    uid: u32,
    script: String,
    #[serde(default)]
    net: BTreeMap<String, NetEntry>,
    why: String,
}

#[derive(Serialize, Deserialize)]
struct StateFile {
    format: u32,
    root: BlockFile,
    #[serde(default)]
    users: Vec<UserFile>,
    #[serde(default)]
    limits: Vec<LimitFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    held: Vec<HeldFile>,
}

fn block_file(b: &Block) -> BlockFile {
    BlockFile {
        script: b.cfg.to_script(),
        net: b.net.clone(),
    }
}

/// A block's script applied, or why not (its errors, each at its line).
fn load_block(f: BlockFile, what: &str) -> Result<Block, Held> {
    let mut cfg = Config::new();
    match cfg.apply_script(&f.script) {
        Ok(_) => Ok(Block { cfg, net: f.net }),
        Err(errors) => Err(Held {
            why: pipelab_lang::render_errors(&errors, what, &f.script),
            script: f.script,
            net: f.net,
        }),
    }
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
    /// The state cannot be encoded.
    #[error("cannot encode the journal: {0}")]
    Encode(serde_json::Error),
    /// The state directory is not the daemon's own.
    #[error("state directory {}: {why}", dir.display())]
    NotPrivate {
        /// The state directory.
        dir: PathBuf,
        /// Why not.
        why: String,
    },
    /// The journal cannot be written.
    #[error("cannot write the journal in {}: {source}", dir.display())]
    Write {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `O_NOFOLLOW`, for the files of the state directory.
fn libc_nofollow() -> i32 {
    nix::fcntl::OFlag::O_NOFOLLOW.bits()
}

/// A reader's error without the path it starts with (the message names
/// the path once, itself).
fn strip_path(text: &str, path: &Path) -> String {
    let prefix = format!("'{}': ", path.display());
    text.strip_prefix(&prefix).unwrap_or(text).to_string()
}

/// Who `uid` is, in words: `root`, `uid 1001 (alice)`.
pub fn who(uid: u32) -> String {
    if uid == 0 {
        return "root".to_string();
    }
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("uid {uid} ({})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// What the daemon says of a held block at start-up.
pub fn held_notice(path: &Path, uid: u32, h: &Held) -> String {
    format!(
        "{}: the configuration of {} is held, not applied:\n{}\nit is kept (journaled, shown by `pipelab save` and `pipelab stats`) and tried again at the next start, until its owner replaces it with `pipelab restore FILE`",
        path.display(),
        who(uid),
        h.why.trim_end()
    )
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
    ///
    /// The directory must be the daemon's own
    /// ([`crate::paths::check_private_dir`]: not a symbolic link, of this
    /// user, writable by nobody else), and its files are opened without
    /// following links: nobody else can make the daemon write elsewhere.
    pub fn open(dir: &Path) -> Result<Journal, JournalError> {
        use std::os::unix::fs::OpenOptionsExt;
        crate::paths::make_dirs(dir, 0o700).map_err(|source| JournalError::Create {
            dir: dir.to_path_buf(),
            source,
        })?;
        crate::paths::check_private_dir(dir).map_err(|why| JournalError::NotPrivate {
            dir: dir.to_path_buf(),
            why,
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
            .custom_flags(libc_nofollow())
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

    /// The committed state, or an empty one if there is no journal yet,
    /// and what did not load, in words (for the daemon to say loudly).
    ///
    /// What applies is loaded; a block that does not (its script no
    /// longer parses, or a limit refuses it) is held ([`Held`]), kept in
    /// the state for its owner. A journal that cannot be read at all
    /// (not a regular file, such as a FIFO, which is never waited for;
    /// not JSON; another format) is moved aside to
    /// `state.json.unreadable.SECONDS`, kept for root, and the daemon
    /// starts empty.
    pub fn load(&self) -> Result<(State, Vec<String>), JournalError> {
        let path = self.path();
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((State::default(), Vec::new()))
            }
            Err(source) => return Err(JournalError::Read { path, source }),
            Ok(_) => {}
        }
        let unreadable = |why: String| -> Result<(State, Vec<String>), JournalError> {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let aside = self.dir.join(format!("state.json.unreadable.{secs}"));
            fs::rename(&path, &aside).map_err(|source| JournalError::Read {
                path: path.clone(),
                source,
            })?;
            Ok((
                State::default(),
                vec![format!(
                    "{}: {why}; nothing of it was applied: it is kept as {} for root to look at, and pipelabd starts with an empty configuration",
                    path.display(),
                    aside.display()
                )],
            ))
        };
        // The checked reader: a FIFO or a device is refused at once,
        // never waited for; the size is capped.
        let text = match pipelab_lang::files::read_named_file(&path) {
            Ok(t) => t,
            Err(e @ pipelab_lang::files::FileError::Open { .. }) => {
                return Err(JournalError::Read {
                    path,
                    source: std::io::Error::other(e.to_string()),
                })
            }
            Err(e) => return unreadable(strip_path(&e.to_string(), &path)),
        };
        let f: StateFile = match serde_json::from_str(&text) {
            Ok(f) => f,
            Err(e) => return unreadable(format!("not a pipelabd journal: {e}")),
        };
        if f.format != FORMAT {
            return unreadable(format!(
                "journal format {} is not supported (this pipelabd reads format {FORMAT})",
                f.format
            ));
        }
        let mut state = State::default();
        for l in f.limits {
            state.limits.insert(l.uid, l.limits);
        }
        match load_block(f.root, "root") {
            Ok(b) => state.root = b,
            Err(h) => {
                state.held.insert(0, h);
            }
        }
        for u in f.users {
            match load_block(u.block, &format!("uid {}", u.uid)) {
                Ok(block) => {
                    state.users.insert(
                        u.uid,
                        UserBlock {
                            slot: u.slot,
                            block,
                        },
                    );
                }
                Err(h) => {
                    state.held.insert(u.uid, h);
                }
            }
        }
        // Blocks held at an earlier start are tried again, where their
        // owner has not made another since.
        for h in f.held {
            let has_block = if h.uid == 0 {
                state.root != Block::default()
            } else {
                state.users.contains_key(&h.uid)
            };
            let what = if h.uid == 0 {
                "root".to_string()
            } else {
                format!("uid {}", h.uid)
            };
            let keep = Held {
                script: h.script.clone(),
                net: h.net.clone(),
                why: h.why.clone(),
            };
            if has_block || state.held.contains_key(&h.uid) {
                state.held.entry(h.uid).or_insert(keep);
                continue;
            }
            let block = load_block(
                BlockFile {
                    script: h.script,
                    net: h.net,
                },
                &what,
            );
            let target = if h.uid == 0 {
                Target::Root
            } else {
                Target::User(h.uid)
            };
            match block.map(|b| state.with_block(target, b)) {
                Ok(Ok(next)) => state = next,
                Ok(Err(e)) => {
                    state.held.insert(
                        h.uid,
                        Held {
                            why: e.to_string(),
                            ..keep
                        },
                    );
                }
                Err(held) => {
                    state.held.insert(h.uid, held);
                }
            }
        }
        let notices = state
            .held
            .iter()
            .map(|(&uid, h)| held_notice(&path, uid, h))
            .collect();
        Ok((state, notices))
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
            held: state
                .held
                .iter()
                .map(|(&uid, h)| HeldFile {
                    uid,
                    script: h.script.clone(),
                    net: h.net.clone(),
                    why: h.why.clone(),
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&f).map_err(JournalError::Encode)?;
        let tmp = self.dir.join("state.json.tmp");
        let write = || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt;
            // Never through a link (the directory is the daemon's own:
            // nobody else can put one there, nor a second name).
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc_nofollow())
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
        assert_eq!(j.load().unwrap(), (State::default(), Vec::new()));
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
        assert_eq!(j.load().unwrap(), (s, Vec::new()));
        assert!(!dir.path().join("state.json.tmp").exists());
    }

    /// A damaged journal, or a FIFO in its place, is moved aside (kept,
    /// named in the notice) and the state starts empty; a FIFO is not
    /// waited for.
    #[test]
    fn an_unreadable_journal_is_kept_aside_and_the_state_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let garbage = |p: &Path| fs::write(p, "{").unwrap();
        let fifo = |p: &Path| {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap()
        };
        let other = |p: &Path| fs::write(p, r#"{"format": 7, "root": {"script": ""}}"#).unwrap();
        type Make<'a> = &'a dyn Fn(&Path);
        let cases: [(&str, Make); 3] = [
            ("not a pipelabd journal", &garbage),
            ("a FIFO, not a regular file", &fifo),
            ("journal format 7 is not supported", &other),
        ];
        for (what, make) in cases {
            make(&j.path());
            let t0 = std::time::Instant::now();
            let (state, notices) = j.load().unwrap();
            assert!(t0.elapsed() < std::time::Duration::from_secs(2), "{what}");
            assert_eq!(state, State::default());
            assert_eq!(notices.len(), 1, "{notices:?}");
            assert!(notices[0].contains(what), "{}", notices[0]);
            assert!(
                notices[0].contains("state.json.unreadable."),
                "{}",
                notices[0]
            );
            assert!(!j.path().exists());
            let aside: Vec<_> = fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with("state.json.unreadable.")
                })
                .collect();
            assert!(!aside.is_empty());
            for a in aside {
                fs::remove_file(a.path()).unwrap();
            }
        }
    }

    /// A block whose script no longer applies is held, not dropped and not
    /// fatal: the other blocks load, the held one is journaled again and
    /// its notice names the user and the line.
    #[test]
    fn a_block_that_does_not_apply_is_held_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        fs::write(
            j.path(),
            r#"{"format": 1, "root": {"script": "pipe 1 config bw 1Mbit/s\n"},
                "users": [{"uid": 1001, "slot": 0, "script": "pipe 1 config delay 5ms\npipe 2 config bogus 3\n"}]}"#,
        )
        .unwrap();
        let (state, notices) = j.load().unwrap();
        assert_eq!(state.root.cfg.pipes.len(), 1);
        assert!(state.users.is_empty());
        let held = &state.held[&1001];
        assert!(held.script.contains("bogus 3"));
        assert_eq!(notices.len(), 1);
        assert!(
            notices[0].contains("the configuration of uid 1001"),
            "{}",
            notices[0]
        );
        assert!(notices[0].contains(":2:"), "{}", notices[0]);
        // Journaled again as held, and loaded back the same.
        j.save(&state).unwrap();
        let (again, _) = j.load().unwrap();
        assert_eq!(again, state);
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
