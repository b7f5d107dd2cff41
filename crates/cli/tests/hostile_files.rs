//! The hostile suite of every file a configuration (or a command) names,
//! through the real `pipelab`: a pipe's `profile`, `bw trace:`, `loss
//! trace:`, `distribution file:` and `timevarying` files (read by `pipelab
//! check` of a configuration naming them), GML and TOML topologies
//! (`pipelab topo distill`), the configuration itself (`pipelab check`),
//! a traffic file (`pipelab sim --traffic-file`) and an experiment file
//! (`pipelab topo run`).
//!
//! Each kind of file meets the same hostile targets: a good file
//! (accepted), a missing path, a directory, a FIFO (refused at once: no
//! reader ever waits for a writer), `/dev/zero`, `/dev/urandom`, a
//! symbolic link to `/dev/zero`, a file over the 64 MiB cap (sparse),
//! an empty file, binary bytes, one bad line among good ones (the line
//! named), a text file of another kind whose lines are secrets (a copy
//! of /etc/shadow: refused quoting nothing of it), and (as root, run
//! under another uid) a file its reader may not open. Every case is bounded in time and none may panic.
//! `case_count` counts the cases (docs/HOSTILE.md).

mod hostile;

use hostile::{all_pass, run_bounded, tally, verdict, Outcome, PIPELAB};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use Outcome::{Accepted, Rejected};

