//! Zero-copy adapters over arrow-rs arrays (feature `arrow`).
//!
//! An arrow `PrimitiveArray` is a values buffer and an optional
//! `NullBuffer`, both possibly sliced (an offset into shared buffers). These
//! adapters hand the kernels the values as a slice and the nulls as
//! [`Bits`] at their bit offset, so a sliced, null-bearing array is read
//! where it lies, with nothing copied. The results follow arrow's compute
//! kernels: an aggregate of an array without a valid row is `None`, and a
//! comparison's result is null where its input is.
//!
//! ```
//! use arrow_array::{Array, Int64Array};
//! use keel_kernels::arrow;
//! let a = Int64Array::from(vec![Some(5), None, Some(-3), Some(9), None]);
//! let s = a.slice(1, 3); // None, -3, 9
//! assert_eq!(arrow::sum(&s)?, Some(6));
//! assert_eq!(arrow::min_max(&s)?, Some((-3, 9)));
//! assert_eq!(arrow::count_valid(&s), 2);
//! let lt = arrow::compare(&s, keel_kernels::filter::CmpOp::Lt, 0)?;
//! assert_eq!(lt.iter().collect::<Vec<_>>(), vec![None, Some(true), Some(false)]);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use arrow_array::{Array, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};

use crate::filter::{CmpOp, Predicate};
use crate::mask::{Bits, Mask, Selection};
use crate::{Element, Error, Kernels};

/// The bits of a `BooleanBuffer` (or a `NullBuffer`'s), at its offset.
pub fn bits(b: &BooleanBuffer) -> Bits<'_> {
    Bits::from_bytes(b.values(), b.offset())
}

/// An array's validity as [`Bits`], `None` when it has no null buffer.
pub fn validity(a: &dyn Array) -> Option<Bits<'_>> {
    a.nulls().map(|n| bits(n.inner()))
}

/// The [`Mask`] of an array's valid rows.
pub fn mask(a: &dyn Array) -> Mask<'_> {
    Mask {
        validity: validity(a),
        selection: Selection::All,
    }
}

/// A boolean array as a selection (its true rows); errors if it has nulls
/// (arrow's `filter` treats them as false; and the array with its
/// `NullBuffer` first, as `arrow::compute::prep_null_mask_filter` does).
pub fn selection(b: &BooleanArray) -> Result<Selection<'_>, Error> {
    if b.null_count() > 0 {
        return Err(Error::InvalidArgument {
            what: "arrow selection: a boolean array with nulls (and the nulls in first)",
        });
    }
    Ok(Selection::Bitmap(bits(b.values())))
}

/// Sum of the valid values, `None` if no value is valid (as arrow's
/// `sum`); integer sums wrap, as there.
pub fn sum<T>(a: &PrimitiveArray<T>) -> Result<Option<<T::Native as crate::Num>::Sum>, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    if a.null_count() == a.len() {
        return Ok(None);
    }
    Kernels::current().sum_masked(a.values(), mask(a)).map(Some)
}

/// Minimum of the valid values (min/max order), `None` if none is valid.
pub fn min<T>(a: &PrimitiveArray<T>) -> Result<Option<T::Native>, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    Kernels::current().min_masked(a.values(), mask(a))
}

/// Maximum of the valid values, as [`min`].
pub fn max<T>(a: &PrimitiveArray<T>) -> Result<Option<T::Native>, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    Kernels::current().max_masked(a.values(), mask(a))
}

/// The lowest and highest value of an array's type.
pub type Extremes<T> = (
    <T as ArrowPrimitiveType>::Native,
    <T as ArrowPrimitiveType>::Native,
);

/// `(min, max)` of the valid values in one pass.
pub fn min_max<T>(a: &PrimitiveArray<T>) -> Result<Option<Extremes<T>>, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    Kernels::current().min_max_masked(a.values(), mask(a))
}

/// Valid rows of an array.
pub fn count_valid(a: &dyn Array) -> usize {
    a.len() - a.null_count()
}

/// Rows passing `pred` among the valid ones, fused (no bitmap written).
pub fn count_matching<T>(a: &PrimitiveArray<T>, pred: Predicate<T::Native>) -> Result<usize, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    Kernels::current().count_matching(a.values(), pred, mask(a))
}

/// `x op c` as a `BooleanArray` whose nulls are the input's (as arrow's
/// `cmp` kernels give it); the bitmap is keel's output words, moved into an
/// arrow buffer without a copy.
pub fn compare<T>(a: &PrimitiveArray<T>, op: CmpOp, c: T::Native) -> Result<BooleanArray, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    filter(a, Predicate::Cmp(op, c))
}

/// `pred` as a `BooleanArray`, as [`compare`].
pub fn filter<T>(a: &PrimitiveArray<T>, pred: Predicate<T::Native>) -> Result<BooleanArray, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Element,
{
    let n = a.len();
    let mut words = alloc::vec![0u64; n.div_ceil(64)];
    Kernels::current().filter(a.values(), pred, &mut words)?;
    let values = BooleanBuffer::new(Buffer::from_vec(words), 0, n);
    let nulls: Option<NullBuffer> = a.nulls().cloned();
    Ok(BooleanArray::new(values, nulls))
}
