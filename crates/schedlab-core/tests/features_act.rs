//! No feature that changes nothing: for every sched feature, a run in which
//! switching it changes the trace, or the policy parser refuses it with a
//! message saying what it needs. Features whose effect is shown only by a
//! unit test on a hand-built state, and features still without evidence, are
//! listed explicitly below (printed by the test, never skipped silently); a
//! new feature must be added to one of the tables or the test fails.

use schedlab_core::api::{run, WorkloadSource};
use schedlab_core::features::Feat;
use schedlab_core::policy::parse_policy;
use schedlab_core::testkit::{preset_source, run_spec};

/// Where a feature shows: machine preset (`preset@governor` runs it under
/// that cpufreq governor), workloads (the first is the main one), and the
/// base policy it is toggled against.
struct Scenario {
    machine: &'static str,
    workloads: &'static [&'static str],
    base: &'static str,
}

/// Wakeup-heavy: 64 hackbench tasks on 8 CPUs, small pipe buffers.
const HACKBENCH: &[&str] = &["hackbench:groups=4,fds=4,loops=400,buf=8"];
/// Hackbench woken among CPU hogs: preemption and slice protection matter.
const AMONG_HOGS: &[&str] = &["hackbench:groups=2,fds=4,loops=400,buf=8,start=5ms", "sieve:threads=8"];
const AMONG_MORE_HOGS: &[&str] = &["hackbench:groups=2,fds=4,loops=400,buf=8,start=5ms", "sieve:threads=24"];
/// Newly-idle balancing with work to pull on a 2-socket machine.
const NEWIDLE: &[&str] = &["schbench:message_threads=4,threads=16,runtime=200ms,warmup=0", "sieve:threads=40"];
/// Sleepers with longer requests (8 receivers a group) among hogs.
const AMONG_HOGS_FDS8: &[&str] = &["hackbench:groups=2,fds=8,loops=400,buf=8,start=5ms", "sieve:threads=24"];
const WQ: &[&str] = &["workqueue:threads=50%,chunks=300"];
const WQ_FULL: &[&str] = &["workqueue:threads=100%,chunks=2000"];
/// Six periodic tasks under EAS and schedutil: a task woken onto another
/// CPU than the idle one it slept on brings a util decayed over its sleep
/// (or not), which moves that CPU's frequency.
const PERIODIC_EAS: &[&str] = &["[[task]]\nname = \"per\"\ncount = 6\n\
     ops = [ { loop = 40, do = [ { compute = \"3ms\" }, { sleep = \"17ms\" } ] } ]\n"];
const KUNPENG_HB: &[&str] = &["hackbench:groups=12,fds=10,loops=200,buf=8"];
const KUNPENG_SB: &[&str] = &["schbench:message_threads=4,threads=24,runtime=100ms,warmup=0"];
const EAS: &[&str] = &["hackbench:groups=1,fds=4,loops=400,buf=8", "kworkers:period=8ms,runtime=1ms"];
const IRQ: &[&str] = &["hackbench:groups=2,fds=4,loops=200,buf=8,start=300ms", "irq:preset=pingflood,cpus=0-2"];
const RT_OVERLOAD: &[&str] =
    &["hackbench:groups=1,fds=4,loops=400,buf=8", "rt-periodic:count=12,cpus=0-3,period=10ms,runtime=3ms"];
/// An RT hog alone on CPU 0 (fair work on CPU 1): only root throttling stops it.
const RT_HOG_ALONE: &[&str] =
    &["sieve:threads=1,work=2s,cpus=1", "rt-periodic:count=1,cpus=0,period=100ms,runtime=99ms"];
/// An RT hog sharing CPU 0 with fair work: the fair server gives it a share.
const RT_HOG_SHARED: &[&str] =
    &["sieve:threads=2,work=3s,cpus=0", "rt-periodic:count=1,cpus=0,period=100ms,runtime=99ms"];
const PIXEL2_RT: &[&str] =
    &["hackbench:groups=1,fds=8,loops=400,buf=8,start=1s", "rt-periodic:count=4,cpus=4-7,period=100ms,runtime=20ms"];

