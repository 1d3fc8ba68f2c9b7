//! AVX-512 HyperLogLog leaves. Hashing, register index and rank are
//! computed eight keys per vector into a packed `(index << 8) | rank` block
//! (the rank with `vplzcntq`); the register updates then run as a scalar loop
//! over the block: a byte scatter-max would need conflict detection and
//! scatters, which are slower than scalar stores on current cores.

use core::arch::x86_64::*;

use super::compress::{compress8, compress16, positions64, skips_empty};
use super::hash::Mixer;
use crate::arch::mask::RowMask;
use crate::arch::scalar::hll as scalar;
use crate::arch::x86_64::prefetch_from;

/// Keys per block: 1 KiB of packed updates on the stack.
const BLOCK: usize = 256;

/// Eight hashes to their register indexes and ranks, a lane each.
///
/// # Safety
///
/// The CPU supports AVX-512 F and CD (called from an AVX-512 leaf);
/// `1 <= p <= 63`.
#[inline(always)]
unsafe fn index_rank(h: __m512i, p: u32) -> (__m512i, __m512i) {
    // SAFETY: AVX-512 F/CD register ops; the caller guarantees them.
    unsafe {
        // Per-lane shifts by a splatted count (`vpsrlvq`, one uop) rather
        // than a count in an xmm register (`vpsrlq`, two on some cores).
        let idx = _mm512_srlv_epi64(h, _mm512_set1_epi64(64 - p as i64));
        let w = _mm512_or_si512(
            _mm512_sllv_epi64(h, _mm512_set1_epi64(p as i64)),
            _mm512_set1_epi64(1i64 << (p - 1)),
        );
        // The guard bit keeps `w` nonzero, so the rank is its leading zero
        // count plus one (`vplzcntq`, AVX-512 CD).
        let rank = _mm512_add_epi64(_mm512_lzcnt_epi64(w), _mm512_set1_epi64(1));
        (idx, rank)
    }
}

/// Eight hashes to eight packed `(index << 8) | rank` dwords.
///
/// # Safety
///
/// As [`index_rank`].
#[inline(always)]
unsafe fn pack(h: __m512i, p: u32) -> __m256i {
    // SAFETY: forwarded contract.
    unsafe {
        let (idx, rank) = index_rank(h, p);
        _mm512_cvtepi64_epi32(_mm512_or_si512(_mm512_slli_epi64::<8>(idx), rank))
    }
}

/// Eight hashes to their register indexes and ranks as dwords, apart, so
/// that the update loop ([`scalar::apply_split`]) reads each without the
/// shift and mask a packed dword takes.
///
/// # Safety
///
/// As [`index_rank`].
#[inline(always)]
unsafe fn split(h: __m512i, p: u32) -> (__m256i, __m256i) {
    // SAFETY: forwarded contract.
    unsafe {
        let (idx, rank) = index_rank(h, p);
        (_mm512_cvtepi64_epi32(idx), _mm512_cvtepi64_epi32(rank))
    }
}

