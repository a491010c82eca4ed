//! Video encoders and decoders with frame threading (x264's `--threads`,
//! FFmpeg's frame threads): each thread codes one frame at a time, frames
//! dealt round-robin, and a frame's macroblock row r can be coded only once
//! the previous frame (its reference) has finished row r + `lag` (the
//! motion-search reach), which the previous frame's thread announces row by
//! row (x264's `x264_frame_cond_broadcast`, FFmpeg's
//! `ff_thread_report_progress`). Threads sleep on that condition, never spin.
//! The encoder also has a lookahead thread (slice-type decision) that must
//! stay ahead of the coders and at most `lookahead` frames ahead of them.
//! Metric: completion time (frames per second = frames / it). See README.md.

use super::ops::{Op, OpsBuilder};
use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{forked_task, Dist, PrimaryMetric, Program, SemId, Workload};
use crate::error::Result;
use crate::ids::Ns;

/// Structure, for `schedlab workload show` (encoder).
pub(crate) const ENC_STRUCTURE: &str = "a lookahead thread analysing frames ahead (at most `lookahead` frames \
     ahead of the coders) and `threads` frame threads, frame f on thread f mod threads; each frame is `rows` \
     macroblock rows; row r of frame f waits until frame f-1 has finished row r + `lag`; each finished row \
     wakes the next frame's thread (a condition variable).";

/// What the encoder was modelled on.
pub(crate) const ENC_SOURCE: &str = "x264 frame threading (encoder/encoder.c threads, x264_frame_cond_wait / \
     broadcast on rows, lookahead thread in encoder/lookahead.c, --threads default 1.5 x cores); SEEDS.md idea 2 \
     (video encode)";

/// One line for `schedlab workload list` (encoder).
pub(crate) const ENC_SUMMARY: &str = "video encoder (x264-like frame threads with row dependencies and a \
     lookahead thread); completion time";

/// Structure, for `schedlab workload show` (decoder).
pub(crate) const DEC_STRUCTURE: &str = "`threads` frame threads, frame f on thread f mod threads; each frame is \
     `rows` macroblock rows; row r of frame f waits until frame f-1 has decoded row r + `lag` (await_progress), \
     each decoded row wakes the next frame's thread (report_progress).";

/// What the decoder was modelled on.
pub(crate) const DEC_SOURCE: &str = "FFmpeg frame threading (libavcodec/pthread_frame.c, ff_thread_await_progress \
     / ff_thread_report_progress in the H.264 decoder); SEEDS.md idea 2 (video decode)";

/// One line for `schedlab workload list` (decoder).
pub(crate) const DEC_SUMMARY: &str = "video decoder (FFmpeg-like frame threads with row dependencies); completion time";

const NS_PER_MS: Ns = 1_000_000;

/// Parameters shared by both, then the encoder's lookahead.
const fn params(frame_default: &'static str, frame_doc: &'static str) -> [ParamDef; 5] {
    [
        ParamDef {
            name: "threads",
            kind: Kind::Threads { max: 10_000 },
            default: AUTO,
            unit: "count|N%",
            doc: "frame threads. auto: 1.5 x the hardware threads, rounded down (x264's default; FFmpeg uses the \
                  CPU count + 1, close to it).",
        },
        ParamDef {
            name: "frames",
            kind: Kind::Count { min: 1, max: 10_000_000 },
            default: "300",
            unit: "count",
            doc: "frames of the clip (10 s at 30 fps).",
        },
        ParamDef {
            name: "rows",
            kind: Kind::Count { min: 1, max: 10_000 },
            default: "68",
            unit: "count",
            doc: "macroblock rows per frame: 68 for 1080p (16-pixel rows).",
        },
        ParamDef {
            name: "frame",
            kind: Kind::Duration { default_unit_ns: NS_PER_MS, min_ns: 1_000, max_ns: 60_000 * NS_PER_MS },
            default: frame_default,
            unit: "ms",
            doc: frame_doc,
        },
        ParamDef {
            name: "lag",
            kind: Kind::Count { min: 0, max: 10_000 },
            default: "4",
            unit: "rows",
            doc: "rows of the reference a row needs beyond its own (the vertical motion-vector reach: 64 pixels \
                  is 4 rows).",
        },
    ]
}

const ENC_BASE: [ParamDef; 5] = params(
    "100ms",
    "work to code one frame on a full-capacity CPU: about 100 ms for 1080p at x264's medium preset (10 fps on \
     one core); an estimate that scales every time alike.",
);

