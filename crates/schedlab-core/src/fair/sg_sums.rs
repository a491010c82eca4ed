//! Per-group sums for `update_sg_lb_stats`, kept up to date instead of
//! recomputed from every CPU of every group at every balance pass.
//!
//! The kernel's `update_sg_lb_stats` walks the CPUs of a group and adds up
//! `capacity_of`, `cpu_load`, `cpu_util_cfs`, `cpu_runnable`, `nr_running`
//! and `h_nr_runnable`, and counts idle CPUs. A newly-idle pass on a
//! 192-CPU machine walks the whole machine that way, and schedlab pays it in
//! instructions while the kernel pays it only in its (modelled) balance
//! cost. Here each CPU's terms are remembered, and each group (every
//! `GroupRef` of every domain, a *slot*) holds the sums of its CPUs' terms.
//! When a runqueue changes (any mutable access, noted by `engine::rqs`), the
//! next balance pass first recomputes that CPU's terms and moves each of its
//! groups' sums by the difference: a few groups per CPU (one per domain
//! level), not the machine.
//!
//! The sums give exactly what the scan gives (integers, no order effects).
//! What they cannot give without the CPUs, the caller still scans for: a
//! group some of whose CPUs are excluded (`env->cpus`, after pinned tasks), a
//! misfit task in an asymmetric domain (the largest misfit load), and a lone
//! task on a CPU that lost capacity (`sched_reduced_capacity`'s largest
//! load). The counts below say when a group needs that. Debug builds compare
//! every summed group with the scan.

use super::lb_stats::GroupRef;
use crate::engine::Sim;
use crate::ids::CpuId;

/// One CPU's terms in the sums of `update_sg_lb_stats`, as its runqueue
/// gives them (named; [`CpuTerms`] is the form the sums add up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuReading {
    /// `capacity_of(i)`.
    pub capacity: u64,
    /// `arch_scale_cpu_capacity(i)` (for `check_cpu_capacity`).
    pub capacity_orig: u64,
    /// `cpu_load(rq)`.
    pub load: u64,
    /// `cpu_util_cfs(i)`.
    pub util: u64,
    /// `cpu_runnable(rq)`.
    pub runnable: u64,
    /// `rq->cfs.h_nr_runnable`.
    pub h_nr_running: u32,
    /// `rq->nr_running`.
    pub nr_running: u32,
    /// `!nr_running && idle_cpu(i)`: counted idle, nothing else looked at.
    pub idle: bool,
    /// Not idle and `rq->misfit_task_load != 0`.
    pub misfit: bool,
}

/// Words of the summed terms: the four loads, then the counts two to a
/// word in 32-bit lanes (see [`CpuTerms`]).
const CAPACITY: usize = 0;
const LOAD: usize = 1;
const UTIL: usize = 2;
const RUNNABLE: usize = 3;
/// `h_nr_running | nr_running << 32`.
const NR: usize = 4;
/// `idle | overloaded << 32`.
const IDLE: usize = 5;
/// `misfit | queued << 32` (`queued`: `h_nr_running > 0`).
const MISFIT: usize = 6;
/// Number of summed words.
const WORDS: usize = 7;

/// Low and high 32-bit lanes of a counts word.
#[inline]
fn lanes(w: u64) -> (u32, u32) {
    (w as u32, (w >> 32) as u32)
}

/// One CPU's terms as the words the group sums add up: the loads as they
/// are, the counts packed two to a word. A sum of packed words is the
/// packed sums as long as no lane's sum reaches 2^32 (task and CPU counts
/// of one group, far below it), and moving a sum by the wrapping
/// difference of two CPUs' words is exact for the same reason (the packing
/// is linear). So a CPU's change moves each of its groups by seven
/// additions, with no per-field unpacking.
#[derive(Clone, Copy, Debug, Default, Eq)]
pub struct CpuTerms {
    w: [u64; WORDS],
    /// `arch_scale_cpu_capacity(i)`: only `lone_reduced` reads it.
    capacity_orig: u64,
}

