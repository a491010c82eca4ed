//! intel_pstate (active), ondemand on per-CPU policies (passive
//! intel_cpufreq), and turbo: decisions on hand-built states and small runs.

use super::intel_pstate::{get_target_pstate, PstateLimits, Sample};
use super::ondemand::{dbs_load, od_next_freq, DbsCpu};
use super::tests::duty_cycle_run;
use crate::ids::{CpuId, NSEC_PER_MSEC};
use crate::testkit::sim_from_toml;
use crate::topology::parse_machine;

/// Two cores of one package (one CPU each), P-states 1000..2000 MHz in
/// 100 MHz steps, nominal 2000, a C1/C6 idle table, one domain per core.
fn pstate_machine(governor: &str, extra: &str) -> String {
    let opps: Vec<String> = (10..=20).map(|r| format!("{{ freq_mhz = {}, power_mw = {} }}", r * 100, r * 10)).collect();
    format!(
        r#"
[machine]
name = "pstate"
hz = 250
[topology]
cores_per_cluster = 2
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
opps = [ {} ]
idle_states = [
  {{ name = "C1", exit_latency_us = 2, target_residency_us = 2 }},
  {{ name = "C6", exit_latency_us = 100, target_residency_us = 300 }},
]
[freq_domain]
per = "core"
governor = "{governor}"
{extra}
[cost]
context_switch_ns = 0
wakeup_ns = 0
ipi_ns = 0
scan_ns_per_cpu = 0
"#,
        opps.join(", ")
    )
}

#[test]
fn get_target_pstate_is_the_kernels_formula() {
    let lim = PstateLimits { min: 10, max_physical: 20, turbo: 20 };
    // Busy half the period at 1000 MHz (aperf/mperf = 1/2 of base):
    // 20 + 20/4 = 25, x 128/256 = 12; the average P-state 10 is lower.
    let half = Sample { aperf: 5 * NSEC_PER_MSEC * 1000, mperf: 5 * NSEC_PER_MSEC, tsc: 10 * NSEC_PER_MSEC };
    assert_eq!(get_target_pstate(half, lim, 2000), 12);
    // The same busy share at 2000 MHz: the average P-state 20 is higher,
    // so half the difference is added: 12 + (20 - 12) / 2 = 16.
    let fast = Sample { aperf: 5 * NSEC_PER_MSEC * 2000, ..half };
    assert_eq!(get_target_pstate(fast, lim, 2000), 16);
    // Almost idle: the floor is min_pstate.
    let idle = Sample { aperf: 1000 * 1000, mperf: 1000, tsc: 10 * NSEC_PER_MSEC };
    assert_eq!(get_target_pstate(idle, lim, 2000), 10);
    // Always busy: 25, above turbo (clamped later by prepare_request).
    let full = Sample { aperf: 10 * NSEC_PER_MSEC * 2000, mperf: 10 * NSEC_PER_MSEC, tsc: 10 * NSEC_PER_MSEC };
    assert_eq!(get_target_pstate(full, lim, 2000), 25);
}

#[test]
fn intel_pstate_samples_every_10ms_from_the_local_hook_only() {
    let mut s = sim_from_toml(&pstate_machine("intel_pstate", ""), 1, Default::default());
    // Starts at the lowest P-state.
    assert_eq!(s.cpufreq.policies[0].cur_khz, 1_000_000);
    let c0 = CpuId(0);
    s.counters_set_c0(c0, true);
    s.now = 10 * NSEC_PER_MSEC;
    s.cpufreq_update_util(c0); // the first sample only primes the counters
    assert_eq!(s.cpufreq.pstate[0].sample_time, 10 * NSEC_PER_MSEC);
    s.now = 15 * NSEC_PER_MSEC;
    s.counters_set_c0(c0, false); // busy 5 ms of the next 10
    s.now = 19 * NSEC_PER_MSEC;
    s.cpufreq_update_util(c0); // 9 ms: too early
    assert_eq!(s.cpufreq.pstate[0].current_pstate, 0);
    // A remote hook does nothing.
    s.now = 20 * NSEC_PER_MSEC;
    s.cpufreq.this_cpu = Some(CpuId(1));
    s.cpufreq_update_util(c0);
    assert_eq!(s.cpufreq.pstate[0].current_pstate, 0);
    s.cpufreq.this_cpu = None;
    s.cpufreq_update_util(c0);
    assert_eq!(s.cpufreq.pstate[0].current_pstate, 12);
    // No transition latency in this machine: in effect at once.
    assert_eq!(s.cpufreq.policies[0].cur_khz, 1_200_000);
    assert_eq!(s.cpufreq.cpu_req_khz[0], 1_200_000);
}

