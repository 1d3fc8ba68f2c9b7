//! Gather at every supported level against a naive loop: every output
//! length 0..=300, random, sorted and edge indices, every element type and
//! both index widths; out-of-range errors at every level; frames.

use keel_kernels::Error;
use keel_kernels::Kernels;
use keel_kernels::cpu::{self, Level};
use keel_kernels::gather::{Column, ColumnMut, Index, Value};

/// xorshift64*: deterministic, seeded per case so failures replay.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

trait Val: Value + Copy + PartialEq + core::fmt::Debug + Default {
    fn make(x: u64) -> Self;
    fn bits(self) -> u64;
}

macro_rules! val {
    ($($t:ty => |$x:ident| $make:expr, |$v:ident| $bits:expr);* $(;)?) => {$(
        impl Val for $t {
            fn make($x: u64) -> Self { $make }
            fn bits(self) -> u64 { let $v = self; $bits }
        }
    )*};
}

val! {
    i64 => |x| x as i64, |v| v as u64;
    u64 => |x| x, |v| v;
    f64 => |x| f64::from_bits(x), |v| v.to_bits();
    i32 => |x| x as i32, |v| v as u32 as u64;
    u32 => |x| x as u32, |v| v as u64;
    f32 => |x| f32::from_bits(x as u32), |v| v.to_bits() as u64;
    u8 => |x| x as u8, |v| v as u64;
}

trait Ix: Index + Copy + core::fmt::Debug {
    fn make(i: usize) -> Self;
    fn raw(self) -> u64;
    const MAX: u64;
}
impl Ix for u32 {
    fn make(i: usize) -> Self {
        i as u32
    }
    fn raw(self) -> u64 {
        self as u64
    }
    const MAX: u64 = u32::MAX as u64;
}
impl Ix for u64 {
    fn make(i: usize) -> Self {
        i as u64
    }
    fn raw(self) -> u64 {
        self
    }
    const MAX: u64 = u64::MAX;
}

fn levels() -> Vec<Kernels> {
    let v: Vec<Kernels> = Kernels::supported().collect();
    for l in Level::ALL {
        if !cpu::supported(l) {
            println!("level {l} not supported by this CPU: not tested here");
        }
    }
    v
}

/// Lengths swept: natively 0..=300; under Miri 0..=17, every tail of the
/// widest hardware-gather leaf (8 lanes) after zero, one and two vectors.
const MAX_LEN: usize = if cfg!(miri) { 17 } else { 300 };

#[derive(Clone, Copy, Debug)]
enum Pattern {
    Random,
    Sorted,
    Edge,
    Clustered,
}

/// The index patterns run at output length `n`: all four natively; under
/// Miri the edge rows (reads at both ends of the column) and one of the
/// other three in turn, so that the dense and the sparse step (the pattern
/// only picks between those) both still run across the lengths, at half
/// the cost.
fn patterns(n: usize) -> Vec<Pattern> {
    let others = [Pattern::Random, Pattern::Sorted, Pattern::Clustered];
    if cfg!(miri) {
        vec![Pattern::Edge, others[n % others.len()]]
    } else {
        let mut v = others.to_vec();
        v.push(Pattern::Edge);
        v
    }
}

fn indices<I: Ix>(rng: &mut Rng, pattern: Pattern, n: usize, src_len: usize) -> Vec<I> {
    let mut v: Vec<usize> = match pattern {
        Pattern::Random | Pattern::Sorted => (0..n).map(|_| rng.below(src_len)).collect(),
        // First row, last row, and the rows next to them.
        Pattern::Edge => (0..n)
            .map(|k| match k % 4 {
                0 => 0,
                1 => src_len - 1,
                2 => 1.min(src_len - 1),
                _ => src_len.saturating_sub(2),
            })
            .collect(),
        // Short runs of consecutive rows at random starts.
        Pattern::Clustered => {
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                let start = rng.below(src_len);
                for r in start..(start + 1 + rng.below(9)).min(src_len) {
                    v.push(r);
                }
            }
            v.truncate(n);
            v
        }
    };
    if let Pattern::Sorted = pattern {
        v.sort_unstable();
    }
    v.into_iter().map(I::make).collect()
}

