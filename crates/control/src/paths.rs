//! Directories, sockets and state files made with no moment at which
//! another user could redirect them.
//!
//! `chmod` and `chown` by path follow a symbolic link, and a link can be
//! put where a file was a moment before; so a mode or an owner is never
//! set by path after the fact here:
//!
//! * a directory is made, then opened with `O_NOFOLLOW | O_DIRECTORY`,
//!   and its mode set on that descriptor ([`make_dirs`]);
//! * a socket is bound under a umask that leaves exactly its mode, and
//!   with the group it must have as the effective group, so that it has
//!   both from its first moment ([`bind_socket`]); only giving it to
//!   another owner (root binding for a user) is done after, with
//!   `lchown`, which changes a link put in its place, never the link's
//!   target;
//! * a state directory must be the daemon's own: a real directory (not a
//!   link), of its user, that nobody else may write
//!   ([`check_private_dir`]); its files are opened with `O_NOFOLLOW`.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::Path;

use nix::sys::stat::{umask, Mode};
use nix::unistd::{getegid, setegid, Gid};

/// Makes `dir` and its missing parents, each with `mode` exactly
/// (whatever the umask), set on the directory's descriptor. A directory
/// made meanwhile by another process is taken as it is.
pub fn make_dirs(dir: &Path, mode: u32) -> io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && fs::symlink_metadata(d).is_err())
        .collect();
    for d in missing.into_iter().rev() {
        match fs::DirBuilder::new().mode(mode).create(d) {
            Ok(()) => {
                let f = File::options()
                    .read(true)
                    .custom_flags(
                        (nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_NOFOLLOW).bits(),
                    )
                    .open(d)?;
                f.set_permissions(fs::Permissions::from_mode(mode))?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Binds a Unix socket at `path` with `mode` and, if given, `group`,
/// both from its first moment (see the module's documentation); the
/// caller has removed a stale socket. Without the privilege to act as
/// `group` (a user, not root) the socket is given to it right after if
/// the user may (`lchown`: a link put in its place is changed, not
/// followed), else left in the user's group.
pub fn bind_socket(path: &Path, mode: u32, group: Option<Gid>) -> io::Result<UnixListener> {
    let old_mask = umask(Mode::from_bits_truncate(!mode & 0o777));
    let old_gid = getegid();
    let as_group = match group {
        Some(g) if g != old_gid => setegid(g).is_ok(),
        _ => false,
    };
    let bound = UnixListener::bind(path);
    if as_group {
        let _ = setegid(old_gid);
    }
    umask(old_mask);
    let listener = bound?;
    if let Some(g) = group {
        let root = nix::unistd::geteuid().is_root();
        if !as_group && g != old_gid && (lchown(path, None, Some(g)).is_err() && root) {
            return Err(io::Error::other(format!(
                "cannot give it to group {g} (the socket's)"
            )));
        }
    }
    Ok(listener)
}

/// `chown` of `path` itself, never of what a link there points to.
pub fn lchown(path: &Path, owner: Option<u32>, group: Option<Gid>) -> io::Result<()> {
    nix::unistd::fchownat(
        None,
        path,
        owner.map(nix::unistd::Uid::from_raw),
        group,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(io::Error::from)
}

/// Why a state directory is not the daemon's own, if it is not: it must
/// be a directory (not a symbolic link), belong to this process's user,
/// and be writable by nobody else; and every directory above it must
/// belong to root or this user and be writable by others only if sticky
/// (as `/tmp`), so nobody else can put another directory in its place.
pub fn check_private_dir(dir: &Path) -> Result<(), String> {
    let euid = nix::unistd::geteuid().as_raw();
    let meta = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if meta.file_type().is_symlink() {
        return Err("a symbolic link: name the directory itself".to_string());
    }
    if !meta.is_dir() {
        return Err("not a directory".to_string());
    }
    if meta.uid() != euid {
        return Err(format!(
            "it belongs to uid {}, not to this process's uid {euid}",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "others may write it (mode {:04o}): make it 0700 or 0755",
            meta.mode() & 0o7777
        ));
    }
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(dir)
    };
    for up in abs.ancestors().skip(1) {
        let m = match fs::symlink_metadata(up) {
            Ok(m) => m,
            Err(e) => return Err(format!("{}: {e}", up.display())),
        };
        let owner_ok = m.uid() == 0 || m.uid() == euid;
        let sticky = m.mode() & 0o1000 != 0;
        if !owner_ok || (m.mode() & 0o022 != 0 && !sticky) {
            return Err(format!(
                "{} above it belongs to uid {} (mode {:04o}): another user could put another directory in its place",
                up.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_get_their_mode_whatever_the_umask() {
        let base = tempfile::tempdir().expect("tempdir");
        let d = base.path().join("a/b");
        let old = umask(Mode::from_bits_truncate(0o077));
        let made = make_dirs(&d, 0o755);
        umask(old);
        made.expect("made");
        for p in [base.path().join("a"), d.clone()] {
            let m = fs::metadata(&p).expect("meta");
            assert_eq!(m.mode() & 0o777, 0o755, "{}", p.display());
        }
        check_private_dir(&d).expect("our own directory");
    }

    #[test]
    fn a_link_or_an_open_directory_is_not_a_state_directory() {
        let base = tempfile::tempdir().expect("tempdir");
        let real = base.path().join("real");
        fs::create_dir(&real).expect("dir");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("link");
        let e = check_private_dir(&link).expect_err("a link");
        assert!(e.contains("symbolic link"), "{e}");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = check_private_dir(&real).expect_err("open to all");
        assert!(e.contains("others may write it (mode 0777)"), "{e}");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = check_private_dir(&real).expect_err("open parent");
        assert!(
            e.contains("another user could put another directory"),
            "{e}"
        );
    }

    #[test]
    fn a_socket_has_its_mode_from_the_start() {
        let base = tempfile::tempdir().expect("tempdir");
        let s = base.path().join("s.sock");
        let _l = bind_socket(&s, 0o660, None).expect("bound");
        let m = fs::symlink_metadata(&s).expect("meta");
        assert_eq!(m.mode() & 0o777, 0o660);
    }
}
