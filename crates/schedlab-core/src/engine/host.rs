//! The host that time-shares the machine's CPUs as vCPUs (the `overcommit`
//! family, `workload/overcommit.rs`).
//!
//! Each vCPU is, to the host, a thread: runnable while the guest runs a task
//! on it, asleep (halted) while the guest idles. `host_cpus` host CPUs run
//! at most that many vCPUs at once; the others wait in one FIFO queue. A
//! vCPU that has run a host `slice` while another waits goes to the back of
//! the queue and the front one runs; a vCPU that halts gives its host CPU to
//! the front one. The host's other threads take a host CPU now and then
//! (`other_share` host CPUs, per count of busy vCPUs, in runs of
//! `other_run`: a Poisson stream at the highest share's rate, each run kept
//! with probability share(busy now) / highest share, which is thinning,
//! exact for a rate that changes at any time): a free one, or one a vCPU
//! runs on (that
//! vCPU waits at the front of the queue, since the host hands the CPU back
//! to the thread that a short run interrupted).
//!
//! A waiting vCPU is stalled as a `stall` source stalls it (`engine/irq.rs`):
//! its clock runs, its running task makes no progress and is charged the
//! time, and events that need the vCPU to execute (its tick, slice timer,
//! its sleepers' timers, IPIs, interrupts) wait. Unlike a `stall`, the end is
//! not known when the stall starts, so those events are held per vCPU and
//! queued again, at the time it runs, when it gets a host CPU
//! (`host_resume`); the work its runqueue still owed (`ready_at`: an idle
//! exit, a context switch) is owed from then on.
//!
//! Traces show a wait as an interrupt named `host` ([`crate::trace::event::HOST_IRQ`]) from the
//! moment the vCPU loses its host CPU to the one it gets it back; it is not
//! counted as interrupt time.
//!
//! DEVIATION(host): the host is one global FIFO with fixed slices, not the
//! host kernel's per-CPU EEVDF runqueues and balancing; whether a woken vCPU
//! preempts is a coin with the measured odds (`wake_preempt`), not EEVDF's
//! deadlines; the vCPU to preempt (for a woken vCPU or another host thread)
//! is the one that has held its host CPU longest.

use std::collections::VecDeque;

use super::{Ev, Sim, LANE_IPI, LANE_TICK};
use crate::ids::{CpuId, Ns};
use crate::sim::Rng;
use crate::workload::overcommit::HostSpec;
use crate::workload::Dist;

/// `CpuIrq::stall_until` of a vCPU that waits for a host CPU: until further
/// notice.
pub(super) const HOST_HELD: Ns = Ns::MAX;

/// `Rq::ready_at` of a waiting vCPU: beyond any run's end, so a run segment
/// started on it (a sibling's speed change restarts it) makes no progress;
/// far enough below `Ns::MAX` that delays added to it do not overflow.
pub(super) const HELD_READY: Ns = Ns::MAX / 4;

/// A vCPU as the host sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VcpuState {
    /// The guest idles on it: the thread sleeps in HLT.
    Halted,
    /// It has a host CPU.
    Running,
    /// Runnable, waiting for a host CPU: stalled.
    Waiting,
}

/// The host's state (`Sim::host`).
#[derive(Clone, Debug)]
pub(crate) struct Host {
    spec: HostSpec,
    /// Per vCPU.
    pub(crate) state: Vec<VcpuState>,
    /// Running vCPUs in the order they got their host CPU, with the
    /// `run_seq` they got it under (an entry whose vCPU stopped running
    /// since is dropped when it reaches the front): the front is the one
    /// that has held its host CPU longest, without a scan.
    run_order: VecDeque<(CpuId, u64)>,
    /// Per vCPU, how many times it got a host CPU.
    run_seq: Vec<u64>,
    /// Generation of each vCPU's pending `HostSlice` (keyed in the queue,
    /// so moved or cancelled rather than left stale; the generation stays a
    /// check, as the engine's own keyed events keep theirs).
    slice_gen: Vec<u64>,
    /// Per waiting vCPU, the delay its runqueue still owed when it stalled.
    owed: Vec<Ns>,
    /// Per waiting vCPU, the events it takes when it runs again.
    held: Vec<Vec<Ev>>,
    /// vCPUs waiting for a host CPU, in the order they get one.
    waiting: VecDeque<CpuId>,
    /// Host CPUs running nothing.
    pub(crate) free: u32,
    /// Host CPUs taken by the host's other threads.
    others: u32,
    /// Time a vCPU was runnable but waiting, summed over vCPUs (output).
    pub(crate) stalled_ns: Ns,
    /// When each waiting vCPU started waiting.
    waiting_since: Vec<Ns>,
    rng: Rng,
}

