//! Filters: compare a column to a constant (`==`, `!=`, `<`, `<=`, `>`, `>=`,
//! between) into a bitmap of `u64` words (bit `i % 64` of word `i / 64` is
//! row `i`), or `and` the result into an existing bitmap for chained
//! predicates. Only the `values.len().div_ceil(64)` words the rows need are
//! written: the last one's bits past the last row come out zero, and words
//! after it are left untouched (so a morsel can be filtered into the front
//! of a longer bitmap).
//!
//! Floats compare by IEEE rules: a `NaN` row passes only `!=`; `-0.0 == 0.0`.
//! Filters do not read validity: `and` the result with the validity bitmap
//! ([`crate::bitmap::and`]) to drop nulls.
//!
//! ```
//! use keel_kernels::filter::{self, CmpOp, Predicate};
//! let v = [5i64, 1, 9, 5, 7];
//! let mut bits = [0u64; 1];
//! filter::compare(&v, CmpOp::Ge, 5, &mut bits)?;
//! assert_eq!(bits[0], 0b11101);
//! // Chain: 5 <= v < 9.
//! filter::filter_and(&v, Predicate::Cmp(CmpOp::Lt, 9), &mut bits)?;
//! assert_eq!(bits[0], 0b11001);
//! filter::filter(&v, Predicate::Between(2, 7), &mut bits)?;
//! assert_eq!(bits[0], 0b11001);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::arch::mask::RowMask;
use crate::arch::scalar::filter as sc;
use crate::element::private::Token;
use crate::mask::{Mask, Resolved};
use crate::{Element, Error, Kernels, bitmap_words};

/// A comparison against a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `x == c`
    Eq,
    /// `x != c`
    Ne,
    /// `x < c`
    Lt,
    /// `x <= c`
    Le,
    /// `x > c`
    Gt,
    /// `x >= c`
    Ge,
}

impl CmpOp {
    /// Every operator.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
}

/// A predicate on one column: compare to a constant, or `lo <= x <= hi`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Predicate<T> {
    /// `x op c`
    Cmp(CmpOp, T),
    /// `lo <= x && x <= hi` (inclusive; empty when `lo > hi`).
    Between(T, T),
}

impl<T: Element> Predicate<T> {
    /// Whether `x` passes (IEEE comparison for floats). The scalar meaning
    /// every kernel must match.
    ///
    /// ```
    /// use keel_kernels::filter::{CmpOp, Predicate};
    /// assert!(Predicate::Between(2, 7).eval(7i32));
    /// assert!(!Predicate::Cmp(CmpOp::Lt, 3u8).eval(3));
    /// assert!(Predicate::Cmp(CmpOp::Eq, 0.0).eval(-0.0f64));
    /// assert!(Predicate::Cmp(CmpOp::Ne, 1.0).eval(f64::NAN));
    /// assert!(!Predicate::Cmp(CmpOp::Eq, f64::NAN).eval(f64::NAN));
    /// ```
    #[inline(always)]
    pub fn eval(&self, x: T) -> bool {
        let (op, c1, c2) = self.code();
        crate::arch::scalar::filter::holds(op, c1, c2, x)
    }

    /// `(op code, c1, c2)` for the leaves (`arch::scalar::filter::{EQ, ..,
    /// BETWEEN}`).
    pub(crate) fn code(&self) -> (u8, T, T) {
        use crate::arch::scalar::filter as f;
        match *self {
            Predicate::Cmp(op, c) => {
                let code = match op {
                    CmpOp::Eq => f::EQ,
                    CmpOp::Ne => f::NE,
                    CmpOp::Lt => f::LT,
                    CmpOp::Le => f::LE,
                    CmpOp::Gt => f::GT,
                    CmpOp::Ge => f::GE,
                };
                (code, c, c)
            }
            Predicate::Between(lo, hi) => (f::BETWEEN, lo, hi),
        }
    }
}

/// The level a filter of `rows` values of `T` runs at: `level`, except
/// that on CPUs where `cpu::dram_256` holds a column of 8-byte values of
/// `agg::SUM_STREAM_FROM_BYTES` or more runs the AVX2 leaf at the AVX-512
/// level (there, from DRAM, i64 and f64 `lt` read 14.3-15.8 GB/s at that
/// level's AVX2 leaf against 11.3-12.0 at its own; 4-byte and narrower
/// types were as fast or faster at their own). The same bits either way.
#[inline]
pub(crate) fn filter_level<T>(level: crate::cpu::Level, rows: usize) -> crate::cpu::Level {
    let size = core::mem::size_of::<T>();
    if size == 8 {
        crate::cpu::dram_level(level, rows.saturating_mul(size))
    } else {
        level
    }
}