fn naive<T: Val, I: Ix>(src: &[T], idx: &[I]) -> Vec<T> {
    idx.iter().map(|&i| src[i.raw() as usize]).collect()
}

fn same<T: Val>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.bits() == y.bits())
}

fn check_type<T: Val, I: Ix>(seed: u64) {
    let levels = levels();
    let mut rng = Rng::new(seed);
    for n in 0..=MAX_LEN {
        let src_len = 1 + rng.below(2 * MAX_LEN);
        let src: Vec<T> = (0..src_len).map(|_| T::make(rng.next())).collect();
        for pattern in patterns(n) {
            let idx: Vec<I> = indices(&mut rng, pattern, n, src_len);
            let want = naive(&src, &idx);
            for &k in &levels {
                let mut out = vec![T::default(); n];
                assert_eq!(k.gather(&src, &idx, &mut out), Ok(()));
                assert!(
                    same(&out, &want),
                    "{} {pattern:?} n={n} src_len={src_len}",
                    k.level()
                );
                let mut out2 = vec![T::default(); n];
                // SAFETY: every index was drawn below src_len.
                let r = unsafe { k.gather_unchecked(&src, &idx, &mut out2) };
                assert_eq!(r, Ok(()));
                assert!(
                    same(&out2, &want),
                    "unchecked {} {pattern:?} n={n}",
                    k.level()
                );
            }
        }
    }
}

fn check_out_of_range<T: Val, I: Ix>(seed: u64) {
    let levels = levels();
    let mut rng = Rng::new(seed);
    // Under Miri every other length (the bad index's lane is random).
    for n in (1..=MAX_LEN).step_by(if cfg!(miri) { 2 } else { 1 }) {
        let src_len = 1 + rng.below(MAX_LEN);
        let src: Vec<T> = (0..src_len).map(|_| T::make(rng.next())).collect();
        let mut idx: Vec<I> = indices(&mut rng, Pattern::Random, n, src_len);
        let position = rng.below(n);
        // Just past the end, or far past it.
        let bad = match rng.below(3) {
            0 => src_len as u64,
            1 => I::MAX,
            _ => src_len as u64 + 1 + rng.below(1000) as u64,
        };
        idx[position] = I::make(bad as usize);
        // The index as stored: on a 32-bit target `bad as usize` cuts I::MAX.
        let bad = idx[position].raw();
        // A second bad index later must not hide the first.
        if position + 1 < n {
            let later = position + 1 + rng.below(n - position - 1);
            idx[later] = I::make(src_len);
        }
        for &k in &levels {
            let mut out = vec![T::default(); n];
            let err = k.gather(&src, &idx, &mut out);
            assert_eq!(
                err,
                Err(Error::OutOfRange {
                    what: "gather index",
                    position,
                    index: bad,
                    len: src_len
                }),
                "{} n={n}",
                k.level()
            );
            let msg = err.unwrap_err().to_string();
            assert!(
                msg.contains(&bad.to_string()) && msg.contains(&src_len.to_string()),
                "{msg}"
            );
            let mut frame_out = vec![T::default(); n];
            let mut outs = [ColumnMut::new(&mut frame_out)];
            assert_eq!(
                k.gather_frame(&[Column::new(&src)], &idx, &mut outs),
                Err(Error::OutOfRange {
                    what: "gather index",
                    position,
                    index: bad,
                    len: src_len
                })
            );
        }
    }
}

