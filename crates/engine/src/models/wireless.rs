//! The wireless channel model of the PlanetLab-Dummynet emulator (the
//! Onelab2 paper in `papers/planetlab-dummynet-emulation.txt`, §4.1–§4.3,
//! Fig. 7–9, Tables 3–4): 802.11b and
//! 802.11g modulations, noise-induced packet errors from the SNR, MAC-level
//! overheads (DIFS, backoff, PLCP preamble, MAC header, SIFS, ACK),
//! competing traffic (`netload`), collisions and link-level retransmission.
//!
//! # Errors from noise (§4.2)
//! The relation SNR → bit (or symbol) error rate is the one of ns-3's
//! `DsssErrorRateModel` for 802.11b (ns-3 `src/wifi/model/
//! dsss-error-rate-model.cc`, validated in the paper's ref. 20, §1.2.3) and of ns-3's `NistErrorRateModel` for the
//! 802.11g OFDM rates (Pei and Henderson, "Validation of OFDM error rate
//! model in ns-3", Boeing 2010). With `B` = 22 MHz (the DSSS spread
//! bandwidth), `R` the data rate and `SNR` linear:
//!
//! * Eb/N0 = SNR·B/R (§4.2). DSSS uses it as written.
//! * **DBPSK, 1 Mbit/s**: `BER = ½·exp(−Eb/N0)`.
//! * **DQPSK, 2 Mbit/s** (the approximation of the paper's ref. 24):
//!   `BER = (√2+1)/√(8π√2) · (Eb/N0)^−½ · exp(−(2−√2)·Eb/N0)`.
//! * **CCK, 5.5 Mbit/s** (4 bits/symbol): symbol error rate
//!   `SER = P16(2·Eb/N0)`, where `P16(e) = 1 − ∫_{−β}^{∞} (2Φ(x+β)−1)^7 φ(x) dx`
//!   with `β = √(2e)` (ns-3's GSL branch, `SymbolErrorProb16Cck`: the
//!   orthogonal-signal bound over the 8 bi-orthogonal codewords).
//! * **CCK, 11 Mbit/s** (8 bits/symbol): `SER = 1 − (1 − P16(2·Eb/N0))²`
//!   (`SymbolErrorProb256Cck`).
//! * **OFDM 6–54 Mbit/s** (NIST model): the raw bit error rate of the
//!   subcarrier constellation, `BPSK ½·erfc(√snr)`, `QPSK ½·erfc(√(snr/2))`,
//!   `M-QAM (√M−1)/(√M·log2 √M)·erfc(√(snr/(2(M−1)/3)))`, then the
//!   Viterbi first-event bound of the convolutional code of rate `b/(b+1)`:
//!   `D = √(4p(1−p))`, `Pe = 1/(2b)·Σ a_d D^d` with the distance spectra of
//!   ns-3 (`CalculatePe`), capped at 1. Like ns-3, the NIST model is
//!   evaluated at the channel SNR itself, not at SNR·B/R: its curves are
//!   already per coded bit of a 20 MHz OFDM symbol, and rescaling would
//!   count the coding gain twice (this is the one place where the paper's
//!   Eb/N0 = SNR·B/R is not applied, as in ns-3).
//!
//! A packet of `L` bits, sent in units (bits or symbols) of `k` bits each,
//! is in error with probability `PER = 1 − (1 − P_unit)^(L/k)` (§4.2; for
//! CCK, `L/k` is ns-3's `nbits/4.0` or `nbits/8.0`). It is evaluated as
//! `−expm1((L/k)·ln_1p(−P_unit))`, the same quantity without the
//! cancellation of `1 − (1 − p)^n` for tiny `p`. A unit error rate is
//! clamped to `[0, 1]` before use (the DQPSK approximation exceeds ½ below
//! Eb/N0 ≈ 0.3).
//!
//! `erfc` is computed here (std has none): for `0 ≤ x < 2.5` by the
//! positive-term series `erf x = 2/√π·e^{−x²}·Σ 2ⁿx^{2n+1}/(1·3···(2n+1))`
//! (Abramowitz & Stegun 7.1.6; no cancellation), for `x ≥ 2.5` by the
//! continued fraction 7.1.14 evaluated with the modified Lentz algorithm.
//! Both run to machine precision (relative error ≈ 1e-15, checked in the
//! tests against Python's `math.erfc`). The CCK integral is computed by
//! composite 16-point Gauss–Legendre over `t = x + β ∈ [0, β + 40]` in
//! panels of 0.25, its integrand written as `1 − (1 − erfc(t/√2))^7`
//! through `expm1`/`ln_1p` so that tiny SERs keep their relative precision.
//!
//! # Tables (§4.2, "we compute offline the PER")
//! [`PerTable`] holds `PER(snr, size)` for one modulation over an SNR grid
//! (dB) × a packet-size grid (bytes of MPDU), computed at configuration time
//! with [`Modulation::per`] itself, so a lookup at a grid point *is* the
//! formula (bit for bit). Off the grid it interpolates geometrically in the
//! success probability `S = 1 − PER`: along the size axis this is exact up
//! to rounding (`ln S` is linear in `L`), along the SNR axis it is an
//! approximation (linear in dB of `ln S`). Sizes and SNRs outside the grid
//! are clamped to its edges. A [`WirelessModel`] builds a dense table, one
//! entry per MPDU size `0..=MAX_TABLE_MPDU`, at its configured SNR: the
//! per-packet cost is one index and one random draw per attempt.
//!
//! # MAC overheads (§4.1, Fig. 7)
//! One transmission attempt of an MPDU of `M` bytes occupies the channel for
//!
//! `DIFS + k·slot + PPDU(M) + SIFS + ACK`        (acknowledged), or
//! `DIFS + k·slot + PPDU(M) + ACKTimeout`        (failed),
//!
//! where `k` is uniform over `[0, CW−1]`, `CW` starts at `cw` slots and
//! doubles after each failed attempt up to `cwmax` (binary exponential
//! backoff). `M = IP length + overhead` with overhead 36 bytes by default:
//! MAC header 24 + FCS 4 + LLC/SNAP 8 (RFC 1042). Per standard:
//!
//! | | 802.11b (HR/DSSS, cl. 15/18) | 802.11g (ERP-OFDM, cl. 19) |
//! |---|---|---|
//! | slot, SIFS, DIFS | 20, 10, 50 µs | 9 (short slot), 10, 28 µs |
//! | PLCP | long 192 µs (144 preamble + 48 header); short 96 µs (72 + 24), never at 1 Mbit/s | 20 µs (16 preamble + 4 SIGNAL), + 6 µs signal extension after the frame |
//! | PPDU(M) | PLCP + ⌈8M/R⌉ µs (the LENGTH field is whole µs) | 20 + 4·⌈(16 + 8M + 6)/N_DBPS⌉ + 6 µs |
//! | ACK (14 bytes) | at `ack-rate`, default the data rate (basic set 1, 2, 5.5, 11) with the data frame's preamble | at `ack-rate`, default 6 Mbit/s (a g-only BSS whose basic set is {6}) |
//! | ACKTimeout | SIFS + slot + PLCP | SIFS + slot + 25 µs (aPHY-RX-START-Delay) |
//! | cw (slots), cwmax | 32, 1024 | 16, 1024 |
//!
//! [`WirelessConfig::delay_profile`] turns the first attempt's overhead
//! (everything but `8·len/R`) into a Dummynet delay profile, the staircase
//! of Fig. 7.
//!
//! # Competing traffic and retries (§4.3)
//! `netload n`: every attempt's channel time is multiplied by `1/(1−n)`
//! (fixed point, 32 fractional bits, rounded to the nanosecond).
//! `collision c`: each attempt independently fails with probability `c`, in
//! addition to noise: the attempt succeeds with probability
//! `(1 − c)·(1 − PER)`. A failed attempt keeps the channel busy for its
//! whole duration and is retried up to `retries` more times (so at most
//! `retries + 1` attempts); after the last failure the packet is reported
//! lost upstream. Errors of the ACK frame and of the PLCP header are not
//! modelled (both are short and sent at a robust rate).
//!
//! What this module deliberately does not do: queue packets or schedule the
//! link (the pipe does: it keeps the link busy for [`Attempts::airtime`]
//! and drops the packet when [`Attempts::delivered`] is false), parse the
//! command language (`crates/lang`), or model RTS/CTS, fragmentation, rate
//! adaptation or hidden terminals.

