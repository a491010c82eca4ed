//! Tests of the text trace reader (`ftrace_read.rs`).

use super::*;
use crate::trace::ftrace::{write_ftrace, PID_BASE};

fn ev(time: Ns, ev: Event) -> TimedEvent {
    TimedEvent { time, ev }
}

/// A run in the engine's order: waking, place, migrate, wakeup.
fn sim_events() -> Vec<TimedEvent> {
    let (a, b, c) = (TaskId(0), TaskId(1), TaskId(2));
    let sw = |cpu, prev, prev_state, next| Event::Switch { cpu: CpuId(cpu), prev, prev_state, next };
    let mig = |task, o, d, reason| Event::Migrate { task, orig: CpuId(o), dest: CpuId(d), reason };
    use PrevState::*;
    vec![
        ev(0, mig(a, 0, 1, MigrateReason::Fork)),
        ev(0, Event::Wakeup { task: a, cpu: CpuId(1), new: true }),
        ev(1_000, sw(1, None, Runnable, Some(a))),
        ev(2_000, Event::Wakeup { task: b, cpu: CpuId(1), new: true }),
        ev(3_000, sw(1, Some(a), Runnable, Some(b))),
        ev(4_000, mig(a, 1, 0, MigrateReason::Balance)),
        ev(4_000, Event::Balance { cpu: CpuId(0), depth: 1, kind: BalanceKind::NewIdle, pulled: 1 }),
        ev(4_000, Event::AvgIdle { cpu: CpuId(1), avg_idle_ns: 123_456, max_ns: 1_000_000 }),
        ev(5_000, sw(0, None, Runnable, Some(a))),
        ev(6_000, Event::Mark { task: a, kind: MarkKind::RequestDone, value: 17 }),
        ev(7_000, sw(1, Some(b), Sleeping, None)),
        ev(7_000, Event::CpuIdle { cpu: CpuId(1), state: Some(2) }),
        ev(8_000, Event::Waking { task: b, cpu: CpuId(0) }),
        ev(
            8_000,
            Event::Place {
                task: b,
                prev: CpuId(1),
                waker_cpu: CpuId(0),
                cpu: CpuId(2),
                path: PlacePath::IdleCpu,
                scanned: 3,
                capacity: 1024,
            },
        ),
        ev(9_000, mig(b, 1, 2, MigrateReason::Wakeup)),
        ev(9_000, Event::Wakeup { task: b, cpu: CpuId(2), new: false }),
        ev(10_000, sw(2, None, Runnable, Some(b))),
        ev(11_000, Event::Wakeup { task: c, cpu: CpuId(2), new: true }),
        ev(12_000, sw(2, Some(b), Dead, Some(c))),
        ev(12_000, Event::Exit { task: b }),
    ]
}

#[test]
fn round_trip_through_the_writer() {
    let names = vec!["alpha".to_string(), "beta worker".to_string(), "gamma".to_string()];
    let evs = sim_events();
    let text = write_ftrace(names.clone(), 3, &evs);
    let got = read_ftrace(&text, "rt.trace").unwrap();
    assert_eq!((got.bad_lines, got.other_lines, got.nr_cpus), (0, 0, 3));
    // The writer heads every line it reads back with the CPU's current
    // task, consistently with its switches: nothing to recover.
    assert_eq!(got.inferred_switches, 0);
    // Map read TaskIds back through their pids.
    let back = |t: TaskId| TaskId(got.pids[t.idx()] - PID_BASE);
    for (i, n) in got.names.iter().enumerate() {
        assert_eq!(n, &names[back(TaskId(i as u32)).idx()]);
    }
    let mapped: Vec<TimedEvent> = got
        .events
        .iter()
        .map(|e| {
            let ev = match e.ev {
                Event::Switch { cpu, prev, prev_state, next } => {
                    Event::Switch { cpu, prev: prev.map(back), prev_state, next: next.map(back) }
                }
                Event::Waking { task, cpu } => Event::Waking { task: back(task), cpu },
                Event::Wakeup { task, cpu, new } => Event::Wakeup { task: back(task), cpu, new },
                Event::Migrate { task, orig, dest, reason } => Event::Migrate { task: back(task), orig, dest, reason },
                Event::Place { task, prev, waker_cpu, cpu, path, scanned, capacity } => {
                    Event::Place { task: back(task), prev, waker_cpu, cpu, path, scanned, capacity }
                }
                Event::Mark { task, kind, value } => Event::Mark { task: back(task), kind, value },
                Event::Exit { task } => Event::Exit { task: back(task) },
                other => other,
            };
            TimedEvent { time: e.time, ev }
        })
        .collect();
    assert_eq!(mapped, evs);
}

