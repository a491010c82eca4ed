//! Per-task and per-CPU records that a real trace may name late.

/// `v[i]`, `v` grown first with copies of `fill` when a real trace names an
/// index past its end (a simulation's records are sized at the start): on
/// the usual path one test, the index's own, where growing and then
/// indexing made two. A function of the vector, so that a caller keeps its
/// other fields borrowable beside the record.
#[inline(always)]
pub(super) fn grown_at<'a, T: Clone>(v: &'a mut Vec<T>, i: usize, fill: &T) -> &'a mut T {
    if i < v.len() {
        return &mut v[i];
    }
    grow(v, i, fill)
}

/// [`grown_at`]'s growth, out of the usual path (amortised: a trace
/// discovers tasks and CPUs as it goes).
#[cold]
#[inline(never)]
fn grow<'a, T: Clone>(v: &'a mut Vec<T>, i: usize, fill: &T) -> &'a mut T {
    v.resize(i + 1, fill.clone());
    &mut v[i]
}

#[cfg(test)]
mod tests {
    use super::grown_at;

    #[test]
    fn an_index_past_the_end_grows_the_vector_with_the_fill() {
        let mut v = vec![1u32, 2];
        *grown_at(&mut v, 1, &0) += 10;
        assert_eq!(v, [1, 12]);
        *grown_at(&mut v, 4, &7) = 5;
        assert_eq!(v, [1, 12, 7, 7, 5]);
    }
}
