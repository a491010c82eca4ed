//! Android-style periodic use cases for energy studies (SEEDS.md idea 6):
//! video playback, audio playback, camera recording and an animated home
//! screen, each a set of threads with the structure Android runs them with:
//! a timer thread starts each period (the display's vsync, the video frame
//! clock, the audio tick, the camera frame), and each thread, once it has
//! done its work, wakes the next ones of the chain by a message (binder or
//! a looper queue: a plain, non-sync wakeup). A thread woken while busy
//! finds its message when it is done, as a looper does.
//!
//! The thread sets, periods and run times of video and audio playback are
//! those of rt-app's Android use cases (doc/examples/video-short.json and
//! mp3-short.json in the rt-app repository, recorded from Android traces);
//! their nice values are the files' `priority`. Camera recording and the
//! home screen have no such recording to follow: their figures are
//! estimates, marked so in [`SOURCE`] and in each thread's comment.
//! Metric: frames per second of the case's frame thread (`requests_per_s`),
//! and how long that thread's frame work took (request latency); the runs
//! are meant for `energy_j` and `power_mw` on a machine with an energy
//! model (`hikey960`, `pixel2`).

use super::ops::{Op, OpsBuilder};
use super::spec::{Kind, ParamDef, Params};
use super::{forked_task, ChanId, ChanSpec, Dist, MarkKind, PrimaryMetric, Program, TaskSpec, Workload};
use crate::cpumask::CpuMask;
use crate::error::Result;
use crate::ids::{CpuId, Ns, NSEC_PER_USEC};

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "per `case`, a few timer threads (display vsync every 16.667 ms, video \
     frames every 33.333 ms, the audio tick every 6 ms with the output woken every 5th, camera frames every \
     33.333 ms, audio capture every 20 ms) start chains of looper threads, each running its steps (run, or \
     sleep for an I/O or hardware wait) and then waking the next threads of its chain; the frame thread \
     of the case marks each frame.";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "video and audio: rt-app doc/examples/video-short.json and mp3-short.json \
     (Android video and mp3 playback recorded as rt-app tasks: periods, run and sleep times, nice = \
     priority); camera recording and home screen: estimates (a 1080p30 recording with hardware ISP and \
     encoder: 30 fps frames, 20 ms audio capture buffers; a 60 fps animated launcher: UI thread, \
     RenderThread and SurfaceFlinger per vsync); SEEDS.md idea 6 (Hikey960 use cases)";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "android: periodic use cases (video, audio, camera, home) as timer-driven \
     thread chains, for energy_j / power_mw; requests_per_s = frames per second";

/// Parameters, in normalised-name order.
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "case",
        kind: Kind::Choice(&["video", "audio", "camera", "home"]),
        default: "video",
        unit: "video|audio|camera|home",
        doc: "the use case: video playback (software 1080p decode, 30 fps, display at 60 Hz), audio \
              playback (mp3, screen off), camera recording (30 fps preview and encode, audio capture), \
              home screen (a 60 fps animated launcher).",
    },
    ParamDef {
        name: "time",
        kind: Kind::Duration { default_unit_ns: 1_000_000_000, min_ns: 1_000_000, max_ns: 3_600_000_000_000 },
        default: "2s",
        unit: "s",
        doc: "run time; rt-app's use cases run 6 s, 2 s keeps simulations short (about 60 video frames).",
    },
];

/// What starts a thread's period.
#[derive(Clone, Copy, Debug)]
enum Trigger {
    /// A periodic timer of this period, µs.
    Timer(u64),
    /// A message from another thread of the case.
    Woken,
}

/// One step of a thread's period.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Work, µs at full capacity.
    Run(u64),
    /// Sleep (an I/O or hardware wait), µs.
    Sleep(u64),
    /// Wake a thread of the case (its index).
    Wake(usize),
    /// Wait for the next period of the thread's own timer.
    Tick,
}

/// One thread of a use case.
#[derive(Clone, Copy, Debug)]
struct Thread {
    name: &'static str,
    /// Nice value (rt-app's `priority` for SCHED_OTHER).
    nice: i8,
    trigger: Trigger,
    steps: &'static [Step],
    /// Marks a frame (request) per period: the case's frame thread.
    frame: bool,
    /// Bound to CPU 0 (rt-app's `cpus: [0]`).
    cpu0: bool,
}

use Step::{Run, Sleep, Tick, Wake};

const fn thread(name: &'static str, nice: i8, trigger: Trigger, steps: &'static [Step]) -> Thread {
    Thread { name, nice, trigger, steps, frame: false, cpu0: false }
}

