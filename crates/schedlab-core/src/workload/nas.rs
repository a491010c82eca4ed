//! NAS Parallel Benchmarks, OpenMP versions (NPB3.x-OMP), as their
//! synchronisation structure: per time step, a sequence of `omp for` loops
//! over grid planes (or rows), statically scheduled as libgomp does, each
//! ending in the implicit barrier (spin, then futex; see `omp.rs`); LU's
//! triangular sweeps are instead a pipelined wavefront where each thread
//! busy-waits on its neighbour's flag for every plane (NPB's `sync_left` /
//! `sync_right`, which spin on a shared array with `omp flush` and never
//! sleep). Work per step comes from NPB's own operation-count formulas
//! (the ones its Mop/s line uses) and a sustained rate per core, `mops`.
//! Metric: completion time. See README.md.

use super::ops::{Op, OpsBuilder};
use super::spec::{Kind, ParamDef, Params, AUTO};
use super::{forked_task, BarrierId, BarrierSpec, Dist, PrimaryMetric, Program, SemId, Workload};
use crate::error::Result;
use crate::ids::Ns;

/// Structure, for `schedlab workload show`.
pub(crate) const STRUCTURE: &str = "`threads` OpenMP threads; each time step runs the kernel's parallel loops \
     in order, each statically split over the grid planes (or matrix rows) and ending in a spin-then-futex \
     barrier. LU's lower and upper sweeps are a wavefront instead: for every plane, thread t busy-waits for \
     thread t-1's flag (t+1's going up), computes its rows, raises its own flag once the next thread took the \
     previous one. UA's step is 154 short loops over its mesh elements (its measured OpenMP regions).";

/// What it was modelled on.
pub(crate) const SOURCE: &str = "NPB 3.x OpenMP (bt, sp, lu ssor/blts/buts with sync_left/sync_right, cg, \
     mg, ep) and the operation counts of their print_results Mop/s lines; ua from runs of NPB 3.4.2's UA \
     (element counts per step, callgrind region counts and shares); SEEDS.md idea 1";

/// One line for `schedlab workload list`.
pub(crate) const SUMMARY: &str = "NAS Parallel Benchmarks (OpenMP): bt, sp, lu (pipelined wavefront), ua, cg, \
     mg, ep, classes A/B/C, as their loops, barriers and busy-wait flags (SEEDS idea 1); completion time";

/// A busy-wait that never sleeps (NPB's flag loops), as a spin budget: far
/// beyond any run, so the waiter spins until released.
const BUSY_WAIT_NS: Ns = 1_000_000_000_000;

/// Parameters, in normalised-name order (the OpenMP wait keys last).
pub(crate) const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "kernel",
        kind: Kind::Choice(&["bt", "sp", "lu", "cg", "mg", "ep", "ua"]),
        default: "lu",
        unit: "bt|sp|lu|cg|mg|ep|ua",
        doc: "the benchmark.",
    },
    ParamDef {
        name: "class",
        kind: Kind::Choice(&["A", "B", "C"]),
        default: "A",
        unit: "A|B|C",
        doc: "problem size: grid 64/102/162 (bt, sp, lu), 14000/75000/150000 rows (cg), 256/256/512 (mg), \
              2^28/2^30/2^32 pairs (ep), mean mesh elements UA_ELEMENTS (ua).",
    },
    ParamDef {
        name: "threads",
        kind: Kind::Threads { max: 100_000 },
        default: "100%",
        unit: "count|N%",
        doc: "OMP_NUM_THREADS; default one per hardware thread, as the seed experiment ran.",
    },
    ParamDef {
        name: "iterations",
        kind: Kind::Count { min: 1, max: 100_000 },
        default: AUTO,
        unit: "count",
        doc: "time steps. auto: the class's (bt 200, sp 400, lu 250, ua 200, cg 15/75/75, mg 4/20/20, ep 1). \
              Fewer steps shorten a run in proportion; every step is alike.",
    },
    ParamDef {
        name: "mops",
        kind: Kind::Count { min: 1, max: 1_000_000 },
        default: AUTO,
        unit: "Mop/s",
        doc: "sustained rate of one thread alone on a full-capacity CPU at its top frequency, in NPB's own \
              operations. auto, estimates for a 2-3 GHz Broadwell/Skylake server core: bt 2500, sp 1500, \
              lu 2500, cg 800, mg 2000 (floating-point operations), ep 80 (random pairs); ua 30 (collocation \
              points advanced, measured on an AMD EPYC VM core). Scales every time \
              alike; placement effects do not depend on it.",
    },
    ParamDef {
        name: "footprint",
        kind: Kind::Count { min: 0, max: 1 << 30 },
        default: "1024",
        unit: "KiB",
        doc: "cache footprint of each thread, refilled after a migration: its block of the grid arrays is \
              larger than an L2; 1 MiB stands for the part a step touches again soon.",
    },
    super::omp::PARAMS[0],
    super::omp::PARAMS[1],
    super::omp::PARAMS[2],
];

