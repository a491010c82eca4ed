//! A fixed-size CPU bitmap, the counterpart of the kernel's `struct cpumask`.
//!
//! It is `Copy` and lives on the stack, so the wakeup path can intersect masks
//! (`cpumask_and(cpus, sched_domain_span(sd), p->cpus_ptr)`) without allocating.

use crate::ids::CpuId;

/// Largest machine schedlab describes (the kernel's `NR_CPUS` for us).
pub const MAX_CPUS: usize = 1024;
const WORDS: usize = MAX_CPUS / 64;

/// A set of CPUs.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuMask {
    words: [u64; WORDS],
}

impl Default for CpuMask {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuMask({})", self.to_list_string())
    }
}

impl CpuMask {
    /// The empty mask.
    pub const fn new() -> Self {
        Self { words: [0; WORDS] }
    }

    /// CPUs `0..n`.
    pub fn first_n(n: usize) -> Self {
        let mut m = Self::new();
        for c in 0..n {
            m.set(CpuId(c as u32));
        }
        m
    }

    /// A mask holding the given CPUs.
    pub fn from_cpus<I: IntoIterator<Item = CpuId>>(cpus: I) -> Self {
        let mut m = Self::new();
        for c in cpus {
            m.set(c);
        }
        m
    }

    /// Add `cpu`.
    #[inline]
    pub fn set(&mut self, cpu: CpuId) {
        let i = cpu.idx();
        self.words[i / 64] |= 1u64 << (i % 64);
    }

    /// Remove `cpu`.
    #[inline]
    pub fn clear(&mut self, cpu: CpuId) {
        let i = cpu.idx();
        self.words[i / 64] &= !(1u64 << (i % 64));
    }

    /// Whether `cpu` is in the mask.
    #[inline]
    pub fn test(&self, cpu: CpuId) -> bool {
        let i = cpu.idx();
        i < MAX_CPUS && self.words[i / 64] & (1u64 << (i % 64)) != 0
    }

    /// Number of CPUs in the mask (`cpumask_weight`).
    #[inline]
    pub fn weight(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether the mask is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Intersection (`cpumask_and`).
    #[inline]
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let mut r = *self;
        for (a, b) in r.words.iter_mut().zip(other.words.iter()) {
            *a &= *b;
        }
        r
    }

    /// Union (`cpumask_or`).
    #[inline]
    pub fn or(&self, other: &CpuMask) -> CpuMask {
        let mut r = *self;
        for (a, b) in r.words.iter_mut().zip(other.words.iter()) {
            *a |= *b;
        }
        r
    }

    /// Difference (`cpumask_andnot`).
    #[inline]
    pub fn andnot(&self, other: &CpuMask) -> CpuMask {
        let mut r = *self;
        for (a, b) in r.words.iter_mut().zip(other.words.iter()) {
            *a &= !*b;
        }
        r
    }

    /// Whether the masks share a CPU (`cpumask_intersects`).
    #[inline]
    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.words.iter().zip(other.words.iter()).any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `other` (`cpumask_subset`).
    #[inline]
    pub fn is_subset(&self, other: &CpuMask) -> bool {
        self.words.iter().zip(other.words.iter()).all(|(a, b)| a & !b == 0)
    }

    /// Lowest CPU in the mask (`cpumask_first`).
    #[inline]
    pub fn first(&self) -> Option<CpuId> {
        self.next_from(0)
    }

    /// Lowest CPU `>= start` in the mask.
    #[inline]
    pub fn next_from(&self, start: usize) -> Option<CpuId> {
        if start >= MAX_CPUS {
            return None;
        }
        let mut wi = start / 64;
        let mut w = self.words[wi] & (!0u64 << (start % 64));
        loop {
            if w != 0 {
                return Some(CpuId((wi * 64 + w.trailing_zeros() as usize) as u32));
            }
            wi += 1;
            if wi >= WORDS {
                return None;
            }
            w = self.words[wi];
        }
    }

