//! Aggregates over a column: sum, min, max, min-max and count. Each comes
//! plain (every row, infallible) and `_masked`, over the rows a
//! [`Mask`] counts: a validity bitmap (nulls skipped),
//! a selection (a bitmap or a selection vector), or both; bits past the
//! rows are ignored.
//!
//! * **Integer sums wrap.** Signed types sum into `i64` and unsigned ones
//!   into `u64`, so the 8-, 16- and 32-bit ones cannot overflow below 2^32
//!   rows; `i64`/`u64` sums wrap in two's complement, as Rust's
//!   `wrapping_add` (and arrow's `sum`) do. Wrapping addition is
//!   associative, so every level returns the same value. [`sum_checked`]
//!   reports overflow instead, in `i128`.
//! * **Float sums have one summation order at every level.** The rows split
//!   into two runs at `h = 64 · ⌊n / 128⌋`. Accumulator lane `i % L` (`L` =
//!   32 for `f64`, 64 for `f32`; [`Num::SUM_LANES`](crate::Num::SUM_LANES))
//!   adds the counted rows `i < h` in increasing order, lane `L + i % L` the
//!   rows `i >= h`, every lane starting from `-0.0`; the `2L` lanes are then
//!   folded pairwise (`lane[j] += lane[j + w]` for `w = L, L/2, .., 1`, so
//!   each lane first takes its twin of the other run). Every level keeps
//!   this order, so results are bit-identical across levels; the two runs
//!   give a 512-bit level eight independent add chains. A selection vector
//!   puts row `r` in the lane of row `r`, in the order listed.
//!   Error bound (standard recursive-summation analysis, `u` = unit
//!   roundoff, `k = ceil((n - h) / L) + log2(2L)`):
//!   `|sum - exact| <= k·u / (1 - k·u) · Σ|x_i|`, checked in the tests
//!   against a compensated (Neumaier) sum. A sum of `-0.0`s is `-0.0`; the
//!   sum of no rows is `+0.0`.
//! * **Min/max order**: integers by value; floats by [`f64::total_cmp`]:
//!   `-0.0 < +0.0`, a positive `NaN` is above `+inf` (so `max` returns it),
//!   a negative `NaN` is below `-inf`. `None` when no row counts.
//!
//! ```
//! use keel_kernels::agg;
//! let v = [3i32, -7, 12, 5];
//! assert_eq!(agg::sum(&v), 13i64);
//! assert_eq!(agg::min_max(&v), Some((-7, 12)));
//! let valid = [0b1011u64]; // row 2 is null
//! assert_eq!(agg::sum_masked(&v, Some(&valid[..]))?, 1i64);
//! assert_eq!(agg::min_max_masked(&v, Some(&valid[..]))?, Some((-7, 5)));
//! assert_eq!(agg::count_masked(&v, Some(&valid[..]))?, 3);
//! assert_eq!(agg::max::<f64>(&[]), None);
//! assert_eq!(agg::sum::<f64>(&[]).to_bits(), 0.0f64.to_bits());
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::arch::mask::RowMask;
use crate::arch::scalar::agg as sc;
use crate::element::private::Token;
use crate::mask::{Mask, Resolved};
use crate::{Element, Error, Kernels};

/// Sum of every value at the current level (see the module docs for
/// wrapping and float order).
pub fn sum<T: Element>(values: &[T]) -> T::Sum {
    Kernels::current().sum(values)
}

/// Sum of the rows `mask` counts. Errors if a bitmap is too short or a
/// selection vector names a row past the end.
pub fn sum_masked<'a, T: Element>(
    values: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<T::Sum, Error> {
    Kernels::current().sum_masked(values, mask)
}

/// Integer sum that reports overflow: `None` if the exact sum does not fit
/// `T::Sum`. (Floats never overflow in this sense; they return `Some`.)
///
/// ```
/// use keel_kernels::agg;
/// assert_eq!(agg::sum_checked(&[i64::MAX, 1]), None);
/// assert_eq!(agg::sum(&[i64::MAX, 1]), i64::MIN); // the wrapping sum
/// // Exact in between: only the total must fit.
/// assert_eq!(agg::sum_checked(&[i64::MAX, 1, -1]), Some(i64::MAX));
/// assert_eq!(agg::sum_checked(&[u8::MAX; 4]), Some(1020u64));
/// ```
pub fn sum_checked<T: Element>(values: &[T]) -> Option<T::Sum> {
    Kernels::current().sum_checked(values)
}

