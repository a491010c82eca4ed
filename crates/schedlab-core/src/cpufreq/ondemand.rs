//! The `ondemand` governor as v5.9-era kernels run it (drivers/cpufreq/
//! cpufreq_governor.c, cpufreq_ondemand.c; read in linux 5.10.13 and in
//! Android/vendor copies of the same functions), on per-CPU policies as
//! intel_cpufreq (intel_pstate in passive mode) makes them.
//!
//! Why it is here: seed idea 1's "passive" row. The merged commit of that
//! idea (d8fcb81f1acf, "sched/fair: Check for idle core in wake_affine")
//! labels the row `v5.9/ondemand` and says the kworkers "every 0.004
//! seconds on all cores" come from "the ondemand power manager"; its v1
//! said "passive (intel_cpufreq)", and the thread explains that from v5.8
//! the kernel picked intel_cpufreq on that machine (no HWP). Under
//! schedutil, intel_cpufreq switches from the scheduler's context
//! (`fast_switch_possible`), so no kernel thread runs per switch; under
//! ondemand, each sample is a work item run by the CPU's kworker.
//!
//! The path:
//! - `dbs_update_util_handler` (the scheduler's hook, local CPU only for a
//!   per-CPU policy): unless a sample is under way or `sample_delay_ns`
//!   has not passed since the last one, note the time and queue an
//!   irq_work, which queues the work on this CPU (`dbs_irq_work` ->
//!   `schedule_work_on(smp_processor_id())`): the CPU's kworker wakes;
//! - the kworker runs `dbs_work_handler` -> `od_dbs_update` -> `od_update`:
//!   `dbs_update` gives the load, the busy share of the wall time since the
//!   last sample (idle time from `get_cpu_idle_time_us`; iowait counts as
//!   busy, `io_is_busy` being on for Intel); above `up_threshold` (80) the
//!   policy goes to its maximum, else to
//!   `min + load x (max - min) / 100` (`CPUFREQ_RELATION_C`);
//! - the next sample is allowed `sampling_rate x rate_mult` later.
//!
//! `sampling_rate` = max(`CPUFREQ_DBS_MIN_SAMPLING_INTERVAL` = 2 ticks,
//! the policy's `transition_delay_us`): 8 ms at HZ=250, 2 ms at HZ=1000.
//! Neither is the 4 ms the seed reports; 4 ms would be HZ=500, or a CPU
//! whose hook is called only at ticks with HZ=250 and half of them missed.
//! schedlab computes it from the machine's `hz` and says so.
//!
//! DEVIATION(kernel): on a machine whose frequency domain spans several
//! CPUs with a generic driver, the kernel's ondemand samples the policy as
//! a whole (the highest load of its CPUs) from whichever CPU's hook comes
//! first; here every CPU samples itself and requests for itself, and the
//! domain runs at the highest request, as with intel_cpufreq's per-CPU
//! policies.

use crate::engine::Sim;
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_USEC};
use crate::topology::{Governor, Machine};
use crate::workload::{Action, Program, Script, Workload};

/// `DEF_FREQUENCY_UP_THRESHOLD`: load (percent) above which ondemand goes
/// to the policy's maximum.
pub const DEF_FREQUENCY_UP_THRESHOLD: u64 = 80;
/// `DEF_SAMPLING_DOWN_FACTOR`: `rate_mult` while at the maximum.
pub const DEF_SAMPLING_DOWN_FACTOR: u64 = 1;

/// Default CPU time of one ondemand sample in its kworker, ns: an
/// assumption of the order of `od_dbs_update` (read two per-CPU time
/// counters, one division) plus a PERF_CTL write and the work item's
/// dispatch, as the `kworkers` noise family assumes for a short work item
/// (5 us).
pub const DEFAULT_DBS_WORK_NS: Ns = 5 * NSEC_PER_USEC;

/// Cache footprint of the kworker, KiB: the same as the `kworkers` noise
/// family's (a work item, its data and the kthread's stack).
const DBS_KWORKER_FOOTPRINT_KIB: u32 = 8;

