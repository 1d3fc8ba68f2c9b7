//! x86-64 leaves: AVX2 (with BMI1/BMI2, POPCNT, FMA) and AVX-512
//! (F, BW, CD, DQ, VL, VPOPCNTDQ), matching [`crate::cpu::Level`].

pub(crate) mod avx2;
pub(crate) mod avx512;
#[cfg(feature = "alloc")]
pub(crate) mod cold;
#[cfg(feature = "alloc")]
pub(crate) mod hot;

/// Rows of `v` before its first 64-byte line boundary (all of them if it
/// has none): the unmasked integer sums add them apart and start their
/// loads on a line, so that none splits two (a split load costs two; any
/// order gives an integer sum's value). At 16 bytes off a line, `i64` sums
/// of 64 Ki rows ran at 0.65 of the aligned speed at AVX-512 on an Intel
/// model 167 (`bench/results/2026-12-07-kernels-aligned-loads-intel.md`).
#[inline(always)]
pub(crate) fn head_rows<T>(v: &[T]) -> usize {
    (v.as_ptr().addr().wrapping_neg() % 64 / core::mem::size_of::<T>()).min(v.len())
}

/// On the CPUs `cpu::avx2_prefetch` names (Intel), the AVX2 leaves read
/// columns of at least this many bytes with a software prefetch
/// [`PREFETCH_AHEAD`] bytes ahead of the loads: they come from L3 or DRAM,
/// and there the 256-bit loads alone keep too few lines in flight (AVX2's
/// u16 compare read 0.71-0.76 of the read pass at 128 Mi rows, 0.93-1.01
/// with the prefetch: `bench/results/2026-12-03-kernels-filter-prefetch-intel.md`;
/// on Zen 4 the prefetch only cost). Smaller columns skip it, as its extra
/// instruction a line cost up to 8% in L1. Under Miri 0, so the tests'
/// short columns run the prefetching loop.
pub(crate) const PREFETCH_MIN_BYTES: usize = if cfg!(miri) { 0 } else { 1 << 20 };

/// How far ahead of the loads [`prefetch_lines`] reaches: 2 KiB measured
/// best of 1, 2 and 4 KiB.
pub(crate) const PREFETCH_AHEAD: usize = 2048;

/// Prefetches (into all cache levels) the `bytes` bytes from `PREFETCH_AHEAD`
/// past `p`, a line (64 bytes) at a time. The addresses may lie past the
/// column's end: a prefetch never faults, and none is dereferenced.
#[inline(always)]
pub(crate) fn prefetch_lines(p: *const u8, bytes: usize) {
    prefetch_from(p.wrapping_add(PREFETCH_AHEAD), bytes);
}

/// Prefetches (into all cache levels) the `bytes` bytes from `p` itself, a
/// line at a time; as [`prefetch_lines`], the addresses need not be valid.
#[inline(always)]
pub(crate) fn prefetch_from(p: *const u8, bytes: usize) {
    let mut off = 0;
    while off < bytes {
        let q = p.wrapping_add(off);
        #[cfg(not(miri))]
        // SAFETY: `prefetcht0` is SSE, which every x86-64 has; it is a hint
        // that reads nothing the program can observe and cannot fault.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(q.cast())
        };
        #[cfg(miri)]
        let _ = q;
        off += 64;
    }
}

/// The word loop of the AVX2 and AVX-512 `compress_rows_*` leaves
/// (`gather_masked` over a bitmap): the values of `src` at the rows `m`
/// counts, in row order, to `out`, whose length is their count.
/// A word with none counted is skipped, a full one copied; `word(w, at,
/// dst)` packs a word's rows with whole-vector stores (lanes past its
/// count garbage, overwritten by the next store) where they cannot reach
/// past `out` (its last 64 slots take a `tzcnt` loop, as does the last
/// partial word).
///
/// # Safety
///
/// `out.len()` is the number of rows `m` counts among the `src.len()`
/// rows; `word` reads the 64 values at `at` and writes at most 64 slots
/// from `dst`, the first of them its count of packed values.
#[inline(always)]
pub(crate) unsafe fn rows_by_word<T: Copy>(
    src: &[T],
    m: crate::arch::mask::RowMask<'_>,
    out: &mut [core::mem::MaybeUninit<T>],
    word: impl Fn(u64, *const T, *mut T) -> usize,
) -> usize {
    let (n, len) = (src.len(), out.len());
    let o = out.as_mut_ptr().cast::<T>();
    let mut k = 0;
    for b in 0..n.div_ceil(64) {
        let mut w = m.word(b) & (!0u64 >> (64 - (n - b * 64).min(64)));
        if w == 0 {
            continue;
        }
        if w == !0 {
            for (d, &v) in out[k..k + 64].iter_mut().zip(&src[b * 64..b * 64 + 64]) {
                d.write(v);
            }
            k += 64;
        } else if (b + 1) * 64 <= n && k + 64 <= len {
            // SAFETY: the word's 64 values are in `src` ((b + 1) * 64 <= n)
            // and the 64 slots from `k` in `out`; `word` writes no more.
            k += unsafe { word(w, src.as_ptr().add(b * 64), o.add(k)) };
        } else {
            while w != 0 {
                out[k].write(src[b * 64 + w.trailing_zeros() as usize]);
                k += 1;
                w &= w - 1;
            }
        }
    }
    k
}