const fn frame(t: Thread) -> Thread {
    Thread { frame: true, ..t }
}

/// The display pipeline at 60 Hz, first in every case with a screen: the
/// vsync event (hwc_eventmon, 115 µs every 16,667 µs), DispSync (35 + 40
/// µs), the EventThread (30 µs) and SurfaceFlinger's composition (1,500
/// µs): video-short.json. Indices 0-3; `after` is woken with it.
const fn display(sf_wakes: &'static [Step]) -> [Thread; 4] {
    [
        thread("hwc_eventmon", -19, Trigger::Timer(16_667), &[Run(115), Wake(1)]),
        thread("DispSync", -7, Trigger::Woken, &[Run(35), Wake(2), Run(40)]),
        thread("EventThread", -8, Trigger::Woken, &[Run(30), Wake(3)]),
        thread("surfaceflinger", -7, Trigger::Woken, sf_wakes),
    ]
}

/// Video playback (video-short.json): a 30 fps frame clock wakes the
/// renderer (NuPlayerRenderer: 140 + 95 µs three times, then 580 µs), which
/// feeds the video decoder's two threads (NPDecoder: 500 µs, a 680 µs wait,
/// 2,000 µs; NPDecoder-CL: 570, 570, 2,100) and the AAC decoder (2,400,
/// 430, 45); the decoder wakes the codec looper (230, 80, 150, 210, 330)
/// and the OMX callback thread (135, 230, 140).
const VIDEO: &[Thread] = &{
    let d = display(&[Run(1500)]);
    [
        d[0],
        d[1],
        d[2],
        d[3],
        thread("waker", -19, Trigger::Timer(33_333), &[Wake(5)]),
        frame(thread(
            "NuPlayerRenderer",
            -15,
            Trigger::Woken,
            &[Run(140), Run(95), Run(140), Run(95), Run(140), Run(95), Run(580), Wake(6), Wake(7), Wake(8)],
        )),
        thread("NPDecoder", -15, Trigger::Woken, &[Run(500), Sleep(680), Wake(9), Run(2000), Wake(10)]),
        thread("NPDecoder-CL", -15, Trigger::Woken, &[Run(570), Sleep(570), Run(2100)]),
        thread("gle.aac.decoder", -1, Trigger::Woken, &[Run(2400), Sleep(430), Run(45)]),
        thread("CodecLooper1", -15, Trigger::Woken, &[Run(230), Sleep(80), Run(150), Sleep(210), Run(330)]),
        thread("OMXCallbackDisp1", -1, Trigger::Woken, &[Run(135), Sleep(230), Run(140)]),
    ]
};

/// Audio playback, screen off (mp3-short.json): the audio tick (every 6 ms,
/// bound to CPU 0) wakes the output thread every 5th tick, which runs 275
/// µs, wakes AudioTrack and mixes for 4,725 µs; AudioTrack (300 µs) wakes
/// the mp3 decoder (1,000 µs, a round trip to the OMX callback thread of
/// 300 µs, then 150 µs).
const AUDIO: &[Thread] = &[
    Thread { cpu0: true, ..thread("AudioTick", -19, Trigger::Timer(6_000), &[Wake(1), Tick, Tick, Tick, Tick]) },
    frame(thread("AudioOut", -19, Trigger::Woken, &[Run(275), Wake(2), Run(4725)])),
    thread("AudioTrack", -16, Trigger::Woken, &[Run(300), Wake(3)]),
    thread("mp3.decoder", -2, Trigger::Woken, &[Run(1000), Wake(4), Sleep(300), Run(150)]),
    thread("OMXCall", -2, Trigger::Woken, &[Run(300)]),
];

/// Camera recording (estimates, see [`SOURCE`]): per 30 fps frame the
/// camera HAL's request thread (2,500 µs of buffer and metadata handling)
/// wakes the preview's RenderThread (2,000 µs, then SurfaceFlinger's next
/// composition) and the encoder's callback thread (1,500 µs of buffer
/// handling around the hardware encoder), which wakes the muxer (400 µs);
/// audio capture every 20 ms (300 µs) feeds an AAC encoder (1,200 µs),
/// which wakes the muxer too.
const CAMERA: &[Thread] = &{
    let d = display(&[Run(1500)]);
    [
        d[0],
        d[1],
        d[2],
        d[3],
        frame(thread("CameraHal", -10, Trigger::Timer(33_333), &[Run(2500), Wake(5), Wake(6)])),
        thread("RenderThread", -10, Trigger::Woken, &[Run(2000)]),
        thread("CodecCallback", -10, Trigger::Woken, &[Run(1500), Wake(7)]),
        thread("MediaMuxer", -4, Trigger::Woken, &[Run(400)]),
        thread("AudioRecord", -16, Trigger::Timer(20_000), &[Run(300), Wake(9)]),
        thread("aac.encoder", -4, Trigger::Woken, &[Run(1200), Wake(7)]),
    ]
};