use core::fmt;

use rand::Rng;

use crate::models::{ModelError, Probability, Profile};
use crate::rng::StageRng;
use crate::time::{Duration, Rate};

const WHAT: &str = "wireless";

/// DSSS spread bandwidth `B` of §4.2's Eb/N0 = SNR·B/R (Hz), as in ns-3.
pub const DSSS_BANDWIDTH_HZ: f64 = 22e6;

/// The dense per-model PER table covers MPDUs of `0..=MAX_TABLE_MPDU`
/// bytes (the 802.11 maximum MPDU is 2346); longer ones use the formula.
pub const MAX_TABLE_MPDU: usize = 2346;

/// Default per-packet MAC overhead in bytes: header 24 + FCS 4 + LLC/SNAP 8.
pub const DEFAULT_OVERHEAD_BYTES: u32 = 36;

/// Default retry limit (retransmissions after the first attempt).
pub const DEFAULT_RETRIES: u32 = 7;

/// Largest contention window, in slots (`cwmax` default, 802.11 CWmax + 1).
pub const DEFAULT_CWMAX: u32 = 1024;

/// Length of an ACK frame in bytes (frame control, duration, RA, FCS).
const ACK_BYTES: u64 = 14;

/// The PHY family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Standard {
    /// 802.11b: DSSS and HR/DSSS (CCK), 2.4 GHz.
    B,
    /// 802.11g: ERP-OFDM, 2.4 GHz.
    G,
}

impl Standard {
    /// The name used in the config words, `802.11b` or `802.11g`.
    pub fn name(self) -> &'static str {
        match self {
            Standard::B => "802.11b",
            Standard::G => "802.11g",
        }
    }

    /// The standard called `name`: `802.11b` (or `11b`, `b`) and `802.11g`,
    /// any case (a name lookup, as [`crate::models::Distribution::from_name`]).
    pub fn from_name(s: &str) -> Option<Standard> {
        match s.to_ascii_lowercase().as_str() {
            "802.11b" | "11b" | "b" => Some(Standard::B),
            "802.11g" | "11g" | "g" => Some(Standard::G),
            _ => None,
        }
    }
}

impl fmt::Display for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A modulation and coding scheme of 802.11b or 802.11g, named by rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Modulation {
    /// DBPSK, 1 Mbit/s (802.11b).
    Dbpsk1,
    /// DQPSK, 2 Mbit/s (802.11b).
    Dqpsk2,
    /// CCK, 5.5 Mbit/s, 4 bits per symbol (802.11b).
    Cck5_5,
    /// CCK, 11 Mbit/s, 8 bits per symbol (802.11b).
    Cck11,
    /// OFDM BPSK rate ½, 6 Mbit/s (802.11g).
    Ofdm6,
    /// OFDM BPSK rate ¾, 9 Mbit/s.
    Ofdm9,
    /// OFDM QPSK rate ½, 12 Mbit/s.
    Ofdm12,
    /// OFDM QPSK rate ¾, 18 Mbit/s.
    Ofdm18,
    /// OFDM 16-QAM rate ½, 24 Mbit/s.
    Ofdm24,
    /// OFDM 16-QAM rate ¾, 36 Mbit/s.
    Ofdm36,
    /// OFDM 64-QAM rate ⅔, 48 Mbit/s.
    Ofdm48,
    /// OFDM 64-QAM rate ¾, 54 Mbit/s.
    Ofdm54,
}

impl Modulation {
    /// Every modulation, 802.11b first, by rate.
    pub const ALL: [Modulation; 12] = [
        Modulation::Dbpsk1,
        Modulation::Dqpsk2,
        Modulation::Cck5_5,
        Modulation::Cck11,
        Modulation::Ofdm6,
        Modulation::Ofdm9,
        Modulation::Ofdm12,
        Modulation::Ofdm18,
        Modulation::Ofdm24,
        Modulation::Ofdm36,
        Modulation::Ofdm48,
        Modulation::Ofdm54,
    ];

