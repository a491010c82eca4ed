//! Decision tests for `rt/decide.rs` on hand-built 4-CPU states (one LLC,
//! CPUs 0-3, one MC domain with SD_WAKE_AFFINE). Each test states the
//! machine it builds; priorities are kernel `prio` (lower runs first).

use crate::cpumask::CpuMask;
use crate::ids::{CpuId, TaskId};
use crate::rt::{
    need_pull_rt_task, pull_rt_task, push_rt_task, select_task_rq_rt, task_woken_rt, wakeup_preempt_rt, AnyDistribute,
    Pull, PullOutcome, PushDecision, RtCurr, RtEnv, RtPolicy, RtRootDomain, RtRq, WakeupPreempt, DEFAULT_PRIO,
};
use crate::testkit::machine_from_toml;
use crate::topology::{build_sched_domains, Domains};

const FOUR: &str = crate::uniform_machine_toml!("rt-4", 1, 1, 4, 1);
const NR_TASKS: usize = 8;

struct State {
    rqs: Vec<RtRq>,
    curr: Vec<RtCurr>,
    rd: RtRootDomain,
    d: Domains,
    masks: Vec<CpuMask>,
}

impl State {
    /// 4 idle CPUs; every task allowed everywhere.
    fn new() -> Self {
        State {
            rqs: (0..4).map(|c| RtRq::new(CpuId(c))).collect(),
            curr: vec![RtCurr::IDLE; 4],
            rd: RtRootDomain::new(4),
            d: build_sched_domains(&machine_from_toml(FOUR)).unwrap(),
            masks: vec![CpuMask::first_n(4); NR_TASKS],
        }
    }

    fn pin(&mut self, t: u32, list: &str) {
        self.masks[t as usize] = CpuMask::parse_list(list).unwrap();
    }

    fn nr(&self, t: u32) -> u32 {
        self.masks[t as usize].weight()
    }

    /// CPU `cpu` runs a fair task.
    fn fair(&mut self, cpu: u32) {
        self.curr[cpu as usize] = RtCurr { prio: DEFAULT_PRIO, nr_cpus_allowed: 4 };
    }

    /// CPU `cpu` runs RT task `t` of `prio`.
    fn run(&mut self, cpu: u32, t: u32, prio: i32) {
        let nr = self.nr(t);
        let c = self.rqs[cpu as usize].enqueue_task_rt(TaskId(t), prio, RtPolicy::Fifo, false, true, nr);
        self.rd.apply(CpuId(cpu), c);
        self.curr[cpu as usize] = RtCurr { prio, nr_cpus_allowed: nr };
    }

    /// RT task `t` of `prio` waits on CPU `cpu`.
    fn queue(&mut self, cpu: u32, t: u32, prio: i32) {
        let nr = self.nr(t);
        let c = self.rqs[cpu as usize].enqueue_task_rt(TaskId(t), prio, RtPolicy::Fifo, false, false, nr);
        self.rd.apply(CpuId(cpu), c);
    }

    fn env(&self) -> RtEnv<'_, Vec<CpuMask>> {
        RtEnv { rt_rqs: &self.rqs, curr: &self.curr, rd: &self.rd, domains: &self.d, tasks: &self.masks, fits: None }
    }
}

const P: TaskId = TaskId(7);

fn select(s: &State, prio: i32, prev: u32, this: u32) -> u32 {
    select_task_rq_rt(&s.env(), P, prio, CpuId(prev), true, CpuId(this), &mut AnyDistribute::default()).0
}

// ---- select_task_rq_rt ----

#[test]
fn select_stays_on_prev_running_fair() {
    let mut s = State::new();
    s.fair(0);
    assert_eq!(select(&s, 50, 0, 0), 0);
}

#[test]
fn select_leaves_prev_running_higher_rt() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.fair(1);
    s.fair(2);
    // Lowest level: CPUs 1-3 (fair/idle share CPUPRI_NORMAL); the waker CPU 2 is in it.
    assert_eq!(select(&s, 50, 0, 2), 2);
}

#[test]
fn select_leaves_prev_running_equal_rt() {
    let mut s = State::new();
    s.run(0, 0, 50);
    assert_eq!(select(&s, 50, 0, 3), 3);
}

#[test]
fn select_stays_when_prev_runs_lower_migratable_rt() {
    let mut s = State::new();
    s.run(0, 0, 60);
    assert_eq!(select(&s, 50, 0, 3), 0);
}

#[test]
fn select_leaves_prev_running_lower_but_pinned_rt() {
    let mut s = State::new();
    s.pin(0, "0");
    s.run(0, 0, 60);
    assert_eq!(select(&s, 50, 0, 3), 3);
}

