//! Interrupts and softirqs: time stolen from whatever a CPU runs, accounted
//! as IRQ time (CONFIG_IRQ_TIME_ACCOUNTING), and softirq work past the
//! kernel's limits deferred to the CPU's `ksoftirqd` (kernel/softirq.c).
//!
//! Each interrupt source of the workload ([`crate::workload::IrqSpec`]) fires
//! on each of its CPUs as an independent stream. One interrupt:
//!
//! ```text
//!   Ev::Irq ─► irq_handler_entry ─ hardirq ─► irq_handler_exit
//!              ─► softirq_entry ─ softirq (inline, at most MAX_SOFTIRQ_TIME) ─► softirq_exit
//!              ─► the rest, if any, queued to ksoftirqd/N (a fair per-CPU kthread)
//! ```
//!
//! Interrupts that arrive while softirqs run raise more softirq work, which
//! `handle_softirqs` takes in further rounds of its loop (`restart`) only
//! while `jiffies` is before its end (`MAX_SOFTIRQ_TIME` rounded up to
//! jiffies), nothing needs rescheduling, and fewer than
//! `MAX_SOFTIRQ_RESTART` rounds have run; otherwise it wakes ksoftirqd with
//! what is pending. schedlab takes such an interrupt right after the softirq
//! chunk it arrived in (the kernel takes its hardirq inside the chunk; the
//! CPU time is the same) and applies the same three checks to its softirq.
//! DEVIATION(kernel v4.10..v6.4): those kernels also left softirqs to
//! ksoftirqd whenever it was already runnable (`ksoftirqd_running`, reverted
//! in v6.5); schedlab runs them inline for every profile.
//!
//! While the handlers run, the CPU's current task makes no progress (its run
//! segment is pushed back by the handler time) and the CPU's task clock
//! (`clock_task`) does not advance: the IRQ time is added to `rq.irq_time`
//! at each handler exit, as `irqtime_account_irq` does, and
//! `update_rq_clock` moves it out of `clock_task` into `avg_irq`
//! (`update_irq_load_avg`), which `scale_rt_capacity` subtracts from the
//! CPU's capacity. An interrupt that arrives while a handler runs waits for
//! it (handlers do not nest).
//!
//! Durations in an `IrqSpec` are times on a capacity-1024 CPU at its highest
//! frequency, like task work: a slower CPU takes longer.
//!
//! A `stall` source (`accounted: false`, workload/stall.rs) takes the same
//! path with two differences: its time stays in `clock_task`, so the task
//! it interrupted is charged it, and until it ends the CPU's tick, slice
//! timer, its sleepers' timers and IPIs wait (`stall_until`, checked in
//! `Sim::handle`): a descheduled vCPU runs nothing, not even its interrupts.
//!
//! A vCPU waiting for a host CPU (`engine/host.rs`, the `overcommit`
//! family) is stalled the same way with `stall_until` at `HOST_HELD`, an
//! end not known yet: its events are held and queued again when it runs.
//!
//! A source with `busy_cpus = K` fires only while the CPU runs a task and
//! exactly K CPUs do (`Sim::nr_busy`); its other interrupts are dropped
//! when they come, so with exponential intervals it is a Poisson stream
//! while the condition holds. One such stall source per K models a host
//! that deschedules a guest's vCPUs more the more of them are busy.

use super::{Ev, Sim};
use crate::ids::{CpuId, Ns, TaskId};
use crate::sim::Rng;
use crate::trace::Event;
use crate::workload::IrqSpec;

/// `MAX_SOFTIRQ_TIME` (kernel/softirq.c): `__do_softirq` runs softirqs for
/// at most 2 ms (`msecs_to_jiffies(2)`, rounded up to a jiffy in the kernel;
/// schedlab keeps the 2 ms) before it defers the rest to ksoftirqd.
pub const MAX_SOFTIRQ_TIME_NS: Ns = 2_000_000;

/// `MAX_SOFTIRQ_RESTART` (kernel/softirq.c): rounds of `handle_softirqs`'s
/// loop before pending work goes to ksoftirqd.
pub const MAX_SOFTIRQ_RESTART: u32 = 10;

