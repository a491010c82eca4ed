//! Idle-state residency from `cpu_idle` events: per CPU the state it is in
//! (entered at `cpu_idle: state=N`, left at `state=4294967295`), summed per
//! state name over the measured window. `idle_residency.<name>` is that time
//! over total CPU time (nr_cpus x window), a fraction: the states' shares
//! plus the busy share plus the time idle in no state (idle since the start,
//! or awake between states) make 1.

use crate::api::{Better, MetricValue};
use crate::ids::{CpuId, Ns};
use crate::topology::machine::Machine;

/// What the residency meter and the energy meter need to know about the
/// machine's idle states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleStatesCtx {
    /// Every state name, in order of first appearance over the core types.
    pub names: Vec<String>,
    /// Per CPU, per state index: the index of its name in `names`.
    pub cpu_state_name: Vec<Vec<u16>>,
}

impl IdleStatesCtx {
    /// The context of `machine`.
    pub fn from_machine(machine: &Machine) -> Self {
        let mut names: Vec<String> = Vec::new();
        let per_type: Vec<Vec<u16>> = machine
            .core_types
            .iter()
            .map(|ct| {
                ct.idle_states
                    .iter()
                    .map(|s| match names.iter().position(|n| *n == s.name) {
                        Some(i) => i as u16,
                        None => {
                            names.push(s.name.clone());
                            (names.len() - 1) as u16
                        }
                    })
                    .collect()
            })
            .collect();
        let cpu_state_name = machine.cpus.iter().map(|c| per_type[c.core_type as usize].clone()).collect();
        IdleStatesCtx { names, cpu_state_name }
    }
}

/// The residency meter of a collector.
#[derive(Clone, Debug)]
pub struct IdleResidency {
    ctx: IdleStatesCtx,
    /// Per CPU: the state it is in and since when.
    open: Vec<Option<(u8, Ns)>>,
    /// Per state name: time spent in it in the window, ns.
    total_ns: Vec<u128>,
}

impl IdleResidency {
    /// A meter with no CPU in any state.
    pub fn new(ctx: IdleStatesCtx) -> Self {
        let nr = ctx.cpu_state_name.len();
        let total_ns = vec![0; ctx.names.len()];
        IdleResidency { ctx, open: vec![None; nr], total_ns }
    }

    fn close(&mut self, cpu: usize, t: Ns, window_start: Ns) {
        let Some((s, since)) = self.open[cpu].take() else { return };
        let Some(&name) = self.ctx.cpu_state_name[cpu].get(s as usize) else { return };
        self.total_ns[name as usize] += t.saturating_sub(since.max(window_start)) as u128;
    }

    /// `cpu_idle` for `cpu` at `t`: it enters `state`, or leaves its state (`None`).
    pub fn on_cpu_idle(&mut self, t: Ns, window_start: Ns, cpu: CpuId, state: Option<u8>) {
        if cpu.idx() >= self.open.len() {
            return;
        }
        self.close(cpu.idx(), t, window_start);
        self.open[cpu.idx()] = state.map(|s| (s, t));
    }

    /// `idle_residency.<name>` for each state over a window of `window_ns`,
    /// closing every open state at `end`.
    pub fn metrics(&mut self, end: Ns, window_start: Ns, window_ns: Ns) -> Vec<MetricValue> {
        for c in 0..self.open.len() {
            if let Some((s, _)) = self.open[c] {
                self.close(c, end, window_start);
                self.open[c] = Some((s, end));
            }
        }
        let cpu_ns = window_ns as f64 * self.open.len() as f64;
        self.ctx
            .names
            .iter()
            .zip(&self.total_ns)
            .map(|(name, &ns)| MetricValue {
                name: format!("idle_residency.{name}"),
                unit: "fraction".into(),
                value: if cpu_ns > 0.0 { ns as f64 / cpu_ns } else { 0.0 },
                better: Better::Neither,
            })
            .collect()
    }
}
