//! Duration distributions for workload and noise parameters (compute bursts,
//! interrupt inter-arrival times, handler durations). Sampled only from a
//! task's or a source's own seeded stream, never from the clock.

use crate::ids::Ns;
use crate::sim::Rng;

/// A distribution of durations in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Always this value.
    Fixed(Ns),
    /// Uniform in `[lo, hi]`.
    Uniform {
        /// Lowest value, ns.
        lo: Ns,
        /// Highest value, ns.
        hi: Ns,
    },
    /// Exponential with this mean (a Poisson process's inter-arrival time),
    /// cut at 20 means so one sample cannot stall a run.
    Exp {
        /// Mean, ns.
        mean: Ns,
    },
}

impl Dist {
    /// One sample.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> Ns {
        match *self {
            Dist::Fixed(v) => v,
            Dist::Uniform { lo, hi } => {
                if hi <= lo {
                    return lo;
                }
                let span = hi - lo + 1;
                lo + (rng.next_u64() % span)
            }
            Dist::Exp { mean } => {
                // Inverse transform; 1 - u is in (0, 1], so ln is finite.
                let u = 1.0 - rng.next_f64();
                let x = -(u.ln()) * mean as f64;
                (x.min(20.0 * mean as f64)) as Ns
            }
        }
    }

    /// The mean, ns.
    pub fn mean(&self) -> Ns {
        match *self {
            Dist::Fixed(v) => v,
            Dist::Uniform { lo, hi } => lo + hi.saturating_sub(lo) / 2,
            Dist::Exp { mean } => mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_uniform_stay_in_range() {
        let mut r = Rng::new(1, 1);
        assert_eq!(Dist::Fixed(7).sample(&mut r), 7);
        for _ in 0..1000 {
            let x = Dist::Uniform { lo: 10, hi: 20 }.sample(&mut r);
            assert!((10..=20).contains(&x));
        }
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut r = Rng::new(2, 1);
        let n = 20_000u64;
        let sum: u64 = (0..n).map(|_| Dist::Exp { mean: 1000 }.sample(&mut r)).sum();
        let mean = sum / n;
        assert!((950..=1050).contains(&mean), "mean {mean}");
    }
}
