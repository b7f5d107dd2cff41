//! Live tests of queues larger than memory (`spill`, NetPath's
//! DiskQueue): real UDP datagrams through `pipelab shell`, in a network
//! namespace of the test's own (the shell's host side and the receiver
//! live there, not in the host's namespace), with a queue far beyond
//! `--mem-cap`, fed faster than its link drains.
//!
//! * Every packet the emulator received is accounted for (`received =
//!   delivered + dropped by reason + inside`), nothing is dropped for
//!   memory or by the spill, and the receiver got every datagram; frames
//!   went to disk (megabytes beyond the cap) and came back; the process's
//!   resident memory stays under the cap plus the program's own (an idle
//!   shell's);
//!   the spill's directory is gone after the run.
//! * Killed with SIGKILL while frames wait on disk, the shell leaves at
//!   most its (empty) spill directory, the files having no names, and
//!   `pipelab cleanup` removes it.

mod common;

use common::{check_accounting, live, tmp_path, Bg, BIN};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The memory cap of these runs, and the link the queue drains through:
/// 10000 datagrams of 1400 bytes a second (112 Mbit/s) for 2.5 s into a
/// 40 Mbit/s link: a queue of some 22 MB, beyond the cap's spill mark
/// (12 MB), drained in about 7 s.
const CAP: u64 = 16 << 20;
const UPLINK: &str = "bw 40Mbit/s queue 256MB spill";
const RATE: &str = "10kpps";

/// The bookkeeping of a frame, its buffer's slot and its descriptor
/// (`pipelab_io::spill::FRAME_BOOKKEEPING`).
const BOOKKEEPING: u64 = 320;

/// A network namespace of the test's own, removed when dropped, with
/// its spill directory.
struct Bed {
    ns: String,
    dir: PathBuf,
}

impl Bed {
    fn new(tag: &str) -> Bed {
        let ns = format!("plspill{tag}{}", std::process::id() % 100_000);
        let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        let ok = Command::new("ip")
            .args(["netns", "add", &ns])
            .status()
            .is_ok_and(|s| s.success())
            && Command::new("ip")
                .args(["-n", &ns, "link", "set", "lo", "up"])
                .status()
                .is_ok_and(|s| s.success());
        assert!(ok, "ip netns add {ns}");
        let dir = PathBuf::from(tmp_path(&format!("spill-{tag}")));
        std::fs::create_dir_all(&dir).expect("spill dir");
        Bed { ns, dir }
    }

