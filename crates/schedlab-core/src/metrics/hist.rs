//! A fixed-size log-linear latency histogram, in the spirit of HdrHistogram
//! and schbench's `plat` buckets.
//!
//! Layout: values below `2 * SUB` (`SUB = 2^SUB_BITS`) get one bucket each
//! (exact). Above, each power of two `[2^k, 2^(k+1))` is split into `SUB`
//! equal buckets of width `2^(k - SUB_BITS)`. A bucket's width over its lower
//! bound is then at most `1 / SUB`, so with `SUB_BITS = 7` any value reported
//! from a bucket (its midpoint) is within `1 / 256 < 0.4%` of every value the
//! bucket holds, inside the 1% the metrics promise. The whole `u64` range fits
//! in `(65 - SUB_BITS) * SUB` buckets (7424 x 8 bytes = 58 KiB), so recording is
//! one `leading_zeros`, a shift and an increment, with no allocation.

/// Sub-bucket bits: `2^SUB_BITS` buckets per power of two. 7 bits bounds the
/// relative error of a bucket at `1/128` (and of its midpoint at `1/256`).
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Bucket count: exact values `0..2*SUB`, then `SUB` buckets for each shift
/// `1..=63-SUB_BITS`.
const NR_BUCKETS: usize = ((64 - SUB_BITS as usize) * SUB as usize) + SUB as usize;

/// A latency histogram of nanosecond values.
#[derive(Clone)]
pub struct LatencyHist {
    /// Values per bucket. Their sum is the number of values recorded
    /// ([`LatencyHist::count`]), summed when a metric is read instead of
    /// counted at every record.
    counts: Box<[u64]>,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LatencyHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatencyHist(count={}, mean={:.0}, max={})", self.count(), self.mean(), self.max)
    }
}

/// Bucket index of `v`.
#[inline]
fn bucket_of(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    // v >> shift lies in [SUB, 2*SUB): the sub-bucket inside this power of two.
    (shift as usize) * SUB as usize + (v >> shift) as usize
}

/// Lowest value and width of bucket `i`.
#[inline]
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < 2 * SUB {
        return (i, 1);
    }
    // Invert bucket_of: i = shift*SUB + sub with sub in [SUB, 2*SUB).
    let shift = i / SUB - 1;
    let sub = i - shift * SUB;
    (sub << shift, 1u64 << shift)
}

impl LatencyHist {
    /// An empty histogram.
    pub fn new() -> Self {
        Self { counts: vec![0; NR_BUCKETS].into_boxed_slice(), sum: 0, min: u64::MAX, max: 0 }
    }

    /// The count of the bucket of `ns`, without a bounds test in release
    /// builds: `bucket_of` maps every `u64` below `NR_BUCKETS` (its largest
    /// value, `u64::MAX`'s bucket, is `NR_BUCKETS - 1`; `buckets_invert_and_cover`
    /// tests it), and `counts` has `NR_BUCKETS` entries from `new` on (a boxed
    /// slice, never resized).
    #[inline(always)]
    fn bucket_mut(&mut self, ns: u64) -> &mut u64 {
        let i = bucket_of(ns);
        debug_assert!(i < self.counts.len(), "bucket {i} of {}", self.counts.len());
        // SAFETY: `i = bucket_of(ns) < NR_BUCKETS == self.counts.len()` for
        // every `ns` (above); no index from outside reaches here.
        unsafe { self.counts.get_unchecked_mut(i) }
    }

    /// Record one value, ns.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        *self.bucket_mut(ns) += 1;
        self.sum += ns as u128;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Number of values recorded (the buckets' sum: read at the end of a
    /// run, not kept per record).
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Exact mean, ns (0 when empty).
    pub fn mean(&self) -> f64 {
        let count = self.count();
        if count == 0 {
            0.0
        } else {
            self.sum as f64 / count as f64
        }
    }

    /// Largest value recorded, ns (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The `p`-th percentile (0..=100) by nearest rank, ns: the value of rank
    /// `ceil(p/100 * n)` (at least 1) in sorted order, reported as its bucket's
    /// midpoint clamped to the recorded min and max (so p0 and p100 are exact).
    /// 0 when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        let count = self.count();
        if count == 0 {
            return 0.0;
        }
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 100.0) };
        let rank = ((p / 100.0 * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = bucket_range(i);
                let mid = lo as f64 + (width - 1) as f64 / 2.0;
                return mid.clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exact(sorted: &[u64], p: f64) -> f64 {
        let n = sorted.len() as u64;
        let rank = ((p / 100.0 * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize] as f64
    }

    #[test]
    fn buckets_invert_and_cover() {
        for v in [0u64, 1, 255, 256, 257, 1000, 123_456_789, u64::MAX / 3, u64::MAX] {
            let i = bucket_of(v);
            assert!(i < NR_BUCKETS);
            let (lo, w) = bucket_range(i);
            assert!(lo <= v && v - lo < w, "v={v} lo={lo} w={w}");
        }
        // Buckets tile the line: each starts where the previous ended.
        for i in 1..NR_BUCKETS {
            let (lo0, w0) = bucket_range(i - 1);
            assert_eq!(lo0.wrapping_add(w0), bucket_range(i).0, "bucket {i}");
        }
    }

    #[test]
    fn small_values_exact_and_empty_is_zero() {
        let mut h = LatencyHist::new();
        assert_eq!(h.percentile(99.0), 0.0);
        assert_eq!(h.mean(), 0.0);
        for v in [5u64, 1, 3, 2, 4] {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), 3.0);
        assert_eq!(h.percentile(100.0), 5.0);
        assert_eq!(h.percentile(0.0), 1.0);
        assert_eq!(h.mean(), 3.0);
        assert_eq!(h.count(), 5);
    }

    proptest! {
        #[test]
        fn percentiles_within_one_percent(
            vals in prop::collection::vec(
                prop_oneof![0u64..300, 0u64..100_000, 0u64..10_000_000_000, any::<u64>()], 1..400),
            p in 0.0f64..=100.0,
        ) {
            let mut h = LatencyHist::new();
            for &v in &vals { h.record(v); }
            let mut s = vals.clone();
            s.sort_unstable();
            let want = exact(&s, p);
            let got = h.percentile(p);
            prop_assert!((got - want).abs() <= want * 0.01 + 1e-9, "p={} got={} want={}", p, got, want);
            let mean = vals.iter().map(|&v| v as f64).sum::<f64>() / vals.len() as f64;
            prop_assert!((h.mean() - mean).abs() <= mean * 1e-9 + 1e-9);
        }
    }
}
