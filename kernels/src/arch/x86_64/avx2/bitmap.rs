//! AVX2 bitmap kernels. and/or/and-not are plain loops compiled with AVX2
//! (the compiler emits 256-bit `vpand`/`vpor`/`vpandn`); popcount uses the
//! nibble-lookup method (`vpshufb` + `vpsadbw`); select looks up a byte's
//! positions in a table where bitmaps count one row in 16 or more, else it
//! is the scalar loop compiled with BMI1 (`tzcnt`, `blsr`); the same table
//! gives `gather_masked`'s leaves their `vpermd` indices; `compact` packs
//! a bitmap's bits a `pext` a word.

use crate::arch::scalar::bitmap as scalar;
use core::arch::x86_64::*;

macro_rules! binop {
    ($name:ident) => {
        /// As the scalar twin, compiled for AVX2.
        ///
        /// # Safety
        /// The CPU supports AVX2; `dst.len() == src.len()`.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name(dst: &mut [u64], src: &[u64]) {
            scalar::$name(dst, src)
        }
    };
}
binop!(and);
binop!(or);
binop!(andnot);

/// Set bits in `words`.
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn popcount(words: &[u64]) -> usize {
    let chunks = words.len() / 4;
    // SAFETY: each load reads 4 words of chunk `c < chunks`, inside `words`;
    // AVX2 is enabled.
    let simd = unsafe {
        let lut = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let mut acc = _mm256_setzero_si256();
        for c in 0..chunks {
            let v = _mm256_loadu_si256(words.as_ptr().add(4 * c).cast());
            let lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
            let hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16::<4>(v), low));
            let bytes = _mm256_add_epi8(lo, hi);
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
        }
        let mut l = [0u64; 4];
        _mm256_storeu_si256(l.as_mut_ptr().cast(), acc);
        l.iter().sum::<u64>() as usize
    };
    simd + scalar::popcount(&words[chunks * 4..])
}

/// As the scalar twin, compiled with BMI1.
///
/// # Safety
/// The CPU supports AVX2 (and BMI1); arguments as the scalar twin's.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn select(words: &[u64], rows: usize, out: &mut [u32]) -> usize {
    scalar::select(words, rows, out)
}

/// For each byte value, the positions of its set bits, lowest first, one
/// byte each (the rest zero): what [`select_lut`] widens.
static POSITIONS8: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let (mut v, mut k, mut i) = (0u64, 0, 0);
        while i < 8 {
            if b >> i & 1 == 1 {
                v |= (i as u64) << (8 * k);
                k += 1;
            }
            i += 1;
        }
        t[b] = v;
        b += 1;
    }
    t
};

/// As the scalar twin, 8 rows at a time: each byte of a word looks up its
/// set bits' positions ([`POSITIONS8`]), widened to eight 32-bit offsets
/// and stored whole, the count advanced by the byte's popcount (so the
/// lanes past it are overwritten by the next store). A word with no set
/// bit is skipped; the words whose whole stores might reach past `out`
/// (its last 64 slots) take the twin's loop.
///
/// # Safety
/// The CPU supports AVX2 (and BMI1, POPCNT); `out.len()` is the number of
/// set bits among the first `rows` of `words` (which has exactly
/// `rows.div_ceil(64)` words).
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn select_lut(words: &[u64], rows: usize, out: &mut [u32]) -> usize {
    let (len, p) = (out.len(), out.as_mut_ptr());
    let full = rows / 64;
    let mut n = 0;
    for (i, &w) in words[..full].iter().enumerate() {
        if w == 0 {
            continue;
        }
        let base = (i * 64) as u32;
        if n + 64 > len {
            n = scalar::select_word(w, base, out, n);
            continue;
        }
        // SAFETY: AVX2 is enabled; byte j's store writes slots
        // n..n + 8 with n below the word's start plus 56, so below its
        // start plus 64 <= len (checked above).
        unsafe {
            let at = _mm256_set1_epi32(base as i32);
            for j in 0..8 {
                let byte = (w >> (8 * j)) as u8;
                let pos = _mm_loadl_epi64(POSITIONS8.as_ptr().add(usize::from(byte)).cast());
                let v = _mm256_add_epi32(_mm256_cvtepu8_epi32(pos), at);
                let v = _mm256_add_epi32(v, _mm256_set1_epi32(8 * j));
                _mm256_storeu_si256(p.add(n).cast(), v);
                // (A slot for each byte from a prefix sum of the bytes'
                // counts, so the stores need not wait on this chain, ran
                // at 0.8 of this: the chain is one add a byte.)
                n += byte.count_ones() as usize;
            }
        }
    }
    if !rows.is_multiple_of(64) {
        let w = words[full] & ((1u64 << (rows % 64)) - 1);
        n = scalar::select_word(w, (full * 64) as u32, out, n);
    }
    n
}

/// The bitmap compaction (`bitmap::compact`) a word a `pext`; the AVX-512
/// level runs it too. Not on CPUs whose `pext` is microcoded
/// (`cpu::fast_pext`).
///
/// # Safety
/// The CPU has BMI2; `out` holds exactly the words the bits `m` counts
/// fill (`scalar::compact_with`).
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn compact(
    src: crate::arch::mask::Bitmap<'_>,
    m: crate::arch::mask::RowMask<'_>,
    rows: usize,
    out: &mut [u64],
) -> usize {
    // SAFETY: BMI2 is enabled here; `out` as the caller promised.
    unsafe { scalar::compact_with::<true>(src, m, rows, out) }
}

