//! hackbench end to end with the kernel's channel rules against a plain queue
//! of the same size (`buf=N`, what schedlab modelled before): which writers a
//! read wakes changes the run. One group of 40 tasks, 200 loops, on the
//! 4-core/8-thread laptop, seed 0 (figures as measured when written).

use schedlab_core::api::run;
use schedlab_core::testkit::{metric, preset_source, run_spec};

fn context_switches(workload: &str, policy: &str) -> f64 {
    let mut s = run_spec(preset_source("laptop-4c8t"), workload, policy, 0, false);
    s.options.check_invariants = false;
    metric(&run(&s).unwrap(), "context_switches")
}

#[test]
fn socket_writers_woken_together_at_a_quarter_change_the_run() {
    // unix_write_space: 24,328 context switches; one writer per read of a
    // 278-message queue: 21,863. (19,262 and 22,027 before a wakeup
    // preemption waited for the waker's charged work, the preemption
    // point: which way the rule moves the count depends on who pays the
    // writers' wakeups, so the test holds only that it moves it.)
    let kernel = context_switches("hackbench:groups=1,loops=200", "eevdf");
    let queue = context_switches("hackbench:groups=1,loops=200,buf=278", "eevdf");
    assert_ne!(kernel, queue, "socket rule {kernel}, queue {queue}");
}

#[test]
fn pipe_writer_wakeups_change_the_run_and_follow_the_profile() {
    // A full pipe frees a slot every 40 reads: blocked senders wait longer
    // and the receivers run dry more often than with a 640-message queue
    // (25,121 against 15,014 switches); v6.12's was_full rule (a writer
    // woken on every read of a full pipe) gives 19,653.
    let release = context_switches("hackbench:groups=1,loops=200,ipc=pipe", "eevdf");
    let queue = context_switches("hackbench:groups=1,loops=200,ipc=pipe,buf=640", "eevdf");
    let was_full = context_switches("hackbench:groups=1,loops=200,ipc=pipe", "eevdf-pipe_release_wakes_writer");
    assert!(release > queue, "pipe rule {release}, queue {queue}");
    assert_ne!(release, was_full);
}
