//! Seeded draws for one variant. Every variant has its own stream, keyed by (run seed,
//! type, prompt, index), so a variant never depends on which other types or prompts ran,
//! and the same seed gives byte-identical variants on every machine and release. Built on
//! the chaos engine's counter-based mixer (SplitMix64), which is pinned by tests there and
//! by the golden file here; `rand`'s generators do not promise stable streams.

use crate::chaos::rng::{mix, stream};
use crate::mutate::kind::MutationType;

/// The stream of draws for one variant.
#[derive(Debug, Clone)]
pub struct Draw {
    key: u64,
    n: u64,
}

impl Draw {
    pub fn new(seed: u64, kind: MutationType, prompt: &str, index: u32) -> Draw {
        let key = mix(seed ^ mix(stream(kind.name()) ^ mix(stream(prompt) ^ u64::from(index))));
        Draw { key, n: 0 }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.n += 1;
        mix(self.key ^ mix(self.n))
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        crate::chaos::rng::unit(self.next_u64()) < p
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_keyed_by_seed_type_prompt_and_index() {
        let draws = |seed, kind, prompt, index| {
            let mut d = Draw::new(seed, kind, prompt, index);
            (0..4).map(|_| d.next_u64()).collect::<Vec<_>>()
        };
        let base = draws(7, MutationType::Noise, "hi", 0);
        assert_eq!(base, draws(7, MutationType::Noise, "hi", 0));
        assert_ne!(base, draws(8, MutationType::Noise, "hi", 0));
        assert_ne!(base, draws(7, MutationType::ToneShift, "hi", 0));
        assert_ne!(base, draws(7, MutationType::Noise, "ho", 0));
        assert_ne!(base, draws(7, MutationType::Noise, "hi", 1));
        let mut d = Draw::new(1, MutationType::Noise, "x", 0);
        assert!((0..1000).all(|_| d.below(3) < 3));
        assert_eq!(d.below(0), 0);
    }
}