/// Rows among the first `rows` that `m` counts: one word-aligned bitmap
/// through [`popcount`] (as the AVX-512 leaf does with `vpopcntq`; word by
/// word it ran at 0.34-0.41 of arrow's count of the same bitmap), anything
/// else as the scalar twin, compiled with `popcnt`.
///
/// # Safety
/// The CPU supports this level.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn count_mask(m: crate::arch::mask::RowMask<'_>, rows: usize) -> usize {
    if let Some(w) = m.aligned_words() {
        // SAFETY: AVX2 is enabled.
        return scalar::count_words(w, rows, |full| unsafe { popcount(full) });
    }
    scalar::count_mask(m, rows)
}

/// For each 4-bit mask, the `vpermd` indices that move its set 64-bit
/// lanes (each two 32-bit halves) to the front, in order: what
/// [`compress_rows_w8`] permutes by.
static PACK4X64: [[u32; 8]; 16] = {
    let mut t = [[0u32; 8]; 16];
    let mut b = 0;
    while b < 16 {
        let (mut k, mut i) = (0, 0);
        while i < 4 {
            if b >> i & 1 == 1 {
                t[b][2 * k] = 2 * i as u32;
                t[b][2 * k + 1] = 2 * i as u32 + 1;
                k += 1;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// [`rows_by_word`](super::super::rows_by_word) for 8-byte values: each
/// 4 rows of a word loaded
/// whole, their counted lanes moved to the front by one `vpermd`
/// ([`PACK4X64`]) and stored whole.
///
/// # Safety
///
/// The CPU supports AVX2; `out.len()` is the number of rows `m` counts
/// among the `src.len()` rows.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn compress_rows_w8(
    src: &[u64],
    m: crate::arch::mask::RowMask<'_>,
    out: &mut [core::mem::MaybeUninit<u64>],
) -> usize {
    // SAFETY: the caller's contract; a word's 16 steps read its 64 values,
    // and step j stores 4 lanes at `k <= 4 * j`, inside the word's 64
    // slots (`rows_by_word` checked they are in `out`).
    unsafe {
        super::super::rows_by_word(src, m, out, |w, at, dst| {
            let mut k = 0;
            for j in 0..16 {
                let nib = (w >> (4 * j)) as usize & 15;
                let v = _mm256_loadu_si256(at.add(4 * j).cast());
                let idx = _mm256_loadu_si256(PACK4X64[nib].as_ptr().cast());
                _mm256_storeu_si256(dst.add(k).cast(), _mm256_permutevar8x32_epi32(v, idx));
                k += (nib as u32).count_ones() as usize;
            }
            k
        })
    }
}

/// As [`compress_rows_w8`] for 4-byte values: each 8 rows moved by one
/// `vpermd` whose indices are the byte's set positions ([`POSITIONS8`]).
///
/// # Safety
///
/// As [`compress_rows_w8`].
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn compress_rows_w4(
    src: &[u32],
    m: crate::arch::mask::RowMask<'_>,
    out: &mut [core::mem::MaybeUninit<u32>],
) -> usize {
    // SAFETY: as in `compress_rows_w8`: step j stores 8 lanes at
    // `k <= 8 * j`.
    unsafe {
        super::super::rows_by_word(src, m, out, |w, at, dst| {
            let mut k = 0;
            for j in 0..8 {
                let byte = (w >> (8 * j)) as u8;
                let v = _mm256_loadu_si256(at.add(8 * j).cast());
                let pos = _mm_loadl_epi64(POSITIONS8.as_ptr().add(usize::from(byte)).cast());
                let idx = _mm256_cvtepu8_epi32(pos);
                _mm256_storeu_si256(dst.add(k).cast(), _mm256_permutevar8x32_epi32(v, idx));
                k += byte.count_ones() as usize;
            }
            k
        })
    }
}

/// As [`compress_rows_w8`] for 1-byte values: each 8 rows moved by one
/// `pshufb` whose indices are the byte's set positions ([`POSITIONS8`]),
/// stored as 8 bytes.
///
/// # Safety
///
/// As [`compress_rows_w8`].
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn compress_rows_w1(
    src: &[u8],
    m: crate::arch::mask::RowMask<'_>,
    out: &mut [core::mem::MaybeUninit<u8>],
) -> usize {
    // SAFETY: as in `compress_rows_w8`: step j reads the word's 8 values
    // at 8 * j and stores 8 bytes at `k <= 8 * j`.
    unsafe {
        super::super::rows_by_word(src, m, out, |w, at, dst| {
            let mut k = 0;
            for j in 0..8 {
                let byte = (w >> (8 * j)) as u8;
                let v = _mm_loadl_epi64(at.add(8 * j).cast());
                let idx = _mm_loadl_epi64(POSITIONS8.as_ptr().add(usize::from(byte)).cast());
                _mm_storel_epi64(dst.add(k).cast(), _mm_shuffle_epi8(v, idx));
                k += byte.count_ones() as usize;
            }
            k
        })
    }
}
