//! Newly-idle balancing (kernel/sched/fair.c, v7.0 / linux-next 2026):
//! `sched_balance_newidle`, with NI_RANDOM (v6.18: run a domain's pass with
//! probability ~ its recent success ratio) and NI_RATE (v7.0: a low call
//! rate raises the ratio), `update_newidle_stats` and `update_newidle_cost`.
//!
//! A pass costs `cost.balance_ns_base + cost.balance_ns_per_cpu *
//! span_weight` (the kernel measures `sched_clock` around it); the sum is
//! charged to the CPU, and feeds `max_newidle_lb_cost` as the measured time
//! does in the kernel, with what an interrupt or a host stall took from the
//! CPU while a domain's pass ran added to that domain's cost
//! (`engine/timed_work.rs`, folded in by `fold_timed_newidle` before the
//! costs are read again).
//!
//! Seed ideas 3 (`avg_idle_on_enqueue`: hold the idle stamp back during the
//! pass) and 7 (`ni_half_idle_retry`) are here too; README_newidle.md
//! describes both.

use super::balance::CpuIdleType;
use crate::engine::rq::{SdRuntime, SYSCTL_SCHED_MIGRATION_COST_NS};
use crate::engine::Sim;
use crate::ids::{CpuId, Ns, NSEC_PER_SEC};
use crate::sched_feat;
use crate::topology::domains::{SD_BALANCE_NEWIDLE, SD_SHARE_LLC};
use crate::trace::{BalanceKind, Event};

/// NI_RANDOM's die has this many sides; `newidle_ratio` is out of it.
pub const NI_SIDES: u32 = 1024;
/// NI_RATE: the time since the last ratio update, shifted right by this
/// (2^22 ns ~ 4.2 ms per unit), is added to the success count: one update
/// per 4 s of 1024 calls (256 Hz) counts as full success.
pub const NI_RATE_SHIFT: u32 = 22;

/// `update_newidle_cost`'s decay: once a second the domain's maximum pass
/// cost loses ~1% (253/256). Returns whether it decayed (`need_decay`).
#[inline(always)]
pub(crate) fn decay_max_lb_cost(rt: &mut SdRuntime, now: Ns) -> bool {
    if now > rt.last_decay_max_lb_cost + NSEC_PER_SEC {
        rt.max_newidle_lb_cost = rt.max_newidle_lb_cost * 253 / 256;
        rt.last_decay_max_lb_cost = now;
        true
    } else {
        false
    }
}

impl Sim {
    /// `update_newidle_stats(sd, success)`: count a call and its weighted
    /// success; every 1024 calls the ratio becomes the success count (plus
    /// NI_RATE's rate term) and both counters halve.
    pub fn update_newidle_stats(&mut self, cpu: CpuId, level: usize, success: u32) {
        let now = self.now;
        let rate = sched_feat!(self.features, NI_RATE);
        let rt = self.rqs.sd_mut(cpu.idx(), level);
        rt.newidle_call += 1;
        rt.newidle_success += success;
        if rt.newidle_call >= NI_SIDES {
            let delta = now.saturating_sub(rt.newidle_stamp);
            rt.newidle_stamp = now;
            let mut ratio = if rate { delta >> NI_RATE_SHIFT } else { 0 };
            ratio += rt.newidle_success as u64;
            rt.newidle_ratio = ratio.min(NI_SIDES as u64) as u32;
            rt.newidle_call /= 2;
            rt.newidle_success /= 2;
        }
    }

    /// `update_newidle_cost(sd, cost, success)`: track the domain's maximum
    /// pass cost, decayed by ~1% (253/256) per second so that it follows
    /// the current cost. Returns whether it decayed (`need_decay`).
    // XXX: v6.18-rc briefly capped the max at migration_cost + 200 ns and
    // bumped it by 3/2 on failure; that was reverted with NI_RANDOM and is
    // not modelled.
    pub fn update_newidle_cost(&mut self, cpu: CpuId, level: usize, cost: Ns, success: u32) -> bool {
        if cost > 0 {
            self.update_newidle_stats(cpu, level, success);
        }
        let now = self.now;
        let rt = self.rqs.sd_mut(cpu.idx(), level);
        if cost > rt.max_newidle_lb_cost {
            rt.max_newidle_lb_cost = cost;
            rt.last_decay_max_lb_cost = now;
            false
        } else {
            decay_max_lb_cost(rt, now)
        }
    }