    /// The data rate.
    pub fn rate(self) -> Rate {
        Rate::from_bps(match self {
            Modulation::Dbpsk1 => 1_000_000,
            Modulation::Dqpsk2 => 2_000_000,
            Modulation::Cck5_5 => 5_500_000,
            Modulation::Cck11 => 11_000_000,
            Modulation::Ofdm6 => 6_000_000,
            Modulation::Ofdm9 => 9_000_000,
            Modulation::Ofdm12 => 12_000_000,
            Modulation::Ofdm18 => 18_000_000,
            Modulation::Ofdm24 => 24_000_000,
            Modulation::Ofdm36 => 36_000_000,
            Modulation::Ofdm48 => 48_000_000,
            Modulation::Ofdm54 => 54_000_000,
        })
    }

    /// The standard the modulation belongs to.
    pub fn standard(self) -> Standard {
        match self {
            Modulation::Dbpsk1 | Modulation::Dqpsk2 | Modulation::Cck5_5 | Modulation::Cck11 => {
                Standard::B
            }
            _ => Standard::G,
        }
    }

    /// The modulation of `standard` at `rate`, if there is one.
    pub fn from_rate(standard: Standard, rate: Rate) -> Option<Modulation> {
        Modulation::ALL
            .into_iter()
            .find(|m| m.standard() == standard && m.rate() == rate)
    }

    /// Bits per error unit: 1 where the error rate is per bit (DBPSK, DQPSK
    /// at 1 bit per decision as in ns-3, OFDM after decoding), 4 and 8 for
    /// the CCK symbols.
    pub fn bits_per_unit(self) -> f64 {
        match self {
            Modulation::Cck5_5 => 4.0,
            Modulation::Cck11 => 8.0,
            _ => 1.0,
        }
    }

    /// OFDM data bits per 4 µs symbol (`N_DBPS`); 0 for DSSS.
    fn ofdm_bits_per_symbol(self) -> u64 {
        match self {
            Modulation::Ofdm6 => 24,
            Modulation::Ofdm9 => 36,
            Modulation::Ofdm12 => 48,
            Modulation::Ofdm18 => 72,
            Modulation::Ofdm24 => 96,
            Modulation::Ofdm36 => 144,
            Modulation::Ofdm48 => 192,
            Modulation::Ofdm54 => 216,
            _ => 0,
        }
    }

    /// Eb/N0 = SNR·B/R with B = 22 MHz (§4.2) for the DSSS rates; the SNR
    /// itself for OFDM (see the module docs). `snr` is linear.
    pub fn eb_n0(self, snr: f64) -> f64 {
        match self.standard() {
            Standard::B => snr * DSSS_BANDWIDTH_HZ / self.rate().bps() as f64,
            Standard::G => snr,
        }
    }

    /// The error rate per unit (bit, or CCK symbol; see
    /// [`Modulation::bits_per_unit`]) at linear SNR `snr`, by the formulas
    /// of the module docs, unclamped.
    pub fn unit_error_rate(self, snr: f64) -> f64 {
        let x = self.eb_n0(snr);
        match self {
            Modulation::Dbpsk1 => dbpsk_ber(x),
            Modulation::Dqpsk2 => dqpsk_ber(x),
            Modulation::Cck5_5 => cck16_ser(2.0 * x),
            Modulation::Cck11 => cck256_ser(2.0 * x),
            Modulation::Ofdm6 => nist_coded(bpsk_ber(x), 1),
            Modulation::Ofdm9 => nist_coded(bpsk_ber(x), 3),
            Modulation::Ofdm12 => nist_coded(qpsk_ber(x), 1),
            Modulation::Ofdm18 => nist_coded(qpsk_ber(x), 3),
            Modulation::Ofdm24 => nist_coded(qam_ber(16, x), 1),
            Modulation::Ofdm36 => nist_coded(qam_ber(16, x), 3),
            Modulation::Ofdm48 => nist_coded(qam_ber(64, x), 2),
            Modulation::Ofdm54 => nist_coded(qam_ber(64, x), 3),
        }
    }

    /// `PER = 1 − (1 − P_unit)^(L/k)` for a packet of `bytes` bytes at linear
    /// SNR `snr` (module docs).
    pub fn per(self, snr: f64, bytes: u64) -> f64 {
        per_from_unit(self.unit_error_rate(snr), bytes, self.bits_per_unit())
    }
}

impl fmt::Display for Modulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", rate_words(self.rate()))
    }
}

/// `1 − (1 − p)^(8·bytes/k)` with `p` clamped to `[0, 1]`, computed without
/// cancellation. The one PER formula: tables and the fallback both call it.
#[inline]
fn per_from_unit(unit_error: f64, bytes: u64, bits_per_unit: f64) -> f64 {
    let p = if unit_error.is_nan() {
        1.0
    } else {
        unit_error.clamp(0.0, 1.0)
    };
    let units = bytes as f64 * 8.0 / bits_per_unit;
    if p >= 1.0 {
        return if units > 0.0 { 1.0 } else { 0.0 };
    }
    -(units * (-p).ln_1p()).exp_m1()
}

