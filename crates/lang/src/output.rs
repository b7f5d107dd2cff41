//! The one way pipelab opens a file it writes.
//!
//! Every output path of every subcommand (`--pcap`, `--events`,
//! `--stats`, `--series`, `--flow-series`, `plot -o`, `topo gen -o`,
//! `save FILE`, the pages of `pipelab man DIR`, `probe receive --series`,
//! a live topology's log and state) is opened by [`open_output`], so that
//! a user who plants a symbolic link where root will write cannot make
//! root write through it, whatever `fs.protected_symlinks` says.
//!
//! The path is walked one component at a time (`lstat`), as the kernel
//! would, and each symbolic link met on the way is followed only if it is
//! *trusted*:
//!
//! * it belongs to the caller (the effective uid) and has one name (a
//!   second hard link to a link could have been made by anyone), or
//! * it and the directory holding it belong to root, and nobody else may
//!   write that directory (`/dev/stdout`), or
//! * it lies under `/proc` (`/proc/self/fd/N`: the kernel's own links).
//!
//! Any other link is refused with an error naming it, its owner and its
//! directory: a link of another user (or of root's, where others may
//! write) could point anywhere the caller may write. Following a link
//! onwards repeats the walk from its target, so a chain is checked link
//! by link; more than [`MAX_LINKS`] links is a loop.
//!
//! The last component is then opened with `O_NOFOLLOW` (a link that
//! appeared since the walk fails the open, and the walk starts again),
//! `O_NONBLOCK` (a FIFO without a reader is refused at once, never waited
//! for) and `O_NOCTTY`; a missing file is created with `O_EXCL` (mode
//! 0644 less the umask). An existing regular file with more than one
//! name, in a directory others may write, is refused: it may be a hard
//! link to a file of the caller's that someone else placed there.
//! Regular files, FIFOs with a reader and character devices (`/dev/null`)
//! are written; a directory or a socket is refused.
//!
//! What this does not guard against: a directory of the path that
//! another user may rename (a directory in a world-writable directory
//! without the sticky bit, or one of theirs) can be swapped between the
//! walk and the open; in such a directory that user can replace the
//! output afterwards anyway.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// The most symbolic links a path may lead through (the kernel's limit).
pub const MAX_LINKS: usize = 40;

/// How many times the walk is started again when the path changed under
/// it (a link that appeared, a file made or removed meanwhile).
const RETRIES: usize = 8;

/// What to do with a file that exists already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Empty it (a regular file): the output replaces it.
    Truncate,
    /// Leave its contents: the caller replaces them later (or not at
    /// all, when the run fails).
    Keep,
}

/// A file [`open_output`] opened.
#[derive(Debug)]
pub struct OutputFile {
    /// Open for writing, blocking.
    pub file: File,
    /// Whether it was made by this call (so the caller may remove it
    /// after a failure).
    pub created: bool,
}

/// Opens `path` for writing, checked as the module's documentation says;
/// `existing` says what to do with a file already there. The error is an
/// [`io::Error`] whose text says why (a refused link names the link, its
/// owner and its directory), for the caller to prefix with the path as
/// given; a refusal of ours is of kind [`io::ErrorKind::PermissionDenied`].
pub fn open_output(path: &Path, existing: Existing) -> io::Result<OutputFile> {
    let euid = nix::unistd::geteuid().as_raw();
    let mut last_error = None;
    for _ in 0..RETRIES {
        let walked = walk(path, euid)?;
        match try_open(&walked, euid, existing) {
            Ok(f) => return Ok(f),
            Err(Attempt::Again(e)) => last_error = Some(e),
            Err(Attempt::Fail(e)) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "the path kept changing while it was opened ({})",
        last_error.map(|e| e.to_string()).unwrap_or_default()
    )))
}