/// Every value type with both index widths; under Miri one value type per
/// leaf width (8, 4 and 1 bytes) with both index widths, since the typed
/// layer hands i64/u64/f64 (and i32/u32/f32) to the same width-only leaf,
/// so the other types run exactly that code.
macro_rules! each_type {
    ($f:ident, $seed:expr) => {
        $f::<i64, u32>($seed);
        $f::<f64, u64>($seed + 5);
        $f::<f32, u32>($seed + 10);
        $f::<u32, u64>($seed + 9);
        $f::<u8, u32>($seed + 12);
        $f::<u8, u64>($seed + 13);
        if !cfg!(miri) {
            $f::<i64, u64>($seed + 1);
            $f::<u64, u32>($seed + 2);
            $f::<u64, u64>($seed + 3);
            $f::<f64, u32>($seed + 4);
            $f::<i32, u32>($seed + 6);
            $f::<i32, u64>($seed + 7);
            $f::<u32, u32>($seed + 8);
            $f::<f32, u64>($seed + 11);
        }
    };
}

#[test]
fn every_level_matches_naive_for_every_type() {
    each_type!(check_type, 1);
}

#[test]
fn out_of_range_is_an_error_at_every_level() {
    each_type!(check_out_of_range, 100);
}

/// Indices of 2^32 and more must not wrap into range (u64 indices, small column).
/// A single-column gather checks and copies 512 indices at a time: an
/// out-of-range index in a later block is reported with its position, the
/// blocks before it are written, and its own block and the rest of `out`
/// are untouched (the documented contract), at every level, for sorted and
/// random indices and both index widths.
#[test]
fn out_of_range_in_a_later_block() {
    const BLOCK: usize = 512;
    let n = if cfg!(miri) {
        2 * BLOCK + 40
    } else {
        5 * BLOCK + 77
    };
    let mut rng = Rng::new(11);
    let src_len = 4096;
    let src: Vec<u64> = (0..src_len).map(|_| rng.next()).collect();
    // Under Miri random indices only: the pattern only picks the prefetch
    // hint, which Miri does not model.
    let patterns: &[Pattern] = if cfg!(miri) {
        &[Pattern::Random]
    } else {
        &[Pattern::Random, Pattern::Sorted]
    };
    for &pattern in patterns {
        let positions: &[usize] = if cfg!(miri) {
            &[BLOCK, n - 1]
        } else {
            &[BLOCK, BLOCK + 1, n - 1, BLOCK + 200]
        };
        for &position in positions {
            let mut idx: Vec<u32> = indices(&mut rng, pattern, n, src_len);
            let bad = src_len as u64 + rng.below(50) as u64;
            idx[position] = bad as u32;
            let idx64: Vec<u64> = idx.iter().map(|&i| u64::from(i)).collect();
            let want = Err(Error::OutOfRange {
                what: "gather index",
                position,
                index: bad,
                len: src_len,
            });
            let written = position / BLOCK * BLOCK;
            for k in levels() {
                for wide in [false, true] {
                    let sentinel = 0xDEAD_BEEF_u64;
                    let mut out = vec![sentinel; n];
                    let got = if wide {
                        k.gather(&src, &idx64, &mut out)
                    } else {
                        k.gather(&src, &idx, &mut out)
                    };
                    assert_eq!(got, want, "{} {pattern:?} at {position}", k.level());
                    for (i, &o) in out.iter().enumerate() {
                        let expect = if i < written {
                            src[idx[i] as usize]
                        } else {
                            sentinel
                        };
                        assert_eq!(o, expect, "{} {pattern:?} row {i}", k.level());
                    }
                }
            }
        }
    }
}

#[test]
fn wide_indices_do_not_wrap() {
    let src: Vec<u32> = (0..100).collect();
    for k in levels() {
        for bad in [1u64 << 32, (1u64 << 32) + 5, u64::MAX, 1 << 63] {
            let idx = [3u64, bad, 7];
            let mut out = [0u32; 3];
            assert_eq!(
                k.gather(&src, &idx, &mut out),
                Err(Error::OutOfRange {
                    what: "gather index",
                    position: 1,
                    index: bad,
                    len: 100
                })
            );
        }
    }
}