/// A linear SNR from decibels.
pub fn db_to_linear(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// DBPSK bit error rate at `eb_n0` (linear): `½·exp(−Eb/N0)`.
pub fn dbpsk_ber(eb_n0: f64) -> f64 {
    0.5 * (-eb_n0).exp()
}

/// DQPSK bit error rate at `eb_n0` (linear), ns-3's `DqpskFunction`.
pub fn dqpsk_ber(eb_n0: f64) -> f64 {
    let s2 = core::f64::consts::SQRT_2;
    (s2 + 1.0) / (8.0 * core::f64::consts::PI * s2).sqrt() / eb_n0.sqrt()
        * (-(2.0 - s2) * eb_n0).exp()
}

/// BPSK bit error rate at `snr` (linear): `½·erfc(√snr)`.
pub fn bpsk_ber(snr: f64) -> f64 {
    0.5 * erfc(snr.sqrt())
}

/// QPSK bit error rate at `snr` (linear): `½·erfc(√(snr/2))`.
pub fn qpsk_ber(snr: f64) -> f64 {
    0.5 * erfc((snr / 2.0).sqrt())
}

/// Square `m`-QAM bit error rate at `snr` (linear), ns-3's `GetQamBer`.
pub fn qam_ber(m: u32, snr: f64) -> f64 {
    let m = m as f64;
    let z = (snr / (2.0 * (m - 1.0) / 3.0)).sqrt();
    let k = m.sqrt();
    (k - 1.0) / (k * k.log2()) * erfc(z)
}

/// The NIST model's decoded error probability for raw bit error rate `p`
/// and code rate `b/(b+1)` (`b` = 1, 2, 3), capped at 1 (ns-3's
/// `CalculatePe`, with `min(pe, 1)` of its callers).
pub fn nist_coded(p: f64, b: u32) -> f64 {
    let d = (4.0 * p * (1.0 - p)).sqrt();
    // (coefficient a_d, distance d) of the code's distance spectrum.
    const R12: [(f64, i32); 9] = [
        (36.0, 10),
        (211.0, 12),
        (1404.0, 14),
        (11633.0, 16),
        (77433.0, 18),
        (502690.0, 20),
        (3322763.0, 22),
        (21292910.0, 24),
        (134365911.0, 26),
    ];
    const R23: [(f64, i32); 10] = [
        (3.0, 6),
        (70.0, 7),
        (285.0, 8),
        (1276.0, 9),
        (6160.0, 10),
        (27128.0, 11),
        (117019.0, 12),
        (498860.0, 13),
        (2103891.0, 14),
        (8784123.0, 15),
    ];
    const R34: [(f64, i32); 10] = [
        (42.0, 5),
        (201.0, 6),
        (1492.0, 7),
        (10469.0, 8),
        (62935.0, 9),
        (379644.0, 10),
        (2253373.0, 11),
        (13073811.0, 12),
        (75152755.0, 13),
        (428005675.0, 14),
    ];
    let spectrum: &[(f64, i32)] = match b {
        1 => &R12,
        2 => &R23,
        _ => &R34,
    };
    let sum: f64 = spectrum.iter().map(|&(a, e)| a * d.powi(e)).sum();
    (sum / (2.0 * b as f64)).min(1.0)
}

/// 16-ary CCK symbol error probability at `e` (ns-3's
/// `SymbolErrorProb16Cck(e2)`), `β = √(2e)`:
/// `Q(β) + ∫₀^∞ (1 − (1 − erfc(t/√2))^7)·φ(t − β) dt`.
pub fn cck16_ser(e: f64) -> f64 {
    let beta = (2.0 * e).sqrt();
    if beta.is_nan() {
        return 1.0;
    }
    if beta > 60.0 {
        // Both terms are below e^{−β²/4} < 1e-390: zero in f64.
        return 0.0;
    }
    let tail = 0.5 * erfc(beta / core::f64::consts::SQRT_2);
    let integrand = |t: f64| {
        let a = erfc(t / core::f64::consts::SQRT_2).min(1.0);
        let miss = if a >= 1.0 {
            1.0
        } else {
            -(7.0 * (-a).ln_1p()).exp_m1()
        };
        let z = t - beta;
        miss * (-0.5 * z * z).exp() / (2.0 * core::f64::consts::PI).sqrt()
    };
    (tail + gauss_legendre(integrand, 0.0, beta + 40.0, 0.25)).min(1.0)
}

/// 256-ary CCK symbol error probability: `1 − (1 − P16(e))²`.
pub fn cck256_ser(e: f64) -> f64 {
    let p = cck16_ser(e);
    -(2.0 * (-p).ln_1p()).exp_m1()
}

/// `∫_a^b f` by 16-point Gauss–Legendre on panels of width at most `h`.
fn gauss_legendre(f: impl Fn(f64) -> f64, a: f64, b: f64, h: f64) -> f64 {
    // Nodes and weights on [−1, 1] by Newton's method on P16 (computed, not
    // transcribed, so no table can be mistyped).
    const N: usize = 16;
    let mut nodes = [0.0f64; N];
    let mut weights = [0.0f64; N];
    for i in 0..N {
        let mut x = (core::f64::consts::PI * (i as f64 + 0.75) / (N as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            let (mut p0, mut p1) = (1.0f64, x);
            for k in 2..=N {
                let kf = k as f64;
                let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
                p0 = p1;
                p1 = p2;
            }
            dp = N as f64 * (x * p1 - p0) / (x * x - 1.0);
            let dx = p1 / dp;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        nodes[i] = x;
        weights[i] = 2.0 / ((1.0 - x * x) * dp * dp);
    }
    let panels = ((b - a) / h).ceil().max(1.0) as usize;
    let w = (b - a) / panels as f64;
    let mut total = 0.0;
    for p in 0..panels {
        let mid = a + (p as f64 + 0.5) * w;
        let mut s = 0.0;
        for (x, wt) in nodes.iter().zip(weights.iter()) {
            s += wt * f(mid + 0.5 * w * x);
        }
        total += 0.5 * w * s;
    }
    total
}

/// The complementary error function, to about 1e-15 relative error (see the
/// module docs for the method).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    let two_over_sqrt_pi = 2.0 / core::f64::consts::PI.sqrt();
    if x < 2.5 {
        // erf x = 2/√π e^{−x²} Σ 2ⁿ x^{2n+1} / (2n+1)!!
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= 2.0 * x2 / (2.0 * n + 1.0);
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        return 1.0 - two_over_sqrt_pi * (-x2).exp() * sum;
    }
    // erfc x = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    // (A&S 7.1.14), modified Lentz.
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..500 {
        let a = k as f64 / 2.0;
        d = x + a * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = x + a / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / core::f64::consts::PI.sqrt() / f
}

/// `PER(snr, size)` of one modulation over an SNR grid × a size grid,
/// computed once (module docs, *Tables*). Immutable.
#[derive(Clone, Debug, PartialEq)]
pub struct PerTable {
    modulation: Modulation,
    snr_db: Vec<f64>,
    sizes: Vec<u32>,
    /// Row-major: `per[i·sizes.len() + j]` is `PER(snr_db[i], sizes[j])`.
    per: Vec<f64>,
}

impl PerTable {
    /// The table of `modulation` at the SNRs `snr_db` (dB, strictly
    /// increasing, finite) and MPDU sizes `sizes` (bytes, strictly
    /// increasing). Both grids must be non-empty.
    pub fn new(
        modulation: Modulation,
        snr_db: &[f64],
        sizes: &[u32],
    ) -> Result<PerTable, ModelError> {
        if snr_db.is_empty() || sizes.is_empty() {
            return Err(ModelError::new(
                WHAT,
                "a PER table needs at least one SNR and one size",
            ));
        }
        if snr_db.iter().any(|s| !s.is_finite()) || snr_db.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ModelError::new(
                WHAT,
                "PER table SNRs must be finite and increasing",
            ));
        }
        if sizes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ModelError::new(WHAT, "PER table sizes must be increasing"));
        }
        let mut per = Vec::with_capacity(snr_db.len() * sizes.len());
        for &s in snr_db {
            let unit = modulation.unit_error_rate(db_to_linear(s));
            let k = modulation.bits_per_unit();
            per.extend(sizes.iter().map(|&b| per_from_unit(unit, b as u64, k)));
        }
        Ok(PerTable {
            modulation,
            snr_db: snr_db.to_vec(),
            sizes: sizes.to_vec(),
            per,
        })
    }

    /// The modulation.
    pub fn modulation(&self) -> Modulation {
        self.modulation
    }

    /// The SNR grid, in dB.
    pub fn snr_grid(&self) -> &[f64] {
        &self.snr_db
    }

    /// The size grid, in MPDU bytes.
    pub fn size_grid(&self) -> &[u32] {
        &self.sizes
    }

    /// The entry at grid indices `(snr_index, size_index)`.
    #[inline]
    pub fn at(&self, snr_index: usize, size_index: usize) -> f64 {
        self.per[snr_index * self.sizes.len() + size_index]
    }

    /// `PER(snr_db, bytes)`: the stored value at grid points, interpolated
    /// geometrically in `1 − PER` between them, clamped at the edges.
    pub fn lookup(&self, snr_db: f64, bytes: u32) -> f64 {
        let (i0, i1, wi) = bracket(&self.snr_db, snr_db);
        let (j0, j1, wj) = bracket_u32(&self.sizes, bytes);
        if wi == 0.0 && wj == 0.0 {
            // A grid point (or clamped to one): the stored formula value.
            return self.at(i0, j0);
        }
        let row = |i: usize| geometric(1.0 - self.at(i, j0), 1.0 - self.at(i, j1), wj);
        1.0 - geometric(row(i0), row(i1), wi)
    }
}

