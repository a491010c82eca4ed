//! The balance statistics' group sums (`fair::sg_sums`) against the
//! per-CPU loop of `update_sg_lb_stats` they stand in for: on running
//! machines (SMT, NUMA, asymmetric capacities, capacity lost to RT tasks
//! and interrupts), every group the sums can answer for gets exactly the
//! loop's statistics, and the invariant checker finds every group's sums
//! equal to its CPUs' terms.

use super::balance::CpuIdleType;
use super::sg_sums::{CpuReading, SgSums};
use crate::engine::build::SimConfig;
use crate::engine::Sim;
use crate::ids::{CpuId, NSEC_PER_MSEC};
use crate::testkit::{machine_from_toml, preset_source};
use crate::topology::build_sched_domains;

/// A `Sim` of preset `machine` running `workloads` (spec strings, composed)
/// under `policy`.
fn sim_of(machine: &str, workloads: &[&str], policy: &str) -> Sim {
    let m = machine_from_toml(&preset_source(machine).text);
    let mut parts = Vec::new();
    for w in workloads {
        parts.extend(crate::workload::build_workloads(w, "spec", "test", &m).unwrap());
    }
    let composed = crate::workload::compose(parts).unwrap();
    let policy = crate::policy::parse_policy(policy).unwrap();
    let d = build_sched_domains(&m).unwrap();
    let cfg = SimConfig {
        features: policy.features,
        class: policy.class,
        seed: 5,
        trace: false,
        check_invariants: false,
        cpuset: policy.cpuset(&m),
    };
    Sim::build(m, d, &composed.workload, cfg).unwrap()
}

/// Every 2 ms for `until_ms`: bring the sums up to date and compare every
/// group of every domain of every CPU, for each kind of balance pass, and
/// each domain's span slot (`FairState::sd_span_slot`) with its groups.
/// Returns (groups answered from the sums, groups that needed the loop).
fn compare_along(s: &mut Sim, until_ms: u64) -> (u32, u32) {
    let (mut summed, mut scanned, mut spanned) = (0, 0, 0);
    for step in 1..=until_ms / 2 {
        s.run(step * 2 * NSEC_PER_MSEC).unwrap();
        s.sg_sums_sync();
        s.check().unwrap();
        for c in 0..s.rqs.len() {
            let cpu = CpuId(c as u32);
            for level in 0..s.domains.chain(cpu).len() {
                // The usual pass reads the domain's totals from its span's
                // slot, where it has one: the sums of its groups.
                let sd_id = s.domains.chain(cpu)[level];
                let span_slot = s.fair.sd_span_slot[sd_id.0 as usize];
                if span_slot != u32::MAX {
                    let env = s.lb_env(cpu, level, CpuIdleType::NewlyIdle);
                    let sd = s.domains.sd(sd_id);
                    let mut want = (0, 0, 0);
                    for g in s.sd_group_refs(sd_id, cpu) {
                        let mut overloaded = false;
                        let scan = s.sg_lb_stats_scan(&env, sd, g, g.span.test(cpu), true, &mut overloaded);
                        want = (want.0 + scan.group_load, want.1 + scan.group_capacity, want.2 + scan.group_util);
                    }
                    let span = s.fair.sg_sums.group(span_slot);
                    assert_eq!((span.load(), span.capacity(), span.util()), want, "cpu {c} level {level}: span sums");
                    let overloaded =
                        s.sd_group_refs(sd_id, cpu).any(|g| s.fair.sg_sums.group(g.slot).nr_overloaded() != 0);
                    assert_eq!(span.nr_overloaded() != 0, overloaded, "cpu {c} level {level}: span overloaded");
                    spanned += 1;
                }
                for idle in [CpuIdleType::NotIdle, CpuIdleType::Idle, CpuIdleType::NewlyIdle] {
                    let env = s.lb_env(cpu, level, idle);
                    let sd = s.domains.sd(env.sd);
                    for g in s.sd_group_refs(env.sd, cpu) {
                        let local = g.span.test(cpu);
                        let mut overloaded = false;
                        let scan = s.sg_lb_stats_scan(&env, sd, g, local, true, &mut overloaded);
                        match s.sg_lb_stats_summed_in::<false>(&env, sd, g, local, true) {
                            Some((sgs, over)) => {
                                assert_eq!(sgs, scan, "cpu {c} level {level} {idle:?} group {}", g.index);
                                assert_eq!(sd.parent.is_none() && over, overloaded);
                                summed += 1;
                            }
                            None => scanned += 1,
                        }
                    }
                }
            }
        }
    }
    // Every machine here has a level whose groups divide its span below
    // its top.
    assert!(spanned > 0, "no domain read its totals from its span's slot");
    (summed, scanned)
}

