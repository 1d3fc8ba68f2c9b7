//! AVX2 grouped sums over one-byte keys (a `u8` code or a pair of `u8`
//! keys), of `f64` and of integers of every width, for the slots that hold
//! most rows.
//!
//! The AVX-512 leaf's plan (`avx512/grouped.rs`) without mask registers:
//! up to [`HOT`] slots are kept in registers; each full 64-row block's keys
//! are compared with each hot slot's key (`vpcmpeqb`, and-ed with the
//! block's selection expanded to bytes), the byte masks kept for the
//! chunk and their `vpmovmskb` bits counted. A column pass then loads each
//! block's values four rows at a time as 64-bit lanes (integers widened;
//! weighted: times the weights, `vpmuldq`, or `vmulpd` for floats) and
//! adds them under each hot slot's mask (four mask bytes widened to lanes,
//! `vpmovsxbq` from memory: an `and` for integers, a blend with `-0.0` for
//! floats, which leaves a sum as it is) into that slot's accumulator, the
//! accumulators in registers over the chunk; unweighted `u8` values add 32
//! rows a slot with one `and` and one sum of absolute differences. Float
//! sums keep the table's lane order (row `i` in lane `i % 8`): a pass takes
//! lanes 0-3 or 4-7 of each slot, its accumulator starting from the
//! table's lanes. Rows of other slots go to the table one at a time, and
//! the first slots seen among them join the hot set after each chunk; when
//! the hot set is full and other slots still hold more than an eighth of a
//! chunk's rows, the rest of the call takes the cold leaf (`cold::rest`,
//! as the AVX-512 leaf does), and so does a call whose first rows already
//! spread over more slots than the registers hold. A column's last
//! partial block takes the twin. So each float lane takes
//! its rows in row order, and sums equal the twin's bit for bit; integer
//! sums wrap, so any order gives the twin's.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;
use crate::arch::scalar::grouped::{KeyCols, Table, Weights};
use crate::arch::x86_64::cold::{self, Bits64};
use crate::arch::x86_64::hot::{ChunkA, HOT, HotKey, every_slot, seed_hot, spreads};
use core::arch::x86_64::*;

/// Full blocks of 64 rows per chunk: the chunk's byte masks (64 bytes a
/// hot slot and block, 8 KiB) stay in L1. Under Miri 2, so its short
/// columns run several chunks and the fallback.
const CHUNK_BLOCKS: usize = if cfg!(miri) { 2 } else { 16 };

/// A column type the leaf reads: four rows as 64-bit lanes of its sum
/// type, times a weight, added under a mask, and the accumulators' start
/// and end against the table.
pub(crate) trait Lanes4: Num<Sum: Bits64> {
    /// Unweighted values add as bytes (`u8`: `vpsadbw`).
    const BYTES: bool = false;

    /// Float sums: the table keeps 8 lanes a slot and column, row `i`
    /// adding to lane `i % 8`, so a pass takes the rows of lanes 0-3 or of
    /// lanes 4-7 and the accumulator starts from the table's lanes.
    const FLOAT: bool = false;

    /// Rows `p..p + 4`, each widened (sign- or zero-extended as the sum
    /// type is) to a 64-bit lane.
    ///
    /// # Safety
    /// AVX2 is enabled; four values are readable at `p`.
    unsafe fn load4(p: *const Self) -> __m256i;

    /// `x · w` per lane in the sum type (`Num::sum_weigh`): `x` from
    /// [`load4`](Self::load4), `w` the rows' four weights.
    ///
    /// # Safety
    /// AVX2 is enabled; four weights are readable at `w`.
    #[inline(always)]
    unsafe fn weigh(x: __m256i, w: *const u16) -> __m256i {
        // A value of at most 32 bits times a weight below 2^16 is exact in
        // the low 32 bits' signed product (`vpmuldq` reads them signed,
        // and a `u32`'s sum lane holds it zero-extended: the types over
        // 31 bits override this).
        // SAFETY: AVX2 (the contract); four weights at `w`.
        unsafe { _mm256_mul_epi32(x, weights4(w)) }
    }

