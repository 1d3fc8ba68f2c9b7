//! AVX-512 grouped sums of 64-bit columns over one-byte keys (a `u8` code
//! or a pair of `u8` keys), for the slots that hold most rows.
//!
//! Up to [`HOT`] slots are kept in registers: a 64-row block's keys are one
//! vector, compared with each hot slot's key into a 64-bit mask (and-ed
//! with the row mask), whose popcount is the slot's count and whose bytes
//! mask the adds of the block's eight value vectors into the slot's
//! accumulator. Rows of other slots go to the table one at a time (the
//! scalar twin's row update), and the first slots seen among them join the
//! hot set after each chunk; when the hot set is full and other slots still
//! hold more than an eighth of a chunk's rows, the rest of the call runs
//! the scalar twin. The hot set starts as the first distinct slots among
//! the first 256 counted rows. A slot's lanes are only ever updated in row order from
//! one place, so the sums equal the scalar twin's bit for bit.

use crate::arch::mask::RowMask;
use crate::arch::scalar::grouped::{KeyCols, Table};
use core::arch::x86_64::*;

/// Slots kept in registers.
pub(crate) const HOT: usize = 8;

/// Blocks of 64 rows per chunk: the chunk's masks (`HOT + 1` words a block)
/// stay in L1, and its value rows in L1 or L2 between column passes.
const CHUNK_BLOCKS: usize = 64;

/// Rows of block `b` that exist in a column of `n` rows.
#[inline(always)]
fn lim(n: usize, b: usize) -> u64 {
    let rows = n - b * 64;
    if rows >= 64 { !0 } else { (1u64 << rows) - 1 }
}

/// A hot slot's key as the compares see it.
#[derive(Clone, Copy, Default)]
struct HotKey {
    slot: usize,
    a: u8,
    b: u8,
}

/// Key bytes of row `i`: the code (and 0), or the pair.
#[inline(always)]
fn key_bytes(keys: &KeyCols<'_>, i: usize) -> (u8, u8) {
    match *keys {
        KeyCols::Pair { a, b, .. } => (a[i], b[i]),
        KeyCols::U8(k) => (k[i], 0),
        // Not called for two-byte codes (see `sum_i64`'s contract).
        KeyCols::U16(_) => (0, 0),
    }
}

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
    ($name:ident, $t:ty, $vec:ty, $zero:ident, $loadu:ident, $loadz:ident, $madd:ident,
     |$acc:ident, $sums:ident, $at:ident| $fetch:expr, |$acc2:ident, $sums2:ident, $at2:ident|
     $put:expr) => {
        /// Adds the rows `m` counts to their slots' counts and sums (see
        /// the module docs).
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW); `keys` is `U8` or `Pair` and,
        /// like every column of `values`, has `n` rows, each key in the
        /// table's layout; `m` covers `n` rows; `t` keeps sums and neither
        /// min nor max, with `t.lanes` 8 for floats and 1 for integers.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(
            t: &mut Table<'_, $t>,
            keys: KeyCols<'_>,
            values: &[&[$t]],
            m: RowMask<'_>,
            n: usize,
        ) {
            let blocks = n.div_ceil(64);
            let (mut hot, mut n_hot) = seed_hot(&keys, m, n);
            let mut scalar_rest = false;
            let mut masks = [[0u64; HOT]; CHUNK_BLOCKS];
            let mut c0 = 0;
            while c0 < blocks {
                let c1 = blocks.min(c0 + CHUNK_BLOCKS);
                if scalar_rest {
                    // The rest of the call in one go: the scalar twin.
                    crate::arch::scalar::grouped::add_range(t, keys, values, m, c0 * 64, n);
                    break;
                }
                // Pass A: the hot slots' masks and counts; the other rows
                // go to the table now, and name candidates for the hot set.
                let mut others = 0usize;
                let mut pending = [HotKey::default(); HOT];
                let mut n_pending = 0;
                for b in c0..c1 {
                    let l = lim(n, b);
                    let w = m.word(b) & l;
                    // SAFETY: AVX-512 BW is enabled; `w` is cut to the rows
                    // that exist; keys have n rows.
                    let hm: [u64; HOT] = unsafe { masks_for(&keys, &hot, n_hot, b, l == !0, w) };
                    let mut covered = 0;
                    for h in 0..n_hot {
                        t.counts[hot[h].slot] += u64::from(hm[h].count_ones());
                        covered |= hm[h];
                    }
                    masks[b - c0] = hm;
                    let mut rest = w & !covered;
                    while rest != 0 {
                        let i = b * 64 + rest.trailing_zeros() as usize;
                        let slot = keys.slot(i);
                        t.add_row(slot, i, values);
                        others += 1;
                        if n_hot + n_pending < HOT
                            && !pending[..n_pending].iter().any(|p| p.slot == slot)
                        {
                            let (a, bk) = key_bytes(&keys, i);
                            pending[n_pending] = HotKey { slot, a, b: bk };
                            n_pending += 1;
                        }
                        rest &= rest - 1;
                    }
                }
                // Pass B: each column's hot sums, in registers over the chunk.
                if n_hot > 0 {
                    for (c, col) in values.iter().enumerate() {
                        // SAFETY: AVX-512 is enabled; the chunk's blocks are
                        // inside `col` (n rows), loads of a partial block are
                        // masked to its rows; `at` indexes the table's lanes.
                        unsafe {
                            let mut acc = [$zero(); HOT];
                            for h in 0..n_hot {
                                let $acc = &mut acc[h];
                                let $sums = &*t.sums;
                                let $at = (hot[h].slot * t.columns + c) * t.lanes;
                                $fetch;
                            }
                            for b in c0..c1 {
                                let l = lim(n, b);
                                let base = col.as_ptr().add(b * 64);
                                let hm = &masks[b - c0];
                                for j in 0..8 {
                                    let p = base.wrapping_add(8 * j);
                                    let x = if l == !0 {
                                        $loadu(p.cast())
                                    } else {
                                        $loadz((l >> (8 * j)) as u8, p.cast())
                                    };
                                    for h in 0..n_hot {
                                        let k = (hm[h] >> (8 * j)) as u8;
                                        acc[h] = $madd(acc[h], k, acc[h], x);
                                    }
                                }
                            }
                            for h in 0..n_hot {
                                let $acc2 = acc[h];
                                let $sums2 = &mut *t.sums;
                                let $at2 = (hot[h].slot * t.columns + c) * t.lanes;
                                $put;
                            }
                        }
                    }
                }
                hot[n_hot..n_hot + n_pending].copy_from_slice(&pending[..n_pending]);
                n_hot += n_pending;
                let chunk_rows = (c1 - c0) * 64;
                if n_hot == HOT && n_pending == 0 && others > chunk_rows / 8 {
                    scalar_rest = true;
                }
                c0 = c1;
            }
        }
    };
}

