//! Utilisation clamping (`CONFIG_UCLAMP_TASK`, kernel/sched/core.c and
//! sched.h): a task's `uclamp_min` / `uclamp_max` requests (set with
//! `sched_setattr(SCHED_FLAG_UTIL_CLAMP)`, here the `uclamp_min=` /
//! `uclamp_max=` workload keys and rt-app's `util_min` / `util_max`), their
//! max-aggregation per runqueue in buckets (`uclamp_rq_inc` / `uclamp_rq_dec`
//! around the class's enqueue and dequeue), and the readers the classes use
//! (`uclamp_eff_value`, `uclamp_rq_get`, `uclamp_rq_is_idle`).
//!
//! Nothing here acts unless some task was given a clamp: the kernel's
//! `sched_uclamp_used` static key, switched on by the first
//! `sched_setattr` with a clamp, is [`Sim::uclamp_used`], set when the run is
//! built. Without it runs are byte-identical to schedlab before uclamp, and
//! an RT task's default `uclamp_min` of 1024 is still read by
//! `rt_task_fits_capacity`, as in the kernel (`uclamp_eff_value` does not
//! look at the static key).
//!
//! Not modelled: cgroup clamps (`cpu.uclamp.min/max`: every task is in the
//! root group, whose clamps are 0..1024), the `sched_util_clamp_*` sysctls
//! other than their defaults, and `reset_on_fork`.

use crate::ids::{CpuId, TaskId};

use super::Sim;

/// Index of the minimum clamp (`UCLAMP_MIN`).
pub const UCLAMP_MIN: usize = 0;
/// Index of the maximum clamp (`UCLAMP_MAX`).
pub const UCLAMP_MAX: usize = 1;

/// `SCHED_CAPACITY_SCALE`.
const SCALE: u32 = 1024;

/// `UCLAMP_BUCKETS`: `CONFIG_UCLAMP_BUCKETS_COUNT`, default 5 (init/Kconfig:
/// "the default value of 5 ... 20% resolution"), the build every distribution
/// we know of uses.
pub const UCLAMP_BUCKETS: usize = 5;

/// `UCLAMP_BUCKET_DELTA`: `DIV_ROUND_CLOSEST(SCHED_CAPACITY_SCALE, UCLAMP_BUCKETS)` = 205.
const UCLAMP_BUCKET_DELTA: u32 = (SCALE + UCLAMP_BUCKETS as u32 / 2) / UCLAMP_BUCKETS as u32;

/// `sysctl_sched_uclamp_util_min_rt_default`: an RT task's `uclamp_min` when
/// it did not ask for one (1024: RT tasks run at the highest performance).
pub const UCLAMP_MIN_RT_DEFAULT: u32 = SCALE;

/// `uclamp_bucket_id`.
#[inline]
fn uclamp_bucket_id(value: u32) -> u8 {
    (value / UCLAMP_BUCKET_DELTA).min(UCLAMP_BUCKETS as u32 - 1) as u8
}

/// `uclamp_none(clamp_id)`: 0 for the minimum, 1024 for the maximum.
#[inline]
pub fn uclamp_none(clamp_id: usize) -> u32 {
    if clamp_id == UCLAMP_MIN {
        0
    } else {
        SCALE
    }
}

/// `struct uclamp_se`: one clamp of a task (its request, or the effective
/// value it was counted with while `active`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UclampSe {
    /// The clamp, 0..=1024.
    pub value: u32,
    /// `bucket_id`.
    pub bucket_id: u8,
    /// Counted in its runqueue's bucket.
    pub active: bool,
    /// Asked for by the task (`sched_setattr`), not a default.
    pub user_defined: bool,
}

impl UclampSe {
    /// `uclamp_se_set(uc_se, value, user_defined)`.
    pub fn new(value: u32, user_defined: bool) -> Self {
        let value = value.min(SCALE);
        UclampSe { value, bucket_id: uclamp_bucket_id(value), active: false, user_defined }
    }
}