/// UA's mean number of mesh elements over its time steps, classes A, B, C:
/// the adaptive mesh is refined and coarsened around the moving heat source
/// every 5 steps, between these (min..max) bounds. Measured: NPB 3.4.2 UA
/// (OpenMP), built with gfortran 12 -O3 and run single-threaded with a
/// print of `nelt` at every step (A: 1695..2171; B: 7421..8268; C: 31382..32278).
const UA_ELEMENTS: [f64; 3] = [1980.0, 8032.0, 31929.0];

/// UA's parallel loops per time step, as (loops, % of the step's work),
/// first those of the step itself, then those of each of the
/// `nmxh` = 10 conjugate-gradient iterations of `diffusion`. Measured with
/// callgrind on NPB 3.4.2 UA class S with 2 threads: each outlined OpenMP
/// region's calls per step and its share of the instructions of all regions
/// (libgomp's own spinning excluded). Step: convect (2 regions, 19.9%),
/// transfb_c (3.1%), transf (2 of its 12, 1.8%), transfb (1 of 11, 3.9%),
/// col2 (3 of 13, 0.5%), the diffusion setup (0.6%), add2 and the main
/// loop's own (4, 0.5%). Per CG iteration: the preconditioner (0.5%), transf
/// (0.9%), transfb (4.0%), adds2m1 (4 regions, 0.6%), adds1m1 (2, 0.26%),
/// col2 (0.18%), three diffusion reductions (0.47%), parallel_add (~0).
/// That is 154 of the 163 regions a step runs (the adaptation's every fifth
/// step and the 15 explicit barriers are left out); the mortar updates'
/// `omp_set_lock` calls (2,700 per element per step, uncontended at these
/// sizes) are part of the regions' work.
const UA_STEP: &[(u32, f64)] = &[(2, 19.85), (1, 3.13), (2, 1.795), (1, 3.913), (3, 0.521), (1, 0.56), (4, 0.52)];
const UA_CG_ITER: &[(u32, f64)] =
    &[(1, 0.504), (1, 0.914), (1, 3.984), (4, 0.579), (2, 0.26), (1, 0.177), (3, 0.466), (1, 0.001)];
/// `nmxh`: CG iterations per step (every class).
const UA_NMXH: u32 = 10;
/// UA's default rate, M collocation points advanced per second by one
/// thread alone: measured with the same builds on this project's
/// development VM (AMD EPYC, one thread, user time): class A 30.2, B 28.5, C 27.9.
const UA_MOPS: u64 = 30;

/// One parallel step of a kernel.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// An `omp for` over `planes` iterations (statically split) holding
    /// `share` of the time step's work, then the implicit barrier.
    Loop { share: f64, planes: u64 },
    /// LU's wavefront over `planes` planes holding `share` of the work;
    /// `up` runs from the last thread to the first.
    Sweep { share: f64, planes: u64, up: bool },
}

/// A kernel at a class: steps per iteration, ops per iteration, iterations.
struct Shape {
    steps: Vec<Step>,
    ops_per_iter: f64,
    iterations: u64,
    mops: u64,
}

