//! schedutil's iowait boost in the engine: the frequency an iowait wakeup
//! asks for, its decay, and what I/O waits change in a run.

use super::iowait::SCHED_CPUFREQ_IOWAIT;
use crate::api::{run, RunSpec};
use crate::ids::{CpuId, NSEC_PER_MSEC};
use crate::testkit::{inline_source, metric, run_spec, sim_from_toml};

/// One CPU, ten OPPs 200..2000 MHz, schedutil, HZ 250 (a 4 ms tick),
/// `rate_limit_us` 1000: decisions 1 ms apart are neither rate limited nor
/// a tick apart.
const TEN_OPP: &str = r#"
[machine]
name = "ten-opp"
hz = 250
[topology]
cores_per_cluster = 1
[[core_type]]
name = "t"
cores = "all"
capacity = 1024
nominal_freq_mhz = 2000
opps = [
  { freq_mhz = 200, power_mw = 20 }, { freq_mhz = 400, power_mw = 40 },
  { freq_mhz = 600, power_mw = 60 }, { freq_mhz = 800, power_mw = 80 },
  { freq_mhz = 1000, power_mw = 100 }, { freq_mhz = 1200, power_mw = 150 },
  { freq_mhz = 1400, power_mw = 200 }, { freq_mhz = 1600, power_mw = 260 },
  { freq_mhz = 1800, power_mw = 330 }, { freq_mhz = 2000, power_mw = 400 },
]
[freq_domain]
per = "package"
governor = "schedutil"
rate_limit_us = 1000
"#;

#[test]
fn an_iowait_wakeup_boosts_the_frequency_by_the_kernels_formula_and_the_boost_decays() {
    let mut s = sim_from_toml(TEN_OPP, 1, Default::default());
    let cpu = CpuId(0);
    let ms = NSEC_PER_MSEC;
    let at = |s: &mut crate::engine::Sim, t: u64, flags: u32| {
        s.now = t;
        s.cpufreq_update_util_flags(cpu, flags);
        s.cpufreq.policies[0].next_freq / 1000
    };
    // No utilisation: the lowest OPP.
    assert_eq!(at(&mut s, 10 * ms, 0), 200);
    // Each iowait wakeup: boost b (128, 256, 512, 1024 of 1024), then
    // next_freq = 1.25 x 2000 MHz x b / 1024 (map_util_perf, map_util_freq),
    // resolved up to an OPP: 312.5 -> 400, 625 -> 800, 1250 -> 1400, and
    // 1280 capped at the capacity (1024) -> 2000.
    assert_eq!(at(&mut s, 11 * ms, SCHED_CPUFREQ_IOWAIT), 400);
    assert_eq!(at(&mut s, 12 * ms, SCHED_CPUFREQ_IOWAIT), 800);
    assert_eq!(at(&mut s, 13 * ms, SCHED_CPUFREQ_IOWAIT), 1400);
    assert_eq!(at(&mut s, 14 * ms, SCHED_CPUFREQ_IOWAIT), 2000);
    // Updates without one halve it: 512, 256, 128, then gone.
    assert_eq!(at(&mut s, 15 * ms, 0), 1400);
    assert_eq!(at(&mut s, 16 * ms, 0), 800);
    assert_eq!(at(&mut s, 17 * ms, 0), 400);
    assert_eq!(at(&mut s, 18 * ms, 0), 200);
    // A boost left alone for more than a tick is dropped at once.
    at(&mut s, 19 * ms, SCHED_CPUFREQ_IOWAIT);
    assert_eq!(at(&mut s, 20 * ms, SCHED_CPUFREQ_IOWAIT), 800);
    assert_eq!(at(&mut s, 25 * ms, 0), 200);
}

/// A task computing 200 us then waiting 800 us, 400 times; `io` makes the
/// wait an I/O wait.
fn io_loop(io: bool) -> RunSpec {
    let w = format!(
        "[[task]]\nname = \"reader\"\nops = [ {{ loop = 400, do = [ {{ compute = \"200us\" }}, {{ sleep = \"800us\", io = {io} }} ] }} ]\n"
    );
    let mut s = run_spec(inline_source(TEN_OPP), &w, "eevdf", 1, false);
    s.workload_format = "toml".into();
    s.workload_origin = "io.toml".into();
    s
}

#[test]
fn iowait_sleeps_move_the_frequency_residency_up() {
    let (plain, io) = (run(&io_loop(false)).unwrap(), run(&io_loop(true)).unwrap());
    // The time-weighted mean frequency, MHz, from freq_residency.
    let mean_mhz = |r: &crate::api::RunResult| {
        r.metrics
            .iter()
            .filter_map(|m| m.name.strip_prefix("freq_residency.fd0.").map(|k| k.parse::<f64>().unwrap() * m.value))
            .sum::<f64>()
            / 1000.0
    };
    let at_400 = |r: &crate::api::RunResult| metric(r, "freq_residency.fd0.400000");
    // A 20% duty cycle keeps plain sleeps near the bottom (400 MHz most of
    // the time, mean ~580 MHz); each iowait wakeup comes within a tick of
    // the last, so the boost keeps doubling (halved again by the decisions
    // in between, as the kernel's is, those of the hooks at PELT period
    // ends and attaches only): 800 to 2000 MHz, mean ~1710 MHz.
    let (p, i) = (mean_mhz(&plain), mean_mhz(&io));
    assert!(i > 1.8 * p, "mean MHz: io {i:.0}, plain {p:.0}");
    assert!(at_400(&plain) > 0.5 && at_400(&io) < 0.05, "400 MHz: plain {}, io {}", at_400(&plain), at_400(&io));
    // Faster work, more power.
    assert!(metric(&io, "completion_time_s") < 0.8 * metric(&plain, "completion_time_s"));
    assert!(metric(&io, "power_mw") > metric(&plain, "power_mw"));
}

#[test]
fn a_bad_io_flag_names_its_key() {
    let m = crate::testkit::machine_from_toml(TEN_OPP);
    let w = "[[task]]\nname = \"r\"\nops = [ { sleep = \"1ms\", io = 3 } ]\n";
    let e = crate::workload::build_workload(w, "toml", "io.toml", &m).unwrap_err().to_string();
    assert!(e.contains("io.toml") && e.contains("ops[0].io") && e.contains("true or false"), "{e}");
    let w = "[[task]]\nname = \"r\"\nops = [ { compute = \"1ms\", io = true } ]\n";
    let e = crate::workload::build_workload(w, "toml", "io.toml", &m).unwrap_err().to_string();
    assert!(e.contains("ops[0].io"), "{e}");
}
