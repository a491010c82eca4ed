//! Energy accounting from the event stream: each CPU draws its OPP's active
//! power while it runs a task and its idle power otherwise; `cpu_frequency`
//! events move a domain between OPPs. Per frequency domain the collector
//! keeps the power drawn now and integrates it lazily (at the domain's next
//! change and at the end), so an event costs O(1), never a machine scan.
//!
//! Model limits: a CPU handling an interrupt while idle is counted idle; the
//! idle power is one figure per core type (its shallowest idle state's
//! `power_mw`), since schedlab has no idle-state selection yet.

use crate::api::{Better, MetricValue};
use crate::ids::{CpuId, Ns, NSEC_PER_SEC};
use crate::topology::machine::Machine;
use crate::topology::Opp;

/// What the energy meter needs to know about the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyCtx {
    /// Frequency domain of each CPU.
    pub cpu_domain: Vec<u32>,
    /// OPP table of each domain (its CPUs' core type), ascending.
    pub domain_opps: Vec<Vec<Opp>>,
    /// Idle power of one CPU of each domain, mW.
    pub domain_idle_mw: Vec<u32>,
    /// Starting frequency of each domain, kHz.
    pub domain_start_khz: Vec<u32>,
}

impl EnergyCtx {
    /// The context of `machine` with each domain starting at `start_khz`.
    pub fn from_machine(machine: &Machine, start_khz: Vec<u32>) -> Self {
        let first = |d: &crate::topology::machine::FreqDomain| machine.core_type(d.span.first().unwrap_or(CpuId(0)));
        EnergyCtx {
            cpu_domain: machine.cpus.iter().map(|c| c.freq_domain).collect(),
            domain_opps: machine.freq_domains.iter().map(|d| first(d).opps.clone()).collect(),
            domain_idle_mw: machine
                .freq_domains
                .iter()
                .map(|d| first(d).idle_states.first().map_or(0, |s| s.power_mw))
                .collect(),
            domain_start_khz: start_khz,
        }
    }
}

/// Per-domain meter state.
#[derive(Clone, Debug)]
struct DomainMeter {
    /// Index of the OPP in use.
    opp: usize,
    /// CPUs of the domain running a task.
    nr_busy: u32,
    /// CPUs of the domain.
    nr_cpus: u32,
    /// Accounted up to here, ns.
    last_t: Ns,
    /// Energy so far, mW x ns.
    energy: u128,
    /// Time at each OPP, ns (counted window only).
    residency: Vec<u128>,
    /// Integral of one busy CPU's power up to `a_last`, mW x ns: a CPU's
    /// active energy over a busy period is the difference of two readings.
    a_acc: u128,
    /// Time of `a_acc`, ns.
    a_last: Ns,
}

/// Per-CPU meter state (the split of its domain's energy).
#[derive(Clone, Copy, Debug, Default)]
struct CpuMeter {
    /// The domain's active integral when the CPU went busy, mW x ns.
    busy_from: u128,
    /// When the CPU went idle, ns.
    idle_from: Ns,
    /// Energy so far, mW x ns.
    energy: u128,
}

/// The energy meter of a collector.
#[derive(Clone, Debug)]
pub struct EnergyMeter {
    ctx: EnergyCtx,
    domains: Vec<DomainMeter>,
    busy: Vec<bool>,
    cpus: Vec<CpuMeter>,
    /// Frequency transitions in the counted window.
    pub transitions: u64,
}

/// The OPP index of `khz` in `opps`: the lowest at or above it.
fn opp_index(opps: &[Opp], khz: u32) -> usize {
    opps.iter().position(|o| o.freq_khz >= khz).unwrap_or(opps.len().saturating_sub(1))
}