/// The frequency (kHz) `toml`'s domain 0 spends most time at, with one
/// task computing `compute_ms` (full-speed work) then sleeping `sleep_ms`,
/// 60 times; and the trace.
fn main_freq(toml: &str, compute_ms: u64, sleep_ms: u64) -> (u32, String) {
    use crate::workload::Action;
    let acts = [Action::Compute(compute_ms * NSEC_PER_MSEC), Action::Sleep(sleep_ms * NSEC_PER_MSEC)];
    let w = crate::testkit::script_workload(crate::testkit::script_tasks(1, &acts, 60));
    let (r, text) = super::tests::traced_run(toml, &w, Default::default());
    let best = r
        .iter()
        .filter_map(|m| m.name.strip_prefix("freq_residency.fd0.").map(|f| (m.value, f.parse::<u32>().unwrap())))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
    (best.1, text)
}

#[test]
fn a_per_cpu_request_waits_for_the_transition_latency() {
    // intel_cpufreq's 20 us: the request is pending until the transition
    // event, and the core runs at the highest request of its threads.
    let m = pstate_machine("intel_pstate", "transition_latency_us = 20");
    let mut s = sim_from_toml(&m, 1, Default::default());
    s.cpufreq_cpu_request(CpuId(0), 1_500_000);
    assert_eq!(s.cpufreq.policies[0].cur_khz, 1_000_000);
    assert_eq!(s.cpufreq.policies[0].pending_khz, Some(1_500_000));
    // A newer request during the transition replaces it (one event).
    s.cpufreq_cpu_request(CpuId(0), 1_700_000);
    s.cpufreq_transition_done(0);
    assert_eq!(s.cpufreq.policies[0].cur_khz, 1_700_000);
    assert_eq!(s.cpufreq.policies[0].pending_khz, None);
    // Without a latency: at once.
    let mut s = sim_from_toml(&pstate_machine("intel_pstate", ""), 1, Default::default());
    s.cpufreq_cpu_request(CpuId(1), 1_300_000);
    assert_eq!(s.cpufreq.policies[1].cur_khz, 1_300_000);
}

#[test]
fn intel_pstate_and_schedutil_choose_differently_on_one_load() {
    // A task busy 6 ms of work in every ~10 ms, on a 250 Hz machine.
    let (pst, text) = main_freq(&pstate_machine("intel_pstate", ""), 6, 4);
    let (su, _) = main_freq(&pstate_machine("schedutil", ""), 6, 4);
    // At f MHz the 6 ms of work take 6 x 2000 / f ms, then 4 ms of sleep.
    // schedutil sees frequency-invariant util: 6 / (12000 / f + 4) of
    // 1024, and asks 1.25 x 2000 x that: at 1100 MHz util is 0.40 and the
    // request 1007 MHz, whose lowest OPP at or above is 1100: a fixed point.
    // intel_pstate sees busy_frac (12000 / f) / (12000 / f + 4) and asks
    // 25 x busy_frac: at 1600 MHz busy_frac is 0.65 and the request 16.3,
    // truncated to 16: its fixed point, higher, because busy time grows as
    // the frequency drops where invariant util does not.
    assert_eq!((pst, su), (1_600_000, 1_100_000), "intel_pstate mostly at {pst}, schedutil at {su}");
    // Every intel_pstate frequency is a P-state (a multiple of 100 MHz).
    for l in text.lines().filter(|l| l.contains("cpu_frequency:")) {
        let khz: u32 = l.split("state=").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert_eq!(khz % 100_000, 0, "{l}");
    }
}