#[test]
fn output_length_must_match() {
    let src = [1i64, 2, 3];
    for k in levels() {
        let mut out = [0i64; 2];
        assert_eq!(
            k.gather(&src, &[0u32, 1, 2], &mut out),
            Err(Error::OutputLength {
                column: 0,
                expected: 3,
                actual: 2
            })
        );
        // SAFETY: indices are in range; the length error is still reported.
        let r = unsafe { k.gather_unchecked(&src, &[0u32], &mut out) };
        assert_eq!(
            r,
            Err(Error::OutputLength {
                column: 0,
                expected: 1,
                actual: 2
            })
        );
    }
}

/// An empty column accepts only an empty index list.
#[test]
fn empty_column() {
    let src: [f64; 0] = [];
    for k in levels() {
        let mut out: [f64; 0] = [];
        assert_eq!(k.gather(&src, &[] as &[u64], &mut out), Ok(()));
        let mut out = [0.0f64; 1];
        assert_eq!(
            k.gather(&src, &[0u32], &mut out),
            Err(Error::OutOfRange {
                what: "gather index",
                position: 0,
                index: 0,
                len: 0
            })
        );
    }
}

/// Columns big enough to take the prefetching path, over several blocks.
#[test]
fn large_columns_take_the_prefetch_path() {
    if cfg!(miri) {
        println!("skipped under Miri: a 2 MiB column is too slow to interpret");
        return;
    }
    let mut rng = Rng::new(7);
    let src_len = (2 << 20) / 8 + 3;
    let src: Vec<u64> = (0..src_len).map(|_| rng.next()).collect();
    let src32: Vec<u32> = src.iter().map(|&x| x as u32).collect();
    for n in [0, 1, 31, 32, 33, 511, 512, 513, 1000, 1024 + 37, 4099] {
        for pattern in [Pattern::Random, Pattern::Sorted, Pattern::Clustered] {
            let idx32: Vec<u32> = indices(&mut rng, pattern, n, src_len);
            let idx64: Vec<u64> = idx32.iter().map(|&i| i as u64).collect();
            for k in levels() {
                let mut out = vec![0u64; n];
                k.gather(&src, &idx32, &mut out).unwrap();
                assert!(
                    same(&out, &naive(&src, &idx32)),
                    "{} {pattern:?} {n}",
                    k.level()
                );
                k.gather(&src, &idx64, &mut out).unwrap();
                assert!(
                    same(&out, &naive(&src, &idx64)),
                    "{} {pattern:?} {n}",
                    k.level()
                );
                let mut out = vec![0u32; n];
                k.gather(&src32, &idx32, &mut out).unwrap();
                assert!(
                    same(&out, &naive(&src32, &idx32)),
                    "{} {pattern:?} {n}",
                    k.level()
                );
                k.gather(&src32, &idx64, &mut out).unwrap();
                assert!(
                    same(&out, &naive(&src32, &idx64)),
                    "{} {pattern:?} {n}",
                    k.level()
                );
            }
        }
    }
}

/// Frames over large columns: several steps of 16 Ki indices, with and
/// without prefetch (random and sorted steps).
#[test]
fn large_frames_over_several_steps() {
    if cfg!(miri) {
        println!("skipped under Miri: 2 MiB columns are too slow to interpret");
        return;
    }
    let mut rng = Rng::new(9);
    let rows = (2 << 20) / 8 + 5;
    let a: Vec<u64> = (0..rows).map(|_| rng.next()).collect();
    let b: Vec<f32> = (0..rows).map(|_| Val::make(rng.next())).collect();
    for pattern in [Pattern::Random, Pattern::Sorted, Pattern::Clustered] {
        let n = 40_000;
        let idx: Vec<u32> = indices(&mut rng, pattern, n, rows);
        for k in levels() {
            let (mut oa, mut ob) = (vec![0u64; n], vec![0f32; n]);
            let cols = [Column::new(&a), Column::new(&b)];
            let mut outs = [ColumnMut::new(&mut oa), ColumnMut::new(&mut ob)];
            assert_eq!(k.gather_frame(&cols, &idx, &mut outs), Ok(()));
            assert!(same(&oa, &naive(&a, &idx)), "{} {pattern:?}", k.level());
            assert!(same(&ob, &naive(&b, &idx)), "{} {pattern:?}", k.level());
        }
    }
}