    /// `acc` plus the lanes of `x` that mask `m` (each lane all ones or
    /// zero) keeps.
    ///
    /// # Safety
    /// AVX2 is enabled.
    #[inline(always)]
    unsafe fn masked_add(acc: __m256i, x: __m256i, m: __m256i) -> __m256i {
        // SAFETY: AVX2 (the contract).
        unsafe { _mm256_add_epi64(acc, _mm256_and_si256(x, m)) }
    }

    /// The accumulator of sum `at` (`slot * columns + column`) and `half`
    /// of its lanes at the start of a pass: zero for integers (the pass's
    /// total is added at the end).
    ///
    /// # Safety
    /// AVX2 is enabled; `at` is a sum of the table.
    #[inline(always)]
    unsafe fn start(sums: &[Self::Sum], at: usize, half: usize) -> __m256i {
        let _ = (sums, at, half);
        // SAFETY: AVX2 (the contract).
        unsafe { _mm256_setzero_si256() }
    }

    /// Puts a pass's accumulator back: for integers its lanes' wrapping
    /// total added to the sum.
    ///
    /// # Safety
    /// AVX2 is enabled; `at` is a sum of the table.
    #[inline(always)]
    unsafe fn put(sums: &mut [Self::Sum], at: usize, half: usize, acc: __m256i) {
        let _ = half;
        let mut lanes = [0u64; 4];
        // SAFETY: AVX2 (the contract); `lanes` is 32 bytes.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        let total = lanes.iter().fold(0u64, |s, &l| s.wrapping_add(l));
        sums[at] = Self::sum_add(sums[at], Self::from_bits(total));
    }

    /// A total of the 64-bit lanes as the sum type (both 64 bits wide).
    fn from_bits(b: u64) -> Self::Sum;
}

/// Four `u16` weights at `w` widened to 64-bit lanes.
///
/// # Safety
/// AVX2 is enabled; four weights are readable at `w`.
#[inline(always)]
unsafe fn weights4(w: *const u16) -> __m256i {
    // SAFETY: AVX2 (the contract); 8 bytes at `w`.
    unsafe { _mm256_cvtepu16_epi64(_mm_loadl_epi64(w.cast())) }
}

/// `x · w` wrapping in 64 bits for any 64-bit `x` and `w` below 2^32: the
/// low half's product plus the high half's, shifted (its bits past 64
/// drop, as a wrapping multiply's do).
///
/// # Safety
/// AVX2 is enabled.
#[inline(always)]
unsafe fn mul64_by_32(x: __m256i, w: __m256i) -> __m256i {
    // SAFETY: AVX2 (the contract).
    unsafe {
        let lo = _mm256_mul_epu32(x, w);
        let hi = _mm256_mul_epu32(_mm256_srli_epi64::<32>(x), w);
        _mm256_add_epi64(lo, _mm256_slli_epi64::<32>(hi))
    }
}

macro_rules! lanes4 {
    ($t:ty, $sum:ty, |$p:ident| $load:expr $(, bytes: $bytes:literal)? $(, weigh: $wide:ident)?) => {
        impl Lanes4 for $t {
            $(const BYTES: bool = $bytes;)?
            #[inline(always)]
            fn from_bits(b: u64) -> $sum {
                b as $sum
            }
            #[inline(always)]
            unsafe fn load4($p: *const $t) -> __m256i {
                // SAFETY: four values are readable at `p` (the contract);
                // the reads are unaligned.
                unsafe { $load }
            }
            $(
                #[inline(always)]
                unsafe fn weigh(x: __m256i, w: *const u16) -> __m256i {
                    // SAFETY: AVX2 (the contract); four weights at `w`.
                    unsafe { $wide(x, weights4(w)) }
                }
            )?
        }
    };
}