#[test]
fn ondemand_load_and_frequency_are_the_kernels() {
    let mut d = DbsCpu::new(8 * NSEC_PER_MSEC);
    assert_eq!(dbs_load(&mut d, 8000, 2000), 75);
    assert_eq!(d.prev_load, 75);
    // Idle for more than two sampling periods: the last load once, then 0.
    assert_eq!(dbs_load(&mut d, 20_000, 19_000), 75);
    assert_eq!(d.prev_load, 0);
    assert_eq!(dbs_load(&mut d, 20_000, 19_000), 5);
    // 75% load: min + 75% of the range; above 80%: the maximum.
    assert_eq!(od_next_freq(75, 1_000_000, 1_000_000, 2_000_000), (Some(1_750_000), 1));
    assert_eq!(od_next_freq(81, 1_000_000, 1_000_000, 2_000_000), (Some(2_000_000), 1));
    assert_eq!(od_next_freq(81, 2_000_000, 1_000_000, 2_000_000), (None, 1));
}

#[test]
fn ondemand_samples_through_a_per_cpu_kworker() {
    // A transition delay of 500 us (intel_cpufreq's) and HZ=250: the
    // sampling rate is 2 ticks, 8 ms.
    let m = pstate_machine("ondemand", "transition_latency_us = 20\nrate_limit_us = 500\nfast_switch = true");
    let machine = parse_machine(&m, "toml", "m").unwrap();
    assert_eq!(super::ondemand::sampling_rate_ns(&machine), 8 * NSEC_PER_MSEC);
    let (r, text) = duty_cycle_run(&m, &[]);
    // The kworker of the task's CPU wakes for every sample, and a
    // frequency change follows its run by the transition latency.
    let wakeups = text.lines().filter(|l| l.contains("sched_wakeup:") && l.contains("comm=kworker/")).count();
    assert!(wakeups >= 20, "600 ms with samples every >= 8 ms: got {wakeups} kworker wakeups");
    assert!(r.iter().any(|m| m.name == "freq_transitions" && m.value >= 1.0));
    // schedutil on the same driver switches from the scheduler's context:
    // no kworker, no kthread.
    let su = pstate_machine("schedutil", "transition_latency_us = 20\nrate_limit_us = 500\nfast_switch = true");
    let (_, text2) = duty_cycle_run(&su, &[]);
    assert!(!text2.contains("kworker/") && !text2.contains("sugov:"));
}

#[test]
fn turbo_ceiling_follows_active_cores() {
    let m = pstate_machine("performance", "turbo_mhz = [2400, 2200]\nturbo_inactive_state = \"C6\"");
    let mut s = sim_from_toml(&m, 1, Default::default());
    // performance asks for the one-core ceiling; nothing is active yet.
    assert_eq!(s.cpufreq.policies[0].req_khz, 2_400_000);
    assert_eq!(s.cpufreq.policies[0].cur_khz, 2_400_000);
    assert!(s.cpu_speed(CpuId(0)) > 1024, "turbo runs above the nominal speed");
    s.turbo_note_state(CpuId(0), None);
    assert_eq!(s.cpufreq.policies[1].cur_khz, 2_400_000);
    // The second core wakes: both cores drop to the two-core ceiling.
    s.turbo_note_state(CpuId(1), None);
    assert_eq!((s.cpufreq.policies[0].cur_khz, s.cpufreq.policies[1].cur_khz), (2_200_000, 2_200_000));
    // C1 keeps the core active; C6 (index 1) does not.
    s.turbo_note_state(CpuId(1), Some(0));
    assert_eq!(s.cpufreq.policies[0].cur_khz, 2_200_000);
    s.turbo_note_state(CpuId(1), Some(1));
    assert_eq!(s.cpufreq.policies[0].cur_khz, 2_400_000);
    // Without a turbo table: the highest OPP, whatever is active.
    let mut s = sim_from_toml(&pstate_machine("performance", ""), 1, Default::default());
    s.turbo_note_state(CpuId(0), None);
    s.turbo_note_state(CpuId(1), None);
    assert_eq!(s.cpufreq.policies[0].cur_khz, 2_000_000);
    assert!(s.cpufreq.turbo.is_none());
}

