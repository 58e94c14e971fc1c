//! A small seeded random generator (SplitMix64): the same seed gives the same sequence on
//! every platform and every version, which is what a reproducible fuzz run needs. Start at
//! [`Rng::new`]; [`Rng::fork`] derives independent generators for sub-tasks.
//!
//! The same generator as `e2e/src/rng.rs` (that crate keeps its own copy), plus
//! [`Rng::shuffle`] and a `rand` adapter so crates that sample through `rand`'s traits
//! (`rand_regex`) draw from it too.

use std::convert::Infallible;

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
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

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let i = usize::try_from(self.below(items.len() as u64)).unwrap_or(0);
        &items[i.min(items.len().saturating_sub(1))]
    }

    /// A generator for a sub-task, derived from this one's seed and `n`.
    pub fn fork(&self, n: u64) -> Rng {
        let mut r = Rng(self.0 ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = usize::try_from(self.below(i as u64 + 1)).unwrap_or(0);
            items.swap(i, j.min(i));
        }
    }

    /// A number in `lo..=hi` for signed bounds (`lo` ≤ `hi`; else `lo`).
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = hi.abs_diff(lo);
        let off = if span == u64::MAX { self.next_u64() } else { self.below(span + 1) };
        lo.wrapping_add_unsigned(off)
    }
}

/// `rand`'s source trait, so `rand` distributions (e.g. a `rand_regex::Regex`) sample from
/// this generator and stay reproducible.
impl rand::TryRng for Rng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((Rng::next_u64(self) >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(Rng::next_u64(self))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = Rng::next_u64(self).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs[0], Rng::new(8).next_u64());
        assert!((0..1000).all(|_| a.range(3, 5) >= 3 && a.range(3, 5) <= 5));
    }

    #[test]
    fn shuffle_and_signed_ranges() {
        let mut r = Rng::new(1);
        let mut v: Vec<u32> = (0..20).collect();
        r.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>());
        assert_ne!(v, sorted);
        assert!((0..1000).all(|_| (-3..=2).contains(&r.range_i64(-3, 2))));
        assert_eq!(r.range_i64(5, 5), 5);
        let _ = r.range_i64(i64::MIN, i64::MAX);
    }
}