/// [`sum_checked`] of the rows `mask` counts.
///
/// ```
/// use keel_kernels::{agg, mask::Selection};
/// let v = [i64::MAX, 1, -5];
/// let valid = [0b101u64]; // row 1 is null
/// assert_eq!(agg::sum_checked_masked(&v, Some(&valid[..]))?, Some(i64::MAX - 5));
/// assert_eq!(agg::sum_checked_masked(&v, Selection::Rows(&[0, 1]))?, None);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn sum_checked_masked<'a, T: Element>(
    values: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<Option<T::Sum>, Error> {
    Kernels::current().sum_checked_masked(values, mask)
}

/// Minimum value, `None` for an empty column.
///
/// ```
/// use keel_kernels::agg;
/// assert_eq!(agg::min(&[3u16, 1, 2]), Some(1));
/// assert_eq!(agg::min::<i8>(&[]), None);
/// // Floats by `total_cmp`: -0.0 is below +0.0.
/// let m = agg::min(&[0.0f64, -0.0, 1.0]).unwrap();
/// assert_eq!(m.to_bits(), (-0.0f64).to_bits());
/// ```
pub fn min<T: Element>(values: &[T]) -> Option<T> {
    Kernels::current().min(values)
}

/// Minimum of the rows `mask` counts, `None` if there are none.
///
/// ```
/// use keel_kernels::agg;
/// let v = [4i64, -9, 7];
/// let valid = [0b101u64]; // row 1 is null
/// assert_eq!(agg::min_masked(&v, Some(&valid[..]))?, Some(4));
/// assert_eq!(agg::min_masked(&v, Some(&[0u64][..]))?, None);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn min_masked<'a, T: Element>(
    values: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<Option<T>, Error> {
    Kernels::current().min_masked(values, mask)
}

/// Maximum value, `None` for an empty column.
pub fn max<T: Element>(values: &[T]) -> Option<T> {
    Kernels::current().max(values)
}

/// Maximum of the rows `mask` counts, `None` if there are none.
///
/// ```
/// use keel_kernels::{agg, mask::Selection};
/// let v = [f64::INFINITY, 2.5, -1.0];
/// let valid = [0b110u64]; // row 0 is null
/// assert_eq!(agg::max_masked(&v, Some(&valid[..]))?, Some(2.5));
/// assert_eq!(agg::max_masked(&v, Selection::Rows(&[2, 0]))?, Some(f64::INFINITY));
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn max_masked<'a, T: Element>(
    values: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<Option<T>, Error> {
    Kernels::current().max_masked(values, mask)
}

/// `(min, max)` in one pass, `None` for an empty column.
pub fn min_max<T: Element>(values: &[T]) -> Option<(T, T)> {
    Kernels::current().min_max(values)
}

/// `(min, max)` of the rows `mask` counts in one pass, `None` if there are
/// none.
pub fn min_max_masked<'a, T: Element>(
    values: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<Option<(T, T)>, Error> {
    Kernels::current().min_max_masked(values, mask)
}

/// Number of rows `mask` counts (`values.len()` for [`Mask::ALL`]).
pub fn count_masked<'a, T: Element>(
    values: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<usize, Error> {
    Kernels::current().count_masked(values, mask)
}

impl Kernels {
    /// [`sum`] at this level.
    pub fn sum<T: Element>(self, values: &[T]) -> T::Sum {
        self.sum_bits(values, RowMask::ALL)
    }

