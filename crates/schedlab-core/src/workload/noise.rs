//! Noise task families: periodic tasks that are not the benchmark but share
//! its machine, and so steal its CPUs (SEEDS ideas 1 and 5).
//!
//! * `rt-periodic`: rt-app-style RT tasks, `runtime` of work every `period`;
//! * `kworkers`: one bound per-CPU kernel worker per CPU, waking every `period`.
//!
//! Both are `noise`: they never exit, do not keep the run alive and have no
//! workload metric. Both use one program, [`Periodic`]: compute, then sleep
//! until the next period boundary with an absolute timer (`SleepUntil`), as
//! rt-app's `timer` event and a self-rearming delayed work do, so that the
//! period does not drift by the runtime and the wakeup latency.

use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{forked_task, Action, PrimaryMetric, ProgCtx, Program, StartKind, TaskSpec, Workload};
use crate::error::Result;
use crate::ids::{CpuId, Ns};
use crate::sim::Rng;

const NS_PER_US: Ns = 1_000;
const NS_PER_MS: Ns = 1_000_000;

/// Structure, for `schedlab workload show`.
pub(crate) const RT_STRUCTURE: &str =
    "`count` SCHED_FIFO tasks on `cpus`, each running `runtime` of work then sleeping to the next \
period boundary (an absolute timer), forever.";

/// What it was modelled on.
pub(crate) const RT_SOURCE: &str = "rt-app (timer event, absolute mode); SEEDS.md idea 5";

/// One line for `schedlab workload list`.
pub(crate) const RT_SUMMARY: &str =
    "noise: rt-app-style periodic RT tasks (SCHED_FIFO, priority 50), `runtime` of work \
     every `period` on the `cpus` (SEEDS idea 5: 4 tasks on the 4 big CPUs, 20 ms every 100 ms)";

/// RT priority of `rt-periodic` tasks when `priority=` is not given: the
/// middle of the 1..99 range, above kernel threads a distribution leaves at
/// SCHED_FIFO 1 and below the ones at 99 (migration/N, watchdogs). rt-app's
/// own default is 10 (`"priority"` of a thread with an RT policy); the seed
/// experiment does not state one, and any RT priority preempts fair tasks alike.
pub(crate) const RT_DEFAULT_PRIORITY: u32 = 50;

/// Parameters of `rt-periodic`, in normalised-name order.
pub(crate) const RT_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "count",
        kind: Kind::Count { min: 1, max: 100_000 },
        default: AUTO,
        unit: "count",
        doc: "RT tasks (rt-app threads `rt-periodic-0` ...). Default: one per CPU of `cpus` (all CPUs when \
              cpus is not given). Every task may run on every CPU of `cpus` (one shared mask, like rt-app's \
              `cpus` and taskset): rt-app pins nothing per thread, and the seed experiment bound its tasks to \
              the 4 big CPUs as a set. With count = number of CPUs, RT push/pull still spreads them one per CPU.",
    },
    ParamDef {
        name: "period",
        kind: Kind::Duration { default_unit_ns: NS_PER_MS, min_ns: 10 * NS_PER_US, max_ns: 100_000 * NS_PER_MS },
        default: "100ms",
        unit: "ms",
        doc: "release period (rt-app `timer` event, absolute: a late task does not shift later releases; \
              missed releases are skipped). Default 100 ms, the seed experiment's (SEEDS idea 5).",
    },
    ParamDef {
        name: "runtime",
        kind: Kind::Duration { default_unit_ns: NS_PER_MS, min_ns: NS_PER_US, max_ns: 100_000 * NS_PER_MS },
        default: "20ms",
        unit: "ms",
        doc: "work per period, must be below `period`. Default 20 ms, the seed experiment's. rt-app's `run` \
              semantics (what the seed's rt-app used): work calibrated on a full-capacity CPU, so on a CPU of \
              capacity 512 it takes about twice the wall time; rt-app's wall-clock `runtime` event is not modelled.",
    },
];

/// Structure, for `schedlab workload show`.
pub(crate) const KW_STRUCTURE: &str = "one kworker/N:1 per CPU of `cpus`, bound to it (a per-CPU kthread), waking every `period` at a random phase and running `runtime`, forever.";