/// How a file of a kind gets read.
#[derive(Clone, Copy)]
enum Reader {
    /// Named by a pipe: `pipelab check` of a configuration holding this
    /// line, `{}` standing for the path.
    Pipe(&'static str),
    /// A topology: `pipelab topo distill PATH`.
    Topology,
    /// A configuration: `pipelab check PATH`.
    Config,
    /// Traffic: `pipelab sim CONF --traffic-file PATH`.
    Traffic,
    /// An experiment: `pipelab topo run --name plnone PATH`.
    Experiment,
}

/// A kind of file: how it is read, its file name's suffix, a good file,
/// the expected outcome of the good and of an empty file, a file with
/// one bad line among good ones and what its refusal says, and what
/// precedes the reader's message (`FILE` stands for the path).
struct Kind {
    name: &'static str,
    reader: Reader,
    suffix: &'static str,
    good: &'static str,
    good_outcome: Outcome,
    empty_outcome: Outcome,
    bad: &'static str,
    bad_outcome: Outcome,
    binary_outcome: Outcome,
    /// The outcome of a text file of another kind whose lines are
    /// secrets (a copy of /etc/shadow): nothing of it may be quoted.
    foreign_outcome: Outcome,
    /// What comes before `'PATH': ...` in a refusal of the file itself.
    prefix: &'static str,
}

/// Every kind of file, with its good and bad text and what is said of
/// them. In outcomes `FILE` stands for the case's path.
const KINDS: &[Kind] = &[
    Kind {
        name: "profile",
        reader: Reader::Pipe("pipe 1 config profile {}"),
        suffix: ".profile",
        good: "name p\nbw 2Mbit/s\nloss-level 0.99\nsamples 5\nprob delay\n0 1\n0.5 2\n1 3\n",
        good_outcome: Accepted("pipe 1 config profile FILE\n"),
        empty_outcome: Rejected(2, "pipe 1: profile: 'FILE': too few points, need at least 2"),
        bad: "name p\nbw 2Mbit/s\nloss-level 0.99\nsamples 5\nprob delay\n0 1\n0.5 2parsecs\n1 3\n",
        bad_outcome: Rejected(
            2,
            "pipe 1: profile: 'FILE': line 7: unknown unit 'parsecs' in '2parsecs': known duration units: s, ms, us, ns",
        ),
        binary_outcome: Rejected(
            2,
            "pipe 1: profile: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "pipe 1: profile: 'FILE': line 1: not a MAC profile (`name`, `bw`, `loss-level`, `samples`, `prob delay` lines); the line is not shown"),
        prefix: "pipe 1: profile: cannot read ",
    },
    Kind {
        name: "bandwidth trace",
        reader: Reader::Pipe("pipe 1 config bw trace:{}"),
        suffix: ".trace",
        good: "1\n2\n3\n4\n",
        good_outcome: Accepted("pipe 1 config bw trace:FILE\n"),
        empty_outcome: Rejected(2, "pipe 1: bw: 'FILE': no timestamps found"),
        bad: "1\n2\nfast\n4\n",
        bad_outcome: Rejected(
            2,
            "pipe 1: bw: 'FILE': line 3: invalid duration 'fast': durations are written like 20ms",
        ),
        binary_outcome: Rejected(
            2,
            "pipe 1: bw: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "pipe 1: bw: 'FILE': line 1: not a bandwidth trace (one timestamp per line, e.g. 12 or 12500us); the line is not shown"),
        prefix: "pipe 1: bw: cannot read ",
    },
    Kind {
        name: "loss trace",
        reader: Reader::Pipe("pipe 1 config loss trace:{}"),
        suffix: ".loss",
        good: "17\n100-103\n@1s-2s\n",
        good_outcome: Accepted("pipe 1 config loss trace:FILE\n"),
        // No losses at all: a valid trace.
        empty_outcome: Accepted("pipe 1 config loss trace:FILE\n"),
        bad: "17\n100-103\n@1s-2seconds\n",
        bad_outcome: Rejected(
            2,
            "pipe 1: loss: 'FILE': line 3: unknown unit 'seconds' in '2seconds': did you mean s?",
        ),
        binary_outcome: Rejected(
            2,
            "pipe 1: loss: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "pipe 1: loss: 'FILE': line 1: not a loss trace (packet numbers, ranges `A-B`, intervals `@T1-T2`); the line is not shown"),
        prefix: "pipe 1: loss: cannot read ",
    },
    Kind {
        name: "delay distribution",
        reader: Reader::Pipe("pipe 1 config delay 10ms distribution file:{}"),
        suffix: ".dist",
        good: "1ms\n2ms\n3ms\n",
        good_outcome: Accepted("pipe 1 config delay 10ms distribution file:FILE\n"),
        empty_outcome: Rejected(2, "pipe 1: distribution: 'FILE': no delay samples"),
        bad: "1ms\n2parsecs\n3ms\n",
        bad_outcome: Rejected(
            2,
            "pipe 1: distribution: 'FILE': line 2: unknown unit 'parsecs' in '2parsecs': known duration units: s, ms, us, ns",
        ),
        binary_outcome: Rejected(
            2,
            "pipe 1: distribution: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "pipe 1: distribution: 'FILE': line 1: not a delay distribution (one delay per line, e.g. 12.5ms, or `P VALUE`); the line is not shown"),
        prefix: "pipe 1: distribution: cannot read ",
    },
    Kind {
        name: "time-varying graph",
        reader: Reader::Pipe("pipe 1 config bw 1Mbit/s timevarying {}"),
        suffix: ".markov",
        good: "state a\nstate b plr 0.25\ninitial b\ndwell a 1 2s\ndwell b 1 1s\narc a b 1\narc b a 100%\n",
        good_outcome: Accepted("pipe 1 config bw 1Mbit/s timevarying FILE\n"),
        empty_outcome: Rejected(2, "pipe 1: timevarying: 'FILE': no `state` lines"),
        bad: "state a\nstate b plr 0.25\ninitial b\ndwell a 1 2s\ndwell b 1 1seconds\narc a b 1\narc b a 100%\n",
        bad_outcome: Rejected(
            2,
            "pipe 1: timevarying: 'FILE': line 5: unknown unit 'seconds' in '1seconds': did you mean s?",
        ),
        binary_outcome: Rejected(
            2,
            "pipe 1: timevarying: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "pipe 1: timevarying: 'FILE': line 1: not a Markov graph (`state`, `dwell`, `arc`, `initial` lines); the line is not shown"),
        prefix: "pipe 1: timevarying: cannot read ",
    },
    Kind {
        name: "GML topology",
        reader: Reader::Topology,
        suffix: ".gml",
        good: "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        good_outcome: Accepted("nodes: 2 (1 VNs), links: 1\npipes: 2 (1 bidirectional)\n"),
        empty_outcome: Rejected(2, "error: FILE: line 1: field `graph`: no `graph [ ... ]` in the input"),
        bad: "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbps\" delay 5 ]\n  edge [ source 2 target 1 delay 5 ]\n]\n",
        bad_outcome: Rejected(
            2,
            "error: FILE: line 5: field `bandwidth`: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
        ),
        binary_outcome: Rejected(
            2,
            "error: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "error: FILE: line 1: unexpected character `:`"),
        prefix: "error: cannot read ",
    },
    Kind {
        name: "TOML topology",
        reader: Reader::Topology,
        suffix: ".toml",
        good: "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\n",
        good_outcome: Accepted("nodes: 2 (1 VNs), links: 1\npipes: 2 (1 bidirectional)\n"),
        // No nodes and no links: an empty topology.
        empty_outcome: Accepted("nodes: 0 (0 VNs), links: 0\n"),
        bad: "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 2\nb = 1\ndelay = \"5 ms\"\n",
        bad_outcome: Rejected(
            2,
            "error: FILE: line 21: link 2 (between 2 and 1): field `delay`: space in '5 ms': write the value as one word: 5ms",
        ),
        binary_outcome: Rejected(
            2,
            "error: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "error: FILE: line 1: expected `.`, `=`"),
        prefix: "error: cannot read ",
    },
    Kind {
        name: "configuration",
        reader: Reader::Config,
        suffix: ".conf",
        good: "pipe 1 config delay 5ms\nadd 100 pipe 1 ip from any to any\n",
        good_outcome: Accepted("set one_pass 1\npipe 1 config delay 5ms\nadd 100 pipe 1 ip from any to any\n"),
        empty_outcome: Accepted("set one_pass 1\n"),
        bad: "pipe 1 config delay 5ms\npipe 2 config bw 10Mbps\npipe 3 config\n",
        bad_outcome: Rejected(
            2,
            "error: unknown unit 'Mbps' in '10Mbps'\n --> FILE:2:18\n\u{2026}did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n1 error in FILE; nothing was applied",
        ),
        binary_outcome: Rejected(
            2,
            "error: invalid UTF-8 at line 3, column 1 (byte 4): byte 0xff is not UTF-8\n --> FILE:3:1",
        ),
        foreign_outcome: Rejected(2, "error: FILE:1: not a configuration: its first line does not start with a command (pipe, sched, queue, add, delete, flush, list, show, set, table); the file's text is not shown; nothing was applied"),
        prefix: "error: cannot read ",
    },
    Kind {
        name: "traffic file",
        reader: Reader::Traffic,
        suffix: ".traffic",
        good: "cbr rate 100pps size 100B duration 1s\n",
        good_outcome: Accepted("flow0              100       100        0   0.000"),
        empty_outcome: Rejected(2, "error: no traffic: give at least one --traffic"),
        bad: "cbr rate 100pps size 100B duration 1s\npoisson rate 10Mbps size 100B duration 1s\n",
        bad_outcome: Rejected(
            2,
            "error: FILE:2:14: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)",
        ),
        binary_outcome: Rejected(
            2,
            "error: invalid UTF-8 at line 3, column 1 (byte 4): byte 0xff is not UTF-8\n --> FILE:3:1",
        ),
        foreign_outcome: Rejected(2, "error: FILE:1:1: not a traffic file: its first line is not a traffic spec (the line is not shown): a spec starts with a pattern (cbr, poisson, onoff), e.g. cbr rate 1000pps size 1000B duration 10s"),
        prefix: "error: cannot read ",
    },
    Kind {
        name: "experiment file",
        reader: Reader::Experiment,
        suffix: ".txt",
        good: "0s link r0 r1 down\n1s link r0 r1 up\n",
        // Read and parsed: refused only because the topology is not up.
        good_outcome: Rejected(2, "error: topology 'plnone' is not up"),
        empty_outcome: Rejected(2, "error: topology 'plnone' is not up"),
        bad: "0s link r0 r1 down\n1s link r0 r1 sideways\n",
        bad_outcome: Rejected(
            2,
            "error: FILE: line 2: unknown link action 'sideways': expected 'down', 'up' or 'set ATTR VALUE...'\n  2 | 1s link r0 r1 sideways\n    |               ^^^^^^^^",
        ),
        binary_outcome: Rejected(
            2,
            "error: cannot read 'FILE': not UTF-8 text (invalid byte at offset 4)",
        ),
        foreign_outcome: Rejected(2, "error: FILE: line 1: not an experiment file: its first line is not `TIME COMMAND` (the line is not shown): e.g. 5s link r0 r1 down"),
        prefix: "error: cannot read ",
    },
];

/// What a case's path names.
#[derive(Clone, Copy, Debug)]
enum Target {
    Good,
    Missing,
    Directory,
    Fifo,
    DevZero,
    DevUrandom,
    LinkToZero,
    OverCap,
    Empty,
    Binary,
    BadLine,
    Foreign,
}

const TARGETS: &[Target] = &[
    Target::Good,
    Target::Missing,
    Target::Directory,
    Target::Fifo,
    Target::DevZero,
    Target::DevUrandom,
    Target::LinkToZero,
    Target::OverCap,
    Target::Empty,
    Target::Binary,
    Target::BadLine,
    Target::Foreign,
];

/// A text file of another kind, its lines secrets (as /etc/shadow's):
/// no error may print them.
const FOREIGN: &[u8] =
    b"root:$6$SECRET1$SECRET2:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nSECRET3 SECRET4\n";

/// Binary bytes: the first invalid UTF-8 byte is at offset 4 (line 3).
const BINARY: &[u8] = b"1\n2\n\xff\xfe\x00\x01\n";

/// The path a case names, made in `dir`.
fn make(dir: &Path, kind: &Kind, target: Target) -> PathBuf {
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.join(format!("{name}{}", kind.suffix));
        std::fs::write(&p, bytes).expect("write");
        p
    };
    match target {
        Target::Good => file("good", kind.good.as_bytes()),
        Target::Missing => dir.join(format!("missing{}", kind.suffix)),
        Target::Directory => {
            let p = dir.join(format!("dir{}", kind.suffix));
            std::fs::create_dir_all(&p).expect("mkdir");
            p
        }
        Target::Fifo => {
            let p = dir.join(format!("fifo{}", kind.suffix));
            if !p.exists() {
                nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644))
                    .expect("mkfifo");
            }
            p
        }
        Target::DevZero => PathBuf::from("/dev/zero"),
        Target::DevUrandom => PathBuf::from("/dev/urandom"),
        Target::LinkToZero => {
            let p = dir.join(format!("zero{}", kind.suffix));
            if !p.exists() {
                std::os::unix::fs::symlink("/dev/zero", &p).expect("symlink");
            }
            p
        }
        Target::OverCap => {
            let p = dir.join(format!("big{}", kind.suffix));
            let f = std::fs::File::create(&p).expect("create");
            f.set_len((64 << 20) + 1).expect("sparse size");
            p
        }
        Target::Empty => file("empty", b""),
        Target::Binary => file("binary", BINARY),
        Target::BadLine => file("bad", kind.bad.as_bytes()),
        Target::Foreign => file("foreign", FOREIGN),
    }
}

/// The expected outcome of `target` for `kind`.
fn expected(kind: &Kind, target: Target) -> (Outcome, String) {
    let refused = |what: &str| format!("{}'FILE': {what}", kind.prefix);
    let generic = match target {
        Target::Good => return (kind.good_outcome, String::new()),
        Target::Empty => return (kind.empty_outcome, String::new()),
        Target::BadLine => return (kind.bad_outcome, String::new()),
        Target::Binary => return (kind.binary_outcome, String::new()),
        Target::Foreign => return (kind.foreign_outcome, String::new()),
        Target::Missing => refused("No such file or directory (os error 2)"),
        Target::Directory => refused("a directory, not a regular file"),
        Target::Fifo => refused("a FIFO, not a regular file"),
        Target::DevZero | Target::DevUrandom | Target::LinkToZero => {
            refused("a character device, not a regular file")
        }
        Target::OverCap => {
            refused("67108865 bytes, more than the limit of 67108864 bytes (64 MiB)")
        }
    };
    (Rejected(2, "@GENERIC@"), generic)
}

/// The command reading `path` as `kind` (a configuration for a pipe's
/// file is written in `dir`).
fn command(dir: &Path, kind: &Kind, path: &Path) -> Command {
    command_of(Path::new(PIPELAB), dir, kind, path)
}

/// [`command`], running the binary `bin`.
fn command_of(bin: &Path, dir: &Path, kind: &Kind, path: &Path) -> Command {
    let mut cmd = Command::new(bin);
    let p = path.display().to_string();
    match kind.reader {
        Reader::Pipe(line) => {
            let conf = dir.join(format!("{}.conf", kind.name.replace(' ', "-")));
            std::fs::write(&conf, line.replace("{}", &p) + "\n").expect("write conf");
            std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644))
                .expect("chmod conf");
            cmd.arg("check").arg(conf);
        }
        Reader::Topology => {
            cmd.args(["topo", "distill", &p]);
        }
        Reader::Config => {
            cmd.args(["check", &p]);
        }
        Reader::Traffic => {
            let conf = dir.join("traffic-test.conf");
            std::fs::write(
                &conf,
                "pipe 1 config delay 5ms\nadd 100 pipe 1 ip from any to any\n",
            )
            .expect("write conf");
            cmd.arg("sim").arg(conf).args(["--traffic-file", &p]);
        }
        Reader::Experiment => {
            cmd.args(["topo", "run", "--name", "plnone", &p]);
        }
    }
    cmd
}

/// Each kind of file against each hostile target.
#[test]
fn every_named_file_is_refused_naming_it_or_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut n = 0;
    for kind in KINDS {
        let kdir = dir.path().join(kind.name.replace(' ', "-"));
        std::fs::create_dir_all(&kdir).expect("mkdir");
        for &target in TARGETS {
            n += 1;
            let path = make(&kdir, kind, target);
            let name = path.display().to_string();
            let (outcome, generic) = expected(kind, target);
            // A FIFO, a device, a file over the cap: refused at once.
            let bound = Duration::from_secs(10);
            let ran = run_bounded(command(&kdir, kind, &path), bound);
            let outcome = match outcome {
                Rejected(code, "@GENERIC@") => {
                    let want = generic.replace("FILE", &name);
                    if ran.code != Some(code) || !ran.stderr.contains(&want) || ran.timed_out {
                        failures.push(format!(
                            "{} / {target:?}: want exit {code} with {want:?}, got {:?} (timed out: {})\n{}",
                            kind.name, ran.code, ran.timed_out, ran.stderr
                        ));
                    }
                    continue;
                }
                o => o,
            };
            if let Err(e) = verdict(&ran, outcome, &name, bound) {
                failures.push(format!("{} / {target:?}: {e}", kind.name));
            }
            if ran.stderr.contains("SECRET") || ran.stdout.contains("SECRET") {
                failures.push(format!(
                    "{} / {target:?}: a line of the file was printed:\n{}{}",
                    kind.name, ran.stdout, ran.stderr
                ));
            }
        }
    }
    all_pass(failures, n);
}

/// A uid with no account and no group: its processes read what the
/// world may read.
const NOBODY: u32 = 4_000_111;

/// Each kind of file, mode 0600 and owned by root, named by a
/// configuration (or a command) that user may read: refused as
/// permission denied, naming the file.
#[test]
#[cfg_attr(
    not(pipelab_live),
    ignore = "needs root (to run pipelab under another uid); run as root or with PIPELAB_LIVE=1"
)]
fn a_file_the_reader_may_not_open_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let bin = hostile::pipelab_for_others(dir.path());
    let mut failures = Vec::new();
    for kind in KINDS {
        let kdir = dir.path().join(kind.name.replace(' ', "-"));
        std::fs::create_dir_all(&kdir).expect("mkdir");
        std::fs::set_permissions(&kdir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = kdir.join(format!("secret{}", kind.suffix));
        std::fs::write(&path, kind.good).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut cmd = command_of(&bin, &kdir, kind, &path);
        cmd.uid(NOBODY).gid(NOBODY).current_dir(&kdir);
        let ran = run_bounded(cmd, Duration::from_secs(10));
        let want = format!(
            "{}'{}': Permission denied (os error 13)",
            kind.prefix,
            path.display()
        );
        if ran.code != Some(2) || !ran.stderr.contains(&want) {
            failures.push(format!(
                "{}: want exit 2 with {want:?}, got {:?}\n{}",
                kind.name, ran.code, ran.stderr
            ));
        }
    }
    all_pass(failures, KINDS.len());
}