    /// [`sum_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let valid = [0b1011u64]; // row 2 is null
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.sum_masked(&[3i32, -7, 12, 5], Some(&valid[..]))?, 1);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn sum_masked<'a, T: Element>(
        self,
        values: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<T::Sum, Error> {
        Ok(match mask.into().resolve(values.len())? {
            Resolved::Bits(m) => self.sum_bits(values, m),
            Resolved::Rows(r, m) => {
                let s = sc::sum_rows(values, r, m);
                empty_sum_is_positive::<T>(s, || sc::count_rows(r, m))
            }
        })
    }

    /// [`sum_checked`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.sum_checked(&[i64::MAX, 1]), None);
    ///     assert_eq!(k.sum_checked(&[u8::MAX; 3]), Some(765));
    /// }
    /// ```
    pub fn sum_checked<T: Element>(self, values: &[T]) -> Option<T::Sum> {
        let s = T::k_sum_checked(Token(()), self, values, None, RowMask::ALL)?;
        Some(empty_sum_is_positive::<T>(s, || values.len()))
    }

    /// [`sum_checked_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let (v, valid) = ([i64::MAX, 1], [0b01u64]); // row 1 is null
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.sum_checked_masked(&v, None)?, None);
    ///     assert_eq!(k.sum_checked_masked(&v, Some(&valid[..]))?, Some(i64::MAX));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn sum_checked_masked<'a, T: Element>(
        self,
        values: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<Option<T::Sum>, Error> {
        let (rows, m) = match mask.into().resolve(values.len())? {
            Resolved::Bits(m) => (None, m),
            Resolved::Rows(r, m) => (Some(r), m),
        };
        Ok(T::k_sum_checked(Token(()), self, values, rows, m).map(|s| {
            empty_sum_is_positive::<T>(s, || match rows {
                None => self.count_bits(m, values.len()),
                Some(r) => sc::count_rows(r, m),
            })
        }))
    }

    /// [`min`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.min(&[3u16, 1, 2]), Some(1));
    ///     assert_eq!(k.min::<f32>(&[]), None);
    /// }
    /// ```
    pub fn min<T: Element>(self, values: &[T]) -> Option<T> {
        self.min_max_bits(1, values, RowMask::ALL).map(|r| r.0)
    }

    /// [`min_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::{mask::Selection, Kernels};
    /// let v = [4i64, -9, 7];
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.min_masked(&v, Some(&[0b101u64][..]))?, Some(4));
    ///     assert_eq!(k.min_masked(&v, Selection::Rows(&[]))?, None);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn min_masked<'a, T: Element>(
        self,
        values: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<Option<T>, Error> {
        Ok(self.min_max_mode(1, values, mask.into())?.map(|r| r.0))
    }

    /// [`max`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.max(&[-3i8, -1, -2]), Some(-1));
    ///     assert_eq!(k.max(&[1.0f64, f64::INFINITY]), Some(f64::INFINITY));
    ///     assert_eq!(k.max::<u64>(&[]), None);
    /// }
    /// ```
    pub fn max<T: Element>(self, values: &[T]) -> Option<T> {
        self.min_max_bits(2, values, RowMask::ALL).map(|r| r.1)
    }

    /// [`max_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::{mask::Selection, Kernels};
    /// let v = [4i64, 9, 7];
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.max_masked(&v, Some(&[0b101u64][..]))?, Some(7));
    ///     assert_eq!(k.max_masked(&v, Selection::Rows(&[0, 0]))?, Some(4));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn max_masked<'a, T: Element>(
        self,
        values: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<Option<T>, Error> {
        Ok(self.min_max_mode(2, values, mask.into())?.map(|r| r.1))
    }

    /// [`min_max`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let v: Vec<i32> = (-50..50).collect();
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.min_max(&v), Some((-50, 49)));
    ///     assert_eq!(k.min_max::<u8>(&[]), None);
    /// }
    /// ```
    pub fn min_max<T: Element>(self, values: &[T]) -> Option<(T, T)> {
        self.min_max_bits(3, values, RowMask::ALL)
    }

    /// [`min_max_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let v = [3i32, -7, 12, 5];
    /// let valid = [0b1011u64]; // row 2 is null
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.min_max_masked(&v, Some(&valid[..]))?, Some((-7, 5)));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn min_max_masked<'a, T: Element>(
        self,
        values: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<Option<(T, T)>, Error> {
        self.min_max_mode(3, values, mask.into())
    }

    /// [`count_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::{mask::{Mask, Selection}, Kernels};
    /// let v = [0u8; 100];
    /// let valid = [!0u64 << 1, !0]; // row 0 is null
    /// let rows = Selection::Rows(&[0, 1, 1]); // row 1 twice
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.count_masked(&v, Mask::ALL)?, 100);
    ///     assert_eq!(k.count_masked(&v, Mask::valid(&valid))?, 99);
    ///     assert_eq!(k.count_masked(&v, Mask::valid(&valid).select(rows))?, 2);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn count_masked<'a, T: Element>(
        self,
        values: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<usize, Error> {
        Ok(match mask.into().resolve(values.len())? {
            Resolved::Bits(m) => self.count_bits(m, values.len()),
            Resolved::Rows(r, m) => sc::count_rows(r, m),
        })
    }

    fn sum_bits<T: Element>(self, values: &[T], m: RowMask<'_>) -> T::Sum {
        let s = T::k_sum(Token(()), self, values, m);
        empty_sum_is_positive::<T>(s, || self.count_bits(m, values.len()))
    }

    fn min_max_mode<T: Element>(
        self,
        mode: u8,
        values: &[T],
        mask: Mask<'_>,
    ) -> Result<Option<(T, T)>, Error> {
        Ok(match mask.resolve(values.len())? {
            Resolved::Bits(m) => self.min_max_bits(mode, values, m),
            Resolved::Rows(r, m) => {
                let res = match mode {
                    1 => sc::min_max_rows::<1, T>(values, r, m),
                    2 => sc::min_max_rows::<2, T>(values, r, m),
                    _ => sc::min_max_rows::<3, T>(values, r, m),
                };
                unless_empty(mode, res, || sc::count_rows(r, m))
            }
        })
    }

    fn min_max_bits<T: Element>(self, mode: u8, values: &[T], m: RowMask<'_>) -> Option<(T, T)> {
        let r = T::k_min_max(Token(()), self, mode, values, m);
        unless_empty(mode, r, || self.count_bits(m, values.len()))
    }

    /// Rows among the first `rows` that `m` counts (the masks were checked
    /// to cover them).
    pub(crate) fn count_bits(self, m: RowMask<'_>, rows: usize) -> usize {
        use crate::arch::scalar::bitmap as sb;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::bitmap as a2, avx512::bitmap as a5};
        crate::arch::dispatch!(
            self.level(),
            sb::count_mask,
            a2::count_mask,
            a5::count_mask,
            (m, rows)
        )
    }
}