#[test]
fn trace_cmd_report_with_plugin_and_kernel_forms() {
    let text = "\
version = 6
cpus=2
     kworker/0:1-50    [000]   100.000100: sched_waking:         comm=app pid=2001 prio=120 target_cpu=000
     kworker/0:1-50    [000]   100.000105: sched_wakeup:         app:2001 [120] CPU:000
     kworker/0:1-50    [000]   100.000200: sched_switch:         kworker/0:1:50 [120] S ==> app:2001 [120]
             app-2001  [000]   100.000900: sched_switch:         app:2001 [120] R+ ==> my worker:2002 [120]
       my worker-2002  [000] d..2. 100.001000: sched_migrate_task: comm=app pid=2001 prio=120 orig_cpu=0 dest_cpu=1
          <idle>-0     [001]   100.001100: sched_switch:         prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=2001 next_prio=120
             app-2001  [001]   100.002000: sched_process_exit:   comm=app pid=2001 prio=120
          <idle>-0     [001]   100.002000: irq_handler_entry:    irq=24 name=eth0
          <idle>-0     [001]   100.002010: hrtimer_expire_entry: hrtimer=000000001 function=tick_sched_timer now=100002010
";
    let t = read_ftrace(text, "report.txt").unwrap();
    assert_eq!(t.names, vec!["app", "kworker/0:1", "my worker"]);
    assert_eq!(t.pids, vec![2001, 50, 2002]);
    assert_eq!((t.nr_cpus, t.bad_lines, t.other_lines), (2, 0, 1));
    let (app, kw, worker) = (TaskId(0), TaskId(1), TaskId(2));
    let s = 100_000_000_000u64;
    assert_eq!(t.events[0], ev(s + 100_000, Event::Waking { task: app, cpu: CpuId(0) }));
    assert_eq!(t.events[1].ev, Event::Wakeup { task: app, cpu: CpuId(0), new: false });
    assert_eq!(
        t.events[2].ev,
        Event::Switch { cpu: CpuId(0), prev: Some(kw), prev_state: PrevState::Sleeping, next: Some(app) }
    );
    assert_eq!(
        t.events[3].ev,
        Event::Switch { cpu: CpuId(0), prev: Some(app), prev_state: PrevState::Runnable, next: Some(worker) }
    );
    // A preempted (queued) task moved: load balancing.
    assert_eq!(
        t.events[4].ev,
        Event::Migrate { task: app, orig: CpuId(0), dest: CpuId(1), reason: MigrateReason::Balance }
    );
    assert_eq!(
        t.events[5].ev,
        Event::Switch { cpu: CpuId(1), prev: None, prev_state: PrevState::Runnable, next: Some(app) }
    );
    assert_eq!(t.events[6], ev(s + 2_000_000, Event::Exit { task: app }));
    // The trace has no switch away from the exited task, but the next
    // line of CPU 1 runs in the idle task: that switch is recovered.
    assert_eq!(t.inferred_switches, 1);
    assert_eq!(
        t.events[7],
        ev(
            s + 2_000_000,
            Event::Switch { cpu: CpuId(1), prev: Some(app), prev_state: PrevState::Sleeping, next: None }
        )
    );
    // Interrupt handlers are read (IRQ time); other events are counted and skipped.
    assert_eq!(t.events[8], ev(s + 2_000_000, Event::Irq { cpu: CpuId(1), irq: 24, entry: true }));
}

