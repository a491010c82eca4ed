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
//! ]                      # exit_latency_us and target_residency_us required,
//!                        # target_residency_us >= exit_latency_us (a state
//!                        # cannot pay off before the CPU is back), power_mw
//!                        # default 0 (unknown); absent: one C1-like state
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
use crate::topology::machine::{IdleState, Machine};
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
            p.keys(st, &sp, &["name", "exit_latency_us", "target_residency_us", "power_mw"])?;
            let state = IdleState {
                name: p.req_str(st, &sp, "name")?.to_string(),
                exit_latency_ns: p.req_u64(st, &sp, "exit_latency_us", 0, 1_000_000)? * NSEC_PER_USEC,
                target_residency_ns: p.req_u64(st, &sp, "target_residency_us", 0, 10_000_000)? * NSEC_PER_USEC,
                power_mw: p.u64_or(st, &sp, "power_mw", 0, 1_000_000, 0)? as u32,
            };
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
            target_residency_ns: 2 * NSEC_PER_USEC,
            power_mw: 0,
        });
    }
    Ok(idle_states)
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
