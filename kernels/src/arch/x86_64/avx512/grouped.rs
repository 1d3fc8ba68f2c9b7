//! AVX-512 grouped sums over one-byte keys (a `u8` code or a pair of `u8`
//! keys), for the slots that hold most rows: `f64`, and integers of every
//! width, eight rows a vector, narrow ones widened to 64 bits on load.
//!
//! Up to [`HOT`] slots are kept in registers: a 64-row block's keys are one
//! vector, compared with each hot slot's key into a 64-bit mask (and-ed
//! with the row mask), whose popcount is the slot's count and whose bytes
//! mask the adds of the block's eight value vectors into the slot's
//! accumulator. A chunk's column pass runs only the hot slots that have
//! rows in the chunk, their count a constant of the loop, and takes up to
//! three columns at once, so each mask is loaded once for all of them. Rows of other
//! slots go to the table one at a time (the scalar twin's row update), and
//! the first slots seen among them join the hot set after each chunk; when
//! the hot set is full and other slots still hold more than an eighth of a
//! chunk's rows, the rest of the call runs the cold leaf (`cold::rest`: each
//! row's value and a count of one added to its slot's sum and count pair,
//! one load and one store a row). A layout of at
//! most [`HOT`] slots is all hot from the start; a larger one starts with
//! the first distinct slots among the first 256 counted rows. A slot's
//! lanes are only ever updated in row order from one place, so the sums
//! equal the scalar twin's bit for bit.

use crate::arch::mask::RowMask;
use crate::arch::scalar::grouped::{KeyCols, Table, Weights};
use crate::arch::x86_64::cold::{self, pairs_pay};
use crate::arch::x86_64::hot::{ChunkA, HOT, HotKey, every_slot, lim, seed_hot};
use core::arch::x86_64::*;

/// Blocks of 64 rows per chunk: the chunk's masks (`HOT + 1` words a block)
/// stay in L1, and its value rows in L1 or L2 between column passes.
/// Under Miri 2, so its short columns run several chunks and the cold leaf.
const CHUNK_BLOCKS: usize = if cfg!(miri) { 2 } else { 64 };

/// The masks of `H` hot slots for block `b`, each and-ed with `w`.
///
/// # Safety
/// AVX-512 BW is enabled; `w` has no bit past the rows that exist, and the
/// key columns cover the block's existing rows.
#[inline(always)]
unsafe fn hot_masks<const H: usize>(
    keys: &KeyCols<'_>,
    hot: &[HotKey; HOT],
    b: usize,
    full: bool,
    w: u64,
) -> [u64; H] {
    // SAFETY: forwarded contract (`load_keys` reads only existing rows).
    unsafe {
        let mut out = [0u64; H];
        match *keys {
            KeyCols::Pair { a, b: bk, .. } => {
                let ka = load_keys(a.as_ptr().add(b * 64), full, w);
                let kb = load_keys(bk.as_ptr().add(b * 64), full, w);
                for h in 0..H {
                    let ma = _mm512_mask_cmpeq_epi8_mask(w, ka, _mm512_set1_epi8(hot[h].a as i8));
                    out[h] = _mm512_mask_cmpeq_epi8_mask(ma, kb, _mm512_set1_epi8(hot[h].b as i8));
                }
            }
            KeyCols::U8(k) => {
                let kv = load_keys(k.as_ptr().add(b * 64), full, w);
                for h in 0..H {
                    out[h] = _mm512_mask_cmpeq_epi8_mask(w, kv, _mm512_set1_epi8(hot[h].a as i8));
                }
            }
            KeyCols::U16(_) => {}
        }
        out
    }
}

/// A block's 64 key bytes at `p`: all of them for a full block, else the
/// rows `w` names (masked-off bytes read as zero and are not accessed).
///
/// # Safety
/// AVX-512 BW is enabled; a full block has 64 readable bytes at `p`, and
/// `w` names only readable rows otherwise.
#[inline(always)]
unsafe fn load_keys(p: *const u8, full: bool, w: u64) -> __m512i {
    // SAFETY: forwarded contract.
    unsafe {
        if full {
            _mm512_loadu_si512(p.cast())
        } else {
            _mm512_maskz_loadu_epi8(w, p.cast())
        }
    }
}