impl EnergyMeter {
    /// A meter with every CPU idle at its domain's starting frequency.
    pub fn new(ctx: EnergyCtx) -> Self {
        let mut domains: Vec<DomainMeter> = ctx
            .domain_opps
            .iter()
            .zip(&ctx.domain_start_khz)
            .map(|(opps, &khz)| DomainMeter {
                opp: opp_index(opps, khz),
                nr_busy: 0,
                nr_cpus: 0,
                last_t: 0,
                energy: 0,
                residency: vec![0; opps.len().max(1)],
                a_acc: 0,
                a_last: 0,
            })
            .collect();
        for &d in &ctx.cpu_domain {
            domains[d as usize].nr_cpus += 1;
        }
        let busy = vec![false; ctx.cpu_domain.len()];
        let cpus = vec![CpuMeter::default(); ctx.cpu_domain.len()];
        EnergyMeter { ctx, domains, busy, cpus, transitions: 0 }
    }

    /// Energy one CPU of domain `d` would have drawn busy from the window's
    /// start to `t`, mW x ns.
    fn active_integral(&self, d: usize, t: Ns, window_start: Ns) -> u128 {
        let m = &self.domains[d];
        let mw = self.ctx.domain_opps[d].get(m.opp).map_or(0, |o| o.power_mw) as u128;
        let dt = t.max(window_start).saturating_sub(m.a_last.max(window_start));
        m.a_acc + mw * dt as u128
    }

    /// Close the current busy or idle stretch of `cpu` at `t` into its energy.
    fn account_cpu(&mut self, cpu: usize, t: Ns, window_start: Ns) {
        let d = self.ctx.cpu_domain[cpu] as usize;
        let a = self.active_integral(d, t, window_start);
        let idle_mw = self.ctx.domain_idle_mw[d] as u128;
        let c = &mut self.cpus[cpu];
        if self.busy[cpu] {
            c.energy += a - c.busy_from;
            c.busy_from = a;
        } else {
            let dt = t.max(window_start).saturating_sub(c.idle_from.max(window_start));
            c.energy += idle_mw * dt as u128;
            c.idle_from = t;
        }
    }

    /// Power drawn by domain `d` now, mW.
    fn domain_mw(&self, d: usize) -> u64 {
        let m = &self.domains[d];
        let active = self.ctx.domain_opps[d].get(m.opp).map_or(0, |o| o.power_mw) as u64;
        let idle = self.ctx.domain_idle_mw[d] as u64;
        m.nr_busy as u64 * active + (m.nr_cpus - m.nr_busy) as u64 * idle
    }

    /// Integrate domain `d` up to `t`, counting only time after `window_start`.
    fn account(&mut self, d: usize, t: Ns, window_start: Ns) {
        let from = self.domains[d].last_t.max(window_start);
        if t > from {
            let dt = (t - from) as u128;
            let mw = self.domain_mw(d) as u128;
            let m = &mut self.domains[d];
            m.energy += mw * dt;
            let opp = m.opp;
            m.residency[opp] += dt;
        }
        self.domains[d].last_t = self.domains[d].last_t.max(t);
    }

    /// `cpu` switched to a task (`busy`) or to idle at `t`.
    pub fn set_busy(&mut self, t: Ns, window_start: Ns, cpu: CpuId, busy: bool) {
        let Some(&d) = self.ctx.cpu_domain.get(cpu.idx()) else { return };
        let was = std::mem::replace(&mut self.busy[cpu.idx()], busy);
        if was == busy {
            return;
        }
        self.account(d as usize, t, window_start);
        // Close the stretch that ends in the state it had.
        self.busy[cpu.idx()] = was;
        self.account_cpu(cpu.idx(), t, window_start);
        self.busy[cpu.idx()] = busy;
        let a = self.active_integral(d as usize, t, window_start);
        let c = &mut self.cpus[cpu.idx()];
        c.busy_from = a;
        c.idle_from = t;
        let m = &mut self.domains[d as usize];
        if busy {
            m.nr_busy += 1;
        } else {
            m.nr_busy -= 1;
        }
    }

    /// `cpu_frequency` for `cpu` at `t`: its domain is at `khz` from now.
    pub fn set_freq(&mut self, t: Ns, window_start: Ns, cpu: CpuId, khz: u32) {
        let Some(&d) = self.ctx.cpu_domain.get(cpu.idx()) else { return };
        let d = d as usize;
        let opp = opp_index(&self.ctx.domain_opps[d], khz);
        if opp == self.domains[d].opp {
            return;
        }
        self.account(d, t, window_start);
        let a = self.active_integral(d, t, window_start);
        let m = &mut self.domains[d];
        m.a_acc = a;
        m.a_last = t;
        m.opp = opp;
        if t >= window_start {
            self.transitions += 1;
        }
    }

