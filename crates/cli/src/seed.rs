//! `--seed N|random`, one parser for `pipelab` and `pipelabd`.

/// `--seed N|random`: the number, or a fresh one from the kernel's
/// random source.
pub fn seed_arg(s: &str) -> Result<u64, String> {
    if s.eq_ignore_ascii_case("random") {
        use std::io::Read;
        let mut b = [0u8; 8];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut b))
            .map_err(|e| format!("cannot read /dev/urandom for a random seed: {e}"))?;
        // Small enough to type back: 0 ..= 2^53 - 1.
        return Ok(u64::from_le_bytes(b) >> 11);
    }
    s.parse::<u64>().map_err(|_| {
        format!(
            "'{s}' is not a seed: give a whole number 0..{} or 'random'",
            u64::MAX
        )
    })
}
