//! The scheduling-policy keys every family accepts, parsed in one place
//! (like `cpus=`): `policy`, `priority` and `nice`, applied to every task of
//! the workload, as `chrt` / `nice` would set them before the benchmark starts.
//!
//! * `policy=other|batch|idle|fifo|rr`: `sched_setscheduler`'s SCHED_OTHER,
//!   SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR.
//! * `priority=1..99`: the RT priority (`sched_priority`); required with
//!   `fifo`/`rr` and rejected otherwise (the kernel rejects a non-zero
//!   priority for a fair policy with EINVAL).
//! * `nice=-20..19`: fair policies only (an RT task's nice does not change
//!   its scheduling, so giving one is taken as a mistake).
//! * `uclamp_min=0..1024`, `uclamp_max=0..1024`: `sched_setattr`'s
//!   utilisation clamps (SCHED_FLAG_UTIL_CLAMP), any policy; the kernel
//!   rejects a minimum above the maximum (EINVAL), and so do these keys.
//!
//! Each family has a [`PolicyDefault`]: fair families default to `other`;
//! `rt-periodic` defaults to `fifo` at priority 50; `irq` makes no tasks and
//! rejects the keys.

use super::{SchedPolicy, UclampReq, Workload};
use crate::error::{Result, SchedlabError};

/// What a family's tasks run as when no policy key is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PolicyDefault {
    /// SCHED_OTHER at nice 0; every policy may be asked for.
    Fair,
    /// An RT family: SCHED_FIFO at this priority; only `fifo`/`rr` accepted.
    Rt {
        /// Default RT priority.
        priority: u32,
    },
    /// The family makes no tasks (interrupt sources): the keys are rejected.
    NoTasks,
}

/// The keys, for `schedlab workload list` (name, unit, doc).
pub(crate) const SCHED_KEY_DOCS: [(&str, &str, &str); 5] = [
    (
        "policy",
        "other|batch|idle|fifo|rr",
        "scheduling policy of every task (sched_setscheduler, as `chrt`): SCHED_OTHER, SCHED_BATCH, \
         SCHED_IDLE, SCHED_FIFO or SCHED_RR. fifo/rr need priority=.",
    ),
    (
        "priority",
        "1..99",
        "RT priority (sched_priority) of every task, higher runs first; required with and only valid \
         with policy=fifo|rr.",
    ),
    ("nice", "-20..19", "nice value of every task; fair policies (other, batch, idle) only."),
    (
        "uclamp_min",
        "0..1024",
        "utilisation clamp minimum of every task (sched_setattr sched_util_min): the task is placed and its \
         CPU's frequency chosen as if it used at least this much. Default none (0; 1024 for RT tasks).",
    ),
    (
        "uclamp_max",
        "0..1024",
        "utilisation clamp maximum of every task (sched_setattr sched_util_max): its CPU's frequency is \
         chosen as if it used at most this much, and a CPU of at least this capacity fits it. Default none (1024).",
    ),
];

/// The policy keys of one spec, resolved against the family's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SchedKeys {
    /// Policy of every task.
    pub policy: SchedPolicy,
    /// RT priority (0 for fair policies).
    pub rt_priority: u32,
    /// Nice value, when given.
    pub nice: Option<i32>,
    /// Utilisation clamps, when given.
    pub uclamp: UclampReq,
    /// Whether anything must appear in the normalised name.
    named: bool,
}

/// The policy a spec word names (`other`, `batch`, `idle`, `fifo`, `rr`).
pub(crate) fn policy_of_word(w: &str) -> Option<SchedPolicy> {
    POLICIES.iter().copied().find(|&p| policy_word(p) == w)
}

/// The word of a policy in a spec.
pub(crate) fn policy_word(p: SchedPolicy) -> &'static str {
    match p {
        SchedPolicy::Normal => "other",
        SchedPolicy::Batch => "batch",
        SchedPolicy::Idle => "idle",
        SchedPolicy::Fifo => "fifo",
        SchedPolicy::Rr => "rr",
    }
}

const POLICIES: [SchedPolicy; 5] =
    [SchedPolicy::Normal, SchedPolicy::Batch, SchedPolicy::Idle, SchedPolicy::Fifo, SchedPolicy::Rr];

fn err(origin: &str, key: &str, expected: String) -> SchedlabError {
    SchedlabError::spec(origin, format!("workload.{key}"), expected)
}