/// A frame of every element type, gathered in one call, equals seven naive loops.
#[test]
fn frame_matches_naive_per_column() {
    let mut rng = Rng::new(42);
    let step = if cfg!(miri) { 13 } else { 1 };
    for n in (0..=MAX_LEN).step_by(step) {
        let rows = 1 + rng.below(MAX_LEN);
        let a: Vec<i64> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let b: Vec<i32> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let c: Vec<u32> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let d: Vec<u64> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let e: Vec<f64> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let f: Vec<f32> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let g: Vec<u8> = (0..rows).map(|_| Val::make(rng.next())).collect();
        let idx: Vec<u32> = indices(&mut rng, Pattern::Random, n, rows);
        for k in levels() {
            let (mut oa, mut ob, mut oc, mut od) =
                (vec![0i64; n], vec![0i32; n], vec![0u32; n], vec![0u64; n]);
            let (mut oe, mut of, mut og) = (vec![0f64; n], vec![0f32; n], vec![0u8; n]);
            let cols = [
                Column::new(&a),
                Column::new(&b),
                Column::new(&c),
                Column::new(&d),
                Column::new(&e),
                Column::new(&f),
                Column::new(&g),
            ];
            let mut outs = [
                ColumnMut::new(&mut oa),
                ColumnMut::new(&mut ob),
                ColumnMut::new(&mut oc),
                ColumnMut::new(&mut od),
                ColumnMut::new(&mut oe),
                ColumnMut::new(&mut of),
                ColumnMut::new(&mut og),
            ];
            assert_eq!(k.gather_frame(&cols, &idx, &mut outs), Ok(()));
            assert!(same(&oa, &naive(&a, &idx)), "{} n={n}", k.level());
            assert!(same(&ob, &naive(&b, &idx)), "{} n={n}", k.level());
            assert!(same(&oc, &naive(&c, &idx)), "{} n={n}", k.level());
            assert!(same(&od, &naive(&d, &idx)), "{} n={n}", k.level());
            assert!(same(&oe, &naive(&e, &idx)), "{} n={n}", k.level());
            assert!(same(&of, &naive(&f, &idx)), "{} n={n}", k.level());
            assert!(same(&og, &naive(&g, &idx)), "{} n={n}", k.level());
        }
    }
}

