//! The one registry of metrics (house rule 14). Every metric a run reports is
//! listed here once, with its unit, its better direction and a description;
//! pandas columns, `--help-metrics` and the collector all use these names.
//!
//! Units: `s` seconds, `1/s` per second, `us` microseconds, `count` a plain
//! count over the measured window, `pct` percent of total CPU time (0..100),
//! `cpus` a number of CPUs.

use crate::api::{Better, MetricValue};

/// One metric: name, unit, better direction, one-paragraph description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricDef {
    /// Column name, e.g. `wakeup_latency_p99_us`.
    pub name: &'static str,
    /// Unit: `s`, `1/s`, `us`, `count`, `pct` or `cpus`.
    pub unit: &'static str,
    /// Whether lower or higher is better.
    pub better: Better,
    /// What it measures, for `--help-metrics`.
    pub description: &'static str,
}

const fn m(name: &'static str, unit: &'static str, better: Better, description: &'static str) -> MetricDef {
    MetricDef { name, unit, better, description }
}

use Better::{Higher, Lower, Neither};

/// Every metric, in reporting order. [`crate::metrics::Collector::finish`]
/// returns values in this order.
pub const METRICS: &[MetricDef] = &[
    m("completion_time_s", "s", Lower,
      "Time of the last task exit when every task exited, else the end of the run (absolute, warm-up included)."),
    m("requests_per_s", "1/s", Higher,
      "Requests completed (RequestDone marks) after warm-up, divided by the measured window. Absent (with the request latencies) for a workload that makes no request marks."),
    m("request_latency_p50_us", "us", Lower,
      "Median request latency: RequestDone time minus the request's start time carried in the mark. Absent for a workload without request marks."),
    m("request_latency_p99_us", "us", Lower, "99th percentile of request latency. Absent for a workload without request marks."),
    m("wakeup_latency_p50_us", "us", Lower,
      "Median time from sched_waking (sched_wakeup when the trace has no sched_waking) to the wakee's sched_switch in. Fork wakeups (sched_wakeup_new) are excluded."),
    m("wakeup_latency_p99_us", "us", Lower,
      "99th percentile of wakeup latency. The whole distribution follows the registry's metrics as wakeup_latency_dist.pQ (Q = 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100), absent without wakeups; schedlab report draws its CDF."),
    m("app_wakeup_latency_p50_us", "us", Lower,
      "Median wakeup latency as the benchmark itself measures it (WakeDone marks; schbench's 'Wakeup Latencies'): from the benchmark's own start timestamp, carried in the mark, to the woken task's return from its wait. schbench takes the start once per wake batch, in the message thread before it wakes the first worker, so a worker's latency includes the wakes of the workers ahead of it. As schbench: whole microseconds (the difference of two truncated microsecond timestamps), zero differences not recorded, nearest-rank percentile. Absent when the workload makes no WakeDone marks."),
    m("app_wakeup_latency_p99_us", "us", Lower, "99th percentile of app_wakeup_latency (schbench's starred p99). Absent without WakeDone marks."),
    m("runqueue_delay_mean_us", "us", Lower,
      "Mean time a task spent runnable but not running: from its wakeup (or its preemption) to its next switch in."),
    m("runqueue_delay_p99_us", "us", Lower, "99th percentile of runqueue delay."),
    m("context_switches", "count", Neither, "sched_switch events after warm-up."),
    m("migrations", "count", Neither, "sched_migrate_task events between two different CPUs after warm-up."),
    m("migrations_smt", "count", Neither, "Migrations between SMT siblings of one core."),
    m("migrations_cluster", "count", Neither, "Migrations between cores of one cluster."),
    m("migrations_llc", "count", Neither, "Migrations between clusters (or cores, without clusters) of one LLC."),
    m("migrations_package", "count", Neither, "Migrations between LLCs of one NUMA node."),
    m("migrations_node", "count", Neither, "Migrations between NUMA nodes."),
    m("wakeups", "count", Neither, "sched_wakeup events (not sched_wakeup_new) after warm-up."),
    m("migrations_per_wakeup", "ratio", Neither,
      "migrations / wakeups: how often a task changes CPU per wakeup (at wakeup or by balancing). Absent without wakeups."),
    m("wake_prev_cpu_pct", "pct", Neither,
      "Wakeups of a task that has run before that put it on the CPU it last ran on, in % of such wakeups (the topology-aware placement fractions below sum to 100). Absent without such wakeups."),
    m("wake_smt_sibling_pct", "pct", Neither, "Such wakeups onto an SMT sibling of the CPU the task last ran on, in %."),
    m("wake_same_llc_pct", "pct", Neither, "Such wakeups onto another core of the LLC the task last ran in, in %."),
    m("wake_other_llc_pct", "pct", Neither, "Such wakeups onto another LLC of the same NUMA node, in %."),
    m("wake_other_node_pct", "pct", Neither, "Such wakeups onto another NUMA node, in %."),
    m("wake_on_waker_cpu_pct", "pct", Neither,
      "Wakeups with a known waker CPU (the CPU of the sched_waking line) that put the wakee on the waker's CPU, in %. Absent without such wakeups."),
    m("place_target", "count", Neither, "Wakeup placements: select_idle_sibling found the target idle."),
    m("place_prev", "count", Neither, "Wakeup placements: prev_cpu was idle and shares the LLC."),
    m("place_kthread_stack", "count", Neither, "Wakeup placements: per-CPU kthread wakee stacked on the waker's CPU."),
    m("place_recent", "count", Neither, "Wakeup placements: recent_used_cpu was idle."),
    m("place_idle_capacity", "count", Neither, "Wakeup placements by select_idle_capacity (asymmetric capacity)."),
    m("place_idle_smt", "count", Neither, "Wakeup placements by select_idle_smt."),
    m("place_idle_core", "count", Neither, "Wakeup placements: select_idle_core found a whole idle core."),
    m("place_idle_cpu", "count", Neither, "Wakeup placements: select_idle_cpu found an idle CPU."),
    m("place_fallback", "count", Neither, "Wakeup placements: nothing idle was found, the target was used."),
    m("place_slow_path", "count", Neither, "Wakeup placements by the slow path (sched_balance_find_dst_cpu)."),
    m("place_policy", "count", Neither, "Wakeup placements made by a peer policy's own rule."),
    m("place_forced", "count", Neither, "Wakeup placements where only one CPU was allowed."),
    m("scanned_per_wakeup_mean", "cpus", Lower,
      "Mean number of CPUs the idle search examined per placement decision (schedlab_place events)."),
    m("newidle_balance_calls", "count", Neither, "Newly-idle balance events (one per schedlab_balance kind=newidle)."),
    m("newidle_balance_pulls", "count", Neither, "Tasks pulled by newly-idle balancing."),
    m("periodic_balance_pulls", "count", Neither, "Tasks pulled by periodic (tick) balancing."),
    m("nohz_balance_pulls", "count", Neither, "Tasks pulled by NOHZ idle balancing on behalf of tick-stopped CPUs."),
    m("active_balance_pulls", "count", Neither, "Running tasks pushed by active balancing."),
    m("avg_idle_error_us", "us", Lower,
      "Mean |avg_idle - reference| over the moments a newly idle CPU reads avg_idle to budget its newidle balance (schedlab_avg_idle events, after warm-up). The reference is what avg_idle would be if every true idle period were sampled: per CPU, the kernel's update_avg (1/8 EWMA) over each idle period seen in sched_switch (switch to idle to switch to a task, the period's start seen in the stream, zero-length ones dropped), capped after each update at the cap the CPU last reported (2 x max_idle_balance_cost), starting at the kernel's initial 2 x sysctl_sched_migration_cost. The same weight and cap make the error the cost of missed or stale samples alone, not of EWMA lag or the cap. 0 when the stream has no schedlab_avg_idle events (kernel traces)."),
    m("idle_pct", "pct", Neither,
      "Idle CPU time over total CPU time (nr_cpus x measured window). With a machine's idle states, the time in each state follows the registry's metrics as idle_residency.<state> (a fraction of total CPU time, from cpu_idle events: the idle governor's choices; idle time in no state, e.g. idle since the start, is in none)."),
    m("wasted_idle_pct", "pct", Lower,
      "CPU time during which a CPU is idle while a task allowed on it waits on another CPU's runqueue, over total CPU time (the 'wasted cores' invariant)."),
    m("cpu_util_pct", "pct", Neither, "Busy CPU time over total CPU time (100 - idle_pct)."),
    m("placed_capacity_min", "capacity", Higher,
      "Lowest capacity_of (capacity left to fair tasks after RT and IRQ pressure, SCHED_CAPACITY_SCALE units) of a CPU chosen by a placement decision (schedlab_place capacity=). Absent for traces without it."),
    m("placed_capacity_mean", "capacity", Higher,
      "Mean capacity_of of the CPUs chosen by placement decisions. Absent for traces without it."),
    m("irq_pct", "pct", Neither,
      "Time in interrupt handlers (irq_handler_entry..exit and inline softirq_entry..exit; not ksoftirqd) over total CPU time."),
    m("rt_pct", "pct", Lower,
      "CPU time spent running RT tasks (SCHED_FIFO/SCHED_RR: rt-periodic noise, or a workload given policy=fifo|rr), over total CPU time, from sched_switch. Lower leaves more to fair tasks. Absent for real traces, whose task policies are unknown."),
    m("energy_j", "J", Lower,
      "Energy over the measured window: each CPU draws its OPP's power_mw while it runs a task, and while idle the power_mw of the idle state it is in (cpu_idle events), or its core type's shallowest state's when in none (interrupts on an idle CPU count as idle). Per frequency domain as energy_j.fdN, per CPU as energy_j.cpuN; the time share of each OPP as freq_residency.fdN.KHZ (fractions). Reported only when the machine has a governor ([freq_domain] governor or --governor). Absent (null) when some frequency domain has no power model (no OPP or idle state of its core type with a nonzero power_mw, e.g. the x86 presets): its power is unknown, so its energy_j.fdN and its CPUs' energy_j.cpuN are absent too."),
    m("power_mw", "mW", Lower, "Mean power over the measured window: energy_j / window. Reported with energy_j; Absent when energy_j is."),
    m("freq_transitions", "count", Neither,
      "Frequency changes of the policies (one per policy, not per CPU) in the measured window, from cpu_frequency events. Reported with energy_j."),
];