/// `dbs_data->sampling_rate` for `machine`, ns: max(2 ticks, the policy's
/// transition delay, which is `rate_limit_us` here).
pub fn sampling_rate_ns(machine: &Machine) -> Ns {
    let tick_ns = crate::ids::NSEC_PER_SEC / machine.hz.max(1) as u64;
    (2 * tick_ns).max(machine.cpufreq.rate_limit_ns)
}

/// One CPU's ondemand state (`struct policy_dbs_info` + `cpu_dbs_info`).
#[derive(Clone, Copy, Debug)]
pub struct DbsCpu {
    /// `last_sample_time`, ns.
    pub last_sample_time: Ns,
    /// `sample_delay_ns`.
    pub sample_delay_ns: Ns,
    /// `sampling_rate`, ns.
    pub sampling_rate_ns: Ns,
    /// `work_in_progress`: the kworker has a sample to take.
    pub work_in_progress: bool,
    /// `prev_cpu_wall`, us.
    pub prev_wall_us: u64,
    /// `prev_cpu_idle`, us.
    pub prev_idle_us: u64,
    /// `prev_load`, percent.
    pub prev_load: u64,
    /// `rate_mult`.
    pub rate_mult: u64,
    /// Samples taken.
    pub samples: u64,
}

impl DbsCpu {
    /// State at governor start (`cpufreq_dbs_governor_start`).
    pub fn new(sampling_rate_ns: Ns) -> Self {
        DbsCpu {
            last_sample_time: 0,
            sample_delay_ns: sampling_rate_ns,
            sampling_rate_ns,
            work_in_progress: false,
            prev_wall_us: 0,
            prev_idle_us: 0,
            prev_load: 0,
            rate_mult: 1,
            samples: 0,
        }
    }
}

/// `dbs_update`'s load of one CPU, percent, from the wall and idle time
/// since the last sample (us), updating `prev_load`.
pub fn dbs_load(d: &mut DbsCpu, time_elapsed_us: u64, idle_time_us: u64) -> u64 {
    let sampling_rate_us = d.sampling_rate_ns / NSEC_PER_USEC;
    if time_elapsed_us == 0 {
        // Called twice in a row: the previous load stands.
        d.prev_load
    } else if idle_time_us > 2 * sampling_rate_us && d.prev_load != 0 {
        // The CPU was idle for long and a task just woke on it: reuse the
        // load of the last window once, so the task starts fast.
        std::mem::take(&mut d.prev_load)
    } else {
        let load = 100 * time_elapsed_us.saturating_sub(idle_time_us) / time_elapsed_us;
        d.prev_load = load;
        load
    }
}

/// `od_update`'s choice for a CPU whose policy runs at `cur_khz`:
/// (request in kHz or `None` to keep it, new `rate_mult`).
pub fn od_next_freq(load: u64, cur_khz: u32, min_khz: u32, max_khz: u32) -> (Option<u32>, u64) {
    if load > DEF_FREQUENCY_UP_THRESHOLD {
        // dbs_freq_increase: nothing when already at the maximum.
        let mult = if cur_khz < max_khz { DEF_SAMPLING_DOWN_FACTOR } else { 1 };
        ((cur_khz != max_khz).then_some(max_khz), mult)
    } else {
        let next = min_khz as u64 + load * (max_khz.saturating_sub(min_khz)) as u64 / 100;
        (Some(next as u32), 1)
    }
}

