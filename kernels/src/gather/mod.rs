//! Gather (take): `out[i] = src[idx[i]]`, for one column or for a frame of
//! several columns moved by the same indices in one call.
//!
//! A single-column gather validates indices a block of 512 at a time (the
//! block's indices stay in L1 between the check and the copy), so checking
//! costs one extra pass over a few KiB, not over the whole index vector; the
//! next block's indices are prefetched before a block is copied, so that
//! pass does not wait on memory. On an out-of-range index it returns
//! [`Error::OutOfRange`] naming the position, the index and the
//! column length; rows before the offending block have then been written,
//! the rest of `out` is untouched. A frame checks all its indices before
//! writing anything, then gathers its columns one after another (see
//! `FRAME_BLOCK` in the source for the measurement behind that order).
//!
//! Large columns are gathered with software prefetch of the row 32 indices
//! ahead, except where a block looks sorted or clustered (the hardware
//! prefetcher follows those). The measurements behind these choices are in
//! `bench/results/2026-11-30-kernels-gather-zen3-xeon.md`.
//!
//! ```
//! use keel_kernels::{gather::gather, Error};
//! let col = [10i64, 11, 12, 13];
//! let mut out = [0i64; 3];
//! gather(&col, &[3u32, 0, 3], &mut out)?;
//! assert_eq!(out, [13, 10, 13]);
//! assert_eq!(
//!     gather(&col, &[1u32, 4, 0], &mut out),
//!     Err(Error::OutOfRange { what: "gather index", position: 1, index: 4, len: 4 })
//! );
//! # Ok::<(), Error>(())
//! ```

mod column;
mod frame;
mod raw;

pub use column::{Column, ColumnMut};
pub use raw::{Index, Value};

use crate::{Error, Kernels};
use frame::{frame_types, with_frame};
use raw::{run_checked, run_unchecked};

/// Indices checked and then gathered per step of a single-column gather:
/// 512 `u64` indices are 4 KiB, which stays in L1 between the check and the
/// copy.
pub(crate) const BLOCK: usize = 512;

/// Indices per step for a frame, for each column in turn. Measured on 4 KiB
/// pages (2-core Zen 3 VM, 8 columns of 16 Mi rows, 4 Mi random indices):
/// steps of 512 rows were 2.5x slower than whole columns and 16 Ki rows 2.4x,
/// 256 Ki rows 1.1x, because every column switch evicts the other column's
/// page-table entries. So a frame checks all indices first and then
/// gathers the columns one after another over them.
pub(crate) const FRAME_BLOCK: usize = usize::MAX;

/// A step whose first and last index are ascending and less than this many
/// rows apart per index is treated as sorted or clustered: the hardware
/// prefetcher already follows it, so no software prefetch is issued.
pub(crate) const DENSE_ROWS_PER_INDEX: u64 = 64;

/// Columns at least this large (in bytes) are gathered with software
/// prefetch: below it the column sits in L2 and prefetching only costs
/// instructions.
pub(crate) const PREFETCH_MIN_BYTES: usize = 1 << 20;

/// Columns below this size (in bytes) use the hardware gather instructions
/// at the AVX2 and AVX-512 levels; larger ones use the scalar loop with
/// prefetch, which measured as fast or faster once rows miss L2.
pub(crate) const HW_GATHER_MAX_BYTES: usize = 256 << 10;

/// ```
/// use keel_kernels::gather::gather;
/// let prices = [1.5f64, 2.5, 3.5];
/// let mut out = [0.0; 4];
/// gather(&prices, &[2u64, 2, 0, 1], &mut out).unwrap();
/// assert_eq!(out, [3.5, 3.5, 1.5, 2.5]);
/// ```
/// Gathers `out[i] = src[idx[i]]` at the current level ([`crate::cpu::level`]).
///
/// `out.len()` must equal `idx.len()`. Any index not below `src.len()`
/// returns [`Error::OutOfRange`] (see the module docs for what was
/// written by then).
///
pub fn gather<T: Value, I: Index>(src: &[T], idx: &[I], out: &mut [T]) -> Result<(), Error> {
    Kernels::current().gather(src, idx, out)
}

