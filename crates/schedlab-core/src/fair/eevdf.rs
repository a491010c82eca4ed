//! The EEVDF runqueue of the fair class (kernel/sched/fair.c, recent
//! mainline/linux-next): virtual runtime, lag, eligibility, virtual
//! deadlines, placement, delayed dequeue, slice protection and wakeup
//! preemption. One flat `cfs_rq` per CPU (no group scheduling).
//!
//! ## Eligibility, derived
//! Each entity `i` has weight `w_i` and virtual runtime `v_i` (service / w).
//! The ideal fluid scheduler's virtual time is the weighted mean
//! `V = sum(w_i v_i) / W`, `W = sum(w_i)`, because lags sum to zero:
//! `lag_i = w_i (V - v_i)`, `sum(lag_i) = 0`. An entity is *eligible* when it
//! is owed service, `lag_i >= 0`, i.e. `v_i <= V`. Among eligible entities
//! EEVDF runs the one with the earliest virtual deadline
//! `vd_i = v_i + slice_i * NICE_0_LOAD / w_i`.
//!
//! `v_i` are large u64s, so the sums are kept relative to a reference
//! `v0 = zero_vruntime`: `sum_w_vruntime = sum(w_i (v_i - v0))`,
//! `sum_weight = W`. Then `V = v0 + sum_w_vruntime / W`, and eligibility
//! `v_i - v0 <= sum_w_vruntime / W` is tested as
//! `sum_w_vruntime >= (v_i - v0) * W`: multiplying instead of dividing keeps
//! it exact (the division would round and misjudge entities right at V).
//! `zero_vruntime` is re-centred on V whenever it moves, so the keys stay
//! small (they are bounded by the lag limits).
//!
//! The kernel keeps queued entities in an augmented rbtree; here they are a
//! `Vec<TaskId>` scanned linearly (runqueues hold at most ~100 entities).
//! The scan returns what the tree search returns: the eligible entity with
//! the earliest deadline, ties to the earliest queued.
//!
//! The CFS discipline (v2.6.23 .. v6.5) shares this runqueue and entity
//! and lives in `cfs.rs`: each public method below hands over to it when the
//! `EEVDF` feature is off.
//!
//! PELT is not updated here: the engine calls `pelt::update_load_avg_*`
//! around these calls, as `update_load_avg()` does in the kernel.

use super::cfs::CfsParams;
use super::entities::Entities;
use crate::features::Features;
use crate::ids::{Ns, TaskId};
use crate::sched_feat;

pub use super::weight::{calc_delta, calc_delta_fair, inv_weight, nice_to_weight, SCHED_PRIO_TO_WEIGHT, WMULT_CONST};

/// `normalized_sysctl_sched_base_slice`: 0.70 ms, before CPU scaling, since
/// v6.15 (2ae891b82695, "sched: Reduce the default slice to avoid tasks
/// getting an extra tick"), which the 6.12 stable line took as well: Debian's
/// 6.12.95 prints 2100000 in /sys/kernel/debug/sched/base_slice_ns on 4
/// CPUs, and `validate` compares every guest recording's value with
/// `api::kernel_tunables`. v6.6 .. v6.14 as first released had 0.75 ms; every
/// profile here uses 0.70 ms.
pub const NORMALIZED_SYSCTL_SCHED_BASE_SLICE_NS: Ns = 700_000;

/// `get_update_sysctl_factor()` with the default SCHED_TUNABLESCALING_LOG:
/// `1 + ilog2(min(ncpus, 8))`.
pub fn get_update_sysctl_factor(nr_cpus: usize) -> u64 {
    let cpus = nr_cpus.clamp(1, 8) as u64;
    1 + cpus.ilog2() as u64
}

/// `sysctl_sched_base_slice` for a machine with `nr_cpus` online CPUs.
pub fn base_slice_ns(nr_cpus: usize) -> Ns {
    NORMALIZED_SYSCTL_SCHED_BASE_SLICE_NS * get_update_sysctl_factor(nr_cpus)
}

