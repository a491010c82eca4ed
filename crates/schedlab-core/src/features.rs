//! Sched features: every behaviour toggle of schedlab, in one table.
//!
//! The table below plays the role of the kernel's `kernel/sched/features.h`:
//! one line per feature with its default in mainline (the `eevdf` policy) and
//! a comment saying why it exists. Code tests a feature only through
//! [`sched_feat!`] (house rule 3). Seed-idea features default to off; kernel
//! profiles (`policy.rs`) switch them by name.

/// Declares the feature table: generates [`Feat`], its names, summaries and defaults.
macro_rules! sched_features {
    ($( $(#[doc = $doc:literal])* $name:ident = $default:expr ; )*) => {
        /// A sched feature. Names match the kernel's `SCHED_FEAT` names, or the
        /// seed idea's name for schedlab's own features.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum Feat { $( $(#[doc = $doc])* $name, )* }

        impl Feat {
            /// Every feature, in table order.
            pub const ALL: &'static [Feat] = &[ $( Feat::$name, )* ];

            /// The feature's name as written in policy strings.
            pub fn name(self) -> &'static str {
                match self { $( Feat::$name => stringify!($name), )* }
            }

            /// Default in mainline (`eevdf`).
            pub fn default_on(self) -> bool {
                match self { $( Feat::$name => $default, )* }
            }

            /// The "why" line of the feature.
            pub fn summary(self) -> &'static str {
                match self { $( Feat::$name => concat!($($doc),*).trim_ascii(), )* }
            }
        }
    };
}