/// Writes `pred(values[i])` into bit `i` of `out`; the last word's bits past
/// the rows are zeroed, later words left untouched. Errors if `out` has
/// fewer than `values.len().div_ceil(64)` words.
pub fn filter<T: Element>(values: &[T], pred: Predicate<T>, out: &mut [u64]) -> Result<(), Error> {
    Kernels::current().filter(values, pred, out)
}

/// `and`s `pred(values[i])` into bit `i` of `out` (chained predicates); the
/// last word's bits past the rows are zeroed, later words left untouched.
/// Errors as [`filter`].
pub fn filter_and<T: Element>(
    values: &[T],
    pred: Predicate<T>,
    out: &mut [u64],
) -> Result<(), Error> {
    Kernels::current().filter_and(values, pred, out)
}

/// How many rows pass `pred` among those `mask` counts (valid and
/// selected), in one pass that writes no bitmap: the same count as
/// [`filter`] then an `and` with the mask and a popcount.
///
/// ```
/// use keel_kernels::filter::{count_matching, CmpOp, Predicate};
/// use keel_kernels::mask::{Bits, Selection};
/// let v: Vec<u8> = (0..200).map(|i| (i % 7) as u8).collect();
/// let lt3 = Predicate::Cmp(CmpOp::Lt, 3);
/// assert_eq!(count_matching(&v, lt3, None)?, 87);
/// let first_half = [!0u64, !0 >> 28, 0, 0]; // rows 0..100
/// assert_eq!(count_matching(&v, lt3, Selection::Bitmap(Bits::new(&first_half)))?, 44);
/// assert_eq!(count_matching(&v, lt3, Selection::Rows(&[0, 1, 2, 3]))?, 3);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn count_matching<'a, T: Element>(
    values: &[T],
    pred: Predicate<T>,
    mask: impl Into<Mask<'a>>,
) -> Result<usize, Error> {
    Kernels::current().count_matching(values, pred, mask)
}

/// [`filter`] with `values[i] op c`.
pub fn compare<T: Element>(values: &[T], op: CmpOp, c: T, out: &mut [u64]) -> Result<(), Error> {
    Kernels::current().filter(values, Predicate::Cmp(op, c), out)
}

/// [`filter`] with `lo <= values[i] <= hi`.
///
/// ```
/// use keel_kernels::filter;
/// let v = [1.5f64, -2.0, 3.0, f64::NAN, 2.5];
/// let mut bits = [0u64; 1];
/// filter::between(&v, 1.5, 2.5, &mut bits)?;
/// assert_eq!(bits, [0b10001]);
/// filter::between(&v, 3.0, 1.0, &mut bits)?; // lo > hi: no row
/// assert_eq!(bits, [0]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn between<T: Element>(values: &[T], lo: T, hi: T, out: &mut [u64]) -> Result<(), Error> {
    Kernels::current().filter(values, Predicate::Between(lo, hi), out)
}

