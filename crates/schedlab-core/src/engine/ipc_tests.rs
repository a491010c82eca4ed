//! Channel rules on hand-built channels: when a writer blocks and whom a read
//! wakes, for pipes (fs/pipe.c, both `pipe_read` rules), unix stream sockets
//! (net/unix/af_unix.c) and plain queues; then the engine acting on them.

use super::ipc::{Chan, WriterWake, PAGE_SIZE};
use crate::features::{Feat, Features};
use crate::ids::{TaskId, NSEC_PER_MSEC};
use crate::testkit::{script_tasks, script_workload, sim_config, sim_with, TWO_LLC};
use crate::trace::Event;
use crate::workload::{Action, ChanId, ChanKind, ChanSpec};

/// 100-byte messages in a 16-page pipe: 40 merge into each page.
fn pipe100() -> Chan {
    Chan::new(ChanSpec::pipe(16, 100).kind)
}

/// Fill `c` until a write would block; the number written.
fn fill(c: &mut Chan) -> u64 {
    let mut n = 0;
    while !c.write_blocks() {
        c.push(n);
        n += 1;
    }
    n
}

#[test]
fn pipe_small_writes_merge_into_the_last_page() {
    let mut c = pipe100();
    c.push(0);
    assert_eq!(c.slots.len(), 1);
    // 4096 / 100 = 40 writes share the first page; the 41st takes a new slot.
    for m in 1..40 {
        c.push(m);
    }
    assert_eq!(c.slots.len(), 1);
    assert_eq!(c.slots[0], (40, 40));
    c.push(40);
    assert_eq!(c.slots.len(), 2);
    assert_eq!(c.slots[1], (1, 1));
    assert_eq!(PAGE_SIZE / 100, 40);
}

#[test]
fn pipe_write_into_an_empty_pipe_takes_a_new_page() {
    // `was_empty`: no merge although the drained page had room.
    let mut c = pipe100();
    c.push(0);
    c.pop(true).unwrap();
    assert!(c.slots.is_empty(), "the drained page was released");
    c.push(1);
    assert_eq!(c.slots[0], (1, 1));
}

#[test]
fn pipe_is_full_by_slots_and_merges_while_the_last_page_has_room() {
    let mut c = pipe100();
    assert_eq!(fill(&mut c), 16 * 40);
    assert!(c.pipe_full());
    // A read from the first page leaves every slot taken: still full.
    c.pop(true).unwrap();
    assert!(c.pipe_full() && c.write_blocks());
    // Slots full but the last page with room: writes merge, they do not block.
    let mut c = pipe100();
    for m in 0..(15 * 40 + 1) {
        c.push(m);
    }
    assert!(c.pipe_full());
    assert!(!c.write_blocks());
}

#[test]
fn pipe_release_rule_wakes_a_writer_only_when_a_page_of_a_full_pipe_is_freed() {
    let mut c = pipe100();
    fill(&mut c);
    // 39 reads leave the first page with one message: no wakeup.
    for _ in 0..39 {
        assert_eq!(c.pop(true).unwrap().1, WriterWake::None);
        assert!(c.write_blocks());
    }
    // The 40th frees it: one writer, WF_SYNC, and there is room.
    assert_eq!(c.pop(true).unwrap().1, WriterWake::One { sync: true });
    assert!(!c.write_blocks());
    // Freeing the next page of a no longer full pipe wakes nobody.
    for _ in 0..40 {
        assert_eq!(c.pop(true).unwrap().1, WriterWake::None);
    }
}

#[test]
fn pipe_was_full_rule_wakes_a_writer_on_every_read_begun_on_a_full_pipe() {
    // v5.5 .. v6.13: each of the first page's 40 reads began on a full pipe
    // and wakes a writer, though only the 40th frees a slot: the 39 woken
    // before it find no room (write_blocks) and wait again.
    let mut c = pipe100();
    fill(&mut c);
    for i in 0..40 {
        assert_eq!(c.pop(false).unwrap().1, WriterWake::One { sync: true }, "read {i}");
        assert_eq!(c.write_blocks(), i < 39, "read {i}");
    }
    // Then the pipe is no longer full: no wakeups.
    assert_eq!(c.pop(false).unwrap().1, WriterWake::None);
}

#[test]
fn pipe_writer_that_waited_wakes_the_next_writer_while_room_remains() {
    let mut c = pipe100();
    fill(&mut c);
    for _ in 0..40 {
        c.pop(true);
    }
    // One slot free: the woken writer's message takes it, and the pipe is
    // full by slots again (though its last page has room): no next writer.
    c.push(1000);
    assert!(c.pipe_full() && !c.write_blocks());
    assert!(!c.wakes_next_writer());
    // Two pages freed (the second release, of a pipe no longer full, woke
    // nobody): after the woken writer's write a slot is still free, so it
    // wakes the next writer.
    let mut c = pipe100();
    fill(&mut c);
    let wakes: Vec<_> = (0..80).map(|_| c.pop(true).unwrap().1).collect();
    assert_eq!(wakes.iter().filter(|w| **w != WriterWake::None).count(), 1);
    c.push(1000);
    assert!(!c.pipe_full());
    assert!(c.wakes_next_writer());
    // Queues and sockets have no such wakeup.
    assert!(!Chan::new(ChanKind::Queue { capacity: 4 }).wakes_next_writer());
    assert!(!Chan::new(ChanSpec::unix_stream(4096, 1024).kind).wakes_next_writer());
}

