//! Policies: a scheduling class plus a set of sched features, named by a
//! policy string such as `eevdf`, `v5.9+wa_idle_prev` or
//! `eevdf+prefer_prev_idle_core-SIS_UTIL`.
//!
//! Grammar: `BASE` followed by any number of `+FEATURE` (switch on) or
//! `-FEATURE` (switch off). `BASE` is a policy or a kernel profile (one
//! registry below, house rule "one registry, each with a one-line summary").

use crate::cpumask::CpuMask;
use crate::error::{Result, SchedlabError};
use crate::features::{Feat, Features};
use crate::policies::bmq::BmqParams;
use crate::policies::cosmos::CosmosParams;
use crate::topology::Machine;

/// Which scheduling class runs the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    /// The fair class (EEVDF, or CFS under NO_EEVDF, with the feature set of the policy).
    Fair,
    /// scx_cosmos (sched_ext) replacing the fair class.
    Cosmos(CosmosParams),
    /// Project C BMQ replacing the fair class.
    Bmq(BmqParams),
}

impl ClassKind {
    /// A peer scheduler, not the fair class.
    pub fn is_peer(&self) -> bool {
        !matches!(self, ClassKind::Fair)
    }
}

/// How a policy confines the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confine {
    /// No cpuset.
    None,
    /// One hardware thread per core (the first of each core), as the seed
    /// benchmark's "pinned" cgroup did.
    OneThreadPerCore,
}

/// A parsed policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The string it was parsed from.
    pub name: String,
    /// The base policy or profile.
    pub base: &'static str,
    /// Scheduling class.
    pub class: ClassKind,
    /// Features switched on.
    pub features: Features,
    /// Cpuset.
    pub confine: Confine,
}

/// One base policy or profile.
pub struct BaseDef {
    /// Name in policy strings.
    pub name: &'static str,
    /// `"policy"` or `"profile"`.
    pub kind: &'static str,
    /// One line.
    pub summary: &'static str,
    build: fn() -> (ClassKind, Features, Confine),
}

fn mainline() -> (ClassKind, Features, Confine) {
    (ClassKind::Fair, Features::mainline(), Confine::None)
}

fn pinned() -> (ClassKind, Features, Confine) {
    (ClassKind::Fair, Features::mainline(), Confine::OneThreadPerCore)
}

/// v6.12: EEVDF with DELAY_DEQUEUE, before NI_RANDOM / NI_RATE (2025-26).
fn v6_12() -> (ClassKind, Features, Confine) {
    let mut f = Features::mainline();
    f.set(Feat::NI_RANDOM, false);
    f.set(Feat::NI_RATE, false);
    // avg_idle was sampled in ttwu_do_activate until v7.0.
    f.set(Feat::avg_idle_put_prev, false);
    // Forked tasks preempted like any wakee until v6.19.
    f.set(Feat::wakeup_preempt_no_fork, false);
    // The slow path counted every CPU of a group until 2025.
    f.set(Feat::wakeup_stats_allowed, false);
    // pipe_read woke a writer whenever the read began on a full pipe until
    // v6.14. (Before v5.5 pipes had one shared wait queue and woke on every
    // freed page: not modelled, v5.9 and v4.14 keep the v5.5 .. v6.13 rule.)
    f.set(Feat::pipe_release_wakes_writer, false);
    // The 2026 lag rework: clamp from the longest slice, a delayed entity's
    // lag kept.
    f.set(Feat::lag_clamp_max_slice, false);
    f.set(Feat::delayed_lag_floor, false);
    // uclamp_rq_inc after the class's enqueue until 2025.
    f.set(Feat::uclamp_inc_before_enqueue, false);
    // HRTICK was off by default until v7.1 (9213aa4784cf).
    f.set(Feat::HRTICK, false);
    (ClassKind::Fair, f, Confine::None)
}

/// v7.1: mainline before the Sept 2026 fix of `update_rq_avg_idle` (no
/// `idle_stamp` guard: a CPU that went idle without taking a stamp, e.g.
/// newidle balance returning early on a pending wakeup, saturates
/// `avg_idle` when it leaves idle).
fn v7_1() -> (ClassKind, Features, Confine) {
    let mut f = Features::mainline();
    f.set(Feat::avg_idle_stamp_guard, false);
    (ClassKind::Fair, f, Confine::None)
}

