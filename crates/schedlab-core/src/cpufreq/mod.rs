//! Frequency scaling: one cpufreq policy per frequency domain, its governor
//! (`performance`, `powersave`, `schedutil`), and what a frequency change
//! does to the CPUs of the domain (their speed, their PELT clock, the end of
//! their running segments, a `cpu_frequency` event per CPU).
//!
//! Read for this: `cpufreq_schedutil.c` excerpts of several kernel trees
//! found by the search tools (`sugov_update_shared`, `sugov_should_update_freq`,
//! `sugov_update_next_freq`, `sugov_deferred_update`; Android/vendor copies
//! among them), the LKML threads on `cpufreq_policy_transition_delay_us`
//! (the 2 ms cap of 2024, then `latency + latency / 2`), and hi3660.dtsi of
//! torvalds/linux for the OPP clock latency. The `cpufreq_update_util` call
//! sites (`cfs_rq_util_change` from `update_load_avg`, util_est added
//! before `enqueue_entity`) follow mainline fair.c as known to the author;
//! no linux-next fair.c was opened for this work.
//!
//! Without a governor (`Machine::cpufreq.governor == None`) every CPU stays
//! at its nominal frequency and nothing here runs: the behaviour of schedlab
//! before DVFS, byte for byte.

pub mod sugov;
#[cfg(test)]
mod tests;

use crate::engine::{Ev, Sim};
use crate::fair::cas::CpufreqUpdate;
use crate::ids::{CpuId, Ns};
use crate::topology::{Governor, Machine};
use crate::trace::Event;

/// One cpufreq policy (`struct cpufreq_policy` + `struct sugov_policy`).
#[derive(Clone, Debug)]
pub struct Policy {
    /// `policy->cur`: the frequency in effect, kHz.
    pub cur_khz: u32,
    /// `cpuinfo.max_freq`, kHz.
    pub max_khz: u32,
    /// `sg_policy->next_freq`: the last frequency requested, kHz.
    pub next_freq: u32,
    /// `sg_policy->last_freq_update_time`, ns.
    pub last_freq_update_time: Ns,
    /// `sg_policy->need_freq_update`: the next decision is not rate limited
    /// and is committed even when equal to `next_freq` (set at start).
    pub need_freq_update: bool,
    /// `sg_policy->work_in_progress`: a slow-path switch is under way.
    pub work_in_progress: bool,
    /// Transitions done.
    pub transitions: u64,
}

/// The frequency state of the machine.
#[derive(Clone, Debug)]
pub struct CpufreqState {
    /// The governor, `None` without a cpufreq model.
    pub governor: Option<Governor>,
    /// Policies, by frequency domain.
    pub policies: Vec<Policy>,
    /// Speed of each CPU alone on its core, work units per ns:
    /// `capacity_orig x cur / max` (the SMT factor is applied on top).
    pub speed: Vec<u64>,
    /// `arch_scale_freq_capacity` of each CPU: `cur x 1024 / max`.
    pub freq_cap: Vec<u32>,
    /// The CPU doing the current enqueue when it is not the runqueue's own
    /// (a remote wakeup), else `None`: `smp_processor_id()` for
    /// `cpufreq_this_cpu_can_update`.
    pub this_cpu: Option<CpuId>,
    /// The `sugov:N` thread of domain 0 (the others follow), when the
    /// slow path is used.
    pub sugov_first: Option<crate::ids::TaskId>,
}

/// `cpufreq_driver_resolve_freq(policy, f)` with `CPUFREQ_RELATION_L`: the
/// lowest OPP at or above `khz`, the highest when none is.
pub fn resolve_freq(opps: &[crate::topology::Opp], khz: u64) -> u32 {
    opps.iter().map(|o| o.freq_khz).find(|&f| f as u64 >= khz).unwrap_or_else(|| opps.last().map_or(0, |o| o.freq_khz))
}

/// The starting frequency of each domain, kHz (see [`CpufreqState::new`]).
pub fn start_khz(machine: &Machine) -> Vec<u32> {
    CpufreqState::new(machine, None).policies.iter().map(|p| p.cur_khz).collect()
}

impl CpufreqState {
    /// Policies at their starting frequency: nominal without a governor,
    /// the highest OPP under `performance` and `schedutil` (assumption: the
    /// boot frequency is the highest; schedutil moves it at its first
    /// decision), the lowest under `powersave`.
    pub fn new(machine: &Machine, sugov_first: Option<crate::ids::TaskId>) -> Self {
        let governor = machine.cpufreq.governor;
        let policies = machine
            .freq_domains
            .iter()
            .map(|fd| {
                let ct = fd.span.first().map(|c| machine.core_type(c));
                let (nominal, min, max) = ct.map_or((1, 1, 1), |ct| {
                    let max = ct.opps.last().map_or(ct.nominal_freq_khz, |o| o.freq_khz);
                    (ct.nominal_freq_khz, ct.opps.first().map_or(max, |o| o.freq_khz), max)
                });
                let cur = match governor {
                    None => nominal,
                    Some(Governor::Powersave) => min,
                    Some(Governor::Performance | Governor::Schedutil) => max,
                };
                Policy {
                    cur_khz: cur,
                    max_khz: max.max(1),
                    next_freq: cur,
                    last_freq_update_time: 0,
                    need_freq_update: true,
                    work_in_progress: false,
                    transitions: 0,
                }
            })
            .collect();
        let n = machine.nr_cpus();
        let mut s =
            CpufreqState { governor, policies, speed: vec![0; n], freq_cap: vec![0; n], this_cpu: None, sugov_first };
        for c in 0..n {
            s.refresh_cpu(machine, CpuId(c as u32));
        }
        s
    }