/// Reports `pipelab plot` reads, malformed or with values its axes must
/// survive: (case, the input's text, outcome). In outcomes `FILE` stands
/// for the input's path.
const PLOT: &[(&str, &str, Outcome)] = &[
    (
        "a delay_cdf that is not a list",
        r#"{"flows": [{"name": "f", "delay_cdf": "fast"}], "pipes": [], "end_s": 1, "interval_s": 0.1}"#,
        Rejected(2, "error: FILE: flows[0].delay_cdf: expected a list of [fraction, delay_ms] points, got \"fast\""),
    ),
    (
        "a delay_cdf point of one number",
        r#"{"flows": [{"name": "f", "delay_cdf": [[0, 1], [0.5]]}], "pipes": [], "end_s": 1, "interval_s": 0.1}"#,
        Rejected(2, "error: FILE: flows[0].delay_cdf[1]: expected [fraction, delay_ms], two numbers, got [0.5]"),
    ),
    (
        "a delay_cdf point of words",
        r#"{"flows": [{"name": "f", "delay_cdf": [["a", "b"]]}], "pipes": [], "end_s": 1, "interval_s": 0.1}"#,
        Rejected(2, "error: FILE: flows[0].delay_cdf[0]: expected [fraction, delay_ms], two numbers, got [\"a\",\"b\"]"),
    ),
    (
        "a delay_cdf fraction above 1",
        r#"{"flows": [{"name": "f", "delay_cdf": [[0, 1], [1.5, 2]]}], "pipes": [], "end_s": 1, "interval_s": 0.1}"#,
        Rejected(2, "error: FILE: flows[0].delay_cdf[1]: fraction 1.5 is not between 0 and 1"),
    ),
    (
        "a delay_cdf going back",
        r#"{"flows": [{"name": "f", "delay_cdf": [[0, 5], [0.5, 2]]}], "pipes": [], "end_s": 1, "interval_s": 0.1}"#,
        Rejected(2, "error: FILE: flows[0].delay_cdf[1]: [0.5, 2] comes before [0, 5]: a CDF's fractions and delays only grow"),
    ),
    (
        "samples in an unknown unit",
        r#"{"unit": "furlongs", "samples": [{"name": "a", "values": [1, 2]}]}"#,
        Rejected(2, "error: FILE: unit: \"furlongs\" is not a unit pipelab plot knows: \"bit/s\", \"ms\", \"bytes\" (or no unit: plain numbers)"),
    ),
    (
        "samples with a unit that is a number",
        r#"{"unit": 5, "samples": [{"name": "a", "values": [1, 2]}]}"#,
        Rejected(2, "error: FILE: unit: 5 is not a unit pipelab plot knows"),
    ),
    (
        "a probe histogram bin of three numbers",
        r#"{"sent": 3, "received": 3, "histogram": [[1, 2, 3]]}"#,
        Rejected(2, "error: FILE: histogram[0]: expected [upper_ms, count], a count of 0 or more, got [1,2,3]"),
    ),
    (
        "samples spanning more than a double holds",
        r#"{"samples": [{"name": "a", "values": [1e308, -1e308, 0]}]}"#,
        Accepted("cdf graph of FILE (samples), 800x480"),
    ),
    (
        "samples at the largest magnitude",
        r#"{"samples": [{"name": "a", "values": [1.7976931348623157e308, -1.7976931348623157e308]}]}"#,
        Accepted("cdf graph of FILE (samples), 800x480"),
    ),
    (
        "samples a subnormal apart",
        r#"{"samples": [{"name": "a", "values": [0, 5e-324, 1e-320]}]}"#,
        Accepted("cdf graph of FILE (samples), 800x480"),
    ),
    (
        "samples a float's step apart at 1e16",
        r#"{"samples": [{"name": "a", "values": [1e16, 10000000000000002]}]}"#,
        Accepted("cdf graph of FILE (samples), 800x480"),
    ),
    (
        "a sim report's series at huge times and rates",
        r#"{"flows": [], "pipes": [{"id": 1, "timeseries": [{"t_s": -1e308, "capacity_bps": 1e308, "offered_bps": -1e308, "delivered_bps": 0}, {"t_s": 1e308, "capacity_bps": 0, "offered_bps": 1e308, "delivered_bps": 1e308}]}], "end_s": 1, "interval_s": 1e308}"#,
        Accepted("throughput graph of FILE (a sim report), 800x480"),
    ),
    (
        "shares of huge throughputs",
        r#"{"flows": [{"name": "a", "throughput_bps": 1.7976931348623157e308}, {"name": "b", "throughput_bps": -1e308}], "pipes": [], "end_s": 1}"#,
        Accepted("shares graph of FILE (a sim report), 800x480"),
    ),
];

