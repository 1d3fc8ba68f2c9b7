//! Aggregates over a column: sum, min, max, min-max and count, each with an
//! optional validity bitmap (bit `i % 64` of word `i / 64` set = row `i`
//! valid; nulls are skipped; words past the rows are ignored).
//!
//! * **Integer sums wrap.** `i32` sums into `i64` and `u32` into `u64`, so
//!   they cannot overflow below 2^32 rows; `i64`/`u64` sums wrap in two's
//!   complement, as Rust's `wrapping_add` (and arrow's `sum`) do. Wrapping
//!   addition is associative, so every level returns the same value.
//!   [`sum_checked`] reports overflow instead, in `i128`.
//! * **Float sums have one summation order at every level.** Accumulator
//!   lane `i % L` (`L` = 32 for `f64`, 64 for `f32`; [`Num::SUM_LANES`](crate::Num::SUM_LANES))
//!   adds the valid rows `i` in increasing order, starting from `-0.0`; the
//!   lanes are then folded pairwise (`lane[j] += lane[j + w]` for
//!   `w = L/2, L/4, .., 1`). Every level keeps this order, so results are
//!   bit-identical across levels. Error bound (standard recursive-summation
//!   analysis, `u` = unit roundoff, `k = ceil(n / L) + log2(L)`):
//!   `|sum - exact| <= k·u / (1 - k·u) · Σ|x_i|`, checked in the tests against
//!   a compensated (Neumaier) sum.
//! * **Min/max order**: integers by value; floats by [`f64::total_cmp`]:
//!   `-0.0 < +0.0`, a positive `NaN` is above `+inf` (so `max` returns it),
//!   a negative `NaN` is below `-inf`. `None` when no row is valid.
//!
//! ```
//! use keel_kernels::agg;
//! let v = [3i32, -7, 12, 5];
//! let valid = [0b1011u64]; // row 2 is null
//! assert_eq!(agg::sum(&v, Some(&valid))?, 1i64);
//! assert_eq!(agg::min_max(&v, Some(&valid))?, Some((-7, 5)));
//! assert_eq!(agg::count(&v, Some(&valid))?, 3);
//! assert_eq!(agg::max::<f64>(&[], None)?, None);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::element::private::Token;
use crate::{Element, Error, Kernels, check_bitmap};

/// Sum of the valid values at the current level (see the module docs for
/// wrapping and float order). Errors if `validity` is too short.
pub fn sum<T: Element>(values: &[T], validity: Option<&[u64]>) -> Result<T::Sum, Error> {
    Kernels::current().sum(values, validity)
}

/// Integer sum that reports overflow: `Ok(None)` if the exact sum does not
/// fit `T::Sum`. (Floats never overflow in this sense; they return `Some`.)
pub fn sum_checked<T: Element>(
    values: &[T],
    validity: Option<&[u64]>,
) -> Result<Option<T::Sum>, Error> {
    Kernels::current().sum_checked(values, validity)
}

/// Minimum of the valid values, `None` if there are none.
pub fn min<T: Element>(values: &[T], validity: Option<&[u64]>) -> Result<Option<T>, Error> {
    Kernels::current().min(values, validity)
}

/// Maximum of the valid values, `None` if there are none.
pub fn max<T: Element>(values: &[T], validity: Option<&[u64]>) -> Result<Option<T>, Error> {
    Kernels::current().max(values, validity)
}

/// `(min, max)` of the valid values in one pass, `None` if there are none.
pub fn min_max<T: Element>(
    values: &[T],
    validity: Option<&[u64]>,
) -> Result<Option<(T, T)>, Error> {
    Kernels::current().min_max(values, validity)
}

/// Number of valid rows (`values.len()` without a bitmap).
pub fn count<T: Element>(values: &[T], validity: Option<&[u64]>) -> Result<usize, Error> {
    Kernels::current().count(values, validity)
}

impl Kernels {
    /// [`sum`] at this level.
    pub fn sum<T: Element>(self, values: &[T], validity: Option<&[u64]>) -> Result<T::Sum, Error> {
        check_bitmap("validity", values.len(), validity)?;
        Ok(T::k_sum(Token(()), self, values, validity))
    }

    /// [`sum_checked`] at this level.
    pub fn sum_checked<T: Element>(
        self,
        values: &[T],
        validity: Option<&[u64]>,
    ) -> Result<Option<T::Sum>, Error> {
        check_bitmap("validity", values.len(), validity)?;
        Ok(T::k_sum_checked(Token(()), self, values, validity))
    }

    /// [`min`] at this level.
    pub fn min<T: Element>(
        self,
        values: &[T],
        validity: Option<&[u64]>,
    ) -> Result<Option<T>, Error> {
        Ok(self.min_max_mode(1, values, validity)?.map(|r| r.0))
    }

    /// [`max`] at this level.
    pub fn max<T: Element>(
        self,
        values: &[T],
        validity: Option<&[u64]>,
    ) -> Result<Option<T>, Error> {
        Ok(self.min_max_mode(2, values, validity)?.map(|r| r.1))
    }

    /// [`min_max`] at this level.
    pub fn min_max<T: Element>(
        self,
        values: &[T],
        validity: Option<&[u64]>,
    ) -> Result<Option<(T, T)>, Error> {
        self.min_max_mode(3, values, validity)
    }

    /// [`count`] at this level.
    pub fn count<T: Element>(self, values: &[T], validity: Option<&[u64]>) -> Result<usize, Error> {
        check_bitmap("validity", values.len(), validity)?;
        Ok(match validity {
            None => values.len(),
            Some(b) => self.popcount_unchecked(b, values.len()),
        })
    }

    fn min_max_mode<T: Element>(
        self,
        mode: u8,
        values: &[T],
        validity: Option<&[u64]>,
    ) -> Result<Option<(T, T)>, Error> {
        check_bitmap("validity", values.len(), validity)?;
        let r = T::k_min_max(Token(()), self, mode, values, validity);
        // The kernels return (GREATEST, LEAST) for lanes with no valid value.
        // Only when the result equals that sentinel can the input be empty
        // of valid rows; count then, never on the common path.
        let sentinel = if mode & 1 != 0 {
            r.0.same(T::GREATEST)
        } else {
            r.1.same(T::LEAST)
        };
        if sentinel && self.count(values, validity)? == 0 {
            return Ok(None);
        }
        Ok(Some(r))
    }
}