/// v5.9: the CFS runqueue (NO_EEVDF: leftmost vruntime, sched_latency
/// slices, buddies, GENTLE_FAIR_SLEEPERS / START_DEBIT placement), SIS_PROP
/// instead of SIS_UTIL (v5.20), RT throttling instead of the fair deadline
/// server (v6.12), and `wake_affine_idle` without the idle-prev
/// check (v5.10, seed idea 1). The EEVDF-only features (PLACE_LAG,
/// RUN_TO_PARITY, ...) are inert under CFS; DELAY_DEQUEUE and PREEMPT_SHORT
/// are off so that `v5.9+EEVDF` is EEVDF as first merged (v6.6) with v5.9
/// placement.
fn v5_9() -> (ClassKind, Features, Confine) {
    let (c, mut f, k) = v6_12();
    f.set(Feat::EEVDF, false);
    f.set(Feat::SIS_UTIL, false);
    f.set(Feat::SIS_PROP, true);
    f.set(Feat::wa_idle_prev, false);
    f.set(Feat::DELAY_DEQUEUE, false);
    f.set(Feat::PREEMPT_SHORT, false);
    // Before v6.12 RT time was limited by root throttling, not the fair server.
    f.set(Feat::rt_bandwidth, true);
    f.set(Feat::fair_server, false);
    // Clamps as v6.2+ applies them are not v5.9's (uclamp_task_util,
    // uclamp_rq_util_with): refused; see UCLAMP_TASK.
    f.set(Feat::UCLAMP_TASK, false);
    // The wakeup-migration PELT decay came with v6.0 (e2f3e35f1f5a).
    f.set(Feat::migrate_se_pelt_lag, false);
    (c, f, k)
}

/// v4.14: v5.9 plus the slow path before v5.5 (`legacy_find_idlest_group`)
/// with `capacity_spare_wake` on the original capacity (fixed in v4.15), and
/// the asymmetric-capacity wakeup of v4.9 .. v5.6 (`wake_cap`: SD_BALANCE_WAKE
/// on asymmetric domains, no wake_affine for a wakee that does not fit), no
/// util_est (v4.17), seed
/// idea 5. v5.9 has the v5.5 slow path and v5.7's `select_idle_capacity`
/// instead, so both stay off there.
fn v4_14() -> (ClassKind, Features, Confine) {
    let (c, mut f, k) = v5_9();
    f.set(Feat::legacy_find_idlest_group, true);
    f.set(Feat::capacity_spare_wake_current, false);
    f.set(Feat::wake_cap, true);
    // util_est came with v4.17 (Patrick Bellasi's "sched/fair: Add util_est
    // on top of PELT"): v4.14 placed and balanced on util_avg alone.
    f.set(Feat::UTIL_EST, false);
    // EAS was merged in v5.0 (Quentin Perret's series); v4.14 mainline had none.
    f.set(Feat::eas, false);
    (c, f, k)
}

fn cosmos() -> (ClassKind, Features, Confine) {
    (ClassKind::Cosmos(CosmosParams::default()), Features::mainline(), Confine::None)
}

fn bmq() -> (ClassKind, Features, Confine) {
    (ClassKind::Bmq(BmqParams::default()), Features::mainline(), Confine::None)
}

