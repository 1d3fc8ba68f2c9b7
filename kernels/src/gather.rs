//! Gather (take): `out[i] = src[idx[i]]`, for one column or for a frame of
//! several columns moved by the same indices in one call.
//!
//! A single-column gather validates indices a block of 512 at a time (the
//! block's indices stay in L1 between the check and the copy), so checking
//! costs one extra pass over a few KiB, not over the whole index vector; the
//! next block's indices are prefetched before a block is copied, so that
//! pass does not wait on memory. On an out-of-range index it returns
//! [`GatherError::OutOfRange`] naming the position, the index and the
//! column length; rows before the offending block have then been written,
//! the rest of `out` is untouched. A frame checks all its indices before
//! writing anything, then gathers its columns one after another (see
//! `FRAME_BLOCK` in the source for the measurement behind that order).
//!
//! Large columns are gathered with software prefetch of the row 32 indices
//! ahead, except where a block looks sorted or clustered (the hardware
//! prefetcher follows those); see the crate README for which level wins
//! where.
//!
//! ```
//! use keel_kernels::gather::{gather, GatherError};
//! let col = [10i64, 11, 12, 13];
//! let mut out = [0i64; 3];
//! gather(&col, &[3u32, 0, 3], &mut out)?;
//! assert_eq!(out, [13, 10, 13]);
//! assert_eq!(
//!     gather(&col, &[1u32, 4, 0], &mut out),
//!     Err(GatherError::OutOfRange { position: 1, index: 4, len: 4 })
//! );
//! # Ok::<(), GatherError>(())
//! ```

use crate::Kernels;
use crate::arch;
use crate::cpu::Level;
use core::fmt;

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
/// prefetch, which measured as fast or faster once rows miss L2 (see the
/// crate README).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code) // only the x86-64 levels have hardware gathers
)]
pub(crate) const HW_GATHER_MAX_BYTES: usize = 256 << 10;

/// Why a gather did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatherError {
    /// `idx[position] == index` is not below the column length `len`.
    OutOfRange {
        /// Position of the offending index in the index slice.
        position: usize,
        /// The offending index.
        index: u64,
        /// The column (or frame) length it had to be below.
        len: usize,
    },
    /// An output slice's length differs from the number of indices.
    OutputLength {
        /// The output column (0 for a single-column gather).
        column: usize,
        /// Number of indices.
        indices: usize,
        /// Length of that output slice.
        out: usize,
    },
    /// A frame's input columns do not all have the same length.
    FrameLength {
        /// The first column whose length differs from column 0's.
        column: usize,
        /// Its length.
        len: usize,
        /// Column 0's length.
        expected: usize,
    },
    /// A frame has a different number of input and output columns.
    ColumnCount {
        /// Input columns.
        columns: usize,
        /// Output columns.
        outs: usize,
    },
    /// A frame's output column has a different element type from its input.
    ColumnType {
        /// The column whose types differ.
        column: usize,
    },
}

impl fmt::Display for GatherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GatherError::OutOfRange {
                position,
                index,
                len,
            } => write!(
                f,
                "gather index {index} at position {position} is out of range for length {len}"
            ),
            GatherError::OutputLength {
                column,
                indices,
                out,
            } => write!(
                f,
                "gather output column {column} has length {out}, expected {indices} (one per index)"
            ),
            GatherError::FrameLength {
                column,
                len,
                expected,
            } => write!(
                f,
                "frame column {column} has length {len}, column 0 has {expected}"
            ),
            GatherError::ColumnCount { columns, outs } => write!(
                f,
                "frame has {columns} input columns but {outs} output columns"
            ),
            GatherError::ColumnType { column } => write!(
                f,
                "frame column {column}: output element type differs from the input's"
            ),
        }
    }
}

impl core::error::Error for GatherError {}