    /// `update_next_balance(sd, &next_balance)`: the idle interval's due time.
    fn update_next_balance(&self, cpu: CpuId, level: usize, next_balance: &mut Ns) {
        let interval = self.get_sd_balance_interval(cpu, level, false);
        let next = self.rqs[cpu.idx()].sd[level].last_balance + interval;
        if *next_balance > next {
            *next_balance = next;
        }
    }

    /// `sched_balance_newidle(this_rq)`: `cpu` is about to go idle; try to
    /// pull a task from the busiest CPU of each domain, bottom-up, while the
    /// expected idle time (`avg_idle`) covers the cost so far plus the
    /// domain's `max_newidle_lb_cost`. Returns the number of tasks pulled.
    ///
    /// With `ni_half_idle_retry` (seed idea 7) a first pass that pulled
    /// nothing may be followed by [`Sim::newidle_half_idle_retry`]; with
    /// `avg_idle_on_enqueue` (seed idea 3) the idle stamp is held back during
    /// the pass so that the pulled tasks' enqueues do not sample it.
    pub fn sched_balance_newidle(&mut self, cpu: CpuId) -> u32 {
        let now = self.now;
        if self.rqs[cpu.idx()].ttwu_pending > 0 {
            return 0; // a wakeup is on its way: no need to look
        }
        self.fold_timed_newidle(cpu);
        // Measure the balancing time as idle time (0 means "not idle").
        let idle_stamp = now.max(1);
        // Seed idea 3: enqueue_task now samples avg_idle when idle_stamp is
        // set, so a task this pass pulls would end a "idle period" as long as
        // the pass. The patch saves the stamp and restores it only when
        // nothing was pulled. DEVIATION(patch text): the stamp saved is the
        // one this entry takes (rq_clock), as the kernel sets it here; an
        // older stamp of a CPU re-entering from idle is dropped either way.
        let hold_stamp = sched_feat!(self.features, avg_idle_on_enqueue);
        self.rqs.untracked_mut(cpu.idx()).idle_stamp = if hold_stamp { 0 } else { idle_stamp };
        let saved_resched = self.rqs[cpu.idx()].need_resched;
        let levels = self.sd_chain(cpu).len();
        let mut next_balance = now + NSEC_PER_SEC;
        let mut pulled = 0u32;
        let mut curr_cost: Ns = 0;
        let mut depth = 0u8;
        let avg_idle = self.rqs[cpu.idx()].avg_idle;
        let max_ns = 2 * self.rqs[cpu.idx()].max_idle_balance_cost;
        self.emit(Event::AvgIdle { cpu, avg_idle_ns: avg_idle, max_ns });
        let skip = levels == 0 || !self.rd_overloaded || avg_idle < self.rqs[cpu.idx()].sd[0].max_newidle_lb_cost;
        if skip {
            if levels > 0 {
                self.update_next_balance(cpu, 0, &mut next_balance);
            }
        } else {
            self.update_blocked_averages(cpu);
            let mut cont = true;
            // Chain levels whose pass NI_RANDOM's dice skipped (idea 7).
            let mut dice_skipped: u64 = 0;
            let mut stopped_by_cost = false;
            for level in 0..levels {
                self.update_next_balance(cpu, level, &mut next_balance);
                depth = level as u8;
                if avg_idle < curr_cost + self.rqs[cpu.idx()].sd[level].max_newidle_lb_cost {
                    stopped_by_cost = true;
                    break;
                }
                let sd = self.sd_at(cpu, level).1;
                if sd.has(SD_BALANCE_NEWIDLE) {
                    let mut weight = 1;
                    let ratio = self.rqs[cpu.idx()].sd[level].newidle_ratio;
                    if sched_feat!(self.features, NI_RANDOM) && ratio < NI_SIDES {
                        // Throw a 1024-sided die: run with probability ~ ratio/1024,
                        // and count a success as 1024/ratio to keep the ratio unbiased.
                        let d1k = self.sched_rng.below(NI_SIDES);
                        weight = 1 + ratio;
                        if d1k > weight {
                            self.update_newidle_stats(cpu, level, 0);
                            dice_skipped |= 1 << level.min(63);
                            continue;
                        }
                        weight = (NI_SIDES + weight / 2) / weight;
                    }
                    pulled = self.newidle_balance_domain(cpu, level, weight, &mut cont, &mut curr_cost);
                }
                if pulled > 0 || !cont {
                    break;
                }
            }
            if sched_feat!(self.features, ni_half_idle_retry)
                && pulled == 0
                && cont
                && !stopped_by_cost
                && self.rqs[cpu.idx()].nr_running == 0
            {
                let (p, d) = self.newidle_half_idle_retry(cpu, avg_idle, dice_skipped, &mut cont, &mut curr_cost);
                pulled = p;
                depth = depth.max(d);
            }
            let rq = self.rqs.untracked_mut(cpu.idx());
            if curr_cost > rq.max_idle_balance_cost {
                rq.max_idle_balance_cost = curr_cost;
            }
            // Something arrived meanwhile: do not go idle.
            if rq.nr_running > 0 && pulled == 0 {
                pulled = 1;
            }
        }
        let rq = self.rqs.untracked_mut(cpu.idx());
        if rq.next_balance > next_balance {
            rq.next_balance = next_balance;
        }
        // The pulled tasks' wakeup_preempt asked this CPU to reschedule; the
        // caller (schedule) picks again anyway.
        rq.need_resched = saved_resched;
        if pulled > 0 {
            rq.idle_stamp = 0;
        } else {
            rq.idle_stamp = idle_stamp;
            self.nohz_newidle_balance(cpu);
        }
        self.charge(cpu, curr_cost);
        self.timed_work_begin(cpu);
        self.emit(Event::Balance { cpu, depth, kind: BalanceKind::NewIdle, pulled });
        pulled
    }