#[test]
fn socket_writer_blocks_at_sndbuf_and_all_wake_with_sync_at_a_quarter() {
    // sndbuf 10 skbs of 1000 B: writes go while wmem_alloc < sndbuf.
    let mut c = Chan::new(ChanSpec::unix_stream(10_000, 1000).kind);
    assert_eq!(fill(&mut c), 10);
    assert_eq!(c.sk_wmem_alloc(), 10_000);
    // The write crossing the limit still goes: 9.5 skbs of room.
    let mut d = Chan::new(ChanSpec::unix_stream(9_500, 1000).kind);
    assert_eq!(fill(&mut d), 10);
    // Reads down to 3 skbs (3000 * 4 > 10000) wake nobody, and a writer
    // woken would find room but is not woken.
    for left in (3..10).rev() {
        assert_eq!(c.pop(true).unwrap().1, WriterWake::None, "{left} left");
    }
    assert!(!c.write_blocks());
    // 2 skbs: (2000 << 2) <= 10000, unix_writable: every writer, WF_SYNC.
    assert_eq!(c.pop(true).unwrap().1, WriterWake::All);
    assert!(c.unix_writable());
    // And every read below the quarter again.
    assert_eq!(c.pop(true).unwrap().1, WriterWake::All);
}

#[test]
fn queue_wakes_one_writer_per_read_without_sync() {
    let mut c = Chan::new(ChanKind::Queue { capacity: 3 });
    assert_eq!(fill(&mut c), 3);
    assert_eq!(c.pop(true).unwrap().1, WriterWake::One { sync: false });
    assert_eq!(c.pop(false).unwrap().1, WriterWake::One { sync: false });
    assert!(c.pop(true).is_some() && c.pop(true).is_none());
}

/// Three writers (tasks 0-2) of `n` messages each into channel 0, and a
/// reader (task 3) that starts at 5 ms, when the writers have filled the
/// channel and blocked, and reads 3n messages, each after 20 us of work; on
/// an 8-CPU machine. The times at which each writer was woken.
fn writer_wakeups(kind: ChanSpec, n: u64, features: Features) -> Vec<(u64, TaskId)> {
    let mut tasks = script_tasks(3, &[Action::Send { chan: ChanId(0), msg: 7, sync: true }, Action::Compute(1_000)], n);
    let mut reader = script_tasks(1, &[Action::Recv { chan: ChanId(0) }, Action::Compute(20_000)], 3 * n);
    reader[0].start_ns = 5 * NSEC_PER_MSEC;
    tasks.append(&mut reader);
    let mut w = script_workload(tasks);
    w.chans.push(kind);
    let mut cfg = sim_config(features);
    cfg.trace = true;
    let mut sim = sim_with(TWO_LLC, &w, cfg);
    sim.run(u64::MAX).unwrap();
    assert_eq!(sim.alive, 0, "every task finished");
    let trace = sim.trace.take().unwrap();
    trace
        .iter()
        .filter_map(|te| match te.ev {
            Event::Waking { task, .. } if task.0 < 3 && te.time >= 5 * NSEC_PER_MSEC => Some((te.time, task)),
            _ => None,
        })
        .collect()
}

#[test]
fn engine_wakes_socket_writers_together_once_drained_to_a_quarter() {
    // 10 skbs of 1000 B fill it; the reader must take 8 (20 us each) before
    // the writers are woken, all three at once.
    let socket = writer_wakeups(ChanSpec::unix_stream(10_000, 1000), 20, Features::mainline());
    let (t0, _) = socket[0];
    assert!(t0 >= 5 * NSEC_PER_MSEC + 7 * 20_000, "first writer wakeup at {t0}");
    assert_eq!(socket.iter().filter(|(t, _)| *t == t0).count(), 3, "{socket:?}");
    // A plain queue of the same size wakes one writer at the first read.
    let queue = writer_wakeups(ChanSpec::queue(10), 20, Features::mainline());
    let (q0, _) = queue[0];
    assert!(q0 < 5 * NSEC_PER_MSEC + 20_000, "first writer wakeup at {q0}");
    assert_eq!(queue.iter().filter(|(t, _)| *t == q0).count(), 1);
}

#[test]
fn engine_pipe_writer_wakeups_follow_the_profile_rule() {
    // 3 x 300 messages of 100 B overfill the 640 a pipe holds.
    let new = writer_wakeups(ChanSpec::pipe(16, 100), 300, Features::mainline());
    let mut f = Features::mainline();
    f.set(Feat::pipe_release_wakes_writer, false);
    let old = writer_wakeups(ChanSpec::pipe(16, 100), 300, f);
    // Released page: the first wakeup after 40 reads. was_full: at the first.
    assert!(new[0].0 >= 5 * NSEC_PER_MSEC + 39 * 20_000, "first wakeup at {}", new[0].0);
    assert!(old[0].0 < 5 * NSEC_PER_MSEC + 20_000, "first wakeup at {}", old[0].0);
    // The old rule wakes writers that find no room and sleep again.
    assert!(old.len() > new.len(), "was_full {} wakeups, release {}", old.len(), new.len());
}
