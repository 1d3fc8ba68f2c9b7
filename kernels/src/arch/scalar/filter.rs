//! Scalar twins of the filters, and the predicate codes every filter leaf
//! takes as its `OP` parameter.

/// `x == c1`
pub(crate) const EQ: u8 = 0;
/// `x != c1`
pub(crate) const NE: u8 = 1;
/// `x < c1`
pub(crate) const LT: u8 = 2;
/// `x <= c1`
pub(crate) const LE: u8 = 3;
/// `x > c1`
pub(crate) const GT: u8 = 4;
/// `x >= c1`
pub(crate) const GE: u8 = 5;
/// `c1 <= x && x <= c2`
pub(crate) const BETWEEN: u8 = 6;

/// Whether `x` passes predicate `op` against `c1` (and `c2` for
/// [`BETWEEN`]), by IEEE comparison for floats. Codes past [`BETWEEN`] are
/// between too.
#[inline(always)]
pub(crate) fn holds<T: PartialOrd>(op: u8, c1: T, c2: T, x: T) -> bool {
    match op {
        EQ => x == c1,
        NE => x != c1,
        LT => x < c1,
        LE => x <= c1,
        GT => x > c1,
        GE => x >= c1,
        _ => c1 <= x && x <= c2,
    }
}

/// Writes (or, with `AND`, ands) predicate `OP` of `v[i]` into bit `i` of
/// `out`, which has exactly `v.len().div_ceil(64)` words; the last word's
/// spare bits end up zero.
pub(crate) fn filter_code<const OP: u8, const AND: bool, T: PartialOrd + Copy>(
    v: &[T],
    c1: T,
    c2: T,
    out: &mut [u64],
) {
    for (o, chunk) in out.iter_mut().zip(v.chunks(64)) {
        let mut w = 0u64;
        for (j, &x) in chunk.iter().enumerate() {
            w |= (holds(OP, c1, c2, x) as u64) << j;
        }
        *o = if AND { *o & w } else { w };
    }
}