/// The IRQ state of one CPU.
#[derive(Clone, Debug, Default)]
pub struct CpuIrq {
    /// A handler (hard or soft) runs until this time.
    pub busy_until: Ns,
    /// Softirq work deferred to ksoftirqd and not yet handed over, ns.
    pub deferred_ns: Ns,
    /// This CPU's ksoftirqd task, when it has interrupt sources.
    pub ksoftirqd: Option<TaskId>,
    /// The channel ksoftirqd reads its work from.
    pub ksoftirqd_chan: u32,
    /// Interrupts waiting for a running handler to return.
    pub irqs_waiting: u32,
    /// `handle_softirqs` is running its loop: a waiting interrupt's softirq
    /// is one more round of it.
    pub in_softirq_loop: bool,
    /// The loop's `end` (jiffies): no new round from then on.
    pub softirq_end_jiffy: u64,
    /// Rounds the loop may still start (`max_restart`).
    pub softirq_restarts_left: u32,
    /// A `stall` (an unaccounted source) holds the CPU until this time: its
    /// ticks and IPIs wait for the end, as a descheduled vCPU takes them
    /// only when it runs again.
    pub stall_until: Ns,
}

/// One stream of interrupts: a source on one CPU.
#[derive(Clone, Debug)]
pub struct IrqStream {
    /// Index of the source in the workload's `irqs` (the irq number in traces).
    pub source: u16,
    /// The CPU it fires on.
    pub cpu: CpuId,
    /// Its random stream.
    pub rng: Rng,
}

/// `workload` with a `ksoftirqd/N` task (and its work channel) for every
/// CPU that takes interrupts, and the streams of its interrupt sources.
/// Fails when a source names no CPU of the machine.
pub(super) fn with_ksoftirqd(
    workload: &crate::workload::Workload,
    nr_cpus: usize,
    seed: u64,
) -> crate::Result<(crate::workload::Workload, Vec<CpuIrq>, Vec<IrqStream>)> {
    use crate::workload::{ksoftirqd::Ksoftirqd, ChanId, ChanSpec, Program};
    let mut w = workload.clone();
    let mut irq = vec![CpuIrq::default(); nr_cpus];
    let mut streams = Vec::new();
    for (i, spec) in workload.irqs.iter().enumerate() {
        let mut any = false;
        for cpu in spec.cpus.iter().filter(|c| c.idx() < nr_cpus) {
            any = true;
            let n = streams.len() as u64;
            streams.push(IrqStream { source: i as u16, cpu, rng: Rng::named(seed, "irq", n) });
        }
        if !any {
            return Err(crate::SchedlabError::spec(
                &workload.name,
                format!("irqs[{i}].cpus"),
                format!("at least one CPU below {nr_cpus}"),
            ));
        }
    }
    for s in &streams {
        let c = s.cpu.idx();
        if irq[c].ksoftirqd.is_some() {
            continue;
        }
        let chan = w.chans.len() as u32;
        w.chans.push(ChanSpec::queue(u32::MAX));
        irq[c].ksoftirqd = Some(TaskId(w.tasks.len() as u32));
        irq[c].ksoftirqd_chan = chan;
        // Softirq work touches packet buffers, not a working set that
        // follows the thread: no cache footprint of its own.
        let program = Program::Ksoftirqd(Ksoftirqd::new(ChanId(chan)));
        w.tasks.push(crate::workload::per_cpu_kthread(format!("ksoftirqd/{c}"), program, s.cpu, 0));
    }
    Ok((w, irq, streams))
}

impl Sim {
    /// The first interrupt of every stream.
    pub(super) fn irq_start(&mut self) {
        for i in 0..self.irq_streams.len() {
            let s = self.irq_streams[i].source as usize;
            let first = self.irq_specs[s].interval.sample(&mut self.irq_streams[i].rng);
            self.at(first, Ev::Irq { stream: i as u32 });
        }
    }