    /// Bring every domain to `t` (the end of the run).
    pub fn finish(&mut self, t: Ns, window_start: Ns) {
        for d in 0..self.domains.len() {
            self.account(d, t, window_start);
        }
        for c in 0..self.cpus.len() {
            self.account_cpu(c, t, window_start);
        }
    }

    /// Energy of CPU `c`, joules.
    pub fn cpu_energy_j(&self, c: usize) -> f64 {
        self.cpus[c].energy as f64 / 1e12
    }

    /// Energy of domain `d`, joules.
    pub fn domain_energy_j(&self, d: usize) -> f64 {
        self.domains[d].energy as f64 / 1e12
    }

    /// Total energy, joules.
    pub fn energy_j(&self) -> f64 {
        self.domains.iter().map(|m| m.energy).sum::<u128>() as f64 / 1e12
    }

    /// Number of domains.
    pub fn nr_domains(&self) -> usize {
        self.domains.len()
    }

    /// (kHz, fraction of the counted time) of each OPP of domain `d`.
    pub fn residency(&self, d: usize) -> Vec<(u32, f64)> {
        let m = &self.domains[d];
        let total: u128 = m.residency.iter().sum();
        self.ctx.domain_opps[d]
            .iter()
            .zip(&m.residency)
            .map(|(o, &ns)| (o.freq_khz, if total == 0 { 0.0 } else { ns as f64 / total as f64 }))
            .collect()
    }
}

/// The registry metrics the meter reports (absent without an energy model).
pub const ENERGY_METRICS: [&str; 3] = ["energy_j", "power_mw", "freq_transitions"];

impl EnergyMeter {
    /// Value of one of [`ENERGY_METRICS`] over a counted window of `window_ns`.
    pub fn value(&self, name: &str, window_ns: Ns) -> f64 {
        match name {
            "energy_j" => self.energy_j(),
            "power_mw" if window_ns > 0 => self.energy_j() * 1e3 * NSEC_PER_SEC as f64 / window_ns as f64,
            "freq_transitions" => self.transitions as f64,
            _ => 0.0,
        }
    }