/// Element-width views the arch kernels work on: gathering moves bits, so
/// `i64`, `u64` and `f64` are all 8-byte words, and so on.
pub(crate) mod raw {
    /// A source column as raw words.
    pub enum Src<'a> {
        /// 1-byte elements.
        W1(&'a [u8]),
        /// 4-byte elements.
        W4(&'a [u32]),
        /// 8-byte elements.
        W8(&'a [u64]),
    }

    /// An output column as raw words.
    pub enum Dst<'a> {
        /// 1-byte elements.
        W1(&'a mut [u8]),
        /// 4-byte elements.
        W4(&'a mut [u32]),
        /// 8-byte elements.
        W8(&'a mut [u64]),
    }

    /// Indices of either width.
    #[derive(Clone, Copy)]
    pub enum Idx<'a> {
        /// 32-bit indices.
        U32(&'a [u32]),
        /// 64-bit indices.
        U64(&'a [u64]),
    }

    impl Src<'_> {
        pub fn len(&self) -> usize {
            match self {
                Src::W1(s) => s.len(),
                Src::W4(s) => s.len(),
                Src::W8(s) => s.len(),
            }
        }

        pub fn bytes(&self) -> usize {
            match self {
                Src::W1(s) => s.len(),
                Src::W4(s) => s.len() * 4,
                Src::W8(s) => s.len() * 8,
            }
        }
    }

    impl Dst<'_> {
        pub fn len(&self) -> usize {
            match self {
                Dst::W1(s) => s.len(),
                Dst::W4(s) => s.len(),
                Dst::W8(s) => s.len(),
            }
        }

        /// The sub-range `start..start + n` of this output, reborrowed.
        pub fn range(&mut self, start: usize, n: usize) -> Dst<'_> {
            match self {
                Dst::W1(s) => Dst::W1(&mut s[start..start + n]),
                Dst::W4(s) => Dst::W4(&mut s[start..start + n]),
                Dst::W8(s) => Dst::W8(&mut s[start..start + n]),
            }
        }
    }

    impl<'a> Idx<'a> {
        pub fn len(&self) -> usize {
            match self {
                Idx::U32(s) => s.len(),
                Idx::U64(s) => s.len(),
            }
        }

        /// Whether `start..end` looks sorted or clustered: its first and last
        /// index ascend and lie less than `DENSE_ROWS_PER_INDEX` rows apart
        /// per index. O(1): it reads two indices.
        pub fn looks_dense(&self, start: usize, end: usize) -> bool {
            if end <= start + 1 {
                return true;
            }
            let (a, b) = match self {
                Idx::U32(s) => (u64::from(s[start]), u64::from(s[end - 1])),
                Idx::U64(s) => (s[start], s[end - 1]),
            };
            b >= a && b - a < (end - start) as u64 * super::DENSE_ROWS_PER_INDEX
        }

        /// Hints that the indices in `start..end` (clamped to the slice)
        /// will be read soon, one prefetch per 64-byte line.
        pub fn prefetch(&self, start: usize, end: usize) {
            let (p, bytes) = match self {
                Idx::U32(s) => {
                    let r = &s[start.min(s.len())..end.min(s.len())];
                    (r.as_ptr().cast::<u8>(), r.len() * 4)
                }
                Idx::U64(s) => {
                    let r = &s[start.min(s.len())..end.min(s.len())];
                    (r.as_ptr().cast::<u8>(), r.len() * 8)
                }
            };
            for off in (0..bytes).step_by(64) {
                crate::arch::scalar::gather::prefetch(p.wrapping_add(off));
            }
        }

        /// Indices from `start` on.
        pub fn tail(self, start: usize) -> Idx<'a> {
            match self {
                Idx::U32(s) => Idx::U32(&s[start..]),
                Idx::U64(s) => Idx::U64(&s[start..]),
            }
        }

        /// The first index in `start..end` that is not below `len`, as
        /// (position, index).
        pub fn first_out_of_range(
            &self,
            start: usize,
            end: usize,
            len: usize,
        ) -> Option<(usize, u64)> {
            let len = len as u64;
            match self {
                Idx::U32(s) => s[start..end]
                    .iter()
                    .position(|&x| u64::from(x) >= len)
                    .map(|p| (start + p, u64::from(s[start + p]))),
                Idx::U64(s) => s[start..end]
                    .iter()
                    .position(|&x| x >= len)
                    .map(|p| (start + p, s[start + p])),
            }
        }

        /// Whether every index in `start..end` is below `len`: a lane-wise
        /// max over the block, branch-free so it vectorizes; the slow search
        /// runs only on failure.
        pub fn all_below(&self, start: usize, end: usize, len: usize) -> bool {
            match self {
                Idx::U32(s) => len > u32::MAX as usize || (max8(&s[start..end]) as usize) < len,
                Idx::U64(s) => max8(&s[start..end]) < len as u64,
            }
        }
    }

    /// Max over eight independent lanes (0 for an empty slice).
    #[inline(always)]
    fn max8<T: Copy + Ord + Default>(s: &[T]) -> T {
        let mut acc = [T::default(); 8];
        let mut chunks = s.chunks_exact(8);
        for c in &mut chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a = (*a).max(x);
            }
        }
        for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
            *a = (*a).max(x);
        }
        acc.into_iter().fold(T::default(), T::max)
    }
}

