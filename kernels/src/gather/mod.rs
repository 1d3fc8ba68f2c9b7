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

use crate::arch::mask::RowMask;
use crate::mask::{Mask, Resolved};
use crate::{Error, Kernels};
use core::mem::MaybeUninit;
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
/// ```
/// use keel_kernels::gather::{gather_frame_unchecked, Column, ColumnMut};
/// let (ids, flags) = ([100i64, 200, 300], [b'A', b'B', b'C']);
/// let cols = [Column::new(&ids), Column::new(&flags)];
/// let (mut ids_out, mut flags_out) = ([0i64; 2], [0u8; 2]);
/// let mut outs = [ColumnMut::new(&mut ids_out), ColumnMut::new(&mut flags_out)];
/// // SAFETY: both indices are below 3, the length of every column.
/// unsafe { gather_frame_unchecked(&cols, &[1u64, 2], &mut outs) }?;
/// assert_eq!((ids_out, flags_out), ([200, 300], [b'B', b'C']));
/// # Ok::<(), keel_kernels::Error>(())
/// ```
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

/// Take-style gather: `src[idx[i]]` for every index, into a fresh vector
/// (allocated uninitialised, each row written once: no zeroing pass). An
/// output of 4 MiB or more asks for transparent huge pages before it is
/// written (with `std` on Linux), so it faults once per 2 MiB, not once
/// per 4 KiB page. Checked as [`gather`]; on an error nothing is returned.
///
/// ```
/// use keel_kernels::gather::take;
/// assert_eq!(take(&[1.5f32, 2.5, 3.5], &[2u32, 0])?, vec![3.5, 1.5]);
/// assert!(take(&[1u8], &[1u64]).is_err());
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[cfg(feature = "alloc")]
pub fn take<T: Value, I: Index>(src: &[T], idx: &[I]) -> Result<alloc::vec::Vec<T>, Error> {
    Kernels::current().take(src, idx)
}

/// Copies the rows `mask` counts (valid and selected), in order, to the
/// front of `out`, and returns how many (nothing past them is written): a
/// filter's compaction with a selection bitmap (arrow's `filter`), a take
/// with a selection vector. Errors if `out` has less room than the rows
/// counted, or the mask is bad. Over bitmaps counting one row in three or
/// more (bytes: one in 16), the AVX-512 level packs 8-byte values 8 rows a `vpcompressq`,
/// 4-byte values 16 a `vpcompressd` and, with VBMI2, bytes 64 a
/// `vpcompressb`; the AVX2 level packs 8- and 4-byte values with a table
/// of `vpermd` indices and bytes with `pshufb` (as does AVX-512 without
/// VBMI2); sparser bitmaps take a `tzcnt` loop a counted row. On
/// Zen 4, i64 at 1 in 2 rows, 1.9-2.8x a `tzcnt` loop up to 1 Mi rows
/// (`bench/results/2026-12-06-kernels-take-masked-zen4.md`).
///
/// ```
/// use keel_kernels::gather::gather_masked;
/// use keel_kernels::mask::{Bits, Selection};
/// let v = [10i64, 11, 12, 13, 14];
/// let mut out = [0i64; 5];
/// let n = gather_masked(&v, Selection::Bitmap(Bits::new(&[0b10110])), &mut out)?;
/// assert_eq!(&out[..n], &[11, 12, 14]);
/// let n = gather_masked(&v, Selection::Rows(&[4, 0]), &mut out)?;
/// assert_eq!(&out[..n], &[14, 10]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn gather_masked<'a, T: Value>(
    src: &[T],
    mask: impl Into<Mask<'a>>,
    out: &mut [T],
) -> Result<usize, Error> {
    Kernels::current().gather_masked(src, mask, out)
}

/// [`gather_masked`] into a vector of exactly the rows counted, allocated
/// uninitialised and written once (arrow's `filter`; [`take`] is the same
/// for a selection vector). Errors if the mask is bad.
///
/// ```
/// use keel_kernels::gather::take_masked;
/// use keel_kernels::mask::{Bits, Selection};
/// let v = [10i64, 11, 12, 13, 14];
/// assert_eq!(take_masked(&v, Selection::Bitmap(Bits::new(&[0b10110])))?, vec![11, 12, 14]);
/// assert_eq!(take_masked(&v, Selection::Rows(&[4, 0]))?, vec![14, 10]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[cfg(feature = "alloc")]
pub fn take_masked<'a, T: Value>(
    src: &[T],
    mask: impl Into<Mask<'a>>,
) -> Result<alloc::vec::Vec<T>, Error> {
    Kernels::current().take_masked(src, mask)
}