macro_rules! sum_leaf {
    ($name:ident, $t:ty, $vec:ty, $zero:ident, $madd:ident,
     |$pf:ident| $load_full:expr, |$pk:ident, $pp:ident| $load_part:expr,
     |$wx:ident, $wv:ident| $weigh:expr,
     $byte_sums:literal, |$bacc:ident, $bx:ident, $bm:ident| $block:expr,
     |$acc:ident, $sums:ident, $at:ident| $fetch:expr, |$acc2:ident, $sums2:ident, $at2:ident|
     $put:expr) => {
        /// Adds the rows `m` counts to their slots' counts and sums (see
        /// the module docs).
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW); `keys` is `U8` or `Pair` and,
        /// like every column of `values`, has `n` rows, each key in the
        /// table's layout; `m` covers `n` rows; `t` keeps sums and neither
        /// min nor max, with `t.lanes` 8 for floats and 1 for integers;
        /// `weights` is empty or has one entry per column, each weight column
        /// `n` rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(
            t: &mut Table<'_, $t>,
            keys: KeyCols<'_>,
            values: &[&[$t]],
            weights: Weights<'_, '_>,
            m: RowMask<'_>,
            n: usize,
        ) {
            /// One pass over blocks `c0..c1` for `C` columns at once and the
            /// `H` hot slots `active` names (both constants, so the
            /// accumulators stay in registers): each block's values are
            /// loaded once per column and each mask once for all `C`
            /// columns; a column with a weight adds value times weight.
            ///
            /// # Safety
            /// AVX-512 is enabled; every column of `cols` (and each weight
            /// column) has `n` rows and the blocks are inside it.
            #[inline(always)]
            unsafe fn col_pass<const H: usize, const C: usize>(
                cols: [&[$t]; C],
                wts: [Option<&[u16]>; C],
                (c0, c1, n, pf): (usize, usize, usize, bool),
                masks: &[[u64; HOT]; CHUNK_BLOCKS],
                active: &[usize; HOT],
                sums: &mut [[$vec; HOT]; 3],
            ) {
                // Local accumulators, never addressed, so they live in
                // registers (through `sums` every add would go to memory).
                let mut acc: [[$vec; H]; C] =
                    core::array::from_fn(|c| core::array::from_fn(|h| sums[c][h]));
                let weighted = wts.iter().any(Option::is_some);
                for b in c0..c1 {
                    let l = lim(n, b);
                    let hm = &masks[b - c0];
                    // The next lines of every column, on the CPUs where
                    // that pays (`cpu::grouped_prefetch`): an engine calls
                    // this a few thousand rows at a time on columns read
                    // from memory, where the loads alone wait on each new
                    // stream; the prefetches of one call's last blocks
                    // reach the next call's first.
                    if pf {
                        for c in 0..C {
                            crate::arch::x86_64::prefetch_lines(
                                cols[c].as_ptr().wrapping_add(b * 64).cast(),
                                64 * core::mem::size_of::<$t>(),
                            );
                            if let Some(w) = wts[c] {
                                crate::arch::x86_64::prefetch_lines(
                                    w.as_ptr().wrapping_add(b * 64).cast(),
                                    128,
                                );
                            }
                        }
                    }
                    if $byte_sums && !weighted {
                        // One-byte values: a slot's 64 rows in one masked
                        // move and one sum of absolute differences (eight
                        // 64-bit sums of eight bytes each).
                        for c in 0..C {
                            // SAFETY: a full block has 64 bytes at `base`; a
                            // partial one is loaded under its rows' mask.
                            unsafe {
                                let base = cols[c].as_ptr().add(b * 64);
                                let x = if l == !0 {
                                    _mm512_loadu_si512(base.cast())
                                } else {
                                    _mm512_maskz_loadu_epi8(l, base.cast())
                                };
                                for h in 0..H {
                                    let $bacc = &mut acc[c][h];
                                    let ($bx, $bm) = (x, hm[active[h]]);
                                    $block;
                                }
                            }
                        }
                        continue;
                    }
                    // The mask bytes, read from memory per use (a shift of
                    // a mask register per use would queue on its ports).
                    // SAFETY: `[u64; HOT]` is `8 * HOT` initialised bytes.
                    let bytes: &[u8; 8 * HOT] = unsafe { &*hm.as_ptr().cast() };
                    let mut at = [0usize; H];
                    for h in 0..H {
                        // Byte j of a little-endian word is bits 8j..8j+8.
                        at[h] = active[h] * 8;
                    }
                    for j in 0..8 {
                        let part = (l >> (8 * j)) as u8;
                        // SAFETY: block `b` is inside every column; eight
                        // rows from the vector's start exist in a full
                        // block, the mask names the existing ones else (in
                        // a partial block a part past the column's end has
                        // an empty mask and reads nothing: its address is
                        // formed with wrapping arithmetic, as it may lie
                        // past the end of the slice).
                        let x: [$vec; C] = core::array::from_fn(|c| unsafe {
                            let p = cols[c].as_ptr().wrapping_add(b * 64 + 8 * j);
                            let mut x = if l == !0 {
                                let $pf = p;
                                $load_full
                            } else {
                                let ($pk, $pp) = (part, p);
                                $load_part
                            };
                            if let Some(w) = wts[c] {
                                let q = w.as_ptr().wrapping_add(b * 64 + 8 * j);
                                let $wv = _mm512_cvtepu16_epi64(if l == !0 {
                                    _mm_loadu_si128(q.cast())
                                } else {
                                    _mm_maskz_loadu_epi16(part, q.cast())
                                });
                                let $wx = x;
                                x = $weigh;
                            }
                            x
                        });
                        for h in 0..H {
                            let k = bytes[at[h] + j];
                            for c in 0..C {
                                // SAFETY: AVX-512 is enabled (the contract).
                                acc[c][h] = unsafe { $madd(acc[c][h], k, acc[c][h], x[c]) };
                            }
                        }
                    }
                }
                for c in 0..C {
                    sums[c][..H].copy_from_slice(&acc[c]);
                }
            }

            let blocks = n.div_ceil(64);
            // A layout of at most HOT slots is all hot from the start (no
            // seeding scan); a chunk's pass B skips the slots without rows.
            let (mut hot, mut n_hot) = if t.counts.len() <= HOT {
                every_slot(&keys, t.counts.len())
            } else {
                seed_hot(&keys, m, n)
            };
            let mut scalar_rest = false;
            let pf = crate::cpu::grouped_prefetch();
            let mut masks = [[0u64; HOT]; CHUNK_BLOCKS];
            let mut c0 = 0;
            while c0 < blocks {
                let c1 = blocks.min(c0 + CHUNK_BLOCKS);
                if scalar_rest {
                    // The rest of the call in one go: the cold leaf where
                    // its scratch holds the layout, else the scalar twin.
                    if !matches!(keys, KeyCols::U16(_)) {
                        let args = (t, keys, (values, weights), m, c0 * 64, n);
                        // SAFETY: forwarded contract; the pairs run only
                        // for a layout the scratch holds; `c0 * 64` is a
                        // block start.
                        unsafe {
                            if pairs_pay(args.0.counts, n - c0 * 64) {
                                cold::rest::<$t, false, false>(args)
                            } else {
                                cold::rest::<$t, true, false>(args)
                            }
                        };
                    } else {
                        crate::arch::scalar::grouped::add_range(
                            t,
                            keys,
                            (values, weights),
                            m,
                            c0 * 64,
                            n,
                        );
                    }
                    break;
                }
                // Pass A: the hot slots' masks and counts; the other rows
                // go to the table now, and name candidates for the hot set.
                let mut pass_a = ChunkA::new();
                for b in c0..c1 {
                    let l = lim(n, b);
                    let w = m.word(b) & l;
                    // SAFETY: AVX-512 BW is enabled; `w` is cut to the rows
                    // that exist; keys have n rows.
                    let hm: [u64; HOT] = unsafe { masks_for(&keys, &hot, n_hot, b, l == !0, w) };
                    masks[b - c0] = hm;
                    pass_a.block(t, (&keys, values, weights), (&hot, n_hot), b, w, &hm);
                }
                let (active, n_active) = pass_a.active(n_hot);
                // Pass B: the columns' hot sums, in registers over the
                // chunk, up to three columns a pass (two with more than five
                // hot slots, so the accumulators fit the registers).
                let run = if n_active <= 5 { 3 } else { 2 };
                let mut c = 0;
                while c < values.len() && n_active > 0 {
                    let k = run.min(values.len() - c);
                    let wt = |i: usize| weights.get(c + i).copied().flatten();
                    // SAFETY: AVX-512 is enabled; the chunk's blocks are
                    // inside every column (n rows); `at` indexes the
                    // table's lanes.
                    unsafe {
                        let mut acc = [[$zero(); HOT]; 3];
                        for i in 0..k {
                            for h in 0..n_active {
                                let $acc = &mut acc[i][h];
                                let $sums = &*t.sums;
                                let $at = (hot[active[h]].slot * t.columns + c + i) * t.lanes;
                                $fetch;
                            }
                        }
                        let span = (c0, c1, n, pf);
                        macro_rules! pass {
                            ($k:literal) => {{
                                let cols: [&[$t]; $k] = core::array::from_fn(|i| values[c + i]);
                                let wts: [Option<&[u16]>; $k] = core::array::from_fn(wt);
                                match n_active {
                                    1 => col_pass::<1, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    2 => col_pass::<2, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    3 => col_pass::<3, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    4 => col_pass::<4, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    5 => col_pass::<5, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    6 => col_pass::<6, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    7 => col_pass::<7, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                    _ => col_pass::<8, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    ),
                                }
                            }};
                        }
                        match k {
                            1 => pass!(1),
                            2 => pass!(2),
                            _ => pass!(3),
                        }
                        for i in 0..k {
                            for h in 0..n_active {
                                let $acc2 = acc[i][h];
                                let $sums2 = &mut *t.sums;
                                let $at2 = (hot[active[h]].slot * t.columns + c + i) * t.lanes;
                                $put;
                            }
                        }
                    }
                    c += k;
                }
                if pass_a.finish(&mut hot, &mut n_hot, (c1 - c0) * 64) {
                    scalar_rest = true;
                }
                c0 = c1;
            }
        }
    };
}

