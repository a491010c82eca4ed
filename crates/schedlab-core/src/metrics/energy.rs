//! Energy accounting from the event stream: each CPU draws its OPP's active
//! power while it runs a task and its idle power otherwise; `cpu_frequency`
//! events move a domain between OPPs. Per frequency domain the collector
//! keeps the power drawn now and integrates it lazily (at the domain's next
//! change and at the end), so an event costs O(1), never a machine scan.
//!
//! An idle CPU draws the `power_mw` of the idle state it is in, from the
//! `cpu_idle` events the idle governor's choices produce; an idle CPU in no
//! state (idle since the start, or awake between states) draws its core
//! type's shallowest state's power. A `cpu_idle` event names the state the
//! CPU requested (as the kernel traces it); a cluster state is in effect
//! only while every CPU of the cluster requests one (`cpuidle/cluster.rs`),
//! and until then the requesting CPU draws its deepest CPU state's power.
//! The meter replays that rule from the events, so a cluster going down or
//! up re-prices its CPUs: O(cluster size) for those events, O(1) for the
//! rest. Model limit: a CPU handling an interrupt while idle is counted idle.
//!
//! A frequency domain whose core type gives no power figure at all (every
//! OPP's and every idle state's `power_mw` 0, as in the x86 presets) has no
//! power model: its power is unknown, not zero, so its energy and its CPUs'
//! are absent (NaN, null in JSON), and so are the machine's totals
//! (`energy_j`, `power_mw`), which would be partial. Frequency residency and
//! transitions need no power and are reported for every domain.

use crate::api::{Better, MetricValue};
use crate::cpuidle::cluster::{deepest_cpu_state, ClusterIdle};
use crate::ids::{CpuId, Ns, NSEC_PER_SEC};
use crate::topology::machine::Machine;
use crate::topology::{IdleLevel, Opp};

/// What the energy meter needs to know about the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyCtx {
    /// Frequency domain of each CPU.
    pub cpu_domain: Vec<u32>,
    /// OPP table of each domain (its CPUs' core type), ascending.
    pub domain_opps: Vec<Vec<Opp>>,
    /// Idle power of one CPU of each domain in no idle state (its
    /// shallowest state's), mW.
    pub domain_idle_mw: Vec<u32>,
    /// Per domain, the power of one CPU in each idle state, shallowest first, mW.
    pub domain_idle_states_mw: Vec<Vec<u32>>,
    /// Per domain, the level of each idle state (shorter than the states:
    /// the rest are CPU states).
    pub domain_idle_levels: Vec<Vec<IdleLevel>>,
    /// Cluster of each CPU (its cluster states' coupling); empty: every CPU
    /// its own.
    pub cpu_cluster: Vec<u32>,
    /// Starting frequency of each domain, kHz.
    pub domain_start_khz: Vec<u32>,
    /// Whether each domain has a power model (some OPP or idle state with a
    /// nonzero `power_mw`); empty: every domain has one.
    pub domain_has_power: Vec<bool>,
}

/// Whether core type `ct` gives any power figure: some OPP or idle state
/// with a nonzero `power_mw`. Without one its power is unknown.
pub fn has_power_model(ct: &crate::topology::machine::CoreType) -> bool {
    ct.opps.iter().any(|o| o.power_mw > 0) || ct.idle_states.iter().any(|s| s.power_mw > 0)
}

/// `opps` followed by the machine's turbo frequencies above them (when a
/// governor lets turbo act), so that time at a turbo frequency shows in its
/// own `freq_residency` bucket. DEVIATION: there is no power model of
/// turbo; a turbo frequency draws the highest OPP's power.
fn with_turbo(machine: &Machine, opps: &[Opp]) -> Vec<Opp> {
    let mut v = opps.to_vec();
    if machine.cpufreq.governor.is_none() {
        return v;
    }
    let top = opps.last().map_or((0, 0), |o| (o.freq_khz, o.power_mw));
    let mut turbo: Vec<u32> = machine.cpufreq.turbo_khz.iter().copied().filter(|&k| k > top.0).collect();
    turbo.sort_unstable();
    turbo.dedup();
    v.extend(turbo.into_iter().map(|freq_khz| Opp { freq_khz, power_mw: top.1 }));
    v
}