/// Outputs of at least this many bytes ask for transparent huge pages.
#[cfg(feature = "alloc")]
pub(crate) const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back the untouched capacity of a large fresh output
/// with transparent huge pages (`madvise(MADV_HUGEPAGE)` on its whole 2 MiB
/// pages), so that writing it faults once per 2 MiB instead of once per
/// 4 KiB: a 128 MiB take faults 64 times, not 32 Ki times, and those
/// faults cost more than the gather itself on a VM. A hint: where THP is
/// off (or without `std` on Linux) nothing changes; the output's resident
/// size rounds up to 2 MiB.
#[cfg(feature = "alloc")]
#[cfg_attr(
    not(all(feature = "std", target_os = "linux", not(miri))),
    allow(clippy::needless_return)
)]
fn huge_pages<T>(out: &mut alloc::vec::Vec<T>) {
    let bytes = out.capacity() * core::mem::size_of::<T>();
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    #[cfg(all(feature = "std", target_os = "linux", not(miri)))]
    {
        const HUGE: usize = 2 << 20;
        let p = out.as_mut_ptr() as usize;
        let (start, end) = (p.next_multiple_of(HUGE), (p + bytes) & !(HUGE - 1));
        if end > start {
            // SAFETY: advice only, on whole pages inside this vector's own
            // allocation, which nothing has touched yet; madvise reads or
            // writes no memory, and a failure (THP off) changes nothing.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
}

impl Kernels {
    /// [`take`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.take(&[1.5f32, 2.5, 3.5], &[2u32, 0])?, vec![3.5, 1.5]);
    ///     assert!(k.take(&[1u8], &[1u64]).is_err());
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    #[cfg(feature = "alloc")]
    pub fn take<T: Value, I: Index>(
        self,
        src: &[T],
        idx: &[I],
    ) -> Result<alloc::vec::Vec<T>, Error> {
        let n = idx.len();
        let mut out = alloc::vec::Vec::with_capacity(n);
        huge_pages(&mut out);
        run_checked(
            self.level(),
            &[T::src(src)],
            I::idx(idx),
            &mut [T::dst_uninit(&mut out.spare_capacity_mut()[..n])],
            BLOCK,
        )?;
        // SAFETY: `run_checked` returned Ok, so it wrote all n rows of the
        // spare capacity (capacity >= n).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// [`gather_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::{mask::{Bits, Selection}, Kernels};
    /// let v = [10i64, 11, 12, 13, 14];
    /// for k in Kernels::supported() {
    ///     let mut out = [0i64; 5];
    ///     let n = k.gather_masked(&v, Selection::Bitmap(Bits::new(&[0b11001])), &mut out)?;
    ///     assert_eq!(&out[..n], &[10, 13, 14]);
    ///     assert!(k.gather_masked(&v, Selection::Rows(&[0, 1]), &mut out[..1]).is_err());
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn gather_masked<'a, T: Value>(
        self,
        src: &[T],
        mask: impl Into<Mask<'a>>,
        out: &mut [T],
    ) -> Result<usize, Error> {
        let n = src.len();
        let room = |needed: usize, actual: usize| {
            if actual < needed {
                Err(Error::OutputTooShort {
                    what: "gather output",
                    needed,
                    actual,
                })
            } else {
                Ok(())
            }
        };
        match mask.into().resolve(n)? {
            Resolved::Rows(rows, m) if m.is_all() => {
                room(rows.len(), out.len())?;
                // SAFETY: `resolve` checked every row is below `src.len()`.
                unsafe { self.gather_unchecked(src, rows, &mut out[..rows.len()])? };
                Ok(rows.len())
            }
            Resolved::Rows(rows, m) => {
                let mut k = 0;
                for &r in rows {
                    if m.get(r as usize) {
                        room(k + 1, out.len())?;
                        out[k] = src[r as usize];
                        k += 1;
                    }
                }
                Ok(k)
            }
            Resolved::Bits(m) => {
                let count = self.count_bits(m, n);
                room(count, out.len())?;
                let out = &mut out[..count];
                // SAFETY: `compact_bits` only writes values of `src` (no
                // uninitialised bytes) into the view.
                let view = unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) };
                Ok(self.compact_bits(src, m, view))
            }
        }
    }

    /// [`take_masked`] at this level.
    ///
    /// ```
    /// use keel_kernels::{mask::{Bits, Selection}, Kernels};
    /// let v = [1u8, 2, 3, 4, 5, 6, 7, 8];
    /// for k in Kernels::supported() {
    ///     let evens = k.take_masked(&v, Selection::Bitmap(Bits::new(&[0b1010_1010])))?;
    ///     assert_eq!(evens, vec![2, 4, 6, 8]);
    ///     assert_eq!(k.take_masked(&v, Selection::Rows(&[7, 7]))?, vec![8, 8]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    #[cfg(feature = "alloc")]
    pub fn take_masked<'a, T: Value>(
        self,
        src: &[T],
        mask: impl Into<Mask<'a>>,
    ) -> Result<alloc::vec::Vec<T>, Error> {
        let n = src.len();
        match mask.into().resolve(n)? {
            Resolved::Rows(rows, m) if m.is_all() => self.take(src, rows),
            Resolved::Rows(rows, m) => Ok(rows
                .iter()
                .filter(|&&r| m.get(r as usize))
                .map(|&r| src[r as usize])
                .collect()),
            Resolved::Bits(m) => {
                let count = self.count_bits(m, n);
                let mut out = alloc::vec::Vec::with_capacity(count);
                huge_pages(&mut out);
                let k = self.compact_bits(src, m, &mut out.spare_capacity_mut()[..count]);
                // The set_len below needs every one of the `count` written.
                assert_eq!(k, count, "take_masked wrote {k} of {count} rows");
                // SAFETY: `compact_bits` wrote the first `count` slots of
                // the spare capacity (capacity >= count), asserted above.
                unsafe { out.set_len(count) };
                Ok(out)
            }
        }
    }

    /// The rows of `src` that `m` counts, in order, to the front of `out`,
    /// which holds exactly as many slots (the caller counted them); returns
    /// how many were written (all of them). Over bitmaps counting one row
    /// in three or more (bytes: one in 16), the AVX-512 level compresses
    /// and the AVX2 level permutes; otherwise a `tzcnt` loop a counted row.
    pub(crate) fn compact_bits<T: Value>(
        self,
        src: &[T],
        m: RowMask<'_>,
        out: &mut [MaybeUninit<T>],
    ) -> usize {
        let n = src.len();
        // A compress (or a permute) a few rows costs about what a `tzcnt`
        // loop's iteration does: level with it at 1 in 4 rows counted, 2x
        // at 1 in 2, behind below 1 in 4.
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if matches!(
            self.level(),
            crate::cpu::Level::Avx2 | crate::cpu::Level::Avx512
        ) && out.len() * 16 >= n
        {
            use crate::arch::scalar::gather::{Dst, Src};
            use crate::arch::x86_64::{avx2::bitmap as x2, avx512::compress as x5};
            let wide = self.level() == crate::cpu::Level::Avx512;
            let count = out.len();
            // Bytes pack 8 or 64 rows an instruction, cheap from one row
            // in 16; 4- and 8-byte values from one in 3.
            let dense = count * 3 >= n;
            let got = match (T::src(src), T::dst_uninit(out)) {
                (Src::W8(_), _) | (Src::W4(_), _) if !dense => None,
                // SAFETY: this handle's level is AVX-512 (`wide`), so the
                // CPU has it; `out`'s length is the number of rows the mask
                // counts among the `n` rows of `src`.
                (Src::W8(s), Dst::W8(d)) if wide => Some(unsafe { x5::compress_rows_w8(s, m, d) }),
                // SAFETY: as above, the level AVX2.
                (Src::W8(s), Dst::W8(d)) => Some(unsafe { x2::compress_rows_w8(s, m, d) }),
                // SAFETY: as above, AVX-512.
                (Src::W4(s), Dst::W4(d)) if wide => Some(unsafe { x5::compress_rows_w4(s, m, d) }),
                // SAFETY: as above, AVX2.
                (Src::W4(s), Dst::W4(d)) => Some(unsafe { x2::compress_rows_w4(s, m, d) }),
                (Src::W1(s), Dst::W1(d)) if wide && crate::cpu::vbmi2() => {
                    // SAFETY: as above, AVX-512, and VBMI2 as `cpu::vbmi2`
                    // says.
                    Some(unsafe { x5::compress_rows_w1(s, m, d) })
                }
                // SAFETY: as above, AVX2 (or AVX-512, which has it).
                (Src::W1(s), Dst::W1(d)) => Some(unsafe { x2::compress_rows_w1(s, m, d) }),
                // A value's source and output have one width.
                _ => None,
            };
            if let Some(k) = got {
                debug_assert_eq!(k, count);
                return k;
            }
        }
        // The rows of word `b`, a `tzcnt` loop (a whole word copied); the
        // stores are checked against `out`'s length, the count.
        let take = |b: usize, mut w: u64, k: &mut usize, out: &mut [MaybeUninit<T>]| {
            if w == !0 {
                for (d, &v) in out[*k..*k + 64].iter_mut().zip(&src[b * 64..b * 64 + 64]) {
                    d.write(v);
                }
                *k += 64;
                return;
            }
            while w != 0 {
                out[*k].write(src[b * 64 + w.trailing_zeros() as usize]);
                *k += 1;
                w &= w - 1;
            }
        };
        let mut k = 0;
        let last = |w: u64| w & (!0u64 >> ((64 - n % 64) % 64));
        if let Some(words) = m.aligned_words() {
            // One bitmap at a word boundary (a filter's output): its words
            // as they lie, the last one's rows past n cleared.
            let full = n / 64;
            for (b, &w) in words[..full].iter().enumerate() {
                take(b, w, &mut k, out);
            }
            if !n.is_multiple_of(64) {
                take(full, last(words[full]), &mut k, out);
            }
        } else {
            for b in 0..n.div_ceil(64) {
                let w = m.word(b);
                take(b, if (b + 1) * 64 > n { last(w) } else { w }, &mut k, out);
            }
        }
        k
    }

    /// [`gather`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let col: Vec<u32> = (0..1000).map(|i| i * 3).collect();
    /// for k in Kernels::supported() {
    ///     let mut out = [0u32; 3];
    ///     k.gather(&col, &[999u64, 0, 500], &mut out)?;
    ///     assert_eq!(out, [2997, 0, 1500]);
    ///     assert!(k.gather(&col, &[1000u64, 0, 0], &mut out).is_err());
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
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
    /// ```
    /// use keel_kernels::Kernels;
    /// let col = [-1i32, -2, -3];
    /// for k in Kernels::supported() {
    ///     let mut out = [0i32; 4];
    ///     // SAFETY: every index is below col.len().
    ///     unsafe { k.gather_unchecked(&col, &[2u32, 1, 0, 2], &mut out) }?;
    ///     assert_eq!(out, [-3, -2, -1, -3]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
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
    ///
    /// ```
    /// use keel_kernels::{gather::{Column, ColumnMut}, Error, Kernels};
    /// let (a, b) = ([1u64, 2, 3], [0.5f64, 1.5, 2.5]);
    /// for k in Kernels::supported() {
    ///     let (mut a_out, mut b_out) = ([0u64; 2], [0f64; 2]);
    ///     let mut outs = [ColumnMut::new(&mut a_out), ColumnMut::new(&mut b_out)];
    ///     k.gather_frame(&[Column::new(&a), Column::new(&b)], &[2u32, 0], &mut outs)?;
    ///     assert_eq!((a_out, b_out), ([3, 1], [2.5, 0.5]));
    /// }
    /// # Ok::<(), Error>(())
    /// ```
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
    /// ```
    /// use keel_kernels::{gather::{Column, ColumnMut}, Kernels};
    /// let (a, b) = ([1u32, 2, 3], [4i32, 5, 6]);
    /// let cols = [Column::new(&a), Column::new(&b)];
    /// for k in Kernels::supported() {
    ///     let (mut a_out, mut b_out) = ([0u32; 1], [0i32; 1]);
    ///     let mut outs = [ColumnMut::new(&mut a_out), ColumnMut::new(&mut b_out)];
    ///     // SAFETY: the one index, 1, is below 3, the length of both columns.
    ///     unsafe { k.gather_frame_unchecked(&cols, &[1u32], &mut outs) }?;
    ///     assert_eq!((a_out, b_out), ([2], [5]));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
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