/// The first distinct slots (up to [`HOT`]) among the first counted rows
/// (up to 256 of them), so that the first chunk already runs in registers.
fn seed_hot(keys: &KeyCols<'_>, m: RowMask<'_>, n: usize) -> ([HotKey; HOT], usize) {
    let mut hot = [HotKey::default(); HOT];
    let (mut n_hot, mut seen) = (0, 0);
    for b in 0..n.div_ceil(64) {
        let mut w = m.word(b) & lim(n, b);
        while w != 0 && seen < 256 && n_hot < HOT {
            let i = b * 64 + w.trailing_zeros() as usize;
            let slot = keys.slot(i);
            if !hot[..n_hot].iter().any(|h| h.slot == slot) {
                let (a, bk) = key_bytes(keys, i);
                hot[n_hot] = HotKey { slot, a, b: bk };
                n_hot += 1;
            }
            seen += 1;
            w &= w - 1;
        }
        if seen >= 256 || n_hot == HOT {
            break;
        }
    }
    (hot, n_hot)
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

sum_leaf!(
    sum_f64,
    f64,
    __m512d,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_add_pd,
    |acc, sums, at| *acc = _mm512_loadu_pd(sums.as_ptr().add(at)),
    |acc, sums, at| _mm512_storeu_pd(sums.as_mut_ptr().add(at), acc)
);
sum_leaf!(
    sum_i64,
    i64,
    __m512i,
    _mm512_setzero_si512,
    _mm512_loadu_si512,
    _mm512_maskz_loadu_epi64,
    _mm512_mask_add_epi64,
    |acc, sums, at| {
        let _ = (acc, sums, at);
    },
    |acc, sums, at| sums[at] = sums[at].wrapping_add(_mm512_reduce_add_epi64(acc))
);
sum_leaf!(
    sum_u64,
    u64,
    __m512i,
    _mm512_setzero_si512,
    _mm512_loadu_si512,
    _mm512_maskz_loadu_epi64,
    _mm512_mask_add_epi64,
    |acc, sums, at| {
        let _ = (acc, sums, at);
    },
    |acc, sums, at| sums[at] = sums[at].wrapping_add(_mm512_reduce_add_epi64(acc) as u64)
);