/// Checks `path` as [`open_output`] does before opening it (every
/// symbolic link on it trusted), without opening or making anything: for
/// a path something else makes (a socket, a directory). Returns the
/// path with its links resolved (under `/proc`, as far as the kernel's
/// links).
pub fn check_output_path(path: &Path) -> io::Result<PathBuf> {
    walk(path, nix::unistd::geteuid().as_raw()).map(|w| w.path)
}

/// [`open_output`] with [`Existing::Truncate`]: the file, emptied or new.
pub fn create_output(path: &Path) -> io::Result<File> {
    open_output(path, Existing::Truncate).map(|o| o.file)
}

/// Where the walk of a path ended.
struct Walked {
    /// The path to open: every link on it checked, no link left but
    /// the kernel's, under `/proc`.
    path: PathBuf,
    /// Whether the path leads through a link under `/proc`, followed by
    /// the kernel (`/proc/self/fd/1`, whose target has no name to walk).
    kernel_link: bool,
}

/// A refusal of ours, with its text.
fn refused(text: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, text)
}

/// Whether anyone but `meta`'s owner may write it (its group or others).
fn writable_by_others(meta: &Metadata) -> bool {
    meta.mode() & 0o022 != 0
}

/// Why the link at `link` (in directory `dir`) is not followed, if it
/// is not.
fn untrusted_link(link: &Path, lmeta: &Metadata, dir: &Path, euid: u32) -> Option<String> {
    if link.starts_with("/proc") {
        return None;
    }
    if lmeta.uid() == euid && lmeta.nlink() == 1 {
        return None;
    }
    let dmeta = std::fs::symlink_metadata(dir).ok();
    if lmeta.uid() == 0
        && lmeta.nlink() == 1
        && dmeta
            .as_ref()
            .is_some_and(|d| d.uid() == 0 && !writable_by_others(d))
    {
        return None;
    }
    let why = if lmeta.nlink() > 1 {
        format!("it has {} names (a hard link to a link)", lmeta.nlink())
    } else if lmeta.uid() == euid || lmeta.uid() == 0 {
        format!("others may write its directory {}", dir.display())
    } else {
        format!("it belongs to uid {}, not to this user", lmeta.uid())
    };
    Some(format!(
        "{} is a symbolic link (to '{}') that is not followed: {why}; name the file itself",
        link.display(),
        std::fs::read_link(link)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into())
    ))
}

/// Walks `path` component by component, checking and following its
/// links (see the module's documentation).
fn walk(path: &Path, euid: u32) -> io::Result<Walked> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "an empty path"));
    }
    // What is left to walk, last component first (so `pop` gives the
    // next one).
    let mut rest: Vec<OsString> = Vec::new();
    let push_path = |rest: &mut Vec<OsString>, p: &Path| {
        let names: Vec<OsString> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect();
        rest.extend(names.into_iter().rev());
    };
    let mut cur = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir()?
    };
    push_path(&mut rest, path);
    let mut links = 0usize;
    while let Some(name) = rest.pop() {
        if name == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&name);
        let meta = match std::fs::symlink_metadata(&next) {
            Ok(m) => m,
            // Missing: the open creates it (the last component) or says
            // what is missing (a directory).
            Err(_) => {
                cur = next;
                for n in rest.into_iter().rev() {
                    cur.push(n);
                }
                return Ok(Walked {
                    path: cur,
                    kernel_link: false,
                });
            }
        };
        if !meta.file_type().is_symlink() {
            cur = next;
            continue;
        }
        if let Some(why) = untrusted_link(&next, &meta, &cur, euid) {
            return Err(refused(why));
        }
        if next.starts_with("/proc") {
            // The kernel's links (`/proc/self`, `/proc/self/fd/1`) name
            // no path to walk (`pipe:[123]`): the kernel follows them.
            cur = next;
            for n in rest.into_iter().rev() {
                cur.push(n);
            }
            return Ok(Walked {
                path: cur,
                kernel_link: true,
            });
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: more than {MAX_LINKS} symbolic links", path.display()),
            ));
        }
        let target = std::fs::read_link(&next)?;
        // The link read must be the link checked (not one put in its
        // place meanwhile).
        let again = std::fs::symlink_metadata(&next)?;
        if (again.dev(), again.ino()) != (meta.dev(), meta.ino()) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                format!("{} changed while it was read", next.display()),
            ));
        }
        if target.is_absolute() {
            cur = PathBuf::from("/");
        }
        push_path(&mut rest, &target);
    }
    Ok(Walked {
        path: cur,
        kernel_link: false,
    })
}