impl Kernels {
    /// [`filter`] at this level.
    ///
    /// ```
    /// use keel_kernels::{filter::Predicate, Kernels};
    /// let v = [5i64, 1, 9, 5, 7];
    /// let mut bits = [0u64; 1];
    /// for k in Kernels::supported() {
    ///     k.filter(&v, Predicate::Between(2, 7), &mut bits)?;
    ///     assert_eq!(bits, [0b11001]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn filter<T: Element>(
        self,
        values: &[T],
        pred: Predicate<T>,
        out: &mut [u64],
    ) -> Result<(), Error> {
        self.filter_impl(values, pred, out, false)
    }

    /// [`compare`] at this level.
    ///
    /// ```
    /// use keel_kernels::{filter::CmpOp, Kernels};
    /// let v: Vec<u16> = (0..100).collect();
    /// let mut bits = [0u64; 2];
    /// for k in Kernels::supported() {
    ///     k.compare(&v, CmpOp::Ge, 90, &mut bits)?;
    ///     assert_eq!(bits, [0, 0x3ff << 26]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn compare<T: Element>(
        self,
        values: &[T],
        op: CmpOp,
        c: T,
        out: &mut [u64],
    ) -> Result<(), Error> {
        self.filter_impl(values, Predicate::Cmp(op, c), out, false)
    }

    /// [`between`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let v = [0.5f32, -1.0, 2.0, f32::NAN];
    /// let mut bits = [0u64; 1];
    /// for k in Kernels::supported() {
    ///     k.between(&v, -1.0, 1.0, &mut bits)?;
    ///     assert_eq!(bits, [0b0011]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn between<T: Element>(
        self,
        values: &[T],
        lo: T,
        hi: T,
        out: &mut [u64],
    ) -> Result<(), Error> {
        self.filter_impl(values, Predicate::Between(lo, hi), out, false)
    }

    /// [`filter_and`] at this level.
    ///
    /// ```
    /// use keel_kernels::{filter::{CmpOp, Predicate}, Kernels};
    /// let v = [5i64, 1, 9, 5, 7];
    /// for k in Kernels::supported() {
    ///     let mut bits = [0b11101u64]; // v >= 5
    ///     k.filter_and(&v, Predicate::Cmp(CmpOp::Lt, 9), &mut bits)?;
    ///     assert_eq!(bits, [0b11001]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn filter_and<T: Element>(
        self,
        values: &[T],
        pred: Predicate<T>,
        out: &mut [u64],
    ) -> Result<(), Error> {
        self.filter_impl(values, pred, out, true)
    }

    fn filter_impl<T: Element>(
        self,
        values: &[T],
        pred: Predicate<T>,
        out: &mut [u64],
        and: bool,
    ) -> Result<(), Error> {
        crate::check_bitmap("output bitmap", values.len(), Some(out))?;
        let words = bitmap_words(values.len());
        let sink = if and { sc::AND } else { sc::WRITE };
        T::k_filter(
            Token(()),
            self,
            pred,
            values,
            &mut out[..words],
            sink,
            RowMask::ALL,
        );
        Ok(())
    }

    /// [`count_matching`] at this level.
    ///
    /// ```
    /// use keel_kernels::{filter::{CmpOp, Predicate}, mask::Selection, Kernels};
    /// let v: Vec<u8> = (0..200).map(|i| (i % 7) as u8).collect();
    /// let lt3 = Predicate::Cmp(CmpOp::Lt, 3);
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.count_matching(&v, lt3, None)?, 87);
    ///     assert_eq!(k.count_matching(&v, lt3, Selection::Rows(&[0, 1, 2, 3]))?, 3);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn count_matching<'a, T: Element>(
        self,
        values: &[T],
        pred: Predicate<T>,
        mask: impl Into<Mask<'a>>,
    ) -> Result<usize, Error> {
        Ok(match mask.into().resolve(values.len())? {
            Resolved::Bits(m) => T::k_filter(Token(()), self, pred, values, &mut [], sc::COUNT, m),
            Resolved::Rows(rows, m) => rows
                .iter()
                .filter(|&&r| m.get(r as usize) && pred.eval(values[r as usize]))
                .count(),
        })
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::mask::{Bits, Selection};

    /// Columns of 8-byte values past the switch of [`filter_level`] (on
    /// some CPUs the AVX2 leaf at the AVX-512 level) filter, `and` and
    /// count as the scalar twin at every level.
    #[test]
    fn filters_past_the_dram_switch_equal_the_scalar_twin() {
        let n = crate::agg::SUM_STREAM_FROM_BYTES / 8 + 37;
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let i: alloc::vec::Vec<i64> = (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 1_000_000) as i64
            })
            .collect();
        let u: alloc::vec::Vec<u64> = i.iter().map(|&x| x as u64).collect();
        let f: alloc::vec::Vec<f64> = i.iter().map(|&x| x as f64 / 7.0).collect();
        let words = n.div_ceil(64);
        let sel: alloc::vec::Vec<u64> = (0..words)
            .map(|b| 0xF0F0_FFFF_FFFF_0F7Eu64.rotate_left(b as u32))
            .collect();
        let sc = Kernels::scalar();
        fn check<T: Element>(k: Kernels, sc: Kernels, v: &[T], p: Predicate<T>, sel: &[u64]) {
            let l = k.level();
            let words = v.len().div_ceil(64);
            let (mut a, mut b) = (alloc::vec![0u64; words], alloc::vec![0u64; words]);
            k.filter(v, p, &mut a).unwrap();
            sc.filter(v, p, &mut b).unwrap();
            assert!(a == b, "filter {l}");
            let (mut a, mut b) = (sel.to_vec(), sel.to_vec());
            k.filter_and(v, p, &mut a).unwrap();
            sc.filter_and(v, p, &mut b).unwrap();
            assert!(a == b, "filter_and {l}");
            let (x, y) = (
                k.count_matching(v, p, Selection::Bitmap(Bits::new(sel)))
                    .unwrap(),
                sc.count_matching(v, p, Selection::Bitmap(Bits::new(sel)))
                    .unwrap(),
            );
            assert_eq!(x, y, "count_matching {l}");
        }
        for k in Kernels::supported() {
            check(k, sc, &i, Predicate::Cmp(CmpOp::Lt, 500_000), &sel);
            check(k, sc, &u, Predicate::Between(250_000, 750_000), &sel);
            check(k, sc, &f, Predicate::Cmp(CmpOp::Ge, 70_000.0), &sel);
        }
    }
}