    /// `ksoftirqd/N` has slept since boot, waiting for deferred softirq
    /// work: at the run's start it is asleep on its channel (as if it had
    /// run and found nothing) rather than woken to compete for its CPU with
    /// the workload's first tasks. Returns whether `p` is such a thread.
    pub(super) fn ksoftirqd_sleeps_from_boot(&mut self, p: TaskId) -> bool {
        let Some(st) = self.irq.iter().find(|st| st.ksoftirqd == Some(p)) else { return false };
        let chan = st.ksoftirqd_chan as usize;
        if !self.chans[chan].buf.is_empty() {
            return false;
        }
        self.chans[chan].readers.push_back(p);
        self.tasks[p.idx()].pending =
            Some(crate::workload::Action::Recv { chan: crate::workload::ChanId(chan as u32) });
        true
    }

    /// `Ev::Irq`: stream `i` raises an interrupt now.
    pub(super) fn irq_raise(&mut self, i: u32) -> crate::Result<()> {
        let (cpu, source) = (self.irq_streams[i as usize].cpu, self.irq_streams[i as usize].source);
        // A vCPU waiting for a host CPU takes the interrupt when it runs.
        if self.host.is_some() && self.host_hold(cpu, super::Ev::Irq { stream: i }) {
            return Ok(());
        }
        let busy_until = self.irq[cpu.idx()].busy_until;
        if busy_until > self.now {
            // A handler runs: this interrupt is taken when it returns.
            self.irq[cpu.idx()].irqs_waiting += 1;
            self.at(busy_until, Ev::IrqWaited { stream: i });
            return Ok(());
        }
        let spec: &IrqSpec = &self.irq_specs[source as usize];
        let accounted = spec.accounted;
        let busy = spec.busy_cpus;
        let rng = &mut self.irq_streams[i as usize].rng;
        let (hard, soft, next) = (spec.hardirq.sample(rng), spec.softirq.sample(rng), spec.interval.sample(rng));
        self.at(self.now + next.max(1), Ev::Irq { stream: i });
        if busy != 0 && (self.nr_busy != busy || self.rqs[cpu.idx()].curr.is_none()) {
            // Gated on the busy CPUs: a stream that is Poisson while its
            // condition holds (exponential intervals are memoryless).
            return Ok(());
        }
        let hard = self.irq_wall_ns(cpu, hard);
        if !accounted {
            self.irq[cpu.idx()].stall_until = self.now + hard;
        }
        self.emit(Event::Irq { cpu, irq: source, entry: true });
        self.irq_steal(cpu, hard);
        self.at(self.now + hard, Ev::IrqExit { cpu, irq: source, hardirq_ns: hard, softirq_ns: soft });
        Ok(())
    }

    /// `Ev::IrqWaited`: an interrupt that waited for a handler is taken.
    pub(super) fn irq_waited(&mut self, i: u32) -> crate::Result<()> {
        let cpu = self.irq_streams[i as usize].cpu;
        self.irq[cpu.idx()].irqs_waiting -= 1;
        self.irq_raise(i)
    }

    /// `Ev::IrqExit`: the hard handler returns; softirqs run inline up to
    /// `MAX_SOFTIRQ_TIME` (`invoke_softirq`), or, when this interrupt came
    /// while the softirq loop ran, as its next round if the loop may restart;
    /// the rest goes to ksoftirqd.
    pub(super) fn irq_exit(&mut self, cpu: CpuId, irq: u16, hardirq_ns: Ns, softirq_ns: Ns) -> crate::Result<()> {
        self.emit(Event::Irq { cpu, irq, entry: false });
        // A stall's time is not IRQ time: the task clock keeps it and the
        // running task is charged (update_rq_clock_task subtracts only
        // IRQ and paravirt steal time).
        if self.irq_specs[irq as usize].accounted {
            self.rqs[cpu.idx()].irq_time += hardirq_ns;
        }
        if softirq_ns == 0 {
            return Ok(());
        }
        let jiffies = self.now / self.tick_ns;
        let need_resched = self.rqs[cpu.idx()].need_resched;
        let st = &mut self.irq[cpu.idx()];
        if st.in_softirq_loop {
            // `if (time_before(jiffies, end) && !need_resched() && --max_restart) goto restart;`
            st.softirq_restarts_left = st.softirq_restarts_left.saturating_sub(1);
            if jiffies >= st.softirq_end_jiffy || need_resched || st.softirq_restarts_left == 0 {
                st.in_softirq_loop = false;
                st.deferred_ns += softirq_ns;
                return self.wakeup_softirqd(cpu);
            }
        } else {
            // A new `handle_softirqs`: end = jiffies + msecs_to_jiffies(2).
            let tick_ms = (self.tick_ns / 1_000_000).max(1);
            st.in_softirq_loop = true;
            st.softirq_end_jiffy = jiffies + (MAX_SOFTIRQ_TIME_NS / 1_000_000).div_ceil(tick_ms);
            st.softirq_restarts_left = MAX_SOFTIRQ_RESTART;
        }
        let inline = softirq_ns.min(MAX_SOFTIRQ_TIME_NS);
        self.irq[cpu.idx()].deferred_ns += softirq_ns - inline;
        let wall = self.irq_wall_ns(cpu, inline);
        self.emit(Event::Softirq { cpu, entry: true });
        self.irq_steal(cpu, wall);
        self.at(self.now + wall, Ev::SoftirqExit { cpu, softirq_ns: wall });
        Ok(())
    }