/// Every base policy and kernel profile.
pub const BASES: &[BaseDef] = &[
    BaseDef {
        name: "eevdf",
        kind: "policy",
        summary: "mainline fair class (EEVDF) with mainline sched features",
        build: mainline,
    },
    BaseDef {
        name: "pinned",
        kind: "policy",
        summary: "eevdf with the workload confined to one hardware thread per core (a cpuset)",
        build: pinned,
    },
    BaseDef {
        name: "cosmos",
        kind: "policy",
        summary: "scx_cosmos (sched_ext) as in the seed (-s 1250 -l 50000 -c 0 -p 0 -d); options cosmos:slice=,slice_lag=,busy=,deferred_wakeup=",
        build: cosmos,
    },
    BaseDef {
        name: "bmq",
        kind: "policy",
        summary: "Project C BMQ: per-CPU 64-level bitmap queues, boost on sleep, 4 ms slice; option bmq:slice=",
        build: bmq,
    },
    BaseDef {
        name: "v7.1",
        kind: "profile",
        summary: "v7.1 features: mainline (NI_RANDOM, NI_RATE, avg_idle at put_prev_task_idle) without the Sept 2026 idle_stamp guard",
        build: v7_1,
    },
    BaseDef {
        name: "v6.12",
        kind: "profile",
        summary: "v6.12 features: EEVDF, DELAY_DEQUEUE, no NI_RANDOM/NI_RATE, avg_idle sampled at wakeup, forked tasks preempt like any wakee",
        build: v6_12,
    },
    BaseDef {
        name: "v5.9",
        kind: "profile",
        summary: "v5.9: CFS runqueue (NO_EEVDF), SIS_PROP instead of SIS_UTIL, no wa_idle_prev",
        build: v5_9,
    },
    BaseDef {
        name: "v4.14",
        kind: "profile",
        summary: "v4.14: v5.9 (CFS) plus the pre-v5.5 find_idlest_group with capacity_spare_wake on original capacity, and wake_cap",
        build: v4_14,
    },
];

fn base_names() -> String {
    BASES.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
}

/// Look a feature up, accepting the kernel's `NO_` spelling for switching off.
fn lookup_feature(name: &str) -> Result<Feat> {
    Features::by_name(name).ok_or_else(|| SchedlabError::UnknownName {
        kind: "feature".into(),
        name: name.into(),
        valid: Feat::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "),
    })
}

/// Parse a policy string.
pub fn parse_policy(s: &str) -> Result<Policy> {
    let s = s.trim();
    if let Some(p) = parse_peer_policy(s)? {
        return Ok(p);
    }
    let end = s.find(['+', '-']).unwrap_or(s.len());
    // Profile names contain a '.', never a '+' or '-', so the first sign ends the base.
    let base_name = &s[..end];
    let base = BASES.iter().find(|b| b.name == base_name).ok_or_else(|| SchedlabError::UnknownName {
        kind: "policy".into(),
        name: base_name.into(),
        valid: base_names(),
    })?;
    let (class, mut features, confine) = (base.build)();
    let mut rest = &s[end..];
    let mut seen: Vec<(Feat, bool)> = Vec::new();
    while !rest.is_empty() {
        let on = rest.starts_with('+');
        rest = &rest[1..];
        let n = rest.find(['+', '-']).unwrap_or(rest.len());
        let mut name = &rest[..n];
        rest = &rest[n..];
        let mut on = on;
        if let Some(stripped) = name.strip_prefix("NO_") {
            name = stripped;
            on = !on;
        }
        if name.is_empty() {
            return Err(SchedlabError::spec("policy", s, "a feature name after each '+' or '-'"));
        }
        let f = lookup_feature(name)?;
        if let Some(&(_, prev)) = seen.iter().find(|(g, _)| *g == f) {
            if prev != on {
                return Err(SchedlabError::spec("policy", s, format!("feature {name} is both switched on and off")));
            }
        }
        seen.push((f, on));
        features.set(f, on);
    }
    if !features.on(Feat::capacity_spare_wake_current)
        && !features.on(Feat::legacy_find_idlest_group)
        && features.on(Feat::wake_cap)
    {
        return Err(SchedlabError::spec(
            "policy",
            s,
            "capacity_spare_wake_current off needs legacy_find_idlest_group (v4.14's capacity_spare_wake) or no \
             wake_cap (v5.7+'s select_idle_capacity): v5.5 and v5.6 had neither reader of it",
        ));
    }
    if features.on(Feat::HRTICK) && !features.on(Feat::EEVDF) {
        return Err(SchedlabError::spec(
            "policy",
            s,
            "HRTICK is modelled as v7.1's hrtick_start_fair (until the virtual deadline); the CFS profiles' \
             hrtick (sched_slice) is not: use it with EEVDF (e.g. v6.12+HRTICK)",
        ));
    }
    if features.on(Feat::SIS_UTIL) && features.on(Feat::SIS_PROP) {
        return Err(SchedlabError::spec(
            "policy",
            s,
            "SIS_UTIL and SIS_PROP both limit the idle scan; switch one off (e.g. v5.9 or eevdf-SIS_UTIL+SIS_PROP)",
        ));
    }
    Ok(Policy { name: s.to_string(), base: base.name, class, features, confine })
}