/// More columns than one internal pass holds (16), mixed with the shape errors.
#[test]
fn frame_shapes() {
    let cols_data: Vec<Vec<u64>> = (0..21u64)
        .map(|c| (0..50).map(|r| c * 1000 + r).collect())
        .collect();
    let idx = [49u64, 0, 25];
    for k in levels() {
        let mut outs_data = vec![vec![0u64; 3]; 21];
        let cols: Vec<Column<'_>> = cols_data.iter().map(|c| Column::new(c)).collect();
        let mut outs: Vec<ColumnMut<'_>> =
            outs_data.iter_mut().map(|o| ColumnMut::new(o)).collect();
        assert_eq!(k.gather_frame(&cols, &idx, &mut outs), Ok(()));
        drop(outs);
        for (c, o) in outs_data.iter().enumerate() {
            let c = c as u64 * 1000;
            assert_eq!(o, &[c + 49, c, c + 25]);
        }
        // Output 18 (in the second internal pass) too short.
        let mut outs_data = vec![vec![0u64; 3]; 21];
        outs_data[18].pop();
        let mut outs: Vec<ColumnMut<'_>> =
            outs_data.iter_mut().map(|o| ColumnMut::new(o)).collect();
        assert_eq!(
            k.gather_frame(&cols, &idx, &mut outs),
            Err(Error::OutputLength {
                column: 18,
                expected: 3,
                actual: 2
            })
        );
        drop(outs);
        assert!(
            outs_data.iter().all(|o| o.iter().all(|&x| x == 0)),
            "{}: no column is written on a shape error in a later pass",
            k.level()
        );
        let mut o = [0u64; 3];
        assert_eq!(
            k.gather_frame(&cols[..2], &idx, &mut [ColumnMut::new(&mut o)]),
            Err(Error::ColumnCount {
                columns: 2,
                outs: 1
            })
        );
        let mut wrong = [0i64; 3];
        assert_eq!(
            k.gather_frame(&cols[..1], &idx, &mut [ColumnMut::new(&mut wrong)]),
            Err(Error::ColumnType { column: 0 })
        );
        let short = [1u64, 2];
        let (mut o1, mut o2) = ([0u64; 3], [0u64; 3]);
        assert_eq!(
            k.gather_frame(
                &[cols[0], Column::new(&short)],
                &idx,
                &mut [ColumnMut::new(&mut o1), ColumnMut::new(&mut o2)]
            ),
            Err(Error::ColumnLength {
                column: 1,
                len: 2,
                expected: 50
            })
        );
        assert_eq!(o1, [0; 3], "no column is written on a shape error");
    }
}

/// Every start offset 0..=63 of the column, the indices and the output (the
/// SIMD leaves use unaligned loads and stores; this proves it). Under Miri,
/// which checks each access's bounds and its alignment to the element
/// (what an offset of whole elements cannot change), offsets 0 and 1.
fn check_offsets<T: Val, I: Ix>(seed: u64) {
    let levels = levels();
    let mut rng = Rng::new(seed);
    let (offsets, lens, max_src) = if cfg!(miri) {
        (0..=1, 0..=12, 24)
    } else {
        (0..=63, 0..=70, 200)
    };
    for off in offsets {
        for n in lens.clone() {
            let src_len = 1 + rng.below(max_src);
            let src_buf: Vec<T> = (0..src_len + off).map(|_| T::make(rng.next())).collect();
            let src = &src_buf[off..];
            let mut idx_buf: Vec<I> = vec![I::make(0); off];
            idx_buf.extend(indices::<I>(&mut rng, Pattern::Random, n, src_len));
            let idx = &idx_buf[off..];
            let want = naive(src, idx);
            for &k in &levels {
                let mut out_buf = vec![T::default(); n + off];
                k.gather(src, idx, &mut out_buf[off..]).unwrap();
                assert!(
                    same(&out_buf[off..], &want),
                    "{} off={off} n={n}",
                    k.level()
                );
            }
        }
    }
}

#[test]
fn every_offset() {
    each_type!(check_offsets, 200);
}

/// A frame, of one column or of several, writes nothing when an index past
/// the first steps is out of range (a single-column gather may: it checks a
/// block at a time).
#[test]
fn frame_writes_nothing_before_an_out_of_range_error() {
    let src: Vec<u64> = (1..=100).collect();
    // Past the first 512-index block of a single-column gather, also under Miri.
    let n = if cfg!(miri) { 600 } else { 5000 };
    let mut idx = vec![5u32; n];
    idx[n - 3] = 100;
    let want = Err(Error::OutOfRange {
        what: "gather index",
        position: n - 3,
        index: 100,
        len: 100,
    });
    // 17 columns take two internal passes: natively only, for Miri's time.
    let widths: &[usize] = if cfg!(miri) { &[1, 2] } else { &[1, 2, 17] };
    for k in levels() {
        for &columns in widths {
            let mut outs_data = vec![vec![0u64; n]; columns];
            let cols = vec![Column::new(&src); columns];
            let mut outs: Vec<ColumnMut<'_>> =
                outs_data.iter_mut().map(|o| ColumnMut::new(o)).collect();
            assert_eq!(k.gather_frame(&cols, &idx, &mut outs), want);
            drop(outs);
            for o in &outs_data {
                assert!(
                    o.iter().all(|&x| x == 0),
                    "{} {columns} columns: rows written before the error",
                    k.level()
                );
            }
        }
    }
}