/// A task's clamps: `p->uclamp_req[]` (what it asked for) and `p->uclamp[]`
/// (what its runqueue counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskUclamp {
    /// `p->uclamp_req[clamp_id]`.
    pub req: [UclampSe; 2],
    /// `p->uclamp[clamp_id]`.
    pub eff: [UclampSe; 2],
}

impl TaskUclamp {
    /// The clamps of a new task: its requests where it made them, else the
    /// defaults (`init_uclamp` / `uclamp_fork`): min 0, or 1024 for an RT
    /// task (`uclamp_update_util_min_rt_default`); max 1024.
    pub fn new(min: Option<u32>, max: Option<u32>, rt: bool) -> Self {
        let min_default = if rt { UCLAMP_MIN_RT_DEFAULT } else { uclamp_none(UCLAMP_MIN) };
        let req = [
            min.map_or(UclampSe::new(min_default, false), |v| UclampSe::new(v, true)),
            max.map_or(UclampSe::new(uclamp_none(UCLAMP_MAX), false), |v| UclampSe::new(v, true)),
        ];
        TaskUclamp { req, eff: req }
    }

    /// `uclamp_update_util_min_rt_default`, after a policy change: an RT
    /// task's unrequested minimum is the RT default, a fair one's 0.
    pub fn policy_changed(&mut self, rt: bool) {
        if !self.req[UCLAMP_MIN].user_defined {
            let v = if rt { UCLAMP_MIN_RT_DEFAULT } else { uclamp_none(UCLAMP_MIN) };
            self.req[UCLAMP_MIN] = UclampSe::new(v, false);
        }
    }

    /// `uclamp_eff_get`: the request within the system defaults
    /// (`sysctl_sched_uclamp_util_min/max`, both 1024) and the root task
    /// group's clamps (0..1024): the request itself.
    #[inline]
    fn eff_get(&self, clamp_id: usize) -> UclampSe {
        let r = self.req[clamp_id];
        UclampSe { active: false, ..r }
    }

    /// `uclamp_eff_value(p, clamp_id)`.
    #[inline]
    pub fn eff_value(&self, clamp_id: usize) -> u32 {
        if self.eff[clamp_id].active {
            self.eff[clamp_id].value
        } else {
            self.eff_get(clamp_id).value
        }
    }
}

/// `struct uclamp_bucket`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UclampBucket {
    /// The highest clamp of the tasks counted here (reset to the next task's
    /// when the bucket empties).
    pub value: u32,
    /// RUNNABLE tasks counted here.
    pub tasks: u32,
}

/// A runqueue's clamps: `rq->uclamp[]` and `rq->uclamp_flags`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RqUclamp {
    /// `rq->uclamp[clamp_id].value`.
    pub value: [u32; 2],
    /// `rq->uclamp[clamp_id].bucket[]`.
    pub bucket: [[UclampBucket; UCLAMP_BUCKETS]; 2],
    /// `UCLAMP_FLAG_IDLE`: no task is counted; the maximum clamp holds the
    /// last task's value until the next one comes (`uclamp_idle_value`).
    pub idle: bool,
}

impl Default for RqUclamp {
    /// `init_uclamp_rq`.
    fn default() -> Self {
        RqUclamp {
            value: [uclamp_none(UCLAMP_MIN), uclamp_none(UCLAMP_MAX)],
            bucket: [[UclampBucket::default(); UCLAMP_BUCKETS]; 2],
            idle: true,
        }
    }
}

impl RqUclamp {
    /// `uclamp_idle_value`: the clamp of a runqueue left with no task.
    fn idle_value(&mut self, clamp_id: usize, clamp_value: u32) -> u32 {
        if clamp_id == UCLAMP_MAX {
            self.idle = true;
            return clamp_value;
        }
        uclamp_none(UCLAMP_MIN)
    }

    /// `uclamp_idle_reset`: the first task after idle sets the clamp.
    fn idle_reset(&mut self, clamp_id: usize, clamp_value: u32) {
        if self.idle {
            self.value[clamp_id] = clamp_value;
        }
    }

