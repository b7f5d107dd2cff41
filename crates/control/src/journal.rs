//! The journal: the committed state in one file, replaced atomically.
//!
//! Each commit writes `state.json.tmp` in the state directory, fsyncs it,
//! renames it over `state.json` and fsyncs the directory, so that after a
//! crash (even `kill -9` or a power cut) the file holds either the old or
//! the new state, never a mix. The blocks are stored as scripts of the
//! language (`to_script`), so the file is readable and survives changes of
//! the in-memory types.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

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

fn load_block(f: BlockFile, what: &str, path: &Path) -> Result<Block, String> {
    let mut cfg = Config::new();
    cfg.apply_script(&f.script).map_err(|errs| {
        let mut m = format!(
            "{}: the {what} configuration does not apply:\n",
            path.display()
        );
        for e in errs {
            m.push_str(&e.render(what, &f.script));
        }
        m
    })?;
    Ok(Block { cfg, net: f.net })
}

/// The journal in a state directory.
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    /// The journal in `dir` (created, mode 0700, if missing).
    pub fn open(dir: &Path) -> Result<Journal, String> {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create state directory {}: {e}", dir.display()))?;
        Ok(Journal {
            dir: dir.to_path_buf(),
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
    pub fn load(&self) -> Result<State, String> {
        let path = self.path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let f: StateFile = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a pipelabd journal: {e}", path.display()))?;
        if f.format != FORMAT {
            return Err(format!(
                "{}: journal format {} is not supported (this pipelabd reads format {FORMAT})",
                path.display(),
                f.format
            ));
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
    pub fn save(&self, state: &State) -> Result<(), String> {
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
        let text = serde_json::to_string_pretty(&f)
            .map_err(|e| format!("cannot encode the journal: {e}"))?;
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
        write().map_err(|e| format!("cannot write the journal in {}: {e}", self.dir.display()))
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
        assert!(j.load().unwrap_err().contains("not a pipelabd journal"));
    }
}
