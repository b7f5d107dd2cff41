//! Packet captures (`--pcap`, pcapng) and event logs (`--events`, JSON
//! lines or CSV) of what crosses an emulation.
//!
//! The runner never does file I/O. At each point where a frame enters,
//! leaves or is dropped it hands a [`Record`] (time, port, what
//! happened, the flow, the size, the emulation's backlog and, for a
//! capture, a copy of the bytes) to its [`Tap`], which puts it on a
//! bounded channel to one writer thread per emulation ([`Recorder`]),
//! shared by every worker. A full channel drops the record and counts it
//! (`capture_lost`): capture never blocks the runner, so it never changes
//! an emulated departure's timing; what it costs the runner is the copy
//! and the send (BENCHMARKS.md measures it).
//!
//! What a capture holds ([`Sink`]):
//! * two interfaces per port, `"NAME in"` (frames as they arrived) and
//!   `"NAME out"` (as they left: after CE marking and corruption, so both
//!   show); nanosecond timestamps; wall-clock time in a live run (the
//!   monotonic instants shifted by one offset taken at start, so
//!   differences are exact), virtual time from 0 in a simulation;
//! * a dropped frame on the interface it arrived by, at the instant it
//!   was dropped, with the comment `dropped: REASON` (`queue`, `loss`,
//!   `aqm`, `link`, `memory`, `rule`, `noroute`, `loop`, `tx`, `handoff`);
//! * a frame the emulation corrupted carries the comment `corrupted` on
//!   its way out; a duplicate leaves as one more frame on `"NAME out"`.
//!
//! So per direction, `in + duplicates = out + dropped + inside`: with
//! nothing inside at the end and no duplication, every arrival is one
//! departure or one drop. A GSO super-frame is one record (its real
//! bytes) where the accounting counts its segments. Frames refused at the
//! memory cap before they had a buffer cannot be recorded: they are
//! counted in [`Summary::unrecorded`].
//!
//! An event log has one line per event: `arrive`, `depart`, `drop` (with
//! its reason), `mark` (CE), `duplicate`, `corrupt`, each with the time
//! (ns since the run's start), the port, the flow, the size and the
//! packets and bytes inside the emulation (this worker's) after it;
//! `--events-max` caps the file's size (writing stops there, and the
//! run says so at exit).

use crate::pcapng;
use pipelab_engine::FlowKey;
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

/// What happened to a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// It entered the emulator (the `in` interface).
    Arrive,
    /// It left the emulator (the `out` interface).
    Depart,
    /// It was dropped, why (`queue`, `loss`, ...).
    Drop(&'static str),
    /// A pipe marked it Congestion Experienced (an event log only; the
    /// capture shows the mark in the departing frame's IP header).
    Mark,
    /// A copy was made (an event log only; the copy departs on its own).
    Duplicate,
    /// Its bits were damaged (an event log only; the departing frame in
    /// a capture carries the comment `corrupted`).
    Corrupt,
}

impl Event {
    /// The event's name in a log.
    pub fn name(self) -> &'static str {
        match self {
            Event::Arrive => "arrive",
            Event::Depart => "depart",
            Event::Drop(_) => "drop",
            Event::Mark => "mark",
            Event::Duplicate => "duplicate",
            Event::Corrupt => "corrupt",
        }
    }
}

/// One record, from the runner (or a simulation) to the writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// When, ns: the monotonic clock in a live run, virtual time in a
    /// simulation.
    pub at_ns: u64,
    /// The port it arrived by (`Arrive`, `Drop`) or left by (`Depart`).
    pub port: u16,
    /// What happened.
    pub event: Event,
    /// The frame departing was corrupted (a capture's comment).
    pub corrupted: bool,
    /// The flow.
    pub key: FlowKey,
    /// The frame's length, bytes.
    pub size: u32,
    /// Packets inside the emulation after the event.
    pub backlog_packets: u32,
    /// Bytes (as the links count them) inside after the event.
    pub backlog_bytes: u64,
    /// The captured bytes (empty without a capture, or for events a
    /// capture does not record).
    pub frame: Vec<u8>,
}