/// Removes `policy`, `priority` and `nice` from `pairs` and resolves them
/// against `default`. Errors name the key and what it expects.
pub(crate) fn take_sched_keys(
    pairs: Vec<(String, String)>,
    origin: &str,
    family: &str,
    default: PolicyDefault,
) -> Result<(SchedKeys, Vec<(String, String)>)> {
    let mut given: [Option<String>; 5] = Default::default();
    let mut rest = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        match SCHED_KEY_DOCS.iter().position(|d| d.0 == k) {
            Some(i) if given[i].is_some() => {
                return Err(err(origin, &k, format!("expected each key once, got '{k}' twice")));
            }
            Some(i) => given[i] = Some(v),
            None => rest.push((k, v)),
        }
    }
    if default == PolicyDefault::NoTasks {
        if let Some((i, _)) = given.iter().enumerate().find(|(_, v)| v.is_some()) {
            let key = SCHED_KEY_DOCS[i].0;
            return Err(err(origin, key, format!("expected no {key} key: {family} makes no tasks")));
        }
        let none = SchedKeys {
            policy: SchedPolicy::Normal,
            rt_priority: 0,
            nice: None,
            uclamp: UclampReq::default(),
            named: false,
        };
        return Ok((none, rest));
    }
    let [policy_t, prio_t, nice_t, umin_t, umax_t] = given;
    let clamp = |key: &str, t: &Option<String>| -> Result<Option<u32>> {
        match t {
            None => Ok(None),
            Some(t) => match t.trim().parse::<u32>() {
                Ok(n) if n <= 1024 => Ok(Some(n)),
                _ => Err(err(origin, key, format!("expected a whole number from 0 to 1024, got '{t}'"))),
            },
        }
    };
    let uclamp = UclampReq { min: clamp("uclamp_min", &umin_t)?, max: clamp("uclamp_max", &umax_t)? };
    if let (Some(lo), Some(hi)) = (uclamp.min, uclamp.max) {
        if lo > hi {
            return Err(err(origin, "uclamp_min", format!("expected at most uclamp_max ({hi}), got {lo}")));
        }
    }
    let policy = match &policy_t {
        None => match default {
            PolicyDefault::Rt { .. } => SchedPolicy::Fifo,
            _ => SchedPolicy::Normal,
        },
        Some(t) => {
            let words: Vec<&str> = POLICIES.iter().map(|p| policy_word(*p)).collect();
            let p = POLICIES
                .iter()
                .copied()
                .find(|p| policy_word(*p) == t.trim())
                .ok_or_else(|| err(origin, "policy", format!("expected one of {}, got '{t}'", words.join(", "))))?;
            if matches!(default, PolicyDefault::Rt { .. }) && !p.is_rt() {
                return Err(err(origin, "policy", format!("expected fifo or rr ({family} tasks are RT), got '{t}'")));
            }
            p
        }
    };
    let rt_priority = match (&prio_t, policy.is_rt(), default) {
        (Some(t), true, _) => match t.trim().parse::<u32>() {
            Ok(n) if (1..=99).contains(&n) => n,
            _ => return Err(err(origin, "priority", format!("expected a whole number from 1 to 99, got '{t}'"))),
        },
        (Some(t), false, _) => {
            return Err(err(
                origin,
                "priority",
                format!(
                    "expected no priority with policy={} (only fifo and rr have one), got '{t}'",
                    policy_word(policy)
                ),
            ))
        }
        (None, true, PolicyDefault::Rt { priority }) => priority,
        (None, true, _) => {
            return Err(err(
                origin,
                "priority",
                format!("expected priority=1..99 with policy={}, got nothing", policy_word(policy)),
            ))
        }
        (None, false, _) => 0,
    };
    let nice = match &nice_t {
        None => None,
        Some(t) if policy.is_rt() => {
            return Err(err(
                origin,
                "nice",
                format!("expected no nice with policy={} (fair policies only), got '{t}'", policy_word(policy)),
            ))
        }
        Some(t) => match t.trim().parse::<i32>() {
            Ok(n) if (-20..=19).contains(&n) => Some(n),
            _ => return Err(err(origin, "nice", format!("expected a whole number from -20 to 19, got '{t}'"))),
        },
    };
    let named = policy_t.is_some() || nice_t.is_some() || matches!(default, PolicyDefault::Rt { .. });
    Ok((SchedKeys { policy, rt_priority, nice, uclamp, named }, rest))
}

