//! Building a `Sim` from a machine, a workload and a policy.

use super::ipc::{Barrier, Chan, Cond, Sem};
use super::rq::{Rq, SdRuntime};
use super::task::{Task, TaskState};
use super::{ClassKind, EngineStats, Ev, Sim};
use crate::cpumask::CpuMask;
use crate::fair::eevdf::{base_slice_ns, EevdfParams};
use crate::features::Features;
use crate::ids::{CpuId, Ns, TaskId, NSEC_PER_SEC};
use crate::metrics::{Collector, MetricsContext};
use crate::pelt::SchedAvg;
use crate::sim::{EventQueue, Rng};
use crate::topology::{Domains, Machine};
use crate::workload::{StartKind, Workload};

/// What a run is made of, besides the machine.
pub struct SimConfig {
    /// Switched-on features.
    pub features: Features,
    /// Class.
    pub class: ClassKind,
    /// Seed.
    pub seed: u64,
    /// Keep a trace.
    pub trace: bool,
    /// Check invariants after every event.
    pub check_invariants: bool,
    /// Restrict every task to these CPUs (a cpuset; policy `pinned`).
    pub cpuset: Option<CpuMask>,
}

impl Sim {
    /// Build the engine state for `workload` on `machine`.
    pub(crate) fn build(machine: Machine, domains: Domains, workload: &Workload, cfg: SimConfig) -> crate::Result<Sim> {
        let nr = machine.nr_cpus();
        let (with_kthreads, irq, irq_streams) = super::irq::with_ksoftirqd(workload, nr, cfg.seed)?;
        let (with_kthreads, sugov_first) = crate::cpufreq::sugov::with_sugov_kthreads(with_kthreads, &machine);
        let (with_kthreads, dbs_first) = crate::cpufreq::ondemand::with_dbs_kworkers(with_kthreads, &machine);
        let workload = &with_kthreads;
        let mut rqs = Vec::with_capacity(nr);
        for c in 0..nr {
            let cpu = CpuId(c as u32);
            let sd = domains.chain(cpu).iter().map(|&id| SdRuntime::new(domains.sd(id).min_interval_ms)).collect();
            rqs.push(Rq::new(machine.capacity_orig(cpu), sd, EevdfParams::new(nr, machine.hz as u64)));
        }
        let all = machine.all_cpus();
        let mut tasks = Vec::with_capacity(workload.tasks.len());
        let mut allowed_masks = Vec::with_capacity(workload.tasks.len());
        for (i, ts) in workload.tasks.iter().enumerate() {
            let mut allowed = ts.allowed.unwrap_or(all).and(&all);
            if let Some(set) = cfg.cpuset {
                if !ts.kthread {
                    allowed = allowed.and(&set);
                }
            }
            if allowed.is_empty() {
                return Err(crate::SchedlabError::spec(
                    &workload.name,
                    format!("tasks[{i}].allowed"),
                    "a CPU list that contains at least one CPU of the machine (and of the policy's cpuset)",
                ));
            }
            let prev = match ts.start {
                StartKind::Fork { parent_cpu } | StartKind::Wake { prev_cpu: parent_cpu } => parent_cpu,
                StartKind::Spawned => 0,
            };
            if prev as usize >= nr {
                return Err(crate::SchedlabError::spec(
                    &workload.name,
                    format!("tasks[{i}].start cpu"),
                    format!("a CPU below {nr}, got {prev}"),
                ));
            }
            allowed_masks.push(allowed);
            tasks.push(Task {
                id: TaskId(i as u32),
                name: ts.name.clone(),
                program: ts.program.clone(),
                rng: Rng::named(cfg.seed, "task", i as u64),
                state: TaskState::New,
                cpu: CpuId(prev),
                allowed,
                // A preference outside the hard mask means nothing; none left = no preference.
                preferred: ts.preferred.map(|m| m.and(&allowed)).filter(|m| !m.is_empty()),
                nr_cpus_allowed: allowed.weight(),
                max_allowed_capacity: allowed.iter().map(|c| machine.capacity_orig(c)).max().unwrap_or(0),
                kthread: ts.kthread,
                nice: ts.nice,
                policy: ts.policy,
                rt_priority: ts.rt_priority,
                prio: crate::rt::class::task_prio(ts.policy, ts.rt_priority, ts.nice),
                class: crate::class::SchedClass::of(ts.policy, crate::class::SchedClass::normal(&cfg.class)),
                on_rq: false,
                noise: ts.noise,
                avg: SchedAvg::default(),
                // Inherited from the parent at fork (`TaskSpec::wakee_flips`),
                // with the decay clock taken as the parent's most recent (the
                // task's start): the first halving comes a second later.
                wakee_flips: ts.wakee_flips,
                wakee_flip_decay_ts: ts.start_ns,
                last_wakee: None,
                recent_used_cpu: CpuId(prev),
                work_left_wu: 0,
                pending: None,
                spinning_on: None,
                msg: None,
                woken_at: None,
                wake_tokens: 0,
                in_iowait: false,
                chan_waited: false,
                timer_gen: 0,
                footprint_kib: ts.footprint_kib,
                cache_cpu: CpuId(prev),
                core_pressure_at_leave: 0,
                llc_pressure_at_leave: 0,
                has_run: false,
                last_ran_ns: 0,
                runnable_since: 0,
                uclamp: super::uclamp::TaskUclamp::new(ts.uclamp.min, ts.uclamp.max, ts.policy.is_rt()),
            });
        }
        // The `sched_uclamp_used` static key: switched on by the first clamp asked for.
        let uclamp_used = workload.tasks.iter().any(|t| t.uclamp.is_set());
        let base_slice = base_slice_ns(nr);
        let nices: Vec<i32> = tasks.iter().map(|t| t.nice).collect();
        let fair = crate::fair::state::FairState::new(&machine, &domains, &nices, base_slice);
        let ctx = MetricsContext::from_machine(&machine, allowed_masks, workload);
        let mut queue = EventQueue::with_keys(super::ev_keys(nr, tasks.len()));
        let mut workload_start = Vec::with_capacity(tasks.len());
        for (i, ts) in workload.tasks.iter().enumerate() {
            // A spawned task starts when its parent's program creates it.
            if ts.start != StartKind::Spawned {
                queue.push(ts.start_ns, Ev::TaskStart(TaskId(i as u32)));
            }
            workload_start.push(ts.start);
        }
        if let Some(d) = workload.duration_ns {
            queue.push(d, Ev::Stop);
        }
        let tick_ns = NSEC_PER_SEC / machine.hz.max(1) as Ns;
        let mut sim = Sim {
            core_pressure: crate::id_table::IdTable::new(vec![0; machine.nr_cores as usize]),
            llc_pressure: crate::id_table::IdTable::new(vec![0; machine.nr_llcs as usize]),
            rd_overloaded: false,
            cpu_rec: crate::id_table::IdTable::new(
                (0..nr)
                    .map(|c| {
                        let cpu = CpuId(c as u32);
                        super::CpuRecord {
                            siblings: machine.smt_mask(cpu).iter().filter(|&s| s != cpu).collect(),
                            speed_pct: machine.core_type(cpu).smt_speed_pct,
                            core: machine.cpus[c].core,
                            llc: machine.cpus[c].llc,
                            core_type: machine.cpus[c].core_type,
                        }
                    })
                    .collect(),
            ),
            fair,
            peer: crate::policies::PeerState::new(&cfg.class, &machine, tasks.len()),
            rt: crate::rt::class::RtState::new(nr, tasks.len(), machine.hz, crate::rt::RtParams::default()),
            may_stall: workload.host.is_some() || workload.irqs.iter().any(|s| !s.accounted),
            irq_specs: workload.irqs.clone(),
            irq_streams,
            irq,
            host: workload.host.clone().map(|h| Box::new(super::host::Host::new(h, nr, cfg.seed))),
            timed: if workload.host.is_some() || !workload.irqs.is_empty() {
                vec![super::timed_work::TimedWork::default(); nr]
            } else {
                Vec::new()
            },
            nr_busy: 0,
            cpufreq: crate::cpufreq::CpufreqState::new(&machine, sugov_first).with_dbs_first(dbs_first),
            idle_devs: vec![crate::cpuidle::CpuidleDevice::default(); nr],
            cluster_idle: machine
                .cluster_cpus
                .iter()
                .map(|m| crate::cpuidle::cluster::ClusterIdle::new(m.weight() as u16))
                .collect(),
            // Only menu and teo read the next timer (`sleep_length`).
            timers: super::timers::TimerQueues::new(
                nr,
                tasks.len(),
                machine.cpuidle.governor != crate::cpuidle::IdleGovernor::AvgIdle,
            ),
            uclamp_used,
            domains,
            features: cfg.features,
            normal_class: crate::class::SchedClass::normal(&cfg.class),
            nr_off_normal: {
                let normal = crate::class::SchedClass::normal(&cfg.class);
                tasks.iter().filter(|t| t.class != normal).count() as u32
            },
            rqs: super::rqs::Rqs::new(rqs),
            // Spawned tasks count once created.
            alive: workload.tasks.iter().filter(|t| !t.noise && t.start != StartKind::Spawned).count() as u32,
            tasks: super::tasks::Tasks::new(tasks),
            chans: workload.chans.iter().map(|c| Chan::new(c.kind)).collect(),
            barriers: workload.barriers.iter().map(|b| Barrier { parties: b.parties, ..Default::default() }).collect(),
            conds: vec![Cond::default(); workload.conds as usize],
            sems: workload.sems.iter().map(|&count| Sem { count, ..Default::default() }).collect(),
            affinity_masks: workload
                .masks
                .iter()
                .map(|m| {
                    let m = m.and(&machine.all_cpus());
                    cfg.cpuset.map_or(m, |set| m.and(&set))
                })
                .collect(),
            distribute_prev: nr as u32 - 1,
            queue,
            now: 0,
            sched_rng: Rng::named(cfg.seed, "sched", 0),
            collector: Collector::new(ctx),
            trace: if cfg.trace { Some(Vec::new()) } else { None },
            trace_sink: None,
            tick_ns,
            stats: EngineStats::default(),
            check_invariants: cfg.check_invariants,
            stopped: false,
            attention: false,
            unhandled: 0,
            poll_in: crate::api::STOP_CHECK_EVENTS as u32,
            workload_start,
            machine,
        };
        for c in 0..nr {
            let cpu = CpuId(c as u32);
            for level in 0..sim.rqs[c].sd.len() {
                let ms = sim.rqs[c].sd[level].balance_interval_ms;
                sim.set_balance_interval_ms(cpu, level, ms);
            }
        }
        sim.irq_start();
        sim.host_start();
        Ok(sim)
    }
}
