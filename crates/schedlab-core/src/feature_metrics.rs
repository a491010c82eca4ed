//! Which metric shows each feature acting: `schedlab policy list` prints it,
//! and `tests/features_act.rs` shows every feature changing a run. The match
//! is exhaustive, so a new feature cannot be added without saying where it
//! shows.

use crate::features::Feat;

/// The metric(s) in which switching `f` shows, with the situation it needs.
pub fn shown_by(f: Feat) -> &'static str {
    use Feat::*;
    match f {
        EEVDF => "context_switches, wakeup_latency_p99_us (off = CFS, as v5.9 and v4.14 run)",
        GENTLE_FAIR_SLEEPERS => "wakeup_latency_p99_us (CFS: sleepers on a busy CPU)",
        START_DEBIT => "context_switches (CFS: forking workloads)",
        LAST_BUDDY => "context_switches (CFS: 8 or more queued tasks)",
        RT_PUSH_IPI => "migrations (RT tasks on several CPUs, some overloaded)",
        rt_bandwidth => "rt_pct, completion_time_s (RT hogs)",
        fair_server => "rt_pct, completion_time_s (RT hogs with fair tasks waiting)",
        PLACE_DEADLINE_INITIAL => "wakeup_latency_p99_us, context_switches (forking workloads)",
        PLACE_LAG => "wakeup_latency_p99_us, runqueue_delay_p99_us (sleepers on a busy CPU)",
        PLACE_REL_DEADLINE => "runqueue_delay_p99_us (queued tasks moved by load balancing)",
        RUN_TO_PARITY => "context_switches, wakeup_latency_p99_us",
        PREEMPT_SHORT => "wakeup_latency_p99_us (tasks with shorter slices)",
        WAKEUP_PREEMPTION => "context_switches, wakeup_latency_p99_us",
        PICK_BUDDY => "context_switches (with NEXT_BUDDY on)",
        NEXT_BUDDY => "context_switches, wakeup_latency_p99_us",
        DELAY_DEQUEUE => "context_switches, place_* (woken tasks still queued skip select_task_rq)",
        DELAY_ZERO => "runqueue_delay_p99_us (with DELAY_DEQUEUE)",
        UTIL_EST => "place_* on asymmetric machines, scanned_per_wakeup_mean (SIS_UTIL)",
        NONTASK_CAPACITY => "placed_capacity_min, migrations (RT or IRQ pressure)",
        TTWU_QUEUE => "wakeup_latency_p50_us (remote wakeups pay an IPI)",
        SIS_UTIL => "scanned_per_wakeup_mean, place_idle_cpu",
        SIS_PROP => "scanned_per_wakeup_mean, place_idle_cpu (with SIS_UTIL off)",
        WA_IDLE => "migrations_llc, place_*",
        WA_WEIGHT => "migrations_llc (busy waker and prev)",
        WA_BIAS => "migrations_llc (with WA_WEIGHT)",
        CACHE_HOT_BUDDY => "periodic_balance_pulls (with NEXT_BUDDY on)",
        NI_RANDOM => "newidle_balance_calls, newidle_balance_pulls",
        NI_RATE => "newidle_balance_calls",
        UCLAMP_TASK => "migrations, place_* (RT tasks on asymmetric machines); clamped tasks' placement and frequency",
        uclamp_inc_before_enqueue => "energy_j, freq residency (clamped tasks waking under schedutil)",
        avg_idle_put_prev => "avg_idle_error_us, newidle_balance_calls (fork or migration onto an idle CPU)",
        avg_idle_stamp_guard => "newidle_balance_calls (idle entered while a wakeup was pending)",
        lag_clamp_max_slice => "wakeup_latency_* (lag that hits the clamp: long sleepers among hogs)",
        delayed_lag_floor => "context_switches, wakeup_latency_* (tasks woken while delayed)",
        HRTICK => "context_switches, wakeup_latency_* (CPU-bound fair tasks sharing a CPU: slices end at their deadline, not at the next tick)",
        migrate_se_pelt_lag => "placed_capacity_mean, freq_residency.* (util of tasks woken onto another CPU: EAS, schedutil)",
        pipe_release_wakes_writer => "context_switches, completion_time_s (writers blocked on full pipes: hackbench ipc=pipe under saturation)",
        wakeup_stats_allowed => "place_slow_path, migrations (forks and exec of tasks confined to part of a group)",
        wakeup_preempt_no_fork => "context_switches, wakeup_latency_* of forked tasks (a fork no longer preempts its parent)",
        wa_idle_prev => "migrations_llc, place_prev (idle prev, loaded waker)",
        prefer_prev_idle_core => "place_prev, completion_time_s (limited saturation with SMT)",
        avg_idle_on_enqueue => "avg_idle_error_us",
        llc_idle_mask => "scanned_per_wakeup_mean",
        sis_cluster_first => "migrations_cluster, place_idle_cpu (cluster machines)",
        idler_llc => "migrations_llc (waker and prev in different LLCs)",
        sis_time_limit => "scanned_per_wakeup_mean",
        capacity_spare_wake_current => {
            "migrations, completion_time_s (asymmetric machine under RT/IRQ pressure: the wakeup slow path with legacy_find_idlest_group, select_idle_capacity without wake_cap)"
        }
        legacy_find_idlest_group => "migrations, place_slow_path targets (fork, exec, or wake_cap wakeups)",
        wake_cap => "place_slow_path, migrations (asymmetric machine, wakees too big for a LITTLE CPU)",
        cas => "placed_capacity_min, placed_capacity_mean (IRQ or RT pressure)",
        nohz_blocked_load_update => "nohz_balance_pulls, place_slow_path",
        remote_cpufreq_update => "freq_residency.*, energy_j (schedutil governor, wakeups within a frequency domain)",
        eas => "place_policy-free EAS placements: migrations, placed_capacity_mean (asymmetric machine with an energy model)",
        sd_overutilized => "periodic_balance_pulls (with eas)",
        eas_cluster_candidates => "placed_capacity_mean (with eas)",
        soft_affinity => "place_* (workloads with preferred=)",
        ni_half_idle_retry => "newidle_balance_calls, newidle_balance_pulls",
    }
}