impl SchedKeys {
    /// Sets every task's policy, priority and (when given) nice, and appends
    /// the keys to the normalised name (always for RT families, whose policy
    /// is part of what they are; for fair families only when given).
    pub(crate) fn apply(&self, w: &mut Workload) {
        for t in &mut w.tasks {
            t.policy = self.policy;
            t.rt_priority = self.rt_priority;
            if let Some(n) = self.nice {
                t.nice = n;
            }
            if self.uclamp.is_set() {
                t.uclamp = self.uclamp;
            }
        }
        if self.named {
            w.name.push_str(&format!(",policy={}", policy_word(self.policy)));
            if self.policy.is_rt() {
                w.name.push_str(&format!(",priority={}", self.rt_priority));
            }
            if let Some(n) = self.nice {
                w.name.push_str(&format!(",nice={n}"));
            }
        }
        if let Some(v) = self.uclamp.min {
            w.name.push_str(&format!(",uclamp_min={v}"));
        }
        if let Some(v) = self.uclamp.max {
            w.name.push_str(&format!(",uclamp_max={v}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(spec: &[(&str, &str)], d: PolicyDefault) -> Result<SchedKeys> {
        let pairs = spec.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        take_sched_keys(pairs, "cli", "fam", d).map(|r| r.0)
    }

    fn key_of(e: SchedlabError) -> (String, String) {
        match e {
            SchedlabError::Spec { key, expected, .. } => (key, expected),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fair_family_defaults_to_other_and_accepts_every_policy() {
        let k = take(&[], PolicyDefault::Fair).unwrap();
        assert_eq!((k.policy, k.rt_priority, k.nice), (SchedPolicy::Normal, 0, None));
        let k = take(&[("policy", "batch"), ("nice", "-5")], PolicyDefault::Fair).unwrap();
        assert_eq!((k.policy, k.nice), (SchedPolicy::Batch, Some(-5)));
        let k = take(&[("policy", "idle")], PolicyDefault::Fair).unwrap();
        assert_eq!(k.policy, SchedPolicy::Idle);
        let k = take(&[("policy", "rr"), ("priority", "10")], PolicyDefault::Fair).unwrap();
        assert_eq!((k.policy, k.rt_priority), (SchedPolicy::Rr, 10));
    }

    #[test]
    fn rt_family_defaults_to_fifo_at_its_priority() {
        let k = take(&[], PolicyDefault::Rt { priority: 50 }).unwrap();
        assert_eq!((k.policy, k.rt_priority), (SchedPolicy::Fifo, 50));
        let k = take(&[("priority", "99")], PolicyDefault::Rt { priority: 50 }).unwrap();
        assert_eq!(k.rt_priority, 99);
    }

    #[test]
    fn bad_keys_name_the_key_and_the_expectation() {
        for (spec, d, key, want) in [
            (vec![("policy", "deadline")], PolicyDefault::Fair, "workload.policy", "one of other, batch"),
            (vec![("policy", "fifo")], PolicyDefault::Fair, "workload.priority", "priority=1..99"),
            (vec![("policy", "fifo"), ("priority", "0")], PolicyDefault::Fair, "workload.priority", "1 to 99"),
            (vec![("policy", "rr"), ("priority", "100")], PolicyDefault::Fair, "workload.priority", "1 to 99"),
            (vec![("priority", "5")], PolicyDefault::Fair, "workload.priority", "only fifo and rr"),
            (vec![("nice", "20")], PolicyDefault::Fair, "workload.nice", "-20 to 19"),
            (vec![("nice", "x")], PolicyDefault::Fair, "workload.nice", "-20 to 19"),
            (vec![("policy", "fifo"), ("priority", "1"), ("nice", "0")], PolicyDefault::Fair, "workload.nice", "fair"),
            (vec![("policy", "other")], PolicyDefault::Rt { priority: 50 }, "workload.policy", "fifo or rr"),
            (vec![("nice", "1")], PolicyDefault::NoTasks, "workload.nice", "makes no tasks"),
            (vec![("nice", "1"), ("nice", "2")], PolicyDefault::Fair, "workload.nice", "twice"),
        ] {
            let (k, exp) = key_of(take(&spec, d).unwrap_err());
            assert_eq!(k, key, "{spec:?}");
            assert!(exp.starts_with("expected") && exp.contains(want), "{spec:?}: {exp}");
        }
    }

    #[test]
    fn clamp_keys_any_policy_min_at_most_max() {
        let k = take(&[("uclamp_min", "256"), ("uclamp_max", "1024")], PolicyDefault::Fair).unwrap();
        assert_eq!((k.uclamp.min, k.uclamp.max), (Some(256), Some(1024)));
        let k = take(&[("uclamp_min", "0")], PolicyDefault::Rt { priority: 50 }).unwrap();
        assert_eq!(k.uclamp.min, Some(0));
        for (spec, key) in [
            (vec![("uclamp_min", "1025")], "workload.uclamp_min"),
            (vec![("uclamp_max", "-1")], "workload.uclamp_max"),
            (vec![("uclamp_min", "9"), ("uclamp_max", "8")], "workload.uclamp_min"),
        ] {
            let (k, exp) = key_of(take(&spec, PolicyDefault::Fair).unwrap_err());
            assert_eq!(k, key, "{spec:?}: {exp}");
        }
    }

    #[test]
    fn other_keys_pass_through_in_order() {
        let pairs = vec![("a".to_string(), "1".to_string()), ("nice".into(), "3".into()), ("b".into(), "2".into())];
        let (_, rest) = take_sched_keys(pairs, "cli", "fam", PolicyDefault::Fair).unwrap();
        assert_eq!(rest, vec![("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())]);
    }
}
