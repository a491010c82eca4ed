//! The frequency model on hand-built states and small runs.

use crate::api::run;
use crate::ids::{CpuId, NSEC_PER_MSEC};
use crate::testkit::{inline_source, metric, run_spec, sim_from_toml};
use crate::topology::{parse_machine, Governor};
use crate::trace::{read_ftrace, Event};

/// Two CPUs in one frequency domain, OPPs 1000 and 2000 MHz.
pub(super) fn two_opp(governor: &str, extra: &str) -> String {
    format!(
        r#"
[machine]
name = "two-opp"
hz = 1000
[topology]
cores_per_cluster = 2
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
opps = [ {{ freq_mhz = 1000, power_mw = 100 }}, {{ freq_mhz = 2000, power_mw = 400 }} ]
idle_states = [ {{ name = "WFI", exit_latency_us = 0, target_residency_us = 0, power_mw = 10 }} ]
[freq_domain]
per = "package"
{governor}
{extra}
[cost]
context_switch_ns = 0
wakeup_ns = 0
ipi_ns = 0
scan_ns_per_cpu = 0
"#
    )
}

#[test]
fn governors_start_where_they_should() {
    let s = sim_from_toml(&two_opp("governor = \"powersave\"", ""), 1, Default::default());
    assert_eq!(s.cpufreq.policies[0].cur_khz, 1_000_000);
    assert_eq!(s.freq_capacity(CpuId(0)), 512);
    assert_eq!(s.cpu_speed(CpuId(0)), 512);
    let s = sim_from_toml(&two_opp("governor = \"performance\"", ""), 1, Default::default());
    assert_eq!(s.cpufreq.policies[0].cur_khz, 2_000_000);
    assert_eq!(s.cpu_speed(CpuId(1)), 1024);
    // No governor: nominal, as before DVFS.
    let s = sim_from_toml(
        &two_opp("", "").replace("nominal_freq_mhz = 2000", "nominal_freq_mhz = 1500"),
        1,
        Default::default(),
    );
    assert_eq!(s.cpufreq.governor, None);
    assert_eq!(s.cpu_speed(CpuId(0)), 1024 * 1500 / 2000);
}