use raw::{Dst, Idx, Src};

mod sealed {
    pub trait Value {}
    pub trait Index {}
}

/// A column value type gather can move: `i64`, `i32`, `u32`, `u64`, `f64`,
/// `f32`, `u8` (gather moves bits, so it takes `u8` where the arithmetic
/// kernels' [`crate::Element`] does not). Sealed.
pub trait Value: Copy + sealed::Value {
    #[doc(hidden)]
    fn src(s: &[Self]) -> Src<'_>;
    #[doc(hidden)]
    fn dst(s: &mut [Self]) -> Dst<'_>;
    #[doc(hidden)]
    fn column(s: &[Self]) -> Column<'_>;
    #[doc(hidden)]
    fn column_mut(s: &mut [Self]) -> ColumnMut<'_>;
}

/// A row index type: `u32` or `u64`. Sealed.
pub trait Index: Copy + sealed::Index {
    #[doc(hidden)]
    fn idx(s: &[Self]) -> Idx<'_>;
}

impl sealed::Index for u32 {}
impl sealed::Index for u64 {}
impl Index for u32 {
    fn idx(s: &[Self]) -> Idx<'_> {
        Idx::U32(s)
    }
}
impl Index for u64 {
    fn idx(s: &[Self]) -> Idx<'_> {
        Idx::U64(s)
    }
}

macro_rules! value {
    ($($t:ty => $w:ident, $raw:ty, $var:ident);* $(;)?) => {$(
        const _: () = assert!(
            core::mem::size_of::<$t>() == core::mem::size_of::<$raw>()
                && core::mem::align_of::<$t>() == core::mem::align_of::<$raw>()
        );
        impl sealed::Value for $t {}
        impl Value for $t {
            fn src(s: &[Self]) -> Src<'_> {
                // SAFETY: same size and alignment (asserted above), every bit
                // pattern is valid for both types, and the borrow is carried over.
                Src::$w(unsafe { core::slice::from_raw_parts(s.as_ptr().cast::<$raw>(), s.len()) })
            }
            fn dst(s: &mut [Self]) -> Dst<'_> {
                // SAFETY: as in `src`; any bits written through the view are a
                // valid value of the element type.
                Dst::$w(unsafe {
                    core::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<$raw>(), s.len())
                })
            }
            fn column(s: &[Self]) -> Column<'_> {
                Column::$var(s)
            }
            fn column_mut(s: &mut [Self]) -> ColumnMut<'_> {
                ColumnMut::$var(s)
            }
        }
    )*};
}

value! {
    i64 => W8, u64, I64;
    u64 => W8, u64, U64;
    f64 => W8, u64, F64;
    i32 => W4, u32, I32;
    u32 => W4, u32, U32;
    f32 => W4, u32, F32;
    u8 => W1, u8, U8;
}