/// `a^(1−w)·b^w` (both in `[0, 1]`), exact at `w = 0` and `w = 1`.
fn geometric(a: f64, b: f64, w: f64) -> f64 {
    if w == 0.0 {
        a
    } else if w == 1.0 {
        b
    } else {
        a.powf(1.0 - w) * b.powf(w)
    }
}

/// Neighbours of `x` in the sorted `grid` and the weight of the upper one.
fn bracket(grid: &[f64], x: f64) -> (usize, usize, f64) {
    let k = grid.partition_point(|&g| g <= x);
    if k == 0 {
        return (0, 0, 0.0);
    }
    if k == grid.len() || grid[k - 1] == x {
        return (k - 1, k - 1, 0.0);
    }
    (k - 1, k, (x - grid[k - 1]) / (grid[k] - grid[k - 1]))
}

fn bracket_u32(grid: &[u32], x: u32) -> (usize, usize, f64) {
    let k = grid.partition_point(|&g| g <= x);
    if k == 0 {
        return (0, 0, 0.0);
    }
    if k == grid.len() || grid[k - 1] == x {
        return (k - 1, k - 1, 0.0);
    }
    let (a, b) = (grid[k - 1] as f64, grid[k] as f64);
    (k - 1, k, (x as f64 - a) / (b - a))
}

/// PLCP preamble and header of 802.11b.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preamble {
    /// 144 µs preamble + 48 µs header at 1 Mbit/s (192 µs).
    Long,
    /// 72 µs preamble + 24 µs header at 2 Mbit/s (96 µs); 1 Mbit/s frames
    /// always use the long one.
    Short,
}

/// A validated wireless channel configuration (§4.1–§4.3). Immutable;
/// build with [`WirelessConfig::new`] and the `with_*` methods (the words
/// of the command language, `wireless 802.11b rate 11Mbit/s snr 20dB ...`
/// or `profile 802.11b-11 ...`, are read by `crates/lang`, which calls
/// them).
///
/// Defaults: no noise (`snr` unset: PER 0), `netload 0%`, `collision 0`,
/// `retries 7`, `cw` 32 slots (802.11b) or 16 (802.11g), `cwmax 1024`,
/// short preamble (802.11b; 1 Mbit/s is always long), `ack-rate` the data
/// rate (802.11b) or 6 Mbit/s (802.11g), `overhead 36` bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct WirelessConfig {
    modulation: Modulation,
    snr_db: Option<f64>,
    netload: f64,
    collision: f64,
    retries: u32,
    cw: u32,
    cwmax: u32,
    preamble: Preamble,
    ack: Modulation,
    overhead: u32,
}

impl WirelessConfig {
    /// The defaults of `standard` at `rate`.
    pub fn new(standard: Standard, rate: Rate) -> Result<WirelessConfig, ModelError> {
        let modulation = Modulation::from_rate(standard, rate).ok_or_else(|| {
            ModelError::new(WHAT, format!("{standard} has no rate {}", rate_words(rate)))
        })?;
        Ok(WirelessConfig {
            modulation,
            snr_db: None,
            netload: 0.0,
            collision: 0.0,
            retries: DEFAULT_RETRIES,
            cw: default_cw(standard),
            cwmax: DEFAULT_CWMAX,
            preamble: Preamble::Short,
            ack: default_ack(modulation),
            overhead: DEFAULT_OVERHEAD_BYTES,
        })
    }

    /// Moves the link to another rate of its standard (rate adaptation, a
    /// time-varying link's state): the modulation changes and the ACK rate
    /// returns to the standard's default for it; every other parameter is
    /// kept.
    pub fn with_rate(mut self, rate: Rate) -> Result<Self, ModelError> {
        let standard = self.standard();
        let m = Modulation::from_rate(standard, rate).ok_or_else(|| {
            ModelError::new(WHAT, format!("{standard} has no rate {}", rate_words(rate)))
        })?;
        self.modulation = m;
        self.ack = default_ack(m);
        Ok(self)
    }