/// [`hot_masks`] for the first `n_hot` hot slots (the rest zero), with the
/// slot count as a constant so the compares unroll.
///
/// # Safety
/// As [`hot_masks`].
#[inline(always)]
unsafe fn masks_for(
    keys: &KeyCols<'_>,
    hot: &[HotKey; HOT],
    n_hot: usize,
    b: usize,
    full: bool,
    w: u64,
) -> [u64; HOT] {
    let mut out = [0u64; HOT];
    macro_rules! arm {
        ($h:literal) => {{
            // SAFETY: forwarded contract.
            let m = unsafe { hot_masks::<$h>(keys, hot, b, full, w) };
            out[..$h].copy_from_slice(&m);
        }};
    }
    match n_hot {
        0 => {}
        1 => arm!(1),
        2 => arm!(2),
        3 => arm!(3),
        4 => arm!(4),
        5 => arm!(5),
        6 => arm!(6),
        7 => arm!(7),
        _ => arm!(8),
    }
    out
}

/// Eight `u16` weights (widened to 64-bit lanes) as `f64`: `vcvtqq2pd` on
/// a real build; under Miri, which has no model of it, through 32-bit lanes
/// (`vpmovqd`, `vcvtdq2pd`), exact for weights below 2^16 all the same. A
/// macro, so it expands inside the leaf's `target_feature` function.
#[cfg(not(miri))]
macro_rules! weights_pd {
    ($w:expr) => {
        _mm512_cvtepi64_pd($w)
    };
}
#[cfg(miri)]
macro_rules! weights_pd {
    ($w:expr) => {
        _mm512_cvtepi32_pd(_mm512_cvtepi64_epi32($w))
    };
}