#[test]
fn schedutil_asks_for_turbo_through_cpuinfo_max() {
    // An always-busy task: util near 1024, 1.25 x 2400 x util/1024 is above
    // the one-core ceiling: the request is 2400 MHz, granted by turbo (after
    // the ramp of a new task's util_avg).
    let m = pstate_machine("schedutil", "turbo_mhz = [2400, 2200]");
    let mut spec =
        crate::testkit::run_spec(crate::testkit::inline_source(&m), "sieve:threads=1,work=1000ms", "eevdf", 1, false);
    spec.options.check_invariants = true;
    let r = crate::api::run(&spec).unwrap();
    let top = crate::testkit::metric(&r, "freq_residency.fd0.2400000");
    assert!(top > 0.9, "an always-busy CPU runs at the one-core turbo ceiling, got {top}");
}

#[test]
fn turbo_on_a_run_costs_frequency_when_spreading() {
    // Two tasks of 20 ms of work: spread on the two cores they run at the
    // two-core ceiling; one task alone runs at the one-core ceiling.
    let m = pstate_machine("performance", "turbo_mhz = [2400, 2200]");
    let time = |threads: u32| {
        let mut spec = crate::testkit::run_spec(
            crate::testkit::inline_source(&m),
            &format!("sieve:threads={threads},work=20ms"),
            "eevdf",
            1,
            false,
        );
        spec.options.check_invariants = true;
        crate::testkit::metric(&crate::api::run(&spec).unwrap(), "completion_time_s")
    };
    let (one, two) = (time(1), time(2));
    // The sieve splits its work: 20 ms (at 2000 MHz) alone at the one-core
    // ceiling takes 20 x 2000 / 2400 = 16.7 ms; 10 ms each on both cores
    // at the two-core ceiling take 10 x 2000 / 2200 = 9.1 ms.
    assert!((one * 1e3 - 16.67).abs() < 0.2, "one task: {one} s");
    assert!((two * 1e3 - 9.09).abs() < 0.2, "two tasks: {two} s");
}

#[test]
fn bad_turbo_keys_are_refused_by_name() {
    let err =
        |extra: &str| parse_machine(&pstate_machine("performance", extra), "toml", "m.toml").unwrap_err().to_string();
    let e = err("turbo_mhz = [2400]");
    assert!(e.contains("m.toml") && e.contains("freq_domain.turbo_mhz") && e.contains("one entry per core"), "{e}");
    let e = err("turbo_mhz = [2200, 2400]");
    assert!(e.contains("turbo_mhz[1]") && e.contains("non-increasing"), "{e}");
    let e = err("turbo_mhz = [2400, 1900]");
    assert!(e.contains("turbo_mhz[1]") && e.contains("above the highest OPP"), "{e}");
    let e = err("turbo_mhz = [2400, 2200]\nturbo_inactive_state = \"C7\"");
    assert!(e.contains("freq_domain.turbo_inactive_state") && e.contains("C1, C6"), "{e}");
    let e = err("turbo_inactive_state = \"C6\"");
    assert!(e.contains("freq_domain.turbo_inactive_state") && e.contains("turbo_mhz"), "{e}");
    let e = parse_machine(&pstate_machine("ondemand_x", ""), "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("intel_pstate") && e.contains("ondemand"), "{e}");
}