sched_features! {
    // ---- Runqueue discipline ----
    /// Order the fair runqueue by EEVDF (v6.6+); off = CFS (v2.6.23 .. v6.5: leftmost vruntime, buddies, sched_latency slices). EEVDF-only features below act only when on.
    EEVDF = true;
    // ---- CFS runqueue (kernel/sched/features.h, v2.6.23 .. v6.5); act only under NO_EEVDF ----
    /// CFS: only give sleepers 50% of their service deficit (sched_latency / 2), so waking sleepers run soon without ripping the vruntime spread apart.
    GENTLE_FAIR_SLEEPERS = true;
    /// CFS: place new tasks one vslice after min_vruntime so they do not starve the already running ones.
    START_DEBIT = true;
    /// CFS: after a wakeup preemption prefer the preempted task (last buddy) at the next pick, for cache locality.
    LAST_BUDDY = true;
    // ---- EEVDF runqueue (kernel/sched/features.h); act only under EEVDF ----
    /// Give new tasks half a slice of virtual deadline so they do not starve running ones.
    PLACE_DEADLINE_INITIAL = true;
    /// Keep a waking task's lag (PLACE_LAG) so sleeping does not gain or lose service.
    PLACE_LAG = true;
    /// Preserve the relative deadline of a task that migrates.
    PLACE_REL_DEADLINE = true;
    /// Let the running task finish its slice before a wakeup preempts it (RUN_TO_PARITY).
    RUN_TO_PARITY = true;
    /// Let a task with a shorter slice preempt despite RUN_TO_PARITY.
    PREEMPT_SHORT = true;
    /// A high-resolution timer ends the running fair task's request at its virtual deadline instead of the next tick (HRTICK; default on since v7.1, 9213aa4784cf, where the kernel has deferred hrtimer rearming: generic-entry architectures such as x86; off in v6.12 and older, and on kernels that print NO_HRTICK).
    HRTICK = true;
    /// Allow wakeup-time preemption of the current task (both disciplines).
    WAKEUP_PREEMPTION = true;
    /// Prefer the buddy the scheduler set (next buddy) when it is eligible (EEVDF; CFS always honours its buddies within wakeup_gran).
    PICK_BUDDY = true;
    /// Set the next buddy to the woken task on every wakeup (off by default; CFS: only with at least sched_nr_latency queued).
    NEXT_BUDDY = false;
    /// Keep a sleeping task with negative lag queued until it is eligible (DELAY_DEQUEUE).
    DELAY_DEQUEUE = true;
    /// Clip a delayed task's lag to zero when it finally dequeues (DELAY_ZERO).
    DELAY_ZERO = true;
    // ---- PELT / capacity ----
    /// Keep an estimate of a task's utilisation across sleeps (util_est).
    UTIL_EST = true;
    /// Subtract RT, DL and IRQ time from a CPU's capacity (capacity_of).
    NONTASK_CAPACITY = true;
    // ---- Wakeup placement ----
    /// Queue remote wakeups on the target CPU's wake list (IPI) instead of taking its lock.
    TTWU_QUEUE = true;
    /// Limit the idle-CPU scan depth by the LLC's utilisation (SIS_UTIL, v5.20+).
    SIS_UTIL = true;
    /// Limit the idle-CPU scan depth by average idle time vs. scan cost (SIS_PROP, pre-v5.20).
    SIS_PROP = false;
    /// wake_affine: consider idle state of this and prev CPU (WA_IDLE).
    WA_IDLE = true;
    /// wake_affine: compare the loads of this and prev CPU (WA_WEIGHT).
    WA_WEIGHT = true;
    /// wake_affine: bias the load comparison towards prev by half the imbalance (WA_BIAS).
    WA_BIAS = true;
    // ---- RT class ----
    /// Pull RT work by asking overloaded CPUs to push it (an IPI chain) instead of taking their runqueues (RT_PUSH_IPI).
    RT_PUSH_IPI = true;
    /// Root RT throttling: RT tasks get at most sched_rt_runtime_us per sched_rt_period_us of a CPU (kernels before v6.12).
    rt_bandwidth = false;
    /// Fair deadline server (v6.12+): fair tasks starved by RT still get 5% of a CPU.
    fair_server = true;
    // ---- Load balancing ----
    /// Treat a recently run task as cache hot unless it is the buddy (CACHE_HOT_BUDDY).
    CACHE_HOT_BUDDY = true;
    /// Randomly skip newidle balance of a domain by its recent success ratio (NI_RANDOM, late 2025).
    NI_RANDOM = true;
    /// Rate-limit newidle balance (NI_RATE, 2026).
    NI_RATE = true;
    /// avg_idle sampled when the idle task is switched out (`put_prev_task_idle`), whatever brought the task (v7.0, 4b603f1551a7); off = sampled only in ttwu_do_activate.
    avg_idle_put_prev = true;
    /// With avg_idle_put_prev: skip the sample when no idle_stamp was taken (sched/urgent fix c6dcd97c8be7, Sept 2026); off = v7.0/v7.1, where such a sample saturates avg_idle.
    avg_idle_stamp_guard = true;
    /// A forked task's wakeup (WF_FORK) preempts only through PREEMPT_SHORT, not by becoming the EEVDF pick (v6.19, "sched/fair: Reimplement NEXT_BUDDY to align with EEVDF goals"); off = v6.6-v6.18, where it preempts like any wakee.
    wakeup_preempt_no_fork = true;
    /// pipe_read wakes a blocked writer only when it released a page (pipe_buffer) of a full pipe (v6.14, Oleg Nesterov's "pipe_read: don't wake up the writer if the pipe is still full": `wake_writer |= pipe_full(...)` before `pipe_update_tail`); off = v5.5 .. v6.13: whenever the read started on a full pipe (`was_full`), so the woken writer often finds no free slot and sleeps again.
    pipe_release_wakes_writer = true;
    /// The slow path's group statistics (`update_sg_wakeup_stats`) count only the CPUs the task may run on (Adam Li, Aug 2025: "Only update stats for allowed CPUs when looking for dst group", in the 2026 fair.c); off = v6.12, every CPU of the group.
    wakeup_stats_allowed = true;
    /// A task migrating at wakeup from an idle CPU has its PELT averages decayed to an estimate of now (the CPU's PELT clock when last updated while idle, plus the time since), not only to that CPU's last cfs_rq update (v6.0, e2f3e35f1f5a "sched/fair: Decay task PELT values during wakeup migration"); off = v5.9 and older, where the sleep since that update is not decayed.
    migrate_se_pelt_lag = true;
    /// The saved lag is clamped to the runqueue's longest slice plus a tick (2026, 6e3c0a4e1ad1 "sched/fair: Fix lag clamp"); off = twice the entity's own slice, at least a tick (v6.6 .. v6.19).
    lag_clamp_max_slice = true;
    /// A delayed entity keeps the lag it was delayed with as a floor (and DELAY_ZERO caps it at 0) when it is finally dequeued or woken, and a woken one is placed again whenever that moved its lag (2026 rework of update_entity_lag); off = v6.12 .. v6.19: lag taken afresh, a woken one placed again only for positive lag under DELAY_ZERO.
    delayed_lag_floor = true;
    /// Energy-aware wakeup placement (find_energy_efficient_cpu) while the root domain is not overutilized (v5.0+, seed idea 6), where the kernel enables it: an energy model, asymmetric capacities, no SMT and schedutil on every CPU (sched_is_eas_possible); off = never, as v4.14 without Android's out-of-tree EAS.
    eas = true;
    /// The kernel is built with CONFIG_UCLAMP_TASK (v5.3+) and clamps act as v6.2+ applies them (util_fits_cpu): tasks may be given uclamp_min/uclamp_max, and an RT task's default uclamp_min of 1024 makes rt_task_fits_capacity prefer full-capacity CPUs; off = no uclamp (v4.14; v5.9's pre-v6.2 clamp rules are not modelled): clamp keys are refused and every CPU fits an RT task.
    UCLAMP_TASK = true;
    /// uclamp_rq_inc runs before the class's enqueue, so the frequency request made there sees the new task's clamps (2025, "sched/uclamp: Align uclamp and util_est and call before freq update"); off = v6.12, after it: the clamps reach the frequency at the next update.
    uclamp_inc_before_enqueue = true;
    // ---- Seed ideas (SEEDS.md), off in mainline ----
    /// Idea 1: wake_affine_idle returns prev when prev is idle (v5.10+; off = v5.9 behaviour).
    wa_idle_prev = true;
    /// Idea 2: prefer prev if it is an idle core; recent_used_cpu and target only as idle cores.
    prefer_prev_idle_core = false;
    /// Idea 3: refresh avg_idle on every enqueue onto an idle CPU, not only on wakeup.
    avg_idle_on_enqueue = false;
    /// Idea 4: scan only CPUs in a per-LLC idle mask.
    llc_idle_mask = false;
    /// Idea 4: scan the target's cluster before the rest of the LLC.
    sis_cluster_first = false;
    /// Idea 4: across LLCs, prefer the LLC with an idle core, else more idle CPUs.
    idler_llc = false;
    /// Idea 4: stop the idle search when local expected idle time is shorter than its cost.
    sis_time_limit = false;
    /// Idea 5: wakeup-time capacity checks read capacity_of (RT/IRQ pressure subtracted), not the original capacity: capacity_spare_wake in the legacy slow path (v4.15 .. v5.4), select_idle_capacity and asym_fits_cpu (v5.7+); off = v4.14, or today's kernel without the idea.
    capacity_spare_wake_current = true;
    /// Idea 5: the slow path's group choice as before v5.5 (runnable load, avg_load, most spare capacity) instead of the v5.5+ group classification.
    legacy_find_idlest_group = false;
    /// Idea 5: on asymmetric-capacity machines (v4.9 .. v5.6), a wakee that does not fit min(capacity_orig of waker and prev CPU) skips wake_affine, and SD_BALANCE_WAKE on the asymmetric domain and below sends it down the slow path; the idle search is capacity-blind (no select_idle_capacity, v5.7+).
    wake_cap = false;
    /// Idea 5: capacity-aware idle search skips CPUs below 80% of their capacity (CAS).
    cas = false;
    /// Idea 5: update blocked load of idle NOHZ CPUs when stale.
    nohz_blocked_load_update = true;
    /// Idea 5: under schedutil, an enqueue by another CPU of the target's frequency domain updates the domain's request at once (v4.14), not at the target's next update.
    remote_cpufreq_update = false;
    /// Idea 6: per-sched-domain overutilized flag.
    sd_overutilized = false;
    /// Idea 6: one candidate per cluster in find_energy_efficient_cpu.
    eas_cluster_candidates = false;
    /// Soft affinity: run on preferred CPUs while one is idle.
    soft_affinity = false;
    /// Idea 7: newidle half-idle retry of dice-skipped LLC domains.
    ni_half_idle_retry = false;
}