    /// Recompute `speed` and `freq_cap` of `cpu` from its policy.
    fn refresh_cpu(&mut self, machine: &Machine, cpu: CpuId) {
        let pol = &self.policies[machine.cpus[cpu.idx()].freq_domain as usize];
        let cap = machine.core_type(cpu).capacity as u64;
        self.speed[cpu.idx()] = cap * pol.cur_khz as u64 / pol.max_khz as u64;
        self.freq_cap[cpu.idx()] = (pol.cur_khz as u64 * 1024 / pol.max_khz as u64).min(1024) as u32;
    }

    /// Whether schedutil drives the frequencies.
    #[inline]
    pub fn schedutil(&self) -> bool {
        self.governor == Some(Governor::Schedutil)
    }
}

impl Sim {
    /// `cpufreq_update_util(rq, flags)`: the scheduler updated `cpu`'s
    /// utilisation; under schedutil, the policy of `cpu` may pick a new
    /// frequency (`sugov_update_shared`). Cheap when schedutil is off.
    #[inline]
    pub fn cpufreq_update_util(&mut self, cpu: CpuId) {
        if self.cpufreq.schedutil() {
            self.sugov_update_shared(cpu);
        }
    }

    fn sugov_update_shared(&mut self, cpu: CpuId) {
        // cpufreq_this_cpu_can_update: a remote enqueue updates the policy
        // only from a CPU of the same policy, and before v4.14 not at all
        // (`remote_cpufreq_update` off): the target's next own update does.
        if let Some(this) = self.cpufreq.this_cpu {
            if this != cpu && matches!(self.remote_cpufreq_update(this, cpu), CpufreqUpdate::Deferred { .. }) {
                return;
            }
        }
        let fd = self.machine.cpus[cpu.idx()].freq_domain;
        let now = self.now;
        let rate_limit = self.machine.cpufreq.rate_limit_ns;
        // sugov_should_update_freq.
        let pol = &self.cpufreq.policies[fd as usize];
        if !pol.need_freq_update && now.saturating_sub(pol.last_freq_update_time) < rate_limit {
            return;
        }
        let next = self.sugov_next_freq_khz(fd);
        // sugov_update_next_freq.
        let pol = &mut self.cpufreq.policies[fd as usize];
        if !pol.need_freq_update && next == pol.next_freq {
            return;
        }
        pol.need_freq_update = false;
        pol.next_freq = next;
        pol.last_freq_update_time = now;
        if self.machine.cpufreq.fast_switch {
            // cpufreq_driver_fast_switch: in effect at once.
            self.cpufreq_set_freq(fd, next);
        } else if !pol.work_in_progress {
            // sugov_deferred_update: an irq_work wakes `sugov:N`, which
            // applies the newest request when its switch is over (sugov.rs).
            pol.work_in_progress = true;
            self.at(now, Ev::SugovIrqWork { domain: fd, cpu });
        }
    }

    /// The slow-path switch of policy `fd` completes (`sugov_work`): the
    /// newest request takes effect.
    pub(crate) fn sugov_work(&mut self, fd: u32) {
        let pol = &mut self.cpufreq.policies[fd as usize];
        pol.work_in_progress = false;
        let f = pol.next_freq;
        self.cpufreq_set_freq(fd, f);
    }

    /// Put policy `fd` at `khz`: the CPUs' PELT clocks and running segments
    /// are brought to now at the old speed, then go on at the new one.
    pub fn cpufreq_set_freq(&mut self, fd: u32, khz: u32) {
        if self.cpufreq.policies[fd as usize].cur_khz == khz {
            return;
        }
        let span = self.machine.freq_domains[fd as usize].span;
        for c in span.iter() {
            self.update_rq_clock(c);
            self.sync_segment(c);
        }
        let pol = &mut self.cpufreq.policies[fd as usize];
        pol.cur_khz = khz;
        pol.transitions += 1;
        for c in span.iter() {
            self.cpufreq.refresh_cpu(&self.machine, c);
        }
        for c in span.iter() {
            if self.rqs[c.idx()].seg_active {
                self.restart_segment(c);
            }
            self.emit(Event::CpuFrequency { cpu: c, khz });
        }
    }
}