impl EnergyCtx {
    /// The context of `machine` with each domain starting at `start_khz`.
    pub fn from_machine(machine: &Machine, start_khz: Vec<u32>) -> Self {
        let first = |d: &crate::topology::machine::FreqDomain| machine.core_type(d.span.first().unwrap_or(CpuId(0)));
        EnergyCtx {
            cpu_domain: machine.cpus.iter().map(|c| c.freq_domain).collect(),
            domain_opps: machine.freq_domains.iter().map(|d| with_turbo(machine, &first(d).opps)).collect(),
            domain_idle_mw: machine
                .freq_domains
                .iter()
                .map(|d| first(d).idle_states.first().map_or(0, |s| s.power_mw))
                .collect(),
            domain_idle_states_mw: machine
                .freq_domains
                .iter()
                .map(|d| first(d).idle_states.iter().map(|s| s.power_mw).collect())
                .collect(),
            domain_idle_levels: machine
                .freq_domains
                .iter()
                .map(|d| first(d).idle_states.iter().map(|s| s.level).collect())
                .collect(),
            cpu_cluster: machine.cpus.iter().map(|c| c.cluster).collect(),
            domain_start_khz: start_khz,
            domain_has_power: machine.freq_domains.iter().map(|d| has_power_model(first(d))).collect(),
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
    /// Idle power of the domain's CPUs not running a task, each at its
    /// state's power, mW.
    idle_mw_sum: u64,
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
    /// When the current idle stretch (at `idle_mw`) began, ns.
    idle_from: Ns,
    /// Power while idle now (its idle state's), mW.
    idle_mw: u32,
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
    /// The idle state each CPU requested (its last `cpu_idle`).
    state: Vec<Option<u8>>,
    /// Cluster of each CPU.
    cpu_cluster: Vec<u32>,
    /// Per cluster, its CPUs' cluster-state requests.
    clusters: Vec<ClusterIdle>,
    /// Per cluster, its CPUs.
    cluster_cpus: Vec<Vec<u32>>,
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
                idle_mw_sum: 0,
                last_t: 0,
                energy: 0,
                residency: vec![0; opps.len().max(1)],
                a_acc: 0,
                a_last: 0,
            })
            .collect();
        for &d in &ctx.cpu_domain {
            domains[d as usize].idle_mw_sum += ctx.domain_idle_mw[d as usize] as u64;
        }
        let busy = vec![false; ctx.cpu_domain.len()];
        let cpus = ctx
            .cpu_domain
            .iter()
            .map(|&d| CpuMeter { idle_mw: ctx.domain_idle_mw[d as usize], ..CpuMeter::default() })
            .collect();
        let nr = ctx.cpu_domain.len();
        let cpu_cluster: Vec<u32> =
            if ctx.cpu_cluster.len() == nr { ctx.cpu_cluster.clone() } else { (0..nr as u32).collect() };
        let mut cluster_cpus = vec![Vec::new(); cpu_cluster.iter().max().map_or(0, |&c| c as usize + 1)];
        for (cpu, &cl) in cpu_cluster.iter().enumerate() {
            cluster_cpus[cl as usize].push(cpu as u32);
        }
        let clusters = cluster_cpus.iter().map(|v| ClusterIdle::new(v.len() as u16)).collect();
        EnergyMeter {
            ctx,
            domains,
            busy,
            cpus,
            state: vec![None; nr],
            cpu_cluster,
            clusters,
            cluster_cpus,
            transitions: 0,
        }
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
        let c = &mut self.cpus[cpu];
        let idle_mw = c.idle_mw as u128;
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
        m.nr_busy as u64 * active + m.idle_mw_sum
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
        let idle_mw = c.idle_mw as u64;
        let m = &mut self.domains[d as usize];
        if busy {
            m.nr_busy += 1;
            m.idle_mw_sum -= idle_mw;
        } else {
            m.nr_busy -= 1;
            m.idle_mw_sum += idle_mw;
        }
    }

    /// The level of state `s` of domain `d`'s table.
    fn level(&self, d: usize, s: usize) -> IdleLevel {
        self.ctx.domain_idle_levels.get(d).and_then(|l| l.get(s)).copied().unwrap_or(IdleLevel::Cpu)
    }

    /// The idle power `cpu` draws now, from the state it requested and, for
    /// a cluster state, whether its cluster is down, mW.
    fn requested_mw(&self, cpu: usize) -> u32 {
        let d = self.ctx.cpu_domain[cpu] as usize;
        let Some(s) = self.state[cpu].map(usize::from) else { return self.ctx.domain_idle_mw[d] };
        let eff = if self.level(d, s) == IdleLevel::Cpu {
            s
        } else if let Some(down) = self.clusters[self.cpu_cluster[cpu] as usize].down_state() {
            down
        } else {
            deepest_cpu_state((0..=s).map(|i| self.level(d, i)), s)
        };
        self.ctx.domain_idle_states_mw[d].get(eff).copied().unwrap_or(self.ctx.domain_idle_mw[d])
    }

    /// `cpu` draws `mw` when idle from `t` on.
    fn set_idle_mw(&mut self, t: Ns, window_start: Ns, cpu: usize, mw: u32) {
        let d = self.ctx.cpu_domain[cpu] as usize;
        let old = self.cpus[cpu].idle_mw;
        if mw == old {
            return;
        }
        if !self.busy[cpu] {
            // Close the idle stretch at the old power, in the domain and the CPU.
            self.account(d, t, window_start);
            self.account_cpu(cpu, t, window_start);
            let m = &mut self.domains[d];
            m.idle_mw_sum = m.idle_mw_sum - old as u64 + mw as u64;
        }
        self.cpus[cpu].idle_mw = mw;
    }

    /// Re-price every CPU of `cpu`'s cluster (it went down or came up).
    fn reprice_cluster(&mut self, t: Ns, window_start: Ns, cpu: usize) {
        let cl = self.cpu_cluster[cpu] as usize;
        for i in 0..self.cluster_cpus[cl].len() {
            let o = self.cluster_cpus[cl][i] as usize;
            let mw = self.requested_mw(o);
            self.set_idle_mw(t, window_start, o, mw);
        }
    }

    /// `cpu_idle` for `cpu` at `t`: it enters idle state `state`, or leaves
    /// its state (`None`: back to the no-state power).
    pub fn set_idle_state(&mut self, t: Ns, window_start: Ns, cpu: CpuId, state: Option<u8>) {
        let Some(&d) = self.ctx.cpu_domain.get(cpu.idx()) else { return };
        let (d, c) = (d as usize, cpu.idx());
        let cl = self.cpu_cluster[c] as usize;
        let mut flipped = false;
        if let Some(old) = self.state[c].take().map(usize::from) {
            if self.level(d, old) == IdleLevel::Cluster {
                flipped |= self.clusters[cl].cpu_exit(old);
            }
        }
        if let Some(new) = state.map(usize::from) {
            if self.level(d, new) == IdleLevel::Cluster {
                flipped |= self.clusters[cl].cpu_enter(new);
            }
        }
        self.state[c] = state;
        if flipped {
            self.reprice_cluster(t, window_start, c);
        } else {
            let mw = self.requested_mw(c);
            self.set_idle_mw(t, window_start, c, mw);
        }
    }

    /// Total energy in the unit it is summed in, mW x ns (exact).
    pub fn energy_mw_ns(&self) -> u128 {
        self.domains.iter().map(|m| m.energy).sum()
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

    /// Whether domain `d` has a power model.
    pub fn domain_has_power(&self, d: usize) -> bool {
        self.ctx.domain_has_power.get(d).copied().unwrap_or(true)
    }

    /// Whether every domain has a power model (the totals are then known).
    pub fn has_power(&self) -> bool {
        (0..self.domains.len()).all(|d| self.domain_has_power(d))
    }

    /// Energy of CPU `c`, joules (NaN: its domain has no power model).
    pub fn cpu_energy_j(&self, c: usize) -> f64 {
        if !self.domain_has_power(self.ctx.cpu_domain[c] as usize) {
            return f64::NAN;
        }
        self.cpus[c].energy as f64 / 1e12
    }

    /// Energy of domain `d`, joules (NaN: it has no power model).
    pub fn domain_energy_j(&self, d: usize) -> f64 {
        if !self.domain_has_power(d) {
            return f64::NAN;
        }
        self.domains[d].energy as f64 / 1e12
    }

    /// Total energy, joules (NaN: some domain has no power model).
    pub fn energy_j(&self) -> f64 {
        if !self.has_power() {
            return f64::NAN;
        }
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

/// The registry metrics the meter reports (absent without a frequency model;
/// `energy_j` and `power_mw` also without a power model).
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
            domain_idle_states_mw: vec![vec![10]],
            domain_idle_levels: vec![vec![IdleLevel::Cpu]],
            cpu_cluster: vec![0, 0],
            domain_start_khz: vec![1_000_000],
            domain_has_power: vec![true],
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

    /// A CPU's idle-state event (`None`: it leaves idle).
    fn idle(cpu: u32, state: Option<u8>) -> Event {
        Event::CpuIdle { cpu: CpuId(cpu), state }
    }

    /// A context switch on `cpu` (a blocking `prev`).
    fn sw(cpu: u32, prev: Option<TaskId>, next: Option<TaskId>) -> Event {
        Event::Switch { cpu: CpuId(cpu), prev, prev_state: PrevState::Sleeping, next }
    }

    /// Two CPUs starting idle under energy context `x`, fed `evs` and
    /// finished at `end`.
    fn replay(x: EnergyCtx, evs: &[(u64, Event)], end: u64) -> Collector {
        let mut mc = MetricsContext::flat(2);
        mc.cpus_start_idle = true;
        mc.energy = Some(x);
        let mut c = Collector::new(mc);
        for (time, ev) in evs.iter().cloned() {
            c.on_event(&TimedEvent { time, ev });
        }
        c.finish(end);
        c
    }

    #[test]
    fn idle_power_follows_the_idle_state() {
        // One domain at 1000 MHz (100 mW busy); idle states C1 at 10 mW and
        // C6 at 2 mW; an idle CPU in no state draws C1's 10 mW.
        let mut x = ctx();
        x.domain_idle_states_mw = vec![vec![10, 2]];
        let ms = NSEC_PER_MSEC;
        // CPU0: busy 0..1 ms, C6 1..3 ms, C1 3..4 ms, busy 4..5 ms.
        // CPU1: no state 0..2 ms (10 mW), C6 2..5 ms.
        let evs = [
            (0, sw(0, None, Some(TaskId(0)))),
            (ms, sw(0, Some(TaskId(0)), None)),
            (ms, idle(0, Some(1))),
            (2 * ms, idle(1, Some(1))),
            (3 * ms, idle(0, None)),
            (3 * ms, idle(0, Some(0))),
            (4 * ms, idle(0, None)),
            (4 * ms, sw(0, None, Some(TaskId(0)))),
        ];
        let c = replay(x, &evs, 5 * ms);
        let e = c.energy.as_ref().unwrap();
        // mW x ms: CPU0 100 + 2 x 2 + 10 + 100 = 214; CPU1 2 x 10 + 3 x 2 = 26.
        assert_eq!(e.energy_mw_ns(), (214 + 26) * ms as u128);
        assert_eq!(e.cpus[0].energy, 214 * ms as u128);
        assert_eq!(e.cpus[1].energy, 26 * ms as u128);
    }

    #[test]
    fn a_cluster_state_draws_its_power_only_while_the_whole_cluster_is_in_it() {
        // Two CPUs of one cluster at 1000 MHz (100 mW busy); states C1 10 mW,
        // cpu-off 4 mW, cluster-off 1 mW (cluster level).
        let mut x = ctx();
        x.domain_idle_states_mw = vec![vec![10, 4, 1]];
        x.domain_idle_levels = vec![vec![IdleLevel::Cpu, IdleLevel::Cpu, IdleLevel::Cluster]];
        let ms = NSEC_PER_MSEC;
        // CPU0: busy 0..1 ms, asks for cluster-off 1..3 ms, then (CPU1 up)
        // in cpu-off 3..4 ms.
        // CPU1: asks for cluster-off 0..3 ms: cpu-off while CPU0 runs
        // (0..1 ms), cluster-off with it (1..3 ms); busy 3..4 ms.
        let evs = [
            (0, sw(0, None, Some(TaskId(0)))),
            (0, idle(1, Some(2))),
            (ms, sw(0, Some(TaskId(0)), None)),
            (ms, idle(0, Some(2))),
            (3 * ms, idle(1, None)),
            (3 * ms, sw(1, None, Some(TaskId(1)))),
        ];
        let c = replay(x, &evs, 4 * ms);
        let e = c.energy.as_ref().unwrap();
        // mW x ms: CPU0 100 + 2 x 1 + 4 = 106; CPU1 4 + 2 x 1 + 100 = 106.
        assert_eq!(e.cpus[0].energy, 106 * ms as u128);
        assert_eq!(e.cpus[1].energy, 106 * ms as u128);
        assert_eq!(e.energy_mw_ns(), 212 * ms as u128);
    }

    /// Two domains of one CPU each (CPU0 in fd0, CPU1 in fd1), the same
    /// tables; `powered[d]`: whether domain `d` has a power model.
    fn two_domains(powered: [bool; 2]) -> EnergyCtx {
        let opps = ctx().domain_opps[0].clone();
        EnergyCtx {
            cpu_domain: vec![0, 1],
            domain_opps: vec![opps.clone(), opps],
            domain_idle_mw: vec![10, 10],
            domain_idle_states_mw: vec![vec![10], vec![10]],
            domain_idle_levels: vec![vec![IdleLevel::Cpu], vec![IdleLevel::Cpu]],
            cpu_cluster: vec![0, 1],
            domain_start_khz: vec![1_000_000, 1_000_000],
            domain_has_power: powered.to_vec(),
        }
    }

    /// Both CPUs busy 0..1 ms, CPU1's domain at 2000 MHz from 1 ms, both
    /// idle from 2 ms; finished at 3 ms.
    fn run_two_domains(powered: [bool; 2]) -> Vec<MetricValue> {
        let ms = NSEC_PER_MSEC;
        let evs = [
            (0, sw(0, None, Some(TaskId(0)))),
            (0, sw(1, None, Some(TaskId(1)))),
            (ms, Event::CpuFrequency { cpu: CpuId(1), khz: 2_000_000 }),
            (2 * ms, sw(0, Some(TaskId(0)), None)),
            (2 * ms, sw(1, Some(TaskId(1)), None)),
        ];
        let mut mc = MetricsContext::flat(2);
        mc.cpus_start_idle = true;
        mc.energy = Some(two_domains(powered));
        let mut c = Collector::new(mc);
        for (time, ev) in evs.iter().cloned() {
            c.on_event(&TimedEvent { time, ev });
        }
        c.finish(3 * ms)
    }

    #[test]
    fn a_domain_without_power_has_no_energy_and_the_totals_are_absent() {
        // fd0 powered: 100 + 100 + 10 uJ; fd1 not: its energy, its CPU's and
        // the totals are absent, its residency and transitions are not.
        let out = run_two_domains([true, false]);
        assert!((value(&out, "energy_j.fd0") - 210e-6).abs() < 1e-12);
        assert!((value(&out, "energy_j.cpu0") - 210e-6).abs() < 1e-12);
        for name in ["energy_j.fd1", "energy_j.cpu1", "energy_j", "power_mw"] {
            assert!(value(&out, name).is_nan(), "{name} = {}", value(&out, name));
        }
        assert_eq!(value(&out, "freq_transitions"), 1.0);
        assert!((value(&out, "freq_residency.fd1.2000000") - 2.0 / 3.0).abs() < 1e-12);
        assert!((value(&out, "freq_residency.fd0.1000000") - 1.0).abs() < 1e-12);
    }

    #[test]
    fn with_every_domain_powered_the_totals_are_the_sum() {
        // fd0 210 uJ as above; fd1: 100 (1000 MHz) + 400 (2000 MHz) + 10 idle.
        let out = run_two_domains([true, true]);
        assert!((value(&out, "energy_j.fd1") - 510e-6).abs() < 1e-12);
        assert!((value(&out, "energy_j") - 720e-6).abs() < 1e-12);
        assert!((value(&out, "power_mw") - 240.0).abs() < 1e-9);
    }

    #[test]
    fn no_power_figure_means_no_power_model() {
        let preset = |name: &str| crate::testkit::machine_from_toml(&crate::testkit::preset_source(name).text);
        // The x86 presets give P-states without power; hikey960 OPP power
        // without idle power; pixel2 both.
        let m = preset("xeon-2s-20c");
        let x = EnergyCtx::from_machine(&m, vec![0; m.freq_domains.len()]);
        assert!(!x.domain_has_power.is_empty() && x.domain_has_power.iter().all(|&p| !p));
        for name in ["hikey960", "pixel2"] {
            let m = preset(name);
            let x = EnergyCtx::from_machine(&m, vec![0; m.freq_domains.len()]);
            assert_eq!(x.domain_has_power, vec![true, true], "{name}");
        }
    }
}
