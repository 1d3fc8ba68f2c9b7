//! The typed-to-raw layer of gather: the sealed [`Value`] and [`Index`]
//! traits that view typed slices as the width-only descriptors of
//! `arch::scalar::gather`, and the engine that checks indices a step at a
//! time and hands each step to a leaf.

use super::{Column, ColumnMut, DENSE_ROWS_PER_INDEX, HW_GATHER_MAX_BYTES, PREFETCH_MIN_BYTES};
use crate::Error;
use crate::arch::dispatch;
use crate::arch::scalar::gather as sc;
pub(crate) use crate::arch::scalar::gather::{Dst, Idx, Src};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::arch::x86_64::avx2::gather as a2;
use crate::cpu::Level;

pub(crate) mod sealed {
    pub trait Value {}
    pub trait Index {}
}

/// A column value type gather can move: `i64`, `i32`, `u32`, `u64`, `f64`,
/// `f32`, `u8` (gather moves bits, so it takes `u8` where the arithmetic
/// kernels' [`crate::Element`] does not). Sealed.
///
/// ```
/// use keel_kernels::{gather::{gather, Value}, Error};
/// fn ends<T: Value + Default>(src: &[T]) -> Result<[T; 2], Error> {
///     let mut out = [T::default(); 2];
///     gather(src, &[0u32, src.len() as u32 - 1], &mut out)?;
///     Ok(out)
/// }
/// assert_eq!(ends(&[1u8, 2, 3])?, [1, 3]);
/// assert_eq!(ends(&[0.5f64, 1.5])?, [0.5, 1.5]);
/// # Ok::<(), Error>(())
/// ```
pub trait Value: Copy + sealed::Value {
    #[doc(hidden)]
    fn src(s: &[Self]) -> Src<'_>;
    #[doc(hidden)]
    fn dst(s: &mut [Self]) -> Dst<'_>;
    #[doc(hidden)]
    fn dst_uninit(s: &mut [core::mem::MaybeUninit<Self>]) -> Dst<'_>;
    #[doc(hidden)]
    fn column(s: &[Self]) -> Column<'_>;
    #[doc(hidden)]
    fn column_mut(s: &mut [Self]) -> ColumnMut<'_>;
}

/// A row index type: `u32` or `u64`. Sealed.
///
/// ```
/// use keel_kernels::{gather::{gather, Index}, Error};
/// fn pick<I: Index>(idx: &[I]) -> Result<[i64; 2], Error> {
///     let mut out = [0i64; 2];
///     gather(&[10, 20, 30], idx, &mut out)?;
///     Ok(out)
/// }
/// assert_eq!(pick(&[2u32, 0])?, [30, 10]);
/// assert_eq!(pick(&[2u64, 0])?, [30, 10]);
/// # Ok::<(), Error>(())
/// ```
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
                // SAFETY: as in `src`; the leaves only write whole values
                // through the view, and any bits are a valid value of the
                // element type, so `s` stays initialised.
                Dst::$w(unsafe {
                    core::slice::from_raw_parts_mut(
                        s.as_mut_ptr().cast::<core::mem::MaybeUninit<$raw>>(),
                        s.len(),
                    )
                })
            }
            fn dst_uninit(s: &mut [core::mem::MaybeUninit<Self>]) -> Dst<'_> {
                // SAFETY: same size and alignment (asserted above); the view
                // keeps the slice's length and borrow.
                Dst::$w(unsafe {
                    core::slice::from_raw_parts_mut(
                        s.as_mut_ptr().cast::<core::mem::MaybeUninit<$raw>>(),
                        s.len(),
                    )
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

pub(crate) fn check_outputs(n: usize, dsts: &[Dst<'_>]) -> Result<(), Error> {
    match dsts.iter().position(|d| d.len() != n) {
        Some(column) => Err(Error::OutputLength {
            column,
            expected: n,
            actual: dsts[column].len(),
        }),
        None => Ok(()),
    }
}

/// Checks each step of `step` indices against the frame length, then
/// gathers it into every column: [`super::BLOCK`] for a single-column gather,
/// [`super::FRAME_BLOCK`] for a frame, whatever its number of columns (so a frame
/// of one column, too, writes nothing before an out-of-range error).
pub(crate) fn run_checked(
    level: Level,
    srcs: &[Src<'_>],
    idx: Idx<'_>,
    dsts: &mut [Dst<'_>],
    step: usize,
) -> Result<(), Error> {
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
            return Err(Error::OutOfRange {
                what: "gather index",
                position,
                index,
                len,
            });
        }
        let dense = idx.looks_dense(start, end, DENSE_ROWS_PER_INDEX);
        // The next block's indices, so that its check finds them in cache;
        // not after a sorted block, whose indices (and rows) the hardware
        // prefetcher already streams (the extra hints cost about 5% there,
        // bench/results/2026-12-01-kernels-streaming-take-hll-zen4.md).
        if !dense {
            idx.prefetch(end, end.saturating_add(step));
        }
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
pub(crate) unsafe fn run_unchecked(
    level: Level,
    srcs: &[Src<'_>],
    idx: Idx<'_>,
    dsts: &mut [Dst<'_>],
    step: usize,
) -> Result<(), Error> {
    let n = idx.len();
    check_outputs(n, dsts)?;
    let mut start = 0;
    // Steps here too, so a frame's columns share the step's indices in cache.
    while start < n {
        let end = start.saturating_add(step).min(n);
        let dense = idx.looks_dense(start, end, DENSE_ROWS_PER_INDEX);
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
    if bytes < HW_GATHER_MAX_BYTES {
        // The AVX-512 level runs the AVX2 gathers too: a gather is one load
        // per row at any width, and no 512-bit one has been measured faster.
        // Prefetch never pays in L2.
        dispatch!(
            level,
            |s, i, o| {
                // SAFETY: forwarded contract.
                unsafe { sc::block(s, i, o, false) }
            },
            a2::block,
            a2::block,
            (src, idx, out)
        )
    } else {
        // SAFETY: forwarded contract.
        unsafe { sc::block(src, idx, out, !dense && bytes >= PREFETCH_MIN_BYTES) }
    }
}

/// Whether every index in `start..end` is below `len`, with the level's
/// widest unsigned max (AVX-512 runs the AVX2 one: the check is a small
/// share of a gather).
fn all_below(level: Level, idx: &Idx<'_>, start: usize, end: usize, len: usize) -> bool {
    match idx {
        Idx::U32(s) => {
            let max = dispatch!(
                level,
                sc::max_u32,
                a2::max_u32,
                a2::max_u32,
                (&s[start..end])
            );
            len > u32::MAX as usize || (max as usize) < len
        }
        Idx::U64(s) => {
            let max = dispatch!(
                level,
                sc::max_u64,
                a2::max_u64,
                a2::max_u64,
                (&s[start..end])
            );
            max < len as u64
        }
    }
}