#[test]
fn bad_governor_keys_are_refused_by_name() {
    let e = parse_machine(&two_opp("governor = \"conservative\"", ""), "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("freq_domain.governor") && e.contains("schedutil"), "{e}");
    let one_opp = two_opp("governor = \"schedutil\"", "")
        .replace("opps = [ { freq_mhz = 1000, power_mw = 100 }, { freq_mhz = 2000, power_mw = 400 } ]", "");
    let e = parse_machine(&one_opp, "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("freq_domain.governor") && e.contains("OPP tables"), "{e}");
    let e = parse_machine(&two_opp("", "transition_latency_us = -3"), "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("freq_domain.transition_latency_us"), "{e}");
    let neg = two_opp("", "").replace("power_mw = 400", "power_mw = -4");
    let e = parse_machine(&neg, "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("core_type[0].opps[1].power_mw"), "{e}");
    let down = two_opp("", "").replace("freq_mhz = 2000, power_mw = 400", "freq_mhz = 900, power_mw = 400");
    let e = parse_machine(&down, "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("opps[1].freq_mhz") && e.contains("ascending"), "{e}");
    // rate_limit_us defaults to cpufreq_policy_transition_delay_us.
    let m = parse_machine(&two_opp("governor = \"schedutil\"", "transition_latency_us = 200"), "toml", "m").unwrap();
    assert_eq!(m.cpufreq.governor, Some(Governor::Schedutil));
    assert_eq!(m.cpufreq.rate_limit_ns, 300_000);
    let m = parse_machine(&two_opp("governor = \"schedutil\"", ""), "toml", "m").unwrap();
    assert_eq!(m.cpufreq.rate_limit_ns, 1_000_000);
}

/// One task computing `ms` ms of work (at full speed of a capacity-1024 CPU
/// at its highest frequency) on `toml`: its completion time, seconds.
fn compute_time(toml: &str, governor: Option<&str>, ms: u64) -> f64 {
    let mut spec = run_spec(inline_source(toml), &format!("sieve:threads=1,work={ms}ms"), "eevdf", 1, false);
    spec.options.governor = governor.map(str::to_string);
    metric(&run(&spec).unwrap(), "completion_time_s")
}

#[test]
fn work_runs_slower_at_a_lower_frequency() {
    let m = two_opp("", "");
    let full = compute_time(&m, Some("performance"), 10);
    let half = compute_time(&m, Some("powersave"), 10);
    assert!((half / full - 2.0).abs() < 0.01, "performance {full} s, powersave {half} s");
    // performance on a machine whose nominal is its highest OPP: as without a governor.
    assert_eq!(full, compute_time(&m, None, 10));
}

#[test]
fn a_frequency_change_mid_segment_moves_its_end() {
    let mut s = sim_from_toml(&two_opp("governor = \"powersave\"", ""), 1, Default::default());
    crate::testkit::busy(&mut s, 0, 0);
    s.tasks[0].work_left_wu = 4 * NSEC_PER_MSEC * crate::engine::cost::WU_PER_NS;
    s.restart_segment(CpuId(0));
    // At 1000 MHz 4 ms of work take 8 ms; after 2 ms (1 ms of work done),
    // the switch to 2000 MHz leaves 3 ms of work at full speed.
    s.now = 2 * NSEC_PER_MSEC;
    s.cpufreq_set_freq(0, 2_000_000);
    assert_eq!(s.tasks[0].work_left_wu, 3 * NSEC_PER_MSEC * crate::engine::cost::WU_PER_NS);
    assert_eq!(s.rqs[0].seg_speed, 1024);
    assert_eq!(s.cpufreq.policies[0].transitions, 1);
}

#[test]
fn pelt_clock_runs_at_the_frequency() {
    let mut s = sim_from_toml(&two_opp("governor = \"powersave\"", ""), 1, Default::default());
    crate::testkit::busy(&mut s, 0, 0);
    s.update_rq_clock(CpuId(0));
    let c0 = s.rqs[0].clock_pelt.rq_clock_pelt();
    s.now += 4 * NSEC_PER_MSEC;
    s.update_rq_clock(CpuId(0));
    let c1 = s.rqs[0].clock_pelt.rq_clock_pelt();
    // arch_scale_freq_capacity = 512: the PELT clock advances at half speed.
    assert_eq!(c1 - c0, 2 * NSEC_PER_MSEC);
}

/// Metrics and trace of one task running 1 ms in every 10 ms for 600 ms
/// (a hand-built program), under `features`, with the invariant checker on.
pub(crate) fn duty_cycle_run(toml: &str, features: &[crate::features::Feat]) -> (Vec<crate::api::MetricValue>, String) {
    use crate::workload::Action;
    let tasks =
        crate::testkit::script_tasks(2, &[Action::Compute(NSEC_PER_MSEC), Action::Sleep(9 * NSEC_PER_MSEC)], 60);
    let mut f = crate::features::Features::default();
    for &x in features {
        f.set(x, true);
    }
    traced_run(toml, &crate::testkit::script_workload(tasks), f)
}

/// Metrics and ftrace text of workload `w` run to its end on the inline
/// machine `toml` under `features`, with the invariant checker on.
pub(crate) fn traced_run(
    toml: &str,
    w: &crate::workload::Workload,
    features: crate::features::Features,
) -> (Vec<crate::api::MetricValue>, String) {
    let mut cfg = crate::testkit::sim_config(features);
    cfg.trace = true;
    cfg.check_invariants = true;
    let mut s = crate::testkit::sim_with(toml, w, cfg);
    s.run(u64::MAX).unwrap();
    let end = s.now;
    let names = s.tasks.iter().map(|t| t.name.clone()).collect();
    let prios = s.tasks.iter().map(|t| t.prio).collect();
    let events = s.trace.take().unwrap();
    let text = crate::trace::ftrace::write_ftrace_tasks(names, prios, &[], s.machine.nr_cpus(), &events);
    (s.collector.finish(end), text)
}

fn m_of(ms: &[crate::api::MetricValue], name: &str) -> f64 {
    ms.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
}

#[test]
fn schedutil_follows_utilisation_and_writes_cpu_frequency() {
    let m = two_opp("governor = \"schedutil\"", "transition_latency_us = 100");
    let mut spec = run_spec(inline_source(&m), "sieve:threads=1,work=300ms", "eevdf", 1, true);
    spec.options.check_invariants = true;
    let busy = run(&spec).unwrap();
    // A new task starts with a partial util_avg (post_init_entity_util_avg),
    // so the domain may start low; the always-busy CPU then stays at the top.
    let top = metric(&busy, "freq_residency.fd0.2000000");
    assert!(top > 0.95, "an always-busy CPU runs at the top, got {top}");
    // A task that runs 1 ms in 10: low utilisation, mostly the lower OPP.
    let (r, text) = duty_cycle_run(&m, &[]);
    let low = m_of(&r, "freq_residency.fd0.1000000");
    assert!(low > 0.5, "a 10% duty cycle should spend most of its time at the lower OPP, got {low}");
    assert!(m_of(&r, "freq_transitions") >= 1.0);
    // The per-CPU split adds up to the total.
    let cpus = m_of(&r, "energy_j.cpu0") + m_of(&r, "energy_j.cpu1");
    assert!((cpus - m_of(&r, "energy_j")).abs() < 1e-12 * cpus.max(1.0), "{cpus} vs {}", m_of(&r, "energy_j"));
    assert!(text.contains("cpu_frequency: state=1000000 cpu_id=0"), "no cpu_frequency line");
    let parsed = read_ftrace(&text, "t").unwrap();
    let n = parsed.events.iter().filter(|e| matches!(e.ev, Event::CpuFrequency { .. })).count();
    assert_eq!(n as f64, 2.0 * m_of(&r, "freq_transitions"), "one line per CPU of the policy");
}

#[test]
fn no_governor_no_energy_metrics() {
    let spec = run_spec(inline_source(&two_opp("", "")), "sieve:threads=1,work=5ms", "eevdf", 1, false);
    let r = run(&spec).unwrap();
    assert!(r.metrics.iter().all(|m| !m.name.starts_with("energy") && !m.name.starts_with("freq_")));
}

/// Frequency residencies and energies of hackbench on hikey960 under
/// schedutil, without TTWU_QUEUE (the waker enqueues on the target itself,
/// so wakeups within a cluster are remote cpufreq updates), plus `extra`.
fn hikey_remote(extra: &str) -> Vec<f64> {
    let w = "hackbench:groups=1,fds=8,loops=100,buf=8";
    let mut spec =
        run_spec(crate::testkit::preset_source("hikey960"), w, &format!("eevdf-TTWU_QUEUE{extra}"), 1, false);
    spec.options.governor = Some("schedutil".into());
    let r = run(&spec).unwrap();
    r.metrics
        .iter()
        .filter(|m| m.name.starts_with("freq_residency.") || m.name.starts_with("energy_j"))
        .map(|m| m.value)
        .collect()
}

#[test]
fn remote_cpufreq_update_changes_freq_residency() {
    let off = hikey_remote("");
    let on = hikey_remote("+remote_cpufreq_update");
    assert_eq!(off, hikey_remote(""), "same spec and seed, same frequencies and energy");
    assert_eq!(off.len(), on.len());
    assert_ne!(off, on, "remote updates at once must move some domain's OPP residency and the energy");
}

#[test]
fn remote_enqueue_updates_the_policy_only_with_the_feature() {
    for (feature, want) in [(false, 1_000_000), (true, 2_000_000)] {
        let mut f = crate::features::Features::default();
        f.set(crate::features::Feat::remote_cpufreq_update, feature);
        let mut s = sim_from_toml(&two_opp("governor = \"schedutil\"", ""), 1, f);
        s.cpufreq_set_freq(0, 1_000_000);
        s.cpufreq.policies[0].need_freq_update = false;
        s.cpufreq.policies[0].next_freq = 1_000_000;
        s.now = 10 * NSEC_PER_MSEC;
        // CPU 1 became busy (util 800 -> 1.25 x 800 / 1024 x 2000 MHz = 1953 MHz -> 2000),
        // the enqueue done by CPU 0 of the same policy.
        s.rqs[1].cfs_avg.util_avg = 800;
        s.cpufreq.this_cpu = Some(CpuId(0));
        s.cpufreq_update_util(CpuId(1));
        assert_eq!(s.cpufreq.policies[0].cur_khz, want, "remote_cpufreq_update={feature}");
        // The target's own next update takes it anyway.
        s.cpufreq.this_cpu = None;
        s.cpufreq_update_util(CpuId(1));
        assert_eq!(s.cpufreq.policies[0].cur_khz, 2_000_000);
    }
}

#[test]
fn rate_limit_and_slow_path() {
    let mut s =
        sim_from_toml(&two_opp("governor = \"schedutil\"", "transition_latency_us = 200"), 1, Default::default());
    s.cpufreq.policies[0].need_freq_update = false;
    s.now = 5 * NSEC_PER_MSEC;
    // Idle: the request drops to the lowest OPP, in effect after 200 us.
    s.cpufreq_update_util(CpuId(0));
    assert_eq!(s.cpufreq.policies[0].next_freq, 1_000_000);
    assert_eq!(s.cpufreq.policies[0].cur_khz, 2_000_000);
    assert!(s.cpufreq.policies[0].work_in_progress);
    s.now += 200_000;
    s.sugov_work(0);
    assert_eq!(s.cpufreq.policies[0].cur_khz, 1_000_000);
    // Within rate_limit_us (300 us) of the last decision nothing changes.
    s.rqs[0].cfs_avg.util_avg = 900;
    s.now = 5 * NSEC_PER_MSEC + 250_000;
    s.cpufreq_update_util(CpuId(0));
    assert_eq!(s.cpufreq.policies[0].next_freq, 1_000_000);
    s.now = 5 * NSEC_PER_MSEC + 300_000;
    s.cpufreq_update_util(CpuId(0));
    assert_eq!(s.cpufreq.policies[0].next_freq, 2_000_000);
}

#[test]
fn remote_cpufreq_update_needs_schedutil() {
    let spec = run_spec(
        crate::testkit::preset_source("hikey960"),
        "hackbench:groups=1,loops=5",
        "eevdf+remote_cpufreq_update",
        1,
        false,
    );
    let e = run(&spec).unwrap_err().to_string();
    assert!(e.contains("remote_cpufreq_update") && e.contains("schedutil"), "{e}");
}

#[test]
fn slow_path_switches_through_the_sugov_thread() {
    // A latency without fast_switch: the sugov:0 thread switches.
    let m = two_opp("governor = \"schedutil\"", "transition_latency_us = 200\nsugov_work_us = 30");
    let (r, text) = duty_cycle_run(&m, &[]);
    assert!(m_of(&r, "freq_transitions") >= 1.0);
    assert!(m_of(&r, "rt_pct") > 0.0, "the thread's CPU time is RT time");
    // Every frequency change comes right after sugov:0 ran its switch
    // (30 us of work, then 200 us of transition).
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| l.contains("cpu_frequency:")).expect("a frequency change");
    assert!(lines[..first].iter().any(|l| l.contains("next_comm=sugov:0")), "sugov:0 never ran before the switch");
    // With fast_switch the thread does not exist.
    let fast = two_opp("governor = \"schedutil\"", "transition_latency_us = 200\nfast_switch = true");
    let (r2, text2) = duty_cycle_run(&fast, &[]);
    assert!(!text2.contains("sugov:"));
    assert_eq!(m_of(&r2, "rt_pct"), 0.0);
    let e = parse_machine(&two_opp("", "fast_switch = 1"), "toml", "m.toml").unwrap_err().to_string();
    assert!(e.contains("freq_domain.fast_switch"), "{e}");
}

/// The shortcuts of schedutil's request (`sugov_next_freq_khz`: the walk
/// that stops at a CPU asking for `cpuinfo.max_freq`, the lower-bound test,
/// the skipped iowait walk; cpufreq/README.md, Cost) are compared with the
/// direct computation at every hook under `cfg(test)`. Here on the two
/// presets the cost is measured on: per-core SMT policies reaching into
/// turbo (intel-4n-192), four-CPU clusters with EAS (hikey960).
#[test]
fn schedutil_shortcuts_agree_with_the_direct_request_on_the_bench_presets() {
    for preset in ["intel-4n-192", "hikey960"] {
        let w = "schbench:runtime=100ms";
        let mut spec = run_spec(crate::testkit::preset_source(preset), w, "eevdf", 0, false);
        spec.options.governor = Some("schedutil".into());
        let r = run(&spec).unwrap();
        assert!(r.metrics.iter().any(|m| m.name == "freq_transitions" && m.value > 0.0), "{preset}: no transition");
    }
}