/// AVX-512 twin of `arch::scalar::hll::add_u64`.
///
/// # Safety
///
/// The CPU supports AVX-512; `4 <= p <= 18`; `regs.len() == 1 << p`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn add_u64(regs: &mut [u8], p: u32, seed: u64, keys: &[u64]) {
    // SAFETY: AVX-512 is enabled on this leaf (caller contract).
    let mx = unsafe { Mixer::new() };
    let s = _mm512_set1_epi64(seed as i64);
    let mut packed = [0u32; BLOCK];
    let mut ranks = [0u32; BLOCK];
    let mut chunks = keys.chunks_exact(BLOCK);
    for chunk in &mut chunks {
        for (j, q) in chunk.chunks_exact(8).enumerate() {
            // SAFETY: q has 8 keys (64 bytes); packed[8j..8j+8] and
            // ranks[8j..8j+8] are in bounds since 8j + 8 <= BLOCK; the CPU
            // supports AVX-512 (caller contract), as `mix` and `split`
            // need, and 4 <= p <= 18.
            unsafe {
                let k = _mm512_loadu_si512(q.as_ptr().cast());
                let (ix, rk) = split(mx.mix(_mm512_xor_si512(k, s)), p);
                _mm256_storeu_si256(packed.as_mut_ptr().add(8 * j).cast(), ix);
                _mm256_storeu_si256(ranks.as_mut_ptr().add(8 * j).cast(), rk);
            }
        }
        // SAFETY: every index is a hash's top `p` bits, below
        // `1 << p == regs.len()` (caller contract).
        unsafe { scalar::apply_split(regs, &packed, &ranks) };
    }
    // The last short chunk eight keys at a time too, the last group's
    // loads masked (other lanes are not read; their slots are not applied):
    // the sparse leaf's batches end here, a few hundred keys each.
    let rest = chunks.remainder();
    for (j, q) in rest.chunks(8).enumerate() {
        let k = if q.len() == 8 {
            !0
        } else {
            (1u8 << q.len()) - 1
        };
        // SAFETY: the enabled lanes are q's keys; packed[8j..8j+8] is in
        // bounds since 8j < rest.len() < BLOCK and BLOCK is a multiple of
        // 8; AVX-512 (caller contract) and 4 <= p <= 18.
        unsafe {
            let x = _mm512_maskz_loadu_epi64(k, q.as_ptr().cast());
            let v = pack(mx.mix(_mm512_xor_si512(x, s)), p);
            _mm256_storeu_si256(packed.as_mut_ptr().add(8 * j).cast(), v);
        }
    }
    scalar::apply_packed(regs, &packed[..rest.len()]);
}

/// The keys at `base[idx[i]]` for the lanes `k` enables, the others zero
/// (`vpgatherdq`). Under Miri, which has no model of it, lane by lane.
///
/// # Safety
///
/// The CPU supports AVX-512 F; every enabled lane's `base + idx` is a key
/// in bounds (disabled lanes are not read).
#[inline(always)]
unsafe fn gather8(k: u8, idx: __m256i, base: *const u64) -> __m512i {
    #[cfg(not(miri))]
    // SAFETY: the caller's contract.
    unsafe {
        _mm512_mask_i32gather_epi64::<8>(_mm512_setzero_si512(), k, idx, base.cast())
    }
    #[cfg(miri)]
    {
        // SAFETY: __m256i and [i32; 8] have the same size, every bit
        // pattern valid.
        let ix: [i32; 8] = unsafe { core::mem::transmute(idx) };
        let mut r = [0u64; 8];
        for (i, x) in r.iter_mut().enumerate() {
            if k >> i & 1 == 1 {
                // SAFETY: an enabled lane's key is in bounds (contract).
                *x = unsafe { *base.offset(ix[i] as isize) };
            }
        }
        // SAFETY: as above, [u64; 8].
        unsafe { core::mem::transmute::<[u64; 8], __m512i>(r) }
    }
}

/// Positions the masked add collects before it gathers, hashes and
/// applies them: a block's worth, or under Miri a few, so that short test
/// columns cross a flush.
const MASKED_FLUSH: usize = if cfg!(miri) { 16 } else { BLOCK };

/// Rows one batch of positions may span: they are 32-bit offsets from the
/// batch's first row (the gather's index width). Under Miri one block, so
/// the tests' short columns end batches by span too.
const MASKED_SPAN: usize = if cfg!(miri) { 64 } else { 1 << 30 };