/// Unmasked sums of 64-bit values of at least this many bytes run a loop of
/// 128-bit loads (the build's baseline, SSE2 on x86-64) at the AVX2 and
/// AVX-512 levels. Past the last-level cache (32 MiB on a Zen 3 or Zen 4
/// CCD; a column of twice that comes mostly from DRAM) the sum waits on
/// memory, and on the Zen 4 this was measured on narrower loads stream
/// faster: over a cache-aligned i64 column at 16 Mi rows the 512-bit leaf
/// read 16.6 GB/s, the 256-bit one 17.6, a 128-bit loop (arrow's) 21.7; at
/// 128 Mi rows 21.4, 24.0 and 25.3; f64 alike. From cache the 512-bit leaf
/// is as fast or faster, so the switch waits until past it. The sum is the
/// same (the same lanes in the same order). `bench/src/bin/sums.rs`
/// measures it. Under Miri, 4 KiB, so that the columns Miri runs take it.
/// Not on `cpu::wide_sums` CPUs (Intel): there the wider loads stream the
/// faster (see `cpu::wide_sums`), or on some models the 256-bit ones
/// ([`sum_level`]).
pub(crate) const SUM_STREAM_FROM_BYTES: usize = if cfg!(miri) { 4 << 10 } else { 64 << 20 };

/// Whether an unmasked sum of `rows` values of `T` at `level` runs the
/// 128-bit loop (see [`SUM_STREAM_FROM_BYTES`]): the loop chosen is the
/// fastest measured for the size, not the widest.
#[inline]
pub(crate) fn sum_streams<T>(level: crate::cpu::Level, rows: usize) -> bool {
    use crate::cpu::Level;
    matches!(level, Level::Avx2 | Level::Avx512)
        && core::mem::size_of::<T>() == 8
        && rows.saturating_mul(8) >= SUM_STREAM_FROM_BYTES
        && !crate::cpu::wide_sums()
}

