//! The `[freq_domain]` keys of the frequency model (governor, driver
//! timings), and the `--governor` run override. A child of `spec.rs`, whose
//! value walker (`P`) it uses.

use super::{kind, P};
use crate::error::{Result, SchedlabError};
use crate::ids::NSEC_PER_USEC;
use crate::topology::machine::{CoreType, CpufreqParams, Governor, Machine};
use serde_json::{Map, Value};

/// Parse governor `name` for a machine of `core_types`: `Err` holds what was
/// expected. Every governor but `performance` needs OPP tables to choose from.
fn check_governor(name: &str, core_types: &[CoreType]) -> std::result::Result<Governor, String> {
    let g = Governor::parse(name)
        .ok_or_else(|| format!("one of performance, powersave, schedutil, ondemand, intel_pstate; got \"{name}\""))?;
    if g != Governor::Performance && core_types.iter().all(|t| t.opps.len() < 2) {
        return Err(format!(
            "performance, or OPP tables (core_type.opps with two or more entries) for {name} to choose from"
        ));
    }
    Ok(g)
}

/// The `--governor` run override: put every policy of `m` under `name`
/// (errors name `origin`, e.g. the option).
pub fn set_governor(m: &mut Machine, name: &str, origin: &str) -> Result<()> {
    let g = check_governor(name, &m.core_types).map_err(|e| SchedlabError::spec(origin, "governor", e))?;
    m.cpufreq.governor = Some(g);
    Ok(())
}

/// The `[freq_domain]` keys of the frequency model: `governor` (absent: no
/// cpufreq model, every CPU at its nominal frequency), `transition_latency_us`
/// (default 0: the driver reports none, as `CPUFREQ_ETERNAL`-free drivers
/// with instant switches do) and `rate_limit_us` (default
/// `cpufreq_policy_transition_delay_us()` of drivers/cpufreq/cpufreq.c,
/// since the 2024 removal of LATENCY_MULTIPLIER: the latency plus 50%, or
/// 1000 us when the latency is 0),
/// `fast_switch` (default: true when the latency is 0), `sugov_work_us`
/// (`cpufreq::sugov::DEFAULT_SUGOV_WORK_NS`), `dbs_work_us`
/// (`cpufreq::ondemand::DEFAULT_DBS_WORK_NS`), and turbo: `turbo_mhz`, the
/// highest frequency of a package's cores by its number of active cores
/// (one entry per core of a package, non-increasing, each above the
/// highest OPP; absent: no turbo) and `turbo_inactive_state`, the name of
/// the shallowest idle state whose CPUs do not keep their core active
/// (default: the deepest state of the core type).
pub(super) fn parse_cpufreq(
    p: &P,
    ft: &Map<String, Value>,
    core_types: &[CoreType],
    cores_per_package: u32,
) -> Result<CpufreqParams> {
    let governor = match p.opt_str(ft, "freq_domain", "governor")? {
        None => None,
        Some(g) => Some(check_governor(g, core_types).map_err(|e| p.err("freq_domain.governor", e))?),
    };
    let latency_us = p.u64_or(ft, "freq_domain", "transition_latency_us", 0, 1_000_000, 0)?;
    let default_rate = if latency_us > 0 { latency_us + (latency_us >> 1) } else { 1000 };
    let rate_limit_us = p.u64_or(ft, "freq_domain", "rate_limit_us", 0, 10_000_000, default_rate)?;
    // A driver that reports no latency is taken to switch from the
    // scheduler's context; one with a latency (cpufreq-dt, whose OPP tables
    // give clock-latency-ns) has no fast_switch callback and uses sugov:N.
    let fast_switch = match ft.get("fast_switch") {
        None => latency_us == 0,
        Some(Value::Bool(b)) => *b,
        Some(v) => return Err(p.err("freq_domain.fast_switch", format!("true or false, got {}", kind(v)))),
    };
    let work_default = crate::cpufreq::sugov::DEFAULT_SUGOV_WORK_NS / NSEC_PER_USEC;
    let work_us = p.u64_or(ft, "freq_domain", "sugov_work_us", 0, 1_000_000, work_default)?;
    let dbs_default = crate::cpufreq::ondemand::DEFAULT_DBS_WORK_NS / NSEC_PER_USEC;
    let dbs_us = p.u64_or(ft, "freq_domain", "dbs_work_us", 0, 1_000_000, dbs_default)?;
    let (turbo_khz, turbo_inactive_state) = parse_turbo(p, ft, core_types, cores_per_package)?;
    Ok(CpufreqParams {
        governor,
        transition_latency_ns: latency_us * NSEC_PER_USEC,
        rate_limit_ns: rate_limit_us * NSEC_PER_USEC,
        fast_switch,
        sugov_work_ns: work_us * NSEC_PER_USEC,
        turbo_khz,
        turbo_inactive_state,
        pstate_scaling_khz: crate::cpufreq::intel_pstate::DEFAULT_PSTATE_SCALING_KHZ,
        dbs_work_ns: dbs_us * NSEC_PER_USEC,
    })
}

