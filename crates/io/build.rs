//! Live tests need root (or CAP_NET_ADMIN and CAP_NET_RAW): they are built
//! to run when the build runs as root or with `PIPELAB_LIVE=1`, and are
//! marked ignored otherwise, so that a run without the privilege reports
//! them as ignored, with the reason, instead of as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pipelab_live)");
    println!("cargo:rerun-if-env-changed=PIPELAB_LIVE");
    println!("cargo:rerun-if-env-changed=USER");
    println!("cargo:rerun-if-env-changed=SUDO_UID");
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    let asked = std::env::var("PIPELAB_LIVE").is_ok_and(|v| v == "1");
    if root || asked {
        println!("cargo:rustc-cfg=pipelab_live");
    }
}