impl Host {
    /// A host for `nr_cpus` vCPUs, all halted.
    pub(super) fn new(spec: HostSpec, nr_cpus: usize, seed: u64) -> Self {
        Host {
            free: spec.host_cpus,
            spec,
            state: vec![VcpuState::Halted; nr_cpus],
            run_order: VecDeque::with_capacity(2 * nr_cpus),
            run_seq: vec![0; nr_cpus],
            slice_gen: vec![0; nr_cpus],
            owed: vec![0; nr_cpus],
            held: vec![Vec::new(); nr_cpus],
            waiting: VecDeque::with_capacity(nr_cpus),
            others: 0,
            stalled_ns: 0,
            waiting_since: vec![0; nr_cpus],
            rng: Rng::named(seed, "host", 0),
        }
    }

    /// The time to the next run of the host's other threads at the highest
    /// share's rate; None without other threads.
    fn other_gap(&mut self) -> Option<Ns> {
        let top = self.spec.other_share.iter().copied().fold(0.0, f64::max);
        if top <= 0.0 {
            return None;
        }
        let mean = (self.spec.other_run.mean() as f64 / top).max(1.0) as Ns;
        Some(Dist::Exp { mean }.sample(&mut self.rng).max(1))
    }

    /// The share of the host's CPUs its other threads ask for with `busy`
    /// vCPUs busy, over the highest share.
    fn other_keep(&self, busy: usize) -> f64 {
        let s = &self.spec.other_share;
        let top = s.iter().copied().fold(0.0, f64::max);
        s[busy.clamp(1, s.len()) - 1] / top
    }

    /// The running vCPU that has held its host CPU longest (the first to get
    /// it, on a tie).
    fn longest_running(&mut self) -> Option<CpuId> {
        while let Some(&(c, seq)) = self.run_order.front() {
            if self.state[c.idx()] == VcpuState::Running && self.run_seq[c.idx()] == seq {
                return Some(c);
            }
            self.run_order.pop_front();
        }
        None
    }

    /// The invariants: every host CPU runs one vCPU or other thread or is
    /// free, and no vCPU waits while one is free.
    pub(super) fn check(&self) -> Result<(), String> {
        let running = self.state.iter().filter(|s| **s == VcpuState::Running).count() as u32;
        let waiting = self.state.iter().filter(|s| **s == VcpuState::Waiting).count();
        if running + self.others + self.free != self.spec.host_cpus {
            return Err(format!(
                "host: {running} vCPUs running, {} other, {} free on {} host CPUs",
                self.others, self.free, self.spec.host_cpus
            ));
        }
        if waiting != self.waiting.len() || (waiting > 0 && self.free > 0) {
            return Err(format!(
                "host: {waiting} vCPUs waiting ({} queued) with {} free",
                self.waiting.len(),
                self.free
            ));
        }
        Ok(())
    }
}

impl Sim {
    /// The host's first other-thread run, if it has other threads.
    pub(super) fn host_start(&mut self) {
        let Some(h) = self.host.as_mut() else { return };
        if let Some(gap) = h.other_gap() {
            self.at(gap, Ev::HostOther);
        }
    }

    /// `cpu` starts running a task after idling: its vCPU thread wakes.
    #[inline]
    pub(super) fn vcpu_busy(&mut self, cpu: CpuId) {
        if self.host.is_some() {
            self.host_vcpu_wakes(cpu);
        }
    }

    /// `cpu` stops running tasks: its vCPU halts.
    #[inline]
    pub(super) fn vcpu_halt(&mut self, cpu: CpuId) {
        if self.host.is_some() {
            self.host_vcpu_halts(cpu);
        }
    }

    #[cold]
    #[inline(never)]
    fn host_vcpu_wakes(&mut self, cpu: CpuId) {
        let h = self.host.as_mut().expect("host");
        debug_assert_eq!(h.state[cpu.idx()], VcpuState::Halted);
        if h.free > 0 {
            h.free -= 1;
            self.host_run(cpu);
            return;
        }
        let pct = u64::from(h.spec.wake_preempt_pct);
        let preempt = pct >= 100 || (pct > 0 && h.rng.next_u64() % 100 < pct);
        let victim = if preempt { h.longest_running() } else { None };
        match victim {
            Some(v) => {
                self.host_wait(v, false);
                self.host_run(cpu);
            }
            None => self.host_wait(cpu, false),
        }
    }