/// What it was modelled on.
pub(crate) const KW_SOURCE: &str = "kernel/workqueue.c (per-CPU pools); SEEDS.md idea 1 (intel_cpufreq under ondemand)";

/// One line for `schedlab workload list`.
pub(crate) const KW_SUMMARY: &str = "noise: one bound per-CPU kworker per CPU (kworker/N:1) waking every `period` \
     for `runtime` (SEEDS idea 1 reports them every 4 ms under intel_cpufreq + ondemand; \
     `--governor ondemand` models that governor's own kworkers)";

/// Parameters of `kworkers`, in normalised-name order.
pub(crate) const KW_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "period",
        kind: Kind::Duration { default_unit_ns: NS_PER_MS, min_ns: 10 * NS_PER_US, max_ns: 100_000 * NS_PER_MS },
        default: "4ms",
        unit: "ms",
        doc: "time between two runs of one kworker. Default 4 ms: the period SEEDS idea 1 reports for its \
              passive case (intel_cpufreq under the ondemand governor, whose samples run in per-CPU \
              kworkers; `--governor ondemand` models them, every max(2 ticks, transition delay), 8 ms at \
              HZ=250). Each kworker's first release is at a random phase in [0, period) from its own \
              seeded stream.",
    },
    ParamDef {
        name: "runtime",
        kind: Kind::Duration { default_unit_ns: NS_PER_US, min_ns: 100, max_ns: 100_000 * NS_PER_MS },
        default: "5us",
        unit: "us",
        doc: "work per run, below `period`. Default 5 us, an estimate (plausible 2-20 us): a work item that \
              computes and writes one frequency request (an MSR write costs around a microsecond; cpufreq \
              bookkeeping and the work-queue loop a few more), context switches priced by the engine.",
    },
    ParamDef {
        name: "unbound",
        kind: Kind::Count { min: 0, max: 4096 },
        default: "0",
        unit: "threads",
        doc: "unbound kworkers (kworker/uP:N) besides the bound ones: workers of unbound work queues, allowed \
              on every CPU of `cpus` (not per-CPU kthreads, so select_idle_sibling's kthread rule does not \
              apply to their wakees), each woken by its own timer every `period` at a random phase.",
    },
];

/// Cache footprint of an rt-app thread, KiB: a calibrated busy loop and its stack.
const RT_FOOTPRINT_KIB: u32 = 16;
/// Cache footprint of a kworker, KiB: the work item, its data and the kthread's stack.
const KW_FOOTPRINT_KIB: u32 = 8;

/// A workload of noise tasks only.
fn noise_workload(tasks: Vec<TaskSpec>) -> Workload {
    Workload { ..Workload::of(tasks, PrimaryMetric::CompletionTime) }
}

/// Reads `period` and `runtime`, checking runtime < period.
fn period_runtime(p: &mut Params) -> Result<(Ns, Ns)> {
    let period_ns = p.duration("period")?;
    let runtime_ns = p.duration("runtime")?;
    if runtime_ns >= period_ns {
        return Err(p.invalid("runtime", "a runtime below the period"));
    }
    Ok((period_ns, runtime_ns))
}

/// Builds `rt-periodic`. Policy and priority come from the common keys
/// (default SCHED_FIFO, [`RT_DEFAULT_PRIORITY`]); `cpus` becomes every task's
/// affinity after the build.
pub(crate) fn build_rt_periodic(p: &mut Params) -> Result<Workload> {
    let mask = p.cpus.unwrap_or_else(|| p.machine.all_cpus());
    let count = p.count_or("count", mask.weight() as u64)?;
    let (period_ns, runtime_ns) = period_runtime(p)?;
    let tasks = (0..count)
        .map(|i| {
            // rt-app releases every thread when it starts them (phase 0).
            let prog = Periodic::new(period_ns, runtime_ns, Phase::AtStart);
            let mut t = forked_task(&format!("rt-periodic-{i}"), Program::Periodic(prog), RT_FOOTPRINT_KIB);
            // Forked by rt-app's main thread, which runs on one of the CPUs it was given.
            t.start = StartKind::Fork { parent_cpu: mask.first().map_or(0, |c| c.0) };
            t.noise = true;
            t
        })
        .collect();
    Ok(noise_workload(tasks))
}