/// One attempt at opening: a failure to give up on, or a change under
/// the walk (start again).
enum Attempt {
    Fail(io::Error),
    Again(io::Error),
}

fn try_open(walked: &Walked, euid: u32, existing: Existing) -> Result<OutputFile, Attempt> {
    let path = &walked.path;
    let before = std::fs::symlink_metadata(path).ok();
    let created = before.is_none();
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !walked.kernel_link {
        flags |= libc::O_NOFOLLOW;
    }
    let mut options = File::options();
    options.write(true).mode(0o644).custom_flags(flags);
    if created {
        options.create_new(true);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        // A file made meanwhile (O_EXCL), a link put there (O_NOFOLLOW),
        // a file removed (without O_CREAT): walk again.
        Err(e)
            if e.kind() == io::ErrorKind::AlreadyExists
                || e.raw_os_error() == Some(libc::ELOOP) && !walked.kernel_link
                || e.kind() == io::ErrorKind::NotFound && !created =>
        {
            return Err(Attempt::Again(e))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            let what = match before.as_ref().map(Metadata::file_type) {
                Some(t) if t.is_fifo() => "a FIFO that nobody reads",
                Some(t) if t.is_socket() => "a socket, not a file",
                _ => "no device or reader behind it",
            };
            return Err(Attempt::Fail(refused(what.to_string())));
        }
        Err(e) => return Err(Attempt::Fail(e)),
    };
    let meta = file.metadata().map_err(Attempt::Fail)?;
    let t = meta.file_type();
    if t.is_file() {
        if meta.nlink() > 1 && !created {
            let dir = path.parent().unwrap_or(Path::new("/"));
            let shared = std::fs::symlink_metadata(dir)
                .map(|d| writable_by_others(&d) || (d.uid() != euid && d.uid() != 0))
                .unwrap_or(true);
            if shared {
                return Err(Attempt::Fail(refused(format!(
                    "{} has {} names (hard links) and others may write its directory {}: it may be another file's second name; remove it or name another path",
                    path.display(),
                    meta.nlink(),
                    dir.display()
                ))));
            }
        }
        if existing == Existing::Truncate && !created {
            file.set_len(0).map_err(Attempt::Fail)?;
        }
    } else if !(t.is_fifo() || t.is_char_device()) {
        return Err(Attempt::Fail(refused(
            "not a regular file, a FIFO or a character device".to_string(),
        )));
    }
    // Written blocking from here (a FIFO's reader may be slow).
    let fd = file.as_raw_fd();
    let fl = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL)
        .map_err(|e| Attempt::Fail(e.into()))?;
    let fl = nix::fcntl::OFlag::from_bits_truncate(fl) & !nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(fl))
        .map_err(|e| Attempt::Fail(e.into()))?;
    Ok(OutputFile { file, created })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "pipelab-output-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    #[test]
    fn creates_truncates_and_keeps() {
        let d = dir();
        let p = d.join("out");
        let mut o = open_output(&p, Existing::Truncate).expect("new");
        assert!(o.created);
        o.file.write_all(b"longer text").expect("write");
        drop(o);
        let o = open_output(&p, Existing::Keep).expect("kept");
        assert!(!o.created);
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "longer text");
        drop(o);
        create_output(&p).expect("truncated");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "");
        // Relative and `..` components are walked too.
        let rel = d.join("sub");
        std::fs::create_dir_all(&rel).expect("sub");
        create_output(&rel.join("../out2")).expect("via ..");
        assert!(d.join("out2").is_file());
        std::fs::remove_dir_all(&d).expect("clean");
    }

    #[test]
    fn own_links_are_followed_and_chains_walked() {
        let d = dir();
        let target = d.join("target");
        std::os::unix::fs::symlink(&target, d.join("link")).expect("link");
        std::os::unix::fs::symlink("link", d.join("chain")).expect("chain");
        let mut f = create_output(&d.join("chain")).expect("own links");
        f.write_all(b"x").expect("write");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "x");
        // A directory link of our own, then a file in it.
        std::os::unix::fs::symlink(&d, d.join("dirlink")).expect("dirlink");
        create_output(&d.join("dirlink/inner")).expect("in a linked dir");
        assert!(d.join("inner").is_file());
        std::fs::remove_dir_all(&d).expect("clean");
    }

    #[test]
    fn loops_directories_and_fifos_are_refused_at_once() {
        let d = dir();
        std::os::unix::fs::symlink("b", d.join("a")).expect("a");
        std::os::unix::fs::symlink("a", d.join("b")).expect("b");
        let e = create_output(&d.join("a")).expect_err("loop");
        assert!(e.to_string().contains("more than 40 symbolic links"), "{e}");
        let e = create_output(&d).expect_err("dir");
        assert!(e.raw_os_error() == Some(libc::EISDIR), "{e}");
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        let t0 = std::time::Instant::now();
        let e = create_output(&fifo).expect_err("no reader");
        assert!(e.to_string().contains("a FIFO that nobody reads"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        // /dev/null (a character device) is written.
        create_output(Path::new("/dev/null")).expect("/dev/null");
        std::fs::remove_dir_all(&d).expect("clean");
    }

    #[test]
    fn proc_links_are_the_kernels() {
        // /dev/stdout -> /proc/self/fd/1: root's link in root's /dev, then
        // the kernel's. Whatever fd 1 is in the test, the walk accepts it.
        let w = walk(Path::new("/dev/stdout"), nix::unistd::geteuid().as_raw())
            .expect("walk /dev/stdout");
        assert!(w.path.starts_with("/proc"), "{}", w.path.display());
        assert!(w.kernel_link);
    }

    /// As root: links of another user, and root's links where others may
    /// write, are refused naming the link; the file behind is untouched.
    /// A second name of a file in a directory others may write is refused.
    #[test]
    fn links_of_others_and_hard_links_are_refused_as_root() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root (lchown)");
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let d = dir();
        let shared = d.join("shared");
        std::fs::create_dir(&shared).expect("shared");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        let victim = d.join("victim");
        std::fs::write(&victim, "root's").expect("victim");
        // Another user's link, in the shared directory and in root's.
        for dir in [&shared, &d] {
            let link = dir.join("planted");
            std::os::unix::fs::symlink(&victim, &link).expect("link");
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).expect("lchown");
            let e = create_output(&link).expect_err("another user's link");
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            assert!(
                e.to_string()
                    .contains(&format!("{} is a symbolic link", link.display())),
                "{e}"
            );
            assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
            // A directory of the path that is such a link, too.
            let e = create_output(&dir.join("planted/x")).expect_err("link as a directory");
            assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
        }
        // Root's own link is followed in root's directory.
        let own = d.join("own");
        std::os::unix::fs::symlink(d.join("own-target"), &own).expect("own");
        create_output(&own).expect("root's own link");
        // A hard link of the victim in the shared directory.
        let second = shared.join("second");
        std::fs::hard_link(&victim, &second).expect("hard link");
        let e = create_output(&second).expect_err("second name");
        assert!(e.to_string().contains("2 names"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "root's");
        std::fs::remove_dir_all(&d).expect("clean");
    }
}