/// Parse `name[:key=value,...]` for a peer base (`cosmos`, `bmq`); `None`
/// when `s` does not name one.
fn parse_peer_policy(s: &str) -> Result<Option<Policy>> {
    let head_end = s.find([':', '+', '-']).unwrap_or(s.len());
    let name = &s[..head_end];
    let Some(base) = BASES.iter().find(|b| b.name == name) else { return Ok(None) };
    let (mut class, features, confine) = (base.build)();
    if !class.is_peer() {
        return Ok(None);
    }
    let rest = &s[head_end..];
    let (opts, tail) = match rest.strip_prefix(':') {
        // Option values never contain '+'; a '+' or '-' after a '=' value
        // that is not a number would be a feature.
        Some(r) => (r, ""),
        None => ("", rest),
    };
    if !tail.is_empty() || opts.contains('+') {
        return Err(SchedlabError::spec("policy", s, "no +FEATURE/-FEATURE: features apply to the fair class only"));
    }
    for kv in opts.split(',').filter(|kv| !kv.trim().is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(SchedlabError::spec("policy", s, format!("key=value options after '{name}:', got '{kv}'")));
        };
        let (k, v) = (k.trim(), v.trim());
        match &mut class {
            ClassKind::Cosmos(p) => p.set(s, k, v)?,
            ClassKind::Bmq(p) => p.set(s, k, v)?,
            ClassKind::Fair => {}
        }
    }
    Ok(Some(Policy { name: s.to_string(), base: base.name, class, features, confine }))
}