/// Builds `kworkers`: one `kworker/N:1` per CPU N of `cpus` (default all),
/// bound to N (`kthread_bind`), a per-CPU kthread already existing at t=0.
pub(crate) fn build_kworkers(p: &mut Params) -> Result<Workload> {
    let mask = p.cpus.unwrap_or_else(|| p.machine.all_cpus());
    let (period_ns, runtime_ns) = period_runtime(p)?;
    let unbound = p.count("unbound")?;
    let mut tasks: Vec<TaskSpec> = mask.iter().map(|cpu| kworker(cpu, period_ns, runtime_ns)).collect();
    // The kernel names unbound workers kworker/u<pool>:<id>; the pool id is
    // the number of CPUs times two for the default unbound pool's attrs.
    let pool = p.machine.nr_cpus() * 2;
    let first = mask.first().map_or(0, |c| c.0);
    for i in 0..unbound {
        let mut t = kworker(CpuId(first), period_ns, runtime_ns);
        t.name = format!("kworker/u{pool}:{i}");
        t.allowed = Some(mask);
        t.kthread = false;
        tasks.push(t);
    }
    Ok(noise_workload(tasks))
}

fn kworker(cpu: CpuId, period_ns: Ns, runtime_ns: Ns) -> TaskSpec {
    let program = Program::Periodic(Periodic::new(period_ns, runtime_ns, Phase::Random));
    super::per_cpu_kthread(format!("kworker/{}:1", cpu.0), program, cpu, KW_FOOTPRINT_KIB)
}

/// Where a periodic task's first release lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// At the task's start (rt-app threads, released together).
    AtStart,
    /// Uniform in `[start, start + period)` from the task's own stream
    /// (independent per-CPU timers).
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PeriodicState {
    Start,
    Run,
    Sleep,
}

/// A periodic task: compute `runtime_ns`, then sleep until the next release
/// (`first + k * period`, skipping releases already past), forever.
#[derive(Clone, Debug)]
pub struct Periodic {
    period_ns: Ns,
    runtime_ns: Ns,
    phase: Phase,
    /// Next release time, ns.
    next_ns: Ns,
    state: PeriodicState,
}

impl Periodic {
    /// A periodic program.
    pub fn new(period_ns: Ns, runtime_ns: Ns, phase: Phase) -> Self {
        Periodic { period_ns, runtime_ns, phase, next_ns: 0, state: PeriodicState::Start }
    }

