//! The files one command writes, checked with its other flags before any
//! file is opened: two options that write may not name one file (both
//! would write it, interleaved, or one truncating the other), nor may an
//! option that writes name a file the command reads (it would be
//! overwritten).
//!
//! Two paths name one file when they reach one inode (an existing file,
//! by its device and inode number, through any links) or, for a file
//! not made yet, when their directories are one directory (canonical
//! path) and their last components are equal. Nothing is created or
//! opened here.

use std::path::{Path, PathBuf};

/// What a path given to a command does with its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// The command writes it (`--pcap`, `--stats`, `-o`).
    Writes,
    /// The command reads it (a configuration, a topology, a report).
    Reads,
}

/// A path given to a command: the option (or argument) that names it, as
/// the user wrote it (`--pcap`, `CONFIG`), and what is done with it.
pub type Named<'a> = (&'static str, Option<&'a Path>, Use);

/// Two paths that name one file, at least one of them written.
#[derive(Debug, thiserror::Error)]
#[error("error: {first} and {second} name the same file ({}): {}", path.display(), why(*second_use))]
pub struct SameFile {
    /// The option named first.
    pub first: &'static str,
    /// The option named second.
    pub second: &'static str,
    /// What the second does with the file.
    pub second_use: Use,
    /// The path as the second option gave it.
    pub path: PathBuf,
}

fn why(second: Use) -> &'static str {
    match second {
        Use::Writes => "give each output a file of its own",
        Use::Reads => "an output may not overwrite what the command reads",
    }
}

/// Refuse two of `paths` that name one file where at least one of them
/// is written (options without a path are skipped).
pub fn check(paths: &[Named<'_>]) -> Result<(), SameFile> {
    let known: Vec<(&'static str, &Path, Use, Identity)> = paths
        .iter()
        .filter_map(|&(flag, p, u)| {
            let p = p?;
            Some((flag, p, u, identity(p)?))
        })
        .collect();
    for (i, a) in known.iter().enumerate() {
        for b in &known[i + 1..] {
            if (a.2 == Use::Writes || b.2 == Use::Writes) && a.3 == b.3 {
                // The output first, so the message says what would be
                // overwritten.
                let (first, second) = if a.2 == Use::Writes { (a, b) } else { (b, a) };
                return Err(SameFile {
                    first: first.0,
                    second: second.0,
                    second_use: second.2,
                    path: second.1.to_path_buf(),
                });
            }
        }
    }
    Ok(())
}

/// Which file a path reaches.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    /// An existing file: device and inode.
    Inode(u64, u64),
    /// A file not made yet: its directory's canonical path and its name.
    Path(PathBuf),
}

/// The most symbolic links followed to the file a dangling link would
/// create (as the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Which file `path` reaches, or `None` if that cannot be told (a path
/// that ends in `..`, links in a loop): such a path is not compared; the
/// open that follows refuses it if it is not writable.
fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    let mut path = std::path::absolute(path).ok()?;
    for _ in 0..MAX_LINKS {
        if let Ok(m) = std::fs::metadata(&path) {
            return Some(Identity::Inode(m.dev(), m.ino()));
        }
        // A link to a file not made yet creates that file when written
        // through.
        match std::fs::read_link(&path) {
            Ok(target) => {
                let dir = path.parent()?.to_path_buf();
                path = dir.join(target);
            }
            Err(_) => {
                let name = path.file_name()?.to_os_string();
                let dir = path.parent()?;
                let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
                return Some(Identity::Path(dir.join(name)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves one file is found under two spellings (a relative
    /// and an absolute path, `./`, a symbolic link to the directory, a
    /// link to a file not made yet, a hard link), that paths of distinct
    /// files pass, and that a path read may be named twice.
    #[test]
    fn one_file_under_two_names_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let same = |a: &Path, b: &Path, ub: Use| {
            check(&[("--a", Some(a), Use::Writes), ("--b", Some(b), ub)]).is_err()
        };
        let x = d.join("x.pcap");
        // Not made yet.
        assert!(same(&x, &d.join(".").join("x.pcap"), Use::Writes));
        assert!(!same(&x, &d.join("y.pcap"), Use::Writes));
        std::os::unix::fs::symlink(d, d.join("link")).expect("symlink");
        assert!(same(&x, &d.join("link/x.pcap"), Use::Writes));
        // A dangling link to it.
        std::os::unix::fs::symlink(&x, d.join("dangling")).expect("symlink");
        assert!(same(&x, &d.join("dangling"), Use::Writes));
        // Made: a hard link is the same inode.
        std::fs::write(&x, b"").expect("write");
        std::fs::hard_link(&x, d.join("hard")).expect("link");
        assert!(same(&x, &d.join("hard"), Use::Reads));
        assert!(same(&x, &d.join("dangling"), Use::Writes));
        // Read twice: fine; no path at all: skipped.
        let p = x.clone();
        assert!(check(&[
            ("A", Some(&p), Use::Reads),
            ("B", Some(&p), Use::Reads),
            ("--c", None, Use::Writes),
        ])
        .is_ok());
        let e = check(&[
            ("CONFIG", Some(&p), Use::Reads),
            ("--pcap", Some(&p), Use::Writes),
        ])
        .expect_err("an output over the input");
        assert_eq!(
            e.to_string(),
            format!(
                "error: --pcap and CONFIG name the same file ({}): an output may not overwrite what the command reads",
                p.display()
            )
        );
    }
}