/// [`gather`] without the index check.
///
/// Still returns [`Error::OutputLength`] when `out.len() != idx.len()`;
/// that check is O(1).
///
/// ```
/// use keel_kernels::gather::gather_unchecked;
/// let col = [7u8, 8, 9];
/// let mut out = [0u8; 2];
/// // SAFETY: both indices are below col.len().
/// unsafe { gather_unchecked(&col, &[2u32, 0], &mut out) }.unwrap();
/// assert_eq!(out, [9, 7]);
/// ```
///
/// # Safety
///
/// Every index in `idx` must be below `src.len()`.
pub unsafe fn gather_unchecked<T: Value, I: Index>(
    src: &[T],
    idx: &[I],
    out: &mut [T],
) -> Result<(), Error> {
    // SAFETY: the caller guarantees every index is in range.
    unsafe { Kernels::current().gather_unchecked(src, idx, out) }
}

/// Gathers every column of a frame by the same indices in one call:
/// `outs[c][i] = columns[c][idx[i]]`. The indices are checked once for the
/// whole frame.
///
/// All input columns must have the same length, each output column the
/// value type of its input and one row per index.
///
/// ```
/// use keel_kernels::gather::{gather_frame, Column, ColumnMut};
/// let ids = [100u64, 200, 300];
/// let qty = [1.0f32, 2.0, 3.0];
/// let (mut ids_out, mut qty_out) = ([0u64; 2], [0f32; 2]);
/// gather_frame(
///     &[Column::new(&ids), Column::new(&qty)],
///     &[2u32, 0],
///     &mut [ColumnMut::new(&mut ids_out), ColumnMut::new(&mut qty_out)],
/// )
/// .unwrap();
/// assert_eq!((ids_out, qty_out), ([300, 100], [3.0, 1.0]));
/// ```
pub fn gather_frame<I: Index>(
    columns: &[Column<'_>],
    idx: &[I],
    outs: &mut [ColumnMut<'_>],
) -> Result<(), Error> {
    Kernels::current().gather_frame(columns, idx, outs)
}

/// [`gather_frame`] without the index check (the shape checks remain).
///
/// # Safety
///
/// Every index in `idx` must be below the frame's length (every column's).
pub unsafe fn gather_frame_unchecked<I: Index>(
    columns: &[Column<'_>],
    idx: &[I],
    outs: &mut [ColumnMut<'_>],
) -> Result<(), Error> {
    // SAFETY: forwarded contract.
    unsafe { Kernels::current().gather_frame_unchecked(columns, idx, outs) }
}

impl Kernels {
    /// [`gather`] at this level.
    pub fn gather<T: Value, I: Index>(
        self,
        src: &[T],
        idx: &[I],
        out: &mut [T],
    ) -> Result<(), Error> {
        run_checked(
            self.level(),
            &[T::src(src)],
            I::idx(idx),
            &mut [T::dst(out)],
            BLOCK,
        )
    }

    /// [`gather_unchecked`] at this level.
    ///
    /// # Safety
    ///
    /// Every index in `idx` must be below `src.len()`.
    pub unsafe fn gather_unchecked<T: Value, I: Index>(
        self,
        src: &[T],
        idx: &[I],
        out: &mut [T],
    ) -> Result<(), Error> {
        // SAFETY: the caller guarantees every index is in range.
        unsafe {
            run_unchecked(
                self.level(),
                &[T::src(src)],
                I::idx(idx),
                &mut [T::dst(out)],
                BLOCK,
            )
        }
    }

    /// [`gather_frame`] at this level.
    pub fn gather_frame<I: Index>(
        self,
        columns: &[Column<'_>],
        idx: &[I],
        outs: &mut [ColumnMut<'_>],
    ) -> Result<(), Error> {
        frame_types(columns, outs)?;
        with_frame(columns, idx.len(), outs, |srcs, dsts| {
            run_checked(self.level(), srcs, I::idx(idx), dsts, FRAME_BLOCK)
        })
    }

    /// [`gather_frame_unchecked`] at this level.
    ///
    /// # Safety
    ///
    /// Every index in `idx` must be below the frame's length (every column's).
    pub unsafe fn gather_frame_unchecked<I: Index>(
        self,
        columns: &[Column<'_>],
        idx: &[I],
        outs: &mut [ColumnMut<'_>],
    ) -> Result<(), Error> {
        frame_types(columns, outs)?;
        with_frame(columns, idx.len(), outs, |srcs, dsts| {
            // SAFETY: forwarded contract; `run_unchecked` checks the shapes.
            unsafe { run_unchecked(self.level(), srcs, I::idx(idx), dsts, FRAME_BLOCK) }
        })
    }
}
