//! Each family runs at a tiny size and prints its metric; bad specs are
//! one-line errors; threads carry the documented names.

use schedlab_wl::{run, WlError};

fn json(spec: &str) -> serde_json::Value {
    serde_json::from_str(&run(spec).unwrap_or_else(|e| panic!("{spec}: {e:?}"))).unwrap()
}

#[test]
fn every_family_runs_small_and_reports_its_metric() {
    let p = json("pipe:loops=2000");
    assert!(p["usecs_per_op"].as_f64().unwrap() > 0.0);
    let h = json("hackbench:groups=1,fds=4,loops=20,ipc=pipe,mode=thread");
    assert!(h["completion_time_s"].as_f64().unwrap() > 0.0);
    let h = json("hackbench:groups=1,fds=2,loops=5");
    assert_eq!(h["fds"], 2);
    let w = json("workqueue:threads=2,chunks=20,chunk=100us");
    // 20 chunks of 100 us over 2 workers: at least 1 ms of work each.
    assert!(w["completion_time_s"].as_f64().unwrap() >= 0.001);
    assert!(w.get("reply_write_ns").is_none(), "only pin=split times its replies");
    if std::thread::available_parallelism().map_or(0, |n| n.get()) >= 2 {
        // The calibrate probe: every reply write (20 chunks + the stop) is timed.
        let s = json("workqueue:threads=1,chunks=20,chunk=100us,pin=split");
        let r = &s["reply_write_ns"];
        assert_eq!(r["n"], 21, "{s}");
        let (p10, p50, p90) =
            (r["p10_ns"].as_u64().unwrap(), r["p50_ns"].as_u64().unwrap(), r["p90_ns"].as_u64().unwrap());
        assert!(0 < p10 && p10 <= p50 && p50 <= p90, "{s}");
    }
    let b = json("barrier:threads=2,iterations=200,delay=5us,spin=10us");
    assert!(b["iterations_per_s"].as_f64().unwrap() > 0.0);
    let r = json("periodic:count=1,period=5ms,runtime=500us,duration=30ms");
    assert!(r["max_lateness_us"].as_f64().unwrap() >= 0.0);
    // The simulated pipe family's spec runs natively as is.
    let p = json("pipe:loops=500,mode=thread,tasks=2,write=1500ns,read=1us");
    assert_eq!(p["loops"], 500);
}

#[test]
fn schbench_serves_requests_and_reports_schbench_units() {
    let s = json("schbench:message_threads=2,threads=2,runtime=200ms,sleep=50us,operations=1,footprint=16");
    assert_eq!((s["message_threads"].as_u64(), s["threads"].as_u64()), (Some(2), Some(2)));
    // 16 KiB: three 26 x 26 matrices of u64.
    assert_eq!(s["matrix_size"], 26);
    let requests = s["requests"].as_u64().unwrap();
    // 4 workers, each request at least 50 us of sleep: well over a hundred in 200 ms.
    assert!(requests > 100, "{s}");
    let rps = s["requests_per_s"].as_f64().unwrap();
    assert!((rps - requests as f64 / s["measured_s"].as_f64().unwrap()).abs() < 1e-6 * rps);
    let wake = &s["wakeup_latency_us"];
    let (p50, p99) = (wake["p50"].as_u64().unwrap(), wake["p99"].as_u64().unwrap());
    assert!(1 <= p50 && p50 <= p99 && p99 <= wake["max"].as_u64().unwrap(), "{wake}");
    // Every request sleeps 50 us plus the slack: at least 50 us each.
    assert!(s["request_latency_us"]["min"].as_u64().unwrap() >= 50, "{s}");
    assert!(s["op_us"].as_f64().unwrap() > 0.0);
    // A warm-up drops the early samples; an explicit op spins instead of multiplying.
    let w = json("schbench:threads=1,runtime=100ms,warmup=50ms,sleep=0,operations=2,op=20us");
    assert!(w["measured_s"].as_f64().unwrap() < 0.08, "{w}");
    assert!(w["op_us"].as_f64().unwrap() >= 20.0, "{w}");
}

#[test]
fn bad_specs_name_family_and_key() {
    let err = |spec: &str| match run(spec) {
        Err(WlError::Bad(m)) => m,
        other => panic!("{spec}: expected a bad-argument error, got {other:?}"),
    };
    assert!(err("hackbench:groups=0").contains("hackbench: groups: expected a count"));
    assert!(err("workqueue:chunk=5parsecs").contains("workqueue: chunk: expected a duration"));
    assert!(err("pipe:loops=10,colour=red").contains("unknown key(s): colour"));
    assert!(err("pipe:tasks=3").contains("pipe: tasks: expected a count 2..=2"));
    assert!(err("schbench:warmup=3s").contains("schbench: warmup: expected a warmup shorter than runtime"));
    assert!(err("nope").contains("unknown family 'nope'"));
    assert!(err("periodic:period=1ms,runtime=2ms").contains("runtime must be shorter"));
    // Keys the simulation reads for its cost model are accepted and ignored.
    assert!(run("hackbench:groups=1,fds=1,loops=1,write=3us,buf=8").is_ok());
}

#[test]
fn threads_carry_their_wl_names() {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = schedlab_wl::args::spawn("wl-hb-s0.0".into(), move || {
        // SAFETY: gettid has no arguments.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        tx.send(std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap()).unwrap();
    })
    .unwrap();
    h.join().unwrap();
    assert_eq!(rx.recv().unwrap().trim(), "wl-hb-s0.0");
}

#[test]
fn schbench_threads_are_named_for_filtering() {
    let h = std::thread::spawn(|| run("schbench:threads=2,runtime=400ms,sleep=0,operations=1,op=20us"));
    std::thread::sleep(std::time::Duration::from_millis(150));
    // A set: another test of this binary may run a schbench at the same time.
    let names: std::collections::BTreeSet<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .filter(|c| c.starts_with("wl-sb"))
        .collect();
    assert!(h.join().unwrap().is_ok());
    assert_eq!(names, ["wl-sb-m0", "wl-sb-w0.0", "wl-sb-w0.1"].map(String::from).into());
}