/// On `cpu::l3_256` CPUs (Zen 4), unmasked sums of 8-byte values of at
/// least this many bytes run the AVX2 leaf at the AVX-512 level: from here
/// (half a Zen 4 CCD's L3) the 256-bit loads stream the L3 faster (see
/// `cpu::l3_256`). Under Miri 2 KiB, to stay below the stream switch's
/// 4 KiB there (Miri's plan never has the rule).
pub(crate) const SUM_256_FROM_BYTES: usize = if cfg!(miri) { 2 << 10 } else { 16 << 20 };

/// Unmasked 32-bit sums of fewer bytes than this run the unmasked loops
/// at the AVX2 and AVX-512 levels (`sum_all_i32`, `sum_all_u32`), larger
/// ones the masked leaves. On Zen 4 the unmasked loops summed L1 at
/// 0.65-0.73 of a wrapping loop where the masked leaves read 0.40-0.65
/// (AVX2: 1.53x on the median), but from 16 MiB on, run there, they read
/// 0.64-0.91 of the read pass where the masked leaves read 0.85-1.01
/// (`bench/results/2026-12-04-kernels-sums-32-zen4.md`).
/// Under Miri 1 KiB, so that the tests' short columns take both.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code)
)]
pub(crate) const UNMASKED_32_BELOW_BYTES: usize = if cfg!(miri) { 1 << 10 } else { 16 << 20 };

/// On `cpu::l3_256` CPUs (Zen 4), unmasked exact sums of 4-byte integers
/// of this many bytes up to [`SUM32_256_BELOW_BYTES`] run the AVX2 leaves
/// at the AVX-512 level: from a quarter to three quarters of a Zen 4 CCD's
/// L3, where the 256-bit loops read the column faster. Measured on an AMD
/// EPYC of family 25 model 17 (a 2-core KVM guest), AVX2 over AVX-512
/// speed, five runs each: 3 Mi `i32` rows (12 MiB) 1.07-1.22, 4 Mi
/// 0.88-1.12 (1.10 on the median), 5 Mi 0.98-1.11; 2 Mi 0.95-1.03, 6 Mi
/// 0.93-1.05 and 8 Mi 0.93-1.01 (`bench/results/2026-12-08-kernels-sums-32-l3-zen4.md`).
/// Under Miri 512 bytes to 1 KiB, so a test reaches the band.
pub(crate) const SUM32_256_FROM_BYTES: usize = if cfg!(miri) { 512 } else { 8 << 20 };

/// The end of the 4-byte band that starts at [`SUM32_256_FROM_BYTES`].
pub(crate) const SUM32_256_BELOW_BYTES: usize = if cfg!(miri) { 1 << 10 } else { 24 << 20 };

/// The level an unmasked sum of `rows` values of `T` runs at: on
/// `cpu::l3_256` CPUs, AVX2 in place of AVX-512 for 8-byte values from
/// [`SUM_256_FROM_BYTES`] on and for 4-byte integers from
/// [`SUM32_256_FROM_BYTES`] up to [`SUM32_256_BELOW_BYTES`]; for 4- and
/// 8-byte values, `cpu::dram_level`'s (on some CPUs the AVX2 leaf from
/// [`SUM_STREAM_FROM_BYTES`] on: there the 256-bit loads stream DRAM
/// faster than either 512-bit form); else `level`. The same lanes in the
/// same order, so the same sum.
#[inline]
pub(crate) fn sum_level<T: crate::arch::num::Num>(
    level: crate::cpu::Level,
    rows: usize,
) -> crate::cpu::Level {
    use crate::cpu::Level;
    let size = core::mem::size_of::<T>();
    let bytes = rows.saturating_mul(size);
    let band = match size {
        8 => bytes >= SUM_256_FROM_BYTES,
        4 => T::SUM_LANES == 1 && (SUM32_256_FROM_BYTES..SUM32_256_BELOW_BYTES).contains(&bytes),
        _ => false,
    };
    if band && level == Level::Avx512 && crate::cpu::l3_256() {
        Level::Avx2
    } else if size >= 4 {
        crate::cpu::dram_level(level, bytes)
    } else {
        level
    }
}