    /// Per-domain and per-CPU metrics: `energy_j.fdN`,
    /// `freq_residency.fdN.KHZ`, then `energy_j.cpuN`.
    pub fn domain_metrics(&self) -> Vec<MetricValue> {
        let mut out = Vec::new();
        for d in 0..self.nr_domains() {
            out.push(MetricValue {
                name: format!("energy_j.fd{d}"),
                unit: "J".into(),
                value: self.domain_energy_j(d),
                better: Better::Lower,
            });
            for (khz, frac) in self.residency(d) {
                out.push(MetricValue {
                    name: format!("freq_residency.fd{d}.{khz}"),
                    unit: "fraction".into(),
                    value: frac,
                    better: Better::Neither,
                });
            }
        }
        for c in 0..self.cpus.len() {
            out.push(MetricValue {
                name: format!("energy_j.cpu{c}"),
                unit: "J".into(),
                value: self.cpu_energy_j(c),
                better: Better::Lower,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{TaskId, NSEC_PER_MSEC};
    use crate::metrics::{Collector, MetricsContext};
    use crate::trace::{Event, PrevState, TimedEvent};

    /// Two CPUs in one domain: 1000 MHz at 100 mW, 2000 MHz at 400 mW, idle 10 mW.
    fn ctx() -> EnergyCtx {
        EnergyCtx {
            cpu_domain: vec![0, 0],
            domain_opps: vec![vec![
                Opp { freq_khz: 1_000_000, power_mw: 100 },
                Opp { freq_khz: 2_000_000, power_mw: 400 },
            ]],
            domain_idle_mw: vec![10],
            domain_start_khz: vec![1_000_000],
        }
    }

    fn value(ms: &[MetricValue], name: &str) -> f64 {
        ms.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no {name}")).value
    }

    #[test]
    fn hand_built_schedule_energy_is_the_hand_sum() {
        let mut mc = MetricsContext::flat(2);
        mc.cpus_start_idle = true;
        mc.energy = Some(ctx());
        let mut c = Collector::new(mc);
        let ms = NSEC_PER_MSEC;
        let sw = |cpu: u32, next: Option<TaskId>| Event::Switch {
            cpu: CpuId(cpu),
            prev: None,
            prev_state: PrevState::Runnable,
            next,
        };
        let evs = [
            // 0..1 ms: CPU0 busy at 1000 MHz, CPU1 idle: 100 + 10 mW.
            TimedEvent { time: 0, ev: sw(0, Some(TaskId(0))) },
            // 1..2 ms: 2000 MHz (both CPUs' lines, one transition): 400 + 10 mW.
            TimedEvent { time: ms, ev: Event::CpuFrequency { cpu: CpuId(0), khz: 2_000_000 } },
            TimedEvent { time: ms, ev: Event::CpuFrequency { cpu: CpuId(1), khz: 2_000_000 } },
            // 2..3 ms: CPU1 busy too: 400 + 400 mW.
            TimedEvent { time: 2 * ms, ev: sw(1, Some(TaskId(1))) },
            // 3..4 ms: both idle: 10 + 10 mW.
            TimedEvent {
                time: 3 * ms,
                ev: Event::Switch { cpu: CpuId(0), prev: Some(TaskId(0)), prev_state: PrevState::Sleeping, next: None },
            },
            TimedEvent {
                time: 3 * ms,
                ev: Event::Switch { cpu: CpuId(1), prev: Some(TaskId(1)), prev_state: PrevState::Sleeping, next: None },
            },
        ];
        for e in &evs {
            c.on_event(e);
        }
        let out = c.finish(4 * ms);
        // mW x ms = uJ: 110 + 410 + 800 + 20 = 1340 uJ.
        let want = 1340e-6;
        assert!((value(&out, "energy_j") - want).abs() < 1e-12, "{}", value(&out, "energy_j"));
        assert!((value(&out, "energy_j.fd0") - want).abs() < 1e-12);
        // 1340 uJ over 4 ms = 335 mW.
        assert!((value(&out, "power_mw") - 335.0).abs() < 1e-9);
        assert_eq!(value(&out, "freq_transitions"), 1.0);
        // Per CPU: CPU0 busy 0..3 ms (100 + 400 + 400 uJ) then idle 1 ms (10 uJ);
        // CPU1 idle 0..2 ms (20 uJ), busy 2..3 ms (400 uJ), idle 3..4 ms (10 uJ).
        assert!((value(&out, "energy_j.cpu0") - 910e-6).abs() < 1e-12, "{}", value(&out, "energy_j.cpu0"));
        assert!((value(&out, "energy_j.cpu1") - 430e-6).abs() < 1e-12, "{}", value(&out, "energy_j.cpu1"));
        assert_eq!(value(&out, "freq_residency.fd0.1000000"), 0.25);
        assert_eq!(value(&out, "freq_residency.fd0.2000000"), 0.75);
    }

    #[test]
    fn warmup_is_not_counted() {
        let mut mc = MetricsContext::flat(2);
        mc.cpus_start_idle = true;
        mc.warmup_ns = NSEC_PER_MSEC;
        mc.energy = Some(ctx());
        let mut c = Collector::new(mc);
        c.on_event(&TimedEvent {
            time: 0,
            ev: Event::Switch { cpu: CpuId(0), prev: None, prev_state: PrevState::Runnable, next: Some(TaskId(0)) },
        });
        let out = c.finish(3 * NSEC_PER_MSEC);
        // Counted 1..3 ms: 110 mW x 2 ms = 220 uJ: CPU0 busy 200, CPU1 idle 20.
        assert!((value(&out, "energy_j") - 220e-6).abs() < 1e-12, "{}", value(&out, "energy_j"));
        assert!((value(&out, "energy_j.cpu0") - 200e-6).abs() < 1e-12, "{}", value(&out, "energy_j.cpu0"));
        assert!((value(&out, "energy_j.cpu1") - 20e-6).abs() < 1e-12);
    }
}