sum_leaf!(
    sum_f64,
    f64,
    __m512d,
    _mm512_setzero_pd,
    _mm512_mask_add_pd,
    |p| _mm512_loadu_pd(p),
    |k, p| _mm512_maskz_loadu_pd(k, p),
    |x, w| _mm512_mul_pd(x, weights_pd!(w)),
    false,
    |acc, x, m| {
        let _ = (acc, x, m);
    },
    |acc, sums, at| *acc = _mm512_loadu_pd(sums.as_ptr().add(at)),
    |acc, sums, at| _mm512_storeu_pd(sums.as_mut_ptr().add(at), acc)
);

/// An integer leaf: eight rows loaded (and widened to 64 bits) per vector,
/// each hot slot's 64-bit lanes reduced into its one sum at the end of a
/// chunk (integer sums wrap, so any order gives the same sum).
macro_rules! int_leaf {
    ($name:ident, $t:ty, $sum:ty, |$pf:ident| $full:expr, |$pk:ident, $pp:ident| $part:expr) => {
        int_leaf!($name, $t, $sum, |$pf| $full, |$pk, $pp| $part, false);
    };
    ($name:ident, $t:ty, $sum:ty, |$pf:ident| $full:expr, |$pk:ident, $pp:ident| $part:expr,
     $byte_sums:literal) => {
        sum_leaf!(
            $name,
            $t,
            __m512i,
            _mm512_setzero_si512,
            _mm512_mask_add_epi64,
            |$pf| $full,
            |$pk, $pp| $part,
            |x, w| _mm512_mullo_epi64(x, w),
            $byte_sums,
            |acc, x, m| *acc = _mm512_add_epi64(
                *acc,
                _mm512_sad_epu8(_mm512_maskz_mov_epi8(m, x), _mm512_setzero_si512())
            ),
            |acc, sums, at| {
                let _ = (acc, sums, at);
            },
            |acc, sums, at| sums[at] = sums[at].wrapping_add(_mm512_reduce_add_epi64(acc) as $sum)
        );
    };
}

