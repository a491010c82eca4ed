//! The reading side of the collector: the metrics' values at the end of a
//! run (`Collector::finish`), from what `collector.rs` accumulated.

use super::*;

impl Collector {
    pub(super) fn pct(&self, part: u128) -> f64 {
        if self.occ.total_ns() == 0 {
            0.0
        } else {
            part as f64 * 100.0 / self.occ.total_ns() as f64
        }
    }

    /// Close the run at `end_ns` and return every metric: the registry's in
    /// its order, then the per-domain energy ones, each further part's, and
    /// the wakeup latency quantiles.
    pub fn finish(&mut self, end_ns: Ns) -> Vec<MetricValue> {
        self.advance_to(end_ns.max(self.last_t));
        self.occ.resolve_unknown_as_idle();
        let mut out: Vec<MetricValue> = METRICS
            .iter()
            // rt_pct needs each task's policy: absent for a real trace.
            .filter(|d| d.name != "rt_pct" || self.ctx.policy.is_some())
            // Energy needs a frequency model and power figures.
            .filter(|d| self.energy.is_some() || !crate::metrics::energy::ENERGY_METRICS.contains(&d.name))
            .map(|d| MetricValue {
                name: d.name.to_string(),
                unit: d.unit.to_string(),
                value: self.value(d.name, end_ns).unwrap_or(f64::NAN),
                better: d.better,
            })
            .collect();
        if let Some(e) = self.energy.as_mut() {
            e.finish(end_ns.max(self.last_t), self.window_start);
            let window = end_ns.max(self.last_t).saturating_sub(self.window_start.min(end_ns.max(self.last_t)));
            for m in out.iter_mut().filter(|m| crate::metrics::energy::ENERGY_METRICS.contains(&m.name.as_str())) {
                m.value = e.value(&m.name, window);
            }
            out.extend(e.domain_metrics());
        }
        if let Some(r) = self.idle_res.as_mut() {
            let end = end_ns.max(self.last_t);
            out.extend(r.metrics(end, self.window_start, end.saturating_sub(self.window_start.min(end))));
        }
        for (k, part) in self.ctx.parts.iter().enumerate().skip(1) {
            for name in PART_METRICS {
                let Some(d) = crate::metrics::registry::metric_def(name) else { continue };
                out.push(MetricValue {
                    name: format!("{}{name}", part.prefix),
                    unit: d.unit.to_string(),
                    value: self.part_value(name, end_ns, k).unwrap_or(f64::NAN),
                    better: d.better,
                });
            }
        }
        out.extend(crate::metrics::registry::wakeup_latency_dist(&self.wakeup_lat));
        out
    }

    /// Value of one of [`PART_METRICS`] for measured part `k` (`None` for another name).
    fn part_value(&self, name: &str, end_ns: Ns, k: usize) -> Option<f64> {
        const US: f64 = 1000.0;
        let part = self.parts.get(k)?;
        let known = if self.ctx.has_selection() {
            self.ctx.selection.iter().filter(|&&s| s).count() as u64
        } else if self.ctx.task_part.is_empty() {
            self.tasks.len().max(self.ctx.allowed.len()) as u64
        } else {
            self.ctx.task_part.iter().filter(|&&p| p as usize == k).count() as u64
        };
        let end = if known > 0 && part.nr_exited == known { part.last_exit } else { end_ns };
        // Completion time counts from the part's start (`start=`); in a real
        // trace, whose clock started at boot, from its first event, or with a
        // task selection from the first event of a selected task (the
        // recorder's own start-up before it is not the program's time).
        let origin = if self.ctx.cpus_start_idle || !self.started {
            self.ctx.part_start_ns(k)
        } else if let Some(first) = self.first_selected {
            first.max(self.window_start)
        } else {
            self.window_start
        };
        let completion = end.saturating_sub(origin);
        let window_ns = end_ns.max(self.last_t).saturating_sub(if self.started { self.window_start } else { 0 });
        // Metrics of marks the workload never makes do not apply: absent
        // (NaN, null in JSON), not 0.
        let absent = match name {
            "requests_per_s" | "request_latency_p50_us" | "request_latency_p99_us" => !part.has_requests,
            "app_wakeup_latency_p50_us" | "app_wakeup_latency_p99_us" => !part.has_app_wakeups,
            _ => false,
        };
        if absent {
            return Some(f64::NAN);
        }
        let v = match name {
            "completion_time_s" => completion as f64 / NSEC_PER_SEC as f64,
            "requests_per_s" => {
                if window_ns == 0 {
                    0.0
                } else {
                    part.requests as f64 * NSEC_PER_SEC as f64 / window_ns as f64
                }
            }
            "request_latency_p50_us" => part.request_lat.percentile(50.0) / US,
            "request_latency_p99_us" => part.request_lat.percentile(99.0) / US,
            // Recorded in whole microseconds already.
            "app_wakeup_latency_p50_us" => part.app_wakeup_lat.percentile(50.0),
            "app_wakeup_latency_p99_us" => part.app_wakeup_lat.percentile(99.0),
            _ => return None,
        };
        Some(v)
    }