    /// Sets the SNR in dB (finite).
    pub fn with_snr_db(mut self, db: f64) -> Result<Self, ModelError> {
        if !db.is_finite() {
            return Err(ModelError::new(WHAT, format!("snr {db}dB is not finite")));
        }
        self.snr_db = Some(db);
        Ok(self)
    }

    /// Sets the netload fraction `n ∈ [0, 0.99]`.
    pub fn with_netload(mut self, n: f64) -> Result<Self, ModelError> {
        if !(0.0..=0.99).contains(&n) {
            return Err(ModelError::new(
                WHAT,
                format!("netload {n} is not in [0, 0.99]"),
            ));
        }
        self.netload = n;
        Ok(self)
    }

    /// Sets the collision probability per attempt, in `[0, 1]`.
    pub fn with_collision(mut self, c: f64) -> Result<Self, ModelError> {
        if !(0.0..=1.0).contains(&c) {
            return Err(ModelError::new(
                WHAT,
                format!("collision {c} is not in [0, 1]"),
            ));
        }
        self.collision = c;
        Ok(self)
    }

    /// Sets the retry limit (retransmissions after the first attempt, ≤ 255).
    pub fn with_retries(mut self, r: u32) -> Result<Self, ModelError> {
        if r > 255 {
            return Err(ModelError::new(
                WHAT,
                format!("retries {r} is more than 255"),
            ));
        }
        self.retries = r;
        Ok(self)
    }

    /// Sets the initial contention window in slots, `1..=cwmax`.
    pub fn with_cw(mut self, cw: u32) -> Result<Self, ModelError> {
        if cw == 0 || cw > self.cwmax {
            return Err(ModelError::new(
                WHAT,
                format!("cw {cw} is not in [1, cwmax {}]", self.cwmax),
            ));
        }
        self.cw = cw;
        Ok(self)
    }

    /// Sets the largest contention window in slots, `cw..=65536`.
    pub fn with_cwmax(mut self, cwmax: u32) -> Result<Self, ModelError> {
        if cwmax < self.cw || cwmax > 65536 {
            return Err(ModelError::new(
                WHAT,
                format!("cwmax {cwmax} is not in [cw {}, 65536]", self.cw),
            ));
        }
        self.cwmax = cwmax;
        Ok(self)
    }

    /// Sets the contention window, both ends at once, in slots: the initial
    /// `cw` (default: the standard's, 32 or 16) and the largest `cwmax`
    /// (default: 1024, or `cw` when that is larger), with `1 ≤ cw ≤ cwmax
    /// ≤ 65536`. Unlike [`WirelessConfig::with_cw`] and
    /// [`WirelessConfig::with_cwmax`], the result does not depend on which
    /// is given first.
    pub fn with_window(mut self, cw: Option<u32>, cwmax: Option<u32>) -> Result<Self, ModelError> {
        let cw = cw.unwrap_or(default_cw(self.standard()));
        if cw == 0 || cw > 65536 {
            return Err(ModelError::new(
                WHAT,
                format!("cw {cw} is not in [1, 65536]"),
            ));
        }
        let cwmax = cwmax.unwrap_or(DEFAULT_CWMAX.max(cw));
        if cwmax < cw || cwmax > 65536 {
            return Err(ModelError::new(
                WHAT,
                format!("cwmax {cwmax} is not in [cw {cw}, 65536]"),
            ));
        }
        self.cw = cw;
        self.cwmax = cwmax;
        Ok(self)
    }

    /// Sets the 802.11b preamble (ignored by 802.11g).
    pub fn with_preamble(mut self, p: Preamble) -> Self {
        self.preamble = p;
        self
    }

    /// Sets the rate of ACK frames (a rate of the same standard).
    pub fn with_ack_rate(mut self, rate: Rate) -> Result<Self, ModelError> {
        let standard = self.modulation.standard();
        self.ack = Modulation::from_rate(standard, rate).ok_or_else(|| {
            ModelError::new(
                WHAT,
                format!("ack-rate: {standard} has no rate {}", rate_words(rate)),
            )
        })?;
        Ok(self)
    }

    /// Sets the per-packet MAC overhead in bytes (header, FCS, LLC), ≤ 1024.
    pub fn with_overhead(mut self, bytes: u32) -> Result<Self, ModelError> {
        if bytes > 1024 {
            return Err(ModelError::new(
                WHAT,
                format!("overhead {bytes} is more than 1024 bytes"),
            ));
        }
        self.overhead = bytes;
        Ok(self)
    }

    /// The standard.
    pub fn standard(&self) -> Standard {
        self.modulation.standard()
    }
    /// The data modulation (and rate).
    pub fn modulation(&self) -> Modulation {
        self.modulation
    }
    /// The SNR in dB, `None` for a noiseless channel.
    pub fn snr_db(&self) -> Option<f64> {
        self.snr_db
    }
    /// The netload fraction.
    pub fn netload(&self) -> f64 {
        self.netload
    }
    /// The collision probability per attempt.
    pub fn collision(&self) -> f64 {
        self.collision
    }
    /// The retry limit (retransmissions).
    pub fn retries(&self) -> u32 {
        self.retries
    }
    /// The initial contention window, slots.
    pub fn cw(&self) -> u32 {
        self.cw
    }
    /// The largest contention window, slots.
    pub fn cwmax(&self) -> u32 {
        self.cwmax
    }
    /// The 802.11b preamble in use for the data rate (1 Mbit/s: long).
    pub fn preamble(&self) -> Preamble {
        if self.modulation == Modulation::Dbpsk1 {
            Preamble::Long
        } else {
            self.preamble
        }
    }
    /// The ACK modulation.
    pub fn ack_modulation(&self) -> Modulation {
        self.ack
    }
    /// The per-packet MAC overhead, bytes.
    pub fn overhead(&self) -> u32 {
        self.overhead
    }

    /// The MAC timing these parameters imply.
    pub fn timing(&self) -> MacTiming {
        MacTiming::new(self)
    }

