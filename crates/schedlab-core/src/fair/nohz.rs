//! NOHZ idle load balancing (kernel/sched/fair.c, `CONFIG_NO_HZ_COMMON`):
//! a busy CPU's tick decides whether the idle CPUs with a stopped tick need
//! balancing (`nohz_balancer_kick`), and one idle CPU balances on behalf of
//! all of them (`_nohz_idle_balance`), also decaying their blocked load
//! (`update_nohz_stats`), which nothing else does while they sleep.
//!
//! Also home of [`NohzState`], the load-balancing state that the kernel
//! keeps outside runqueues and domains (`struct nohz`, `sgc->imbalance`).

use super::balance::CpuIdleType;
use crate::cpumask::CpuMask;
use crate::engine::Sim;
use crate::ids::{CpuId, Ns, NSEC_PER_MSEC, NSEC_PER_SEC};
use crate::sched_feat;
use crate::trace::BalanceKind;

/// `NOHZ_BALANCE_KICK`: balance on behalf of the idle CPUs.
pub const NOHZ_BALANCE_KICK: u32 = 0x1;
/// `NOHZ_STATS_KICK`: update the idle CPUs' blocked load.
pub const NOHZ_STATS_KICK: u32 = 0x2;
/// `LOAD_AVG_PERIOD` in ms: blocked load is refreshed at most this often
/// (`nohz.next_blocked`), the PELT half-life.
pub const NOHZ_BLOCKED_PERIOD_MS: Ns = 32;

/// Global balancing state: the kernel's `struct nohz` plus the per-group
/// `sched_group_capacity::imbalance` flags.
#[derive(Clone, Debug)]
pub struct NohzState {
    /// `nohz.idle_cpus_mask`: CPUs that are idle with the tick stopped
    /// (read through [`NohzState::idle_cpus_mask`], written through
    /// `set_idle`/`clear_idle`, which keep `nr_idle`).
    idle_cpus_mask: CpuMask,
    /// `nohz.nr_cpus`: CPUs in `idle_cpus_mask`, which the kernel counts
    /// beside the mask for `nohz_balancer_kick`'s first test; here too, at
    /// every busy tick, rather than testing the mask's 16 words.
    nr_idle: u32,
    /// `nohz.next_balance`: no balance kick before this, ns.
    pub next_balance: Ns,
    /// `nohz.next_blocked`: no blocked-load refresh before this, ns.
    pub next_blocked: Ns,
    /// `rq->last_blocked_load_update_tick` per CPU, ns.
    pub last_blocked_update: Vec<Ns>,
    /// ILB kicks issued.
    pub kicks: u64,
    /// The idle-load-balancer CPU while it balances on behalf of others
    /// (what it pulls it attaches remotely: a preemption there costs an IPI).
    pub ilb_cpu: Option<CpuId>,
    /// `sgc->imbalance`, indexed by `depth * nr_cpus + first CPU of the group`:
    /// the level below failed to balance because of affinity.
    sgc_imbalance: Vec<bool>,
    /// How many of `sgc_imbalance` are set: usually none (only pinned tasks
    /// set one), and then the usual balance pass's group loop
    /// (`update_sg_lb_stats::<true>`) does not look them up.
    nr_sgc_imbalanced: usize,
    /// Scratch for `nohz_idle_balance_run`'s snapshot of the mask (the
    /// balance passes it runs borrow the whole simulator), kept between
    /// runs so the walk allocates nothing once it has grown.
    walk: Vec<CpuId>,
    nr_cpus: usize,
}

impl NohzState {
    /// Fresh state for `nr_cpus` CPUs and `nr_levels` domain levels, the
    /// CPUs of `idle` tick-stopped.
    pub fn new(nr_cpus: usize, nr_levels: usize, idle: CpuMask) -> Self {
        NohzState {
            idle_cpus_mask: idle,
            nr_idle: idle.weight(),
            next_balance: 0,
            next_blocked: 0,
            last_blocked_update: vec![0; nr_cpus],
            kicks: 0,
            ilb_cpu: None,
            sgc_imbalance: vec![false; nr_cpus * (nr_levels + 1)],
            nr_sgc_imbalanced: 0,
            walk: Vec::with_capacity(nr_cpus),
            nr_cpus,
        }
    }