/// Word by word: the derived comparison of the array calls `memcmp`.
impl PartialEq for CpuTerms {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        let diff = self.w.iter().zip(&o.w).fold(self.capacity_orig ^ o.capacity_orig, |a, (x, y)| a | (x ^ y));
        diff == 0
    }
}

impl From<CpuReading> for CpuTerms {
    #[inline]
    fn from(r: CpuReading) -> Self {
        let overloaded = !r.idle && r.nr_running > 1;
        let mut w = [0u64; WORDS];
        w[CAPACITY] = r.capacity;
        w[LOAD] = r.load;
        w[UTIL] = r.util;
        w[RUNNABLE] = r.runnable;
        w[NR] = r.h_nr_running as u64 | (r.nr_running as u64) << 32;
        w[IDLE] = r.idle as u64 | (overloaded as u64) << 32;
        w[MISFIT] = r.misfit as u64 | ((r.h_nr_running != 0) as u64) << 32;
        CpuTerms { w, capacity_orig: r.capacity_orig }
    }
}

impl CpuTerms {
    /// Not idle with one fair task: `lone_reduced` may hold, for some
    /// `imbalance_pct`.
    #[inline]
    fn lone(&self) -> bool {
        self.w[IDLE] as u32 == 0 && self.w[NR] as u32 == 1
    }

    /// Not idle, one fair task, and a capacity `check_cpu_capacity` calls
    /// reduced at a domain of `imbalance_pct`.
    #[inline]
    fn lone_reduced(&self, imbalance_pct: u32) -> bool {
        self.lone() && self.w[CAPACITY] * (imbalance_pct as u64) < self.capacity_orig * 100
    }
}

/// The sums over one group's CPUs (the words of [`CpuTerms`], added).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupSums {
    w: [u64; WORDS],
    /// Non-idle CPUs with one fair task and a capacity that
    /// `check_cpu_capacity` calls reduced at the group's domain.
    pub nr_lone_reduced: u32,
}

impl GroupSums {
    /// Sum of `capacity_of`.
    #[inline]
    pub fn capacity(&self) -> u64 {
        self.w[CAPACITY]
    }
    /// Sum of `cpu_load`.
    #[inline]
    pub fn load(&self) -> u64 {
        self.w[LOAD]
    }
    /// Sum of `cpu_util_cfs`.
    #[inline]
    pub fn util(&self) -> u64 {
        self.w[UTIL]
    }
    /// Sum of `cpu_runnable`.
    #[inline]
    pub fn runnable(&self) -> u64 {
        self.w[RUNNABLE]
    }
    /// Sum of `h_nr_runnable`.
    #[inline]
    pub fn h_nr_running(&self) -> u32 {
        lanes(self.w[NR]).0
    }
    /// Sum of `nr_running`.
    #[inline]
    pub fn nr_running(&self) -> u32 {
        lanes(self.w[NR]).1
    }
    /// Idle CPUs.
    #[inline]
    pub fn idle_cpus(&self) -> u32 {
        lanes(self.w[IDLE]).0
    }
    /// Non-idle CPUs with more than one task (`sg_overloaded` at the root).
    #[inline]
    pub fn nr_overloaded(&self) -> u32 {
        lanes(self.w[IDLE]).1
    }
    /// Non-idle CPUs with a misfit task.
    #[inline]
    pub fn nr_misfit(&self) -> u32 {
        lanes(self.w[MISFIT]).0
    }
    /// CPUs with a fair task (`h_nr_runnable > 0`): when it equals
    /// [`GroupSums::h_nr_running`], none has more than one.
    #[inline]
    pub fn nr_queued_cpus(&self) -> u32 {
        lanes(self.w[MISFIT]).1
    }