    /// What `cpu`'s last newly-idle pass measured beyond its modelled cost,
    /// folded into the domains' `max_newidle_lb_cost` and the runqueue's
    /// `max_idle_balance_cost` as the kernel's `sched_clock` readings would
    /// have put it there: an interrupt handled or a host stall while a
    /// domain's pass ran counts in that domain's cost (`engine/timed_work.rs`).
    /// Called before either is read again.
    #[inline(always)]
    pub(crate) fn fold_timed_newidle(&mut self, cpu: CpuId) {
        if self.times_work() {
            self.fold_timed_newidle_now(cpu);
        }
    }

    /// `fold_timed_newidle` where the machine keeps timed work.
    #[inline(never)]
    fn fold_timed_newidle_now(&mut self, cpu: CpuId) {
        let Some(r) = self.take_timed_work(cpu) else { return };
        let mut total = 0;
        for i in 0..r.n {
            let cost = r.costs[i] + r.stolen[i];
            total += cost;
            let rt = self.rqs.sd_mut(cpu.idx(), r.tags[i] as usize);
            if cost > rt.max_newidle_lb_cost {
                rt.max_newidle_lb_cost = cost;
                rt.last_decay_max_lb_cost = r.end;
            }
        }
        let rq = self.rqs.untracked_mut(cpu.idx());
        if total > rq.max_idle_balance_cost {
            rq.max_idle_balance_cost = total;
        }
    }