#[test]
fn select_stays_when_no_cpu_runs_below_the_task() {
    let mut s = State::new();
    for c in 0..4 {
        s.run(c, c, 10);
    }
    assert_eq!(select(&s, 50, 0, 3), 0);
}

#[test]
fn select_ignores_non_wakeups() {
    let mut s = State::new();
    s.run(0, 0, 10);
    let cpu = select_task_rq_rt(&s.env(), P, 50, CpuId(0), false, CpuId(3), &mut AnyDistribute::default());
    assert_eq!(cpu, CpuId(0));
}

#[test]
fn select_respects_affinity() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.pin(P.0, "0,2");
    assert_eq!(select(&s, 50, 0, 3), 2);
}

#[test]
fn select_moves_unfitting_task_to_fitting_cpu() {
    // Asymmetric: only CPU 3 fits the task; prev CPU 0 runs a fair task.
    let mut s = State::new();
    s.fair(0);
    let fits = |_: TaskId, c: CpuId| c.0 == 3;
    let env = RtEnv { fits: Some(&fits), ..s.env() };
    let cpu = select_task_rq_rt(&env, P, 50, CpuId(0), true, CpuId(1), &mut AnyDistribute::default());
    assert_eq!(cpu, CpuId(3));
}

#[test]
fn select_keeps_prev_when_capacity_search_finds_only_unfitting_cpus() {
    // Only CPU 3 fits, but it runs a higher RT task: the fitness search falls
    // back to unfitting CPUs, and a capacity-only move is then dropped.
    let mut s = State::new();
    s.run(3, 3, 10);
    let fits = |_: TaskId, c: CpuId| c.0 == 3;
    let env = RtEnv { fits: Some(&fits), ..s.env() };
    let cpu = select_task_rq_rt(&env, P, 50, CpuId(0), true, CpuId(1), &mut AnyDistribute::default());
    assert_eq!(cpu, CpuId(0));
}

// ---- push_rt_task ----

#[test]
fn push_moves_best_pushable_to_lowest_cpu() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    s.run(1, 2, 5);
    // Lowest level {2,3}; first distribute pick after CPU 0 within the MC span is 2.
    let d = push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default());
    assert_eq!(d, PushDecision::Push { task: TaskId(1), prio: 50, src: CpuId(0), dst: CpuId(2) });
}

#[test]
fn push_picks_highest_priority_pushable() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    s.queue(0, 2, 30);
    let d = push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default());
    assert!(matches!(d, PushDecision::Push { task: TaskId(2), prio: 30, .. }), "{d:?}");
}

#[test]
fn push_goes_to_cpu_running_lower_rt() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    s.run(1, 2, 20);
    s.run(2, 3, 80);
    s.run(3, 4, 20);
    let d = push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default());
    assert!(matches!(d, PushDecision::Push { dst: CpuId(2), .. }), "{d:?}");
}

#[test]
fn push_nothing_when_every_cpu_runs_higher_or_equal() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    s.run(1, 2, 20);
    s.run(2, 3, 50);
    s.run(3, 4, 40);
    assert_eq!(push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default()), PushDecision::Nothing);
}

#[test]
fn push_nothing_when_not_overloaded() {
    let mut s = State::new();
    s.run(0, 0, 10);
    assert_eq!(push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default()), PushDecision::Nothing);
}

#[test]
fn push_reschedules_when_pushable_outranks_curr() {
    let mut s = State::new();
    s.run(0, 0, 60);
    s.queue(0, 1, 50);
    assert_eq!(push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default()), PushDecision::ReschedCurr);
}

#[test]
fn push_respects_affinity() {
    let mut s = State::new();
    s.pin(1, "0,3");
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    let d = push_rt_task(&s.env(), CpuId(0), CpuId(0), &mut AnyDistribute::default());
    assert!(matches!(d, PushDecision::Push { dst: CpuId(3), .. }), "{d:?}");
}

// ---- pull_rt_task ----

fn pull(s: &State, this: u32, ipi: bool) -> (PullOutcome, Vec<Pull>) {
    let mut out = Vec::new();
    let o = pull_rt_task(&s.env(), CpuId(this), ipi, &mut out);
    (o, out)
}

#[test]
fn pull_takes_waiting_task_from_overloaded_cpu() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    let (o, out) = pull(&s, 1, false);
    assert_eq!(o, PullOutcome::Pulled(1));
    assert_eq!(out, vec![Pull { src: CpuId(0), task: TaskId(1), prio: 50 }]);
}

#[test]
fn pull_nothing_without_overloaded_cpus() {
    let mut s = State::new();
    s.run(0, 0, 10);
    assert_eq!(pull(&s, 1, false).0, PullOutcome::Nothing);
}

#[test]
fn pull_nothing_when_only_this_cpu_is_overloaded() {
    let mut s = State::new();
    s.run(1, 0, 10);
    s.queue(1, 1, 50);
    assert_eq!(pull(&s, 1, false).0, PullOutcome::Nothing);
}

