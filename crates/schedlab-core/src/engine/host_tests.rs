//! The `overcommit` host: vCPUs time-shared by fewer host CPUs.

use crate::cpumask::CpuMask;
use crate::engine::host::VcpuState;
use crate::engine::task::TaskState;
use crate::engine::Sim;
use crate::features::Features;
use crate::ids::{CpuId, TaskId, NSEC_PER_MSEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::workload::overcommit::HostSpec;
use crate::workload::{Action, Dist};

const MS: u64 = NSEC_PER_MSEC;

fn host(host_cpus: u32, slice_ms: u64, wake_preempt: bool) -> HostSpec {
    HostSpec {
        host_cpus,
        slice: Dist::Fixed(slice_ms * MS),
        other_share: Vec::new(),
        other_run: Dist::Fixed(MS),
        wake_preempt_pct: if wake_preempt { 100 } else { 0 },
    }
}

/// `n` tasks, task i pinned to CPU i, each running `actions`, on the
/// 8-CPU test machine with `host` (or none).
fn pinned(n: usize, actions: &[Action], host: Option<HostSpec>) -> Sim {
    let mut ts = script_tasks(n, actions, 1);
    for (i, t) in ts.iter_mut().enumerate() {
        t.allowed = Some(CpuMask::from_cpus([CpuId(i as u32)]));
    }
    let mut w = script_workload(ts);
    w.host = host;
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    sim
}

/// When every task of `sim` has exited.
fn finish(sim: &mut Sim) -> u64 {
    sim.run(u64::MAX).unwrap();
    assert!(sim.tasks.iter().all(|t| t.state == TaskState::Dead));
    sim.now
}

#[test]
fn four_busy_vcpus_on_two_host_cpus_take_twice_as_long() {
    // 100 ms of work on each of 4 vCPUs, 2 host CPUs: 400 ms of vCPU time
    // over 2 host CPUs ends near 200 ms; with no host, near 100 ms.
    let work = [Action::Compute(100 * MS)];
    let alone = finish(&mut pinned(4, &work, None));
    assert!(alone < 102 * MS, "ended at {alone}");
    let mut sim = pinned(4, &work, Some(host(2, 4, true)));
    let shared = finish(&mut sim);
    assert!((199 * MS..206 * MS).contains(&shared), "ended at {shared}");
    // Each vCPU waited about half of the time, and the waits were charged
    // to the tasks (their CPU time is the wall time, not the work).
    let stalled = sim.host.as_ref().unwrap().stalled_ns;
    assert!((390 * MS..410 * MS).contains(&stalled), "stalled {stalled}");
}

#[test]
fn as_many_host_cpus_as_busy_vcpus_stall_nothing() {
    let work = [Action::Compute(100 * MS)];
    let mut sim = pinned(2, &work, Some(host(2, 4, true)));
    let end = finish(&mut sim);
    assert!(end < 102 * MS, "ended at {end}");
    assert_eq!(sim.host.as_ref().unwrap().stalled_ns, 0);
}

#[test]
fn at_most_host_cpus_vcpus_run_at_once_and_they_take_turns() {
    // Three busy vCPUs on two host CPUs with 4 ms slices: at any instant
    // one waits, and over 60 ms each waits about a third of the time.
    let mut sim = pinned(3, &[Action::Compute(1_000 * MS)], Some(host(2, 4, true)));
    let mut waited = [0u32; 3];
    for step in 1..=60 {
        sim.run(step * MS).unwrap();
        let h = sim.host.as_ref().unwrap();
        let states = &h.state[..3];
        assert_eq!(states.iter().filter(|s| **s == VcpuState::Running).count(), 2, "at {step} ms: {states:?}");
        for (w, s) in waited.iter_mut().zip(states) {
            *w += u32::from(*s == VcpuState::Waiting);
        }
    }
    assert!(waited.iter().all(|&w| (16..=24).contains(&w)), "waited {waited:?} of 60 ms");
}

/// A sleeper pinned to CPU 2 (awake at `wake_ms`) while CPUs 0 and 1 run
/// long tasks on a host of 2 CPUs with 10 ms slices: when the sleeper first
/// runs after its timer.
fn sleeper_first_run_after_wake(wake_preempt_pct: u32, wake_ms: u64, seed: u64) -> u64 {
    let mut ts = script_tasks(2, &[Action::Compute(1_000 * MS)], 1);
    ts.extend(script_tasks(1, &[Action::Sleep(wake_ms * MS), Action::Compute(MS)], 1));
    for (i, t) in ts.iter_mut().enumerate() {
        t.allowed = Some(CpuMask::from_cpus([CpuId(i as u32)]));
    }
    let mut w = script_workload(ts);
    let mut h = host(2, 10, false);
    h.wake_preempt_pct = wake_preempt_pct;
    w.host = Some(h);
    let mut cfg = sim_config(Features::mainline());
    cfg.seed = seed;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.check_invariants = true;
    let p = TaskId(2);
    sim.run(wake_ms * MS - 1).unwrap();
    while sim.rqs[2].curr != Some(p) || sim.stalled(CpuId(2)).is_some() {
        sim.run(sim.now + 100_000).unwrap();
    }
    sim.now - wake_ms * MS
}

#[test]
fn a_woken_vcpu_preempts_or_waits_its_turn() {
    // The sleeper's vCPU starts halted at 0 and takes a host CPU from one
    // of the two long tasks' vCPUs at its first run; it halts at its sleep.
    // At 25 ms both host CPUs run the long tasks again (10 ms slices). With
    // wake_preempt=100 its timer's wakeup runs at once; with 0 it waits for
    // the next slice's end, at 30 ms.
    let preempt = sleeper_first_run_after_wake(100, 25, 1);
    assert!(preempt < MS / 2, "ran {preempt} ns after its timer");
    let queued = sleeper_first_run_after_wake(0, 25, 1);
    assert!(queued > 4 * MS, "ran {queued} ns after its timer");
}

#[test]
fn a_woken_vcpu_preempts_in_the_given_share_of_wakeups() {
    // wake_preempt=50 over 40 seeds: about half of the wakeups run at once,
    // the others after the slice's end (binomial: 20 +- 3.2).
    let at_once = (1..=40).filter(|&seed| sleeper_first_run_after_wake(50, 25, seed) < MS / 2).count();
    assert!((10..=30).contains(&at_once), "{at_once} of 40 ran at once");
}

#[test]
fn a_waiting_vcpu_takes_its_held_events_when_it_runs() {
    // CPUs 0-2 busy on one host CPU with 10 ms slices. A task on CPU 2
    // sleeps 1 ms after 1 ms of work: its timer comes while CPU 2 waits,
    // so it wakes only when the vCPU runs again; the invariant checker
    // runs after every event.
    let mut ts = script_tasks(2, &[Action::Compute(1_000 * MS)], 1);
    ts.extend(script_tasks(1, &[Action::Compute(MS), Action::Sleep(MS), Action::Compute(1_000 * MS)], 1));
    ts.extend(script_tasks(1, &[Action::Compute(1_000 * MS)], 1));
    for (i, t) in ts.iter_mut().enumerate() {
        t.allowed = Some(CpuMask::from_cpus([CpuId(if i == 3 { 2 } else { i as u32 })]));
    }
    let mut w = script_workload(ts);
    w.host = Some(host(1, 10, false));
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    sim.run(200 * MS).unwrap();
    let h = sim.host.as_ref().unwrap();
    assert!(h.stalled_ns > 300 * MS, "stalled {}", h.stalled_ns);
    assert_eq!(h.state.iter().filter(|s| **s == VcpuState::Running).count(), 1);
}

#[test]
fn the_hosts_other_threads_take_their_share() {
    // One busy vCPU on one host CPU whose own threads ask for half of it in
    // runs of 5 ms (a Poisson stream, 100 a second): a run that comes while
    // another holds the CPU is lost, so they hold it 0.5 / 1.5 of the time
    // and 1 s of work takes about 1.5 s.
    let mut h = host(1, 4, true);
    h.other_share = vec![0.5];
    h.other_run = Dist::Fixed(5 * MS);
    let end = finish(&mut pinned(1, &[Action::Compute(1_000 * MS)], Some(h)));
    assert!((1_400 * MS..1_600 * MS).contains(&end), "ended at {end}");
}

#[test]
fn a_host_and_stall_sources_are_not_composed() {
    let m = crate::workload::testdrv::test_machine(8);
    let parts: Vec<_> = ["hackbench", "overcommit", "stall"]
        .iter()
        .map(|s| crate::workload::build_workload(s, "spec", "cli", &m).unwrap())
        .collect();
    let e = crate::workload::compose::compose(parts).unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
}

#[test]
fn the_hosts_threads_ask_for_the_share_of_the_busy_count() {
    // Half a host CPU per busy vCPU, runs of 5 ms. One busy vCPU on one
    // host CPU: 1 s of work takes about 1.5 s (above). Four busy vCPUs on
    // four host CPUs: 2 host CPUs asked for, lost only when all four are
    // taken (Erlang's loss formula: 9.5%), so each vCPU keeps about 55% of
    // its CPU and ends near 1.8 s; with the one-busy share for every count,
    // near 1.1 s.
    let with = |n: usize, share: Vec<f64>| {
        let mut h = host(n as u32, 4, true);
        h.other_share = share;
        h.other_run = Dist::Fixed(5 * MS);
        finish(&mut pinned(n, &[Action::Compute(1_000 * MS)], Some(h)))
    };
    let one = with(1, vec![0.5, 1.0, 1.5, 2.0]);
    assert!((1_400 * MS..1_600 * MS).contains(&one), "ended at {one}");
    let four = with(4, vec![0.5, 1.0, 1.5, 2.0]);
    assert!((1_700 * MS..1_950 * MS).contains(&four), "four busy ended at {four}");
    let flat = with(4, vec![0.5]);
    assert!(flat < 1_250 * MS, "four busy with a flat share ended at {flat}");
}

#[test]
fn a_vcpus_waits_show_in_its_trace_as_the_host_interrupt() {
    // Three busy vCPUs on two host CPUs: each wait is an `irq_handler_entry`
    // named `host` and its exit on that CPU, as long as the host's count of
    // waiting; not interrupt time.
    let mut sim = pinned(3, &[Action::Compute(50 * MS)], Some(host(2, 4, true)));
    sim.trace = Some(Vec::new());
    let end = finish(&mut sim);
    let events = sim.trace.take().unwrap();
    let mut waited = 0;
    let mut since = [None; 8];
    for e in &events {
        if let crate::trace::Event::Irq { cpu, irq: crate::trace::event::HOST_IRQ, entry } = e.ev {
            if entry {
                assert!(since[cpu.idx()].replace(e.time).is_none(), "nested wait on {cpu}");
            } else {
                waited += e.time - since[cpu.idx()].take().expect("an exit after its entry");
            }
        }
    }
    assert!(waited > 0 && waited == sim.host.as_ref().unwrap().stalled_ns, "{waited} of {end}");
    let names: Vec<String> = sim.tasks.iter().map(|t| t.name.clone()).collect();
    let text = crate::trace::write_ftrace(names, 8, &events);
    assert!(text.contains(&format!("irq_handler_entry: irq={} name=host", crate::trace::event::HOST_IRQ)));
    let metrics = sim.collector.finish(end);
    let irq_pct = metrics.iter().find(|m| m.name == "irq_pct").map(|m| m.value);
    assert_eq!(irq_pct, Some(0.0));
}

#[test]
fn a_vcpu_has_a_pending_host_slice_exactly_while_it_runs() {
    // vCPUs that halt and wake, wait and run, with the host's threads
    // besides: each vCPU's host slice is keyed in the queue, armed when it
    // gets a host CPU and moved or cancelled in place, never left stale.
    let mut ts = script_tasks(3, &[Action::Compute(3 * MS), Action::Sleep(2 * MS)], 20);
    for (i, t) in ts.iter_mut().enumerate() {
        t.allowed = Some(CpuMask::from_cpus([CpuId(i as u32)]));
    }
    let mut w = script_workload(ts);
    let mut h = host(2, 4, false);
    h.wake_preempt_pct = 50;
    h.other_share = vec![0.3];
    h.other_run = Dist::Exp { mean: MS };
    w.host = Some(h);
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.check_invariants = true;
    let mut checked = 0;
    while sim.tasks.iter().any(|t| t.state != TaskState::Dead) {
        sim.run(sim.now + 100_000).unwrap();
        for c in 0..8 {
            let cpu = CpuId(c);
            let running = sim.host.as_ref().unwrap().state[c as usize] == VcpuState::Running;
            assert_eq!(sim.host_slice_pending(cpu), running, "vCPU {c} at {}", sim.now);
            checked += 1;
        }
    }
    assert!(checked > 1000 && sim.host.as_ref().unwrap().stalled_ns > 0);
}

#[test]
fn a_host_stall_during_a_newly_idle_pass_is_in_the_domains_measured_cost() {
    // The kernel times each newly-idle domain pass with sched_clock, which
    // runs while the host holds the vCPU (engine/timed_work.rs). Twelve
    // tasks that compute and sleep in turns on 8 vCPUs sharing 2 host CPUs
    // with 200 us slices: some pass is held, and its domain's cost goes past
    // what the pass itself costs (2,000 ns + 100 ns per CPU of the span).
    let mut ts = script_tasks(12, &[Action::Compute(150_000), Action::Sleep(100_000)], 200);
    for t in &mut ts {
        t.allowed = None;
    }
    let mut w = script_workload(ts);
    w.host = Some(HostSpec { slice: Dist::Fixed(200_000), ..host(2, 1, true) });
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.run(200 * MS).unwrap();
    let modelled_max = 2_000 + 100 * 8;
    let inflated = (0..8)
        .flat_map(|c| sim.rqs[c].sd.iter().map(|d| d.max_newidle_lb_cost).collect::<Vec<_>>())
        .filter(|&c| c > modelled_max)
        .count();
    assert!(inflated > 0, "no domain's measured cost held a stall");
    // Without a host nothing takes the CPUs' time: every cost is modelled.
    let mut w = script_workload(script_tasks(12, &[Action::Compute(150_000), Action::Sleep(100_000)], 200));
    w.host = None;
    let mut sim = sim_with(TWO_LLC, &w, sim_config(Features::mainline()));
    sim.run(200 * MS).unwrap();
    assert!((0..8).all(|c| sim.rqs[c].sd.iter().all(|d| d.max_newidle_lb_cost <= modelled_max)));
}