    /// `Ev::SoftirqExit`: a round of inline softirqs is done. With an
    /// interrupt waiting, the loop goes on (its softirq decides whether to
    /// restart); otherwise it ends and ksoftirqd gets what was left over.
    pub(super) fn softirq_exit(&mut self, cpu: CpuId, softirq_ns: Ns) -> crate::Result<()> {
        self.emit(Event::Softirq { cpu, entry: false });
        self.rqs[cpu.idx()].irq_time += softirq_ns;
        let st = &mut self.irq[cpu.idx()];
        st.in_softirq_loop = st.irqs_waiting > 0;
        self.wakeup_softirqd(cpu)
    }

    /// `wakeup_softirqd`: hand the deferred softirq work to ksoftirqd.
    fn wakeup_softirqd(&mut self, cpu: CpuId) -> crate::Result<()> {
        let left = std::mem::take(&mut self.irq[cpu.idx()].deferred_ns);
        if left == 0 {
            return Ok(());
        }
        let Some(k) = self.irq[cpu.idx()].ksoftirqd else { return Ok(()) };
        let chan = self.irq[cpu.idx()].ksoftirqd_chan as usize;
        self.chans[chan].buf.push_back(left);
        if let Some(r) = self.chans[chan].readers.pop_front() {
            debug_assert_eq!(r, k);
            self.try_to_wake_up(r, 0, cpu, None)?;
        }
        Ok(())
    }

    /// Handler time of `work_ns` (at full speed) on `cpu` now.
    fn irq_wall_ns(&self, cpu: CpuId, work_ns: Ns) -> Ns {
        let speed = self.cpu_speed(cpu);
        (work_ns * super::cost::WU_PER_NS).div_ceil(speed).max(1)
    }

    /// A handler occupies `cpu` for `ns` from now: the running task's work
    /// (and anything else waiting for the CPU) is pushed back.
    /// When `cpu`'s stall ends, if it is stalled now (a `stall` source).
    #[inline]
    pub(super) fn stalled(&self, cpu: CpuId) -> Option<Ns> {
        if !self.may_stall {
            return None;
        }
        let until = self.irq[cpu.idx()].stall_until;
        (until > self.now).then_some(until)
    }

    /// An IPI `ev` to a stalled `cpu` is taken when the vCPU runs again:
    /// queued for the stall's end. Returns whether it was deferred.
    #[inline]
    pub(super) fn defer_ipi_if_stalled(&mut self, cpu: CpuId, ev: Ev) -> bool {
        let Some(t) = self.stalled(cpu) else { return false };
        if !self.host_hold(cpu, ev) {
            self.at_in(super::LANE_IPI, t, ev);
        }
        true
    }

    fn irq_steal(&mut self, cpu: CpuId, ns: Ns) {
        self.timed_steal(cpu, ns);
        let now = self.now;
        self.irq[cpu.idx()].busy_until = now + ns;
        let running = self.rqs[cpu.idx()].seg_active;
        if running {
            self.sync_segment(cpu);
        }
        let rq = &mut self.rqs[cpu.idx()];
        rq.ready_at = rq.ready_at.max(now) + ns;
        if running {
            self.restart_segment(cpu);
        }
    }
}
