//! Load weights and the fixed-point arithmetic that turns real time into
//! virtual time (kernel/sched/core.c `sched_prio_to_weight[]`,
//! kernel/sched/fair.c `__calc_delta`, `calc_delta_fair`). Shared by the
//! EEVDF and CFS disciplines of the fair runqueue.

use super::eevdf::SchedEntity;
use crate::pelt::NICE_0_LOAD;

/// Nice -20..19 to load weight (kernel `sched_prio_to_weight[]`): each nice
/// step is ~10% of CPU, a ratio of ~1.25. These are fixed ABI numbers.
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20 .. -16
    29154, 23254, 18705, 14949, 11916, // -15 .. -11
    9548, 7620, 6100, 4904, 3906, // -10 .. -6
    3121, 2501, 1991, 1586, 1277, // -5 .. -1
    1024, 820, 655, 526, 423, // 0 .. 4
    335, 272, 215, 172, 137, // 5 .. 9
    110, 87, 70, 56, 45, // 10 .. 14
    36, 29, 23, 18, 15, // 15 .. 19
];

/// `WEIGHT_IDLEPRIO` (kernel/sched/sched.h): a SCHED_IDLE task's weight,
/// below nice 19's 15, whatever its nice.
pub const WEIGHT_IDLEPRIO: u64 = 3;
/// `WMULT_IDLEPRIO`: its inverse, `2^32 / 3`.
pub const WMULT_IDLEPRIO: u32 = 1_431_655_765;

/// `WMULT_CONST`: inverse weights are `WMULT_CONST / w` (2^32 fixed point).
pub const WMULT_CONST: u64 = 0xffff_ffff;
const WMULT_SHIFT: u32 = 32;

/// Weight of a nice value (clamped to -20..=19).
pub fn nice_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize] as u64
}

/// `__update_inv_weight`: `WMULT_CONST / w`.
///
/// DEVIATION(kernel): task weights set from nice use the precomputed
/// `sched_prio_to_wmult[]`, which differs from this by at most one unit in
/// 2^32 (a 1e-5 relative difference for nice 19 at most).
pub fn inv_weight(weight: u64) -> u32 {
    if weight >= WMULT_CONST {
        1
    } else {
        WMULT_CONST.checked_div(weight).unwrap_or(WMULT_CONST) as u32
    }
}

/// `__calc_delta`: `delta * weight / lw_weight` with `lw_inv = 2^32 / lw_weight`,
/// keeping the kernel's shifts so results match it bit for bit.
pub fn calc_delta(delta: u64, weight: u64, lw_inv: u32) -> u64 {
    let fls = |x: u64| 64 - x.leading_zeros();
    let mut fact = weight;
    let mut shift = WMULT_SHIFT;
    if fact >> 32 != 0 {
        let fs = fls(fact >> 32);
        shift -= fs;
        fact >>= fs;
    }
    fact = (fact & 0xffff_ffff) * lw_inv as u64;
    if fact >> 32 != 0 {
        let fs = fls(fact >> 32);
        shift -= fs;
        fact >>= fs;
    }
    ((delta as u128 * fact as u128) >> shift) as u64
}

/// `calc_delta_fair`: real time to virtual time for `se` (`delta * 1024 / w`).
#[inline]
pub fn calc_delta_fair(delta: u64, se: &SchedEntity) -> u64 {
    if se.weight != NICE_0_LOAD {
        calc_delta(delta, NICE_0_LOAD, se.inv_weight)
    } else {
        delta
    }
}