/// Two periodic tasks (2 ms of work every 10 ms) under schedutil: each
/// wakeup's frequency follows the CPU's utilisation, which util_est keeps
/// from decaying over the sleeps (a user program: TOML, not a spec).
const PERIODIC_FREQ: &[&str] = &["[[task]]\nname = \"per\"\ncount = 2\n\
     ops = [ { loop = 50, do = [ { compute = \"2ms\" }, { sleep = \"8ms\" } ] } ]\n"];

/// RT tasks free to run anywhere on a big.LITTLE machine: their default
/// uclamp_min of 1024 keeps them on the big CPUs (rt_task_fits_capacity).
const PIXEL2_RT_FREE: &[&str] =
    &["hackbench:groups=1,fds=8,loops=200,buf=8", "rt-periodic:count=3,period=10ms,runtime=1ms"];

/// Periodic tasks with a uclamp_min under schedutil: when the clamp reaches
/// the frequency request depends on where uclamp_rq_inc runs.
const CLAMPED_FREQ: &[&str] = &["[[task]]\nname = \"per\"\ncount = 2\nuclamp_min = 700\n\
     ops = [ { loop = 50, do = [ { compute = \"2ms\" }, { sleep = \"8ms\" } ] } ]\n"];

/// Wakeups within a cluster done by the waker itself (no TTWU_QUEUE): remote
/// cpufreq updates.
const REMOTE_FREQ: &[&str] = &["hackbench:groups=1,fds=8,loops=100,buf=8"];