    /// `uclamp_rq_max_value`: the highest non-empty bucket's value.
    fn max_value(&mut self, clamp_id: usize, clamp_value: u32) -> u32 {
        match self.bucket[clamp_id].iter().rev().find(|b| b.tasks > 0) {
            Some(b) => b.value,
            None => self.idle_value(clamp_id, clamp_value),
        }
    }

    /// `uclamp_rq_inc_id`: count `uc_se` (the task's effective clamp).
    pub fn inc_id(&mut self, clamp_id: usize, uc_se: &mut UclampSe) {
        let b = &mut self.bucket[clamp_id][uc_se.bucket_id as usize];
        b.tasks += 1;
        uc_se.active = true;
        let first = b.tasks == 1;
        if first || uc_se.value > b.value {
            b.value = uc_se.value;
        }
        self.idle_reset(clamp_id, uc_se.value);
        if uc_se.value > self.value[clamp_id] {
            self.value[clamp_id] = uc_se.value;
        }
    }

    /// `uclamp_rq_dec_id`.
    pub fn dec_id(&mut self, clamp_id: usize, uc_se: &mut UclampSe) {
        if !uc_se.active {
            return;
        }
        let b = &mut self.bucket[clamp_id][uc_se.bucket_id as usize];
        debug_assert!(b.tasks > 0, "uclamp bucket underflow");
        b.tasks = b.tasks.saturating_sub(1);
        uc_se.active = false;
        // "Keep local max aggregation simple": a bucket's value is reset
        // only when no task is left in it.
        if b.tasks > 0 {
            return;
        }
        let bucket_value = b.value;
        if bucket_value >= self.value[clamp_id] {
            self.value[clamp_id] = self.max_value(clamp_id, uc_se.value);
        }
    }

    /// Tasks counted, over all buckets of `clamp_id` (the invariant checker).
    pub fn counted(&self, clamp_id: usize) -> u32 {
        self.bucket[clamp_id].iter().map(|b| b.tasks).sum()
    }
}

/// Refuses clamps the run cannot honour, as `sched_setattr` would fail:
/// a profile without UCLAMP_TASK (EOPNOTSUPP in a kernel built without it;
/// v5.9's pre-v6.2 clamp rules are not modelled), or a peer class
/// (cosmos, bmq) in place of the fair class.
pub fn check_uclamp_supported(
    workload: &crate::workload::Workload,
    policy: &crate::policy::Policy,
    policy_text: &str,
) -> crate::Result<()> {
    let Some(t) = workload.tasks.iter().find(|t| t.uclamp.is_set()) else { return Ok(()) };
    let why = if !policy.features.on(crate::features::Feat::UCLAMP_TASK) {
        "clamps need UCLAMP_TASK, on in the v6.12 and later profiles (uclamp as v6.2+ applies it; v5.9's \
         rules are not modelled, v4.14 had none)"
    } else if !matches!(policy.class, crate::policy::ClassKind::Fair) {
        "clamps are modelled for the fair and RT classes only, not under a peer class"
    } else {
        return Ok(());
    };
    Err(crate::SchedlabError::spec(
        "policy",
        policy_text,
        format!("no utilisation clamps (task '{}' asks for one): {why}", t.name),
    ))
}

impl Sim {
    /// `p->sched_class->uclamp_enabled`: the fair and RT classes count their
    /// tasks; the `sugov:N` threads stand for the kernel's SCHED_DEADLINE
    /// ones, whose class does not.
    #[inline]
    fn uclamp_enabled(&self, p: TaskId) -> bool {
        matches!(self.tasks[p.idx()].class, crate::class::SchedClass::Fair | crate::class::SchedClass::Rt)
            && self.sugov_domain_of(p).is_none()
    }

