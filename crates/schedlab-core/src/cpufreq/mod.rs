//! Frequency scaling: one cpufreq policy per frequency domain, its governor
//! (`performance`, `powersave`, `schedutil`, `ondemand`, and intel_pstate's
//! active mode `intel_pstate`), turbo, and what a frequency change
//! does to the CPUs of the domain (their speed, their PELT clock, the end of
//! their running segments, a `cpu_frequency` event per CPU).
//!
//! Read for this: `cpufreq_schedutil.c` excerpts of several kernel trees
//! found by the search tools (`sugov_update_shared`, `sugov_should_update_freq`,
//! `sugov_update_next_freq`, `sugov_deferred_update`; Android/vendor copies
//! among them), the LKML threads on `cpufreq_policy_transition_delay_us`
//! (the 2 ms cap of 2024, then `latency + latency / 2`), and hi3660.dtsi of
//! torvalds/linux for the OPP clock latency. The `cpufreq_update_util` call
//! sites of the fair class follow kernel/sched/fair.c as read in
//! ColinIanKing/linux-next (6.19-rc5) and a v6.12.67 tree (the same there):
//! `cfs_rq_util_change` from `update_load_avg` only when the runqueue's
//! averages decayed or a task is attached, `enqueue_task_fair`'s explicit
//! IOWAIT call, and the blocked-averages update when something decayed
//! (README.md, "Hook call sites").
//!
//! Without a governor (`Machine::cpufreq.governor == None`) every CPU stays
//! at its nominal frequency and nothing here runs: the behaviour of schedlab
//! before DVFS, byte for byte.

pub mod counters;
pub mod freq_map;
pub mod intel_pstate;
pub mod iowait;
pub mod ondemand;
pub mod sugov;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hook;
#[cfg(test)]
mod tests_iowait;
#[cfg(test)]
mod tests_pstate;
pub mod turbo;

use crate::engine::{Ev, Sim};
use crate::id_table::IdTable;
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
    /// The governor's request, kHz: `cur_khz` is it capped by the
    /// package's turbo ceiling (equal without turbo).
    pub req_khz: u32,
    /// `cpuinfo.min_freq`, kHz: the lowest OPP.
    pub min_khz: u32,
    /// `cpuinfo.max_freq` of the governors that see turbo (`ondemand`,
    /// `intel_pstate`), kHz: the one-core turbo ceiling, else `max_khz`.
    pub cpuinfo_max_khz: u32,
    /// A request waiting for the driver's transition latency to pass
    /// (`ondemand`, `intel_pstate`), kHz.
    pub pending_khz: Option<u32>,
    /// `policy->cpus` as a list, ascending: what a hook walks (the span's
    /// 1024-bit mask costs a scan of all its words per walk).
    pub cpus: Vec<CpuId>,
    /// What `get_next_freq` reads of the policy, fixed at build.
    pub freq_map: freq_map::FreqMap,
    /// Some CPU of the policy may hold an iowait boost (schedutil): set
    /// when a hook leaves one, cleared by a decision that finds none. While
    /// it is false every `iowait_boost` and `boost_util` of the policy is 0
    /// and the decision's `sugov_iowait_apply` walk, which would return 0
    /// for each CPU and change nothing, is skipped.
    pub iowait_boosted: bool,
}

