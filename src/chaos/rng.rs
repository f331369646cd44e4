//! Deterministic randomness for fault decisions. Counter-based rather than a shared
//! stream: the decision for the k-th matching call of a rule is a hash of (seed, rule id,
//! k), so it does not depend on how other rules' traffic interleaves, and two runs with the
//! same seed and the same requests decide the same. Hand-written (SplitMix64's mixer)
//! because reproducibility across versions is the point: `rand`'s StdRng does not promise it.

/// SplitMix64's output function: a bijective, well-mixed 64-bit hash.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a rule id: the stream a rule draws from.
pub fn stream(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The draw for call `n` of `stream` under `seed` (also used to pick payloads).
pub fn draw(seed: u64, stream: u64, n: u64) -> u64 {
    mix(seed ^ mix(stream ^ mix(n)))
}

/// A draw as a number in [0, 1).
pub fn unit(draw: u64) -> f64 {
    (draw >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_roughly_uniform() {
        let s = stream("tool_faults[0]");
        let a: Vec<u64> = (1..=5).map(|n| draw(42, s, n)).collect();
        let b: Vec<u64> = (1..=5).map(|n| draw(42, s, n)).collect();
        assert_eq!(a, b);
        assert_ne!(draw(42, s, 1), draw(43, s, 1), "the seed matters");
        assert_ne!(
            draw(42, s, 1),
            draw(42, stream("other"), 1),
            "each rule has its own stream"
        );
        let hits = (1..=10_000).filter(|n| unit(draw(7, s, *n)) < 0.3).count();
        assert!((2_800..3_200).contains(&hits), "{hits}");
    }
}