lanes4!(i64, i64, |p| _mm256_loadu_si256(p.cast()), weigh: mul64_by_32);
lanes4!(u64, u64, |p| _mm256_loadu_si256(p.cast()), weigh: mul64_by_32);
lanes4!(i32, i64, |p| _mm256_cvtepi32_epi64(_mm_loadu_si128(
    p.cast()
)));
lanes4!(u32, u64, |p| _mm256_cvtepu32_epi64(_mm_loadu_si128(p.cast())), weigh: mul64_by_32);
lanes4!(i16, i64, |p| _mm256_cvtepi16_epi64(_mm_loadl_epi64(
    p.cast()
)));
lanes4!(u16, u64, |p| _mm256_cvtepu16_epi64(_mm_loadl_epi64(
    p.cast()
)));
lanes4!(i8, i64, |p| _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(
    p.cast::<i32>().read_unaligned()
)));
lanes4!(
    u8,
    u64,
    |p| _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(p.cast::<i32>().read_unaligned())),
    bytes: true
);

impl Lanes4 for f64 {
    const FLOAT: bool = true;

    #[inline(always)]
    unsafe fn load4(p: *const f64) -> __m256i {
        // SAFETY: four values at `p` (the contract).
        unsafe { _mm256_castpd_si256(_mm256_loadu_pd(p)) }
    }

    #[inline(always)]
    unsafe fn weigh(x: __m256i, w: *const u16) -> __m256i {
        // SAFETY: AVX2 (the contract); 8 bytes of weights at `w`. A weight
        // converts exactly; one rounded multiply, as `sum_weigh`'s.
        unsafe {
            let w = _mm256_cvtepi32_pd(_mm_cvtepu16_epi32(_mm_loadl_epi64(w.cast())));
            _mm256_castpd_si256(_mm256_mul_pd(_mm256_castsi256_pd(x), w))
        }
    }

    #[inline(always)]
    unsafe fn masked_add(acc: __m256i, x: __m256i, m: __m256i) -> __m256i {
        // A masked-off row adds -0.0, which leaves every sum as it is
        // (+0.0 would turn a -0.0 sum into +0.0, where the twin adds
        // nothing); lanes never hold a signalling NaN (sums of adds).
        // SAFETY: AVX2 (the contract).
        unsafe {
            let x = _mm256_blendv_pd(
                _mm256_set1_pd(-0.0),
                _mm256_castsi256_pd(x),
                _mm256_castsi256_pd(m),
            );
            _mm256_castpd_si256(_mm256_add_pd(_mm256_castsi256_pd(acc), x))
        }
    }

    #[inline(always)]
    unsafe fn start(sums: &[f64], at: usize, half: usize) -> __m256i {
        // SAFETY: AVX2 (the contract); sum `at` has 8 lanes in `sums`.
        unsafe { _mm256_castpd_si256(_mm256_loadu_pd(sums[at * 8 + 4 * half..][..4].as_ptr())) }
    }

    #[inline(always)]
    unsafe fn put(sums: &mut [f64], at: usize, half: usize, acc: __m256i) {
        // SAFETY: AVX2 (the contract); sum `at` has 8 lanes in `sums`.
        unsafe {
            _mm256_storeu_pd(
                sums[at * 8 + 4 * half..][..4].as_mut_ptr(),
                _mm256_castsi256_pd(acc),
            )
        }
    }

    fn from_bits(b: u64) -> f64 {
        f64::from_bits(b)
    }
}

/// 32 selection bits as 32 bytes, each 0xff where its bit is set.
///
/// # Safety
/// AVX2 is enabled.
#[inline(always)]
unsafe fn bits_to_bytes(w: u32) -> __m256i {
    // SAFETY: AVX2 (the contract).
    unsafe {
        // Byte j of the result looks at byte j / 8 of `w` (the shuffle
        // works within each 128-bit half, and each half has all four
        // bytes of the broadcast), then at its bit j % 8.
        let v = _mm256_shuffle_epi8(
            _mm256_set1_epi32(w as i32),
            _mm256_setr_epi64x(
                0,
                0x0101_0101_0101_0101,
                0x0202_0202_0202_0202,
                0x0303_0303_0303_0303,
            ),
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit)
    }
}

