//! The `[freq_domain]` keys of the frequency model (governor, driver
//! timings), and the `--governor` run override. A child of `spec.rs`, whose
//! value walker (`P`) it uses.

use super::{kind, P};
use crate::error::{Result, SchedlabError};
use crate::ids::NSEC_PER_USEC;
use crate::topology::machine::{CoreType, CpufreqParams, Governor, Machine};
use serde_json::{Map, Value};

/// Parse governor `name` for a machine of `core_types`: `Err` holds what was
/// expected. `powersave` and `schedutil` need OPP tables to choose from.
fn check_governor(name: &str, core_types: &[CoreType]) -> std::result::Result<Governor, String> {
    let g = Governor::parse(name).ok_or_else(|| format!("one of performance, powersave, schedutil; got \"{name}\""))?;
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
/// `fast_switch` (default: true when the latency is 0) and `sugov_work_us`
/// (`cpufreq::sugov::DEFAULT_SUGOV_WORK_NS`).
pub(super) fn parse_cpufreq(p: &P, ft: &Map<String, Value>, core_types: &[CoreType]) -> Result<CpufreqParams> {
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
    Ok(CpufreqParams {
        governor,
        transition_latency_ns: latency_us * NSEC_PER_USEC,
        rate_limit_ns: rate_limit_us * NSEC_PER_USEC,
        fast_switch,
        sugov_work_ns: work_us * NSEC_PER_USEC,
    })
}
