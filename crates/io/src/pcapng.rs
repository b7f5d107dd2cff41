//! The pcapng file format (draft-ietf-opsawg-pcapng): the few blocks a
//! capture needs, written and read back. Pure: bytes in, bytes out.
//!
//! A file is one section: a Section Header Block (SHB), then one
//! Interface Description Block (IDB) per interface (`if_name`, linktype
//! Ethernet, a snap length, `if_tsresol` 9: nanosecond timestamps), then
//! Enhanced Packet Blocks (EPB): interface, timestamp, captured and
//! original length, the bytes, and an optional `opt_comment` (why a
//! packet was dropped, that it was corrupted). Little-endian, as the
//! SHB's byte-order magic says; every block is padded to 32 bits and
//! ends with its length again, so a reader can walk it either way.
//!
//! pipelab writes its own blocks rather than use a crate: they are a few
//! dozen lines, it keeps the output byte-for-byte under our control (a
//! virtual-time capture is byte-identical across runs), and the reader
//! beside it lets the tests check what `tcpdump` and `tshark` will see.

/// Block types.
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
/// The byte-order magic of a section header.
const BYTE_ORDER: u32 = 0x1A2B_3C4D;
/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// Option codes.
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    // Options longer than 64 KiB cannot be written; comments are short.
    let len = value.len().min(u16::MAX as usize);
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(len as u16).to_le_bytes());
    out.extend_from_slice(&value[..len]);
    out.resize(out.len() + pad4(len) - len, 0);
}

/// Append a block of type `kind` whose body `body` writes (after the
/// type and length, before the trailing length).
fn block(out: &mut Vec<u8>, kind: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = (out.len() - start + 4) as u32;
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// Append a section header (section length unknown: -1), naming the
/// application that wrote it.
pub fn section_header(out: &mut Vec<u8>, application: &str) {
    block(out, SHB, |b| {
        b.extend_from_slice(&BYTE_ORDER.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        option(b, SHB_USERAPPL, application.as_bytes());
        option(b, OPT_END, &[]);
    });
}

/// Append an interface description: Ethernet, `snaplen`, nanosecond
/// timestamps, named `name`.
pub fn interface(out: &mut Vec<u8>, name: &str, snaplen: u32) {
    block(out, IDB, |b| {
        b.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&snaplen.to_le_bytes());
        option(b, IF_NAME, name.as_bytes());
        option(b, IF_TSRESOL, &[9]);
        option(b, OPT_END, &[]);
    });
}

/// Append an enhanced packet: `data` (at most the interface's snap
/// length) of a frame of `orig_len` bytes seen on interface `iface` at
/// `ts_ns` (ns since the epoch), with `comment` if not empty.
pub fn packet(
    out: &mut Vec<u8>,
    iface: u32,
    ts_ns: u64,
    data: &[u8],
    orig_len: u32,
    comment: &str,
) {
    block(out, EPB, |b| {
        b.extend_from_slice(&iface.to_le_bytes());
        b.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&orig_len.max(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        b.resize(b.len() + pad4(data.len()) - data.len(), 0);
        if !comment.is_empty() {
            option(b, OPT_COMMENT, comment.as_bytes());
            option(b, OPT_END, &[]);
        }
    });
}

/// A packet read back from a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Index of its interface (in order of the interface blocks).
    pub iface: u32,
    /// Timestamp, ns since the epoch.
    pub ts_ns: u64,
    /// The captured bytes.
    pub data: Vec<u8>,
    /// The frame's length on the wire.
    pub orig_len: u32,
    /// Its comments (`opt_comment`), in order.
    pub comments: Vec<String>,
}

/// A capture read back: its interfaces' names and its packets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    /// Interface names (`if_name`), by index.
    pub interfaces: Vec<String>,
    /// Packets, in file order.
    pub packets: Vec<Packet>,
}

