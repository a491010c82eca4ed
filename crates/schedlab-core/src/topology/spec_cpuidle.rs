//! The idle model's keys: each core type's `idle_states` (the cpuidle
//! driver's state table) and the `[cpuidle]` table (governor, latency
//! limit), and the `--idle-governor` run override. A child of `spec.rs`,
//! whose value walker (`P`) it uses.
//!
//! ```toml
//! [[core_type]]
//! idle_states = [        # shallowest first, at most CPUIDLE_STATE_MAX (10)
//!   { name = "C1", exit_latency_us = 2, target_residency_us = 2, power_mw = 50 },
//!   { name = "C6", exit_latency_us = 133, target_residency_us = 600, power_mw = 5 },
//!   { name = "cluster-off", exit_latency_us = 1600, target_residency_us = 3500,
//!     level = "cluster", cpu_exit_latency_us = 600 },
//! ]                      # exit_latency_us and target_residency_us required,
//!                        # target_residency_us >= exit_latency_us (a state
//!                        # cannot pay off before the CPU is back), power_mw
//!                        # default 0 (unknown); absent: one C1-like state.
//!                        # level: cpu (default) | cluster: a cluster state
//!                        # takes effect only while every CPU of the cluster
//!                        # requests one (cpuidle/cluster.rs); cluster states
//!                        # come after the CPU states, state 0 is a CPU
//!                        # state, and a cluster with them has one core type;
//!                        # actual_exit_latency_us (CPU states): the delay a
//!                        # wakeup really takes when the driver's declared
//!                        # exit_latency_us is not it (a VM's halt; written
//!                        # by `schedlab calibrate`); the governors still
//!                        # read exit_latency_us. Default exit_latency_us
//! [cpuidle]
//! governor = "menu"      # menu | teo | avg_idle; default avg_idle (schedlab's
//!                        # rule, the tick always stopped); menu is the
//!                        # kernel's default on tick-based systems, not yet
//!                        # schedlab's (see cpuidle::IdleGovernor)
//! latency_req_us = 20    # PM QoS CPU latency limit (cpu_dma_latency);
//!                        # default none
//! ```

use super::{join, P};
use crate::cpuidle::{CpuidleParams, IdleGovernor, CPUIDLE_STATE_MAX};
use crate::error::{Result, SchedlabError};
use crate::ids::NSEC_PER_USEC;
use crate::topology::machine::{IdleLevel, IdleState, Machine};
use serde_json::{Map, Value};

/// A core type's `idle_states` (`path` is the core type's key).
pub(super) fn parse_idle_states(p: &P, t: &Map<String, Value>, path: &str) -> Result<Vec<IdleState>> {
    let mut idle_states = Vec::new();
    if let Some(a) = p.opt_array(t, path, "idle_states")? {
        if a.len() > CPUIDLE_STATE_MAX {
            return Err(p.err(
                &join(path, "idle_states"),
                format!("at most {CPUIDLE_STATE_MAX} states (CPUIDLE_STATE_MAX), got {}", a.len()),
            ));
        }
        for (i, s) in a.iter().enumerate() {
            let sp = format!("{path}.idle_states[{i}]");
            let st = p.table(s, &sp)?;
            p.keys(
                st,
                &sp,
                &[
                    "name",
                    "exit_latency_us",
                    "target_residency_us",
                    "power_mw",
                    "level",
                    "cpu_exit_latency_us",
                    "actual_exit_latency_us",
                ],
            )?;
            let exit_latency_ns = p.req_u64(st, &sp, "exit_latency_us", 0, 1_000_000)? * NSEC_PER_USEC;
            let actual = p.opt_u64(st, &sp, "actual_exit_latency_us", 0, 1_000_000)?;
            let state = IdleState {
                name: p.req_str(st, &sp, "name")?.to_string(),
                exit_latency_ns,
                actual_exit_latency_ns: actual.map_or(exit_latency_ns, |us| us * NSEC_PER_USEC),
                target_residency_ns: p.req_u64(st, &sp, "target_residency_us", 0, 10_000_000)? * NSEC_PER_USEC,
                power_mw: p.u64_or(st, &sp, "power_mw", 0, 1_000_000, 0)? as u32,
                level: parse_level(p, st, &sp)?,
                cpu_exit_latency_ns: p
                    .opt_u64(st, &sp, "cpu_exit_latency_us", 0, 1_000_000)?
                    .map(|us| us * NSEC_PER_USEC),
            };
            if let Some(x) = state.cpu_exit_latency_ns {
                if state.level != IdleLevel::Cluster || x > state.exit_latency_ns {
                    return Err(p.err(
                        &join(&sp, "cpu_exit_latency_us"),
                        "only on a cluster state (level = \"cluster\"), at most its exit_latency_us",
                    ));
                }
            }
            if actual.is_some() && state.level != IdleLevel::Cpu {
                return Err(p.err(
                    &join(&sp, "actual_exit_latency_us"),
                    "only on a CPU state (a cluster state's exits are its exit_latency_us and cpu_exit_latency_us)",
                ));
            }
            if i == 0 && state.level != IdleLevel::Cpu {
                return Err(p.err(
                    &join(&sp, "level"),
                    "\"cpu\" for the shallowest state (a CPU whose cluster stays up falls back to a CPU state)",
                ));
            }
            if idle_states.last().is_some_and(|l: &IdleState| l.level > state.level) {
                return Err(p.err(&join(&sp, "level"), "cluster states after (deeper than) every CPU state"));
            }
            if state.target_residency_ns < state.exit_latency_ns {
                return Err(p.err(
                    &join(&sp, "target_residency_us"),
                    format!(
                        "a target residency no shorter than the exit latency ({} us)",
                        state.exit_latency_ns / NSEC_PER_USEC
                    ),
                ));
            }
            if idle_states.last().is_some_and(|l: &IdleState| l.exit_latency_ns > state.exit_latency_ns) {
                return Err(p.err(&join(&sp, "exit_latency_us"), "idle states ordered shallowest first"));
            }
            idle_states.push(state);
        }
    }
    if idle_states.is_empty() {
        // One shallow state (a C1/WFI-like halt): exit 1 us, worth it after 2 us,
        // the order of intel_idle's C1 entries (exit 1-2 us, residency 1-2 us).
        idle_states.push(IdleState {
            name: "C1".into(),
            exit_latency_ns: NSEC_PER_USEC,
            actual_exit_latency_ns: NSEC_PER_USEC,
            target_residency_ns: 2 * NSEC_PER_USEC,
            power_mw: 0,
            level: IdleLevel::Cpu,
            cpu_exit_latency_ns: None,
        });
    }
    Ok(idle_states)
}