/// A ping-pong pair as this project's development VM records it: CPU 1's
/// idle task writes no line in process context, so its switches away
/// from idle are missing (CPU 0's are there).
const LOST_IDLE_EXITS: &str = "\
# tracer: nop
#P:2
     schedlab-100   [001] d..2. 10.000000: sched_switch: prev_comm=schedlab prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
        wl-a-201    [000] d..3. 10.100000: sched_waking: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-a-201    [000] d..2. 10.100010: sched_switch: prev_comm=wl-a prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0  [001] dNh2. 10.100030: sched_wakeup: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-b-202    [001] d..3. 10.100040: sched_waking: comm=wl-a pid=201 prio=120 target_cpu=000
        wl-b-202    [001] d..2. 10.100050: sched_switch: prev_comm=wl-b prev_pid=202 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0  [000] dNh2. 10.100070: sched_wakeup: comm=wl-a pid=201 prio=120 target_cpu=000
          <idle>-0  [000] d..2. 10.100080: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wl-a next_pid=201 next_prio=120
        wl-a-201    [000] d..3. 10.100090: sched_waking: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-a-201    [000] d..2. 10.100100: sched_switch: prev_comm=wl-a prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0  [001] dNh2. 10.100120: sched_wakeup: comm=wl-b pid=202 prio=120 target_cpu=001
        wl-b-202    [001] d..3. 10.100130: sched_waking: comm=wl-a pid=201 prio=120 target_cpu=000
          <idle>-0  [000] dNh2. 10.100150: sched_wakeup: comm=wl-a pid=201 prio=120 target_cpu=000
          <idle>-0  [000] d..2. 10.100160: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=wl-a next_pid=201 next_prio=120
        wl-b-202    [001] ..... 10.200000: sched_process_exit: comm=wl-b pid=202 prio=120
        wl-b-202    [001] d..2. 10.200010: sched_switch: prev_comm=wl-b prev_pid=202 prev_prio=120 prev_state=X ==> next_comm=schedlab next_pid=100 next_prio=120
        wl-a-201    [000] ..... 10.300000: sched_process_exit: comm=wl-a pid=201 prio=120
        wl-a-201    [000] d..2. 10.300010: sched_switch: prev_comm=wl-a prev_pid=201 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120
     schedlab-100   [001] d..2. 10.900000: sched_switch: prev_comm=schedlab prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

#[test]
fn switches_away_from_idle_that_the_trace_lost_are_recovered() {
    let t = read_ftrace(LOST_IDLE_EXITS, "vm.trace").unwrap();
    // CPU 1 left idle for wl-b twice without a line: recovered at the
    // first line wl-b heads there (its sched_waking).
    assert_eq!(t.inferred_switches, 2);
    let b = TaskId(t.pids.iter().position(|&p| p == 202).unwrap() as u32);
    let recovered: Vec<Ns> = t
        .events
        .iter()
        .filter(|e| matches!(e.ev, Event::Switch { cpu: CpuId(1), prev: None, next: Some(n), .. } if n == b))
        .map(|e| e.time)
        .collect();
    assert_eq!(recovered, vec![10_100_040_000, 10_100_130_000]);
}

#[test]
fn a_selected_program_is_measured_from_its_first_event_to_its_last_exit() {
    let t = read_ftrace(LOST_IDLE_EXITS, "vm.trace").unwrap();
    let metrics = |selection: Vec<bool>| {
        let mut ctx = crate::metrics::MetricsContext::flat(2);
        ctx.selection = selection;
        let m = crate::metrics::collect(ctx, &t.events, None);
        let get = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
        (get("completion_time_s"), get("context_switches"))
    };
    let wl: Vec<bool> = t.names.iter().map(|n| n.starts_with("wl-")).collect();
    let (completion, switches) = metrics(wl);
    // From wl-a's first line (10.1 s) to the last wl exit (10.3 s), not
    // the recorder's lines around them; every switch of the pair counted,
    // the two recovered ones too (5 on CPU 0, 4 on CPU 1).
    assert!((completion - 0.2).abs() < 1e-9, "{completion}");
    assert_eq!(switches, 9.0);
    // Without a selection: the whole trace.
    let (whole, _) = metrics(Vec::new());
    assert!((whole - 0.9).abs() < 1e-9, "{whole}");
}