/// Home screen, animated (estimates, see [`SOURCE`]): on each vsync the
/// launcher's UI thread (800 µs) hands its frame to the RenderThread
/// (1,500 µs), and SurfaceFlinger composes (1,500 µs).
const HOME: &[Thread] = &{
    let d = display(&[Run(1500), Wake(4)]);
    [
        d[0],
        d[1],
        d[2],
        d[3],
        frame(thread("launcher-ui", -10, Trigger::Woken, &[Run(800), Wake(5)])),
        thread("RenderThread", -10, Trigger::Woken, &[Run(1500)]),
    ]
};

/// Builds the case's threads.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let case = p.choice("case")?;
    let time = p.duration("time")?;
    let threads = match case {
        "video" => VIDEO,
        "audio" => AUDIO,
        "camera" => CAMERA,
        _ => HOME,
    };
    // One channel per thread: the queue its wakers post to.
    let chans = threads.iter().map(|_| ChanSpec::queue(64)).collect();
    let tasks = threads.iter().enumerate().map(|(i, t)| task(i, t)).collect();
    Ok(Workload { chans, duration_ns: Some(time), ..Workload::of(tasks, PrimaryMetric::Throughput) })
}

/// Thread `i` of a case as a task: forever, wait for its trigger, run its
/// steps, marking a frame around them when it is the frame thread.
fn task(i: usize, t: &Thread) -> TaskSpec {
    let us = |v: u64| -> Ns { v * NSEC_PER_USEC };
    let mut b = OpsBuilder::new();
    let timer = match t.trigger {
        Trigger::Timer(_) => Some(b.timer_slot()),
        Trigger::Woken => None,
    };
    b.begin_forever();
    let tick = match (t.trigger, timer) {
        (Trigger::Timer(period), Some(slot)) => Some(Op::Timer { slot, period: us(period), absolute: true }),
        _ => None,
    };
    b.push(tick.unwrap_or(Op::Recv { chan: ChanId(i as u32) }));
    if t.frame {
        b.push(Op::Mark(MarkKind::RequestStart));
    }
    for s in t.steps {
        match *s {
            Run(v) => b.push(Op::Compute(Dist::Fixed(us(v)))),
            Sleep(v) => b.push(Op::Sleep(Dist::Fixed(us(v)))),
            Wake(j) => b.push(Op::Send { chan: ChanId(j as u32), sync: false }),
            Tick => b.push(tick.expect("Tick in a thread without a timer")),
        };
    }
    if t.frame {
        b.push(Op::Mark(MarkKind::RequestDone));
    }
    b.end_loop();
    let mut spec = forked_task(t.name, Program::Ops(b.build()), 256);
    spec.nice = i32::from(t.nice);
    if t.cpu0 {
        spec.allowed = Some(CpuMask::from_cpus([CpuId(0)]));
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every wake names a thread of its case that waits for messages, and
    /// every woken thread has a waker: no chain is broken.
    #[test]
    fn every_chain_is_whole() {
        for (name, threads) in [("video", VIDEO), ("audio", AUDIO), ("camera", CAMERA), ("home", HOME)] {
            let mut woken = vec![false; threads.len()];
            for t in threads {
                for s in t.steps {
                    if let Wake(j) = *s {
                        assert!(j < threads.len(), "{name}: {} wakes {j}", t.name);
                        assert!(matches!(threads[j].trigger, Trigger::Woken), "{name}: {} wakes a timer", t.name);
                        woken[j] = true;
                    }
                }
            }
            for t in threads {
                let ticks = t.steps.iter().any(|s| matches!(s, Tick));
                assert!(!ticks || matches!(t.trigger, Trigger::Timer(_)), "{name}: {} ticks without a timer", t.name);
            }
            for (t, w) in threads.iter().zip(woken) {
                assert!(w || matches!(t.trigger, Trigger::Timer(_)), "{name}: nothing wakes {}", t.name);
            }
            assert_eq!(threads.iter().filter(|t| t.frame).count(), 1, "{name}: one frame thread");
        }
    }
}
