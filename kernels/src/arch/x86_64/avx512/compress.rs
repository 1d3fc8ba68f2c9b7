//! Register-form compresses (`vpcompressd`/`q`/`b`) and what is built on
//! them: the AVX-512 leaves that turn a mask into packed lanes or positions
//! (the HyperLogLog walks, `select`, `gather_masked` over a bitmap). The memory forms are microcoded on
//! Zen 4, so every compress here writes a register and a plain store
//! follows. Under Miri, which models none of them, a lane-by-lane model.

use crate::arch::mask::RowMask;
use core::arch::x86_64::*;
use core::mem::MaybeUninit;

/// The lanes of `v` that `k` enables moved to the front, the rest zero
/// (`vpcompressd`, register form: the memory form is microcoded on Zen 4).
/// Under Miri, which has no model of it, a lane-by-lane model.
///
/// # Safety
///
/// The CPU supports AVX-512 F.
#[inline(always)]
pub(crate) unsafe fn compress16(k: u16, v: __m512i) -> __m512i {
    #[cfg(not(miri))]
    // SAFETY: AVX-512 F, the caller's contract.
    unsafe {
        _mm512_maskz_compress_epi32(k, v)
    }
    #[cfg(miri)]
    {
        // SAFETY: __m512i and [u32; 16] have the same size, every bit
        // pattern valid.
        let a: [u32; 16] = unsafe { core::mem::transmute(v) };
        // SAFETY: as above.
        unsafe { core::mem::transmute::<[u32; 16], __m512i>(compress_model(k.into(), a)) }
    }
}

/// The compresses' model under Miri, which has none of them: the lanes
/// `k` enables, in order, then zeros.
#[cfg(miri)]
fn compress_model<T: Copy + Default, const N: usize>(k: u64, a: [T; N]) -> [T; N] {
    let mut r = [T::default(); N];
    let mut n = 0;
    for (i, &x) in a.iter().enumerate() {
        if k >> i & 1 == 1 {
            r[n] = x;
            n += 1;
        }
    }
    r
}

/// The lanes of `v` that `k` enables moved to the front, the rest zero
/// (`vpcompressq`, register form). Under Miri a lane-by-lane model.
///
/// # Safety
///
/// The CPU supports AVX-512 F.
#[inline(always)]
pub(crate) unsafe fn compress8(k: u8, v: __m512i) -> __m512i {
    #[cfg(not(miri))]
    // SAFETY: AVX-512 F, the caller's contract.
    unsafe {
        _mm512_maskz_compress_epi64(k, v)
    }
    #[cfg(miri)]
    {
        // SAFETY: __m512i and [u64; 8] have the same size, every bit
        // pattern valid.
        let a: [u64; 8] = unsafe { core::mem::transmute(v) };
        // SAFETY: as above.
        unsafe { core::mem::transmute::<[u64; 8], __m512i>(compress_model(k.into(), a)) }
    }
}

/// The bytes of `v` that `k` enables moved to the front, the rest zero
/// (`vpcompressb`, register form, AVX-512 VBMI2). Under Miri a lane-by-lane
/// model.
///
/// # Safety
///
/// The CPU supports AVX-512 VBMI2.
#[inline(always)]
unsafe fn compress64(k: u64, v: __m512i) -> __m512i {
    #[cfg(not(miri))]
    // SAFETY: AVX-512 VBMI2, the caller's contract.
    unsafe {
        _mm512_maskz_compress_epi8(k, v)
    }
    #[cfg(miri)]
    {
        // SAFETY: __m512i and [u8; 64] have the same size, every bit
        // pattern valid.
        let a: [u8; 64] = unsafe { core::mem::transmute(v) };
        // SAFETY: as above.
        unsafe { core::mem::transmute::<[u8; 64], __m512i>(compress_model(k, a)) }
    }
}

/// Whether a walk taking each word's positions by [`positions64`] or
/// [`positions64_exact`] should skip the words with no bit set, for `set`
/// bits over `words` words: only where fewer than one word in `SPAN` could
/// hold a bit, so that most words are empty and the skip's branch mostly
/// taken. Denser, the empty words fall at random (a third of them at one
/// bit a word) and the branch's misses cost more than the few cycles a
/// compress of an empty word takes. Where the two cross depends on what
/// else the walk does: `select_into` takes `SPAN` 2 (its bench's bitmaps
/// repeat, and the predictor learns the skips of a small one), the masked
/// HyperLogLog add 4.
#[inline(always)]
pub(crate) fn skips_empty<const SPAN: usize>(set: usize, words: usize) -> bool {
    set.saturating_mul(SPAN) < words
}

/// The row numbers 0..64 as bytes: what [`positions64`] compresses.
static ROWS64: [u8; 64] = {
    let mut a = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        a[i] = i as u8;
        i += 1;
    }
    a
};

/// Writes the positions of the `cnt` set bits of word `w`, plus `off`, as
/// 32-bit offsets at `out` (whole 16-lane stores: up to 64 offsets are
/// written, those past `cnt` are garbage): one byte compress of the rows
/// 0..64 for the whole word, then a widening add per 16 counted rows.
///
/// # Safety
///
/// The CPU supports AVX-512 F and VBMI2; `cnt == w.count_ones()`; `out`
/// has room for `cnt` rounded up to 16 offsets.
#[cfg(feature = "alloc")] // the HyperLogLog leaves
#[inline(always)]
pub(crate) unsafe fn positions64(w: u64, cnt: u32, off: u32, out: *mut u32) {
    // SAFETY: the caller's contract: the features, and room for each
    // 16-lane store made (the j-th only when cnt > 16 * j).
    unsafe {
        let b = compress64(w, _mm512_loadu_si512(ROWS64.as_ptr().cast()));
        let o = _mm512_set1_epi32(off as i32);
        let wide = |q: __m128i| _mm512_add_epi32(_mm512_cvtepu8_epi32(q), o);
        _mm512_storeu_si512(out.cast(), wide(_mm512_castsi512_si128(b)));
        if cnt > 16 {
            _mm512_storeu_si512(out.add(16).cast(), wide(_mm512_extracti32x4_epi32::<1>(b)));
            if cnt > 32 {
                _mm512_storeu_si512(out.add(32).cast(), wide(_mm512_extracti32x4_epi32::<2>(b)));
                if cnt > 48 {
                    _mm512_storeu_si512(
                        out.add(48).cast(),
                        wide(_mm512_extracti32x4_epi32::<3>(b)),
                    );
                }
            }
        }
    }
}