/// `workload` with one kworker per CPU that runs ondemand's samples, when
/// the machine's governor is `ondemand`, and the id of CPU 0's.
pub fn with_dbs_kworkers(workload: Workload, machine: &Machine) -> (Workload, Option<TaskId>) {
    if machine.cpufreq.governor != Some(Governor::Ondemand) {
        return (workload, None);
    }
    let mut w = workload;
    let first = TaskId(w.tasks.len() as u32);
    let actions = vec![Action::Wait, Action::Compute(machine.cpufreq.dbs_work_ns)];
    for c in 0..machine.nr_cpus() {
        let cpu = CpuId(c as u32);
        let program = Program::Script(Script::new(actions.clone(), 0));
        w.tasks.push(crate::workload::per_cpu_kthread(
            format!("kworker/{c}:1"),
            program,
            cpu,
            DBS_KWORKER_FOOTPRINT_KIB,
        ));
    }
    (w, Some(first))
}

impl Sim {
    /// The CPU whose ondemand kworker `p` is, if it is one.
    #[inline]
    pub(crate) fn dbs_cpu_of(&self, p: TaskId) -> Option<CpuId> {
        let f = self.cpufreq.dbs_first?;
        (p.0 >= f.0 && ((p.0 - f.0) as usize) < self.cpufreq.dbs.len()).then(|| CpuId(p.0 - f.0))
    }

    /// `dbs_update_util_handler`: the scheduler's hook on `cpu`.
    pub(crate) fn dbs_update_util_handler(&mut self, cpu: CpuId) {
        // cpufreq_this_cpu_can_update: a per-CPU policy, updated locally.
        if self.cpufreq.this_cpu.is_some_and(|t| t != cpu) {
            return;
        }
        let now = self.now;
        let d = &mut self.cpufreq.dbs[cpu.idx()];
        if d.work_in_progress || now.saturating_sub(d.last_sample_time) < d.sample_delay_ns {
            return;
        }
        d.last_sample_time = now;
        d.work_in_progress = true;
        self.at(now, crate::engine::Ev::DbsIrqWork { cpu });
    }

    /// `dbs_irq_work`: queue the sample on `cpu`'s kworker and wake it.
    pub(crate) fn dbs_irq_work(&mut self, cpu: CpuId) -> crate::Result<()> {
        let Some(f) = self.cpufreq.dbs_first else {
            self.dbs_work_handler(cpu);
            return Ok(());
        };
        let p = TaskId(f.0 + cpu.0);
        let t = &mut self.tasks[p.idx()];
        t.wake_tokens += 1;
        if t.state == crate::engine::task::TaskState::Blocked && t.pending == Some(Action::Wait) {
            self.try_to_wake_up(p, 0, cpu, None)?;
        }
        Ok(())
    }

    /// `dbs_work_handler` (`od_dbs_update`), run when `cpu`'s kworker is
    /// back to waiting after its work: sample, request, allow the next.
    pub(crate) fn dbs_work_handler(&mut self, cpu: CpuId) {
        if !self.cpufreq.dbs[cpu.idx()].work_in_progress {
            return;
        }
        self.counters_fold(cpu);
        let now = self.now;
        let wall_us = now / NSEC_PER_USEC;
        let idle_us = now.saturating_sub(self.cpufreq.counters[cpu.idx()].mperf_ns) / NSEC_PER_USEC;
        let fd = self.machine.cpus[cpu.idx()].freq_domain as usize;
        let (min_khz, max_khz) = (self.cpufreq.policies[fd].min_khz, self.cpufreq.policies[fd].cpuinfo_max_khz);
        let cur_khz = self.cpufreq.cpu_req_khz[cpu.idx()];
        let d = &mut self.cpufreq.dbs[cpu.idx()];
        let load = dbs_load(d, wall_us - d.prev_wall_us, idle_us.saturating_sub(d.prev_idle_us));
        d.prev_wall_us = wall_us;
        d.prev_idle_us = idle_us;
        d.samples += 1;
        let (next, mult) = od_next_freq(load, cur_khz, min_khz, max_khz);
        d.rate_mult = mult;
        d.sample_delay_ns = d.sampling_rate_ns * mult;
        d.work_in_progress = false;
        if let Some(khz) = next {
            let khz = self.resolve_closest(cpu, khz);
            self.cpufreq_cpu_request(cpu, khz);
        }
    }
}
