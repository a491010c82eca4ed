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

/// Text form of a [`Dist`] in a spec (`irq:hardirq=2us,softirq=exp:25us`):
///
/// * `D`: always `D` (`2us`; a bare number is in the parameter's unit);
/// * `exp:D`: exponential with mean `D` (Poisson arrivals);
/// * `uniform:LO-HI`: uniform in `[LO, HI]` (`uniform:1us-3us`).
///
/// `None` on anything else, or on `uniform` with `LO > HI`.
pub(crate) fn parse_dist(text: &str, default_unit_ns: Ns) -> Option<Dist> {
    let t = text.trim();
    let dur = |s: &str| super::spec::parse_duration(s, default_unit_ns);
    if let Some(m) = t.strip_prefix("exp:") {
        return Some(Dist::Exp { mean: dur(m)? });
    }
    if let Some(r) = t.strip_prefix("uniform:") {
        let (lo, hi) = r.split_once('-')?;
        let (lo, hi) = (dur(lo)?, dur(hi)?);
        return (lo <= hi).then_some(Dist::Uniform { lo, hi });
    }
    dur(t).map(Dist::Fixed)
}

/// The canonical text of a [`Dist`], which [`parse_dist`] reads back.
pub(crate) fn format_dist(d: &Dist) -> String {
    use super::spec::format_duration as f;
    match *d {
        Dist::Fixed(v) => f(v),
        Dist::Exp { mean } => format!("exp:{}", f(mean)),
        Dist::Uniform { lo, hi } => format!("uniform:{}-{}", f(lo), f(hi)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_text_round_trips() {
        assert_eq!(parse_dist("2us", 1), Some(Dist::Fixed(2_000)));
        assert_eq!(parse_dist("3", 1_000), Some(Dist::Fixed(3_000)));
        assert_eq!(parse_dist("exp:25us", 1), Some(Dist::Exp { mean: 25_000 }));
        assert_eq!(parse_dist("uniform:1us-3us", 1), Some(Dist::Uniform { lo: 1_000, hi: 3_000 }));
        for bad in ["", "exp:", "exp:x", "uniform:3us", "uniform:3us-1us", "normal:2us", "-2us"] {
            assert_eq!(parse_dist(bad, 1), None, "{bad}");
        }
        for d in [Dist::Fixed(1_500), Dist::Exp { mean: 100_000 }, Dist::Uniform { lo: 1_000, hi: 3_000 }] {
            assert_eq!(parse_dist(&format_dist(&d), 1), Some(d));
        }
        assert_eq!(format_dist(&Dist::Uniform { lo: 1_000, hi: 3_000 }), "uniform:1us-3us");
    }

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
