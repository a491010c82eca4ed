//! Turbo: the highest frequency a core may run at depends on how many cores
//! of its package are active (`MSR_TURBO_RATIO_LIMIT`: one ratio per
//! active-core count, the "turbo bins" of Intel's specification updates).
//! A governor's request above the ceiling is granted the ceiling; when a
//! core of the package wakes or sleeps deeply, the ceiling of every domain
//! of the package moves with it, so spreading work over more cores costs
//! frequency and packing it gains some.
//!
//! Which cores count as active: Intel's Turbo Boost documentation counts
//! the cores in C0 or C1 ("active cores"); a core whose threads are all
//! idle in C3 or deeper (C6 on the x86 presets) does not. The machine
//! names that state (`[freq_domain] turbo_inactive_state`); a thread
//! running, or idle in a shallower state, keeps its core active. A CPU
//! idle since the start of the run is inactive (the kernel's would be in
//! the deepest state).
//!
//! Cost: counters per core and per package updated at idle entry and exit
//! of one CPU; the domains of a package are revisited only when its
//! ceiling changes.

use crate::engine::Sim;
use crate::ids::CpuId;
use crate::topology::Machine;

/// Active-core accounting of the machine.
#[derive(Clone, Debug)]
pub struct TurboState {
    /// Whether each CPU keeps its core active.
    cpu_active: Vec<bool>,
    /// Active CPUs of each core.
    core_active: Vec<u8>,
    /// Active cores of each package.
    pkg_active: Vec<u32>,
    /// The ceiling of each package now, kHz.
    cap_khz: Vec<u32>,
    /// The frequency domains of each package.
    pkg_domains: Vec<Vec<u32>>,
}

impl TurboState {
    /// The accounting for `machine`: `None` without a turbo table or
    /// without a governor (turbo stays off, runs as before it).
    pub fn new(machine: &Machine) -> Option<TurboState> {
        let p = &machine.cpufreq;
        if p.turbo_khz.is_empty() || p.governor.is_none() {
            return None;
        }
        let np = machine.nr_packages as usize;
        let mut pkg_domains = vec![Vec::new(); np];
        for (fd, d) in machine.freq_domains.iter().enumerate() {
            if let Some(c) = d.span.first() {
                pkg_domains[machine.cpus[c.idx()].package as usize].push(fd as u32);
            }
        }
        Some(TurboState {
            cpu_active: vec![false; machine.nr_cpus()],
            core_active: vec![0; machine.nr_cores as usize],
            pkg_active: vec![0; np],
            cap_khz: vec![p.turbo_cap_khz(0); np],
            pkg_domains,
        })
    }

    /// The ceiling of frequency domain `fd`, kHz.
    #[inline]
    pub fn cap_of_domain(&self, machine: &Machine, fd: u32) -> u32 {
        let first = machine.freq_domains[fd as usize].span.first().unwrap_or(CpuId(0));
        self.cap_khz[machine.cpus[first.idx()].package as usize]
    }

    /// Active cores of package `pkg`.
    pub fn active_cores(&self, pkg: u32) -> u32 {
        self.pkg_active[pkg as usize]
    }
}

impl Sim {
    /// `cpu` became active (runs, or idles shallower than the machine's
    /// `turbo_inactive_state`) or inactive. When its package's ceiling
    /// moves, every domain of the package is granted its request under the
    /// new ceiling at once (the package's power control unit, not the
    /// driver, moves it).
    pub(crate) fn turbo_set_active(&mut self, cpu: CpuId, active: bool) {
        let Some(t) = self.cpufreq.turbo.as_mut() else { return };
        if t.cpu_active[cpu.idx()] == active {
            return;
        }
        t.cpu_active[cpu.idx()] = active;
        let info = &self.machine.cpus[cpu.idx()];
        let (core, pkg) = (info.core as usize, info.package as usize);
        let before = t.core_active[core];
        t.core_active[core] = if active { before + 1 } else { before - 1 };
        match (before, t.core_active[core]) {
            (0, _) => t.pkg_active[pkg] += 1,
            (_, 0) => t.pkg_active[pkg] -= 1,
            _ => return,
        }
        let cap = self.machine.cpufreq.turbo_cap_khz(t.pkg_active[pkg]);
        if cap == t.cap_khz[pkg] {
            return;
        }
        t.cap_khz[pkg] = cap;
        for i in 0..t.pkg_domains[pkg].len() {
            let Some(t) = self.cpufreq.turbo.as_ref() else { return };
            let fd = t.pkg_domains[pkg][i];
            let granted = self.cpufreq.policies[fd as usize].req_khz.min(cap);
            self.cpufreq_apply_freq(fd, granted);
        }
    }

    /// The idle state `cpu` entered (`None`: it runs): whether it keeps its
    /// core active for turbo.
    /// Always inlined: without turbo (most machines) it is one test at each
    /// idle entry and exit.
    #[inline(always)]
    pub(crate) fn turbo_note_state(&mut self, cpu: CpuId, state: Option<u8>) {
        if self.cpufreq.turbo.is_some() {
            let active = state.is_none_or(|s| s < self.machine.cpufreq.turbo_inactive_state);
            self.turbo_set_active(cpu, active);
        }
    }
}