/// Tunables of one runqueue, fixed at build time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EevdfParams {
    /// `sysctl_sched_base_slice` (ns): the default request size.
    pub base_slice_ns: Ns,
    /// `normalized_sysctl_sched_base_slice` (ns): the minimum protected
    /// quantum under NO_RUN_TO_PARITY.
    pub normalized_base_slice_ns: Ns,
    /// `TICK_NSEC` (ns): lower bound of the lag clamp; 4 ms at HZ=250.
    pub tick_ns: Ns,
    /// The CFS tunables (`sched_latency` and granularities), used under NO_EEVDF.
    pub cfs: CfsParams,
}

impl EevdfParams {
    /// Parameters for `nr_cpus` CPUs and a tick of `hz` per second.
    pub fn new(nr_cpus: usize, hz: u64) -> Self {
        EevdfParams {
            base_slice_ns: base_slice_ns(nr_cpus),
            normalized_base_slice_ns: NORMALIZED_SYSCTL_SCHED_BASE_SLICE_NS,
            tick_ns: crate::ids::NSEC_PER_SEC / hz.max(1),
            cfs: CfsParams::new(nr_cpus),
        }
    }
}

/// A schedulable entity (kernel `struct sched_entity`, the EEVDF part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedEntity {
    /// Load weight, unscaled (1024 for nice 0).
    pub weight: u64,
    /// `WMULT_CONST / weight`.
    pub inv_weight: u32,
    /// Virtual runtime (ns of nice-0 service).
    pub vruntime: u64,
    /// Virtual deadline; relative to vruntime while `rel_deadline`.
    pub deadline: u64,
    /// Virtual lag `V - v` saved at dequeue, used by the next placement.
    pub vlag: i64,
    /// Vruntime up to which the running entity is protected from wakeup preemption.
    pub vprot: u64,
    /// Request size (ns of real time).
    pub slice: u64,
    /// On the runqueue (including delayed and current).
    pub on_rq: bool,
    /// Asleep but kept queued until eligible (DELAY_DEQUEUE).
    pub sched_delayed: bool,
    /// `deadline` holds `deadline - vruntime` (kept over a migration).
    pub rel_deadline: bool,
    /// The slice was set by the user (`sched_attr.sched_runtime`), not the sysctl.
    pub custom_slice: bool,
    /// Task clock (ns) when accounting last started; 0 after a migration.
    pub exec_start: u64,
    /// Total real run time (ns).
    pub sum_exec_runtime: u64,
    /// `sum_exec_runtime` when the entity was last picked.
    pub prev_sum_exec_runtime: u64,
    /// CFS: `vruntime` holds `vruntime - min_vruntime` of the runqueue it
    /// left (a migration, or a new task), to be re-based on the next enqueue.
    pub vruntime_normalized: bool,
    /// CFS: `min_vruntime` of its runqueue when it last went to sleep.
    pub sleep_min_vruntime: u64,
}

impl SchedEntity {
    /// A fresh entity of the given nice with the base slice `slice_ns`.
    pub fn new(nice: i32, slice_ns: u64) -> Self {
        let weight = nice_to_weight(nice);
        SchedEntity {
            weight,
            inv_weight: inv_weight(weight),
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice: slice_ns,
            on_rq: false,
            sched_delayed: false,
            rel_deadline: false,
            custom_slice: false,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            vruntime_normalized: false,
            sleep_min_vruntime: 0,
        }
    }

    /// `__setparam_fair` with a `sched_runtime`: a custom slice clamped to
    /// 0.1 ms ..= 100 ms.
    pub fn with_custom_slice(nice: i32, slice_ns: u64) -> Self {
        let mut se = Self::new(nice, slice_ns.clamp(100_000, 100_000_000));
        se.custom_slice = true;
        se
    }
}

/// Enqueue flags (kernel `ENQUEUE_*` names; the bit values are schedlab's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnqueueFlags(pub u32);