fn shape(kernel: &str, class: usize) -> Shape {
    let grid: f64 = [64.0, 102.0, 162.0][class];
    let planes = grid as u64 - 2;
    // `n` loops sharing `share` of a step equally.
    let loops = |share: f64, n: u32, planes: u64| (0..n).map(move |_| Step::Loop { share: share / n as f64, planes });
    match kernel {
        "bt" => Shape {
            // compute_rhs (5 loops), x/y/z_solve, add (bt/adi.f).
            steps: loops(0.30, 5, planes)
                .chain([0.20, 0.20, 0.25, 0.05].map(|s| Step::Loop { share: s, planes }))
                .collect(),
            ops_per_iter: 3478.8 * grid.powi(3) - 17655.7 * grid.powi(2) + 28023.7 * grid,
            iterations: 200,
            mops: 2500,
        },
        "sp" => Shape {
            // compute_rhs, txinvr, x_solve, ninvr, y_solve, pinvr, z_solve, tzetar, add.
            steps: loops(0.35, 5, planes)
                .chain([0.05, 0.15, 0.03, 0.15, 0.03, 0.17, 0.04, 0.03].map(|s| Step::Loop { share: s, planes }))
                .collect(),
            ops_per_iter: 881.174 * grid.powi(3) - 4683.91 * grid.powi(2) + 11484.5 * grid - 19272.4,
            iterations: 400,
            mops: 1500,
        },
        "lu" => Shape {
            // ssor: jacld+blts (lower sweep), jacu+buts (upper sweep), rhs (4 loops), update.
            steps: [Step::Sweep { share: 0.30, planes, up: false }, Step::Sweep { share: 0.30, planes, up: true }]
                .into_iter()
                .chain(loops(0.35, 4, planes))
                .chain([Step::Loop { share: 0.05, planes }])
                .collect(),
            ops_per_iter: 1984.77 * grid.powi(3) - 10923.3 * grid.powi(2) + 27770.9 * grid - 144010.0,
            iterations: 250,
            mops: 2500,
        },
        "cg" => {
            let (na, nonzer, iters) = [(14_000.0, 11.0, 15), (75_000.0, 13.0, 75), (150_000.0, 15.0, 75)][class];
            // 25 conj_grad iterations: the matrix-vector product, two dot
            // products, the vector updates; then the norm and the shift.
            let mut steps = Vec::new();
            for _ in 0..25 {
                steps.push(Step::Loop { share: 0.8 / 25.0, planes: na as u64 });
                steps.extend(loops(0.15 / 25.0, 3, na as u64));
            }
            steps.extend(loops(0.05, 2, na as u64));
            let nz = nonzer * (nonzer + 1.0);
            Shape { steps, ops_per_iter: 2.0 * na * (3.0 + nz + 25.0 * (5.0 + nz) + 3.0), iterations: iters, mops: 800 }
        }
        "mg" => {
            let (n, iters) = [(256u64, 4), (256, 20), (512, 20)][class];
            // One V-cycle: down the levels (residual restriction), up
            // (interpolation, residual, smoother); level l has n/2^l planes
            // and 1/8^l of the finest level's work.
            let levels = n.trailing_zeros() - 1;
            let weight: f64 = (0..levels).map(|l| 0.125f64.powi(l as i32)).sum();
            let mut steps = Vec::new();
            for l in 0..levels {
                let share = 0.125f64.powi(l as i32) / weight;
                steps.push(Step::Loop { share: share * 0.25, planes: n >> l });
            }
            for l in (0..levels).rev() {
                let share = 0.125f64.powi(l as i32) / weight;
                steps.extend(loops(share * 0.75, 3, n >> l));
            }
            Shape { steps, ops_per_iter: 58.0 * (n as f64).powi(3), iterations: iters, mops: 2000 }
        }
        "ua" => {
            // Work in NPB's own unit: collocation points advanced, lx1^3 =
            // 125 per element, once by convection and nmxh times by
            // diffusion (ua.f90's Mop/s line).
            let nelt = UA_ELEMENTS[class];
            let elements = nelt.round() as u64;
            let total: f64 = UA_STEP
                .iter()
                .chain(UA_CG_ITER.iter().flat_map(|x| std::iter::repeat_n(x, UA_NMXH as usize)))
                .map(|(_, s)| s)
                .sum();
            let block = |(n, pct): &(u32, f64)| loops(pct / total, *n, elements);
            let mut steps: Vec<Step> = UA_STEP.iter().flat_map(block).collect();
            for _ in 0..UA_NMXH {
                steps.extend(UA_CG_ITER.iter().flat_map(block));
            }
            Shape { steps, ops_per_iter: nelt * 125.0 * f64::from(UA_NMXH + 1), iterations: 200, mops: UA_MOPS }
        }
        // ep: one loop over 2^(M-16) batches of random pairs.
        _ => {
            let m = [28, 30, 32][class];
            Shape {
                steps: vec![Step::Loop { share: 1.0, planes: 1 << (m - 16) }],
                ops_per_iter: (1u64 << (m + 1)) as f64,
                iterations: 1,
                mops: 80,
            }
        }
    }
}