    /// Value of one registry metric now (`None` for a name not in it).
    fn value(&self, name: &str, end_ns: Ns) -> Option<f64> {
        const US: f64 = 1000.0;
        if let Some(v) = self.part_value(name, end_ns, 0) {
            return Some(v);
        }
        let v = match name {
            "wakeup_latency_p50_us" => self.wakeup_lat.percentile(50.0) / US,
            "wakeup_latency_p99_us" => self.wakeup_lat.percentile(99.0) / US,
            "rt_pct" => self.pct(self.rt_ns),
            "runqueue_delay_mean_us" => self.rq_delay.mean() / US,
            "runqueue_delay_p99_us" => self.rq_delay.percentile(99.0) / US,
            "context_switches" => self.context_switches as f64,
            "migrations" => self.migrations.iter().sum::<u64>() as f64,
            "wakeups" => self.wakeups as f64,
            "migrations_per_wakeup" => {
                if self.wakeups == 0 {
                    return None;
                }
                self.migrations.iter().sum::<u64>() as f64 / self.wakeups as f64
            }
            "wake_prev_cpu_pct"
            | "wake_smt_sibling_pct"
            | "wake_same_llc_pct"
            | "wake_other_llc_pct"
            | "wake_other_node_pct" => {
                let total: u64 = self.wake_dist.iter().sum();
                if total == 0 {
                    return None;
                }
                let i = [
                    "wake_prev_cpu_pct",
                    "wake_smt_sibling_pct",
                    "wake_same_llc_pct",
                    "wake_other_llc_pct",
                    "wake_other_node_pct",
                ]
                .iter()
                .position(|n| *n == name)?;
                100.0 * self.wake_dist[i] as f64 / total as f64
            }
            "wake_on_waker_cpu_pct" => {
                if self.wake_known_waker == 0 {
                    return None;
                }
                100.0 * self.wake_on_waker as f64 / self.wake_known_waker as f64
            }
            "scanned_per_wakeup_mean" => {
                if self.placements == 0 {
                    0.0
                } else {
                    self.scanned_sum as f64 / self.placements as f64
                }
            }
            "newidle_balance_calls" => self.newidle_calls as f64,
            "newidle_balance_pulls" => self.pulls[BalanceKind::NewIdle as usize] as f64,
            "periodic_balance_pulls" => self.pulls[BalanceKind::Periodic as usize] as f64,
            "nohz_balance_pulls" => self.pulls[BalanceKind::NohzIdle as usize] as f64,
            "active_balance_pulls" => self.pulls[BalanceKind::Active as usize] as f64,
            "avg_idle_error_us" => {
                if self.avg_idle_samples == 0 {
                    0.0
                } else {
                    self.avg_idle_err_sum as f64 / self.avg_idle_samples as f64 / US
                }
            }
            "idle_pct" => self.pct(self.occ.idle_ns),
            "irq_pct" => self.pct(self.irq_ns),
            "placed_capacity_min" => {
                if self.placed_cap.2 == 0 {
                    return None;
                }
                self.placed_cap.0 as f64
            }
            "placed_capacity_mean" => {
                if self.placed_cap.2 == 0 {
                    return None;
                }
                self.placed_cap.1 as f64 / self.placed_cap.2 as f64
            }
            "wasted_idle_pct" => self.pct(self.occ.wasted_ns),
            "cpu_util_pct" => {
                if self.occ.total_ns() == 0 {
                    0.0
                } else {
                    100.0 - self.pct(self.occ.idle_ns)
                }
            }
            _ => {
                if let Some(d) = name.strip_prefix("migrations_") {
                    let i = Distance::MIGRATION.iter().position(|x| x.name() == d)?;
                    self.migrations[i] as f64
                } else if let Some(p) = name.strip_prefix("place_") {
                    let p = crate::trace::PlacePath::ALL.iter().position(|x| x.name() == p)?;
                    self.place[p] as f64
                } else {
                    return None;
                }
            }
        };
        Some(v)
    }
}