/// Gathers the keys at `base[pos[..fill]]`, hashes them (mixer, splatted
/// seed) and packs them eight at a time, and applies the `fill` updates.
///
/// # Safety
///
/// As [`add_u64`]; `fill <= pos.len()`, `pos.len()` and `packed.len()`
/// are multiples of 8, and `base + pos[i]` is a key in bounds for every
/// `i < fill`.
#[inline(always)]
unsafe fn flush_positions(
    regs: &mut [u8],
    p: u32,
    (mx, s): (Mixer, __m512i),
    base: *const u64,
    pos: &[u32],
    fill: usize,
    packed: &mut [u32],
) {
    let mut t = 0;
    while t < fill {
        let left = fill - t;
        let k = if left >= 8 { !0 } else { (1u8 << left) - 1 };
        // SAFETY: t < fill <= pos.len() and both lengths are multiples of
        // 8, so pos[t..t + 8] and packed[t..t + 8] are in bounds; the
        // gather reads only the lanes below `left`, positions below `fill`
        // (contract); AVX-512 is enabled and 4 <= p <= 18.
        unsafe {
            let ix = _mm256_loadu_si256(pos.as_ptr().add(t).cast());
            let v = pack(mx.mix(_mm512_xor_si512(gather8(k, ix, base), s)), p);
            _mm256_storeu_si256(packed.as_mut_ptr().add(t).cast(), v);
        }
        t += 8;
    }
    scalar::apply_packed(regs, &packed[..fill]);
}

/// A selection in one word-aligned bitmap counting fewer than one row in
/// this many takes [`add_u64_sparse`]; on a CPU with VBMI2, one counting
/// fewer than one row in [`DENSE_ROWS`] (there the sparse leaf's byte
/// compress a word made it 0.88 of the walk's time at 1 in 10 rows,
/// `bench/results/2026-12-06-kernels-select-vbmi2-zen4.md`).
const SPARSE_ROWS: usize = 16;

/// A mask counting at least one row in this many takes
/// [`add_u64_dense`].
const DENSE_ROWS: usize = 6;

/// The masked add for a mask counting at least one row in [`DENSE_ROWS`]:
/// each 64-row word's keys are loaded whole, eight at a time, and the
/// counted ones compressed (`vpcompressq`, register form) into a stage,
/// which is added as a column a block at a time. No positions, no gather
/// and no branch on the word: it reads every key line, which at one row
/// in six or more nearly every word's lines hold a counted row of anyway.
/// On Zen 4 against the walk of [`add_u64_masked`] (paired medians of the
/// masked add against `select_into` + gather + add): 1 in 2 1.86x against
/// 1.58x, 1 in 4 1.59x against 1.54x, level from 1 in 6 to 1 in 10
/// (`bench/results/2026-12-06-kernels-hll-dense-zen4.md`).
///
/// # Safety
///
/// As [`add_u64`]; `m` covers `keys.len()` rows.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
unsafe fn add_u64_dense(regs: &mut [u8], p: u32, seed: u64, keys: &[u64], m: RowMask<'_>) {
    let n = keys.len();
    // A block, and room for one more word's keys past it.
    let mut stage = [0u64; MASKED_FLUSH + 64];
    let mut fill = 0;
    let whole = n / 64;
    for b in 0..whole {
        let w = m.word(b);
        // SAFETY: word b is whole (b < n / 64), so its 64 keys are in
        // bounds; fill < MASKED_FLUSH before the word, so each 8-key store
        // (at fill + 56 at most) ends below MASKED_FLUSH + 64; AVX-512 is
        // enabled (caller contract).
        unsafe {
            let base = keys.as_ptr().add(b * 64);
            let mut at = fill;
            for q in 0..8 {
                let k = (w >> (8 * q)) as u8;
                let v = _mm512_loadu_si512(base.add(8 * q).cast());
                _mm512_storeu_si512(stage.as_mut_ptr().add(at).cast(), compress8(k, v));
                at += k.count_ones() as usize;
            }
        }
        fill += w.count_ones() as usize;
        if fill >= MASKED_FLUSH {
            // SAFETY: as this leaf.
            unsafe { add_u64(regs, p, seed, &stage[..fill]) };
            fill = 0;
        }
    }
    // The last rows, under a word: at most 63 keys more.
    if whole * 64 < n {
        let mut x = m.word(whole) & ((1u64 << (n % 64)) - 1);
        while x != 0 {
            stage[fill] = keys[whole * 64 + x.trailing_zeros() as usize];
            fill += 1;
            x &= x - 1;
        }
    }
    // SAFETY: as this leaf.
    unsafe { add_u64(regs, p, seed, &stage[..fill]) };
}