    /// `ip netns exec NS args...`.
    fn exec(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).args(args);
        c
    }

    /// The names in the spill directory (the run directories left).
    fn left(&self) -> Vec<String> {
        names(&self.dir)
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "pids", &self.ns])
            .output()
            .map(|o| {
                for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-9", pid]).status();
                }
            });
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The shell's arguments: the cap, the spill directory, the links, the
/// stats file.
fn shell_args(bed: &Bed, stats: &str) -> Vec<String> {
    let cap = format!("{}MB", CAP >> 20);
    let dir = bed.dir.display().to_string();
    [
        "shell",
        "--mem-cap",
        &cap,
        "--spill-dir",
        &dir,
        "--uplink",
        UPLINK,
        "--downlink",
        "delay 1ms",
        "--stats",
        stats,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A pass proves a pipe with a queue 16 times the memory cap, fed at
/// almost three times its rate, keeps every packet it accepted: the
/// accounting balances with nothing dropped for memory or by the spill
/// (and the receiver lost nothing), megabytes went to disk and came back
/// in order, the peak resident memory stayed under the cap plus the
/// program's own (an idle shell's) while the disk held megabytes, and
/// the spill's
/// directory is gone after the run.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn a_queue_beyond_the_cap_keeps_every_packet_on_disk() {
    let Some(_g) = live() else { return };
    let bed = Bed::new("k");
    let port = 47_000 + (std::process::id() % 1000) as u16;
    let _rx = Bg(bed
        .exec(&[BIN, "probe", "recv", "--listen", &format!("0.0.0.0:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("probe recv"));
    std::thread::sleep(Duration::from_millis(300));
    let stats = tmp_path("spill-stats.json");
    let args = shell_args(&bed, &stats);
    let mut argv: Vec<&str> = vec![BIN];
    argv.extend(args.iter().map(String::as_str));
    let send = format!(
        "exec {BIN} probe send $PIPELAB_OUTSIDE:{port} --rate {RATE} --size 1400B --duration 2500ms --burst 16 --json"
    );
    argv.extend(["--", "sh", "-c", &send]);
    let t0 = Instant::now();
    let out = bed
        .exec(&argv)
        .stdin(Stdio::null())
        .output()
        .expect("shell");
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "shell: {}: {stderr}", out.status);
    assert!(
        stderr.contains("pipe 1: frames waiting beyond 12MB of memory are kept on disk in"),
        "the run says where frames go: {stderr}"
    );
    let probe: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "probe report: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    let _ = std::fs::remove_file(&stats);
    check_accounting(&v);
    let s = &v["stats"];
    let sp = &s["spill"];
    let n = |x: &Value| x.as_u64().unwrap_or(u64::MAX);
    let summary = format!("stats {s}\nprobe {probe}\ntook {took:?}");
    assert!(n(&s["received"]) >= 10_000, "{summary}");
    assert_eq!(n(&s["dropped_memory"]), 0, "{summary}");
    assert_eq!(n(&s["dropped_spill"]), 0, "{summary}");
    assert_eq!(n(&s["dropped_queue"]), 0, "{summary}");
    // The queue drained (the receiver got everything); what is inside at
    // exit is a frame or two of the host's own (ARP, neighbour discovery)
    // in the downlink's delay line.
    assert!(n(&s["inside"]) <= 4, "drained: {summary}");
    assert_eq!(
        n(&s["delivered"]) + n(&s["inside"]),
        n(&s["received"]),
        "{summary}"
    );
    assert_eq!(
        n(&probe["lost"]),
        0,
        "the receiver got every datagram: {summary}"
    );
    assert!(
        n(&sp["spilled_bytes"]) > 6 << 20 && n(&sp["max_on_disk_bytes"]) > 6 << 20,
        "megabytes on disk: {summary}"
    );
    assert_eq!(
        n(&sp["read_back_packets"]) + n(&sp["misses"]) + n(&sp["dropped_on_disk"]),
        n(&sp["spilled_packets"]),
        "every frame written came back: {summary}"
    );
    assert_eq!(n(&sp["on_disk_packets"]), 0, "{summary}");
    assert!(n(&v["buffer_bytes"]) <= CAP, "buffers under the cap: {v}");
    // The program's own memory: the same shell, idle.
    let idle_stats = tmp_path("spill-idle.json");
    let idle_args = shell_args(&bed, &idle_stats);
    let mut idle: Vec<&str> = vec![BIN];
    idle.extend(idle_args.iter().map(String::as_str));
    idle.extend(["--", "true"]);
    let o = bed
        .exec(&idle)
        .stdin(Stdio::null())
        .output()
        .expect("idle shell");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let iv: Value =
        serde_json::from_str(&std::fs::read_to_string(&idle_stats).expect("stats")).expect("json");
    let _ = std::fs::remove_file(&idle_stats);
    let program = n(&iv["rss_peak_bytes"]);
    let rss = n(&v["rss_peak_bytes"]);
    // The cap bounds frames in memory and the spill's memory; each
    // buffer in memory also has its slot and descriptor (as without a
    // spill), and the spill reads ahead two chunks of 256 KB.
    let beside = CAP / 2048 * BOOKKEEPING + (1 << 20);
    assert!(
        rss <= program + CAP + beside,
        "resident memory {rss} over the idle program's {program} + the cap {CAP} + {beside}: {summary}"
    );
    eprintln!(
        "spill: rss peak {} MB (idle {} MB, cap {} MB), {} MB most on disk",
        rss >> 20,
        program >> 20,
        CAP >> 20,
        n(&sp["max_on_disk_bytes"]) >> 20
    );
    assert_eq!(
        bed.left(),
        Vec::<String>::new(),
        "the spill's directory is gone"
    );
    assert!(took < Duration::from_secs(25), "{summary}");
}

/// A pass proves a shell killed with SIGKILL while frames wait on disk
/// leaves no spill file: while it ran, its files were open in its run
/// directory with no name there (the directory lists nothing); after the
/// kill the directory is all that is left, and `pipelab cleanup` removes
/// it with the rest of the shell's changes.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1"
)]
fn kill_9_leaves_nothing_cleanup_does_not_remove() {
    let Some(_g) = live() else { return };
    let bed = Bed::new("x");
    let stats = tmp_path("spill-kill.json");
    let args = shell_args(&bed, &stats);
    let mut argv: Vec<&str> = vec![BIN];
    argv.extend(args.iter().map(String::as_str));
    // A sender that outlasts the test: the queue keeps growing on disk.
    let send = format!(
        "exec {BIN} probe send $PIPELAB_OUTSIDE:9 --rate {RATE} --size 1400B --duration 60s --burst 16"
    );
    argv.extend(["--", "sh", "-c", &send]);
    let mut shell = Bg(bed
        .exec(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("shell"));
    // `ip netns exec` runs the shell in its own process.
    let pid = shell.0.id();
    let run_dir = bed.dir.join(format!("pipelab-spill-{pid}"));
    // Distinct files (the runner and the spill's thread each have a
    // descriptor on each).
    let open_in_dir = || -> usize {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .filter(|t| t.starts_with(&run_dir))
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
            })
            .unwrap_or(0)
    };
    let t0 = Instant::now();
    while open_in_dir() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "the shell never spilled into {}",
            run_dir.display()
        );
        assert!(
            shell.0.try_wait().ok().flatten().is_none(),
            "the shell ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let the disk hold a few megabytes.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(open_in_dir(), 2, "files A and B open");
    assert_eq!(
        names(&run_dir),
        Vec::<String>::new(),
        "the files have no names in {}",
        run_dir.display()
    );
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let _ = shell.0.wait();
    assert_eq!(
        bed.left(),
        vec![format!("pipelab-spill-{pid}")],
        "only the (empty) run directory is left"
    );
    assert_eq!(names(&run_dir), Vec::<String>::new());
    let o = Command::new(BIN).arg("cleanup").output().expect("cleanup");
    assert!(
        o.status.success(),
        "pipelab cleanup: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains(&format!("spill directory {}", run_dir.display())),
        "cleanup says it removed the spill directory: {said}"
    );
    assert_eq!(bed.left(), Vec::<String>::new(), "cleanup removed it");
    let _ = std::fs::remove_file(&stats);
}