    #[cold]
    #[inline(never)]
    fn host_vcpu_halts(&mut self, cpu: CpuId) {
        let h = self.host.as_mut().expect("host");
        match h.state[cpu.idx()] {
            VcpuState::Running => {
                h.state[cpu.idx()] = VcpuState::Halted;
                h.slice_gen[cpu.idx()] += 1;
                self.queue.cancel_key(self.key_host_slice(cpu));
                self.host_cpu_freed();
            }
            VcpuState::Waiting => {
                // Only another CPU's doing (its running task moved away):
                // the vCPU has nothing left to run and stops waiting.
                h.waiting.retain(|&c| c != cpu);
                self.host_resume(cpu);
                self.host.as_mut().expect("host").state[cpu.idx()] = VcpuState::Halted;
            }
            VcpuState::Halted => debug_assert!(false, "vCPU {cpu} halted twice"),
        }
    }

    /// A host CPU was given up: the first waiting vCPU gets it.
    fn host_cpu_freed(&mut self) {
        let h = self.host.as_mut().expect("host");
        match h.waiting.pop_front() {
            Some(w) => {
                self.host_resume(w);
                self.host_run(w);
            }
            None => h.free += 1,
        }
    }

    /// `cpu`'s vCPU gets a host CPU now, for one slice.
    fn host_run(&mut self, cpu: CpuId) {
        let now = self.now;
        let h = self.host.as_mut().expect("host");
        h.state[cpu.idx()] = VcpuState::Running;
        h.run_seq[cpu.idx()] += 1;
        h.run_order.push_back((cpu, h.run_seq[cpu.idx()]));
        if h.run_order.len() > 4 * h.state.len() {
            // Dropped entries behind a vCPU that keeps running: compact, at
            // most once per 3N host runs.
            let (state, seq) = (&h.state, &h.run_seq);
            h.run_order.retain(|&(c, s)| state[c.idx()] == VcpuState::Running && seq[c.idx()] == s);
        }
        h.slice_gen[cpu.idx()] += 1;
        let gen = h.slice_gen[cpu.idx()];
        let slice = h.spec.slice.sample(&mut h.rng).max(1);
        self.queue.push_key(self.key_host_slice(cpu), now + slice, Ev::HostSlice { cpu, gen });
    }

    /// `cpu`'s vCPU loses (or does not get) a host CPU: it stalls, at the
    /// front of the host's queue or its back.
    fn host_wait(&mut self, cpu: CpuId, front: bool) {
        let now = self.now;
        let h = self.host.as_mut().expect("host");
        h.state[cpu.idx()] = VcpuState::Waiting;
        h.slice_gen[cpu.idx()] += 1;
        h.waiting_since[cpu.idx()] = now;
        if front {
            h.waiting.push_front(cpu);
        } else {
            h.waiting.push_back(cpu);
        }
        let key = self.key_host_slice(cpu);
        self.queue.cancel_key(key);
        self.emit(crate::trace::Event::Irq { cpu, irq: crate::trace::event::HOST_IRQ, entry: true });
        self.sync_segment(cpu);
        self.timed_stall_begin(cpu);
        self.irq[cpu.idx()].stall_until = HOST_HELD;
        let rq = self.rqs.untracked_mut(cpu.idx());
        let owed = rq.ready_at.saturating_sub(now);
        rq.ready_at = HELD_READY;
        self.host.as_mut().expect("host").owed[cpu.idx()] = owed;
        if self.rqs[cpu.idx()].curr.is_some() {
            self.restart_segment(cpu);
        }
    }

    /// `cpu`'s vCPU runs again: its runqueue's owed delay resumes, its run
    /// segment restarts, and what it held is queued now.
    fn host_resume(&mut self, cpu: CpuId) {
        let now = self.now;
        let h = self.host.as_mut().expect("host");
        h.stalled_ns += now - h.waiting_since[cpu.idx()];
        let owed = h.owed[cpu.idx()];
        let held = std::mem::take(&mut h.held[cpu.idx()]);
        self.irq[cpu.idx()].stall_until = 0;
        self.timed_stall_end(cpu);
        self.emit(crate::trace::Event::Irq { cpu, irq: crate::trace::event::HOST_IRQ, entry: false });
        let rq = self.rqs.untracked_mut(cpu.idx());
        // Delays added while it waited (a context switch's cost) come after.
        let added = rq.ready_at.saturating_sub(HELD_READY);
        rq.ready_at = now + owed + added;
        if self.rqs[cpu.idx()].curr.is_some() {
            self.restart_segment(cpu);
        }
        for ev in held {
            self.host_requeue(ev);
        }
    }