/// Positions a sparse batch holds (4 KiB). At least 64, a word's worth, so
/// that every batch takes a word. Under Miri 64: there batches also end
/// after one word (`MASKED_SPAN`), so the tests' short columns cross them.
const SPARSE_CAP: usize = if cfg!(miri) { 64 } else { 1024 };
static_assertions::const_assert!(SPARSE_CAP >= 64 && SPARSE_CAP.is_multiple_of(8));

/// The masked add for a sparse selection in one word-aligned bitmap: a
/// batch of words is walked with a `tzcnt` loop (one iteration a counted
/// row, nothing for an empty word) until a whole word's rows might not fit
/// [`SPARSE_CAP`], its keys are gathered by the scalar gather (prefetching
/// 32 rows ahead) into a stage and added as a column. At 1 in 64 selected
/// the per-word work of [`add_u64_masked`]'s walk (its prefetches,
/// compresses and flush tests) made it 0.54-0.76x `select_into` + gather +
/// add; this is those three passes a batch at a time, with the positions
/// and keys in L1: 0.83-0.95x on Zen 4 while each batch was first sized by
/// a popcount pass over its words
/// (`bench/results/2026-12-04-kernels-hll-select-zen4.md`), 0.97-1.07x
/// since the walk itself ends the batch
/// (`bench/results/2026-12-04-kernels-hll-sparse-batch-zen4.md`). With
/// `VBMI2` a word's positions are one byte compress ([`positions64`]), as
/// `select_into` takes them there, empty words included unless most are
/// ([`skips_empty`]; at 1 in 64 rows the skip's mispredicted branch made
/// the add take 1.58x the time on an Intel model 167,
/// `bench/results/2026-12-07-kernels-select-branchless-intel.md`).
///
/// # Safety
///
/// As [`add_u64`]; `words` holds `keys.len().div_ceil(64)` words, counting
/// `counted` rows (only the speed depends on it); with `VBMI2`, the CPU
/// supports AVX-512 VBMI2 (inlined into the leaves that enable the
/// features).
#[inline(always)]
unsafe fn add_u64_sparse<const VBMI2: bool>(
    regs: &mut [u8],
    p: u32,
    seed: u64,
    keys: &[u64],
    words: &[u64],
    counted: usize,
) {
    let n = keys.len();
    let skip = skips_empty::<4>(counted, words.len());
    let mut pos = [0u32; SPARSE_CAP];
    let mut stage = [core::mem::MaybeUninit::<u64>::uninit(); SPARSE_CAP];
    let mut b = 0;
    while b < words.len() {
        // Words b..e, walked while a whole word's rows still fit: at least
        // one (a word counts at most 64 <= SPARSE_CAP rows), spanning under
        // 2^30 rows (32-bit offsets). Bits past row n are cleared.
        let (mut e, mut got) = (b, 0);
        let lim = words.len().min(b + MASKED_SPAN / 64);
        while e < lim && got + 64 <= SPARSE_CAP {
            let mut w = words[e];
            if (e + 1) * 64 > n {
                w &= (1u64 << (n % 64)).wrapping_sub(1);
            }
            if VBMI2 {
                if skip && w == 0 {
                    e += 1;
                    continue;
                }
                let cnt = w.count_ones();
                // SAFETY: VBMI2 (caller contract); `got + 64 <=
                // SPARSE_CAP`, so `pos` has room for the word's
                // offsets rounded up to 16.
                unsafe { positions64(w, cnt, ((e - b) * 64) as u32, pos.as_mut_ptr().add(got)) };
                got += cnt as usize;
            } else {
                got = crate::arch::scalar::bitmap::select_word(
                    w,
                    ((e - b) * 64) as u32,
                    &mut pos,
                    got,
                );
            }
            e += 1;
        }
        // SAFETY: the walk wrote `got <= SPARSE_CAP` offsets, each a
        // counted row below n, offset from `b * 64`, so below
        // `keys.len() - b * 64`; `stage` has room for them.
        unsafe {
            crate::arch::scalar::gather::take(&keys[b * 64..], &pos, &mut stage[..got], true)
        };
        // SAFETY: `take` wrote the first `got`; AVX-512 (caller contract).
        unsafe {
            let st = core::slice::from_raw_parts(stage.as_ptr().cast::<u64>(), got);
            add_u64(regs, p, seed, st);
        }
        b = e;
    }
}

