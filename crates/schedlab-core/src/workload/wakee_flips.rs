//! The `parent_wakee_flips` key every family with tasks takes: the
//! `p->wakee_flips` each forked task starts with.
//!
//! In the kernel a new task is a copy of its parent (`dup_task_struct` in
//! kernel/fork.c), and `__sched_fork` (kernel/sched/core.c, read in
//! linux-next of 2026, ColinIanKing/linux-next) resets the entity's runtime
//! state but leaves `wakee_flips`, `wakee_flip_decay_ts` and `last_wakee`
//! alone: a thread is born with its parent's flip count at the moment of the
//! fork. `wake_wide()` (kernel/sched/fair.c) compares that count with
//! `sd_llc_size` when the thread is woken, so a thread that wakes no one
//! (hackbench's receivers) keeps deciding by its birth count.
//!
//! Two forms:
//! - one count, `parent_wakee_flips=8`: every forked task inherits 8 (a
//!   launcher that forks all the tasks while its own count stands still);
//! - one count per forked task, `parent_wakee_flips=2;3;5;...`, separated by
//!   `;` as the `cpus` key separates its ranges (`,` separates keys): what a
//!   benchmark's main thread passed on as its own count moved between forks.
//!   The list is in the order the family's *native* program
//!   (`crates/schedlab-wl`) forks its threads, which is the order a fork
//!   probe in a recording prints them (`schedlab validate` passes each
//!   recording's list through unchanged); each family maps that order onto
//!   its simulated tasks ([`ForkOrder`]). Its length must be the number of
//!   tasks the family forks.

use super::sched_keys::PolicyDefault;
use super::{StartKind, Workload};
use crate::error::{Result, SchedlabError};

/// Key/value pairs of a spec, in the order given.
type Pairs = Vec<(String, String)>;

/// The spec key, as error messages name it.
const KEY: &str = "workload.parent_wakee_flips";

/// Largest count accepted: far above any count a task builds up (a waker's
/// flips are halved every second it wakes others), so a typo is not taken
/// for a count.
const MAX_FLIPS: u32 = 1_000_000;

/// The value of the `parent_wakee_flips` key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParentFlips {
    /// Every forked task inherits this count.
    All(u32),
    /// Forked task k, in the native program's fork order, inherits entry k.
    PerTask(Vec<u32>),
}

/// The indices (into `Workload::tasks`) of the tasks a family forks, in the
/// order its native program forks the corresponding threads.
pub(crate) type ForkOrder = fn(&Workload) -> Vec<usize>;

/// [`ForkOrder`] of a family whose simulated tasks are built in the order its
/// native program forks them (or that has no native program): its forked
/// tasks in build order. Families with a native program check this against
/// `crates/schedlab-wl`: `pipe` (`wl-pipe-b`, the side that reads first, is
/// forked before `wl-pipe-a`, as task 0 reads first), `hackbench` (per
/// group, the receivers then the senders), `barrier`, and `schbench` with
/// its fork tree flattened as each thread followed by the threads it forked
/// (message thread 0, its workers, message thread 1, ...).
pub(crate) fn build_order(w: &Workload) -> Vec<usize> {
    (0..w.tasks.len()).filter(|&i| matches!(w.tasks[i].start, StartKind::Fork { .. })).collect()
}

/// Takes the `parent_wakee_flips` key out of `pairs`. Rejected for a family
/// without tasks (`policy` says which).
pub(crate) fn take_parent_wakee_flips(
    pairs: Pairs,
    origin: &str,
    policy: PolicyDefault,
) -> Result<(Option<ParentFlips>, Pairs)> {
    let mut flips = None;
    let mut rest = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        if k != "parent_wakee_flips" {
            rest.push((k, v));
            continue;
        }
        if policy == PolicyDefault::NoTasks {
            return Err(SchedlabError::spec(origin, KEY, "no such key: this family makes no tasks"));
        }
        if flips.is_some() {
            return Err(SchedlabError::spec(origin, KEY, "expected each key once, got 'parent_wakee_flips' twice"));
        }
        flips = Some(parse(&v, origin)?);
    }
    Ok((flips, rest))
}

/// `N` or `N;N;...`, each a count in `0..=MAX_FLIPS`.
fn parse(v: &str, origin: &str) -> Result<ParentFlips> {
    let bad = || {
        SchedlabError::spec(
            origin,
            KEY,
            format!("a count 0..={MAX_FLIPS}, or one count per forked task separated by ';' (2;3;5), got '{v}'"),
        )
    };
    let count = |t: &str| t.trim().parse::<u32>().ok().filter(|n| *n <= MAX_FLIPS).ok_or_else(bad);
    if !v.contains(';') {
        return Ok(ParentFlips::All(count(v)?));
    }
    Ok(ParentFlips::PerTask(v.split(';').map(count).collect::<Result<Vec<u32>>>()?))
}

/// Gives `w`'s forked tasks their inherited counts and records the key in
/// `w.name`. `order` is the family's [`ForkOrder`]; `family` names it in the
/// error a list of the wrong length gets.
pub(crate) fn apply_parent_wakee_flips(
    w: &mut Workload,
    flips: &ParentFlips,
    order: ForkOrder,
    family: &str,
    origin: &str,
) -> Result<()> {
    if !w.tasks.iter().any(|t| matches!(t.start, StartKind::Fork { .. })) {
        // Bound kworkers are kernel threads the workload wakes, not children
        // of a launcher: the key would change nothing.
        return Err(SchedlabError::spec(
            origin,
            KEY,
            format!("no such key for {family}: its tasks are not forked by a launcher, so they inherit nothing"),
        ));
    }
    match flips {
        ParentFlips::All(n) => {
            for t in w.tasks.iter_mut().filter(|t| matches!(t.start, StartKind::Fork { .. })) {
                t.wakee_flips = *n;
            }
            w.name.push_str(&format!(",parent_wakee_flips={n}"));
        }
        ParentFlips::PerTask(list) => {
            let forked = order(w);
            if forked.len() != list.len() {
                return Err(SchedlabError::spec(
                    origin,
                    KEY,
                    format!(
                        "{} counts separated by ';', one per task {family} forks (in its native program's fork \
                         order), got {}",
                        forked.len(),
                        list.len()
                    ),
                ));
            }
            for (&i, &n) in forked.iter().zip(list) {
                w.tasks[i].wakee_flips = n;
            }
            let text: Vec<String> = list.iter().map(u32::to_string).collect();
            w.name.push_str(&format!(",parent_wakee_flips={}", text.join(";")));
        }
    }
    Ok(())
}