/// One input column of a frame.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // variants are the element types
pub enum Column<'a> {
    I64(&'a [i64]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F64(&'a [f64]),
    F32(&'a [f32]),
    U8(&'a [u8]),
}

/// One output column of a frame.
#[derive(Debug)]
#[allow(missing_docs)] // variants are the element types
pub enum ColumnMut<'a> {
    I64(&'a mut [i64]),
    I32(&'a mut [i32]),
    U32(&'a mut [u32]),
    U64(&'a mut [u64]),
    F64(&'a mut [f64]),
    F32(&'a mut [f32]),
    U8(&'a mut [u8]),
}

impl<'a, T: Value> From<&'a [T]> for Column<'a> {
    fn from(s: &'a [T]) -> Self {
        T::column(s)
    }
}

impl<'a, T: Value> From<&'a mut [T]> for ColumnMut<'a> {
    fn from(s: &'a mut [T]) -> Self {
        T::column_mut(s)
    }
}

impl<'a> Column<'a> {
    /// The column over `s`, whatever its element type.
    pub fn new<T: Value>(s: &'a [T]) -> Self {
        T::column(s)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.src().len()
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn src(&self) -> Src<'_> {
        match *self {
            Column::I64(s) => Value::src(s),
            Column::I32(s) => Value::src(s),
            Column::U32(s) => Value::src(s),
            Column::U64(s) => Value::src(s),
            Column::F64(s) => Value::src(s),
            Column::F32(s) => Value::src(s),
            Column::U8(s) => Value::src(s),
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Column::I64(_) => 0,
            Column::I32(_) => 1,
            Column::U32(_) => 2,
            Column::U64(_) => 3,
            Column::F64(_) => 4,
            Column::F32(_) => 5,
            Column::U8(_) => 6,
        }
    }
}

impl<'a> ColumnMut<'a> {
    /// The output column over `s`, whatever its element type.
    pub fn new<T: Value>(s: &'a mut [T]) -> Self {
        T::column_mut(s)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            ColumnMut::I64(s) => s.len(),
            ColumnMut::I32(s) => s.len(),
            ColumnMut::U32(s) => s.len(),
            ColumnMut::U64(s) => s.len(),
            ColumnMut::F64(s) => s.len(),
            ColumnMut::F32(s) => s.len(),
            ColumnMut::U8(s) => s.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn dst(&mut self) -> Dst<'_> {
        match self {
            ColumnMut::I64(s) => Value::dst(s),
            ColumnMut::I32(s) => Value::dst(s),
            ColumnMut::U32(s) => Value::dst(s),
            ColumnMut::U64(s) => Value::dst(s),
            ColumnMut::F64(s) => Value::dst(s),
            ColumnMut::F32(s) => Value::dst(s),
            ColumnMut::U8(s) => Value::dst(s),
        }
    }

    fn kind(&self) -> u8 {
        match self {
            ColumnMut::I64(_) => 0,
            ColumnMut::I32(_) => 1,
            ColumnMut::U32(_) => 2,
            ColumnMut::U64(_) => 3,
            ColumnMut::F64(_) => 4,
            ColumnMut::F32(_) => 5,
            ColumnMut::U8(_) => 6,
        }
    }
}

/// Gathers `out[i] = src[idx[i]]` at the current level ([`crate::cpu::level`]).
///
/// `out.len()` must equal `idx.len()`. Any index not below `src.len()`
/// returns [`GatherError::OutOfRange`] (see the module docs for what was
/// written by then).
///
/// ```
/// use keel_kernels::gather::gather;
/// let prices = [1.5f64, 2.5, 3.5];
/// let mut out = [0.0; 4];
/// gather(&prices, &[2u64, 2, 0, 1], &mut out).unwrap();
/// assert_eq!(out, [3.5, 3.5, 1.5, 2.5]);
/// ```
pub fn gather<T: Value, I: Index>(src: &[T], idx: &[I], out: &mut [T]) -> Result<(), GatherError> {
    Kernels::current().gather(src, idx, out)
}

/// [`gather`] without the index check.
///
/// Still returns [`GatherError::OutputLength`] when `out.len() != idx.len()`;
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
) -> Result<(), GatherError> {
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
) -> Result<(), GatherError> {
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
) -> Result<(), GatherError> {
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
    ) -> Result<(), GatherError> {
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
    ) -> Result<(), GatherError> {
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
    ) -> Result<(), GatherError> {
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
    ) -> Result<(), GatherError> {
        frame_types(columns, outs)?;
        with_frame(columns, idx.len(), outs, |srcs, dsts| {
            // SAFETY: forwarded contract; `run_unchecked` checks the shapes.
            unsafe { run_unchecked(self.level(), srcs, I::idx(idx), dsts, FRAME_BLOCK) }
        })
    }
}

fn frame_types(columns: &[Column<'_>], outs: &[ColumnMut<'_>]) -> Result<(), GatherError> {
    if columns.len() != outs.len() {
        return Err(GatherError::ColumnCount {
            columns: columns.len(),
            outs: outs.len(),
        });
    }
    match columns
        .iter()
        .zip(outs.iter())
        .position(|(c, o)| c.kind() != o.kind())
    {
        Some(column) => Err(GatherError::ColumnType { column }),
        None => Ok(()),
    }
}

/// Frames are small (a handful of columns): raw views go into fixed stack
/// arrays, processed `FRAME_CHUNK` columns per pass, so no allocation is needed.
const FRAME_CHUNK: usize = 16;

/// Runs `f` over the frame `FRAME_CHUNK` columns at a time, after checking
/// the shapes of the whole frame (equal input lengths, `n` rows in every
/// output), so no column is written on a shape error.
fn with_frame(
    columns: &[Column<'_>],
    n: usize,
    outs: &mut [ColumnMut<'_>],
    mut f: impl FnMut(&[Src<'_>], &mut [Dst<'_>]) -> Result<(), GatherError>,
) -> Result<(), GatherError> {
    if let Some(first) = columns.first() {
        let expected = first.len();
        if let Some(column) = columns.iter().position(|c| c.len() != expected) {
            return Err(GatherError::FrameLength {
                column,
                len: columns[column].len(),
                expected,
            });
        }
    }
    // Every output too, not only those of the pass `f` checks: a later
    // pass's short output must not leave the earlier passes written.
    if let Some(column) = outs.iter().position(|o| o.len() != n) {
        return Err(GatherError::OutputLength {
            column,
            indices: n,
            out: outs[column].len(),
        });
    }
    for (ci, (cs, os)) in columns
        .chunks(FRAME_CHUNK)
        .zip(outs.chunks_mut(FRAME_CHUNK))
        .enumerate()
    {
        let mut srcs: [Src<'_>; FRAME_CHUNK] = core::array::from_fn(|_| Src::W1(&[]));
        let mut dsts: [Dst<'_>; FRAME_CHUNK] = core::array::from_fn(|_| Dst::W1(&mut []));
        for (k, c) in cs.iter().enumerate() {
            srcs[k] = c.src();
        }
        for (k, o) in os.iter_mut().enumerate() {
            dsts[k] = o.dst();
        }
        f(&srcs[..cs.len()], &mut dsts[..cs.len()]).map_err(|e| match e {
            GatherError::OutputLength {
                column,
                indices,
                out,
            } => GatherError::OutputLength {
                column: column + ci * FRAME_CHUNK,
                indices,
                out,
            },
            e => e,
        })?;
    }
    Ok(())
}

fn check_outputs(n: usize, dsts: &[Dst<'_>]) -> Result<(), GatherError> {
    match dsts.iter().position(|d| d.len() != n) {
        Some(column) => Err(GatherError::OutputLength {
            column,
            indices: n,
            out: dsts[column].len(),
        }),
        None => Ok(()),
    }
}

/// Checks each step of `step` indices against the frame length, then
/// gathers it into every column: [`BLOCK`] for a single-column gather,
/// [`FRAME_BLOCK`] for a frame, whatever its number of columns (so a frame
/// of one column, too, writes nothing before an out-of-range error).
fn run_checked(
    level: Level,
    srcs: &[Src<'_>],
    idx: Idx<'_>,
    dsts: &mut [Dst<'_>],
    step: usize,
) -> Result<(), GatherError> {
    let n = idx.len();
    check_outputs(n, dsts)?;
    let Some(first) = srcs.first() else {
        return Ok(());
    };
    let len = first.len();
    let mut start = 0;
    while start < n {
        let end = start.saturating_add(step).min(n);
        if !all_below(level, &idx, start, end, len) {
            let (position, index) = idx
                .first_out_of_range(start, end, len)
                .unwrap_or((start, 0));
            return Err(GatherError::OutOfRange {
                position,
                index,
                len,
            });
        }
        let dense = idx.looks_dense(start, end);
        // The next block's indices, so that its check finds them in cache.
        idx.prefetch(end, end.saturating_add(step));
        for (s, d) in srcs.iter().zip(dsts.iter_mut()) {
            // SAFETY: every index in start..end was just checked to be below
            // `len`, the common length of all sources.
            unsafe {
                block(
                    level,
                    s,
                    idx.tail(start),
                    d.range(start, end - start),
                    dense,
                )
            };
        }
        start = end;
    }
    Ok(())
}

/// # Safety
///
/// Every index must be below every source's length.
unsafe fn run_unchecked(
    level: Level,
    srcs: &[Src<'_>],
    idx: Idx<'_>,
    dsts: &mut [Dst<'_>],
    step: usize,
) -> Result<(), GatherError> {
    let n = idx.len();
    check_outputs(n, dsts)?;
    let mut start = 0;
    // Steps here too, so a frame's columns share the step's indices in cache.
    while start < n {
        let end = start.saturating_add(step).min(n);
        let dense = idx.looks_dense(start, end);
        for (s, d) in srcs.iter().zip(dsts.iter_mut()) {
            // SAFETY: the caller guarantees every index is in range.
            unsafe {
                block(
                    level,
                    s,
                    idx.tail(start),
                    d.range(start, end - start),
                    dense,
                )
            };
        }
        start = end;
    }
    Ok(())
}

/// Gathers `out.len()` rows by `idx[..out.len()]`; later indices in `idx` are
/// only read as prefetch hints (skipped when the step is `dense`).
///
/// # Safety
///
/// `idx.len() >= out.len()`, and the first `out.len()` indices are below
/// `src.len()`; `src` and `out` have the same width.
unsafe fn block(level: Level, src: &Src<'_>, idx: Idx<'_>, out: Dst<'_>, dense: bool) {
    let bytes = src.bytes();
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let hw = bytes < HW_GATHER_MAX_BYTES;
    // SAFETY: forwarded contract; `level` comes from a `Kernels` value, which
    // proves the CPU supports it.
    unsafe {
        match level {
            // The AVX-512 level runs the AVX2 gathers too: a gather is one
            // load per row at any width, and no 512-bit one has been
            // measured faster (see the crate README).
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            Level::Avx2 | Level::Avx512 if hw => arch::x86_64::avx2::gather::block(src, idx, out),
            _ => arch::scalar::gather::block(src, idx, out, !dense && bytes >= PREFETCH_MIN_BYTES),
        }
    }
}

/// Whether every index in `start..end` is below `len`, with the level's
/// widest unsigned max.
fn all_below(level: Level, idx: &Idx<'_>, start: usize, end: usize, len: usize) -> bool {
    match (level, idx) {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        (Level::Avx2 | Level::Avx512, Idx::U32(s)) => {
            // SAFETY: a `Kernels` value at this level proves AVX2 (AVX-512
            // implies it).
            let max = unsafe { arch::x86_64::avx2::gather::max_u32(&s[start..end]) };
            len > u32::MAX as usize || (max as usize) < len
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        (Level::Avx2 | Level::Avx512, Idx::U64(s)) => {
            // SAFETY: as above.
            let max = unsafe { arch::x86_64::avx2::gather::max_u64(&s[start..end]) };
            max < len as u64
        }
        _ => idx.all_below(start, end, len),
    }
}