    /// The first attempt's MAC overhead for an IP packet of `len` bytes as a
    /// Dummynet delay profile (Fig. 7): the extra airtime beyond `8·len/R`
    /// is the fixed part plus `k·slot`, `k` uniform in `[0, cw−1]`, a
    /// staircase CDF. Netload, retries and errors are not in it (a profile
    /// cannot express them; use [`WirelessModel`]). Needs `cw ≤ 512`.
    pub fn delay_profile(&self, len: u32) -> Result<Profile, ModelError> {
        if self.cw > 512 {
            return Err(ModelError::new(
                WHAT,
                "a delay profile holds at most cw 512",
            ));
        }
        let t = self.timing();
        let fixed_ns = t.attempt_ns(self.mpdu(len), 0, true)
            - (len as u64 * 8 * 1_000_000_000).div_ceil(self.modulation.rate().bps());
        let mut b = Profile::builder();
        b.name(format!(
            "{}-{}",
            self.standard(),
            rate_mbit(self.modulation.rate())
        ));
        b.bandwidth(self.modulation.rate())?.samples(1024)?;
        let cw = self.cw as u64;
        for k in 0..cw {
            let d = Duration(fixed_ns + k * t.slot_ns);
            b.point(Probability::new(k as f64 / cw as f64)?, d)?;
            b.point(Probability::new((k + 1) as f64 / cw as f64)?, d)?;
        }
        b.build()
    }

    fn mpdu(&self, len: u32) -> u64 {
        len as u64 + self.overhead as u64
    }
}

impl fmt::Display for WirelessConfig {
    /// The config words: `wireless 802.11b rate 11Mbit/s snr 20dB netload
    /// 1% collision 0.06 retries 7`, then any non-default `cw`, `cwmax`,
    /// `preamble`, `ack-rate` and `overhead`. Parses back to an equal config.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wireless {} rate {}", self.standard(), self.modulation)?;
        if let Some(s) = self.snr_db {
            write!(f, " snr {s}dB")?;
        }
        write!(
            f,
            " netload {}% collision {} retries {}",
            trim_float(self.netload * 100.0),
            self.collision,
            self.retries
        )?;
        if self.cw != default_cw(self.standard()) {
            write!(f, " cw {}", self.cw)?;
        }
        if self.cwmax != DEFAULT_CWMAX {
            write!(f, " cwmax {}", self.cwmax)?;
        }
        if self.standard() == Standard::B && self.preamble == Preamble::Long {
            write!(f, " preamble long")?;
        }
        if self.ack != default_ack(self.modulation) {
            write!(f, " ack-rate {}", self.ack)?;
        }
        if self.overhead != DEFAULT_OVERHEAD_BYTES {
            write!(f, " overhead {}", self.overhead)?;
        }
        Ok(())
    }
}

fn default_cw(standard: Standard) -> u32 {
    match standard {
        Standard::B => 32,
        Standard::G => 16,
    }
}

fn default_ack(m: Modulation) -> Modulation {
    match m.standard() {
        Standard::B => m,
        Standard::G => Modulation::Ofdm6,
    }
}

/// `x` with at most 9 decimals and no trailing zeros.
fn trim_float(x: f64) -> String {
    let s = format!("{x:.9}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn rate_mbit(rate: Rate) -> String {
    trim_float(rate.bps() as f64 / 1e6)
}

/// `11Mbit/s`, `5.5Mbit/s`.
fn rate_words(rate: Rate) -> String {
    if rate.bps().is_multiple_of(100_000) {
        format!("{}Mbit/s", rate_mbit(rate))
    } else {
        rate.to_string()
    }
}

/// The MAC/PHY durations of one configuration, in nanoseconds (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacTiming {
    /// Slot time.
    pub slot_ns: u64,
    /// SIFS.
    pub sifs_ns: u64,
    /// DIFS = SIFS + 2·slot.
    pub difs_ns: u64,
    /// The whole ACK frame (PLCP, body, signal extension).
    pub ack_ns: u64,
    /// How long a sender waits for a missing ACK.
    pub ack_timeout_ns: u64,
    plcp_ns: u64,
    tail_ns: u64,
    rate_bps: u64,
    ofdm_dbps: u64,
}

impl MacTiming {
    fn new(cfg: &WirelessConfig) -> MacTiming {
        const US: u64 = 1_000;
        match cfg.standard() {
            Standard::B => {
                let plcp = match cfg.preamble() {
                    Preamble::Long => 192 * US,
                    Preamble::Short => 96 * US,
                };
                let ack_plcp = if cfg.ack == Modulation::Dbpsk1 {
                    192 * US
                } else {
                    plcp
                };
                let ack_body = (ACK_BYTES * 8 * 1_000_000).div_ceil(cfg.ack.rate().bps()) * US;
                MacTiming {
                    slot_ns: 20 * US,
                    sifs_ns: 10 * US,
                    difs_ns: 50 * US,
                    ack_ns: ack_plcp + ack_body,
                    ack_timeout_ns: (10 + 20) * US + plcp,
                    plcp_ns: plcp,
                    tail_ns: 0,
                    rate_bps: cfg.modulation.rate().bps(),
                    ofdm_dbps: 0,
                }
            }
            Standard::G => {
                let ack_symbols = (16 + 8 * ACK_BYTES + 6).div_ceil(cfg.ack.ofdm_bits_per_symbol());
                MacTiming {
                    slot_ns: 9 * US,
                    sifs_ns: 10 * US,
                    difs_ns: 28 * US,
                    ack_ns: (20 + 4 * ack_symbols + 6) * US,
                    ack_timeout_ns: (10 + 9 + 25) * US,
                    plcp_ns: 20 * US,
                    tail_ns: 6 * US,
                    rate_bps: cfg.modulation.rate().bps(),
                    ofdm_dbps: cfg.modulation.ofdm_bits_per_symbol(),
                }
            }
        }
    }

    /// The PPDU carrying an MPDU of `mpdu` bytes: PLCP, body, extension.
    #[inline]
    pub fn ppdu_ns(&self, mpdu: u64) -> u64 {
        let body_us = if self.ofdm_dbps == 0 {
            (mpdu * 8 * 1_000_000).div_ceil(self.rate_bps)
        } else {
            4 * (16 + 8 * mpdu + 6).div_ceil(self.ofdm_dbps)
        };
        self.plcp_ns + body_us * 1_000 + self.tail_ns
    }