fn scenario(f: Feat) -> Option<Scenario> {
    use Feat::*;
    let s = |machine, workloads, base| Some(Scenario { machine, workloads, base });
    match f {
        WA_IDLE | WA_WEIGHT | WA_BIAS | DELAY_ZERO | PLACE_LAG | wa_idle_prev | TTWU_QUEUE => {
            s("laptop-4c8t", HACKBENCH, "eevdf")
        }
        // util_est is read where utilisation decides: energy-aware placement.
        UTIL_EST => s("hikey960@schedutil", PERIODIC_FREQ, "eevdf"),
        RUN_TO_PARITY | WAKEUP_PREEMPTION | NEXT_BUDDY | SIS_UTIL | DELAY_DEQUEUE => {
            s("laptop-4c8t", AMONG_HOGS, "eevdf")
        }
        // A new task's halved first deadline decided whether its fork
        // preempted; since v6.19 forks do not preempt, and in these runs that
        // was where it showed.
        PLACE_DEADLINE_INITIAL => s("laptop-4c8t", AMONG_HOGS, "v6.12"),
        PICK_BUDDY => s("laptop-4c8t", AMONG_MORE_HOGS, "eevdf+NEXT_BUDDY"),
        // With RUN_TO_PARITY curr is protected for its whole slice, and the
        // tick reschedules it at the slice's end: a fork seldom finds the
        // window in between. Without it, forks among hogs preempt (v6.12) or
        // wait (v6.19+).
        wakeup_preempt_no_fork => s("laptop-4c8t", AMONG_HOGS, "eevdf-RUN_TO_PARITY"),
        // Lag at the clamp: many hogs keep V far from a waking sleeper.
        lag_clamp_max_slice => s("laptop-4c8t", AMONG_HOGS_FDS8, "eevdf"),
        // Delayed sleepers among hogs, woken before they are picked.
        delayed_lag_floor => s("laptop-4c8t", AMONG_HOGS, "eevdf"),
        // Receivers slower than their senders: pipes fill, and a read of a
        // full pipe wakes a writer (was_full) or waits for a freed page.
        pipe_release_wakes_writer => {
            s("laptop-4c8t", &["hackbench:groups=2,fds=4,loops=1000,ipc=pipe,read=5us"], "eevdf")
        }
        // Forks confined to CPUs 0-4: the core {4,5} is half allowed.
        wakeup_stats_allowed => s("laptop-4c8t", &["hackbench:groups=2,fds=4,loops=100,buf=8,cpus=0-4"], "eevdf"),
        EEVDF | START_DEBIT => s("laptop-4c8t", AMONG_MORE_HOGS, "v5.9"),
        GENTLE_FAIR_SLEEPERS => s(
            "laptop-4c8t",
            &["hackbench:groups=1,fds=8,loops=200,buf=8,cpus=0", "kworkers:period=20ms,runtime=2ms"],
            "v5.9",
        ),
        LAST_BUDDY => {
            s("laptop-4c8t", &["hackbench:groups=1,fds=8,loops=200,buf=8,cpus=0", "sieve:threads=10,cpus=0"], "v5.9")
        }
        NI_RANDOM | ni_half_idle_retry => s("xeon-2s-20c", NEWIDLE, "v7.1"),
        avg_idle_on_enqueue => s("threadripper-3970x", WQ_FULL, "v7.1"),
        avg_idle_put_prev => s("threadripper-3970x", WQ_FULL, "eevdf"),
        prefer_prev_idle_core | idler_llc | nohz_blocked_load_update | llc_idle_mask => {
            s("threadripper-3970x", WQ, "eevdf")
        }
        SIS_PROP => s("kunpeng920", KUNPENG_HB, "eevdf-SIS_UTIL"),
        remote_cpufreq_update => s("hikey960@schedutil", REMOTE_FREQ, "eevdf-TTWU_QUEUE"),
        sis_cluster_first => s("kunpeng920", KUNPENG_SB, "eevdf"),
        eas => s("hikey960@schedutil", EAS, "eevdf"),
        HRTICK => s("laptop-4c8t", &["sieve:threads=2,work=60ms,cpus=0"], "eevdf"),
        migrate_se_pelt_lag => s("hikey960@schedutil", PERIODIC_EAS, "eevdf"),
        sd_overutilized => s("hikey960@schedutil", EAS, "eevdf"),
        NONTASK_CAPACITY | cas => s("xeon-2s-44c", IRQ, "eevdf"),
        RT_PUSH_IPI => s("laptop-4c8t", RT_OVERLOAD, "eevdf"),
        rt_bandwidth => s("laptop-4c8t", RT_HOG_ALONE, "eevdf"),
        fair_server => s("laptop-4c8t", RT_HOG_SHARED, "eevdf"),
        soft_affinity => s("laptop-4c8t", &["hackbench:groups=4,fds=4,loops=400,buf=8,preferred=0-1"], "eevdf"),
        capacity_spare_wake_current => s("pixel2", PIXEL2_RT, "v4.14"),
        UCLAMP_TASK => s("pixel2", PIXEL2_RT_FREE, "eevdf"),
        uclamp_inc_before_enqueue => s("hikey960@schedutil", CLAMPED_FREQ, "eevdf"),
        legacy_find_idlest_group | wake_cap => s("pixel2", PIXEL2_RT, "v4.14+capacity_spare_wake_current"),
        PLACE_REL_DEADLINE
        | PREEMPT_SHORT
        | NI_RATE
        | sis_time_limit
        | eas_cluster_candidates
        | avg_idle_stamp_guard
        | CACHE_HOT_BUDDY => None,
    }
}