    /// One newly-idle pass over the domain at `level`: `sched_balance_rq`,
    /// its modelled cost added to `curr_cost`, and `update_newidle_cost`
    /// with a success counted `weight` times. Returns the tasks pulled.
    fn newidle_balance_domain(
        &mut self,
        cpu: CpuId,
        level: usize,
        weight: u32,
        cont: &mut bool,
        curr_cost: &mut Ns,
    ) -> u32 {
        let span = self.sd_at(cpu, level).1.span_weight;
        let pulled = self.sched_balance_rq(cpu, level, CpuIdleType::NewlyIdle, cont);
        let domain_cost = self.balance_cost_ns(span);
        *curr_cost += domain_cost;
        self.timed_part(cpu, level.min(u8::MAX as usize) as u8, domain_cost);
        self.update_newidle_cost(cpu, level, domain_cost, weight * (pulled > 0) as u32);
        pulled
    }

    /// Seed idea 7 (`ni_half_idle_retry`, 2026 against v7.1-rc3): after a
    /// first pass that pulled nothing and may continue, while at least half
    /// of the expected idle time is left, retry once the LLC-level domains
    /// (`SD_SHARE_LLC`) whose pass NI_RANDOM's dice skipped (bit `level` of
    /// `dice_skipped`), bottom-up. Returns (tasks pulled, deepest level tried).
    ///
    /// Where the description leaves room, this model chooses:
    /// * "remaining idle budget": `avg_idle - curr_cost` after the first
    ///   pass, fixed for the retry; the retry runs only when
    ///   `2 * remaining >= avg_idle`;
    /// * a domain is tried only while `curr_cost + max_newidle_lb_cost <=
    ///   remaining`, with `curr_cost` the running total (first pass
    ///   included), the first pass's own form of the check; the first
    ///   domain that does not fit ends the retry (costs grow up the chain);
    /// * LLC-level domains are the bottom of the chain, so the first domain
    ///   without `SD_SHARE_LLC` ends the retry;
    /// * no die is thrown again; a retried pass counts one more call in
    ///   `update_newidle_stats` (the skip counted one) and a success with
    ///   weight 1, since it was not chosen by the die with probability
    ///   ratio/1024 and so needs no 1024/(1 + ratio) correction;
    /// * the retry stops at the first pull or when `sched_balance_rq`
    ///   clears `continue_balancing`, as the first pass does.
    pub fn newidle_half_idle_retry(
        &mut self,
        cpu: CpuId,
        avg_idle: Ns,
        dice_skipped: u64,
        cont: &mut bool,
        curr_cost: &mut Ns,
    ) -> (u32, u8) {
        let remaining = avg_idle.saturating_sub(*curr_cost);
        if dice_skipped == 0 || 2 * remaining < avg_idle {
            return (0, 0);
        }
        let mut depth = 0u8;
        for level in 0..self.sd_chain(cpu).len().min(64) {
            let sd = self.sd_at(cpu, level).1;
            if !sd.has(SD_SHARE_LLC) {
                break;
            }
            if dice_skipped & (1 << level) == 0 || !sd.has(SD_BALANCE_NEWIDLE) {
                continue;
            }
            if remaining < *curr_cost + self.rqs[cpu.idx()].sd[level].max_newidle_lb_cost {
                break;
            }
            depth = level as u8;
            let pulled = self.newidle_balance_domain(cpu, level, 1, cont, curr_cost);
            if pulled > 0 || !*cont {
                return (pulled, depth);
            }
        }
        (0, depth)
    }

    /// `nohz_newidle_balance`: before going idle for long enough, update
    /// the stale blocked load of the idle CPUs (`NOHZ_NEWILB_KICK`, run by
    /// `nohz_run_idle_balance` with `NOHZ_STATS_KICK` only).
    // DEVIATION(kernel): run at once rather than from the idle loop.
    fn nohz_newidle_balance(&mut self, cpu: CpuId) {
        if self.rqs[cpu.idx()].avg_idle < SYSCTL_SCHED_MIGRATION_COST_NS {
            return;
        }
        if !self.nohz_has_blocked() || self.now < self.fair.nohz.next_blocked {
            return;
        }
        self.nohz_idle_balance_run(cpu, super::nohz::NOHZ_STATS_KICK);
    }
}

#[cfg(test)]
#[path = "newidle_tests.rs"]
mod tests;