#[test]
fn pull_skips_source_whose_next_is_not_better_than_ours() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    s.run(1, 2, 40);
    assert_eq!(pull(&s, 1, false).0, PullOutcome::Nothing);
}

#[test]
fn pull_skips_task_that_outranks_its_cpus_curr() {
    // Task 1 (prio 5) just woke on CPU 0 where prio 10 runs: it will run there.
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 5);
    assert_eq!(pull(&s, 1, false).0, PullOutcome::Nothing);
}

#[test]
fn pull_respects_affinity() {
    let mut s = State::new();
    s.pin(1, "0,2");
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    assert_eq!(pull(&s, 1, false).0, PullOutcome::Nothing);
}

#[test]
fn pull_takes_each_better_task_in_cpu_order() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    s.run(2, 2, 10);
    s.queue(2, 3, 30);
    let (_, out) = pull(&s, 1, false);
    assert_eq!(out.iter().map(|p| (p.src.0, p.task.0)).collect::<Vec<_>>(), vec![(0, 1), (2, 3)]);
}

#[test]
fn pull_later_source_must_beat_task_already_pulled() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 30);
    s.run(2, 2, 10);
    s.queue(2, 3, 50);
    let (_, out) = pull(&s, 1, false);
    assert_eq!(out, vec![Pull { src: CpuId(0), task: TaskId(1), prio: 30 }]);
}

#[test]
fn pull_with_push_ipi_asks_sources_to_push() {
    let mut s = State::new();
    s.run(0, 0, 10);
    s.queue(0, 1, 50);
    assert_eq!(pull(&s, 1, true).0, PullOutcome::PushIpi);
}

#[test]
fn need_pull_when_best_level_drops_below_prev() {
    let mut s = State::new();
    s.queue(1, 1, 50);
    assert!(need_pull_rt_task(&s.rqs[1], 10));
    assert!(!need_pull_rt_task(&s.rqs[1], 60));
}

// ---- task_woken_rt ----

#[test]
fn woken_task_behind_higher_rt_triggers_push() {
    assert!(task_woken_rt(false, 50, 4, RtCurr { prio: 10, nr_cpus_allowed: 4 }, false));
}

#[test]
fn woken_task_behind_fair_task_does_not_push() {
    assert!(!task_woken_rt(false, 50, 4, RtCurr { prio: DEFAULT_PRIO, nr_cpus_allowed: 4 }, false));
}

#[test]
fn woken_task_behind_lower_migratable_rt_does_not_push() {
    assert!(!task_woken_rt(false, 50, 4, RtCurr { prio: 60, nr_cpus_allowed: 4 }, false));
}

#[test]
fn woken_pinned_task_does_not_push() {
    assert!(!task_woken_rt(false, 50, 1, RtCurr { prio: 10, nr_cpus_allowed: 4 }, false));
}

#[test]
fn woken_task_with_resched_pending_does_not_push() {
    assert!(!task_woken_rt(false, 50, 4, RtCurr { prio: 10, nr_cpus_allowed: 4 }, true));
}

// ---- wakeup_preempt_rt ----

#[test]
fn better_prio_preempts() {
    let s = State::new();
    let all = CpuMask::first_n(4);
    let curr = RtCurr { prio: 50, nr_cpus_allowed: 4 };
    assert_eq!(wakeup_preempt_rt(&s.rd, 40, &all, curr, &all, false), WakeupPreempt::Resched);
}

#[test]
fn equal_prio_migratable_woken_task_does_not_preempt() {
    let mut s = State::new();
    s.run(0, 0, 50);
    let all = CpuMask::first_n(4);
    let curr = RtCurr { prio: 50, nr_cpus_allowed: 4 };
    assert_eq!(wakeup_preempt_rt(&s.rd, 50, &all, curr, &all, false), WakeupPreempt::None);
}

#[test]
fn equal_prio_pinned_woken_task_preempts_migratable_curr() {
    let mut s = State::new();
    s.run(0, 0, 50);
    let all = CpuMask::first_n(4);
    let only0 = CpuMask::from_cpus([CpuId(0)]);
    let curr = RtCurr { prio: 50, nr_cpus_allowed: 4 };
    assert_eq!(wakeup_preempt_rt(&s.rd, 50, &only0, curr, &all, false), WakeupPreempt::RequeueHeadAndResched);
}

#[test]
fn lower_prio_never_preempts() {
    let s = State::new();
    let all = CpuMask::first_n(4);
    let curr = RtCurr { prio: 50, nr_cpus_allowed: 4 };
    assert_eq!(wakeup_preempt_rt(&s.rd, 60, &all, curr, &all, false), WakeupPreempt::None);
}
