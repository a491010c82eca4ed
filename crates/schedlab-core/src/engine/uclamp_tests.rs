use super::*;

fn se(v: u32) -> UclampSe {
    UclampSe::new(v, true)
}

#[test]
fn buckets_are_the_kernels_five() {
    assert_eq!(UCLAMP_BUCKET_DELTA, 205);
    assert_eq!([0, 204, 205, 819, 820, 1024].map(uclamp_bucket_id), [0, 0, 1, 3, 4, 4]);
}

#[test]
fn rq_clamp_is_the_max_of_its_runnable_tasks() {
    let mut rq = RqUclamp::default();
    let (mut a, mut b, mut c) = (se(100), se(300), se(900));
    rq.inc_id(UCLAMP_MIN, &mut a);
    rq.inc_id(UCLAMP_MIN, &mut b);
    rq.inc_id(UCLAMP_MIN, &mut c);
    assert_eq!(rq.value[UCLAMP_MIN], 900);
    rq.dec_id(UCLAMP_MIN, &mut c);
    assert_eq!(rq.value[UCLAMP_MIN], 300, "the next highest bucket");
    rq.dec_id(UCLAMP_MIN, &mut b);
    rq.dec_id(UCLAMP_MIN, &mut a);
    assert_eq!(rq.value[UCLAMP_MIN], 0, "an empty runqueue has no minimum");
    assert_eq!(rq.counted(UCLAMP_MIN), 0);
    // A second dequeue of an inactive clamp is a no-op.
    rq.dec_id(UCLAMP_MIN, &mut a);
    assert_eq!(rq.counted(UCLAMP_MIN), 0);
}

#[test]
fn a_bucket_keeps_its_highest_value_until_it_empties() {
    // 300 and 350 share bucket 1: removing 350 leaves the bucket at 350
    // ("possibly overboost some RUNNABLE tasks in the same bucket").
    let mut rq = RqUclamp::default();
    let (mut a, mut b) = (se(300), se(350));
    rq.inc_id(UCLAMP_MIN, &mut a);
    rq.inc_id(UCLAMP_MIN, &mut b);
    rq.dec_id(UCLAMP_MIN, &mut b);
    assert_eq!(rq.value[UCLAMP_MIN], 350);
    rq.dec_id(UCLAMP_MIN, &mut a);
    assert_eq!(rq.value[UCLAMP_MIN], 0);
}

#[test]
fn an_idle_rq_holds_its_last_max_until_the_next_task() {
    let mut rq = RqUclamp::default();
    assert!(rq.idle);
    let mut a = se(200);
    rq.inc_id(UCLAMP_MAX, &mut a);
    rq.idle = false;
    assert_eq!(rq.value[UCLAMP_MAX], 200, "the first task after idle sets the maximum");
    rq.dec_id(UCLAMP_MAX, &mut a);
    assert!(rq.idle);
    assert_eq!(rq.value[UCLAMP_MAX], 200, "held while idle");
    let mut b = se(700);
    rq.inc_id(UCLAMP_MAX, &mut b);
    assert_eq!(rq.value[UCLAMP_MAX], 700);
    let mut c = se(100);
    rq.idle = false;
    rq.inc_id(UCLAMP_MAX, &mut c);
    assert_eq!(rq.value[UCLAMP_MAX], 700, "max aggregation once busy");
}

#[test]
fn task_defaults_follow_the_policy() {
    let fair = TaskUclamp::new(None, None, false);
    assert_eq!((fair.eff_value(UCLAMP_MIN), fair.eff_value(UCLAMP_MAX)), (0, 1024));
    let mut rt = TaskUclamp::new(None, Some(512), true);
    assert_eq!((rt.eff_value(UCLAMP_MIN), rt.eff_value(UCLAMP_MAX)), (UCLAMP_MIN_RT_DEFAULT, 512));
    rt.policy_changed(false);
    assert_eq!(rt.eff_value(UCLAMP_MIN), 0, "a fair task has no default minimum");
    let mut asked = TaskUclamp::new(Some(300), None, false);
    asked.policy_changed(true);
    assert_eq!(asked.eff_value(UCLAMP_MIN), 300, "a requested minimum stays");
}
