//! Periodic load balancing (kernel/sched/fair.c): `sched_balance_trigger`
//! from the tick, `sched_balance_domains` over a CPU's domains with their
//! intervals (`get_sd_balance_interval`), and
//! `sched_balance_update_blocked_averages`.

use super::balance::CpuIdleType;
use super::newidle::decay_max_lb_cost;
use crate::engine::rq::SYSCTL_SCHED_MIGRATION_COST_NS;
use crate::engine::Sim;
use crate::ids::{CpuId, Ns};
use crate::trace::{BalanceKind, Event};

impl Sim {
    /// `get_sd_balance_interval(sd, cpu_busy)` in ns: the domain's current
    /// interval (times `busy_factor` when busy, minus a jiffy so levels do
    /// not align), in whole jiffies, clamped to [1 jiffy,
    /// `max_load_balance_interval` = HZ * nr_cpus / 10 jiffies]. Read from
    /// the per-domain state, where `set_balance_interval_ms` keeps it.
    #[inline]
    pub fn get_sd_balance_interval(&self, cpu: CpuId, level: usize, busy: bool) -> Ns {
        let rt = &self.rqs[cpu.idx()].sd[level];
        debug_assert_eq!(
            rt.interval_ns[busy as usize],
            self.sd_balance_interval_ns(cpu, level, rt.balance_interval_ms, busy)
        );
        rt.interval_ns[busy as usize]
    }

    /// `get_sd_balance_interval`'s computation for an interval of `ms`.
    fn sd_balance_interval_ns(&self, cpu: CpuId, level: usize, ms: u32, busy: bool) -> Ns {
        let sd = self.sd_at(cpu, level).1;
        let mut ms = ms as u64;
        if busy {
            ms *= sd.busy_factor as u64;
        }
        let hz = self.machine.hz.max(1) as u64;
        let mut j = (ms * hz).div_ceil(1000);
        if busy {
            j = j.saturating_sub(1);
        }
        j.clamp(1, self.fair.max_load_balance_interval) * self.tick_ns
    }

    /// Set `cpu`'s `balance_interval` at `level` to `ms`, and the intervals
    /// `get_sd_balance_interval` reads with it. Not in the group sums: not
    /// noted changed.
    /// Most calls (a pass that tried resets the interval to its minimum)
    /// find it unchanged and return; `interval_ns` is 0 only before the
    /// first call (an interval is at least one tick).
    pub fn set_balance_interval_ms(&mut self, cpu: CpuId, level: usize, ms: u32) {
        let rt = &self.rqs[cpu.idx()].sd[level];
        if rt.balance_interval_ms == ms && rt.interval_ns[0] != 0 {
            return;
        }
        let ns =
            [self.sd_balance_interval_ns(cpu, level, ms, false), self.sd_balance_interval_ns(cpu, level, ms, true)];
        let rt = self.rqs.sd_mut(cpu.idx(), level);
        rt.balance_interval_ms = ms;
        rt.interval_ns = ns;
    }

    /// `sched_balance_domains(rq, idle)`: balance every domain of `cpu`
    /// whose interval has expired, bottom-up; decay `max_newidle_lb_cost`;
    /// set `rq.next_balance`. `kind` labels the trace event. Returns the cost
    /// of the passes run, for the caller to charge to the CPU doing the work.
    pub fn sched_balance_domains(&mut self, cpu: CpuId, mut idle: CpuIdleType, kind: BalanceKind) -> Ns {
        let mut cont = true;
        // A CPU running only SCHED_IDLE tasks balances at the idle interval.
        let mut busy = idle != CpuIdleType::Idle && !self.sched_idle_cpu(cpu);
        let mut next_balance = self.now + 60 * crate::ids::NSEC_PER_SEC;
        let mut update_next = false;
        let mut need_decay = false;
        let mut max_cost = 0;
        let mut cost: Ns = 0;
        let levels = self.sd_chain(cpu).len();
        self.fold_timed_newidle(cpu);
        let now = self.now;
        for level in 0..levels {
            // `get_sd_balance_interval`'s check, before the level is borrowed.
            let _ = self.get_sd_balance_interval(cpu, level, busy);
            // The level's state read once: `update_newidle_cost(sd, 0, 0)`
            // (a zero cost counts no call and raises no maximum: only the
            // decay), its maximum, its interval and when it is due.
            let rt = self.rqs.sd_mut(cpu.idx(), level);
            need_decay = decay_max_lb_cost(rt, now);
            max_cost += rt.max_newidle_lb_cost;
            if !cont {
                if need_decay {
                    continue;
                }
                break;
            }
            let mut interval = rt.interval_ns[busy as usize];
            let mut last_balance = rt.last_balance;
            // SD_SERIALIZE needs no lock: the simulator runs one pass at a time.
            if now >= last_balance + interval {
                // EAS: a domain that is not overutilized is not balanced.
                let moved = if self.eas_balance_skip(cpu, level) {
                    0
                } else {
                    self.sched_balance_rq(cpu, level, idle, &mut cont)
                };
                let span = self.sd_at(cpu, level).1.span_weight;
                cost += self.balance_cost_ns(span);
                if moved > 0 {
                    let depth = level as u8;
                    self.emit(Event::Balance { cpu, depth, kind, pulled: moved });
                    idle = if self.rqs[cpu.idx()].idle_cpu() { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
                    busy = idle != CpuIdleType::Idle && !self.sched_idle_cpu(cpu);
                }
                self.rqs.sd_mut(cpu.idx(), level).last_balance = now;
                last_balance = now;
                interval = self.get_sd_balance_interval(cpu, level, busy);
            }
            let due = last_balance + interval;
            if next_balance > due {
                next_balance = due;
                update_next = true;
            }
        }
        // Neither is in the balance statistics' group sums: not noted changed.
        if need_decay {
            self.rqs.untracked_mut(cpu.idx()).max_idle_balance_cost = SYSCTL_SCHED_MIGRATION_COST_NS.max(max_cost);
        }
        if update_next {
            self.rqs.untracked_mut(cpu.idx()).next_balance = next_balance;
        }
        cost
    }

    /// `sched_balance_update_blocked_averages(cpu)`: decay the blocked load
    /// and utilisation of `cpu`'s runqueues to now: `__update_blocked_others`
    /// (RT, IRQ), then `__update_blocked_fair` (`update_cfs_rq_load_avg` of
    /// the root runqueue, no hook of its own); one `cpufreq_update_util(rq,
    /// 0)` if any of them decayed.
    pub fn update_blocked_averages(&mut self, cpu: CpuId) {
        let mut decayed = self.update_other_load_avgs(cpu);
        decayed |= self.update_cfs_rq_load_avg(cpu);
        if decayed {
            self.cpufreq_update_util(cpu);
        }
        self.fair.nohz.last_blocked_update[cpu.idx()] = self.now;
    }

    /// `sched_balance_trigger(rq)` from the tick of a busy CPU: run the
    /// periodic balance (the SCHED_SOFTIRQ's `sched_balance_domains`) when
    /// `rq.next_balance` has come.
    #[inline(always)]
    pub fn sched_balance_trigger(&mut self, cpu: CpuId) -> crate::Result<()> {
        // The due test first: it usually returns (both are plain reads).
        if self.now < self.rqs[cpu.idx()].next_balance || self.sd_chain(cpu).is_empty() {
            return Ok(());
        }
        self.update_blocked_averages(cpu);
        let idle = if self.rqs[cpu.idx()].idle_cpu() { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
        let cost = self.sched_balance_domains(cpu, idle, BalanceKind::Periodic);
        self.charge(cpu, cost);
        Ok(())
    }
}