/// AVX-512 twin of `arch::scalar::hll::add_u64_masked`. Each 64 rows'
/// counted positions go into a batch of 32-bit offsets: compressed
/// (`vpcompressd`, 16 rows at a time) when the word counts more than 4
/// rows, else taken one at a time with `tzcnt` (four stores, no branch per
/// row). Meanwhile the key lines the batch will read are prefetched: the
/// word's eight, or for a sparse word the lines of its rows. A full batch
/// is gathered eight keys at a time (`vpgatherdq`), hashed, packed and
/// applied. So only counted keys are hashed, and no branch depends on a
/// row. (Compressing the keys themselves, eight rows at a time, into a
/// stage took eight compresses and eight line-splitting 64-byte stores per
/// 64 rows: on Intel, at 1 in 64 selected, 0.43 ns a row against 0.24 for
/// `select_into` + gather + add.) On Zen 4 the prefetch and the `tzcnt`
/// path took 1 in 2, 1 in 10 and 1 in 64 from 1.13-1.44x, 0.99-1.23x and
/// 0.42-0.82x the three passes to 1.50-1.69x, 1.16-1.50x and 0.54-0.76x
/// (`bench/results/2026-12-04-kernels-hll-select-zen4.md`). A selection in
/// one word-aligned bitmap counting under one row in [`SPARSE_ROWS`] takes
/// [`add_u64_sparse`] instead, and a mask counting at least one row in
/// [`DENSE_ROWS`] [`add_u64_dense`]. On a CPU with AVX-512 VBMI2,
/// [`add_u64_masked_vbmi2`] is this walk with each word's positions taken
/// by one byte compress whatever its count ([`positions64`]): on Zen 4, at
/// 1 in 10 selected, 0.88 of this walk's time
/// (`bench/results/2026-12-06-kernels-hll-vbmi2-zen4.md`); there a
/// word-aligned bitmap takes the sparse leaf below the dense leaf's
/// density (see [`SPARSE_ROWS`]), so the walk serves bitmaps at a bit
/// offset.
///
/// # Safety
///
/// As [`add_u64`]; `m` covers `keys.len()` rows.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn add_u64_masked(
    regs: &mut [u8],
    p: u32,
    seed: u64,
    keys: &[u64],
    m: RowMask<'_>,
) {
    // SAFETY: forwarded; no VBMI2 asked.
    unsafe { masked::<false>(regs, p, seed, keys, m) }
}

/// [`add_u64_masked`] on a CPU with AVX-512 VBMI2: the same walk, each
/// word's counted positions taken by [`positions64`] (one `vpcompressb`
/// and a widening add per 16 counted rows, no `tzcnt` path for words of a
/// few rows, so no branch on the count below 17).
///
/// # Safety
///
/// As [`add_u64`], and the CPU supports AVX-512 VBMI2; `m` covers
/// `keys.len()` rows.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,avx512vbmi2,bmi2,popcnt"
)]
pub(crate) unsafe fn add_u64_masked_vbmi2(
    regs: &mut [u8],
    p: u32,
    seed: u64,
    keys: &[u64],
    m: RowMask<'_>,
) {
    // SAFETY: forwarded; VBMI2 is enabled here.
    unsafe { masked::<true>(regs, p, seed, keys, m) }
}