    /// `nohz.idle_cpus_mask`.
    #[inline]
    pub fn idle_cpus_mask(&self) -> &CpuMask {
        &self.idle_cpus_mask
    }

    /// `cpu` joins `nohz.idle_cpus_mask`.
    #[inline]
    pub fn set_idle(&mut self, cpu: CpuId) {
        if !self.idle_cpus_mask.test(cpu) {
            self.idle_cpus_mask.set(cpu);
            self.nr_idle += 1;
        }
    }

    /// `cpu` leaves `nohz.idle_cpus_mask`.
    #[inline]
    pub fn clear_idle(&mut self, cpu: CpuId) {
        if self.idle_cpus_mask.test(cpu) {
            self.idle_cpus_mask.clear(cpu);
            self.nr_idle -= 1;
        }
    }

    /// No CPU is in `nohz.idle_cpus_mask` (`!atomic_read(&nohz.nr_cpus)`).
    #[inline]
    pub fn no_idle_cpus(&self) -> bool {
        debug_assert_eq!(self.nr_idle == 0, self.idle_cpus_mask.is_empty());
        self.nr_idle == 0
    }

    /// `sgc->imbalance` of the group starting at `first` in the domains at `depth`.
    pub fn sgc_imbalance(&self, depth: usize, first: CpuId) -> bool {
        self.sgc_imbalance.get(depth * self.nr_cpus + first.idx()).copied().unwrap_or(false)
    }

    /// Whether some group's `sgc->imbalance` is set.
    #[inline]
    pub fn any_sgc_imbalance(&self) -> bool {
        self.nr_sgc_imbalanced != 0
    }

    /// Set `sgc->imbalance` of the group starting at `first` at `depth`.
    pub fn set_sgc_imbalance(&mut self, depth: usize, first: CpuId, v: bool) {
        if let Some(x) = self.sgc_imbalance.get_mut(depth * self.nr_cpus + first.idx()) {
            if *x != v {
                *x = v;
                if v {
                    self.nr_sgc_imbalanced += 1;
                } else {
                    self.nr_sgc_imbalanced -= 1;
                }
            }
        }
    }
}

impl Sim {
    /// `nohz_balance_enter_idle`: `cpu`'s tick stopped while it is idle; it
    /// joins the NOHZ idle mask and, if its tick was running until now
    /// (`was_busy`), stops counting as busy in its LLC
    /// (`set_cpu_sd_state_idle`). Called from the engine's
    /// `tick_nohz_idle_stop_tick`.
    pub(crate) fn nohz_balance_enter_idle(&mut self, cpu: CpuId, was_busy: bool) {
        self.fair.nohz.set_idle(cpu);
        if was_busy {
            let llc = self.llc_of(cpu);
            self.fair.llc[llc].nr_busy_cpus = self.fair.llc[llc].nr_busy_cpus.saturating_sub(1);
        }
    }

    /// `nohz_balance_exit_idle`: `cpu` runs again with its tick; it leaves
    /// the NOHZ idle mask and, if its tick had stopped (`was_stopped`),
    /// counts as busy in its LLC again (`set_cpu_sd_state_busy`). Called
    /// from the engine's `exit_idle`.
    // DEVIATION(kernel): the kernel calls it from the first busy tick
    // (`nohz_balancer_kick`); schedlab restarts the tick on idle exit and
    // calls it there.
    pub(crate) fn nohz_balance_exit_idle(&mut self, cpu: CpuId, was_stopped: bool) {
        self.fair.nohz.clear_idle(cpu);
        if was_stopped {
            let llc = self.llc_of(cpu);
            self.fair.llc[llc].nr_busy_cpus += 1;
        }
    }

