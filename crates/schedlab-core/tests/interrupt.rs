//! A stop request ends a run with `Interrupted`. In its own test binary
//! because the stop flag is process-global: set in the shared test process,
//! it would stop other tests' runs.

use schedlab_core::api::{clear_stop, request_stop, run};
use schedlab_core::testkit::{inline_source, run_spec, TWO_LLC};
use schedlab_core::SchedlabError;

#[test]
fn stop_request_interrupts_and_clear_lets_runs_finish() {
    let w = "hackbench:groups=2,fds=4,loops=400";
    let before = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 7, true)).unwrap();
    request_stop();
    let err = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 7, true)).unwrap_err();
    assert!(matches!(err, SchedlabError::Interrupted { events } if events == 4096), "{err}");
    assert!(!err.is_usage());
    clear_stop();
    // With no stop requested the check changes nothing: same bytes as before.
    let after = run(&run_spec(inline_source(TWO_LLC), w, "eevdf", 7, true)).unwrap();
    assert_eq!(serde_json::to_string(&before).unwrap(), serde_json::to_string(&after).unwrap());
    assert_eq!(before.trace, after.trace);
}