/// The kernels return (GREATEST, LEAST) for lanes with no counted value.
/// Only when the result equals that sentinel can no row have counted; count
/// then, never on the common path.
fn unless_empty<T: Element>(mode: u8, r: (T, T), count: impl FnOnce() -> usize) -> Option<(T, T)> {
    let sentinel = if mode & 1 != 0 {
        r.0.same(T::GREATEST)
    } else {
        r.1.same(T::LEAST)
    };
    if sentinel && count() == 0 {
        None
    } else {
        Some(r)
    }
}

/// The lanes start from `-0.0`, so a float sum is `-0.0` exactly when every
/// counted value was `-0.0` or none was: only then count, and give the sum of
/// no rows as `+0.0`.
#[inline]
fn empty_sum_is_positive<T: Element>(s: T::Sum, count: impl FnOnce() -> usize) -> T::Sum {
    if T::SUM_LANES > 1 && T::sum_same(s, T::SUM_ZERO) && count() == 0 {
        T::EMPTY_SUM
    } else {
        s
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;

    /// Columns just past [`SUM_STREAM_FROM_BYTES`] (unmasked: the 128-bit
    /// loop, or on `cpu::wide_sums` CPUs the wide loops) sum to the scalar
    /// twin's bits at every level, with and without nulls.
    #[test]
    fn sums_past_the_stream_switch_equal_the_scalar_twin() {
        let n = SUM_STREAM_FROM_BYTES / 8 + 37;
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let i: alloc::vec::Vec<i64> = (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as i64
            })
            .collect();
        // Sevenths round, so an add in another lane or order changes bits.
        let f: alloc::vec::Vec<f64> = i.iter().map(|&x| (x % 1_000_000) as f64 / 7.0).collect();
        let nulls: alloc::vec::Vec<u64> = (0..n.div_ceil(64))
            .map(|b| 0xF0F0_FFFF_FFFF_0F7Eu64.rotate_left(b as u32))
            .collect();
        let sc = Kernels::scalar();
        assert!(n * 8 >= SUM_STREAM_FROM_BYTES);
        // Past the stream switch, and (8-byte values) inside the band from
        // `SUM_256_FROM_BYTES` up to it, where `cpu::l3_256` CPUs run AVX2.
        let band = SUM_256_FROM_BYTES / 8 + 37;
        assert!(band * 8 >= SUM_256_FROM_BYTES && band * 8 < SUM_STREAM_FROM_BYTES);
        let b32 = SUM32_256_FROM_BYTES / 4 + 5;
        {
            use crate::cpu::Level::{Avx2, Avx512};
            // The bands' routing: each for its types and sizes only.
            let l3 = if crate::cpu::l3_256() { Avx2 } else { Avx512 };
            assert_eq!(sum_level::<i64>(Avx512, band), l3);
            assert_eq!(sum_level::<f64>(Avx512, band), l3);
            assert_eq!(sum_level::<i64>(Avx512, band - 38), Avx512);
            assert_eq!(sum_level::<f32>(Avx512, 2 * band), Avx512);
            // 4-byte integers in their own band, floats never.
            assert!(b32 * 4 < SUM32_256_BELOW_BYTES);
            assert_eq!(sum_level::<i32>(Avx512, b32), l3);
            assert_eq!(sum_level::<u32>(Avx512, b32), l3);
            assert_eq!(sum_level::<f32>(Avx512, b32), Avx512);
            assert_eq!(sum_level::<i32>(Avx512, b32 - 6), Avx512);
            assert_eq!(sum_level::<i32>(Avx512, SUM32_256_BELOW_BYTES / 4), Avx512);
            assert_eq!(sum_level::<i64>(Avx2, band), Avx2);
        }
        for len in [band, n] {
            let (i, f) = (&i[..len], &f[..len]);
            for k in Kernels::supported() {
                let l = k.level();
                assert_eq!(k.sum(i), sc.sum(i), "i64 {l} {len}");
                assert_eq!(k.sum(f).to_bits(), sc.sum(f).to_bits(), "f64 {l} {len}");
                let (a, b) = (
                    k.sum_masked(i, Some(&nulls[..])),
                    sc.sum_masked(i, Some(&nulls[..])),
                );
                assert_eq!(a.unwrap(), b.unwrap(), "masked i64 {l} {len}");
                let (a, b) = (
                    k.sum_masked(f, Some(&nulls[..])),
                    sc.sum_masked(f, Some(&nulls[..])),
                );
                assert_eq!(
                    a.unwrap().to_bits(),
                    b.unwrap().to_bits(),
                    "masked f64 {l} {len}"
                );
            }
        }
        // The other types `sum_level` routes, past the switch too: the
        // 32-bit columns have twice the rows.
        let u: alloc::vec::Vec<u64> = i.iter().map(|&x| x as u64).collect();
        let i32s: alloc::vec::Vec<i32> = i
            .iter()
            .flat_map(|&x| [x as i32, (x >> 32) as i32])
            .collect();
        let u32s: alloc::vec::Vec<u32> = i32s.iter().map(|&x| x as u32).collect();
        let f32s: alloc::vec::Vec<f32> = i32s.iter().map(|&x| (x % 100_000) as f32 / 7.0).collect();
        assert!(i32s.len() * 4 >= SUM_STREAM_FROM_BYTES);
        for k in Kernels::supported() {
            let l = k.level();
            assert_eq!(k.sum(&u), sc.sum(&u), "u64 {l}");
            assert_eq!(k.sum(&i32s), sc.sum(&i32s), "i32 {l}");
            assert_eq!(k.sum(&u32s), sc.sum(&u32s), "u32 {l}");
            assert_eq!(k.sum(&f32s).to_bits(), sc.sum(&f32s).to_bits(), "f32 {l}");
            // And in the 4-byte integers' band.
            assert_eq!(k.sum(&i32s[..b32]), sc.sum(&i32s[..b32]), "i32 band {l}");
            assert_eq!(k.sum(&u32s[..b32]), sc.sum(&u32s[..b32]), "u32 band {l}");
        }
    }

    /// The unmasked 32-bit sum loops (every unmasked sum of 64 rows or
    /// more at the AVX2 and AVX-512 levels; the AVX2 one with and without
    /// `cpu::avx2_prefetch`'s prefetch, which the plan picks by vendor) equal
    /// the scalar twin on every length 0..=300 at start offsets 0..8, with
    /// the extremes among the values, and stay exact past several flushes
    /// with every value at an extreme.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", feature = "std"))]
    #[test]
    fn unmasked_32_bit_sums_equal_the_scalar_twin() {
        use crate::arch::x86_64::{avx2::agg as a2, avx512::agg as a5};
        use crate::arch::{mask::RowMask, scalar::agg as sc};
        use crate::cpu::{Level, supported};
        if !supported(Level::Avx2) {
            std::eprintln!("no AVX2 on this CPU: the unmasked 32-bit loops were not run");
            return;
        }
        let avx512 = supported(Level::Avx512);
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let i32s: alloc::vec::Vec<i32> = (0..320)
            .map(|k| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                match k % 23 {
                    3 => i32::MIN,
                    5 => i32::MAX,
                    _ => s as i32,
                }
            })
            .collect();
        let u32s: alloc::vec::Vec<u32> = i32s.iter().map(|&x| x as u32).collect();
        let check = |vi: &[i32], vu: &[u32], what: &str| {
            let (ei, eu) = (sc::sum(vi, RowMask::ALL), sc::sum(vu, RowMask::ALL));
            // SAFETY: the CPU supports AVX2 (checked above).
            unsafe {
                assert_eq!(a2::sum_all_i32::<false>(vi), ei, "avx2 i32 {what}");
                assert_eq!(a2::sum_all_i32::<true>(vi), ei, "avx2 i32 prefetch {what}");
                assert_eq!(a2::sum_all_u32::<false>(vu), eu, "avx2 u32 {what}");
                assert_eq!(a2::sum_all_u32::<true>(vu), eu, "avx2 u32 prefetch {what}");
            }
            if avx512 {
                // SAFETY: the CPU supports AVX-512 (checked above).
                unsafe {
                    assert_eq!(a5::sum_all_i32_shift(vi), ei, "avx512 i32 {what}");
                    assert_eq!(a5::sum_all_i32(vi), ei, "avx512 i32 as planned {what}");
                    assert_eq!(a5::sum_all_u32(vu), eu, "avx512 u32 {what}");
                }
            }
        };
        for off in 0..8 {
            for len in 0..=300 {
                let r = off..off + len;
                check(
                    &i32s[r.clone()],
                    &u32s[r],
                    &std::format!("len {len} off {off}"),
                );
            }
        }
        // Past several flushes (2^20 rows each), all at one extreme.
        let n = (3 << 20) + 77;
        for x in [i32::MIN, i32::MAX, -1] {
            let (vi, vu) = (alloc::vec![x; n], alloc::vec![x as u32; n]);
            assert_eq!(sc::sum(&vi, RowMask::ALL), n as i64 * x as i64);
            assert_eq!(sc::sum(&vu, RowMask::ALL), n as u64 * u64::from(x as u32));
            check(&vi, &vu, &std::format!("{n} x {x}"));
        }
    }

    /// The wide unmasked leaves, which `cpu::wide_sums` picks on some CPUs
    /// only, equal the scalar twin on every length 0..=300 at start offsets
    /// 0..8, with `MIN` and `MAX` among the values (wrapping sums), on every
    /// CPU with AVX-512.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", feature = "std"))]
    #[test]
    fn wide_sums_equal_the_scalar_twin() {
        use crate::arch::{mask::RowMask, scalar::agg as sc, x86_64::avx512::agg as a5};
        if !crate::cpu::supported(crate::cpu::Level::Avx512) {
            std::eprintln!("no AVX-512 on this CPU: the wide sums were not run");
            return;
        }
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let i: alloc::vec::Vec<i64> = (0..320)
            .map(|k| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                match k % 37 {
                    3 => i64::MIN,
                    5 => i64::MAX,
                    _ => s as i64,
                }
            })
            .collect();
        let u: alloc::vec::Vec<u64> = i.iter().map(|&x| x as u64).collect();
        let i32s: alloc::vec::Vec<i32> = i
            .iter()
            .enumerate()
            .map(|(k, &x)| match k % 41 {
                7 => i32::MIN,
                9 => i32::MAX,
                _ => x as i32,
            })
            .collect();
        let vnni = std::is_x86_feature_detected!("avx512vnni");
        for off in 0..8 {
            for len in 0..=300 {
                let (vi, vu) = (&i[off..off + len], &u[off..off + len]);
                // SAFETY: the CPU supports AVX-512 (checked above).
                let (a, b) = unsafe { (a5::sum_all_i64(vi), a5::sum_all_u64(vu)) };
                assert_eq!(a, sc::sum(vi, RowMask::ALL), "i64 len {len} off {off}");
                assert_eq!(b, sc::sum(vu, RowMask::ALL), "u64 len {len} off {off}");
                let v32 = &i32s[off..off + len];
                // SAFETY: as above.
                let c = unsafe { a5::sum_all_i32(v32) };
                assert_eq!(c, sc::sum(v32, RowMask::ALL), "i32 len {len} off {off}");
                if vnni {
                    // SAFETY: the CPU has AVX-512 and VNNI (checked above).
                    let d = unsafe { a5::sum_all_i32_vnni(v32) };
                    assert_eq!(d, c, "i32 vnni len {len} off {off}");
                }
            }
        }
        // Past several flushes (2^20 rows each), all at one extreme: exact.
        let n = (3 << 20) + 77;
        for x in [i32::MIN, i32::MAX, -1] {
            let v = alloc::vec![x; n];
            // SAFETY: as above.
            assert_eq!(unsafe { a5::sum_all_i32(&v) }, n as i64 * x as i64, "{x}");
            if vnni {
                // SAFETY: as above.
                assert_eq!(unsafe { a5::sum_all_i32_vnni(&v) }, n as i64 * x as i64);
            }
        }
    }
}