/// A set of switched-on features: a bitmap, so a test is one AND.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Features {
    bits: u64,
}

const _: () = assert!(Feat::ALL.len() <= 64, "Features is a u64 bitmap");

impl Default for Features {
    fn default() -> Self {
        Self::mainline()
    }
}

impl Features {
    /// Mainline defaults (the `eevdf` policy).
    pub fn mainline() -> Self {
        let mut f = Features { bits: 0 };
        for &x in Feat::ALL {
            f.set(x, x.default_on());
        }
        f
    }

    /// No feature on.
    pub fn none() -> Self {
        Features { bits: 0 }
    }

    /// Whether `feat` is on. Use [`sched_feat!`] in code.
    #[inline]
    pub fn on(&self, feat: Feat) -> bool {
        self.bits & (1u64 << feat as u8) != 0
    }

    /// Switch `feat`.
    pub fn set(&mut self, feat: Feat, on: bool) {
        if on {
            self.bits |= 1u64 << feat as u8;
        } else {
            self.bits &= !(1u64 << feat as u8);
        }
    }

    /// Look a feature up by name; case matters for kernel names
    /// (`SIS_UTIL`), `NO_` prefixes are handled by the policy parser.
    pub fn by_name(name: &str) -> Option<Feat> {
        Feat::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The names of the switched-on features, in table order.
    pub fn names_on(&self) -> Vec<&'static str> {
        Feat::ALL.iter().filter(|f| self.on(**f)).map(|f| f.name()).collect()
    }
}

/// `sched_feat!(features, NAME)`: whether feature `NAME` is on.
#[macro_export]
macro_rules! sched_feat {
    ($f:expr, $name:ident) => {
        $f.on($crate::features::Feat::$name)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_lookup() {
        let f = Features::mainline();
        assert!(sched_feat!(f, SIS_UTIL));
        assert!(!sched_feat!(f, SIS_PROP));
        assert!(!sched_feat!(f, prefer_prev_idle_core));
        assert_eq!(Features::by_name("WA_IDLE"), Some(Feat::WA_IDLE));
        assert_eq!(Features::by_name("nope"), None);
        assert!(Feat::WA_IDLE.summary().starts_with("wake_affine"));
    }
}