/// The byte masks of full block `b` for the first `n_hot` hot slots, into
/// `out` (64 bytes a slot), and their bits: a slot's key compared with
/// the block's keys, and-ed with the selection `w` (all rows when `w` is
/// all ones).
///
/// # Safety
/// AVX2 is enabled; the key columns hold block `b` whole.
#[inline(always)]
unsafe fn block_masks(
    keys: &KeyCols<'_>,
    hot: &[HotKey; HOT],
    n_hot: usize,
    b: usize,
    w: u64,
    out: &mut [[u8; 64]; HOT],
) -> [u64; HOT] {
    let mut bits = [0u64; HOT];
    // SAFETY: AVX2 (the contract); 64 key bytes of each key column from
    // `b * 64` exist; `out`'s rows are 64 bytes.
    unsafe {
        let load =
            |k: &[u8], half: usize| _mm256_loadu_si256(k.as_ptr().add(b * 64 + 32 * half).cast());
        let sel = if w == !0 {
            None
        } else {
            Some([bits_to_bytes(w as u32), bits_to_bytes((w >> 32) as u32)])
        };
        let (ka, kb) = match *keys {
            KeyCols::U8(k) => ([load(k, 0), load(k, 1)], None),
            KeyCols::Pair { a, b: bk, .. } => {
                ([load(a, 0), load(a, 1)], Some([load(bk, 0), load(bk, 1)]))
            }
            // Not called for two-byte codes (the leaves' contract).
            KeyCols::U16(_) => return bits,
        };
        for h in 0..n_hot {
            let mut word = 0u64;
            for half in 0..2 {
                let mut e = _mm256_cmpeq_epi8(ka[half], _mm256_set1_epi8(hot[h].a as i8));
                if let Some(kb) = kb {
                    e = _mm256_and_si256(
                        e,
                        _mm256_cmpeq_epi8(kb[half], _mm256_set1_epi8(hot[h].b as i8)),
                    );
                }
                if let Some(s) = sel {
                    e = _mm256_and_si256(e, s[half]);
                }
                _mm256_storeu_si256(out[h].as_mut_ptr().add(32 * half).cast(), e);
                word |= u64::from(_mm256_movemask_epi8(e) as u32) << (32 * half);
            }
            bits[h] = word;
        }
    }
    bits
}

