//! `--seed N|random`, one parser for `pipelab` and `pipelabd`.

/// A `--seed` value that is not one (clap shows it after the flag).
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The kernel's random source cannot be read.
    #[error("cannot read /dev/urandom for a random seed: {0}")]
    Random(std::io::Error),
    /// Neither a number nor `random`.
    #[error("'{0}' is not a seed: give a whole number 0..{max} or 'random'", max = u64::MAX)]
    NotASeed(String),
}

/// `--seed N|random`: the number, or a fresh one from the kernel's
/// random source.
pub fn seed_arg(s: &str) -> Result<u64, SeedError> {
    if s.eq_ignore_ascii_case("random") {
        use std::io::Read;
        let mut b = [0u8; 8];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut b))
            .map_err(SeedError::Random)?;
        // Small enough to type back: 0 ..= 2^53 - 1.
        return Ok(u64::from_le_bytes(b) >> 11);
    }
    s.parse::<u64>()
        .map_err(|_| SeedError::NotASeed(s.to_string()))
}