/// `take` allocates what `gather` writes; `gather_masked` compacts the
/// counted rows, as a naive loop does; both at every level, with errors.
#[test]
fn take_and_masked_gather_equal_naive() {
    use keel_kernels::mask::{Bits, Mask, Selection};
    let mut r = Rng::new(5);
    let lens: Vec<usize> = if cfg!(miri) {
        vec![0, 65]
    } else {
        vec![0, 1, 64, 65, 300, 5000]
    };
    for n in lens {
        let src: Vec<i64> = (0..n as i64).map(|i| i * 7 - 3).collect();
        let idx: Vec<u32> = (0..n).map(|_| r.below(n.max(1)) as u32).collect();
        let valid: Vec<u64> = (0..n.div_ceil(64)).map(|_| r.next()).collect();
        let sel: Vec<u64> = (0..=n.div_ceil(64)).map(|_| r.next() | r.next()).collect();
        let bit = |w: &[u64], i: usize| w[i / 64] >> (i % 64) & 1 == 1;
        for k in Kernels::supported() {
            if n > 0 {
                let mut want = vec![0i64; n];
                k.gather(&src, &idx, &mut want).unwrap();
                assert_eq!(k.take(&src, &idx).unwrap(), want, "{}", k.level());
                let f: Vec<f32> = src.iter().map(|&x| x as f32).collect();
                let fw: Vec<f32> = idx.iter().map(|&i| f[i as usize]).collect();
                assert_eq!(k.take(&f, &idx).unwrap(), fw);
            }
            let m = Mask::valid(Bits::new(&valid))
                .select(Selection::Bitmap(Bits::with_offset(&sel, 3)));
            let want: Vec<i64> = (0..n)
                .filter(|&i| bit(&valid, i) && bit(&sel, i + 3))
                .map(|i| src[i])
                .collect();
            let mut out = vec![0i64; n];
            let got = k.gather_masked(&src, m, &mut out).unwrap();
            assert_eq!(&out[..got], &want[..], "{} len {n}", k.level());
            let m = Mask::valid(Bits::new(&valid)).select(Selection::Rows(&idx));
            let want: Vec<i64> = idx
                .iter()
                .filter(|&&i| bit(&valid, i as usize))
                .map(|&i| src[i as usize])
                .collect();
            let got = k.gather_masked(&src, m, &mut out).unwrap();
            assert_eq!(&out[..got], &want[..]);
            assert_eq!(k.take_masked(&src, m).unwrap(), want);
            let got = k
                .gather_masked(&src, Selection::Rows(&idx), &mut out)
                .unwrap();
            assert_eq!(got, n);
            assert_eq!(
                k.take_masked(&src, Selection::Rows(&idx)).unwrap(),
                &out[..n]
            );
            if n > 1 {
                assert!(matches!(
                    k.gather_masked(&src, Mask::ALL, &mut out[..n - 1]),
                    Err(Error::OutputTooShort { .. })
                ));
            }
        }
    }
    assert_eq!(
        keel_kernels::gather::take(&[1u8, 2], &[0u32, 2]),
        Err(Error::OutOfRange {
            what: "gather index",
            position: 1,
            index: 2,
            len: 2
        })
    );
}