/// `turbo_mhz` and `turbo_inactive_state` (see [`parse_cpufreq`]): the
/// ceiling per active-core count in kHz, and the state index.
fn parse_turbo(
    p: &P,
    ft: &Map<String, Value>,
    core_types: &[CoreType],
    cores_per_package: u32,
) -> Result<(Vec<u32>, u8)> {
    let Some(arr) = p.opt_array(ft, "freq_domain", "turbo_mhz")? else {
        if ft.contains_key("turbo_inactive_state") {
            return Err(p.err("freq_domain.turbo_inactive_state", "no value without freq_domain.turbo_mhz"));
        }
        return Ok((Vec::new(), u8::MAX));
    };
    let n = cores_per_package as usize;
    if arr.len() != n {
        return Err(p.err(
            "freq_domain.turbo_mhz",
            format!("one entry per core of a package ({n}: the ceiling with 1..={n} active cores), got {}", arr.len()),
        ));
    }
    let top_mhz =
        core_types.iter().map(|t| t.opps.last().map_or(t.nominal_freq_khz, |o| o.freq_khz) / 1000).max().unwrap_or(0)
            as u64;
    let mut khz = Vec::with_capacity(n);
    for (i, v) in arr.iter().enumerate() {
        let key = format!("freq_domain.turbo_mhz[{i}]");
        let mhz = v.as_u64().filter(|&m| (top_mhz..=100_000).contains(&m)).ok_or_else(|| {
            p.err(&key, format!("an integer MHz in {top_mhz}..=100000 (turbo is above the highest OPP), got {v}"))
        })?;
        if let Some(&prev) = khz.last() {
            if mhz * 1000 > prev as u64 {
                return Err(p.err(
                    &key,
                    format!(
                        "a non-increasing table (more active cores, no higher ceiling); {mhz} after {}",
                        prev / 1000
                    ),
                ));
            }
        }
        khz.push((mhz * 1000) as u32);
    }
    let states = core_types.first().map(|t| t.idle_states.as_slice()).unwrap_or(&[]);
    let idx = match p.opt_str(ft, "freq_domain", "turbo_inactive_state")? {
        None => states.len().saturating_sub(1),
        Some(name) => states.iter().position(|s| s.name == name).ok_or_else(|| {
            let names: Vec<&str> = states.iter().map(|s| s.name.as_str()).collect();
            p.err(
                "freq_domain.turbo_inactive_state",
                format!("the name of an idle state ({}), got \"{name}\"", names.join(", ")),
            )
        })?,
    };
    if states.is_empty() {
        return Err(p.err(
            "freq_domain.turbo_mhz",
            "idle states (core_type.idle_states) to tell active cores from inactive ones",
        ));
    }
    for (i, t) in core_types.iter().enumerate() {
        if t.idle_states.get(idx).map(|s| s.name.as_str()) != Some(states[idx].name.as_str()) {
            return Err(p.err(
                &format!("core_type[{i}].idle_states"),
                format!("state {idx} named \"{}\" as in core_type[0] (turbo_inactive_state)", states[idx].name),
            ));
        }
    }
    Ok((khz, idx as u8))
}
