//! The build script of the crates with live tests (`pipelab`,
//! `pipelab-io`, `pipelab-modes`; each names this file as `build` in its
//! Cargo.toml).
//!
//! Live tests need root (or CAP_NET_ADMIN and CAP_NET_RAW). They are built
//! to run (`cfg(pipelab_live)`) when the build runs as root, with
//! `PIPELAB_LIVE=1`, or under CI (`CI` set and not `false`), and are
//! marked ignored otherwise, so that a run without the privilege on a
//! developer's machine reports them as ignored, with the reason, instead
//! of as passed; under CI without root they run and fail loudly.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pipelab_live)");
    println!("cargo:rerun-if-env-changed=PIPELAB_LIVE");
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=USER");
    println!("cargo:rerun-if-env-changed=SUDO_UID");
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    let asked = std::env::var("PIPELAB_LIVE").is_ok_and(|v| v == "1");
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    if root || asked || ci {
        println!("cargo:rustc-cfg=pipelab_live");
    }
}