impl EnqueueFlags {
    /// Task wakes up from sleep.
    pub const WAKEUP: Self = Self(0x01);
    /// Re-enqueue after a dequeue with SAVE (attribute change).
    pub const RESTORE: Self = Self(0x02);
    /// The task moved to this CPU.
    pub const MIGRATED: Self = Self(0x40);
    /// `ENQUEUE_HEAD`: queue at the head of the task's level (RT).
    pub const HEAD: Self = Self(0x10);
    /// A new task (fork): PLACE_DEADLINE_INITIAL applies.
    pub const INITIAL: Self = Self(0x80);
    /// Requeue of a delayed task (its wakeup).
    pub const DELAYED: Self = Self(0x200);
    /// Whether all bits of `other` are set.
    pub fn has(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for EnqueueFlags {
    type Output = Self;
    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

/// Dequeue flags (kernel `DEQUEUE_*` names; the bit values are schedlab's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DequeueFlags(pub u32);

impl DequeueFlags {
    /// The task goes to sleep.
    pub const SLEEP: Self = Self(0x01);
    /// Attribute change; will be put back with RESTORE.
    pub const SAVE: Self = Self(0x02);
    /// Changing position (with SAVE).
    pub const MOVE: Self = Self(0x04);
    /// A sleep that must not be delayed (special task states, throttling).
    pub const SPECIAL: Self = Self(0x10);
    /// Finishing a delayed dequeue.
    pub const DELAYED: Self = Self(0x200);
    /// Whether all bits of `other` are set.
    pub fn has(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for DequeueFlags {
    type Output = Self;
    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

/// What [`CfsRq::update_curr`] accounted and decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CurrUpdate {
    /// Real time charged to curr (ns).
    pub delta_exec: u64,
    /// curr should be rescheduled (`resched_curr_lazy`).
    pub resched: bool,
}

/// Result of [`CfsRq::pick_next_entity`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Run this task.
    Task(TaskId),
    /// This delayed task came up: finish its dequeue
    /// (`DEQUEUE_SLEEP | DEQUEUE_DELAYED`) and pick again.
    Delayed(TaskId),
    /// Nothing queued.
    Idle,
}

/// The fair runqueue of one CPU (kernel `struct cfs_rq`, EEVDF part).
///
/// Entities live in the caller's `ses` slice, indexed by [`TaskId::idx`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfsRq {
    /// Tunables.
    pub params: EevdfParams,
    /// The running entity (not in `queue`).
    pub curr: Option<TaskId>,
    /// Queued entities other than curr, in enqueue order (the "tree").
    pub queue: Vec<TaskId>,
    /// `load.weight`: sum of weights of all on_rq entities, curr included.
    pub load_weight: u64,
    /// Reference point of the relative sums (kernel `zero_vruntime`,
    /// formerly `min_vruntime`).
    pub zero_vruntime: u64,
    /// `sum(w_i * (v_i - zero_vruntime))` over `queue` (kernel
    /// `sum_w_vruntime`, formerly `avg_vruntime`).
    pub sum_w_vruntime: i64,
    /// `sum(w_i)` over `queue` (kernel `sum_weight`, formerly `avg_load`).
    pub sum_weight: u64,
    /// Entities on the queue, curr and delayed ones included.
    pub nr_queued: u32,
    /// Runnable tasks (delayed ones excluded).
    pub h_nr_runnable: u32,
    /// Queued SCHED_IDLE tasks (`h_nr_idle`), delayed ones included as
    /// `nr_running` counts them: `sched_idle_rq` compares the two.
    pub h_nr_idle: u32,
    /// Next buddy: preferred at the next pick while eligible (EEVDF), or
    /// while within `wakeup_gran` of the leftmost (CFS).
    pub next: Option<TaskId>,
    /// CFS last buddy: the task a wakeup preempted, preferred at the next
    /// pick while within `wakeup_gran` of the leftmost (LAST_BUDDY).
    pub last: Option<TaskId>,
    /// CFS `min_vruntime`: monotonic floor of the queue's vruntimes, the
    /// base of placement and of migration normalisation.
    pub min_vruntime: u64,
    /// Skip buddy (CFS only): the task that called `sched_yield`, passed
    /// over at the next pick when that is not too unfair.
    pub skip: Option<TaskId>,
    /// The run's features, latched from the last call that carried them:
    /// [`Self::update_curr`] has no features argument (the engine's tick
    /// calls it bare) but must know the discipline. curr can only be set by
    /// [`Self::set_next_entity`], which latches them.
    pub features: Features,
}

impl CfsRq {
    /// An empty runqueue.
    pub fn new(params: EevdfParams) -> Self {
        CfsRq {
            params,
            curr: None,
            queue: Vec::new(),
            load_weight: 0,
            zero_vruntime: 0,
            sum_w_vruntime: 0,
            sum_weight: 0,
            nr_queued: 0,
            h_nr_runnable: 0,
            h_nr_idle: 0,
            next: None,
            last: None,
            min_vruntime: super::cfs::INIT_MIN_VRUNTIME,
            skip: None,
            features: Features::mainline(),
        }
    }

    pub(super) fn entity_key(&self, se: &SchedEntity) -> i64 {
        se.vruntime.wrapping_sub(self.zero_vruntime) as i64
    }

    /// curr, when it is still queued (it may be mid-dequeue).
    pub(super) fn curr_on_rq<'a>(&self, ses: &'a Entities) -> Option<&'a SchedEntity> {
        self.curr.map(|c| &ses[c.idx()]).filter(|se| se.on_rq)
    }

    /// Sums including curr: (sum of w*key, W).
    fn sums_with_curr(&self, ses: &Entities) -> (i64, i64) {
        let (mut avg, mut load) = (self.sum_w_vruntime, self.sum_weight as i64);
        if let Some(c) = self.curr_on_rq(ses) {
            avg += self.entity_key(c) * c.weight as i64;
            load += c.weight as i64;
        }
        (avg, load)
    }

    /// `avg_vruntime`: V, rounded down so that an entity at V is eligible.
    pub fn avg_vruntime(&self, ses: &Entities) -> u64 {
        let (mut avg, load) = self.sums_with_curr(ses);
        if load != 0 {
            if avg < 0 {
                avg -= load - 1; // floor, not truncation toward zero
            }
            avg /= load;
        }
        self.zero_vruntime.wrapping_add(avg as u64)
    }

    /// `vruntime_eligible`: `V >= vruntime`, without division.
    pub fn vruntime_eligible(&self, ses: &Entities, vruntime: u64) -> bool {
        self.eligible_in(self.sums_with_curr(ses), vruntime)
    }

    /// `vruntime_eligible` with the sums (`sums_with_curr`) already read:
    /// a pick tests every queued entity against the same sums.
    #[inline]
    fn eligible_in(&self, (avg, load): (i64, i64), vruntime: u64) -> bool {
        avg as i128 >= vruntime.wrapping_sub(self.zero_vruntime) as i64 as i128 * load as i128
    }

    /// `entity_eligible`: the entity is owed service (lag >= 0).
    pub fn entity_eligible(&self, ses: &Entities, id: TaskId) -> bool {
        self.vruntime_eligible(ses, ses[id.idx()].vruntime)
    }

    /// `update_zero_vruntime`: move the reference point to V.
    pub(super) fn update_zero_vruntime(&mut self, ses: &Entities) {
        let v = self.avg_vruntime(ses);
        let delta = v.wrapping_sub(self.zero_vruntime) as i64;
        // v' = v - d for every key: the sum moves by -d * W.
        self.sum_w_vruntime -= self.sum_weight as i64 * delta;
        self.zero_vruntime = v;
    }

    /// `__enqueue_entity`: into the "tree" and the sums.
    #[inline(always)]
    pub(super) fn enqueue_tree(&mut self, ses: &Entities, id: TaskId) {
        let se = &ses[id.idx()];
        self.sum_w_vruntime += self.entity_key(se) * se.weight as i64;
        self.sum_weight += se.weight;
        self.queue.push(id);
        self.update_zero_vruntime(ses);
    }

    /// `__dequeue_entity`: out of the "tree" and the sums.
    pub(super) fn dequeue_tree(&mut self, ses: &Entities, id: TaskId) {
        if let Some(pos) = self.queue.iter().position(|&t| t == id) {
            // `Vec::remove` keeps enqueue order for tie-breaks, but calls
            // `memmove` even for the usual nothing-to-move case (the last
            // entry): a swap loop to the end, then a pop.
            let q = &mut self.queue[pos..];
            for i in 1..q.len() {
                q.swap(i - 1, i);
            }
            self.queue.pop();
            let se = &ses[id.idx()];
            self.sum_w_vruntime -= self.entity_key(se) * se.weight as i64;
            self.sum_weight -= se.weight;
        }
    }

    /// `cfs_rq_min_slice`: the shortest slice among queued entities and curr.
    pub fn cfs_rq_min_slice(&self, ses: &Entities) -> u64 {
        let curr = self.curr_on_rq(ses).map_or(u64::MAX, |c| c.slice);
        self.queue.iter().map(|t| ses[t.idx()].slice).fold(curr, u64::min)
    }

    /// `set_protect_slice`: protect curr until its deadline, or for the
    /// shortest queued slice (RUN_TO_PARITY), or for a minimum quantum.
    fn set_protect_slice(&self, ses: &mut Entities, id: TaskId, f: &Features) {
        let mut slice = self.params.normalized_base_slice_ns;
        if sched_feat!(f, RUN_TO_PARITY) {
            slice = self.cfs_rq_min_slice(ses);
        }
        let se = &mut ses[id.idx()];
        slice = slice.min(se.slice);
        let mut vprot = se.deadline;
        if slice != se.slice {
            vprot = min_vruntime(vprot, se.vruntime.wrapping_add(calc_delta_fair(slice, se)));
        }
        se.vprot = vprot;
    }

    /// `update_protect_slice`: shorten curr's protection to the shortest slice.
    fn update_protect_slice(&self, ses: &mut Entities, id: TaskId) {
        let slice = self.cfs_rq_min_slice(ses);
        let se = &mut ses[id.idx()];
        se.vprot = min_vruntime(se.vprot, se.vruntime.wrapping_add(calc_delta_fair(slice, se)));
    }

    /// `__pick_eevdf`: the eligible entity with the earliest deadline; curr
    /// wins while protected (`protect`) and eligible.
    #[inline(always)]
    fn pick_eevdf(&self, ses: &Entities, protect: bool) -> Option<TaskId> {
        let first = self.queue.first().copied();
        if self.nr_queued == 1 {
            return if self.curr_on_rq(ses).is_some() { self.curr } else { first };
        }
        // The sums are read once for the pick (nothing here changes them).
        let sums = self.sums_with_curr(ses);
        let curr = self.curr.filter(|&c| ses[c.idx()].on_rq && self.eligible_in(sums, ses[c.idx()].vruntime));
        if let Some(c) = curr {
            if protect && protect_slice(&ses[c.idx()]) {
                return Some(c);
            }
        }
        let mut best: Option<TaskId> = None;
        for &t in &self.queue {
            if !self.eligible_in(sums, ses[t.idx()].vruntime) {
                continue;
            }
            if best.is_none_or(|b| entity_before(&ses[t.idx()], &ses[b.idx()])) {
                best = Some(t);
            }
        }
        if let Some(c) = curr {
            if best.is_none_or(|b| entity_before(&ses[c.idx()], &ses[b.idx()])) {
                best = Some(c);
            }
        }
        // V is a weighted mean, so someone is always eligible; rounding aside,
        // fall back to the first queued entity rather than return nothing.
        best.or(first).or(self.curr)
    }

    /// `update_deadline`: when curr reached its deadline, renew its request.
    /// Returns true when the slice was used up.
    fn update_deadline(&self, se: &mut SchedEntity) -> bool {
        if (se.vruntime.wrapping_sub(se.deadline) as i64) < 0 {
            return false;
        }
        if !se.custom_slice {
            se.slice = self.params.base_slice_ns;
        }
        // EEVDF: vd_i = ve_i + r_i / w_i
        se.deadline = se.vruntime.wrapping_add(calc_delta_fair(se.slice, se));
        true
    }

    /// `update_curr`: charge curr the task-clock time since `exec_start`.
    /// Under CFS `resched` is `check_preempt_tick`'s verdict (the engine's
    /// tick acts on it; other callers ignore it).
    #[inline(always)]
    pub fn update_curr(&mut self, ses: &mut Entities, now: Ns) -> CurrUpdate {
        if !sched_feat!(self.features, EEVDF) {
            return self.update_curr_cfs(ses, now);
        }
        let Some(c) = self.curr else {
            return CurrUpdate::default();
        };
        let se = &mut ses[c.idx()];
        let Some(delta_exec) = update_se(se, now) else {
            return CurrUpdate::default();
        };
        let used_up = self.update_deadline(se);
        self.update_zero_vruntime(ses);
        if self.nr_queued == 1 {
            return CurrUpdate { delta_exec, resched: false };
        }
        let resched = used_up || !protect_slice(&ses[c.idx()]);
        if resched && self.next == Some(c) {
            self.next = None; // clear_buddies
        }
        CurrUpdate { delta_exec, resched }
    }

    /// `place_entity`: set vruntime and deadline of an entity joining the
    /// queue. With PLACE_LAG the saved lag is kept, inflated by
    /// `(W + w_i) / W` because adding the entity itself moves V towards it:
    /// `V' = V - w_i vl_i / (W + w_i)`, so placing at `V - vl_i (W + w_i)/W`
    /// leaves it exactly `vl_i` behind the new V.
    #[inline(always)]
    pub fn place_entity(&self, ses: &mut Entities, id: TaskId, flags: EnqueueFlags, f: &Features) {
        let vruntime = self.avg_vruntime(ses);
        let curr_w = self.curr_on_rq(ses).map_or(0, |c| c.weight);
        let se = &mut ses[id.idx()];
        if !se.custom_slice {
            se.slice = self.params.base_slice_ns;
        }
        let mut vslice = calc_delta_fair(se.slice, se);
        let mut lag: i64 = 0;
        if sched_feat!(f, PLACE_LAG) && self.nr_queued > 0 && se.vlag != 0 {
            let load = (self.sum_weight + curr_w).max(1) as i128;
            lag = (se.vlag as i128 * (load + se.weight as i128) / load) as i64;
        }
        se.vruntime = vruntime.wrapping_sub(lag as u64);
        if se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        // Joining tasks start half a slice in, like the average running one.
        if sched_feat!(f, PLACE_DEADLINE_INITIAL) && flags.has(EnqueueFlags::INITIAL) {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// `enqueue_entity` (+ the h_nr_runnable count of `enqueue_task_fair`).
    /// `now` is the task clock, for `update_curr`. NO_EEVDF: CFS
    /// (`enqueue_entity_cfs`: min_vruntime re-basing, `place_entity` CFS).
    pub fn enqueue_entity(
        &mut self,
        ses: &mut Entities,
        id: TaskId,
        now: Ns,
        flags: EnqueueFlags,
        f: &Features,
    ) -> CurrUpdate {
        self.features = *f;
        if !sched_feat!(f, EEVDF) {
            return self.enqueue_entity_cfs(ses, id, now, flags, f);
        }
        let is_curr = self.curr == Some(id);
        // curr is renormalised before update_curr, others after.
        if is_curr {
            self.place_entity(ses, id, flags, f);
        }
        let upd = self.update_curr(ses, now);
        if !is_curr {
            self.place_entity(ses, id, flags, f);
        }
        self.load_weight += ses[id.idx()].weight;
        self.nr_queued += 1;
        if !ses[id.idx()].sched_delayed {
            self.h_nr_runnable += 1;
        }
        if flags.has(EnqueueFlags::MIGRATED) {
            ses[id.idx()].exec_start = 0; // no longer cache hot
        }
        if !is_curr {
            self.enqueue_tree(ses, id);
        }
        ses[id.idx()].on_rq = true;
        upd
    }

    /// `dequeue_entity`: returns false when DELAY_DEQUEUE keeps a sleeping,
    /// not yet eligible entity queued (`sched_delayed`); it competes until
    /// picked ([`Pick::Delayed`]) or woken ([`Self::requeue_delayed_entity`]).
    /// Without SLEEP (a migration) the relative deadline is kept
    /// (PLACE_REL_DEADLINE) and vlag carries the lag to the new queue.
    /// NO_EEVDF: CFS, always completes (`dequeue_entity_cfs`).
    pub fn dequeue_entity(
        &mut self,
        ses: &mut Entities,
        id: TaskId,
        now: Ns,
        flags: DequeueFlags,
        f: &Features,
    ) -> bool {
        self.features = *f;
        if !sched_feat!(f, EEVDF) {
            return self.dequeue_entity_cfs(ses, id, now, flags);
        }
        let sleep = flags.has(DequeueFlags::SLEEP);
        self.update_curr(ses, now);
        if self.next == Some(id) {
            self.next = None;
        }
        if !flags.has(DequeueFlags::DELAYED) {
            let delay = sleep && !flags.has(DequeueFlags::SPECIAL);
            if sched_feat!(f, DELAY_DEQUEUE) && delay && !self.entity_eligible(ses, id) {
                if sched_feat!(f, delayed_lag_floor) {
                    // 2026: the lag the entity is delayed with is kept.
                    self.update_entity_lag(ses, id);
                }
                ses[id.idx()].sched_delayed = true; // set_delayed
                self.h_nr_runnable -= 1;
                return false;
            }
        }
        self.update_entity_lag(ses, id);
        if sched_feat!(f, PLACE_REL_DEADLINE) && !sleep {
            let se = &mut ses[id.idx()];
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
        if self.curr != Some(id) {
            self.dequeue_tree(ses, id);
        }
        let se = &mut ses[id.idx()];
        se.on_rq = false;
        self.load_weight -= se.weight;
        self.nr_queued -= 1;
        if !se.sched_delayed {
            self.h_nr_runnable -= 1;
        }
        if flags.has(DequeueFlags::DELAYED) {
            // finish_delayed_dequeue_entity: clear_delayed (+1) and the
            // dequeue's own -1 cancel out in h_nr_runnable.
            se.sched_delayed = false;
            if sched_feat!(f, DELAY_ZERO) && se.vlag > 0 {
                se.vlag = 0;
            }
        }
        if flags.0 & (DequeueFlags::SAVE.0 | DequeueFlags::MOVE.0) != DequeueFlags::SAVE.0 {
            self.update_zero_vruntime(ses);
        }
        true
    }

    /// `pick_next_entity`: the next buddy if eligible (PICK_BUDDY), else
    /// `pick_eevdf`. Call [`Self::update_curr`] first when curr ran.
    /// NO_EEVDF: the leftmost vruntime with CFS buddies (`pick_next_entity_cfs`).
    #[inline(always)]
    pub fn pick_next_entity(&self, ses: &Entities, f: &Features) -> Pick {
        if !sched_feat!(f, EEVDF) {
            return self.pick_next_entity_cfs(ses);
        }
        if self.nr_queued == 0 {
            return Pick::Idle;
        }
        if let Some(n) = self.next {
            if sched_feat!(f, PICK_BUDDY) && self.entity_eligible(ses, n) && !ses[n.idx()].sched_delayed {
                return Pick::Task(n);
            }
        }
        match self.pick_eevdf(ses, true) {
            Some(t) if ses[t.idx()].sched_delayed => Pick::Delayed(t),
            Some(t) => Pick::Task(t),
            None => Pick::Idle,
        }
    }

    /// `set_next_entity`: make `id` curr (out of the tree), start its
    /// accounting at task clock `now` and protect its slice (EEVDF only).
    pub fn set_next_entity(&mut self, ses: &mut Entities, id: TaskId, now: Ns, f: &Features) {
        self.features = *f;
        if !sched_feat!(f, EEVDF) {
            return self.set_next_entity_cfs(ses, id, now);
        }
        if self.next == Some(id) {
            self.next = None;
        }
        if ses[id.idx()].on_rq {
            self.dequeue_tree(ses, id);
            // The kernel sets curr after this; curr is not yet counted here.
            self.set_protect_slice(ses, id, f);
        }
        debug_assert!(self.curr.is_none());
        self.curr = Some(id);
        let se = &mut ses[id.idx()];
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// `put_prev_entity`: curr stops running; back into the tree if queued.
    pub fn put_prev_entity(&mut self, ses: &mut Entities, now: Ns) -> CurrUpdate {
        let Some(prev) = self.curr else {
            return CurrUpdate::default();
        };
        let mut upd = CurrUpdate::default();
        if ses[prev.idx()].on_rq {
            upd = self.update_curr(ses, now);
            self.curr = None;
            self.enqueue_tree(ses, prev);
        }
        self.curr = None;
        upd
    }

    /// `check_preempt_wakeup_fair` / `wakeup_preempt_fair`: after `woken` was
    /// enqueued, should curr be preempted? True when the woken entity is now
    /// the EEVDF pick (curr's slice protection counts unless PREEMPT_SHORT
    /// lets a shorter slice through), or when updating curr used up its
    /// slice. `fork` is WF_FORK (no next buddy for new tasks). NO_EEVDF:
    /// CFS `check_preempt_wakeup` (vruntime gap against `wakeup_gran`).
    pub fn wakeup_preempt_fair(
        &mut self,
        ses: &mut Entities,
        woken: TaskId,
        now: Ns,
        (fork, pol): (bool, super::wakeup_policy::WakeupPolicies),
        f: &Features,
    ) -> bool {
        self.features = *f;
        if !sched_feat!(f, EEVDF) {
            return self.check_preempt_wakeup(ses, woken, now, (fork, pol), f);
        }
        let Some(c) = self.curr else { return true };
        if c == woken {
            return false;
        }
        if sched_feat!(f, NEXT_BUDDY) && !fork && !ses[woken.idx()].sched_delayed {
            self.next = Some(woken);
        }
        if !sched_feat!(f, WAKEUP_PREEMPTION) {
            return false;
        }
        if let Some(decided) = pol.decide_eevdf() {
            return decided;
        }
        let upd = self.update_curr(ses, now);
        let preempt_short = sched_feat!(f, PREEMPT_SHORT) && ses[woken.idx()].slice < ses[c.idx()].slice;
        // v6.19+: past PREEMPT_SHORT, a forked task (or a delayed entity,
        // which a task's own wakeup has already requeued here) does not
        // preempt; only update_curr's own resched stands.
        // DEVIATION(kernel): v6.19's NEXT_BUDDY (`set_preempt_buddy`,
        // `preempt_sync`) is not modelled; NEXT_BUDDY is off by default.
        if sched_feat!(f, wakeup_preempt_no_fork) && !preempt_short && fork {
            return upd.resched;
        }
        if self.pick_eevdf(ses, !preempt_short) == Some(woken) {
            if preempt_short {
                cancel_protect_slice(&mut ses[c.idx()]);
            }
            return true;
        }
        if sched_feat!(f, RUN_TO_PARITY) && preempt_short {
            self.update_protect_slice(ses, c);
        }
        upd.resched
    }
}

/// `entity_before`: earlier virtual deadline.
#[inline]
fn entity_before(a: &SchedEntity, b: &SchedEntity) -> bool {
    (a.deadline.wrapping_sub(b.deadline) as i64) < 0
}

#[inline]
fn min_vruntime(a: u64, b: u64) -> u64 {
    if (b.wrapping_sub(a) as i64) < 0 {
        b
    } else {
        a
    }
}

/// `protect_slice`: curr has not yet reached its protected vruntime.
#[inline]
pub fn protect_slice(se: &SchedEntity) -> bool {
    (se.vprot.wrapping_sub(se.vruntime) as i64) > 0
}

/// `cancel_protect_slice`: end curr's protection now.
#[inline]
pub fn cancel_protect_slice(se: &mut SchedEntity) {
    if protect_slice(se) {
        se.vprot = se.vruntime;
    }
}

#[cfg(test)]
#[path = "eevdf_tests.rs"]
mod tests;

/// `update_se` + the fair part of `update_curr`: charge the time since
/// `exec_start` to the running entity (runtime and weighted vruntime).
/// Returns the time charged, `None` when none passed.
pub(super) fn update_se(se: &mut SchedEntity, now: Ns) -> Option<Ns> {
    if now <= se.exec_start {
        return None;
    }
    let delta_exec = now - se.exec_start;
    se.exec_start = now;
    se.sum_exec_runtime += delta_exec;
    se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta_exec, se));
    Some(delta_exec)
}