/// The body of [`add_u64_masked`] and [`add_u64_masked_vbmi2`].
///
/// # Safety
///
/// As [`add_u64_masked`]; with `VBMI2`, the CPU supports AVX-512 VBMI2.
#[inline(always)]
unsafe fn masked<const VBMI2: bool>(
    regs: &mut [u8],
    p: u32,
    seed: u64,
    keys: &[u64],
    m: RowMask<'_>,
) {
    let n = keys.len();
    let counted = if let Some(words) = m.aligned_words() {
        let words = &words[..n.div_ceil(64)];
        // SAFETY: AVX-512 F and VPOPCNTDQ are enabled (caller contract).
        let counted = unsafe { super::bitmap::popcount(words) };
        // With VBMI2 the sparse leaf's three passes (a compress a word, the
        // gather, the add) beat the walk below the dense leaf's density.
        let sparse_rows = if VBMI2 { DENSE_ROWS } else { SPARSE_ROWS };
        if counted.saturating_mul(sparse_rows) < n {
            // SAFETY: as this leaf; `words` covers the rows.
            unsafe { add_u64_sparse::<VBMI2>(regs, p, seed, keys, words, counted) };
            return;
        }
        counted
    } else {
        // One pass over the mask's words: a few instructions a word
        // beside the tens of cycles a word of either leaf below takes.
        (0..n.div_ceil(64))
            .map(|b| {
                (m.word(b) & (!0u64 >> ((64 - (n - b * 64).min(64)) % 64))).count_ones() as usize
            })
            .sum()
    };
    if counted.saturating_mul(DENSE_ROWS) >= n {
        // SAFETY: as this leaf.
        unsafe { add_u64_dense(regs, p, seed, keys, m) };
        return;
    }
    // SAFETY: AVX-512 is enabled on this leaf (caller contract).
    let (mx, s, lanes) = unsafe {
        (
            Mixer::new(),
            _mm512_set1_epi64(seed as i64),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        )
    };
    // Room for one more 64-row block past a flush point.
    let mut pos = [0u32; BLOCK + 64];
    let mut packed = [0u32; BLOCK + 64];
    let mut fill = 0;
    // The batch's first row: positions are offsets from it.
    let mut first = 0;
    let words = n.div_ceil(64);
    // One pass past the last word flushes what is left, so the batch is
    // flushed at one place.
    for b in 0..=words {
        let end = b == words;
        let w = if end {
            0
        } else {
            let rows = n - b * 64;
            let lim = if rows >= 64 { !0 } else { (1u64 << rows) - 1 };
            m.word(b) & lim
        };
        if w == 0 && !end {
            continue;
        }
        if fill > 0 && (end || fill >= MASKED_FLUSH || b * 64 - first > MASKED_SPAN - 64) {
            // SAFETY: every position below `fill` is a counted row of this
            // batch, below n, offset from `first`; the buffers' lengths are
            // multiples of 8 and fill <= MASKED_FLUSH + 63 < pos.len().
            unsafe {
                flush_positions(
                    regs,
                    p,
                    (mx, s),
                    keys.as_ptr().add(first),
                    &pos,
                    fill,
                    &mut packed,
                )
            };
            fill = 0;
        }
        if end {
            break;
        }
        if fill == 0 {
            first = b * 64;
        }
        let cnt = w.count_ones();
        let off = (b * 64 - first) as u32;
        if VBMI2 {
            // Every count takes the one byte compress; the word's eight key
            // lines are fetched as in the compress path below.
            prefetch_from(keys.as_ptr().wrapping_add(b * 64).cast(), 512);
            // SAFETY: fill < MASKED_FLUSH before the word (flushed at >=
            // before it), so the 16-lane stores, ending at fill + cnt
            // rounded up to 16, end below MASKED_FLUSH + 64 <= pos.len();
            // the offsets are below MASKED_SPAN <= 2^30; AVX-512 F and
            // VBMI2 (caller contract).
            unsafe { positions64(w, cnt, off, pos.as_mut_ptr().add(fill)) };
        } else if cnt <= 4 {
            // A word of a few rows takes their positions one at a time
            // (`tzcnt`, then clear the lowest bit): four stores whatever the
            // count, so no branch per row; those past the count are
            // overwritten by the next word's (fill + 4 <= MASKED_FLUSH + 3
            // < pos.len()). Each row's key line is fetched now: the batch's
            // gathers come after up to 256 counted rows, when the walk has
            // moved on. A count past the last row gives row b * 64 + 64,
            // whose fetch is a hint that reads nothing.
            let mut x = w;
            for j in 0..4 {
                let r = x.trailing_zeros();
                pos[fill + j] = off + r;
                prefetch_from(keys.as_ptr().wrapping_add(b * 64 + r as usize).cast(), 8);
                x &= x.wrapping_sub(1);
            }
        } else {
            // Fetch the word's eight key lines (at more than 4 rows most
            // of them hold one).
            prefetch_from(keys.as_ptr().wrapping_add(b * 64).cast(), 512);
            // No branch on an empty quarter: at sparse selections it would
            // mispredict often, and an empty quarter's store counts nothing.
            let mut at = fill;
            for q in 0..4 {
                let k = (w >> (16 * q)) as u16;
                // SAFETY: a batch takes words while fill < MASKED_FLUSH
                // (flushed at >= before the next word) and each quarter
                // adds at most 16, so this 16-lane store ends below
                // MASKED_FLUSH + 64 <= pos.len(). The offsets are below
                // MASKED_SPAN <= 2^30. AVX-512 is enabled.
                unsafe {
                    let o = _mm512_set1_epi32((off + 16 * q) as i32);
                    let v = compress16(k, _mm512_add_epi32(lanes, o));
                    _mm512_storeu_si512(pos.as_mut_ptr().add(at).cast(), v);
                }
                at += k.count_ones() as usize;
            }
        }
        fill += cnt as usize;
    }
}

