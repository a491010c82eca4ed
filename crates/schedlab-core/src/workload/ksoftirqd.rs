//! `ksoftirqd/N`: the per-CPU kernel thread that runs softirq work the
//! interrupt exit path deferred (kernel/softirq.c, `run_ksoftirqd`). The
//! engine creates one per CPU that takes interrupts and hands it work over a
//! channel: each message is nanoseconds of softirq work.

use super::{Action, ChanId, ProgCtx};
use crate::sim::Rng;

/// The ksoftirqd loop: wait for deferred work, run it.
#[derive(Clone, Debug)]
pub struct Ksoftirqd {
    /// Channel the engine posts deferred work to.
    pub chan: ChanId,
    /// Work received and not yet started.
    work: Option<u64>,
}

impl Ksoftirqd {
    /// A ksoftirqd reading `chan`.
    pub fn new(chan: ChanId) -> Self {
        Ksoftirqd { chan, work: None }
    }

    /// Next action.
    pub fn step(&mut self, ctx: &ProgCtx, _rng: &mut Rng) -> Action {
        if let Some(ns) = ctx.msg {
            self.work = Some(ns);
        }
        match self.work.take() {
            Some(ns) => Action::Compute(ns),
            None => Action::Recv { chan: self.chan },
        }
    }
}