/// A state's `level` (default `cpu`).
fn parse_level(p: &P, st: &Map<String, Value>, sp: &str) -> Result<IdleLevel> {
    match p.opt_str(st, sp, "level")? {
        None | Some("cpu") => Ok(IdleLevel::Cpu),
        Some("cluster") => Ok(IdleLevel::Cluster),
        Some(other) => Err(p.err(&join(sp, "level"), format!("one of cpu, cluster; got \"{other}\""))),
    }
}

/// Cluster states need one state table per cluster: every CPU of a cluster
/// whose CPUs may request a cluster state is of one core type (the firmware
/// compares the requests of the cluster's CPUs state by state).
pub(super) fn check_cluster_states(p: &P, m: &Machine) -> Result<()> {
    for (i, ct) in m.core_types.iter().enumerate() {
        let Some(j) = ct.idle_states.iter().position(|s| s.level == IdleLevel::Cluster) else { continue };
        for c in m.cpus.iter().filter(|c| c.core_type as usize == i) {
            if let Some(o) =
                m.cluster_cpus[c.cluster as usize].iter().find(|&o| m.cpus[o.idx()].core_type as usize != i)
            {
                return Err(p.err(
                    &format!("core_type[{i}].idle_states[{j}].level"),
                    format!(
                        "every CPU of a cluster of one core type for a cluster state (cluster {} holds CPU {} and CPU {})",
                        c.cluster,
                        c.id.0,
                        o.0
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Parse an idle governor name: `Err` holds what was expected.
fn check_idle_governor(name: &str) -> std::result::Result<IdleGovernor, String> {
    IdleGovernor::parse(name).ok_or_else(|| format!("one of menu, teo, avg_idle; got \"{name}\""))
}

/// The `[cpuidle]` table (absent: the defaults of [`CpuidleParams`]).
pub(super) fn parse_cpuidle(p: &P, top: &Map<String, Value>) -> Result<CpuidleParams> {
    let Some(t) = p.opt_table(top, "", "cpuidle")? else { return Ok(CpuidleParams::default()) };
    p.keys(t, "cpuidle", &["governor", "latency_req_us"])?;
    let mut c = CpuidleParams::default();
    if let Some(g) = p.opt_str(t, "cpuidle", "governor")? {
        c.governor = check_idle_governor(g).map_err(|e| p.err("cpuidle.governor", e))?;
    }
    if let Some(us) = p.opt_u64(t, "cpuidle", "latency_req_us", 0, 100_000_000)? {
        c.latency_req_ns = us * NSEC_PER_USEC;
    }
    Ok(c)
}

/// The `--idle-governor` run override (errors name `origin`, e.g. the option).
pub fn set_idle_governor(m: &mut Machine, name: &str, origin: &str) -> Result<()> {
    m.cpuidle.governor = check_idle_governor(name).map_err(|e| SchedlabError::spec(origin, "idle_governor", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::cpuidle::IdleGovernor;
    use crate::error::SchedlabError;
    use crate::topology::parse_machine;

    const BASE: &str = crate::uniform_machine_toml!("m", 1, 1, 2, 1);

    fn with_states(states: &str) -> String {
        format!("{BASE}idle_states = [ {states} ]\n")
    }

    fn key_of(text: &str) -> (String, String, String) {
        match parse_machine(text, "toml", "m.toml").unwrap_err() {
            SchedlabError::Spec { file, key, expected } => (file, key, expected),
            e => panic!("not a spec error: {e}"),
        }
    }

    #[test]
    fn bad_idle_states_name_file_and_key() {
        let (file, key, _) = key_of(&with_states(r#"{ name = "C1", target_residency_us = 2 }"#));
        assert_eq!((file.as_str(), key.as_str()), ("m.toml", "core_type[0].idle_states[0].exit_latency_us"));
        let (_, key, expected) =
            key_of(&with_states(r#"{ name = "C1", exit_latency_us = 1, target_residency_us = 2, power_mw = -5 }"#));
        assert_eq!(key, "core_type[0].idle_states[0].power_mw");
        assert!(expected.contains("got -5"), "{expected}");
        let (_, key, expected) = key_of(&with_states(
            r#"{ name = "C1", exit_latency_us = 1, target_residency_us = 2 },
               { name = "C6", exit_latency_us = 200, target_residency_us = 100 }"#,
        ));
        assert_eq!(key, "core_type[0].idle_states[1].target_residency_us");
        assert!(expected.contains("exit latency (200 us)"), "{expected}");
        let eleven = [r#"{ name = "S", exit_latency_us = 1, target_residency_us = 1 }"#; 11].join(", ");
        let (_, key, _) = key_of(&with_states(&eleven));
        assert_eq!(key, "core_type[0].idle_states");
    }

    #[test]
    fn bad_cluster_states_name_file_and_key() {
        let wfi = r#"{ name = "WFI", exit_latency_us = 1, target_residency_us = 1 }"#;
        let cl = r#"{ name = "cl", exit_latency_us = 9, target_residency_us = 9, level = "cluster" }"#;
        let ok = parse_machine(&with_states(&format!("{wfi}, {cl}")), "toml", "m").unwrap();
        assert_eq!(ok.core_types[0].idle_states[1].level, crate::topology::IdleLevel::Cluster);
        let (_, key, _) = key_of(&with_states(cl));
        assert_eq!(key, "core_type[0].idle_states[0].level", "state 0 must be a CPU state");
        let (_, key, _) =
            key_of(&with_states(&format!("{wfi}, {cl}, {}", wfi.replace("WFI", "C2").replace("1,", "9,"))));
        assert_eq!(key, "core_type[0].idle_states[2].level", "CPU states before cluster states");
        let (_, key, expected) = key_of(&with_states(&format!(
            r#"{wfi}, {{ name = "cl", exit_latency_us = 9, target_residency_us = 9, level = "socket" }}"#
        )));
        assert_eq!(key, "core_type[0].idle_states[1].level");
        assert!(expected.contains("cpu, cluster"), "{expected}");
        let (_, key, _) = key_of(&with_states(&format!("{wfi}, {}", cl.replace(" }", ", cpu_exit_latency_us = 10 }"))));
        assert_eq!(key, "core_type[0].idle_states[1].cpu_exit_latency_us", "longer than the state's exit");
        // Two core types in one cluster cannot share a cluster state.
        let mixed = format!(
            "{}idle_states = [ {wfi}, {cl} ]\n[[core_type]]\nname = \"u\"\ncores = \"1\"\ncapacity = 512\nnominal_freq_mhz = 1000\n",
            BASE.replace("cores = \"all\"", "cores = \"0\"")
        );
        let (_, key, expected) = key_of(&mixed);
        assert_eq!(key, "core_type[0].idle_states[1].level");
        assert!(expected.contains("one core type"), "{expected}");
    }

    #[test]
    fn cpuidle_table_and_override() {
        let m = parse_machine(BASE, "toml", "m").unwrap();
        assert_eq!(m.cpuidle.governor, IdleGovernor::AvgIdle, "avg_idle by default until menu is validated");
        let mut m =
            parse_machine(&format!("[cpuidle]\ngovernor = \"teo\"\nlatency_req_us = 20\n{BASE}"), "toml", "m").unwrap();
        assert_eq!((m.cpuidle.governor, m.cpuidle.latency_req_ns), (IdleGovernor::Teo, 20_000));
        super::set_idle_governor(&mut m, "menu", "--idle-governor").unwrap();
        assert_eq!(m.cpuidle.governor, IdleGovernor::Menu);
        let (_, key, _) = key_of(&format!("[cpuidle]\ngovernor = \"ladder\"\n{BASE}"));
        assert_eq!(key, "cpuidle.governor");
        let e = super::set_idle_governor(&mut m, "haltpoll", "--idle-governor").unwrap_err();
        assert!(matches!(e, SchedlabError::Spec { ref file, .. } if file == "--idle-governor"));
    }
}