int_leaf!(
    sum_i64,
    i64,
    i64,
    |p| _mm512_loadu_si512(p.cast()),
    |k, p| _mm512_maskz_loadu_epi64(k, p.cast())
);
int_leaf!(
    sum_u64,
    u64,
    u64,
    |p| _mm512_loadu_si512(p.cast()),
    |k, p| _mm512_maskz_loadu_epi64(k, p.cast())
);
int_leaf!(
    sum_i32,
    i32,
    i64,
    |p| _mm512_cvtepi32_epi64(_mm256_loadu_si256(p.cast())),
    |k, p| _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(k, p.cast()))
);
int_leaf!(
    sum_u32,
    u32,
    u64,
    |p| _mm512_cvtepu32_epi64(_mm256_loadu_si256(p.cast())),
    |k, p| _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(k, p.cast()))
);
int_leaf!(
    sum_i16,
    i16,
    i64,
    |p| _mm512_cvtepi16_epi64(_mm_loadu_si128(p.cast())),
    |k, p| _mm512_cvtepi16_epi64(_mm_maskz_loadu_epi16(k, p.cast()))
);
int_leaf!(
    sum_u16,
    u16,
    u64,
    |p| _mm512_cvtepu16_epi64(_mm_loadu_si128(p.cast())),
    |k, p| _mm512_cvtepu16_epi64(_mm_maskz_loadu_epi16(k, p.cast()))
);
int_leaf!(
    sum_i8,
    i8,
    i64,
    |p| _mm512_cvtepi8_epi64(_mm_loadl_epi64(p.cast())),
    |k, p| _mm512_cvtepi8_epi64(_mm_maskz_loadu_epi8(u16::from(k), p.cast()))
);
int_leaf!(
    sum_u8,
    u8,
    u64,
    |p| _mm512_cvtepu8_epi64(_mm_loadl_epi64(p.cast())),
    |k, p| _mm512_cvtepu8_epi64(_mm_maskz_loadu_epi8(u16::from(k), p.cast())),
    true
);