/// The frequency state of the machine.
#[derive(Clone, Debug)]
pub struct CpufreqState {
    /// The governor, `None` without a cpufreq model.
    pub governor: Option<Governor>,
    /// Policies, by frequency domain.
    pub policies: Vec<Policy>,
    /// Speed of each CPU alone on its core, work units per ns:
    /// `capacity_orig x cur / max` (the SMT factor is applied on top). One
    /// entry per CPU of the machine, read at every segment change
    /// (`Sim::cpu_speed`) without a bounds test (`IdTable`).
    pub speed: IdTable<u64>,
    /// `arch_scale_freq_capacity` of each CPU: `cur x 1024 / max` (an
    /// `IdTable` likewise, read at every clock update).
    pub freq_cap: IdTable<u32>,
    /// The CPU doing the current enqueue when it is not the runqueue's own
    /// (a remote wakeup), else `None`: `smp_processor_id()` for
    /// `cpufreq_this_cpu_can_update`.
    pub this_cpu: Option<CpuId>,
    /// The `sugov:N` thread of domain 0 (the others follow), when the
    /// slow path is used.
    pub sugov_first: Option<crate::ids::TaskId>,
    /// The ondemand kworker of CPU 0 (the others follow), under `ondemand`.
    pub dbs_first: Option<crate::ids::TaskId>,
    /// Each CPU's own request under the per-CPU governors (`ondemand`,
    /// `intel_pstate`), kHz: the domain runs at the highest of its CPUs'
    /// (empty under the others).
    pub cpu_req_khz: Vec<u32>,
    /// APERF/MPERF-like counters per CPU (empty unless a governor reads them).
    pub counters: Vec<counters::PerfCounters>,
    /// intel_pstate's per-CPU sampling state (empty unless `intel_pstate`).
    pub pstate: Vec<intel_pstate::PstateCpu>,
    /// ondemand's per-CPU sampling state (empty unless `ondemand`).
    pub dbs: Vec<ondemand::DbsCpu>,
    /// Active-core accounting for turbo (`None` without a turbo table or a governor).
    pub turbo: Option<turbo::TurboState>,
    /// schedutil's per-CPU iowait boost state (empty unless `schedutil`).
    pub sugov_cpus: Vec<iowait::SugovCpu>,
}

