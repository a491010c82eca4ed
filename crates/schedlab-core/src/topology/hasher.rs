//! A hasher for the build-time maps keyed by CPU masks (`FixedHasher`):
//! the domain builder's map of distinct domains, the balancer's group
//! slots and span slots.
//!
//! Those maps are only looked up, never iterated, so the hash function
//! changes no result, only the build's cost. Two things matter. The keys
//! are fixed: the std default seeds each map at random, which moves a
//! build's instruction count from run to run (engine_cost.py counts them).
//! And it is cheap on long keys: a `CpuMask` is 1024 bits whatever the
//! machine, and the domain builder's key holds a domain's whole group list,
//! so SipHash (`DefaultHasher`) spent about 4.5 M instructions of the
//! standard bench (0.6%) on them, where a multiply and a rotation per word
//! is enough to spread distinct masks over the buckets.

use std::hash::Hasher;

/// An odd constant with well mixed bits (2^64 over the golden ratio).
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// A word-at-a-time hash with a fixed start (0): each word is xored in and
/// the state multiplied by `K` into 128 bits, whose halves are xored (a
/// "folded multiply": the high half carries the low bits' influence up, the
/// low half the high bits' down, so every input bit reaches both the high
/// bits the map takes its control bytes from and the low bits it takes the
/// bucket from). One `mul` and a few moves a word.
#[derive(Clone, Copy, Debug, Default)]
pub struct WordHasher(u64);

impl WordHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        let p = ((self.0 ^ w) as u128).wrapping_mul(K as u128);
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The length too, so that trailing zero bytes still count.
            self.add(u64::from_le_bytes(w) ^ (rest.len() as u64) << 59);
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(n as u64);
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(n as u64);
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpumask::CpuMask;
    use crate::ids::CpuId;
    use std::collections::HashSet;
    use std::hash::{BuildHasher, BuildHasherDefault};

    fn hash_of<T: std::hash::Hash>(t: &T) -> u64 {
        BuildHasherDefault::<WordHasher>::default().hash_one(t)
    }

    #[test]
    fn the_same_key_hashes_the_same_every_time() {
        let mut m = CpuMask::new();
        m.set(CpuId(3));
        m.set(CpuId(900));
        assert_eq!(hash_of(&(m, 117u32)), hash_of(&(m, 117u32)));
    }

    #[test]
    fn masks_of_one_cpu_and_of_two_cpus_spread_over_the_low_bits() {
        // Every mask of one CPU and of two neighbours (an SMT core) of a
        // 1024-CPU machine: distinct hashes, and the low 11 bits (a bucket
        // in a map of ~2,000) of most of them distinct too.
        let mut masks = Vec::new();
        for c in 0..1024u32 {
            let mut m = CpuMask::new();
            m.set(CpuId(c));
            masks.push(m);
            if c % 2 == 0 {
                m.set(CpuId(c + 1));
                masks.push(m);
            }
        }
        let hashes: HashSet<u64> = masks.iter().map(hash_of).collect();
        assert_eq!(hashes.len(), masks.len());
        let buckets: HashSet<u64> = hashes.iter().map(|h| h & 2047).collect();
        assert!(buckets.len() * 10 > masks.len() * 6, "{} buckets for {} masks", buckets.len(), masks.len());
    }
}