#[test]
fn summed_group_stats_equal_the_loop_on_smt_and_numa_machines() {
    let mut s = sim_of("xeon-2s-20c", &["hackbench:groups=2,loops=40"], "eevdf");
    let (summed, _) = compare_along(&mut s, 30);
    assert!(summed > 1000, "the sums answered only {summed} groups");
}

#[test]
fn summed_wakeup_stats_equal_the_loop_for_every_task_and_group() {
    // The fork/exec slow path's `update_sg_wakeup_stats` from the sums:
    // every group of every CPU's domains, for every task (running, queued,
    // sleeping: discounted where its averages are attached), wherever the
    // sums answer, gives the loop's statistics.
    let mut s = sim_of("xeon-2s-20c", &["hackbench:groups=2,loops=40"], "eevdf");
    let (mut summed, mut scanned) = (0, 0);
    for step in 1..=10 {
        s.run(step * 2 * NSEC_PER_MSEC).unwrap();
        s.sg_sums_sync();
        for c in 0..s.rqs.len() {
            let cpu = CpuId(c as u32);
            for &sd_id in s.domains.chain(cpu) {
                let sd = s.domains.sd(sd_id);
                for g in s.sd_group_refs(sd_id, cpu) {
                    for p in 0..s.tasks.len() {
                        let p = crate::ids::TaskId(p as u32);
                        match s.sg_wakeup_stats_summed(sd, g, p) {
                            Some(sgs) => {
                                assert_eq!(
                                    sgs,
                                    s.sg_wakeup_stats_scan(sd, g, p),
                                    "cpu {c} group {} task {p:?}",
                                    g.index
                                );
                                summed += 1;
                            }
                            None => scanned += 1,
                        }
                    }
                }
            }
        }
    }
    assert!(summed > 1000 && scanned > 0, "summed {summed}, scanned {scanned}");
}

#[test]
fn summed_group_stats_equal_the_loop_beside_rt_tasks_on_big_little() {
    // RT tasks on the big CPUs take capacity (capacity_of falls) and make
    // misfits: the sums must decline the groups whose largest misfit or
    // reduced-capacity load only the loop can find.
    let mut s = sim_of(
        "pixel2",
        &["hackbench:groups=1,fds=8,loops=60", "rt-periodic:count=4,cpus=4-7,period=20ms,runtime=8ms"],
        "v4.14",
    );
    let (summed, scanned) = compare_along(&mut s, 60);
    assert!(summed > 100, "the sums answered only {summed} groups");
    assert!(scanned > 0, "no group needed the loop: misfit and reduced capacity untested");
}

#[test]
fn summed_group_stats_equal_the_loop_under_an_interrupt_flood() {
    let mut s = sim_of("laptop-4c8t", &["hackbench:groups=1,loops=60", "irq:preset=pingflood,cpus=0-2"], "v4.14+cas");
    let (summed, _) = compare_along(&mut s, 30);
    assert!(summed > 100, "the sums answered only {summed} groups");
}

#[test]
fn sums_follow_random_terms_on_a_large_machine() {
    let m = machine_from_toml(&preset_source("intel-4n-192").text);
    let d = build_sched_domains(&m).unwrap();
    let (refs, sg_cpus) = super::lb_stats::group_refs(&d, &m);
    let pct: Vec<u32> = d.sds.iter().map(|sd| sd.imbalance_pct).collect();
    let mut sums = SgSums::new(&refs, &pct, &sg_cpus, &vec![1024; m.nr_cpus()]);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..2000 {
        let cpu = rnd(m.nr_cpus() as u64) as usize;
        let nr = rnd(4) as u32;
        let t = CpuReading {
            capacity: 600 + rnd(425),
            capacity_orig: 1024,
            load: rnd(3000),
            util: rnd(1025),
            runnable: rnd(3000),
            h_nr_running: nr.min(rnd(4) as u32),
            nr_running: nr,
            idle: nr == 0 && rnd(2) == 0,
            misfit: nr > 0 && rnd(5) == 0,
        };
        sums.set_terms(cpu, t.into());
        if round % 100 == 0 {
            sums.check_sums(&refs, &sg_cpus).unwrap();
        }
    }
    sums.check_sums(&refs, &sg_cpus).unwrap();
}

