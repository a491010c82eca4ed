//! Load balancing of one domain (kernel/sched/fair.c, linux-next 2026):
//! `sched_balance_rq` (formerly `load_balance`) with `struct lb_env`,
//! `should_we_balance`, `can_migrate_task` / `task_hot`, `detach_tasks`,
//! `need_active_balance` and the active balance of a running task, and the
//! periodic driver `sched_balance_domains` / `sched_balance_trigger`.
//!
//! The statistics and the busiest-group decision live in `lb_stats.rs`;
//! newly-idle balancing in `newidle.rs`; NOHZ idle balancing in `nohz.rs`.
//!
//! Model of time: a balance pass takes no simulated time itself; its cost,
//! `cost.balance_ns_base + cost.balance_ns_per_cpu * span_weight`, is charged
//! to the balancing CPU (`Sim::charge`), which delays what it runs next.

use super::lb_stats::GroupRef;
use super::local_group::LocalGroup;
use crate::cpumask::CpuMask;
use crate::engine::rq::SYSCTL_SCHED_MIGRATION_COST_NS;
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::ids::{CpuId, Ns, TaskId};
use crate::sched_feat;
use crate::topology::domains::{SdId, SD_SHARE_CPUCAPACITY};
use crate::trace::{BalanceKind, Event};

/// `sysctl_sched_nr_migrate`: at most this many tasks are examined per
/// pass (kernel default 32; 8 under PREEMPT_RT).
pub const SYSCTL_SCHED_NR_MIGRATE: u32 = 32;
/// `SCHED_NR_MIGRATE_BREAK`: take a breather every this many tasks (32).
pub const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// `MAX_PINNED_INTERVAL`: the balance interval may grow to this (ms) when
/// every task is pinned.
pub const MAX_PINNED_INTERVAL_MS: u32 = 512;
/// `CONFIG_PREEMPTION`: newly-idle balance stops after the first task it
/// detaches. On: distribution kernels build PREEMPT_DYNAMIC, which selects it.
pub const CONFIG_PREEMPTION: bool = true;