    /// `cfs_rq_has_blocked` of `cpu`: its averages have not decayed to 0.
    fn rq_has_blocked(&self, cpu: CpuId) -> bool {
        let a = &self.rqs[cpu.idx()].cfs_avg;
        a.load_avg != 0 || a.util_avg != 0
    }

    /// `nohz.has_blocked`: some tick-stopped idle CPU still has blocked load.
    // DEVIATION(kernel): the kernel keeps `rq->has_blocked_load` and
    // `nohz.has_blocked` flags, set on idle entry and cleared once decayed;
    // schedlab derives them from the averages, which is the same predicate.
    pub fn nohz_has_blocked(&self) -> bool {
        self.fair.nohz.idle_cpus_mask.iter().any(|c| self.rq_has_blocked(c))
    }

    /// `update_nohz_stats(rq)`: decay an idle CPU's blocked load, at most
    /// once a jiffy. Returns whether it still has blocked load. With the
    /// `nohz_blocked_load_update` feature off (older kernels, seed idea 5)
    /// idle CPUs' blocked load is never refreshed and stays stale.
    fn update_nohz_stats(&mut self, cpu: CpuId) -> bool {
        if !self.rq_has_blocked(cpu) || !self.fair.nohz.idle_cpus_mask.test(cpu) {
            return false;
        }
        if !sched_feat!(self.features, nohz_blocked_load_update) {
            return true;
        }
        if self.now < self.fair.nohz.last_blocked_update[cpu.idx()] + self.tick_ns {
            return true;
        }
        self.update_blocked_averages(cpu);
        self.rq_has_blocked(cpu)
    }

    /// `nohz_balancer_kick(rq)` from every tick of a busy CPU: decide whether
    /// the tick-stopped idle CPUs need a balance (this CPU has two tasks, a
    /// reduced capacity, a misfit task, or its LLC has more than one busy
    /// CPU) or a blocked-load refresh, rate-limited by `nohz.next_balance`
    /// and `nohz.next_blocked`, and if so kick an idle CPU to do it.
    pub fn nohz_balancer_kick(&mut self, cpu: CpuId) -> crate::Result<()> {
        if self.fair.nohz.no_idle_cpus() {
            return Ok(());
        }
        let now = self.now;
        let mut flags = 0;
        if now > self.fair.nohz.next_blocked && self.nohz_has_blocked() {
            flags = NOHZ_STATS_KICK;
        }
        if now >= self.fair.nohz.next_balance && self.nohz_needs_balance(cpu) {
            flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
        }
        if flags != 0 {
            self.kick_ilb(cpu, flags);
        }
        Ok(())
    }