/// `cpufreq_driver_resolve_freq(policy, f)` with `CPUFREQ_RELATION_L`: the
/// lowest OPP at or above `khz`, the highest when none is (0 without OPPs).
/// A binary search over the table, which the machine parser keeps strictly
/// increasing (`freq_map::opp_at_or_above`).
pub fn resolve_freq(opps: &[crate::topology::Opp], khz: u64) -> u32 {
    freq_map::opp_at_or_above(opps, khz).unwrap_or_else(|| opps.last().map_or(0, |o| o.freq_khz))
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
                let turbo_max = if governor.is_some() { machine.cpufreq.turbo_cap_khz(1) } else { u32::MAX };
                let cpuinfo_max = if turbo_max == u32::MAX { max } else { turbo_max };
                // intel_pstate and intel_cpufreq start at the lowest P-state
                // (`intel_pstate_get_cpu_pstates` -> `intel_pstate_set_min_pstate`).
                let req = match governor {
                    None => nominal,
                    Some(Governor::Powersave | Governor::Ondemand | Governor::IntelPstate) => min,
                    Some(Governor::Performance) => cpuinfo_max,
                    Some(Governor::Schedutil) => max,
                };
                let cur = req.min(turbo_max);
                let freq_map = ct.map_or(freq_map::FreqMap::default(), |ct| {
                    freq_map::FreqMap::new(ct, cpuinfo_max, machine.cpufreq.pstate_scaling_khz)
                });
                Policy {
                    cur_khz: cur,
                    max_khz: max.max(1),
                    next_freq: cur,
                    last_freq_update_time: 0,
                    need_freq_update: true,
                    work_in_progress: false,
                    transitions: 0,
                    req_khz: req,
                    min_khz: min,
                    cpuinfo_max_khz: cpuinfo_max,
                    pending_khz: None,
                    cpus: fd.span.iter().collect(),
                    freq_map,
                    iowait_boosted: false,
                }
            })
            .collect();
        let n = machine.nr_cpus();
        let per_cpu = matches!(governor, Some(Governor::Ondemand | Governor::IntelPstate));
        let mut s = CpufreqState {
            governor,
            policies,
            speed: IdTable::new(vec![0; n]),
            freq_cap: IdTable::new(vec![0; n]),
            this_cpu: None,
            sugov_first,
            dbs_first: None,
            cpu_req_khz: Vec::new(),
            counters: if per_cpu { vec![counters::PerfCounters::default(); n] } else { Vec::new() },
            pstate: if governor == Some(Governor::IntelPstate) {
                vec![intel_pstate::PstateCpu::default(); n]
            } else {
                Vec::new()
            },
            dbs: if governor == Some(Governor::Ondemand) {
                vec![ondemand::DbsCpu::new(ondemand::sampling_rate_ns(machine)); n]
            } else {
                Vec::new()
            },
            turbo: turbo::TurboState::new(machine),
            sugov_cpus: if governor == Some(Governor::Schedutil) {
                vec![iowait::SugovCpu::default(); n]
            } else {
                Vec::new()
            },
        };
        if per_cpu {
            s.cpu_req_khz = (0..n).map(|c| s.policies[machine.cpus[c].freq_domain as usize].req_khz).collect();
        }
        for c in 0..n {
            s.refresh_cpu(machine, CpuId(c as u32));
        }
        s
    }

    /// Note the ondemand kworker of CPU 0 (`ondemand::with_dbs_kworkers`).
    pub fn with_dbs_first(mut self, dbs_first: Option<crate::ids::TaskId>) -> Self {
        self.dbs_first = dbs_first;
        self
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
    /// frequency (`sugov_update_shared`); under ondemand it may queue its
    /// sample (`dbs_update_util_handler`); under intel_pstate it may sample
    /// (`intel_pstate_update_util`). Cheap without these governors.
    #[inline]
    pub fn cpufreq_update_util(&mut self, cpu: CpuId) {
        self.cpufreq_update_util_flags(cpu, 0);
    }

    /// `cpufreq_update_util(rq, flags)` with `flags` (`iowait::SCHED_CPUFREQ_IOWAIT`).
    /// DEVIATION(kernel): intel_pstate's own iowait boost is not modelled;
    /// only schedutil reads the flag.
    #[inline]
    pub fn cpufreq_update_util_flags(&mut self, cpu: CpuId, flags: u32) {
        match self.cpufreq.governor {
            Some(Governor::Schedutil) => self.sugov_update_shared(cpu, flags),
            Some(Governor::Ondemand) => self.dbs_update_util_handler(cpu),
            Some(Governor::IntelPstate) => self.intel_pstate_update_util(cpu),
            _ => {}
        }
    }

    fn sugov_update_shared(&mut self, cpu: CpuId, flags: u32) {
        let (now, tick) = (self.now, self.tick_ns);
        // sugov_iowait_boost and last_update come before every check.
        let fd = self.machine.cpus[cpu.idx()].freq_domain;
        let sg = &mut self.cpufreq.sugov_cpus[cpu.idx()];
        iowait::sugov_iowait_boost(sg, now, flags, tick);
        sg.last_update = now;
        if sg.iowait_boost != 0 {
            self.cpufreq.policies[fd as usize].iowait_boosted = true;
        }
        // cpufreq_this_cpu_can_update: a remote enqueue updates the policy
        // only from a CPU of the same policy, and before v4.14 not at all
        // (`remote_cpufreq_update` off): the target's next own update does.
        if let Some(this) = self.cpufreq.this_cpu {
            if !self.cpufreq_this_cpu_can_update(this, cpu) {
                return;
            }
        }
        let rate_limit = self.machine.cpufreq.rate_limit_ns;
        // sugov_should_update_freq.
        let pol = &self.cpufreq.policies[fd as usize];
        if !pol.need_freq_update && now.saturating_sub(pol.last_freq_update_time) < rate_limit {
            return;
        }
        // sugov_next_freq_shared: each CPU's boost (sugov_iowait_apply), read
        // by sugov_next_freq_khz as the floor of its utilisation (skipped
        // while no CPU of the policy holds one: `Policy::iowait_boosted`).
        if self.cpufreq.policies[fd as usize].iowait_boosted {
            self.sugov_iowait_apply_policy(fd, cpu);
        }
        #[cfg(test)]
        {
            let pol = &self.cpufreq.policies[fd as usize];
            let clear = |c: &CpuId| {
                self.cpufreq.sugov_cpus[c.idx()]
                    == iowait::SugovCpu {
                        last_update: self.cpufreq.sugov_cpus[c.idx()].last_update,
                        ..Default::default()
                    }
            };
            assert!(pol.iowait_boosted || pol.cpus.iter().all(clear), "policy {fd}: a boost left unapplied");
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

    /// `sugov_iowait_apply` for every CPU of policy `fd` (a decision of
    /// `cpu`'s hook), in the units of `cpu`'s capacity; notes whether any
    /// boost is left.
    fn sugov_iowait_apply_policy(&mut self, fd: u32, cpu: CpuId) {
        let (now, tick) = (self.now, self.tick_ns);
        let max_cap = self.machine.core_type(cpu).capacity as u64;
        let mut boosted = false;
        for &j in &self.cpufreq.policies[fd as usize].cpus {
            let sg = &mut self.cpufreq.sugov_cpus[j.idx()];
            sg.boost_util = iowait::sugov_iowait_apply(sg, now, max_cap, tick);
            boosted |= sg.iowait_boost != 0;
        }
        self.cpufreq.policies[fd as usize].iowait_boosted = boosted;
    }

    /// `cpu`'s own policy (intel_pstate, ondemand) asks for `khz`: its
    /// domain asks for the highest request of its CPUs (the core resolves
    /// its threads' PERF_CTL requests to the highest), after the driver's
    /// transition latency.
    pub(crate) fn cpufreq_cpu_request(&mut self, cpu: CpuId, khz: u32) {
        self.cpufreq.cpu_req_khz[cpu.idx()] = khz;
        let fd = self.machine.cpus[cpu.idx()].freq_domain;
        let want = self.machine.freq_domains[fd as usize]
            .span
            .iter()
            .map(|c| self.cpufreq.cpu_req_khz[c.idx()])
            .max()
            .unwrap_or(khz);
        let lat = self.machine.cpufreq.transition_latency_ns;
        if lat == 0 {
            self.cpufreq_set_freq(fd, want);
            return;
        }
        let now = self.now;
        let pol = &mut self.cpufreq.policies[fd as usize];
        if pol.pending_khz.is_none() {
            if want == pol.req_khz {
                return;
            }
            self.at(now + lat, Ev::CpufreqTransition { domain: fd });
        }
        self.cpufreq.policies[fd as usize].pending_khz = Some(want);
    }

    /// The transition latency of policy `fd`'s request has passed.
    pub(crate) fn cpufreq_transition_done(&mut self, fd: u32) {
        if let Some(khz) = self.cpufreq.policies[fd as usize].pending_khz.take() {
            self.cpufreq_set_freq(fd, khz);
        }
    }

    /// `khz` made a frequency `cpu` can run at, the closest one
    /// (`CPUFREQ_RELATION_C`): an OPP, or in the turbo range above the
    /// highest OPP a multiple of the P-state unit (`DIV_ROUND_CLOSEST`),
    /// at most `cpuinfo.max_freq`.
    pub(crate) fn resolve_closest(&self, cpu: CpuId, khz: u32) -> u32 {
        let pol = &self.cpufreq.policies[self.machine.cpus[cpu.idx()].freq_domain as usize];
        let opps = &self.machine.core_type(cpu).opps;
        let top = opps.last().map_or(pol.max_khz, |o| o.freq_khz);
        if khz > top {
            let unit = self.machine.cpufreq.pstate_scaling_khz.max(1);
            return (khz.saturating_add(unit / 2) / unit * unit).clamp(top, pol.cpuinfo_max_khz.max(top));
        }
        opps.iter().map(|o| o.freq_khz).min_by_key(|&f| (f.abs_diff(khz), u32::MAX - f)).unwrap_or(khz)
    }

    /// The slow-path switch of policy `fd` completes (`sugov_work`): the
    /// newest request takes effect.
    pub(crate) fn sugov_work(&mut self, fd: u32) {
        let pol = &mut self.cpufreq.policies[fd as usize];
        pol.work_in_progress = false;
        let f = pol.next_freq;
        self.cpufreq_set_freq(fd, f);
    }

    /// Policy `fd` requests `khz`: it runs at it, or at its package's turbo
    /// ceiling when that is lower (`cpufreq::turbo`).
    pub fn cpufreq_set_freq(&mut self, fd: u32, khz: u32) {
        self.cpufreq.policies[fd as usize].req_khz = khz;
        let granted = match &self.cpufreq.turbo {
            Some(t) => khz.min(t.cap_of_domain(&self.machine, fd)),
            None => khz,
        };
        self.cpufreq_apply_freq(fd, granted);
    }

    /// Put policy `fd` at `khz`: the CPUs' PELT clocks and running segments
    /// are brought to now at the old speed, then go on at the new one.
    pub(crate) fn cpufreq_apply_freq(&mut self, fd: u32, khz: u32) {
        if self.cpufreq.policies[fd as usize].cur_khz == khz {
            return;
        }
        let span = self.machine.freq_domains[fd as usize].span;
        for c in span.iter() {
            self.update_rq_clock(c);
            self.sync_segment(c);
            if !self.cpufreq.counters.is_empty() {
                self.counters_fold(c);
            }
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