/// `LBF_ALL_PINNED`: every task examined was pinned away from dst.
pub const LBF_ALL_PINNED: u32 = 0x01;
/// `LBF_NEED_BREAK`: `detach_tasks` hit the loop break.
pub const LBF_NEED_BREAK: u32 = 0x02;
/// `LBF_DST_PINNED`: a task could go to another CPU of dst's group.
pub const LBF_DST_PINNED: u32 = 0x04;
/// `LBF_SOME_PINNED`: some task was pinned away from dst.
pub const LBF_SOME_PINNED: u32 = 0x08;
/// `LBF_ACTIVE_LB`: an active balance (the running task is pushed).
pub const LBF_ACTIVE_LB: u32 = 0x10;

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE`: a busy CPU balancing from its tick.
    NotIdle,
    /// `CPU_IDLE`: an idle CPU (NOHZ idle balance on its behalf).
    Idle,
    /// `CPU_NEWLY_IDLE`: about to go idle (`sched_balance_newidle`).
    NewlyIdle,
}

/// `enum migration_type`: what `env.imbalance` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MigrationType {
    /// Load (`task_h_load`).
    #[default]
    Load,
    /// Utilisation (`task_util_est`).
    Util,
    /// Tasks.
    Task,
    /// A misfit task.
    Misfit,
}

/// `struct lb_env`: one balancing decision's context.
#[derive(Clone, Debug)]
pub struct LbEnv {
    /// The domain: an id of the dst CPU's chain, set by [`Sim::lb_env`]
    /// only (crate-private, so that [`Sim::chain_sd`] may read it without a
    /// bounds test).
    pub(crate) sd: SdId,
    /// Its position in the dst CPU's chain.
    pub level: usize,
    /// Source (busiest) CPU, once found.
    pub src_cpu: CpuId,
    /// Destination CPU.
    pub dst_cpu: CpuId,
    /// `dst_grpmask`, the local group's span, as where to find it
    /// ([`Sim::dst_grpmask`]): a whole mask copied into every pass's
    /// environment cost more than the few reads that need it.
    pub dst_group: DstGroup,
    /// `new_dst_cpu` for LBF_DST_PINNED.
    pub new_dst_cpu: CpuId,
    /// `sg->flags` of every group of the domain: the child domain's flags,
    /// which schedlab gives all of a domain's groups (`group_refs`), so the
    /// group loop tests them once per pass, not once per group.
    pub sg_flags: u32,
    /// Idle type.
    pub idle: CpuIdleType,
    /// Amount to move (meaning per `migration_type`).
    pub imbalance: i64,
    /// `env->cpus`, the CPUs still considered, once some CPU was taken out
    /// (pinned tasks); `None` while it is the domain's span, so that a pass
    /// does not copy a whole mask (`Sim::lb_cpus` reads either). Until then
    /// every group within the span is wholly considered.
    pub cpus: Option<CpuMask>,
    /// The local group of `dst_cpu` in the domain, found by `lb_env` and
    /// again when `dst_cpu` changes (`LBF_DST_PINNED`), for the group loop.
    pub lg: LocalGroup,
    /// `LBF_*`.
    pub flags: u32,
    /// Tasks examined.
    pub loop_: u32,
    /// Next breather.
    pub loop_break: u32,
    /// Examination limit.
    pub loop_max: u32,
    /// What `imbalance` counts.
    pub migration_type: MigrationType,
}

/// Where `lb_env`'s `dst_grpmask` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DstGroup {
    /// The local group: its index in the domain's groups (`sg_refs`).
    Group(u32),
    /// The balancing CPU alone (it is in no group of the domain).
    Alone(CpuId),
}

/// How a `sched_balance_rq` pass ended (its `goto` targets).
enum LbExit {
    /// Tasks were examined (`ld_moved` may still be 0).
    Tried,
    /// `out_balanced`.
    Balanced,
    /// `out_all_pinned`.
    AllPinned,
    /// `out_one_pinned`.
    OnePinned,
}

impl Sim {
    /// The fair tasks queued on `cpu` (not delayed), in the order
    /// `detach_tasks` examines them: the tail of `cfs_tasks` first, i.e.
    /// least recently enqueued or run first.
    // DEVIATION(kernel): the kernel's `cfs_tasks` list is MRU by enqueue and
    // pick; schedlab orders by `runnable_since` (enqueue time, or the time the
    // task was switched out), which differs only for a task woken while
    // another was running. Delayed-dequeue entities are never migrated.
    // Read from the CPU's fair runqueue (its queued entities and curr), so
    // the cost is the queue's length, not the number of tasks.
    pub fn cfs_tasks_tail_first(&self, cpu: CpuId) -> Vec<TaskId> {
        let mut v = Vec::new();
        self.cfs_tasks_tail_first_into(cpu, &mut v);
        v
    }

    /// [`Self::cfs_tasks_tail_first`] into `v` (cleared first), which the
    /// balance path keeps between passes.
    pub fn cfs_tasks_tail_first_into(&self, cpu: CpuId, v: &mut Vec<TaskId>) {
        let cfs = &self.rqs[cpu.idx()].cfs;
        v.clear();
        v.extend(
            cfs.curr
                .iter()
                .chain(cfs.queue.iter())
                .copied()
                .filter(|p| self.tasks[p.idx()].state == TaskState::Runnable),
        );
        v.sort_by_key(|p| (self.tasks[p.idx()].runnable_since, p.0));
        debug_assert_eq!(
            *v,
            {
                let mut all: Vec<TaskId> = self
                    .tasks
                    .iter()
                    .filter(|t| t.cpu == cpu && t.state == TaskState::Runnable && self.fair.ses[t.id.idx()].on_rq)
                    .map(|t| t.id)
                    .collect();
                all.sort_by_key(|p| (self.tasks[p.idx()].runnable_since, p.0));
                all
            },
            "cpu {cpu}: the fair runqueue and the tasks disagree on what is queued"
        );
    }

    /// The cost of one balance pass over a domain of `span_weight` CPUs.
    #[inline]
    pub fn balance_cost_ns(&self, span_weight: u32) -> Ns {
        self.machine.cost.balance_ns_base + self.machine.cost.balance_ns_per_cpu * span_weight as Ns
    }

    /// `task_hot(p, env)`: `p` probably still has cache state on its CPU.
    pub fn task_hot(&self, p: TaskId, env: &LbEnv) -> bool {
        // A SCHED_IDLE task's cache is worth nothing to keep.
        if self.tasks[p.idx()].policy == crate::workload::SchedPolicy::Idle {
            return false;
        }
        let sd = self.chain_sd(env.sd);
        if sd.has(SD_SHARE_CPUCAPACITY) {
            return false; // SMT siblings share caches
        }
        if sched_feat!(self.features, CACHE_HOT_BUDDY)
            && self.rqs[env.dst_cpu.idx()].nr_running > 0
            && self.rqs[env.src_cpu.idx()].cfs.next == Some(p)
        {
            return true;
        }
        let t = &self.tasks[p.idx()];
        // The kernel measures from `se.exec_start`, which a migration resets
        // (cold); a task that never ran here has no cache state either.
        if !t.has_run || t.cache_cpu != env.src_cpu {
            return false;
        }
        self.now.saturating_sub(t.last_ran_ns) < SYSCTL_SCHED_MIGRATION_COST_NS
    }

    /// `can_migrate_task(p, env)`: may `p` move from `env.src_cpu` to
    /// `env.dst_cpu`? Updates the `LBF_*` flags in `env`.
    pub fn can_migrate_task(&self, p: TaskId, env: &mut LbEnv) -> bool {
        let t = &self.tasks[p.idx()];
        let rt = &self.rqs[env.dst_cpu.idx()].sd;
        let nr_balance_failed = rt.get(env.level).map_or(0, |s| s.nr_balance_failed);
        // Prefer eligible tasks: an ineligible one only moves after a failure.
        if nr_balance_failed == 0
            && sched_feat!(self.features, PLACE_LAG)
            && self.rqs[env.dst_cpu.idx()].cfs.nr_queued > 0
            && !self.rqs[env.src_cpu.idx()].cfs.entity_eligible(&self.fair.ses, p)
        {
            return false;
        }
        if t.kthread {
            return false; // per-CPU kthreads stay where they are
        }
        if !t.allowed.test(env.dst_cpu) {
            env.flags |= LBF_SOME_PINNED;
            if env.idle == CpuIdleType::NewlyIdle || env.flags & (LBF_DST_PINNED | LBF_ACTIVE_LB) != 0 {
                return false;
            }
            if let Some(cpu) = self.dst_grpmask(env).and(self.lb_cpus(env)).and(&t.allowed).first() {
                env.flags |= LBF_DST_PINNED;
                env.new_dst_cpu = cpu;
            }
            return false;
        }
        env.flags &= !LBF_ALL_PINNED;
        if self.rqs[env.src_cpu.idx()].curr == Some(p) {
            return false;
        }
        if env.flags & LBF_ACTIVE_LB != 0 {
            return true;
        }
        let cache_nice_tries = self.chain_sd(env.sd).cache_nice_tries;
        !self.task_hot(p, env) || nr_balance_failed > cache_nice_tries
    }

    /// `detach_tasks` + `attach_tasks`: move up to `env.imbalance` worth of
    /// tasks from `env.src_cpu` to `env.dst_cpu`. Returns the number moved.
    pub fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        if self.rqs[env.src_cpu.idx()].nr_running <= 1 {
            env.flags &= !LBF_ALL_PINNED;
            return 0;
        }
        if env.imbalance <= 0 {
            return 0;
        }
        let nr_balance_failed = self.rqs[env.dst_cpu.idx()].sd[env.level].nr_balance_failed;
        let mut detached = 0;
        // env->tasks: detached tasks, attached as one batch after the loop.
        let (mut cands, mut batch) = std::mem::take(&mut self.fair.lb_scratch);
        batch.clear();
        self.cfs_tasks_tail_first_into(env.src_cpu, &mut cands);
        for &p in &cands {
            if env.idle != CpuIdleType::NotIdle && self.rqs[env.src_cpu.idx()].nr_running <= 1 {
                break; // never steal the last task
            }
            env.loop_ += 1;
            if env.loop_ > env.loop_max {
                break;
            }
            if env.loop_ > env.loop_break {
                env.loop_break += SCHED_NR_MIGRATE_BREAK;
                env.flags |= LBF_NEED_BREAK;
                break;
            }
            if !self.can_migrate_task(p, env) {
                continue;
            }
            // shr_bound: relax the size limit after failed attempts.
            let shr = |v: u64| v >> nr_balance_failed.min(63);
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.tasks[p.idx()].avg.load_avg.max(1);
                    if shr(load) as i64 > env.imbalance {
                        continue;
                    }
                    env.imbalance -= load as i64;
                }
                MigrationType::Util => {
                    let util = self.task_util_est(p);
                    if shr(util) as i64 > env.imbalance {
                        continue;
                    }
                    env.imbalance -= util as i64;
                }
                MigrationType::Task => env.imbalance -= 1,
                MigrationType::Misfit => {
                    if self.task_fits_cpu(p, env.src_cpu) {
                        continue;
                    }
                    env.imbalance = 0;
                }
            }
            self.detach_task(p, env.src_cpu, env.dst_cpu);
            batch.push(p);
            detached += 1;
            if CONFIG_PREEMPTION && env.idle == CpuIdleType::NewlyIdle {
                break;
            }
            if env.imbalance <= 0 {
                break;
            }
        }
        self.attach_tasks(env.dst_cpu, &batch);
        self.fair.lb_scratch = (cands, batch);
        detached
    }

    /// `attach_tasks`: put the detached batch on `dst`. `detach_tasks`
    /// adds each task at the head of `env->tasks` and `attach_tasks` takes
    /// from the head, so the last task detached is attached first. The
    /// balancing CPU is `dst` itself (a preemption there needs no IPI), or
    /// the idle-load-balancer working for it.
    pub fn attach_tasks(&mut self, dst: CpuId, batch: &[TaskId]) {
        let by_cpu = self.fair.nohz.ilb_cpu.unwrap_or(dst);
        for &p in batch.iter().rev() {
            self.attach_task(p, dst, by_cpu);
        }
    }

    /// `should_we_balance`: only one CPU of the local group balances a
    /// domain: the first idle core's CPU, else the first idle SMT CPU, else
    /// the group's first CPU. Every CPU may do newly-idle balancing.
    pub fn should_we_balance(&self, env: &LbEnv) -> bool {
        // While `env->cpus` is the span it holds dst (a domain of dst's chain).
        debug_assert!(env.cpus.is_some() || self.chain_sd(env.sd).span.test(env.dst_cpu));
        if env.cpus.as_ref().is_some_and(|c| !c.test(env.dst_cpu)) {
            return false;
        }
        let dst = &self.rqs[env.dst_cpu.idx()];
        if env.idle == CpuIdleType::NewlyIdle {
            return dst.nr_running == 0 && dst.ttwu_pending == 0;
        }
        if let (None, DstGroup::Group(i)) = (&env.cpus, env.dst_group) {
            let g = &self.fair.sg_refs[env.sd.0 as usize][i as usize];
            if g.within_sd {
                // No CPU excluded and the group within the span: `swb_cpus &
                // env->cpus` is the group, whose CPU list is its span's order.
                let r = self.should_we_balance_in(env, g);
                debug_assert_eq!(r, self.should_we_balance_mask(env));
                return r;
            }
        }
        self.should_we_balance_mask(env)
    }

    /// `should_we_balance`'s walk for a busy or idle dst over the local
    /// group's CPU list `g` (every CPU considered): the CPUs and the SMT
    /// siblings as lists, not 1024-bit masks (a periodic pass at the SMT
    /// level copied, and-ed and walked two masks for a group of one CPU).
    /// `swb_cpus` is only made when a CPU's siblings are taken out of it.
    #[inline]
    fn should_we_balance_in(&self, env: &LbEnv, g: &GroupRef) -> bool {
        let share_capacity = self.chain_sd(env.sd).has(SD_SHARE_CPUCAPACITY);
        let mut swb: Option<CpuMask> = None;
        let mut idle_smt = None;
        for &cpu in g.cpus(&self.fair.sg_cpus) {
            if swb.as_ref().is_some_and(|m| !m.test(cpu)) || !self.rqs[cpu.idx()].idle_cpu() {
                continue;
            }
            // is_core_idle: the CPU is idle, and so is every sibling.
            let core_idle = self.cpu_rec[cpu.idx()].siblings.iter().all(|s| self.rqs[s.idx()].idle_cpu());
            if !share_capacity && !core_idle {
                idle_smt.get_or_insert(cpu);
                let smt = self.machine.smt_mask(cpu);
                swb = Some(swb.unwrap_or(g.span).andnot(smt));
                continue;
            }
            return cpu == env.dst_cpu;
        }
        if let Some(c) = idle_smt {
            return c == env.dst_cpu;
        }
        g.first == env.dst_cpu
    }

    /// `should_we_balance`'s walk for a busy or idle dst, with masks (some
    /// CPU excluded, dst in no group, or a group beyond the span).
    fn should_we_balance_mask(&self, env: &LbEnv) -> bool {
        let sd = self.chain_sd(env.sd);
        let grpmask = self.dst_grpmask(env);
        let mut swb = grpmask;
        let mut idle_smt = None;
        for cpu in grpmask.and(self.lb_cpus(env)).iter() {
            if !swb.test(cpu) || !self.rqs[cpu.idx()].idle_cpu() {
                continue;
            }
            let core_idle = self.machine.smt_mask(cpu).iter().all(|s| self.rqs[s.idx()].idle_cpu());
            if !sd.has(SD_SHARE_CPUCAPACITY) && !core_idle {
                idle_smt.get_or_insert(cpu);
                swb = swb.andnot(self.machine.smt_mask(cpu));
                continue;
            }
            return cpu == env.dst_cpu;
        }
        if let Some(c) = idle_smt {
            return c == env.dst_cpu;
        }
        grpmask.first() == Some(env.dst_cpu)
    }

    /// `env->cpus`: the CPUs a pass still considers.
    #[inline]
    pub fn lb_cpus<'a>(&'a self, env: &'a LbEnv) -> &'a CpuMask {
        env.cpus.as_ref().unwrap_or(&self.chain_sd(env.sd).span)
    }

    /// Take `cpu` out of `env->cpus`.
    fn lb_cpus_clear(&self, env: &mut LbEnv, cpu: CpuId) {
        let mut cpus = *self.lb_cpus(env);
        cpus.clear(cpu);
        env.cpus = Some(cpus);
    }

    /// `env->dst_grpmask`: the span of the balancing CPU's group in the
    /// domain (the CPU alone when it is in none).
    pub fn dst_grpmask(&self, env: &LbEnv) -> CpuMask {
        match env.dst_group {
            DstGroup::Group(i) => self.fair.sg_refs[env.sd.0 as usize][i as usize].span,
            DstGroup::Alone(cpu) => CpuMask::from_cpus([cpu]),
        }
    }

    /// `need_active_balance`: push the running task when balancing failed.
    pub fn need_active_balance(&self, env: &LbEnv) -> bool {
        let sd = self.chain_sd(env.sd);
        let failed = self.rqs[env.dst_cpu.idx()].sd[env.level].nr_balance_failed;
        // imbalanced_active_balance: even spreading blocked for a while.
        if env.migration_type == MigrationType::Task && failed > sd.cache_nice_tries + 2 {
            return true;
        }
        if env.idle != CpuIdleType::NotIdle
            && self.rqs[env.src_cpu.idx()].cfs.h_nr_runnable == 1
            && self.check_cpu_capacity(env.src_cpu, sd)
            && self.capacity_of(env.src_cpu) * (sd.imbalance_pct as u64) < self.capacity_of(env.dst_cpu) * 100
        {
            return true;
        }
        env.migration_type == MigrationType::Misfit
    }

    /// `active_load_balance_cpu_stop`: the stopper on `busiest` preempts its
    /// task and pushes one task to `target` (`detach_one_task`). Done at once.
    // DEVIATION(kernel): the kernel queues the stopper work and it runs a
    // little later on `busiest`; schedlab runs it synchronously.
    fn active_load_balance(&mut self, busiest: CpuId, target: CpuId) -> crate::Result<bool> {
        let rq = &self.rqs[busiest.idx()];
        if rq.nr_running == 0 {
            return Ok(false);
        }
        let chain = self.domains.chain(target).to_vec();
        let Some(level) = chain.iter().position(|&id| self.domains.sd(id).span.test(busiest)) else {
            return Ok(false);
        };
        let mut env = self.lb_env(target, level, CpuIdleType::Idle);
        env.src_cpu = busiest;
        env.flags = LBF_ACTIVE_LB;
        // The preempted task is at the head of cfs_tasks (MRU): examined last.
        let mut cands = self.cfs_tasks_tail_first(busiest);
        let curr = self.rqs[busiest.idx()].curr;
        if let Some(c) = curr {
            cands.retain(|&p| p != c);
        }
        for p in cands {
            if self.can_migrate_task(p, &mut env) {
                self.move_queued_task(p, busiest, target);
                self.rqs.sd_mut(target.idx(), level).nr_balance_failed = 0;
                return Ok(true);
            }
        }
        if let Some(c) = curr {
            let t = &self.tasks[c.idx()];
            if !t.kthread && t.allowed.test(target) && self.active_move_running_task(busiest, target)? {
                self.rqs.sd_mut(target.idx(), level).nr_balance_failed = 0;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A fresh `lb_env` for `this_cpu` balancing its domain at `level`.
    #[inline(always)]
    pub fn lb_env(&self, this_cpu: CpuId, level: usize, idle: CpuIdleType) -> LbEnv {
        let (id, sd) = self.sd_at(this_cpu, level);
        // The first group holding this_cpu (its local group), else this_cpu alone.
        let lg = self.local_group_at(id, level, this_cpu);
        let dst_group = if lg.found { DstGroup::Group(lg.index) } else { DstGroup::Alone(this_cpu) };
        LbEnv {
            sd: id,
            level,
            src_cpu: this_cpu,
            dst_cpu: this_cpu,
            dst_group,
            new_dst_cpu: this_cpu,
            sg_flags: sd.child.map_or(0, |c| self.domains.sd(c).flags),
            idle,
            imbalance: 0,
            cpus: None,
            lg,
            flags: 0,
            loop_: 0,
            loop_break: SCHED_NR_MIGRATE_BREAK,
            loop_max: 0,
            migration_type: MigrationType::Load,
        }
    }

    /// `sched_balance_rq(this_cpu, sd, idle, continue_balancing)`: balance
    /// `this_cpu`'s domain at `level`. Returns the number of tasks moved
    /// (`ld_moved`; a task pushed by active balance is not counted, as in the kernel).
    pub fn sched_balance_rq(&mut self, this_cpu: CpuId, level: usize, idle: CpuIdleType, cont: &mut bool) -> u32 {
        let mut env = self.lb_env(this_cpu, level, idle);
        let sd = self.chain_sd(env.sd);
        let (parent, span_first, depth) = (sd.parent, sd.span.first().unwrap_or(this_cpu), sd.depth as usize);
        let (min_interval, max_interval) = (sd.min_interval_ms, sd.max_interval_ms);
        if sd.child.is_none() {
            self.update_cpu_capacity(this_cpu); // update_group_capacity at the lowest level
        }
        let mut ld_moved = 0;
        let exit = 'redo: loop {
            if !self.should_we_balance(&env) {
                *cont = false;
                break LbExit::Balanced;
            }
            self.sg_sums_sync();
            let (group, sg_overloaded, sum_util) = self.sched_balance_find_src_group(&mut env);
            let group = group.map(|g| g.index);
            self.apply_sd_lb_side_effects(&env, parent.is_none(), sg_overloaded, sum_util);
            let Some(group) = group else { break LbExit::Balanced };
            let group = &self.fair.sg_refs[env.sd.0 as usize][group];
            let Some(busiest) = self.sched_balance_find_src_rq(&env, group) else { break LbExit::Balanced };
            env.src_cpu = busiest;
            env.flags |= LBF_ALL_PINNED;
            if self.rqs[busiest.idx()].nr_running > 1 {
                env.loop_max = SYSCTL_SCHED_NR_MIGRATE.min(self.rqs[busiest.idx()].nr_running);
                loop {
                    ld_moved += self.detach_tasks(&mut env);
                    if env.flags & LBF_NEED_BREAK != 0 {
                        env.flags &= !LBF_NEED_BREAK;
                        continue;
                    }
                    if env.flags & LBF_DST_PINNED != 0 && env.imbalance > 0 {
                        // Retry the same source for another CPU of our group.
                        let dst = env.dst_cpu;
                        self.lb_cpus_clear(&mut env, dst);
                        env.dst_cpu = env.new_dst_cpu;
                        env.lg = self.local_group_at(env.sd, env.level, env.dst_cpu);
                        env.flags &= !LBF_DST_PINNED;
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue;
                    }
                    break;
                }
                if parent.is_some() && env.flags & LBF_SOME_PINNED != 0 && env.imbalance > 0 {
                    self.fair.nohz.set_sgc_imbalance(depth + 1, span_first, true);
                }
                if env.flags & LBF_ALL_PINNED != 0 {
                    self.lb_cpus_clear(&mut env, busiest);
                    if !self.lb_cpus(&env).is_subset(&self.dst_grpmask(&env)) {
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue 'redo;
                    }
                    break LbExit::AllPinned;
                }
            }
            break LbExit::Tried;
        };
        let exit = match exit {
            LbExit::Tried => self.after_tried(this_cpu, &mut env, ld_moved, min_interval),
            e => e,
        };
        let rt = self.rqs.sd_mut(this_cpu.idx(), level);
        match exit {
            LbExit::Tried => return ld_moved,
            LbExit::Balanced => {
                if parent.is_some() && env.flags & LBF_ALL_PINNED == 0 {
                    self.fair.nohz.set_sgc_imbalance(depth + 1, span_first, false);
                }
                rt.nr_balance_failed = 0;
            }
            LbExit::AllPinned => rt.nr_balance_failed = 0,
            LbExit::OnePinned => {}
        }
        // out_one_pinned: back off, except for newidle and misfit passes.
        if env.idle == CpuIdleType::NewlyIdle || env.migration_type == MigrationType::Misfit {
            return 0;
        }
        let ms = self.rqs[this_cpu.idx()].sd[level].balance_interval_ms;
        if (env.flags & LBF_ALL_PINNED != 0 && ms < MAX_PINNED_INTERVAL_MS) || ms < max_interval {
            self.set_balance_interval_ms(this_cpu, level, ms * 2);
        }
        0
    }

    /// The end of a pass that examined tasks: failure accounting, active
    /// balance, interval reset. Returns `OnePinned` when the running task
    /// cannot come to this CPU.
    fn after_tried(&mut self, this_cpu: CpuId, env: &mut LbEnv, ld_moved: u32, min_interval: u32) -> LbExit {
        let level = env.level;
        let mut active = false;
        let mut need = false;
        if ld_moved == 0 {
            if env.idle != CpuIdleType::NewlyIdle && env.migration_type != MigrationType::Misfit {
                self.rqs.sd_mut(this_cpu.idx(), level).nr_balance_failed += 1;
            }
            need = self.need_active_balance(env);
            if need {
                let busiest = env.src_cpu;
                let allowed = self.rqs[busiest.idx()].curr.is_some_and(|c| self.tasks[c.idx()].allowed.test(this_cpu));
                if !allowed {
                    return LbExit::OnePinned;
                }
                env.flags &= !LBF_ALL_PINNED;
                active = true;
                // A failure of the stopper leaves nothing to undo.
                if self.active_load_balance(busiest, this_cpu).unwrap_or(false) {
                    let depth = self.chain_sd(env.sd).depth as u8;
                    self.emit(Event::Balance { cpu: this_cpu, depth, kind: BalanceKind::Active, pulled: 1 });
                }
            }
        } else {
            self.rqs.sd_mut(this_cpu.idx(), level).nr_balance_failed = 0;
        }
        if !active || need {
            self.set_balance_interval_ms(this_cpu, level, min_interval);
        }
        LbExit::Tried
    }

    /// The side effects of `update_sd_lb_stats`: the root domain's overload
    /// flag (`set_rd_overloaded`) and SIS_UTIL's scan depth.
    fn apply_sd_lb_side_effects(&mut self, env: &LbEnv, at_root: bool, sg_overloaded: bool, sum_util: u64) {
        if at_root {
            self.rd_overloaded = sg_overloaded;
        }
        if let Some((llc, nr)) = self.update_idle_cpu_scan(env, sum_util) {
            self.fair.llc[llc].nr_idle_scan = nr;
        }
    }
}