/// Why a capture cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not start with a section header.
    #[error("not a pcapng file (no section header block)")]
    NotPcapng,
    /// A big-endian section (pipelab writes little-endian only).
    #[error("a big-endian pcapng section (only little-endian is read)")]
    BigEndian,
    /// A block's length is impossible.
    #[error("block at byte {at}: length {len} is not a multiple of 4 of at least 12, or runs past the end")]
    Length {
        /// Where the block starts.
        at: usize,
        /// The length it claims.
        len: usize,
    },
    /// An interface's timestamps are not in nanoseconds.
    #[error("interface {0}: timestamps are not in nanoseconds (if_tsresol 9)")]
    Resolution(usize),
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    b.get(i..i + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    b.get(i..i + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// The options in `b` (code, value), until the end option or the end.
fn options(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 <= b.len() {
        let code = u16_at(b, i);
        let len = u16_at(b, i + 2) as usize;
        if code == OPT_END {
            break;
        }
        let Some(v) = b.get(i + 4..i + 4 + len) else {
            break;
        };
        out.push((code, v));
        i += 4 + pad4(len);
    }
    out
}

/// Read a capture this module wrote (one little-endian section, Ethernet
/// interfaces with nanosecond timestamps). A trailing partial block (a
/// file cut by a crash) ends the reading; blocks of other types are
/// skipped.
pub fn read(bytes: &[u8]) -> Result<Capture, ReadError> {
    if u32_at(bytes, 0) != SHB {
        return Err(ReadError::NotPcapng);
    }
    if u32_at(bytes, 8) != BYTE_ORDER {
        return Err(if u32_at(bytes, 8) == BYTE_ORDER.swap_bytes() {
            ReadError::BigEndian
        } else {
            ReadError::NotPcapng
        });
    }
    let mut c = Capture::default();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let kind = u32_at(bytes, at);
        let len = u32_at(bytes, at + 4) as usize;
        if len < 12 || !len.is_multiple_of(4) {
            return Err(ReadError::Length { at, len });
        }
        let Some(blk) = bytes.get(at..at + len) else {
            // Cut short: what came before stands.
            break;
        };
        let body = &blk[8..len - 4];
        match kind {
            IDB => {
                let opts = options(body.get(8..).unwrap_or(&[]));
                let name = opts
                    .iter()
                    .find(|(c, _)| *c == IF_NAME)
                    .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                    .unwrap_or_default();
                let ns = opts.iter().any(|(c, v)| *c == IF_TSRESOL && *v == [9]);
                if !ns {
                    return Err(ReadError::Resolution(c.interfaces.len()));
                }
                c.interfaces.push(name);
            }
            EPB => {
                let caplen = u32_at(body, 12) as usize;
                let data = body.get(20..20 + caplen).unwrap_or(&[]).to_vec();
                let opts = options(body.get(20 + pad4(caplen)..).unwrap_or(&[]));
                c.packets.push(Packet {
                    iface: u32_at(body, 0),
                    ts_ns: (u32_at(body, 4) as u64) << 32 | u32_at(body, 8) as u64,
                    data,
                    orig_len: u32_at(body, 16),
                    comments: opts
                        .iter()
                        .filter(|(c, _)| *c == OPT_COMMENT)
                        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                        .collect(),
                });
            }
            _ => {}
        }
        at += len;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass proves the blocks' golden bytes (an EPB of a 5-byte frame
    /// with a comment: header, padding, option, end, trailing length),
    /// and that what is written reads back whole.
    #[test]
    fn blocks_have_their_layout_and_read_back() {
        let mut epb = Vec::new();
        packet(
            &mut epb,
            3,
            0x1_0000_0002,
            &[1, 2, 3, 4, 5],
            60,
            "dropped: loss",
        );
        #[rustfmt::skip]
        let golden: Vec<u8> = [
            &[6u8, 0, 0, 0][..], &[64, 0, 0, 0],       // EPB, 64 bytes
            &[3, 0, 0, 0],                              // interface 3
            &[1, 0, 0, 0], &[2, 0, 0, 0],               // ts high, low
            &[5, 0, 0, 0], &[60, 0, 0, 0],              // captured, original
            &[1, 2, 3, 4, 5, 0, 0, 0],                  // data, padded
            &[1, 0, 13, 0], b"dropped: loss", &[0, 0, 0], // comment, padded
            &[0, 0, 0, 0],                              // end of options
            &[64, 0, 0, 0],                             // length again
        ]
        .concat();
        assert_eq!(epb, golden);

        let mut f = Vec::new();
        section_header(&mut f, "pipelab test");
        interface(&mut f, "inside in", 262_144);
        interface(&mut f, "inside out", 262_144);
        packet(&mut f, 1, 1_700_000_000_123_456_789, &[0xaa; 60], 60, "");
        f.extend_from_slice(&epb);
        // A block cut short by a crash: ignored.
        f.extend_from_slice(&epb[..20]);
        let c = read(&f).expect("reads");
        assert_eq!(c.interfaces, vec!["inside in", "inside out"]);
        assert_eq!(c.packets.len(), 2);
        assert_eq!(c.packets[0].ts_ns, 1_700_000_000_123_456_789);
        assert_eq!(c.packets[0].data, vec![0xaa; 60]);
        assert!(c.packets[0].comments.is_empty());
        assert_eq!(c.packets[1].iface, 3);
        assert_eq!(c.packets[1].orig_len, 60);
        assert_eq!(c.packets[1].comments, vec!["dropped: loss"]);
        assert_eq!(read(b"not a capture at all"), Err(ReadError::NotPcapng));
    }
}