/// Features whose effect a unit test on a hand-built state shows, because
/// no run of the modelled workloads reaches the condition, with the test
/// and the reason. The test file must contain the function.
const UNIT_SHOWN: &[(Feat, &str, &str, &str)] = &[
    (
        Feat::CACHE_HOT_BUDDY,
        include_str!("../src/fair/balance_tests.rs"),
        "fn next_buddy_is_cache_hot_for_a_busy_puller_only_with_cache_hot_buddy",
        "needs NEXT_BUDDY (off by default) and a busy CPU balancing while the buddy waits, and detach_tasks \
         reaches the newest queued task last; no run of the modelled workloads was seen to get there",
    ),
    (
        Feat::avg_idle_stamp_guard,
        include_str!("../src/fair/newidle_tests.rs"),
        "fn without_the_guard_a_missing_stamp_saturates_avg_idle",
        "needs a CPU to go idle while a wakeup is queued to it (newidle's ttwu_pending early return); the kernel \
         reaches it through the wakelist of a wakee still descheduling (p->on_cpu), a window the engine's \
         instantaneous context switch does not have, so runs reach it rarely",
    ),
    (
        Feat::PLACE_REL_DEADLINE,
        include_str!("../src/fair/eevdf_tests.rs"),
        "fn migration_keeps_lag_and_relative_deadline",
        "only a queued entity that ran part of its slice and is then migrated differs; balancing picks entities that have not run",
    ),
    (
        Feat::PREEMPT_SHORT,
        include_str!("../src/fair/eevdf_tests.rs"),
        "fn run_to_parity_protects_curr_until_its_slice_ends",
        "acts only between tasks of different slices (sched_attr custom slices), which no workload sets yet",
    ),
    (
        Feat::NI_RATE,
        include_str!("../src/fair/balance_tests.rs"),
        "fn ni_random_ratio_bookkeeping",
        "acts when a domain's ratio is recomputed (every 1024 newly-idle calls of one CPU at one level)",
    ),
    (
        Feat::sis_time_limit,
        include_str!("../src/fair/wakeup_seeds_tests.rs"),
        "fn sis_time_limit_stops_scan_when_waker_avg_idle_is_short",
        "binds only when avg_idle is shorter than the scan (scan_ns_per_cpu x CPUs): not with the presets' costs",
    ),
    (
        Feat::eas_cluster_candidates,
        include_str!("../src/fair/eas_tests.rs"),
        "fn cluster_candidates_pick_the_fuller_cpu_at_the_same_opp",
        "needs several CPUs of one cluster at the same OPP with different utilisation under EAS",
    ),
];

/// Features with no evidence yet that they can change a run. XXX: each is
/// an open question for the next session.
const PENDING: &[(Feat, &str)] = &[];

/// The trace of `workloads` on `machine` under `policy`, seed 1.
fn trace(machine: &str, workloads: &[&str], policy: &str) -> String {
    let (preset, governor) = match machine.split_once('@') {
        Some((p, g)) => (p, Some(g.to_string())),
        None => (machine, None),
    };
    let mut spec = run_spec(preset_source(preset), workloads[0], policy, 1, true);
    if workloads[0].starts_with("[[task]]") {
        spec.workload_format = "toml".into();
    }
    spec.options.governor = governor;
    spec.options.check_invariants = false;
    // An RT hog with no limit starves fair tasks for ever: stop at 2 s.
    spec.options.max_time_ns = 2_000_000_000;
    spec.extra_workloads = workloads[1..]
        .iter()
        .map(|w| WorkloadSource { text: w.to_string(), format: "spec".into(), origin: "workload".into() })
        .collect();
    let r = run(&spec).unwrap_or_else(|e| panic!("{machine} {workloads:?} {policy}: {e}"));
    r.trace.expect("trace asked for")
}

/// `base` with `f` switched the other way.
fn toggled(base: &str, f: Feat) -> String {
    let on = parse_policy(base).unwrap().features.on(f);
    format!("{base}{}{}", if on { "-" } else { "+" }, f.name())
}

#[test]
fn every_feature_changes_a_run_or_is_accounted_for() {
    let mut inert = Vec::new();
    for &f in Feat::ALL {
        let Some(sc) = scenario(f) else {
            if let Some((_, file, func, why)) = UNIT_SHOWN.iter().find(|u| u.0 == f) {
                assert!(file.contains(func), "{}: unit test {func} not found", f.name());
                eprintln!("{}: shown by unit test `{func}` ({why})", f.name());
            } else if let Some((_, why)) = PENDING.iter().find(|u| u.0 == f) {
                eprintln!("PENDING {}: {why}", f.name());
            } else {
                let e = parse_policy(&format!("eevdf+{}", f.name()))
                    .expect_err("a feature with no scenario, no unit test and not pending must be refused");
                assert!(e.to_string().contains("no "), "{e}");
            }
            continue;
        };
        let a = trace(sc.machine, sc.workloads, sc.base);
        let b = trace(sc.machine, sc.workloads, &toggled(sc.base, f));
        if a == b {
            inert.push(format!("{} ({} {:?} {})", f.name(), sc.machine, sc.workloads, sc.base));
        }
    }
    assert!(inert.is_empty(), "features that changed nothing in their scenario: {inert:#?}");
}

#[test]
fn pending_features_stay_few() {
    // A guard against parking features here instead of finding their scenario.
    assert!(PENDING.len() <= 2, "{} pending features", PENDING.len());
}