    /// One attempt of an `mpdu`-byte frame with `k` backoff slots, before
    /// netload scaling: acknowledged or timed out.
    #[inline]
    pub fn attempt_ns(&self, mpdu: u64, k: u64, acked: bool) -> u64 {
        let end = if acked {
            self.sifs_ns + self.ack_ns
        } else {
            self.ack_timeout_ns
        };
        self.difs_ns + k * self.slot_ns + self.ppdu_ns(mpdu) + end
    }
}

/// The outcome of sending one packet: the channel time it took, all
/// attempts included, and whether it got through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempts {
    /// Total channel time, failed attempts included, netload applied.
    pub airtime: Duration,
    /// False when the last allowed attempt failed (report loss upstream).
    pub delivered: bool,
    /// Attempts made, `1..=retries+1`.
    pub attempts: u32,
}

/// Counters of a wireless link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WirelessStats {
    /// Packets offered to [`WirelessModel::transmit`].
    pub packets: u64,
    /// Packets delivered.
    pub delivered: u64,
    /// Transmission attempts.
    pub attempts: u64,
    /// Attempts failed by a collision draw.
    pub collisions: u64,
    /// Attempts failed by a noise (PER) draw.
    pub noise_errors: u64,
}

/// A wireless link's channel state: the config, its tables and the stage's
/// generator. One call per packet; no allocation per packet.
#[derive(Clone, Debug)]
pub struct WirelessModel {
    cfg: WirelessConfig,
    timing: MacTiming,
    /// `PER` by MPDU size `0..=MAX_TABLE_MPDU` at the configured SNR (all 0
    /// without noise).
    table: PerTable,
    /// The unit error rate, for MPDUs beyond the table.
    unit_error: f64,
    /// `2³²/(1 − netload)`, rounded.
    netload_q32: u64,
    rng: StageRng,
    stats: WirelessStats,
}

impl WirelessModel {
    /// The model of `cfg`, drawing from `rng` (a `StageKind::Link` stream).
    /// Builds the PER table (about 2 350 entries) here, not per packet.
    pub fn new(cfg: WirelessConfig, rng: StageRng) -> WirelessModel {
        let sizes: Vec<u32> = (0..=MAX_TABLE_MPDU as u32).collect();
        let m = cfg.modulation;
        let (table, unit_error) = match cfg.snr_db {
            Some(db) => match PerTable::new(m, &[db], &sizes) {
                Ok(t) => (t, m.unit_error_rate(db_to_linear(db))),
                Err(_) => unreachable!("grids are valid by construction"),
            },
            // Noiseless: every entry is 0 (the SNR row is nominal).
            None => (
                PerTable {
                    modulation: m,
                    snr_db: vec![f64::INFINITY],
                    per: vec![0.0; sizes.len()],
                    sizes,
                },
                0.0,
            ),
        };
        let netload_q32 = ((1u64 << 32) as f64 / (1.0 - cfg.netload)).round() as u64;
        WirelessModel {
            timing: cfg.timing(),
            cfg,
            table,
            unit_error,
            netload_q32,
            rng,
            stats: WirelessStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &WirelessConfig {
        &self.cfg
    }

    /// The counters.
    pub fn stats(&self) -> WirelessStats {
        self.stats
    }

    /// The PER of an IP packet of `len` bytes (its MPDU adds the overhead).
    #[inline]
    pub fn per(&self, len: u32) -> f64 {
        let mpdu = self.cfg.mpdu(len);
        if mpdu as usize <= MAX_TABLE_MPDU {
            self.table.at(0, mpdu as usize)
        } else {
            per_from_unit(self.unit_error, mpdu, self.cfg.modulation.bits_per_unit())
        }
    }

    /// `raw · 1/(1 − netload)`, in fixed point.
    #[inline]
    fn scale(&self, raw_ns: u64) -> u64 {
        ((raw_ns as u128 * self.netload_q32 as u128 + (1u128 << 31)) >> 32) as u64
    }

    /// Sends an IP packet of `len` bytes: attempts with backoff until one
    /// succeeds or the retry limit is reached (module docs, §4.3). Per
    /// attempt: one backoff draw, one fate draw.
    pub fn transmit(&mut self, len: u32) -> Attempts {
        let mpdu = self.cfg.mpdu(len);
        let per = self.per(len);
        let c = self.cfg.collision;
        let mut cw = self.cfg.cw;
        let mut total = 0u64;
        self.stats.packets += 1;
        for attempt in 1..=self.cfg.retries + 1 {
            let k = self.rng.gen_range(0..cw) as u64;
            let u: f64 = self.rng.gen();
            self.stats.attempts += 1;
            // u < c: collision; then the noise draw reuses the rest of u.
            let collided = u < c;
            let noisy = !collided && (u - c) < (1.0 - c) * per;
            let acked = !collided && !noisy;
            total += self.scale(self.timing.attempt_ns(mpdu, k, acked));
            if acked {
                self.stats.delivered += 1;
                return Attempts {
                    airtime: Duration(total),
                    delivered: true,
                    attempts: attempt,
                };
            }
            if collided {
                self.stats.collisions += 1;
            } else {
                self.stats.noise_errors += 1;
            }
            cw = (cw.saturating_mul(2)).min(self.cfg.cwmax);
        }
        Attempts {
            airtime: Duration(total),
            delivered: false,
            attempts: self.cfg.retries + 1,
        }
    }

    /// The mean airtime of a first-attempt success for an IP packet of
    /// `len` bytes (mean backoff `(cw−1)/2` slots), netload applied, in ns
    /// as a float (for reports and tests, never for decisions).
    pub fn mean_success_airtime_ns(&self, len: u32) -> f64 {
        let t = &self.timing;
        let raw = t.attempt_ns(self.cfg.mpdu(len), 0, true) as f64
            + (self.cfg.cw as f64 - 1.0) / 2.0 * t.slot_ns as f64;
        raw / (1.0 - self.cfg.netload)
    }
}

#[cfg(test)]
mod tests;
