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
    let b = json("barrier:threads=2,iterations=200,delay=5us,spin=10us");
    assert!(b["iterations_per_s"].as_f64().unwrap() > 0.0);
    let r = json("periodic:count=1,period=5ms,runtime=500us,duration=30ms");
    assert!(r["max_lateness_us"].as_f64().unwrap() >= 0.0);
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