/// AVX-512 twin of `arch::scalar::hll::add_hashes`.
///
/// # Safety
///
/// As [`add_u64`].
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn add_hashes(regs: &mut [u8], p: u32, hashes: &[u64]) {
    let mut packed = [0u32; BLOCK];
    let mut chunks = hashes.chunks_exact(BLOCK);
    for chunk in &mut chunks {
        for (j, q) in chunk.chunks_exact(8).enumerate() {
            // SAFETY: as in add_u64 (`pack` only).
            unsafe {
                let h = _mm512_loadu_si512(q.as_ptr().cast());
                _mm256_storeu_si256(packed.as_mut_ptr().add(8 * j).cast(), pack(h, p));
            }
        }
        scalar::apply_packed(regs, &packed);
    }
    scalar::add_hashes(regs, p, chunks.remainder());
}

/// AVX-512 twin of `arch::scalar::hll::merge`: 256 registers per iteration.
///
/// # Safety
///
/// The CPU supports AVX-512; `dst.len() == src.len()`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn merge(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let mut i = 0;
    while i + 256 <= n {
        // SAFETY: i + 256 <= n bounds the four 64-byte accesses to each slice.
        unsafe {
            let d = dst.as_mut_ptr().add(i);
            let s = src.as_ptr().add(i);
            for k in 0..4 {
                let a = _mm512_loadu_si512(d.add(64 * k).cast());
                let b = _mm512_loadu_si512(s.add(64 * k).cast());
                _mm512_storeu_si512(d.add(64 * k).cast(), _mm512_max_epu8(a, b));
            }
        }
        i += 256;
    }
    scalar::merge(&mut dst[i..n], &src[i..n]);
}