#[test]
fn perf_script_sample_feeds_the_collector() {
    let text = "\
         swapper     0 [001]  5000.000010: sched:sched_waking: comm=db pid=300 prio=120 target_cpu=001
         swapper     0 [001]  5000.000012: sched:sched_migrate_task: comm=db pid=300 prio=120 orig_cpu=1 dest_cpu=3
         swapper     0 [003]  5000.000015: sched:sched_wakeup: comm=db pid=300 prio=120 target_cpu=003
         swapper     0 [003]  5000.000020: sched:sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=db next_pid=300 next_prio=120
              db   300 [003]  5000.000500: sched:sched_switch: prev_comm=db prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120
";
    let t = read_ftrace(text, "perf.txt").unwrap();
    assert_eq!((t.nr_cpus, t.names.len(), t.events.len()), (4, 1, 5));
    assert_eq!(
        t.events[1].ev,
        Event::Migrate { task: TaskId(0), orig: CpuId(1), dest: CpuId(3), reason: MigrateReason::Wakeup }
    );
    let mut col = crate::metrics::Collector::new(crate::metrics::MetricsContext::flat(t.nr_cpus));
    for e in &t.events {
        col.on_event(e);
    }
    let m = col.finish(t.events.last().unwrap().time);
    let get = |n: &str| m.iter().find(|v| v.name == n).unwrap().value;
    assert_eq!(get("wakeup_latency_p50_us"), 10.0);
    assert_eq!(get("runqueue_delay_p99_us"), 5.0);
    assert_eq!(get("migrations"), 1.0);
}

#[test]
fn bad_lines_counted_and_reported() {
    let err = read_ftrace("hello\nworld\n", "junk.txt").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("junk.txt") && msg.contains("line 1"), "{msg}");
    assert!(read_ftrace("", "empty.txt").is_err());
    let text = "# tracer: nop\n#P:8 ignored\ngarbage\n bash-7 (    7) [002] d..2. 1.5: sched_process_exit: comm=bash pid=7 prio=120\n";
    let t = read_ftrace(text, "mixed.txt").unwrap();
    assert_eq!((t.bad_lines, t.first_bad_line), (1, Some(3)));
    assert_eq!(t.events, vec![ev(1_500_000_000, Event::Exit { task: TaskId(0) })]);
    assert_eq!(t.nr_cpus, 8);
}

#[test]
fn impossible_cpu_is_an_error_naming_the_line() {
    let ok = " bash-7 [001] 1.000000: sched_process_exit: comm=bash pid=7 prio=120\n";
    let bad = format!("{ok} bash-7 [4000000000] 1.000001: sched_process_exit: comm=bash pid=7 prio=120\n");
    let msg = read_ftrace(&bad, "big.txt").unwrap_err().to_string();
    assert!(msg.starts_with("big.txt: line 2: ") && msg.contains("4000000000"), "{msg}");
    // More digits than u64 holds: still a CPU column, still an error.
    let huge = " bash-7 [99999999999999999999999] 1.0: sched_process_exit: comm=bash pid=7 prio=120\n";
    assert!(read_ftrace(huge, "h.txt").unwrap_err().to_string().contains("line 1"));
    // CPU numbers inside the payload are bounded too.
    let mig = format!("{ok} bash-7 [001] 1.1: sched_migrate_task: comm=bash pid=7 prio=120 orig_cpu=1 dest_cpu=9000\n");
    let msg = read_ftrace(&mig, "m.txt").unwrap_err().to_string();
    assert!(msg.contains("m.txt: line 2") && msg.contains("9000"), "{msg}");
    let msg = read_ftrace(&format!("#P:3000000000\n{ok}"), "p.txt").unwrap_err().to_string();
    assert!(msg.contains("p.txt: line 1") && msg.contains("CPU count"), "{msg}");
    assert!(read_ftrace(&format!("cpus=99999999999999999999999\n{ok}"), "c.txt").is_err());
    // The bound itself is the largest accepted count; the last CPU is MAX_CPUS - 1.
    let edge = format!("#P:{MAX_CPUS}\n bash-7 [{}] 1.0: sched_process_exit: comm=bash pid=7 prio=120\n", MAX_CPUS - 1);
    assert_eq!(read_ftrace(&edge, "e.txt").unwrap().nr_cpus, MAX_CPUS as usize);
}

#[test]
fn reversed_timestamps_are_counted_and_sorted() {
    let text = "\
 a-7 [000] 2.0: sched_process_exit: comm=a pid=7 prio=120
 b-8 [001] 1.0: sched_process_exit: comm=b pid=8 prio=120
 c-9 [001] 3.0: sched_process_exit: comm=c pid=9 prio=120
 d-10 [001] 2.5: sched_process_exit: comm=d pid=10 prio=120
";
    let t = read_ftrace(text, "r.txt").unwrap();
    assert_eq!((t.reversed_lines, t.first_reversed_line), (2, Some(2)));
    assert!(t.events.windows(2).all(|w| w[0].time <= w[1].time));
}
