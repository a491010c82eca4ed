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
    /// Whether some domain has a power model (else only frequency
    /// residency and transitions are measured).
    any_power: bool,
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
        let any_power = ctx.domain_has_power.is_empty() || ctx.domain_has_power.iter().any(|&p| p);
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
            any_power,
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

    /// `cpu` switched to a task (`busy`) or to idle at `t`. In a domain
    /// without a power model this only notes the state: its energy (and
    /// its CPUs') is reported absent, so it is not accounted, and its
    /// frequency residency is closed at each frequency change and at the
    /// end, which sums the same nanoseconds as closing it here too.
    pub fn set_busy(&mut self, t: Ns, window_start: Ns, cpu: CpuId, busy: bool) {
        let Some(&d) = self.ctx.cpu_domain.get(cpu.idx()) else { return };
        let was = std::mem::replace(&mut self.busy[cpu.idx()], busy);
        if was == busy || !self.domain_has_power(d as usize) {
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
    ///
    /// Without any power model on the machine no energy is reported and
    /// it returns at once (a cluster's state requests only set powers).
    pub fn set_idle_state(&mut self, t: Ns, window_start: Ns, cpu: CpuId, state: Option<u8>) {
        let Some(&d) = self.ctx.cpu_domain.get(cpu.idx()) else { return };
        if !self.any_power {
            return;
        }
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

    /// Total energy of the domains with a power model, in the unit it is
    /// summed in, mW x ns (exact).
    pub fn energy_mw_ns(&self) -> u128 {
        self.domains.iter().enumerate().filter(|&(d, _)| self.domain_has_power(d)).map(|(_, m)| m.energy).sum()
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
#[path = "energy_tests.rs"]
mod tests;