/// Writes the positions of the `cnt` set bits of word `w`, plus `off`, as
/// 32-bit offsets at `out[..cnt]`, and nothing past them: as
/// [`positions64`], each 16-lane store masked to the offsets it holds.
///
/// # Safety
///
/// The CPU supports AVX-512 F and VBMI2; `cnt == w.count_ones()`; `out`
/// has room for `cnt` offsets.
#[inline(always)]
pub(crate) unsafe fn positions64_exact(w: u64, cnt: u32, off: u32, out: *mut u32) {
    // The lanes of 16-lane store `j` that hold offsets.
    let lanes = |j: u32| -> u16 {
        let left = cnt.saturating_sub(16 * j).min(16);
        ((1u32 << left) - 1) as u16
    };
    // SAFETY: the caller's contract: the features; each masked store
    // writes only lanes below `cnt` (a masked-off lane is not written, at
    // an address formed with wrapping_add).
    unsafe {
        let b = compress64(w, _mm512_loadu_si512(ROWS64.as_ptr().cast()));
        let o = _mm512_set1_epi32(off as i32);
        let wide = |q: __m128i| _mm512_add_epi32(_mm512_cvtepu8_epi32(q), o);
        let st = |j: u32, v: __m512i| {
            _mm512_mask_storeu_epi32(out.wrapping_add(16 * j as usize).cast(), lanes(j), v)
        };
        st(0, wide(_mm512_castsi512_si128(b)));
        if cnt > 16 {
            st(1, wide(_mm512_extracti32x4_epi32::<1>(b)));
            if cnt > 32 {
                st(2, wide(_mm512_extracti32x4_epi32::<2>(b)));
                if cnt > 48 {
                    st(3, wide(_mm512_extracti32x4_epi32::<3>(b)));
                }
            }
        }
    }
}

/// [`rows_by_word`](super::super::rows_by_word) for 8-byte values: each 8
/// rows of a word loaded under their mask bits, packed by one `vpcompressq`
/// and stored masked to their count (so a word writes its count, no more).
///
/// # Safety
///
/// The CPU supports AVX-512 F; `out.len()` is the number of rows `m`
/// counts among the `src.len()` rows.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn compress_rows_w8(
    src: &[u64],
    m: RowMask<'_>,
    out: &mut [MaybeUninit<u64>],
) -> usize {
    // SAFETY: the caller's contract; each step reads lanes of the word's
    // 64 values and writes its count of lanes, so a word writes its count.
    unsafe {
        super::super::rows_by_word(src, m, out, |w, at, dst| {
            let mut k = 0;
            for j in 0..8 {
                let kb = (w >> (8 * j)) as u8;
                let v = _mm512_maskz_loadu_epi64(kb, at.wrapping_add(8 * j).cast());
                let c = kb.count_ones();
                let lanes = ((1u16 << c) - 1) as u8;
                _mm512_mask_storeu_epi64(dst.wrapping_add(k).cast(), lanes, compress8(kb, v));
                k += c as usize;
            }
            k
        })
    }
}

/// As [`compress_rows_w8`] for 4-byte values: 16 rows a `vpcompressd`.
///
/// # Safety
///
/// As [`compress_rows_w8`].
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn compress_rows_w4(
    src: &[u32],
    m: RowMask<'_>,
    out: &mut [MaybeUninit<u32>],
) -> usize {
    // SAFETY: as in `compress_rows_w8`, 16 rows a step.
    unsafe {
        super::super::rows_by_word(src, m, out, |w, at, dst| {
            let mut k = 0;
            for j in 0..4 {
                let kb = (w >> (16 * j)) as u16;
                let v = _mm512_maskz_loadu_epi32(kb, at.wrapping_add(16 * j).cast());
                let c = kb.count_ones();
                let lanes = ((1u32 << c) - 1) as u16;
                _mm512_mask_storeu_epi32(dst.wrapping_add(k).cast(), lanes, compress16(kb, v));
                k += c as usize;
            }
            k
        })
    }
}

/// As [`compress_rows_w8`] for 1-byte values on a CPU with VBMI2: a
/// word's 64 rows a `vpcompressb`.
///
/// # Safety
///
/// As [`compress_rows_w8`], and the CPU supports AVX-512 VBMI2.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt,avx512vbmi2"
)]
pub(crate) unsafe fn compress_rows_w1(
    src: &[u8],
    m: RowMask<'_>,
    out: &mut [MaybeUninit<u8>],
) -> usize {
    // SAFETY: as in `compress_rows_w8`, the word's 64 rows at once (`w`
    // is neither 0 nor all ones, so its count is below 64 and the store
    // mask is exact); VBMI2 is enabled here (the caller's contract).
    unsafe {
        super::super::rows_by_word(src, m, out, |w, at, dst| {
            let c = w.count_ones();
            let v = _mm512_maskz_loadu_epi8(w, at.cast());
            _mm512_mask_storeu_epi8(dst.cast(), (1u64 << c) - 1, compress64(w, v));
            c as usize
        })
    }
}