    /// Move the sums by `d` (the wrapping difference of a CPU's new and old
    /// words) and, when either could be lone-reduced, by the change of the
    /// one term that depends on the group's domain (`imbalance_pct`).
    #[inline]
    fn apply(&mut self, d: &[u64; WORDS], lone: bool, old: &CpuTerms, new: &CpuTerms, imbalance_pct: u32) {
        for (s, d) in self.w.iter_mut().zip(d) {
            *s = s.wrapping_add(*d);
        }
        if lone {
            let (was, is) = (old.lone_reduced(imbalance_pct), new.lone_reduced(imbalance_pct));
            self.nr_lone_reduced = self.nr_lone_reduced.wrapping_add(is as u32).wrapping_sub(was as u32);
        }
    }
}

/// The wrapping difference of two CPUs' words: added to a sum that holds
/// the old terms, it leaves one that holds the new.
#[inline]
fn words_delta(old: &CpuTerms, new: &CpuTerms) -> [u64; WORDS] {
    let mut d = [0u64; WORDS];
    for ((d, n), o) in d.iter_mut().zip(&new.w).zip(&old.w) {
        *d = n.wrapping_sub(*o);
    }
    d
}

/// The sums of every group slot, and what each CPU last contributed.
#[derive(Clone, Debug)]
pub struct SgSums {
    /// By slot (`GroupRef::slot`): its sums and its domain's
    /// `imbalance_pct`, side by side so that moving a slot's sums costs one
    /// bounds check. After the groups' slots, one for each CPU that is in
    /// no group alone (see `CpuSlots::own`).
    groups: Vec<(GroupSums, u32)>,
    /// By CPU: its own slot, where its other slots are in `cpu_slots`, and
    /// the rest of its terms.
    cpus: Vec<CpuSlots>,
    /// The slots of every CPU but its own, CPU after CPU.
    cpu_slots: Vec<u32>,
    /// The smallest `imbalance_pct` of any group's slot: a CPU not
    /// lone-reduced at it is lone-reduced at none (see [`SgSums::set_terms`]).
    min_pct: u32,
    /// CPUs lone-reduced at `min_pct`: when none, no group's
    /// `nr_lone_reduced` is set (the usual balance pass then skips the test).
    nr_lone_reduced: u32,
}

/// One CPU's place in the sums.
#[derive(Clone, Copy, Debug)]
struct CpuSlots {
    /// The slot whose words are the CPU's terms: the group of it alone (the
    /// lowest level's groups are single CPUs), whose sums are its terms, so
    /// that a change writes them there instead of adding the difference
    /// and keeping a copy; a slot of its own when it is in no group alone.
    own: u32,
    /// Its other slots: `cpu_slots[at..end]`.
    at: u32,
    /// End of its other slots.
    end: u32,
    /// `arch_scale_cpu_capacity`, fixed with the machine (and
    /// `CpuTerms::capacity_orig` of its terms: not summed).
    capacity_orig: u64,
    /// Its terms in the own slot are lone-reduced at `min_pct`: kept, so
    /// that a change computes the test for its new terms only.
    lone_reduced: bool,
}

impl SgSums {
    /// Empty sums for the groups `refs` (by domain, their slots numbered in
    /// order) of domains whose `imbalance_pct` is `pct` (by domain), on CPUs
    /// whose `arch_scale_cpu_capacity` is `capacity_orig` (by CPU).
    pub fn new(refs: &[Vec<GroupRef>], pct: &[u32], sg_cpus: &[CpuId], capacity_orig: &[u64]) -> Self {
        let nr_cpus = capacity_orig.len();
        let mut imbalance_pct = Vec::new();
        let mut per_cpu: Vec<Vec<u32>> = vec![Vec::new(); nr_cpus];
        let mut own: Vec<Option<u32>> = vec![None; nr_cpus];
        for (sd, groups) in refs.iter().enumerate() {
            for g in groups {
                // A slot shared by groups of the same CPUs is summed once.
                if (g.slot as usize) < imbalance_pct.len() {
                    debug_assert_eq!(imbalance_pct[g.slot as usize], pct[sd]);
                    continue;
                }
                // Slots numbered in order (as `group_refs` numbers them):
                // every slot recorded below is then one of `groups`, which
                // `set_terms` indexes without bounds tests.
                assert_eq!(g.slot as usize, imbalance_pct.len(), "group slots numbered in order");
                imbalance_pct.push(pct[sd]);
                for c in g.cpus(sg_cpus) {
                    if g.nr_cpus == 1 && own[c.idx()].is_none() {
                        own[c.idx()] = Some(g.slot);
                    } else {
                        per_cpu[c.idx()].push(g.slot);
                    }
                }
            }
        }
        let min_pct = imbalance_pct.iter().copied().min().unwrap_or(0);
        let mut cpus = Vec::with_capacity(nr_cpus);
        let mut cpu_slots = Vec::new();
        for ((slots, own), &capacity_orig) in per_cpu.iter().zip(&own).zip(capacity_orig) {
            let own = own.unwrap_or_else(|| {
                // In no group alone: a slot no group reads (its pct unused).
                imbalance_pct.push(min_pct);
                imbalance_pct.len() as u32 - 1
            });
            let at = cpu_slots.len() as u32;
            cpu_slots.extend_from_slice(slots);
            cpus.push(CpuSlots { own, at, end: cpu_slots.len() as u32, capacity_orig, lone_reduced: false });
        }
        SgSums {
            min_pct,
            nr_lone_reduced: 0,
            groups: imbalance_pct.iter().map(|&p| (GroupSums::default(), p)).collect(),
            cpus,
            cpu_slots,
        }
    }