    /// `uclamp_rq_inc(rq, p, flags)`, from `enqueue_task` and from
    /// `ttwu_runnable`'s requeue of a delayed task (`delayed_wakeup`). A task
    /// still delayed is not counted unless this is its wakeup: it left the
    /// buckets when it was delayed.
    #[inline]
    pub(crate) fn uclamp_rq_inc(&mut self, cpu: CpuId, p: TaskId, delayed_wakeup: bool) {
        // The static key's test at the call site; the counting out of line.
        if self.uclamp_used {
            self.uclamp_rq_inc_used(cpu, p, delayed_wakeup);
        }
    }

    /// `uclamp_rq_inc` once some task asked for a clamp.
    #[inline(never)]
    fn uclamp_rq_inc_used(&mut self, cpu: CpuId, p: TaskId, delayed_wakeup: bool) {
        if !self.uclamp_enabled(p) {
            return;
        }
        if !delayed_wakeup && self.class_task_delayed(p) {
            return;
        }
        let t = &mut self.tasks[p.idx()];
        let rq = &mut self.rqs[cpu.idx()].uclamp;
        for id in [UCLAMP_MIN, UCLAMP_MAX] {
            t.uclamp.eff[id] = t.uclamp.eff_get(id);
            rq.inc_id(id, &mut t.uclamp.eff[id]);
        }
        rq.idle = false;
    }

    /// `uclamp_rq_dec(rq, p)`, from `dequeue_task` before the class lets go.
    #[inline]
    pub(crate) fn uclamp_rq_dec(&mut self, cpu: CpuId, p: TaskId) {
        if !self.uclamp_used || !self.uclamp_enabled(p) {
            return;
        }
        let t = &mut self.tasks[p.idx()];
        let rq = &mut self.rqs[cpu.idx()].uclamp;
        for id in [UCLAMP_MIN, UCLAMP_MAX] {
            rq.dec_id(id, &mut t.uclamp.eff[id]);
        }
    }

    /// The invariant: the clamp buckets of each runqueue count the tasks
    /// whose clamps are active there, and those are the queued, not
    /// delayed tasks of a counting class.
    pub(crate) fn check_uclamp(&self) -> Result<(), String> {
        if !self.uclamp_used {
            return Ok(());
        }
        let mut active = vec![0u32; self.rqs.len()];
        for t in &self.tasks {
            let counted = t.on_rq && self.uclamp_enabled(t.id) && !self.class_task_delayed(t.id);
            if t.uclamp.eff[UCLAMP_MIN].active != counted || t.uclamp.eff[UCLAMP_MAX].active != counted {
                return Err(format!("task {}: uclamp active {:?}, expected {counted}", t.name, t.uclamp.eff));
            }
            active[t.cpu.idx()] += counted as u32;
        }
        for (c, n) in active.iter().enumerate() {
            for id in [UCLAMP_MIN, UCLAMP_MAX] {
                let got = self.rqs[c].uclamp.counted(id);
                if got != *n {
                    return Err(format!("cpu {c}: {got} tasks in the clamp buckets, {n} counted tasks queued"));
                }
            }
        }
        Ok(())
    }

    /// `uclamp_is_used()`.
    #[inline]
    pub fn uclamp_is_used(&self) -> bool {
        self.uclamp_used
    }

    /// `uclamp_eff_value(p, clamp_id)`.
    #[inline]
    pub fn uclamp_eff_value(&self, p: TaskId, clamp_id: usize) -> u64 {
        self.tasks[p.idx()].uclamp.eff_value(clamp_id) as u64
    }

    /// `uclamp_rq_get(rq, clamp_id)`.
    #[inline]
    pub fn uclamp_rq_get(&self, cpu: CpuId, clamp_id: usize) -> u64 {
        self.rqs[cpu.idx()].uclamp.value[clamp_id] as u64
    }

    /// `uclamp_rq_is_idle(rq)`: no task counted (the maximum clamp is held).
    #[inline]
    pub fn uclamp_rq_is_idle(&self, cpu: CpuId) -> bool {
        self.rqs[cpu.idx()].uclamp.idle
    }
}

#[cfg(test)]
#[path = "uclamp_tests.rs"]
mod tests;
