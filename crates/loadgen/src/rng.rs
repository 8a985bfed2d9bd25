//! A small deterministic pseudo-random generator (SplitMix64): schedules, parameters and the
//! prepared data are reproducible from a seed, and no generator crate is needed.

/// SplitMix64: 64 bits of state, one add and three mixes per value.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`; the same seed gives the same sequence.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi]` (inclusive; `lo > hi` gives `lo`).
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi as i128 - lo as i128 + 1) as u128;
        let v = (u128::from(self.next_u64()) * span) >> 64;
        (lo as i128 + v as i128) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_inclusive_and_reproducible() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut seen = [false; 3];
        for _ in 0..1000 {
            let v = a.range(1, 3);
            assert_eq!(v, b.range(1, 3));
            assert!((1..=3).contains(&v));
            seen[(v - 1) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(Rng::new(1).range(5, 5), 5);
        assert_eq!(Rng::new(1).range(i64::MIN, i64::MAX).signum().abs(), 1);
    }
}