/// Encoder parameters, in normalised-name order.
pub(crate) const ENC_PARAMS: &[ParamDef] = &[
    ENC_BASE[0],
    ENC_BASE[1],
    ENC_BASE[2],
    ENC_BASE[3],
    ENC_BASE[4],
    ParamDef {
        name: "lookahead",
        kind: Kind::Count { min: 1, max: 10_000 },
        default: "40",
        unit: "frames",
        doc: "rc-lookahead: how far the lookahead thread may run ahead (x264 medium: 40).",
    },
    ParamDef {
        name: "analysis",
        kind: Kind::Duration { default_unit_ns: NS_PER_MS, min_ns: 0, max_ns: 60_000 * NS_PER_MS },
        default: "5ms",
        unit: "ms",
        doc: "lookahead work per frame (half-resolution motion search and slice-type decision); estimate.",
    },
];

const DEC_BASE: [ParamDef; 5] = params(
    "8ms",
    "work to decode one frame on a full-capacity CPU: about 8 ms for 1080p H.264 (120 fps on one core); an \
     estimate.",
);

/// Decoder parameters, in normalised-name order.
pub(crate) const DEC_PARAMS: &[ParamDef] = &DEC_BASE;

/// Builds the encoder.
pub(crate) fn build_enc(p: &mut Params) -> Result<Workload> {
    build(p, true)
}

/// Builds the decoder.
pub(crate) fn build_dec(p: &mut Params) -> Result<Workload> {
    build(p, false)
}

fn build(p: &mut Params, encoder: bool) -> Result<Workload> {
    let hw = p.cpus.map_or(p.machine.nr_cpus(), |m| m.weight() as usize) as u64;
    let threads = if p.is_auto("threads") {
        let n = (hw * 3 / 2).max(1);
        p.set_resolved("threads", n.to_string());
        n as u32
    } else {
        p.threads("threads")?
    };
    let frames = p.count("frames")?;
    let rows = p.count("rows")?;
    let frame_ns = p.duration("frame")?;
    let lag = p.count("lag")?.min(rows);
    let (lookahead, analysis) = if encoder { (p.count("lookahead")?, p.duration("analysis")?) } else { (0, 0) };
    let row_work = Dist::Fixed(frame_ns / rows);
    // Semaphores: 0..threads: rows finished by thread t's current frame;
    // then the lookahead's output (frames analysed) and its free slots.
    let analysed = SemId(threads);
    let slots = SemId(threads + 1);
    let mut sems = vec![0u64; threads as usize];
    if encoder {
        sems.extend([0, lookahead]);
    }
    let mut tasks = Vec::new();
    if encoder {
        let mut b = OpsBuilder::new();
        b.begin_loop(frames);
        b.push(Op::SemWait { sem: slots, spin: 0 })
            .push(Op::Compute(Dist::Fixed(analysis)))
            .push(Op::SemPost(analysed));
        b.end_loop();
        tasks.push(forked_task("x264-lookahead", Program::Ops(b.build()), 512));
    }
    for t in 0..threads {
        // Frames t, t + threads, ...: how many fall to this thread.
        let mine = if (t as u64) < frames { (frames - t as u64).div_ceil(threads as u64) } else { 0 };
        if mine == 0 {
            continue;
        }
        let prev = SemId((t + threads - 1) % threads);
        let own = SemId(t);
        let mut b = OpsBuilder::new();
        // Row r needs the reference's rows up to r + lag: min(r + lag + 1,
        // rows) posts of it in all. So: that many before row 0 (at most all),
        // then one more after each row while some remain; every frame takes
        // exactly `rows` posts, as many as its reference made.
        let ahead = (lag + 1).min(rows);
        for pass in 0..2 {
            // Pass 0: this thread's first frame (frame t; the clip's first
            // frame, on thread 0, has no reference); pass 1: its others.
            let (count, has_ref) = if pass == 0 { (1, t != 0) } else { (mine - 1, true) };
            if count == 0 {
                continue;
            }
            b.begin_loop(count);
            if encoder {
                b.push(Op::SemWait { sem: analysed, spin: 0 });
            }
            if has_ref {
                for _ in 0..ahead {
                    b.push(Op::SemWait { sem: prev, spin: 0 });
                }
                if rows > ahead {
                    b.begin_loop(rows - ahead);
                    b.push(Op::Compute(row_work)).push(Op::SemPost(own)).push(Op::SemWait { sem: prev, spin: 0 });
                    b.end_loop();
                }
                b.begin_loop(ahead);
            } else {
                b.begin_loop(rows);
            }
            b.push(Op::Compute(row_work)).push(Op::SemPost(own));
            b.end_loop();
            if encoder {
                b.push(Op::SemPost(slots));
            }
            b.end_loop();
        }
        let name = if encoder { format!("x264-frame-{t}") } else { format!("ffmpeg-frame-{t}") };
        tasks.push(forked_task(&name, Program::Ops(b.build()), 1024));
    }
    Ok(Workload { sems, ..Workload::of(tasks, PrimaryMetric::CompletionTime) })
}
