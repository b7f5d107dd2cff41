//! Installing pipelab as Linux tools are: manual pages and shell
//! completions, generated from the command-line definitions themselves
//! (`clap_mangen`, `clap_complete`), so they never disagree with
//! `--help`. `packaging/build-deb.sh` puts them in the Debian package.

use clap::CommandFactory;
use clap_complete::Shell;
use std::io;
use std::path::{Path, PathBuf};

/// The completion script of `pipelab` for `shell`.
pub fn completions(shell: Shell) -> String {
    let mut cmd = crate::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pipelab", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Write the manual pages into `dir` (made if missing): `pipelab.1`, one
/// `pipelab-SUBCOMMAND.1` per subcommand (`pipelab-topo-up.1` for nested
/// ones) and `pipelabd.8`. Returns the files written.
pub fn man_pages(dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut cmd = crate::Cli::command();
    cmd.build();
    page(&cmd, "pipelab", "1", dir, &mut written)?;
    let mut daemon = crate::daemon_args::Args::command();
    daemon.build();
    page(&daemon, "pipelabd", "8", dir, &mut written)?;
    Ok(written)
}

/// The page of `cmd` as `name.section`, then its subcommands'.
fn page(
    cmd: &clap::Command,
    name: &str,
    section: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> io::Result<()> {
    let titled = cmd
        .clone()
        .name(name.to_string())
        .display_name(name.to_string());
    let man = clap_mangen::Man::new(titled)
        .title(name.to_uppercase())
        .section(section)
        .manual("pipelab manual")
        .source(format!("pipelab {}", env!("CARGO_PKG_VERSION")));
    let mut buf = Vec::new();
    man.render(&mut buf)?;
    let path = dir.join(format!("{name}.{section}"));
    // Written as every output is (another user's link in DIR is refused,
    // not followed).
    pipelab_lang::output::create_output(&path)
        .and_then(|mut f| io::Write::write_all(&mut f, &buf))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    written.push(path);
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        page(
            sub,
            &format!("{name}-{}", sub.get_name()),
            section,
            dir,
            written,
        )?;
    }
    Ok(())
}
