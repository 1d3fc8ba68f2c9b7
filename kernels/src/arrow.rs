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
//! // arrow's `filter` and `take`, nulls following the rows.
//! let keep = arrow::filter_by(&s, &lt)?; // lt is null at s's null: not kept
//! assert_eq!(keep.iter().collect::<Vec<_>>(), vec![Some(-3)]);
//! let idx = arrow_array::UInt32Array::from(vec![Some(2), None, Some(0)]);
//! let t = arrow::take(&s, &idx)?;
//! assert_eq!(t.iter().collect::<Vec<_>>(), vec![Some(9), None, None]);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use alloc::vec::Vec;
use arrow_array::{Array, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};

use crate::arch::mask::Bitmap;
use crate::filter::{CmpOp, Predicate};
use crate::gather::{Index, Value};
use crate::mask::{Bits, Mask, Selection};
use crate::{Element, Error, Kernels};

/// The bits of a `BooleanBuffer` (or a `NullBuffer`'s), at its offset. As
/// `u64` words where the bytes are 8-byte aligned and whole words cover
/// the bits (arrow allocates buffers 64-byte aligned; on a little-endian
/// target the words are the same bits), so the kernels take their
/// word-aligned paths; else as bytes.
pub fn bits(b: &BooleanBuffer) -> Bits<'_> {
    let bytes = b.values();
    if cfg!(target_endian = "little") {
        // SAFETY: every bit pattern is a valid `u64`; `align_to` gives the
        // aligned middle of the same memory, for the same borrow.
        let (head, words, _) = unsafe { bytes.align_to::<u64>() };
        if head.is_empty() && words.len() * 64 >= b.offset() + b.len() {
            return Bits::with_offset(words, b.offset());
        }
    }
    Bits::from_bytes(bytes, b.offset())
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

/// The rows of `a` where `predicate` is true, in order, as arrow's
/// `filter` (`arrow_select::filter::filter`) gives them: a null in the
/// predicate keeps nothing, a null row of `a` that is kept stays null. The
/// values are [`take_masked`](crate::gather::take_masked) with the
/// predicate as the selection (its nulls as validity), read where both
/// arrays lie (sliced or not); `a`'s nulls follow them through
/// [`bitmap::compact`](crate::bitmap::compact). As in arrow, the result
/// has no null buffer when no kept row is null. Errors if the lengths
/// differ.
pub fn filter_by<T>(
    a: &PrimitiveArray<T>,
    predicate: &BooleanArray,
) -> Result<PrimitiveArray<T>, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Value,
{
    let n = a.len();
    if predicate.len() != n {
        return Err(Error::LengthMismatch {
            what: "filter predicate",
            expected: n,
            actual: predicate.len(),
        });
    }
    let keep = Mask {
        validity: validity(predicate),
        selection: Selection::Bitmap(bits(predicate.values())),
    };
    let k = Kernels::current();
    let values = k.take_masked(a.values(), keep)?;
    let nulls = match validity(a) {
        Some(v) if a.null_count() > 0 => {
            let rows = values.len();
            let mut words = alloc::vec![0u64; rows.div_ceil(64)];
            k.compact(v, n, keep, &mut words)?;
            some_nulls(words, rows)
        }
        _ => None,
    };
    Ok(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
        .with_data_type(a.data_type().clone()))
}

/// `a[indices[i]]` for every index, as arrow's `take`
/// (`arrow_select::take::take`) gives it: a null index, or an index to a
/// null row of `a`, gives a null. The values are
/// [`take`](crate::gather::take) (a null index's value is read as row 0);
/// with nulls on either side their bits are gathered row by row. Errors
/// (nothing returned) for a valid index past `a`'s end.
pub fn take<T, I>(
    a: &PrimitiveArray<T>,
    indices: &PrimitiveArray<I>,
) -> Result<PrimitiveArray<T>, Error>
where
    T: ArrowPrimitiveType,
    T::Native: Value,
    I: ArrowPrimitiveType,
    I::Native: Index + Into<u64>,
{
    let k = Kernels::current();
    let idx: &[I::Native] = indices.values();
    let zeroed: Vec<I::Native>;
    let idx = match indices.nulls().filter(|nn| nn.null_count() > 0) {
        // Every index null: null rows, whatever `a` holds (none, maybe).
        Some(nn) if nn.null_count() == idx.len() => {
            let values = alloc::vec![T::Native::default(); idx.len()];
            return Ok(
                PrimitiveArray::<T>::new(ScalarBuffer::from(values), Some(nn.clone()))
                    .with_data_type(a.data_type().clone()),
            );
        }
        // A null index may hold any value: row 0 stands in for it (any
        // row would do; its bit is null below). With a valid index there
        // is a row 0, or the take errors.
        Some(nn) => {
            zeroed = idx
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    if nn.is_valid(i) {
                        x
                    } else {
                        I::Native::default()
                    }
                })
                .collect();
            &zeroed[..]
        }
        None => idx,
    };
    let values = k.take(a.values(), idx)?;
    let (av, iv) = (
        validity(a).filter(|_| a.null_count() > 0),
        validity(indices).filter(|_| indices.null_count() > 0),
    );
    let nulls = if av.is_some() || iv.is_some() {
        // A word of 64 rows at a time: the indexed rows' bits of `a`'s
        // validity (every index is in range: the take checked them), and-ed
        // with the indices' own.
        let words = idx
            .chunks(64)
            .enumerate()
            .map(|(c, chunk)| {
                let picked = match av.map(|b| b.0) {
                    // Word-aligned (arrow's buffers, through `bits`): the
                    // bit read straight from its word.
                    Some(Bitmap::Words(bw, o)) => {
                        chunk.iter().enumerate().fold(0u64, |w, (j, &x)| {
                            let r = o + x.into() as usize;
                            w | (bw[r / 64] >> (r % 64) & 1) << j
                        })
                    }
                    Some(b) => chunk.iter().enumerate().fold(0u64, |w, (j, &x)| {
                        w | u64::from(b.get(x.into() as usize)) << j
                    }),
                    None => !0 >> (64 - chunk.len()),
                };
                picked & iv.map_or(!0, |iv| iv.0.word(c))
            })
            .collect();
        some_nulls(words, idx.len())
    } else {
        None
    };
    Ok(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
        .with_data_type(a.data_type().clone()))
}

/// A validity bitmap of `rows` bits as a `NullBuffer`, or none when every
/// row is valid (as arrow's kernels leave it).
fn some_nulls(words: Vec<u64>, rows: usize) -> Option<NullBuffer> {
    let nb = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(words), 0, rows));
    (nb.null_count() > 0).then_some(nb)
}