/// Records a writer could not take, shared by every [`Tap`] of a
/// recorder.
#[derive(Debug, Default)]
struct Losses {
    /// Dropped because the channel was full.
    lost: AtomicU64,
    /// Frames dropped at the memory cap before they had a buffer.
    unrecorded: AtomicU64,
}

/// The runner's end of a recorder: cheap to clone, one per worker.
#[derive(Clone, Debug)]
pub struct Tap {
    tx: mpsc::SyncSender<Record>,
    losses: Arc<Losses>,
    bytes: bool,
}

impl Tap {
    /// Whether records should carry the frame's bytes (a capture is
    /// written).
    #[inline]
    pub fn wants_bytes(&self) -> bool {
        self.bytes
    }

    /// Hand `r` to the writer; a full channel drops it (counted), never
    /// waits.
    #[inline]
    pub fn send(&self, r: Record) {
        if self.tx.try_send(r).is_err() {
            self.losses.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Count `n` frames dropped before they had a buffer (not recorded).
    #[inline]
    pub fn unrecorded(&self, n: u64) {
        if n > 0 {
            self.losses.unrecorded.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// Records the channel holds before the runner starts dropping them.
pub const CHANNEL: usize = 1 << 16;

/// Snap length of a live capture's interfaces: a 64 KB GSO super-frame
/// with room to spare, whole.
pub const LIVE_SNAPLEN: u32 = 262_144;

/// How a recording went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Packets written to the capture.
    pub packets: u64,
    /// Lines written to the event log.
    pub events: u64,
    /// Events not written because the log reached `--events-max`.
    pub events_over_cap: u64,
    /// Records dropped because the writer fell behind (the channel was
    /// full): the capture misses them.
    pub capture_lost: u64,
    /// Frames dropped at the memory cap before they had a buffer (in the
    /// accounting as `dropped_memory`, not in the capture).
    pub unrecorded: u64,
}

/// Why a capture or event log cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("--{flag} {}: {what}: {source}", path.display())]
pub struct FileError {
    /// `pcap` or `events`.
    pub flag: &'static str,
    /// The path given.
    pub path: PathBuf,
    /// What was being done.
    pub what: &'static str,
    /// Why.
    pub source: io::Error,
}

/// The files of a recording, opened (so checked) before the run.
#[derive(Debug, Default)]
pub struct Files {
    pcap: Option<(PathBuf, File)>,
    events: Option<(PathBuf, File)>,
    events_max: Option<u64>,
}

/// A recording's file (a capture, an event log, a series), created or
/// truncated with mode 0644 less the umask (a daemon's umask may be 0,
/// and nobody else needs to write a recording), by the one opener of
/// output files, [`pipelab_lang::output::create_output`]: a symbolic
/// link planted by another user is refused, not followed.
pub fn create_file(path: &Path) -> io::Result<File> {
    pipelab_lang::output::create_output(path)
}

/// [`create_file`], naming the flag on failure.
fn create(flag: &'static str, path: &Path) -> Result<(PathBuf, File), FileError> {
    create_file(path)
        .map(|f| (path.to_path_buf(), f))
        .map_err(|source| FileError {
            flag,
            path: path.to_path_buf(),
            what: "cannot write",
            source,
        })
}

impl Files {
    /// Open `pcap` and `events` for writing (either may be absent); the
    /// event log stops at `events_max` bytes. The error names the flag
    /// and the path.
    pub fn create(
        pcap: Option<&Path>,
        events: Option<&Path>,
        events_max: Option<u64>,
    ) -> Result<Files, FileError> {
        Ok(Files {
            pcap: pcap.map(|p| create("pcap", p)).transpose()?,
            events: events.map(|p| create("events", p)).transpose()?,
            events_max,
        })
    }

    /// Whether anything is to be recorded.
    pub fn is_empty(&self) -> bool {
        self.pcap.is_none() && self.events.is_none()
    }

    /// A synchronous writer of these files for ports named `ports`
    /// (a simulation's: virtual time, so `wall_offset_ns` 0 and frames
    /// of at most `snaplen` bytes).
    pub fn sink(self, ports: &[String], snaplen: u32, wall_offset_ns: u64) -> io::Result<Sink> {
        Sink::new(self, ports, snaplen, wall_offset_ns, 0)
    }
}

/// The writer of a capture and an event log (on a recorder's thread, or
/// driven directly by a simulation).
pub struct Sink {
    pcap: Option<PcapOut>,
    events: Option<EventsOut>,
    ports: Vec<String>,
    summary: Summary,
}

struct PcapOut {
    path: PathBuf,
    out: BufWriter<File>,
    /// Added to a record's time: the wall clock's reading at the
    /// monotonic clock's 0 (0 in virtual time).
    offset_ns: u64,
    snaplen: u32,
    /// Interfaces declared: two per port (`in`, `out`) in port order.
    declared: u32,
    block: Vec<u8>,
}

struct EventsOut {
    path: PathBuf,
    out: BufWriter<File>,
    csv: bool,
    max: Option<u64>,
    written: u64,
    /// Subtracted from a record's time: the run's start.
    base_ns: u64,
    line: Vec<u8>,
}

/// The CSV header of an event log.
pub const CSV_HEADER: &str =
    "t_ns,port,event,reason,proto,src,dst,sport,dport,size,backlog_packets,backlog_bytes\n";

impl Sink {
    fn new(
        files: Files,
        ports: &[String],
        snaplen: u32,
        wall_offset_ns: u64,
        base_ns: u64,
    ) -> io::Result<Sink> {
        let mut s = Sink {
            pcap: None,
            events: None,
            ports: ports.to_vec(),
            summary: Summary::default(),
        };
        if let Some((path, f)) = files.pcap {
            let mut p = PcapOut {
                path,
                out: BufWriter::with_capacity(1 << 20, f),
                offset_ns: wall_offset_ns,
                snaplen,
                declared: 0,
                block: Vec::with_capacity(2048),
            };
            pcapng::section_header(&mut p.block, "pipelab");
            for name in ports {
                pcapng::interface(&mut p.block, &format!("{name} in"), snaplen);
                pcapng::interface(&mut p.block, &format!("{name} out"), snaplen);
                p.declared += 2;
            }
            p.flush_block()?;
            s.pcap = Some(p);
        }
        if let Some((path, f)) = files.events {
            let csv = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
            let mut e = EventsOut {
                path,
                out: BufWriter::with_capacity(1 << 20, f),
                csv,
                max: files.events_max,
                written: 0,
                base_ns,
                line: Vec::with_capacity(256),
            };
            if csv {
                // The header counts toward the cap, not as an event.
                e.out
                    .write_all(CSV_HEADER.as_bytes())
                    .map_err(|err| named(err, "writing the event log", &e.path))?;
                e.written = CSV_HEADER.len() as u64;
            }
            s.events = Some(e);
        }
        Ok(s)
    }

    /// Write `r` (to the capture if it records that event, and to the
    /// event log).
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        if let Some(p) = self.pcap.as_mut() {
            let iface = match r.event {
                Event::Arrive | Event::Drop(_) => Some(r.port as u32 * 2),
                Event::Depart => Some(r.port as u32 * 2 + 1),
                _ => None,
            };
            if let Some(iface) = iface {
                // A port the start did not know (none so far): declared
                // now, with every port before it.
                while p.declared <= iface {
                    let port = p.declared / 2;
                    let side = if p.declared.is_multiple_of(2) {
                        "in"
                    } else {
                        "out"
                    };
                    let name = self
                        .ports
                        .get(port as usize)
                        .cloned()
                        .unwrap_or_else(|| format!("port{port}"));
                    pcapng::interface(&mut p.block, &format!("{name} {side}"), p.snaplen);
                    p.declared += 1;
                }
                let comment = match r.event {
                    Event::Drop(why) => format!("dropped: {why}"),
                    Event::Depart if r.corrupted => "corrupted".to_string(),
                    _ => String::new(),
                };
                let data = &r.frame[..r.frame.len().min(p.snaplen as usize)];
                pcapng::packet(
                    &mut p.block,
                    iface,
                    r.at_ns.wrapping_add(p.offset_ns),
                    data,
                    r.size,
                    &comment,
                );
                p.flush_block()?;
                self.summary.packets += 1;
            }
        }
        if let Some(e) = self.events.as_mut() {
            let port = self.ports.get(r.port as usize).map(String::as_str);
            e.format(r, port);
            e.emit(&mut self.summary)?;
        }
        Ok(())
    }

    /// Write out what is buffered (the files stay valid: whole blocks
    /// and lines only).
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(p) = self.pcap.as_mut() {
            p.out
                .flush()
                .map_err(|e| named(e, "writing the capture", &p.path))?;
        }
        if let Some(e) = self.events.as_mut() {
            e.out
                .flush()
                .map_err(|err| named(err, "writing the event log", &e.path))?;
        }
        Ok(())
    }

    /// Flush and close; what was written.
    pub fn finish(mut self) -> io::Result<Summary> {
        self.flush()?;
        Ok(self.summary)
    }
}

fn named(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

impl PcapOut {
    fn flush_block(&mut self) -> io::Result<()> {
        let r = self.out.write_all(&self.block);
        self.block.clear();
        r.map_err(|e| named(e, "writing the capture", &self.path))
    }
}

impl EventsOut {
    fn format(&mut self, r: &Record, port: Option<&str>) {
        let t = r.at_ns.saturating_sub(self.base_ns);
        let reason = match r.event {
            Event::Drop(why) => why,
            _ => "",
        };
        let k = &r.key;
        let l = &mut self.line;
        // Writing to a Vec cannot fail.
        let _ = if self.csv {
            writeln!(
                l,
                "{t},{},{},{reason},{},{},{},{},{},{},{},{}",
                port.unwrap_or(""),
                r.event.name(),
                k.proto,
                k.src,
                k.dst,
                k.sport,
                k.dport,
                r.size,
                r.backlog_packets,
                r.backlog_bytes
            )
        } else {
            // Port names are the mode's (interface and VN names, no
            // quotes or backslashes); written as JSON strings all the
            // same.
            let port = port.map_or_else(|| "null".to_string(), json_string);
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(",\"reason\":\"{reason}\"")
            };
            writeln!(
                l,
                "{{\"t_ns\":{t},\"port\":{port},\"event\":\"{}\"{reason},\"proto\":{},\"src\":\"{}\",\"dst\":\"{}\",\"sport\":{},\"dport\":{},\"size\":{},\"backlog_packets\":{},\"backlog_bytes\":{}}}",
                r.event.name(),
                k.proto,
                k.src,
                k.dst,
                k.sport,
                k.dport,
                r.size,
                r.backlog_packets,
                r.backlog_bytes
            )
        };
    }

    /// Write the line formatted, unless it would pass the cap.
    fn emit(&mut self, s: &mut Summary) -> io::Result<()> {
        let n = self.line.len() as u64;
        // Once a line does not fit, none after it is written: the log
        // is the run's beginning, whole.
        if s.events_over_cap > 0 || self.max.is_some_and(|m| self.written + n > m) {
            s.events_over_cap += 1;
        } else {
            self.out
                .write_all(&self.line)
                .map_err(|e| named(e, "writing the event log", &self.path))?;
            self.written += n;
            s.events += 1;
        }
        self.line.clear();
        Ok(())
    }
}

/// A string as JSON writes it.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The writer thread of a live emulation: [`Recorder::start`] gives the
/// [`Tap`] every runner clones, [`Recorder::finish`] (after the runners
/// stopped) flushes and closes the files.
pub struct Recorder {
    thread: Option<std::thread::JoinHandle<io::Result<Summary>>>,
    losses: Arc<Losses>,
    /// Dropped last, so the thread sees the channel close only when
    /// every runner's tap is gone too.
    tx: Option<mpsc::SyncSender<Record>>,
}

impl Recorder {
    /// Start writing `files` for ports named `ports`: the capture in wall
    /// time, the event log in ns since now.
    pub fn start(files: Files, ports: &[String]) -> io::Result<(Recorder, Tap)> {
        let mono = crate::clock::monotonic_ns();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let bytes = files.pcap.is_some();
        let mut sink = Sink::new(files, ports, LIVE_SNAPLEN, wall.wrapping_sub(mono), mono)?;
        let (tx, rx) = mpsc::sync_channel::<Record>(CHANNEL);
        let losses = Arc::new(Losses::default());
        let thread = std::thread::Builder::new()
            .name("pipelab-capture".into())
            .spawn(move || {
                // Every record is written as it comes; the buffers go out
                // whenever the channel runs dry, so the files are current
                // (and valid: whole blocks) while the run goes on.
                loop {
                    match rx.try_recv() {
                        Ok(r) => sink.write(&r)?,
                        Err(mpsc::TryRecvError::Empty) => {
                            sink.flush()?;
                            match rx.recv() {
                                Ok(r) => sink.write(&r)?,
                                Err(_) => break,
                            }
                        }
                        Err(mpsc::TryRecvError::Disconnected) => break,
                    }
                }
                sink.finish()
            })?;
        let tap = Tap {
            tx: tx.clone(),
            losses: losses.clone(),
            bytes,
        };
        Ok((
            Recorder {
                thread: Some(thread),
                losses,
                tx: Some(tx),
            },
            tap,
        ))
    }

    /// Records dropped so far because the writer fell behind.
    pub fn lost(&self) -> u64 {
        self.losses.lost.load(Ordering::Relaxed)
    }

    /// Wait for the writer to write what every tap sent (call once the
    /// runners, and so their taps, are gone), flush and close the files.
    pub fn finish(mut self) -> io::Result<Summary> {
        self.tx = None;
        let mut s = match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r?,
            Some(Err(_)) => return Err(io::Error::other("the capture writer panicked")),
            None => Summary::default(),
        };
        s.capture_lost = self.losses.lost.load(Ordering::Relaxed);
        s.unrecorded = self.losses.unrecorded.load(Ordering::Relaxed);
        Ok(s)
    }
}

impl Summary {
    /// What a user should be told at exit, if anything: records lost,
    /// frames not recorded, an event log cut at its cap.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.capture_lost > 0 {
            w.push(format!(
                "{} records were lost: the capture writer fell behind (capture_lost)",
                self.capture_lost
            ));
        }
        if self.unrecorded > 0 {
            w.push(format!(
                "{} frames dropped at the memory cap before they had a buffer are not in the capture",
                self.unrecorded
            ));
        }
        if self.events_over_cap > 0 {
            w.push(format!(
                "the event log reached --events-max: {} events after it were not written",
                self.events_over_cap
            ));
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn record(at_ns: u64, port: u16, event: Event) -> Record {
        Record {
            at_ns,
            port,
            event,
            corrupted: false,
            key: FlowKey {
                proto: 17,
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                sport: 1000,
                dport: 5001,
            },
            size: 60,
            backlog_packets: 1,
            backlog_bytes: 46,
            frame: vec![0x55; 60],
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pipelab-capture-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("dir");
        d.join(name)
    }

    /// A pass proves a recorder's files: interfaces per port and side,
    /// arrivals on `in`, departures on `out` (corrupted ones commented),
    /// drops on `in` with their reason, events-only records left out of
    /// the capture, one JSON line per record, the CSV header, and the
    /// size cap counted.
    #[test]
    fn a_recorder_writes_what_its_taps_send() {
        let (pcap, events, csv) = (tmp("a.pcapng"), tmp("a.jsonl"), tmp("a.csv"));
        let files = Files::create(Some(&pcap), Some(&events), None).expect("files");
        let names = vec!["inside".to_string(), "outside".to_string()];
        let (rec, tap) = Recorder::start(files, &names).expect("starts");
        assert!(tap.wants_bytes());
        let t2 = tap.clone();
        tap.send(record(1_000, 0, Event::Arrive));
        t2.send(record(2_000, 0, Event::Drop("loss")));
        tap.send(record(3_000, 0, Event::Arrive));
        tap.send(record(4_000, 1, Event::Mark));
        tap.send(Record {
            corrupted: true,
            ..record(5_000, 1, Event::Depart)
        });
        tap.unrecorded(2);
        drop((tap, t2));
        let s = rec.finish().expect("finishes");
        assert_eq!(
            s,
            Summary {
                packets: 4,
                events: 5,
                events_over_cap: 0,
                capture_lost: 0,
                unrecorded: 2
            }
        );
        let c = pcapng::read(&std::fs::read(&pcap).expect("pcap")).expect("parses");
        assert_eq!(
            c.interfaces,
            vec!["inside in", "inside out", "outside in", "outside out"]
        );
        let ifaces: Vec<u32> = c.packets.iter().map(|p| p.iface).collect();
        assert_eq!(ifaces, vec![0, 0, 0, 3]);
        assert_eq!(c.packets[1].comments, vec!["dropped: loss"]);
        assert_eq!(c.packets[3].comments, vec!["corrupted"]);
        // Differences of wall-clock timestamps are the records' own.
        assert_eq!(c.packets[3].ts_ns - c.packets[0].ts_ns, 4_000);
        let log = std::fs::read_to_string(&events).expect("log");
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(
            lines[1].contains("\"event\":\"drop\",\"reason\":\"loss\""),
            "{}",
            lines[1]
        );
        assert!(
            lines[3].contains("\"port\":\"outside\",\"event\":\"mark\""),
            "{}",
            lines[3]
        );

        // CSV, capped: the header and as many whole lines as fit.
        let files =
            Files::create(None, Some(&csv), Some(CSV_HEADER.len() as u64 + 120)).expect("csv");
        let mut sink = files.sink(&names, 128, 0).expect("sink");
        for i in 0..5 {
            sink.write(&record(i, 0, Event::Arrive)).expect("writes");
        }
        let s = sink.finish().expect("finishes");
        let text = std::fs::read_to_string(&csv).expect("csv");
        assert!(text.starts_with(CSV_HEADER));
        let body = text.len() - CSV_HEADER.len();
        assert!(body <= 120 && body > 0, "{text}");
        assert_eq!(s.events + s.events_over_cap, 5);
        assert!(s.events_over_cap > 0);
        assert_eq!(
            text.lines().nth(1),
            Some("0,inside,arrive,,17,10.0.0.1,10.0.0.2,1000,5001,60,1,46")
        );
        std::fs::remove_dir_all(pcap.parent().expect("dir")).expect("clean");
    }

    /// A pass proves a path that cannot be written is refused naming the
    /// flag and the path.
    #[test]
    fn an_unwritable_path_is_named() {
        let e = Files::create(Some(Path::new("/nonexistent/x.pcapng")), None, None)
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            e,
            Err("--pcap /nonexistent/x.pcapng: cannot write: No such file or directory (os error 2)".into())
        );
    }
}