    /// Whether some CPU has one fair task on a capacity reduced at some
    /// group's `imbalance_pct`: else no group's `nr_lone_reduced` is set.
    #[inline]
    pub fn any_lone_reduced(&self) -> bool {
        self.nr_lone_reduced != 0
    }

    /// The sums of the group in `slot`.
    #[inline]
    pub fn group(&self, slot: u32) -> &GroupSums {
        &self.groups[slot as usize].0
    }

    /// `arch_scale_cpu_capacity(cpu)`, kept here for the sync's reads.
    #[inline]
    pub(crate) fn capacity_orig(&self, cpu: usize) -> u64 {
        Self::cpu_at(&self.cpus, cpu).capacity_orig
    }

    /// CPU `cpu`'s place, without a bounds test in release builds.
    #[inline(always)]
    fn cpu_at(cpus: &[CpuSlots], cpu: usize) -> &CpuSlots {
        debug_assert!(cpu < cpus.len(), "CPU {cpu} of {}", cpus.len());
        // SAFETY: `cpus` is `SgSums::cpus`, one entry per CPU of the machine
        // (`new` makes one per `capacity_orig` entry, which
        // `FairState::new` gives per CPU of the machine) and never resized,
        // and `cpu` a CPU of the machine: the callers are crate-internal
        // (`set_terms` and `capacity_orig` are `pub(crate)`), the sync with
        // a CPU of the runqueues' changed list (each pushed by
        // `Rqs::index_mut` for a runqueue it holds, see `IdTable::get`) and the
        // invariant checker with `0..nr_cpus`.
        unsafe { cpus.get_unchecked(cpu) }
    }

    /// CPU `cpu`'s place, mutably (see [`SgSums::cpu_at`]).
    #[inline(always)]
    fn cpu_at_mut(cpus: &mut [CpuSlots], cpu: usize) -> &mut CpuSlots {
        debug_assert!(cpu < cpus.len(), "CPU {cpu} of {}", cpus.len());
        // SAFETY: as in `cpu_at`: `cpu` is a CPU of the machine, which has
        // one entry in `cpus`.
        unsafe { cpus.get_unchecked_mut(cpu) }
    }

    /// Slot `s` (a group's sums and `imbalance_pct`), without a bounds test
    /// in release builds.
    #[inline(always)]
    fn slot_at(groups: &mut [(GroupSums, u32)], s: u32) -> &mut (GroupSums, u32) {
        debug_assert!((s as usize) < groups.len(), "slot {s} of {}", groups.len());
        // SAFETY: `groups` is `SgSums::groups` (one per slot, never
        // resized) and `s` a slot `new` recorded for a CPU, its own or one of
        // its `cpu_slots`: a group's slot is asserted there to be the next
        // one when first seen and pushed, a CPU in no group alone gets the
        // slot it pushes; each is below the slot count.
        unsafe { groups.get_unchecked_mut(s as usize) }
    }