/// Each case of [`PLOT`], drawn as SVG and as PNG: refused naming the
/// field, or drawn, within the bound (a range no `f64` holds made the
/// axis' tick search loop forever).
#[test]
fn plot_inputs_are_refused_naming_the_field_or_drawn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for (i, (case, text, want)) in PLOT.iter().enumerate() {
        let input = dir.path().join(format!("in{i}.json"));
        std::fs::write(&input, text).expect("write");
        let name = input.display().to_string();
        for ext in ["svg", "png"] {
            let out = dir.path().join(format!("out{i}.{ext}"));
            let mut cmd = Command::new(PIPELAB);
            cmd.arg("plot").arg(&input).arg("-o").arg(&out);
            let bound = Duration::from_secs(20);
            let ran = run_bounded(cmd, bound);
            if let Err(e) = verdict(&ran, *want, &name, bound) {
                failures.push(format!("{case} ({ext}): {e}"));
            }
        }
    }
    all_pass(failures, PLOT.len());
}

/// The count of this file's cases (docs/HOSTILE.md): every kind against
/// every target, the permission case of each kind, and plot's inputs.
#[test]
fn case_count() {
    let mut cases = PLOT.len();
    let mut rejections = PLOT.iter().filter(|c| c.2.is_checked_rejection()).count();
    for kind in KINDS {
        for &target in TARGETS {
            cases += 1;
            if expected(kind, target).0.is_checked_rejection() {
                rejections += 1;
            }
        }
        cases += 1;
        rejections += 1;
    }
    tally("hostile_files", cases, rejections, 110, 90);
}