/// libgomp's static schedule without a chunk: the first `n % t` threads get
/// one iteration more.
fn static_share(n: u64, threads: u64, i: u64) -> u64 {
    n / threads + u64::from(i < n % threads)
}

/// Builds the team.
pub(crate) fn build(p: &mut Params) -> Result<Workload> {
    let kernel = p.choice("kernel")?;
    let class_word = p.choice("class")?;
    let class = ["A", "B", "C"].iter().position(|c| *c == class_word).unwrap_or(0);
    let threads = p.threads("threads")?;
    let s = shape(kernel, class);
    let iterations = p.count_or("iterations", s.iterations)?;
    let mops = p.count_or("mops", s.mops)?;
    let footprint = p.count("footprint")?;
    let footprint_kib = u32::try_from(footprint).map_err(|_| p.invalid("footprint", "a smaller footprint"))?;
    let cpus = p.cpus.map_or(p.machine.nr_cpus(), |m| m.weight() as usize) as u32;
    let spin = super::omp::spin_ns(p, threads, cpus)?;
    // ns of work of one time step on one full-capacity CPU.
    let step_ns = s.ops_per_iter / mops as f64 * 1e3;
    let t = threads as u64;
    // Semaphores per wavefront edge e (thread e <-> e+1): lower sweep full,
    // lower empty, upper full, upper empty; an empty flag starts posted.
    let edges = threads.saturating_sub(1);
    let sem = |edge: u32, k: u32| SemId(edge * 4 + k);
    let mut sems = Vec::with_capacity(edges as usize * 4);
    for _ in 0..edges {
        sems.extend([0, 1, 0, 1]);
    }
    let mut tasks = Vec::with_capacity(threads as usize);
    for i in 0..threads {
        let mut b = OpsBuilder::new();
        b.begin_loop(iterations);
        for step in &s.steps {
            match *step {
                Step::Loop { share, planes } => {
                    let mine = static_share(planes, t, i as u64);
                    let work = (step_ns * share * mine as f64 / planes as f64) as Ns;
                    if work > 0 {
                        b.push(Op::Compute(Dist::Fixed(work)));
                    }
                    b.push(Op::Barrier { id: BarrierId(0), spin });
                }
                Step::Sweep { share, planes, up } => {
                    // Rows of each plane split statically among threads.
                    let rows = planes;
                    let mine = static_share(rows, t, i as u64);
                    let per_plane = (step_ns * share / planes as f64 * mine as f64 / rows as f64) as Ns;
                    // Upstream and downstream neighbours of this sweep.
                    let (from, to) = if up {
                        ((i + 1 < threads).then_some((i, 2)), (i > 0).then(|| (i - 1, 2)))
                    } else {
                        ((i > 0).then(|| (i - 1, 0)), (i + 1 < threads).then_some((i, 0)))
                    };
                    b.begin_loop(planes);
                    if let Some((e, k)) = from {
                        // sync_left: wait for the flag, then clear it.
                        b.push(Op::SemWait { sem: sem(e, k), spin: BUSY_WAIT_NS });
                        b.push(Op::SemPost(sem(e, k + 1)));
                    }
                    if per_plane > 0 {
                        b.push(Op::Compute(Dist::Fixed(per_plane)));
                    }
                    if let Some((e, k)) = to {
                        // sync_right: wait until the last flag was taken, raise it.
                        b.push(Op::SemWait { sem: sem(e, k + 1), spin: BUSY_WAIT_NS });
                        b.push(Op::SemPost(sem(e, k)));
                    }
                    b.end_loop();
                    b.push(Op::Barrier { id: BarrierId(0), spin });
                }
            }
        }
        b.end_loop();
        tasks.push(forked_task(
            &format!("{kernel}.{}-{i}", ["A", "B", "C"][class]),
            Program::Ops(b.build()),
            footprint_kib,
        ));
    }
    Ok(Workload {
        barriers: vec![BarrierSpec { parties: threads }],
        sems,
        ..Workload::of(tasks, PrimaryMetric::CompletionTime)
    })
}