    pub(crate) fn step(&mut self, ctx: &ProgCtx, rng: &mut Rng) -> Action {
        match self.state {
            PeriodicState::Start => {
                let offset = match self.phase {
                    Phase::AtStart => 0,
                    Phase::Random => rng.next_u64() % self.period_ns,
                };
                self.next_ns = ctx.now + offset;
                self.state = PeriodicState::Run;
                if offset > 0 {
                    return Action::SleepUntil(self.next_ns);
                }
                self.step(ctx, rng)
            }
            PeriodicState::Run => {
                self.state = PeriodicState::Sleep;
                Action::Compute(self.runtime_ns)
            }
            PeriodicState::Sleep => {
                // hrtimer_forward: the next boundary strictly after now.
                self.next_ns += self.period_ns;
                if self.next_ns <= ctx.now {
                    let behind = (ctx.now - self.next_ns) / self.period_ns + 1;
                    self.next_ns += behind * self.period_ns;
                }
                self.state = PeriodicState::Run;
                Action::SleepUntil(self.next_ns)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SchedlabError;
    use crate::ids::TaskId;
    use crate::workload::testdrv::test_machine;
    use crate::workload::{build_workload, SchedPolicy};

    fn build(spec: &str) -> Result<Workload> {
        build_workload(spec, "spec", "cli", &test_machine(8))
    }

    fn key(spec: &str) -> (String, String) {
        match build(spec) {
            Err(SchedlabError::Spec { key, expected, .. }) => (key, expected),
            other => panic!("{spec}: {other:?}"),
        }
    }

    #[test]
    fn rt_periodic_defaults_follow_the_seed_experiment() {
        let w = build("rt-periodic:cpus=4-7").unwrap();
        assert_eq!(w.tasks.len(), 4);
        assert_eq!(w.name, "rt-periodic:count=4,period=100ms,runtime=20ms,cpus=4-7,policy=fifo,priority=50");
        for (i, t) in w.tasks.iter().enumerate() {
            assert_eq!(t.name, format!("rt-periodic-{i}"));
            assert_eq!((t.policy, t.rt_priority, t.noise), (SchedPolicy::Fifo, 50, true));
            assert_eq!(t.allowed.unwrap().to_list_string(), "4-7");
        }
        let w = build("rt-periodic:count=2,policy=rr,priority=90,period=10ms,runtime=1ms").unwrap();
        assert_eq!(w.tasks.len(), 2);
        assert_eq!((w.tasks[0].policy, w.tasks[0].rt_priority), (SchedPolicy::Rr, 90));
        assert_eq!(build(&w.name).unwrap().name, w.name);
    }

    #[test]
    fn rt_periodic_bad_input() {
        for (spec, k, want) in [
            ("rt-periodic:runtime=100ms", "workload.runtime", "below the period"),
            ("rt-periodic:count=0", "workload.count", "1 to"),
            ("rt-periodic:period=1us", "workload.period", "from 10us"),
            ("rt-periodic:policy=batch", "workload.policy", "fifo or rr"),
            ("rt-periodic:priority=0", "workload.priority", "1 to 99"),
            ("rt-periodic:nice=3", "workload.nice", "fair policies only"),
        ] {
            let (got, exp) = key(spec);
            assert_eq!(got, k, "{spec}");
            assert!(exp.contains(want), "{spec}: {exp}");
        }
    }

    #[test]
    fn unbound_kworkers_may_run_anywhere_and_are_not_per_cpu_kthreads() {
        let w = build("kworkers:cpus=1;3,unbound=2").unwrap();
        let u: Vec<&TaskSpec> = w.tasks.iter().filter(|t| t.name.starts_with("kworker/u")).collect();
        assert_eq!(u.len(), 2);
        assert!(u.iter().all(|t| !t.kthread && t.noise));
        assert_eq!(u[0].allowed.unwrap().weight(), 2);
        assert_eq!(w.tasks.len(), 4);
    }

    #[test]
    fn kworkers_one_bound_kthread_per_cpu() {
        let w = build("kworkers:cpus=1;3").unwrap();
        assert_eq!(w.name, "kworkers:period=4ms,runtime=5us,unbound=0,cpus=1;3");
        let names: Vec<&str> = w.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["kworker/1:1", "kworker/3:1"]);
        let t = &w.tasks[1];
        assert_eq!(t.allowed.unwrap().to_list_string(), "3");
        assert_eq!(t.start, StartKind::Wake { prev_cpu: 3 });
        assert!(t.kthread && t.noise);
        assert_eq!(build("kworkers").unwrap().tasks.len(), 8);
        assert_eq!(key("kworkers:runtime=5ms").0, "workload.runtime");
        assert_eq!(key("kworkers:policy=fifo").0, "workload.priority");
    }

    fn ctx(now: Ns) -> ProgCtx {
        ProgCtx { now, task: TaskId(0), msg: None, woken_at: None }
    }

    #[test]
    fn periodic_sleeps_until_absolute_boundaries() {
        let mut p = Periodic::new(100, 20, Phase::AtStart);
        let mut rng = Rng::new(1, 1);
        assert_eq!(p.step(&ctx(0), &mut rng), Action::Compute(20));
        // Finished late (at 35): the next release is still 100, not 135.
        assert_eq!(p.step(&ctx(35), &mut rng), Action::SleepUntil(100));
        assert_eq!(p.step(&ctx(100), &mut rng), Action::Compute(20));
        // Overran two periods: releases 200 and 300 are skipped.
        assert_eq!(p.step(&ctx(310), &mut rng), Action::SleepUntil(400));
    }

    #[test]
    fn random_phase_is_within_one_period_and_seeded() {
        let first = |seed| {
            let mut p = Periodic::new(4_000_000, 5_000, Phase::Random);
            p.step(&ctx(0), &mut Rng::new(seed, 3))
        };
        assert_eq!(first(1), first(1));
        match first(1) {
            Action::SleepUntil(t) => assert!(t < 4_000_000),
            a => panic!("{a:?}"),
        }
    }
}