    /// The balance conditions of `nohz_balancer_kick`.
    // DEVIATION(kernel): SD_ASYM_PACKING is not modelled, so its condition
    // (a preferred idle CPU) is omitted.
    fn nohz_needs_balance(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu.idx()];
        if rq.nr_running >= 2 {
            return true;
        }
        let chain = self.domains.chain(cpu);
        if let Some(&sd) = chain.first() {
            if rq.cfs.h_nr_runnable >= 1 && self.check_cpu_capacity(cpu, self.domains.sd(sd)) {
                return true;
            }
        }
        if self.domains.sd_asym_cpucapacity[cpu.idx()].is_some() {
            // Asymmetric systems only care about misfits, not cache use.
            return self.misfit_task_load(cpu) > 0;
        }
        self.domains.sd_llc[cpu.idx()].is_some() && self.fair.llc[self.llc_of(cpu)].nr_busy_cpus > 1
    }

    /// `kick_ilb(flags)`: pick the idle load balancer (the first
    /// tick-stopped idle CPU other than this one) and have it run.
    // DEVIATION(kernel): the kick is an IPI and the ILB runs in its softirq
    // a few microseconds later; schedlab runs it at once and charges the
    // balance passes to the ILB CPU.
    fn kick_ilb(&mut self, this_cpu: CpuId, flags: u32) {
        if flags & NOHZ_BALANCE_KICK != 0 {
            self.fair.nohz.next_balance = self.now + self.tick_ns;
        }
        let ilb = self.fair.nohz.idle_cpus_mask.iter().find(|&c| c != this_cpu && self.rqs[c.idx()].idle_cpu());
        let Some(ilb) = ilb else { return };
        self.fair.nohz.kicks += 1;
        self.nohz_idle_balance_run(ilb, flags);
    }

    /// `_nohz_idle_balance(this_rq, flags)`: for every tick-stopped idle
    /// CPU, starting after `ilb` and ending with it, refresh blocked load
    /// (STATS) and run its due periodic balance as an idle CPU (BALANCE).
    pub fn nohz_idle_balance_run(&mut self, ilb: CpuId, flags: u32) {
        let now = self.now;
        let mut next_balance = now + 60 * NSEC_PER_SEC;
        let mut update_next = false;
        let mut cost: Ns = 0;
        let nr = self.machine.nr_cpus() as u32;
        let start = CpuId((ilb.0 + 1) % nr);
        let mut cpus = std::mem::take(&mut self.fair.nohz.walk);
        cpus.clear();
        cpus.extend(self.fair.nohz.idle_cpus_mask.iter_wrap(start));
        for &balance_cpu in &cpus {
            if !self.rqs[balance_cpu.idx()].idle_cpu() {
                continue;
            }
            // The ILB got work of its own: leave the rest to the next one.
            if !self.rqs[ilb.idx()].idle_cpu() && self.rqs[ilb.idx()].need_resched {
                self.fair.nohz.walk = cpus;
                self.charge(ilb, cost);
                return;
            }
            if flags & NOHZ_STATS_KICK != 0 {
                self.update_nohz_stats(balance_cpu);
            }
            if now >= self.rqs[balance_cpu.idx()].next_balance && flags & NOHZ_BALANCE_KICK != 0 {
                self.fair.nohz.ilb_cpu = Some(ilb);
                cost += self.sched_balance_domains(balance_cpu, CpuIdleType::Idle, BalanceKind::NohzIdle);
                self.fair.nohz.ilb_cpu = None;
            }
            let nb = self.rqs[balance_cpu.idx()].next_balance;
            if next_balance > nb {
                next_balance = nb;
                update_next = true;
            }
        }
        self.fair.nohz.walk = cpus;
        self.charge(ilb, cost);
        if update_next {
            self.fair.nohz.next_balance = next_balance;
        }
        if flags & NOHZ_STATS_KICK != 0 {
            self.fair.nohz.next_blocked = now + NOHZ_BLOCKED_PERIOD_MS * NSEC_PER_MSEC;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count of set `sgc->imbalance` flags follows every set and clear,
    /// repeated ones included, so `any_sgc_imbalance` is exact.
    #[test]
    fn sgc_imbalance_count_follows_the_flags() {
        let mut n = NohzState::new(8, 3, CpuMask::new());
        assert!(!n.any_sgc_imbalance());
        n.set_sgc_imbalance(1, CpuId(2), true);
        n.set_sgc_imbalance(1, CpuId(2), true);
        n.set_sgc_imbalance(3, CpuId(0), true);
        assert!(n.any_sgc_imbalance() && n.sgc_imbalance(1, CpuId(2)) && n.sgc_imbalance(3, CpuId(0)));
        n.set_sgc_imbalance(1, CpuId(2), false);
        assert!(n.any_sgc_imbalance());
        n.set_sgc_imbalance(3, CpuId(0), false);
        n.set_sgc_imbalance(3, CpuId(0), false);
        n.set_sgc_imbalance(2, CpuId(5), false);
        assert!(!n.any_sgc_imbalance());
        // Out of range (a depth past the chain): ignored, as the lookup.
        n.set_sgc_imbalance(9, CpuId(0), true);
        assert!(!n.any_sgc_imbalance());
    }
}