    /// A held event, queued now unless a newer one of its kind is pending.
    fn host_requeue(&mut self, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::Tick { cpu, gen } => {
                let key = self.key_tick(cpu);
                if gen == self.rqs[cpu.idx()].tick_gen && !self.queue.key_queued(key) {
                    self.queue.push_key_in(LANE_TICK, key, now, ev);
                }
            }
            Ev::HrTick(cpu) => {
                let key = self.key_hrtick(cpu);
                if !self.queue.key_queued(key) {
                    self.queue.push_key(key, now, ev);
                }
            }
            Ev::Timer { task, gen } => {
                let key = self.key_timer(task);
                if gen == self.tasks[task.idx()].timer_gen && !self.queue.key_queued(key) {
                    self.queue.push_key(key, now, ev);
                }
            }
            _ => self.at_in(LANE_IPI, now, ev),
        }
    }

    /// Whether `cpu`'s vCPU has a host slice pending (tests).
    #[cfg(test)]
    pub(crate) fn host_slice_pending(&self, cpu: CpuId) -> bool {
        self.queue.key_queued(self.key_host_slice(cpu))
    }

    /// Holds `ev` until `cpu`'s vCPU runs again, if it waits for a host
    /// CPU. Returns whether it was held.
    #[cold]
    #[inline(never)]
    pub(super) fn host_hold(&mut self, cpu: CpuId, ev: Ev) -> bool {
        if self.irq[cpu.idx()].stall_until != HOST_HELD {
            return false;
        }
        self.host.as_mut().expect("a held vCPU without a host").held[cpu.idx()].push(ev);
        true
    }

    /// `Ev::HostSlice`: `cpu`'s vCPU has run a host slice. Returns whether
    /// the event was current (not stale).
    #[cold]
    #[inline(never)]
    pub(super) fn host_slice(&mut self, cpu: CpuId, gen: u64) -> bool {
        let h = self.host.as_mut().expect("host");
        if h.slice_gen[cpu.idx()] != gen || h.state[cpu.idx()] != VcpuState::Running {
            return false;
        }
        if h.waiting.is_empty() {
            let slice = h.spec.slice.sample(&mut h.rng).max(1);
            h.slice_gen[cpu.idx()] += 1;
            let gen = h.slice_gen[cpu.idx()];
            let key = self.key_host_slice(cpu);
            self.queue.push_key(key, self.now + slice, Ev::HostSlice { cpu, gen });
            return true;
        }
        let next = h.waiting.pop_front().expect("a waiting vCPU");
        self.host_wait(cpu, false);
        self.host_resume(next);
        self.host_run(next);
        true
    }

    /// `Ev::HostOther`: one of the host's other threads runs (with the
    /// probability of its share at the busy count now): it takes a free
    /// host CPU, or a vCPU's (while fewer than every host CPU runs other
    /// threads already).
    #[cold]
    #[inline(never)]
    pub(super) fn host_other(&mut self) {
        let nr_busy = self.nr_busy as usize;
        let h = self.host.as_mut().expect("host");
        let next = h.other_gap().expect("a stream that fired");
        let run = h.spec.other_run.sample(&mut h.rng).max(1);
        let kept = h.rng.next_f64() < h.other_keep(nr_busy);
        let now = self.now;
        self.at(now + next, Ev::HostOther);
        let h = self.host.as_mut().expect("host");
        if !kept || h.others == h.spec.host_cpus {
            return;
        }
        h.others += 1;
        if h.free > 0 {
            h.free -= 1;
        } else {
            let v = h.longest_running().expect("a host CPU with neither a vCPU nor a free slot");
            self.host_wait(v, true);
        }
        self.at(now + run, Ev::HostOtherEnd);
    }

    /// `Ev::HostOtherEnd`: an other thread's run ends; its host CPU goes to
    /// the first waiting vCPU.
    #[cold]
    #[inline(never)]
    pub(super) fn host_other_end(&mut self) {
        self.host.as_mut().expect("host").others -= 1;
        self.host_cpu_freed();
    }
}