    /// The CPU's slots besides its own (`cpu_slots[at..end]`), without
    /// bounds tests in release builds.
    #[inline(always)]
    fn other_slots<'a>(cpu_slots: &'a [u32], c: &CpuSlots) -> &'a [u32] {
        debug_assert!(c.at <= c.end && c.end as usize <= cpu_slots.len());
        // SAFETY: `new` set `at` and `end` to `cpu_slots`' length before and
        // after it appended the CPU's slots, and `cpu_slots` never changes
        // after: `at <= end <= cpu_slots.len()`.
        unsafe { cpu_slots.get_unchecked(c.at as usize..c.end as usize) }
    }

    /// The terms `cpu` last gave.
    pub fn terms(&self, cpu: usize) -> CpuTerms {
        let c = &self.cpus[cpu];
        CpuTerms { w: self.groups[c.own as usize].0.w, capacity_orig: c.capacity_orig }
    }

    /// Check that every group's sums are those of its CPUs' terms, and the
    /// count of lone-reduced CPUs (the invariant checker's part): the first
    /// difference, as text.
    pub fn check_sums(&self, refs: &[Vec<GroupRef>], sg_cpus: &[CpuId]) -> Result<(), String> {
        for (sd, groups) in refs.iter().enumerate() {
            for g in groups {
                let pct = self.groups[g.slot as usize].1;
                let mut want = GroupSums::default();
                let zero = CpuTerms::default();
                for c in g.cpus(sg_cpus) {
                    let t = &self.terms(c.idx());
                    want.apply(&words_delta(&zero, t), true, &zero, t, pct);
                }
                if &want != self.group(g.slot) {
                    return Err(format!(
                        "domain {sd} group {}: sums {:?}, its CPUs give {want:?}",
                        g.index,
                        self.group(g.slot)
                    ));
                }
            }
        }
        for (cpu, c) in self.cpus.iter().enumerate() {
            if c.lone_reduced != self.terms(cpu).lone_reduced(self.min_pct) {
                return Err(format!("CPU {cpu}'s lone-reduced flag is not its terms'"));
            }
        }
        let lone_reduced = (0..self.cpus.len()).filter(|&c| self.terms(c).lone_reduced(self.min_pct)).count();
        if lone_reduced != self.nr_lone_reduced as usize {
            return Err(format!("{} CPUs counted lone-reduced, their terms give {lone_reduced}", self.nr_lone_reduced));
        }
        Ok(())
    }

    /// `cpu`'s terms are now `t`: move its groups' sums by the difference
    /// and write them in its own slot.
    #[inline(always)]
    pub(crate) fn set_terms(&mut self, cpu: usize, t: CpuTerms) {
        let c = *Self::cpu_at(&self.cpus, cpu);
        debug_assert_eq!(t.capacity_orig, c.capacity_orig, "fixed with the machine");
        let (own, own_pct) = Self::slot_at(&mut self.groups, c.own);
        // No test for unchanged terms: 94% of the CPUs a pass re-reads did
        // change, and adding a zero difference is cheaper than comparing.
        let d = words_delta(&CpuTerms { w: own.w, capacity_orig: c.capacity_orig }, &t);
        // Only a CPU lone-reduced before or after can change a lone-reduced
        // count, and `capacity * pct < capacity_orig * 100` holds for every
        // pct below some bound, so a CPU lone-reduced at no slot's pct is not
        // at the smallest: testing that once spares each slot the test (a
        // lone task on an unreduced CPU, the usual case, moves no count).
        // The old terms' answer is kept with the CPU (`CpuSlots::lone_reduced`).
        let (was, is) = (c.lone_reduced, t.lone_reduced(self.min_pct));
        // The own slot written before the others are moved: the usual loop
        // keeps the difference, not both terms, in registers (the rare
        // lone-reduced path gets the old terms back from it).
        own.w = t.w;
        own.nr_lone_reduced = (is && t.lone_reduced(*own_pct)) as u32;
        let slots = Self::other_slots(&self.cpu_slots, &c);
        if was || is {
            self.nr_lone_reduced = self.nr_lone_reduced + is as u32 - was as u32;
            Self::cpu_at_mut(&mut self.cpus, cpu).lone_reduced = is;
            let mut old = t;
            for (o, d) in old.w.iter_mut().zip(&d) {
                *o = o.wrapping_sub(*d);
            }
            for &s in slots {
                let (sums, pct) = Self::slot_at(&mut self.groups, s);
                sums.apply(&d, true, &old, &t, *pct);
            }
        } else {
            for &s in slots {
                let sums = &mut Self::slot_at(&mut self.groups, s).0;
                for (s, d) in sums.w.iter_mut().zip(&d) {
                    *s = s.wrapping_add(*d);
                }
            }
        }
    }
}