/// Look a metric up by name.
pub fn metric_def(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|d| d.name == name)
}

/// The `--help-metrics` text: one block per metric.
pub fn help_metrics() -> String {
    let mut s = String::new();
    for d in METRICS {
        let better = match d.better {
            Better::Lower => "lower is better",
            Better::Higher => "higher is better",
            Better::Neither => "descriptive",
        };
        s.push_str(&format!("{} [{}] ({})\n    {}\n", d.name, d.unit, better, d.description));
    }
    s
}

/// The quantiles of `wakeup_latency_dist.pQ` (name suffix, percentile):
/// dense in the tail, where placement policies differ, and log-spaced
/// towards it, so that the points trace the CDF on a log latency axis.
pub const WAKEUP_LATENCY_QUANTILES: [(&str, f64); 12] = [
    ("1", 1.0),
    ("5", 5.0),
    ("10", 10.0),
    ("25", 25.0),
    ("50", 50.0),
    ("75", 75.0),
    ("90", 90.0),
    ("95", 95.0),
    ("99", 99.0),
    ("99.9", 99.9),
    ("99.99", 99.99),
    ("100", 100.0),
];

/// The wakeup latency distribution as a ladder of quantiles,
/// `wakeup_latency_dist.pQ` for each of [`WAKEUP_LATENCY_QUANTILES`], in
/// us: enough points to draw its CDF (`schedlab report` does) from a run's
/// metrics alone. Absent (NaN) when nothing was woken.
pub(super) fn wakeup_latency_dist(lat: &super::hist::LatencyHist) -> impl Iterator<Item = MetricValue> + '_ {
    let woken = lat.count() > 0;
    WAKEUP_LATENCY_QUANTILES.iter().map(move |&(name, q)| MetricValue {
        name: format!("wakeup_latency_dist.p{name}"),
        unit: "us".into(),
        value: if woken { lat.percentile(q) / 1000.0 } else { f64::NAN },
        better: Better::Lower,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::machine::Distance;
    use crate::trace::PlacePath;

    #[test]
    fn names_unique_and_cover_paths_and_distances() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(METRICS[i + 1..].iter().all(|b| b.name != a.name), "duplicate {}", a.name);
            assert!(!a.description.is_empty());
        }
        for p in PlacePath::ALL {
            assert!(metric_def(&format!("place_{}", p.name())).is_some(), "{:?}", p);
        }
        for d in Distance::MIGRATION {
            assert!(metric_def(&format!("migrations_{}", d.name())).is_some(), "{:?}", d);
        }
        assert!(help_metrics().contains("wasted_idle_pct [pct]"));
    }
}