    /// Iterate the CPUs in ascending order.
    #[inline]
    pub fn iter(&self) -> CpuMaskIter<'_> {
        CpuMaskIter { mask: self, next: 0 }
    }

    /// Iterate every CPU once, starting at `start` and wrapping around
    /// (`for_each_cpu_wrap`), as `select_idle_cpu` scans from `target + 1`.
    #[inline]
    pub fn iter_wrap(&self, start: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        let s = start.idx().min(MAX_CPUS);
        let hi = self.iter_from(s);
        let lo = self.iter().take_while(move |c| c.idx() < s);
        hi.chain(lo)
    }

    /// Iterate the CPUs `>= start` in ascending order.
    #[inline]
    pub fn iter_from(&self, start: usize) -> CpuMaskIter<'_> {
        CpuMaskIter { mask: self, next: start }
    }

    /// The kernel's list format: `0-3,8,10-11`.
    pub fn to_list_string(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(a) = it.next() {
            let mut b = a;
            while let Some(&n) = it.peek() {
                if n.0 == b.0 + 1 {
                    b = n;
                    it.next();
                } else {
                    break;
                }
            }
            if !out.is_empty() {
                out.push(',');
            }
            if a == b {
                out.push_str(&a.0.to_string());
            } else {
                out.push_str(&format!("{}-{}", a.0, b.0));
            }
        }
        out
    }

    /// Parse the kernel's list format (`0-3,8`). Errors name what was wrong.
    pub fn parse_list(s: &str) -> Result<CpuMask, String> {
        let mut m = CpuMask::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(m);
        }
        for part in s.split(',') {
            let part = part.trim();
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let a: usize = a.parse().map_err(|_| format!("'{part}' is not a CPU number or range"))?;
            let b: usize = b.parse().map_err(|_| format!("'{part}' is not a CPU number or range"))?;
            if a > b {
                return Err(format!("range '{part}' is reversed"));
            }
            if b >= MAX_CPUS {
                return Err(format!("CPU {b} is beyond the largest supported CPU {}", MAX_CPUS - 1));
            }
            for c in a..=b {
                m.set(CpuId(c as u32));
            }
        }
        Ok(m)
    }
}

/// Iterator over the CPUs of a [`CpuMask`].
pub struct CpuMaskIter<'a> {
    mask: &'a CpuMask,
    next: usize,
}

impl Iterator for CpuMaskIter<'_> {
    type Item = CpuId;
    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        let c = self.mask.next_from(self.next)?;
        self.next = c.idx() + 1;
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_round_trip() {
        let m = CpuMask::parse_list("0-3,8,10-11").unwrap();
        assert_eq!(m.weight(), 7);
        assert_eq!(m.to_list_string(), "0-3,8,10-11");
        assert!(CpuMask::parse_list("3-1").is_err());
        assert!(CpuMask::parse_list("x").is_err());
    }

    #[test]
    fn wrap_visits_each_once_from_start() {
        let m = CpuMask::parse_list("0-7").unwrap();
        let v: Vec<u32> = m.iter_wrap(CpuId(5)).map(|c| c.0).collect();
        assert_eq!(v, vec![5, 6, 7, 0, 1, 2, 3, 4]);
    }

    #[test]
    fn set_ops() {
        let a = CpuMask::parse_list("0-5").unwrap();
        let b = CpuMask::parse_list("4-9").unwrap();
        assert_eq!(a.and(&b).to_list_string(), "4-5");
        assert_eq!(a.andnot(&b).to_list_string(), "0-3");
        assert!(a.and(&b).is_subset(&a));
        assert_eq!(a.next_from(64), None);
        let big = CpuMask::parse_list("100,700").unwrap();
        assert_eq!(big.iter().map(|c| c.0).collect::<Vec<_>>(), vec![100, 700]);
    }
}