/// `gather_masked` and `take_masked` over a bitmap (at the AVX-512 level a
/// compress per 8, 16 or 64 rows, by width, from one counted row in 3)
/// equal a naive
/// loop for every value width, at densities on both sides of that
/// threshold, with words all set, none set and in between, at bit offsets,
/// and writes nothing past the rows it returns.
#[test]
fn masked_gather_over_bitmaps_every_width_and_density() {
    use keel_kernels::mask::{Bits, Mask};
    fn check<T: keel_kernels::gather::Value + PartialEq + core::fmt::Debug>(
        src: &[T],
        words: &[u64],
        off: usize,
        fill: T,
    ) {
        let n = src.len();
        let bit = |i: usize| words[(i + off) / 64] >> ((i + off) % 64) & 1 == 1;
        let want: Vec<T> = (0..n).filter(|&i| bit(i)).map(|i| src[i]).collect();
        for k in Kernels::supported() {
            let mut out = vec![fill; want.len() + 3];
            let m = Mask::valid(Bits::with_offset(words, off));
            let got = k.gather_masked(src, m, &mut out).unwrap();
            assert_eq!(&out[..got], &want[..], "{} n {n} off {off}", k.level());
            assert_eq!(&out[got..], &[fill; 3], "{} n {n} off {off}", k.level());
            assert_eq!(k.take_masked(src, m).unwrap(), want, "{} take", k.level());
        }
    }
    let mut r = Rng::new(11);
    let lens: Vec<usize> = if cfg!(miri) {
        vec![0, 63, 130]
    } else {
        (0..=300).step_by(7).chain([640, 4099]).collect()
    };
    for n in lens {
        // 1 in 2, 1 in 8, about 1 in 64, and words all or nothing.
        for density in 0..4 {
            let words: Vec<u64> = (0..n.div_ceil(64) + 1)
                .map(|_| match density {
                    0 => r.next(),
                    1 => r.next() & r.next() & r.next(),
                    2 => (0..6).fold(!0, |w, _| w & r.next()),
                    _ if r.next() & 1 == 0 => 0,
                    _ => !0,
                })
                .collect();
            for off in [0, 5] {
                let v64: Vec<u64> = (0..n).map(|_| r.next()).collect();
                check(&v64, &words, off, u64::MAX);
                let f64s: Vec<f64> = v64.iter().map(|&x| x as f64).collect();
                check(&f64s, &words, off, -1.5);
                let v32: Vec<u32> = v64.iter().map(|&x| x as u32).collect();
                check(&v32, &words, off, u32::MAX);
                let i32s: Vec<i32> = v64.iter().map(|&x| x as i32).collect();
                check(&i32s, &words, off, -1);
                let v8: Vec<u8> = v64.iter().map(|&x| x as u8).collect();
                check(&v8, &words, off, 0xAB);
            }
        }
    }
}

/// A take large enough to ask for huge pages for its output (4 MiB and
/// more) still equals the naive loop, at every level, with the output not
/// starting on a 2 MiB boundary in general; one past the switch too.
#[test]
#[cfg_attr(
    miri,
    ignore = "4 MiB outputs are too slow for Miri; the advice is compiled out there"
)]
fn large_takes_equal_naive() {
    let mut rng = Rng::new(21);
    let src: Vec<u64> = (0..100_000).map(|_| rng.next()).collect();
    for n in [(4 << 20) / 8 + 4099, (4 << 20) / 4 + 1] {
        let idx: Vec<u32> = (0..n).map(|_| rng.below(src.len()) as u32).collect();
        let want = naive(&src, &idx);
        for k in levels() {
            assert!(k.take(&src, &idx).unwrap() == want, "{}", k.level());
        }
        let small: Vec<u32> = src.iter().map(|&x| x as u32).collect();
        let want: Vec<u32> = idx.iter().map(|&i| small[i as usize]).collect();
        assert!(keel_kernels::gather::take(&small, &idx).unwrap() == want);
    }
}