/// One pass over the chunk's blocks `c0..c1` for `C` columns at once and
/// the `H` hot slots `active` names (both constants, so the accumulators
/// stay in registers): each block's values loaded once per column, each
/// mask once for all `C` columns, into `acc`. Integers take every 4-row
/// group of a block (`j0` 0, `step` 1); floats the groups of one half of
/// the lanes (`j0` 0 or 1, `step` 2: rows `8k + 4 j0..8k + 4 j0 + 4`).
///
/// # Safety
/// AVX2 is enabled; the blocks are full blocks of every column (and
/// weight column); `masks` holds the chunk's masks.
#[inline(always)]
unsafe fn col_pass<T: Lanes4, const H: usize, const C: usize>(
    cols: [&[T]; C],
    wts: [Option<&[u16]>; C],
    (c0, c1, pf, (j0, step)): (usize, usize, bool, (usize, usize)),
    masks: &[[[u8; 64]; HOT]; CHUNK_BLOCKS],
    active: &[usize; HOT],
    sums: &mut [[__m256i; HOT]; 3],
) {
    // SAFETY: AVX2 (the contract); every block in c0..c1 is a full block
    // of every column, so the 64 rows from `b * 64` are readable.
    unsafe {
        // Local accumulators, never addressed, so they live in registers.
        let mut acc: [[__m256i; H]; C] =
            core::array::from_fn(|c| core::array::from_fn(|h| sums[c][h]));
        let weighted = wts.iter().any(Option::is_some);
        for b in c0..c1 {
            let hm = &masks[b - c0];
            if pf && j0 == 0 {
                // As the AVX-512 leaf: the next lines of every column on
                // the CPUs where that pays (`cpu::grouped_prefetch`).
                for c in 0..C {
                    crate::arch::x86_64::prefetch_lines(
                        cols[c].as_ptr().wrapping_add(b * 64).cast(),
                        64 * core::mem::size_of::<T>(),
                    );
                    if let Some(w) = wts[c] {
                        crate::arch::x86_64::prefetch_lines(
                            w.as_ptr().wrapping_add(b * 64).cast(),
                            128,
                        );
                    }
                }
            }
            if T::BYTES && !weighted {
                // Bytes: a slot's 32 rows in one `and` and one sum of
                // absolute differences (four 64-bit sums of eight bytes).
                for half in 0..2 {
                    let x: [__m256i; C] = core::array::from_fn(|c| {
                        _mm256_loadu_si256(cols[c].as_ptr().add(b * 64 + 32 * half).cast())
                    });
                    for h in 0..H {
                        let m = _mm256_loadu_si256(hm[active[h]].as_ptr().add(32 * half).cast());
                        for c in 0..C {
                            let s =
                                _mm256_sad_epu8(_mm256_and_si256(x[c], m), _mm256_setzero_si256());
                            acc[c][h] = _mm256_add_epi64(acc[c][h], s);
                        }
                    }
                }
                continue;
            }
            for jj in 0..16 / step {
                let j = j0 + jj * step;
                let i = b * 64 + 4 * j;
                let x: [__m256i; C] = core::array::from_fn(|c| {
                    let x = T::load4(cols[c].as_ptr().add(i));
                    match wts[c] {
                        Some(w) => T::weigh(x, w.as_ptr().add(i)),
                        None => x,
                    }
                });
                for h in 0..H {
                    let four = hm[active[h]]
                        .as_ptr()
                        .add(4 * j)
                        .cast::<i32>()
                        .read_unaligned();
                    let m = _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(four));
                    for c in 0..C {
                        acc[c][h] = T::masked_add(acc[c][h], x[c], m);
                    }
                }
            }
        }
        for c in 0..C {
            sums[c][..H].copy_from_slice(&acc[c]);
        }
    }
}

