//! Scalar twins of the filters.

use crate::Element;
use crate::filter::Predicate;

/// Writes (or, with `AND`, ands) `pred(v[i])` into bit `i` of `out`, which
/// has exactly `v.len().div_ceil(64)` words; the last word's spare bits end
/// up zero.
pub(crate) fn filter<const AND: bool, T: Element>(pred: Predicate<T>, v: &[T], out: &mut [u64]) {
    for (o, chunk) in out.iter_mut().zip(v.chunks(64)) {
        let mut w = 0u64;
        for (j, &x) in chunk.iter().enumerate() {
            w |= (pred.eval(x) as u64) << j;
        }
        *o = if AND { *o & w } else { w };
    }
}

/// [`filter`] with the predicate given as the leaves take it: `OP` 0..=5 is
/// [`crate::filter::CmpOp::ALL`]`[OP]` against `c1`, 6 is `c1 <= x <= c2`.
pub(crate) fn filter_code<const OP: u8, const AND: bool, T: Element>(
    v: &[T],
    c1: T,
    c2: T,
    out: &mut [u64],
) {
    let pred = match OP {
        0..=5 => Predicate::Cmp(crate::filter::CmpOp::ALL[OP as usize], c1),
        _ => Predicate::Between(c1, c2),
    };
    filter::<AND, T>(pred, v, out)
}
