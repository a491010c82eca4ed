//! Lag of the EEVDF runqueue (`eevdf.rs`): how much service an entity is
//! owed when it leaves (`entity_lag`, `update_entity_lag`), the clamp that
//! bounds it (`cfs_rq_max_slice`), and what a delayed entity keeps of it
//! when it is woken before it was picked (`requeue_delayed_entity`).
//! kernel/sched/fair.c, 2026 (with the pre-2026 rules behind the
//! `lag_clamp_max_slice` and `delayed_lag_floor` profile flags).

use super::eevdf::{CfsRq, EnqueueFlags};
use super::entities::Entities;
use super::weight::calc_delta_fair;
use crate::features::Features;
use crate::ids::TaskId;
use crate::sched_feat;

impl CfsRq {
    /// `entity_lag`: `V - v`, clamped to the lag a steady-state system can
    /// have (EEVDF: `-r_max < lag < max(r_max, q)`): the runqueue's longest
    /// slice plus a tick (2026, 6e3c0a4e1ad1 "sched/fair: Fix lag clamp",
    /// `lag_clamp_max_slice`), or before it twice the entity's own slice, at
    /// least a tick.
    fn entity_lag(&self, ses: &Entities, id: TaskId, avruntime: u64) -> i64 {
        let se = &ses[id.idx()];
        let vlag = avruntime.wrapping_sub(se.vruntime) as i64;
        let span = if sched_feat!(self.features, lag_clamp_max_slice) {
            self.cfs_rq_max_slice(ses) + self.params.tick_ns
        } else {
            (2 * se.slice).max(self.params.tick_ns)
        };
        let limit = calc_delta_fair(span, se) as i64;
        vlag.clamp(-limit, limit)
    }

    /// `update_entity_lag`: save the entity's lag. With `delayed_lag_floor`
    /// (2026) a delayed entity's lag may not fall below what was saved when
    /// it was delayed, nor (DELAY_ZERO) rise above 0. Returns whether the
    /// saved lag differs from `V - v` (clamped), so that a requeued entity
    /// must be placed again.
    pub fn update_entity_lag(&self, ses: &mut Entities, id: TaskId) -> bool {
        let avruntime = self.avg_vruntime(ses);
        let mut vlag = self.entity_lag(ses, id, avruntime);
        let se = &mut ses[id.idx()];
        if sched_feat!(self.features, delayed_lag_floor) && se.sched_delayed {
            // The lag saved at delay was negative, or it would not be delayed.
            vlag = vlag.max(se.vlag);
            if sched_feat!(self.features, DELAY_ZERO) {
                vlag = vlag.min(0);
            }
        }
        se.vlag = vlag;
        avruntime.wrapping_sub(vlag as u64) != se.vruntime
    }

    /// `cfs_rq_max_slice`: the longest slice among queued entities and curr.
    pub fn cfs_rq_max_slice(&self, ses: &Entities) -> u64 {
        let curr = self.curr_on_rq(ses).map_or(0, |c| c.slice);
        self.queue.iter().map(|t| ses[t.idx()].slice).fold(curr, u64::max)
    }

    /// `requeue_delayed_entity`: a delayed entity is woken before it was
    /// picked; it stays queued. With DELAY_ZERO positive lag is dropped.
    pub fn requeue_delayed_entity(&mut self, ses: &mut Entities, id: TaskId, f: &Features) {
        debug_assert!(ses[id.idx()].sched_delayed && ses[id.idx()].on_rq);
        self.features = *f;
        if sched_feat!(f, delayed_lag_floor) {
            // 2026: placed again whenever the kept lag is not where the
            // entity stands (clamped, floored at the lag it was delayed
            // with, or cut to 0 by DELAY_ZERO).
            if self.update_entity_lag(ses, id) {
                let is_curr = self.curr == Some(id);
                self.nr_queued -= 1;
                if !is_curr {
                    self.dequeue_tree(ses, id);
                }
                self.place_entity(ses, id, EnqueueFlags::default(), f);
                if !is_curr {
                    self.enqueue_tree(ses, id);
                }
                self.nr_queued += 1;
            }
        } else if sched_feat!(f, DELAY_ZERO) {
            self.update_entity_lag(ses, id);
            if ses[id.idx()].vlag > 0 {
                let is_curr = self.curr == Some(id);
                self.nr_queued -= 1;
                if !is_curr {
                    self.dequeue_tree(ses, id);
                }
                ses[id.idx()].vlag = 0;
                self.place_entity(ses, id, EnqueueFlags::default(), f);
                if !is_curr {
                    self.enqueue_tree(ses, id);
                }
                self.nr_queued += 1;
            }
        }
        ses[id.idx()].sched_delayed = false; // clear_delayed
        self.h_nr_runnable += 1;
    }
}