/// Adds the rows `m` counts to their slots' counts and sums (see the
/// module docs).
///
/// # Safety
/// The CPU supports AVX2; `keys` is `U8` or `Pair` and, like every column
/// of `values`, has `n` rows, each key in the table's layout; `m` covers
/// `n` rows; `t` keeps sums and neither min nor max, with 8 lanes for
/// floats and 1 for integers;
/// `weights` is empty or has one entry per column, each weight column `n`
/// rows.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn sum<T: Lanes4>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    values: &[&[T]],
    weights: Weights<'_, '_>,
    m: RowMask<'_>,
    n: usize,
) {
    debug_assert_eq!(t.lanes, if T::FLOAT { 8 } else { 1 });
    let full = n / 64;
    let (mut hot, mut n_hot) = if t.counts.len() <= HOT {
        every_slot(&keys, t.counts.len())
    } else {
        seed_hot(&keys, m, n)
    };
    if n_hot == HOT && spreads(&keys, m, n, (&hot, n_hot)) {
        // SAFETY: the leaf's contract, and 0 is a block start.
        let done = unsafe { cold::rest_from(t, keys, (values, weights), m, (0, n)) };
        // Float tables here have 8 lanes: taken whole.
        debug_assert!(done);
        return;
    }
    let pf = crate::cpu::grouped_prefetch();
    let mut masks = [[[0u8; 64]; HOT]; CHUNK_BLOCKS];
    let mut c0 = 0;
    while c0 < full {
        let c1 = full.min(c0 + CHUNK_BLOCKS);
        // Pass A: the hot slots' masks and counts; the other rows go to
        // the table now, and name candidates for the hot set.
        let mut pass_a = ChunkA::new();
        for b in c0..c1 {
            let w = m.word(b);
            // SAFETY: AVX2 (the contract); block `b` is a full block of
            // the key columns.
            let hm = unsafe { block_masks(&keys, &hot, n_hot, b, w, &mut masks[b - c0]) };
            pass_a.block(t, (&keys, values, weights), (&hot, n_hot), b, w, &hm);
        }
        let (active, n_active) = pass_a.active(n_hot);
        // Pass B: the columns' hot sums, a run of columns a pass, as many
        // as keep the accumulators (slots times columns) within ten of the
        // sixteen registers.
        let run = match n_active {
            0..=3 => 3,
            4..=5 => 2,
            _ => 1,
        };
        let mut c = 0;
        while c < values.len() && n_active > 0 {
            let k = run.min(values.len() - c);
            let wt = |i: usize| weights.get(c + i).copied().flatten();
            // Floats take their lanes' two halves in two passes (each
            // accumulator one half's four lanes, from the table's).
            let step = if T::FLOAT { 2 } else { 1 };
            for half in 0..step {
                let span = (c0, c1, pf, (half, step));
                let mut acc = [[_mm256_setzero_si256(); HOT]; 3];
                for (i, acc) in acc.iter_mut().enumerate().take(k) {
                    for h in 0..n_active {
                        let at = hot[active[h]].slot * t.columns + c + i;
                        // SAFETY: AVX2 (the contract); `at` is a sum of the
                        // table.
                        acc[h] = unsafe { T::start(t.sums, at, half) };
                    }
                }
                macro_rules! pass {
                    ($k:literal) => {{
                        let cols: [&[T]; $k] = core::array::from_fn(|i| values[c + i]);
                        let wts: [Option<&[u16]>; $k] = core::array::from_fn(wt);
                        macro_rules! arm {
                            ($h:literal) => {
                                // SAFETY: AVX2 (the contract); blocks c0..c1
                                // are full blocks of every column and weight
                                // column.
                                unsafe {
                                    col_pass::<T, $h, $k>(
                                        cols, wts, span, &masks, &active, &mut acc,
                                    )
                                }
                            };
                        }
                        match n_active {
                            1 => arm!(1),
                            2 => arm!(2),
                            3 => arm!(3),
                            4 => arm!(4),
                            5 => arm!(5),
                            6 => arm!(6),
                            7 => arm!(7),
                            _ => arm!(8),
                        }
                    }};
                }
                match k {
                    1 => pass!(1),
                    2 => pass!(2),
                    _ => pass!(3),
                }
                for (i, acc) in acc.iter().enumerate().take(k) {
                    for h in 0..n_active {
                        let at = hot[active[h]].slot * t.columns + c + i;
                        // SAFETY: AVX2 (the contract); `at` is a sum of the
                        // table.
                        unsafe { T::put(t.sums, at, half, acc[h]) };
                    }
                }
            }
            c += k;
        }
        let stop = pass_a.finish(&mut hot, &mut n_hot, (c1 - c0) * 64);
        c0 = c1;
        if stop && c0 < full {
            // The rest of the call, the hot set no longer covering its
            // rows: the cold leaf.
            // SAFETY: the leaf's contract; `c0 * 64` is a block start.
            let done = unsafe { cold::rest_from(t, keys, (values, weights), m, (c0 * 64, n)) };
            debug_assert!(done);
            return;
        }
    }
    // The rows past the last full block (under 64): the twin, which sets
    // nothing up (the cold leaf's pairs clear and fold a table's worth).
    if full * 64 < n {
        tail(t, keys, (values, weights), m, (full * 64, n));
    }
}

/// The rows `m` counts in `start..n` (a last partial block) by the scalar
/// twin. Out of line: the leaf's body stays its own loops.
#[inline(never)]
fn tail<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    vw: (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    (start, n): (usize, usize),
) {
    crate::arch::scalar::grouped::add_range(t, keys, vw, m, start, n);
}