impl Policy {
    /// The cpuset the policy confines workload tasks to on `m`, if any.
    pub fn cpuset(&self, m: &Machine) -> Option<CpuMask> {
        match self.confine {
            Confine::None => None,
            Confine::OneThreadPerCore => Some(CpuMask::from_cpus(m.core_cpus.iter().filter_map(|core| core.first()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_spare_wake_current_switches_off_in_every_profile() {
        // v4.15 .. v5.4 read it in capacity_spare_wake, v5.7+ in the wakeup
        // path's util_fits_cpu (fair/wakeup.rs, Sim::wake_capacity).
        for s in ["v5.9-capacity_spare_wake_current", "eevdf-capacity_spare_wake_current", "v4.14"] {
            assert!(!parse_policy(s).unwrap().features.on(Feat::capacity_spare_wake_current), "{s}");
        }
        let e = parse_policy("v4.14-legacy_find_idlest_group").unwrap_err().to_string();
        assert!(e.contains("v5.5 and v5.6 had neither"), "{e}");
        assert!(parse_policy("v4.14+capacity_spare_wake_current-legacy_find_idlest_group").is_ok());
    }

    #[test]
    fn parses_bases_and_features() {
        let p = parse_policy("eevdf").unwrap();
        assert_eq!(p.features, Features::mainline());
        let p = parse_policy("eevdf+prefer_prev_idle_core-SIS_UTIL").unwrap();
        assert!(p.features.on(Feat::prefer_prev_idle_core));
        assert!(!p.features.on(Feat::SIS_UTIL));
        let p = parse_policy("v5.9+wa_idle_prev").unwrap();
        assert!(p.features.on(Feat::wa_idle_prev) && p.features.on(Feat::SIS_PROP));
        let p = parse_policy("v7.1-NO_WA_IDLE").unwrap();
        assert!(p.features.on(Feat::WA_IDLE));
        assert_eq!(parse_policy("pinned").unwrap().confine, Confine::OneThreadPerCore);
    }

    #[test]
    fn profiles_differ_where_the_seeds_say() {
        let v59 = parse_policy("v5.9").unwrap().features;
        let v414 = parse_policy("v4.14").unwrap().features;
        assert!(!v59.on(Feat::wa_idle_prev) && !v59.on(Feat::SIS_UTIL));
        assert!(v59.on(Feat::capacity_spare_wake_current) && !v414.on(Feat::capacity_spare_wake_current));
        // v5.5 rewrote find_idlest_group and v5.7 removed wake_cap: both v4.14 only.
        assert!(v414.on(Feat::legacy_find_idlest_group) && !v59.on(Feat::legacy_find_idlest_group));
        assert!(v414.on(Feat::wake_cap) && !v59.on(Feat::wake_cap));
        assert!(!parse_policy("v6.12").unwrap().features.on(Feat::NI_RANDOM));
        // v5.9 and v4.14 run CFS with the CFS-era placement features of their time.
        for f in [v59, v414] {
            assert!(!f.on(Feat::EEVDF) && f.on(Feat::GENTLE_FAIR_SLEEPERS) && f.on(Feat::START_DEBIT));
            assert!(f.on(Feat::LAST_BUDDY) && !f.on(Feat::NEXT_BUDDY) && f.on(Feat::WAKEUP_PREEMPTION));
        }
        assert!(parse_policy("v6.12").unwrap().features.on(Feat::EEVDF));
        assert!(parse_policy("v5.9+EEVDF").unwrap().features.on(Feat::EEVDF));
        assert!(parse_policy("v7.1").unwrap().features.on(Feat::NI_RANDOM));
    }

    #[test]
    fn peer_policies_parse_options() {
        use crate::policies::bmq::BmqParams;
        use crate::policies::cosmos::CosmosParams;
        let p = parse_policy("cosmos:slice=1250us,slice_lag=50ms,busy=0,deferred_wakeup=false").unwrap();
        assert_eq!(p.class, ClassKind::Cosmos(CosmosParams::default()));
        assert_eq!(parse_policy("cosmos").unwrap().class, p.class);
        let ClassKind::Cosmos(c) = parse_policy("cosmos:slice=2ms, busy=75").unwrap().class else { panic!() };
        assert_eq!((c.slice_ns, c.busy_pct, c.slice_lag_ns), (2_000_000, 75, 50_000_000));
        let ClassKind::Bmq(b) = parse_policy("bmq:slice=6ms").unwrap().class else { panic!() };
        assert_eq!(b, BmqParams { slice_ns: 6_000_000 });
        assert_eq!(parse_policy("bmq").unwrap().class, ClassKind::Bmq(BmqParams::default()));
        assert!(BASES.iter().any(|b| b.name == "cosmos") && BASES.iter().any(|b| b.name == "bmq"));
    }

    #[test]
    fn peer_policy_errors() {
        let e = parse_policy("cosmos:bogus=1").unwrap_err().to_string();
        assert!(e.contains("bogus") && e.contains("slice_lag") && e.contains("deferred_wakeup"), "{e}");
        let e = parse_policy("bmq:slice_lag=1ms").unwrap_err().to_string();
        assert!(e.contains("slice_lag") && e.contains("slice"), "{e}");
        let e = parse_policy("cosmos+SIS_UTIL").unwrap_err().to_string();
        assert!(e.contains("features apply to the fair class only"), "{e}");
        assert!(parse_policy("bmq-WA_IDLE").is_err());
        assert!(parse_policy("cosmos:slice").is_err());
        assert!(parse_policy("cosmos:slice=abc").is_err());
        assert!(parse_policy("cosmos:slice=0").is_err());
        assert!(parse_policy("cosmos:busy=101").is_err());
        assert!(parse_policy("cosmos:deferred_wakeup=maybe").is_err());
        assert!(parse_policy("eevdf:slice=1ms").is_err());
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let e = parse_policy("cfs").unwrap_err().to_string();
        assert!(e.contains("unknown policy 'cfs'") && e.contains("eevdf"), "{e}");
        let e = parse_policy("eevdf+bogus").unwrap_err().to_string();
        assert!(e.contains("unknown feature 'bogus'"), "{e}");
        assert!(parse_policy("eevdf+SIS_PROP").is_err());
        assert!(parse_policy("eevdf+cas-cas").is_err());
        assert!(parse_policy("eevdf+").is_err());
    }
}
