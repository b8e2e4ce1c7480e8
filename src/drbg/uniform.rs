//! Uniform integers on an inclusive range, drawn from a *fallible* source of 64-bit words.
//!
//! The method is Lemire's widening multiply with rejection, exactly as rand's `UniformInt`
//! does it for `i64` (same threshold, same acceptance test, so the same values for the same
//! words: a test checks it against rand). The difference is the source: rand's samplers take an
//! infallible `Rng`, so a generator that cannot reseed could only hand out a placeholder and
//! the rejection loop could spin on it forever. Here the first failed word ends the draw with
//! the source's error.
//!
//! And on it, [`shuffle`]: distinct integers of a range in random order (`/sequence`'s draw).

/// A uniform distribution on `[low, high]` over `i64`, with no modulo bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformI64 {
    low: i64,
    /// `high - low + 1` as u64; 0 stands for the full 2^64 range.
    range: u64,
    /// Products whose low word is below this are rejected: `2^64 mod range`.
    thresh: u64,
}

impl UniformI64 {
    /// The distribution on `[low, high]`, or `None` if `low > high`.
    pub fn new_inclusive(low: i64, high: i64) -> Option<Self> {
        if low > high {
            return None;
        }
        let range = high.wrapping_sub(low).wrapping_add(1) as u64;
        let thresh = if range > 0 { range.wrapping_neg() % range } else { 0 };
        Some(UniformI64 { low, range, thresh })
    }

    /// One value, drawing words from `next` until one is accepted (each word is rejected with
    /// probability below `range / 2^64`).
    ///
    /// # Errors
    /// The first error of `next`; nothing is returned from the words drawn before it.
    #[inline]
    pub fn sample<E>(&self, mut next: impl FnMut() -> Result<u64, E>) -> Result<i64, E> {
        if self.range == 0 {
            return Ok(next()? as i64);
        }
        loop {
            let product = u128::from(next()?) * u128::from(self.range);
            if product as u64 >= self.thresh {
                return Ok(self.low.wrapping_add((product >> 64) as u64 as i64));
            }
        }
    }
}

/// The first `count` values of a uniformly random permutation of `[min, max]` (`count` at most
/// the range's size): a partial Fisher–Yates shuffle over positions named by their values,
/// `moved` holding the value now at each position taken from, so that the range is never
/// written out.
///
/// # Errors
/// The first error of `next`.
pub fn shuffle<E>(
    min: i64,
    max: i64,
    count: usize,
    mut next: impl FnMut() -> Result<u64, E>,
) -> Result<Vec<i64>, E> {
    let mut moved: std::collections::HashMap<i64, i64> = std::collections::HashMap::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    for i in 0..count as u64 {
        // Position i, named by its value: min + i <= max, as count is at most the range's size.
        let here = min.wrapping_add_unsigned(i);
        let Some(rest) = UniformI64::new_inclusive(here, max) else { break };
        let pick = rest.sample(&mut next)?;
        // Swap positions `here` and `pick`; `here` is never looked at again.
        let at_here = moved.remove(&here).unwrap_or(here);
        let at_pick = if pick == here { at_here } else { moved.insert(pick, at_here).unwrap_or(pick) };
        out.push(at_pick);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::distr::{Distribution, Uniform};
    use rand::{Rng, SeedableRng};

    /// A reproducible word stream, fed both to rand's sampler and to ours.
    fn words(seed: u64) -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn same_values_as_rands_uniform_for_the_same_words() {
        let ranges = [
            (0, 0),
            (1, 6),
            (-5, 5),
            (0, 99),
            (i64::MIN, i64::MAX),
            (i64::MIN, 0),
            (0, (1 << 62) + 12345),
            (-3, i64::MAX),
            (7, 7 + (1 << 40)),
        ];
        for (i, (low, high)) in ranges.into_iter().enumerate() {
            let ours = UniformI64::new_inclusive(low, high).unwrap();
            let theirs = Uniform::new_inclusive(low, high).unwrap();
            let (mut a, mut b) = (words(i as u64), words(i as u64));
            for _ in 0..2000 {
                let x = ours.sample(|| Ok::<_, ()>(a.next_u64())).unwrap();
                assert_eq!(x, theirs.sample(&mut b), "range [{low}, {high}]");
            }
        }
    }

    #[test]
    fn a_failing_source_ends_the_draw_instead_of_looping() {
        let d = UniformI64::new_inclusive(1, 6).unwrap();
        assert_eq!(d.sample(|| Err::<u64, _>("down")), Err("down"));
        // A zero word is rejected for any range that is not a power of two (the old buffered
        // source handed out zeros after a failed refill): the next failed word ends it.
        let mut calls = 0;
        let r = d.sample(|| {
            calls += 1;
            if calls == 1 { Ok(0) } else { Err("down") }
        });
        assert_eq!((r, calls), (Err("down"), 2));
    }

    #[test]
    fn empty_range_is_refused() {
        assert_eq!(UniformI64::new_inclusive(2, 1), None);
    }
}
