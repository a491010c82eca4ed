//! Seeded random numbers. The run owns one seed; every component derives its
//! own named stream from it, so adding a task does not shift another task's
//! numbers (house rule 6). The generator is PCG-XSH-RR 64/32 (O'Neill 2014),
//! chosen for being small, fast and well studied.

/// A PCG32 generator.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
    inc: u64,
}

const PCG_MULT: u64 = 6364136223846793005;

/// SplitMix64 finaliser, used to spread (seed, stream) into PCG's state.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator for `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut r = Rng { state: 0, inc: (splitmix64(stream ^ 0x5EED) << 1) | 1 };
        r.next_u32();
        r.state = r.state.wrapping_add(splitmix64(seed));
        r.next_u32();
        r
    }

    /// A stream named by a string and an index, e.g. ("task", 17).
    pub fn named(seed: u64, name: &str, index: u64) -> Self {
        // FNV-1a over the name: stable across platforms and Rust versions.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in name.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        Rng::new(seed, h ^ splitmix64(index))
    }

    /// Next 32 random bits.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        ((self.next_u32() as u64) << 32) | self.next_u32() as u64
    }

    /// Uniform in `[0, n)` (Lemire's nearly-divisionless method). `n > 0`.
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let mut m = self.next_u32() as u64 * n as u64;
        let mut l = m as u32;
        if l < n {
            let t = n.wrapping_neg() % n;
            while l < t {
                m = self.next_u32() as u64 * n as u64;
                l = m as u32;
            }
        }
        (m >> 32) as u32
    }

    /// Uniform in `[0, 1)`, for workload distributions only (never decisions).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(42, 7);
        let mut b = Rng::new(42, 7);
        for _ in 0..100 {
            assert_eq!(a.next_u32(), b.next_u32());
        }
    }

    #[test]
    fn streams_and_seeds_differ() {
        let a: Vec<u32> = (0..8)
            .map({
                let mut r = Rng::new(1, 1);
                move |_| r.next_u32()
            })
            .collect();
        let b: Vec<u32> = (0..8)
            .map({
                let mut r = Rng::new(1, 2);
                move |_| r.next_u32()
            })
            .collect();
        let c: Vec<u32> = (0..8)
            .map({
                let mut r = Rng::new(2, 1);
                move |_| r.next_u32()
            })
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_is_in_range_and_covers() {
        let mut r = Rng::new(3, 3);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let x = r.below(10);
            assert!(x < 10);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