#[test]
fn a_cpu_in_no_group_alone_keeps_its_terms_in_a_slot_of_its_own() {
    // A CPU's terms live in the slot of the group of it alone (the lowest
    // level's); a CPU in none (here two CPUs only ever grouped together)
    // gets a slot no group reads. Its terms read back, and the group sums
    // follow them, lone-reduced count included.
    use super::lb_stats::GroupRef;
    let span = crate::cpumask::CpuMask::from_cpus([CpuId(0), CpuId(1)]);
    let g = GroupRef {
        index: 0,
        span,
        flags: 0,
        cores: 2,
        cpus_at: 0,
        nr_cpus: 2,
        slot: 0,
        first: CpuId(0),
        within_sd: true,
    };
    let refs = vec![vec![g]];
    let sg_cpus = [CpuId(0), CpuId(1)];
    let mut sums = SgSums::new(&refs, &[117], &sg_cpus, &[1024, 1024]);
    let reading = |capacity, nr| CpuReading {
        capacity,
        capacity_orig: 1024,
        load: 100 * nr as u64,
        util: 50,
        runnable: 70,
        h_nr_running: nr,
        nr_running: nr,
        idle: nr == 0,
        misfit: false,
    };
    for (cpu, capacity, nr) in [(0, 800, 1), (1, 1024, 1), (0, 1024, 2), (1, 700, 1), (1, 700, 0)] {
        let t = reading(capacity, nr).into();
        sums.set_terms(cpu, t);
        assert_eq!(sums.terms(cpu), t);
        sums.check_sums(&refs, &sg_cpus).unwrap();
    }
    // 800 x 117 < 1024 x 100: CPU 0 alone was lone-reduced at first.
    sums.set_terms(0, reading(800, 1).into());
    assert_eq!(sums.group(0).nr_lone_reduced, 1);
    assert_eq!(sums.group(0).nr_running(), 1);
    assert!(sums.any_lone_reduced());
    sums.set_terms(0, reading(1024, 1).into());
    assert!(!sums.any_lone_reduced());
    sums.check_sums(&refs, &sg_cpus).unwrap();
}

#[test]
fn groups_repeated_by_overlapping_numa_domains_share_one_sum() {
    // Kunpeng 920: four nodes at distances 12, 20, 22 and 24, so NUMA
    // levels whose domains (one per node pair or more) repeat each other's
    // node groups, which then share a slot; the sums still equal the loop's
    // on a running machine.
    let m = machine_from_toml(&preset_source("kunpeng920").text);
    let d = build_sched_domains(&m).unwrap();
    let (refs, _) = super::lb_stats::group_refs(&d, &m);
    let groups: usize = refs.iter().map(Vec::len).sum();
    let mut slots: Vec<u32> = refs.iter().flatten().map(|g| g.slot).collect();
    slots.sort_unstable();
    slots.dedup();
    assert!(slots.len() < groups, "{groups} groups in {} slots: none shared", slots.len());
    assert_eq!(*slots.last().unwrap() as usize, slots.len() - 1, "slots numbered densely");
    let mut s = sim_of("kunpeng920", &["hackbench:groups=4,loops=40"], "eevdf");
    let (summed, _) = compare_along(&mut s, 20);
    assert!(summed > 1000, "the sums answered only {summed} groups");
}

#[test]
fn local_group_table_equals_the_span_tests() {
    // lb_env and update_sd_lb_stats take the local group from a table built
    // with the groups; it must be what testing every span gives, for every
    // domain and CPU (kunpeng920's overlapping NUMA groups included).
    let mut overlapped = 0;
    for preset in ["kunpeng920", "intel-4n-192", "pixel2", "xeon-2s-20c"] {
        let s = sim_of(preset, &["hackbench:groups=1,loops=1"], "eevdf");
        for sd in 0..s.domains.sds.len() {
            let id = crate::topology::domains::SdId(sd as u32);
            for c in 0..s.rqs.len() {
                let cpu = CpuId(c as u32);
                let want = super::local_group::LocalGroup::scan(&s.fair.sg_refs[sd], cpu);
                assert_eq!(s.local_group(id, cpu), want, "{preset} sd {sd} cpu {c}");
                overlapped += (want.found && !want.only) as u32;
            }
        }
    }
    assert!(overlapped > 0, "no CPU in two groups of a domain: the overlapping case is untested");
}