impl Sim {
    /// CPU `i`'s terms, read as `update_sg_lb_stats` reads them.
    #[inline(always)]
    pub fn sg_cpu_terms(&self, i: CpuId) -> CpuTerms {
        let rq = &self.rqs[i.idx()];
        let idle = rq.nr_running == 0 && rq.idle_cpu();
        // arch_scale_cpu_capacity from the sums' per-CPU copy, and
        // `cpu_util_cfs` (`cpu_util(cpu, NULL, -1, 0)`) with it, rather than
        // twice from the machine's CPU and core-type tables.
        let capacity_orig = self.fair.sg_sums.capacity_orig(i.idx());
        debug_assert_eq!(capacity_orig, self.machine.capacity_orig(i) as u64);
        let mut util = rq.cfs_avg.util_avg;
        if crate::sched_feat!(self.features, UTIL_EST) {
            util = util.max(rq.cfs_avg.util_est.ewma as u64);
        }
        let util = util.min(capacity_orig);
        debug_assert_eq!(util, self.cpu_util_cfs(i));
        CpuReading {
            capacity: self.capacity_of(i),
            capacity_orig,
            load: rq.cpu_load(),
            util,
            runnable: rq.cpu_runnable(),
            h_nr_running: rq.cfs.h_nr_runnable,
            nr_running: rq.nr_running,
            idle,
            misfit: !idle && self.misfit_task_load(i) != 0,
        }
        .into()
    }

    /// Bring the group sums up to date with every runqueue changed since
    /// the last call. Called before a balance pass reads them, and by the
    /// fork/exec slow path through [`Sim::sg_sums_sync_slow_path`].
    ///
    /// Each caller has its own instance of the loop (`sg_sums_sync_at`),
    /// which is always inlined, as are `sg_cpu_terms` and `set_terms`:
    /// one function with two callers went out of line from the balance
    /// pass (2 M instructions more on the standard bench), one always
    /// inlined in both cost 7.6 M (the slow path's copy inside the wakeup
    /// path) and 1 M (the slow path's wrapper out of line, without
    /// instances apart).
    #[inline]
    pub fn sg_sums_sync(&mut self) {
        self.sg_sums_sync_at::<false>();
    }

    /// The loop of [`Sim::sg_sums_sync`], instantiated apart for each
    /// caller (`SLOW_PATH` changes nothing in it).
    #[inline(always)]
    fn sg_sums_sync_at<const SLOW_PATH: bool>(&mut self) {
        if !self.rqs.any_changed() {
            return;
        }
        let changed = self.rqs.take_changed_uncleared();
        for &c in &changed {
            self.rqs.clear_changed(c as usize);
            let t = self.sg_cpu_terms(CpuId(c));
            self.fair.sg_sums.set_terms(c as usize, t);
        }
        self.rqs.give_back(changed);
    }

    /// [`Sim::sg_sums_sync`] for the fork/exec slow path
    /// (`sched_balance_find_dst_cpu`), out of line.
    #[cold]
    #[inline(never)]
    pub fn sg_sums_sync_slow_path(&mut self) {
        self.sg_sums_sync_at::<true>();
    }
}
