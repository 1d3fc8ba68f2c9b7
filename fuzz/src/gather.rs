//! keel-kernels gather: every level against a naive loop on arbitrary
//! input, checked and unchecked, one column and frames, and the masked
//! forms (`gather_masked`, `take_masked`) over a bitmap, and the bitmap
//! form (`bitmap::compact`, also at source offsets and under every form of
//! mask).
//!
//! Indices are arbitrary (so often out of range): every level must then
//! return the same `OutOfRange` error the naive search finds, and the
//! unchecked form is only called when every index is in range.

use arbitrary::Arbitrary;
use keel_kernels::Error;
use keel_kernels::Kernels;
use keel_kernels::gather::{Column, ColumnMut, Index, Value};
use keel_kernels::mask::{Bits as MaskBits, Mask, Selection};

/// A column, indices and how to read them.
#[derive(Arbitrary, Debug)]
pub struct GatherInput {
    /// `ty % 7`: i64, u64, f64, i32, u32, f32, u8.
    pub ty: u8,
    /// 64-bit indices instead of 32-bit.
    pub wide: bool,
    /// Reduce indices modulo the column length (mostly valid input) instead
    /// of taking them raw (mostly out of range).
    pub wrap: bool,
    /// Extra columns for a frame gather (`frame % 20`, 0 = single column;
    /// past 15 the frame spans two 16-column passes).
    pub frame: u8,
    /// Raw column words (each is truncated to the element width).
    pub values: Vec<u64>,
    /// Raw indices.
    pub idx: Vec<u64>,
}

trait Bits: Value + Copy + Default + core::fmt::Debug {
    fn make(x: u64) -> Self;
    fn bits(self) -> u64;
}

macro_rules! bits {
    ($($t:ty => |$x:ident| $make:expr, |$v:ident| $bits:expr);* $(;)?) => {$(
        impl Bits for $t {
            fn make($x: u64) -> Self { $make }
            fn bits(self) -> u64 { let $v = self; $bits }
        }
    )*};
}

bits! {
    i64 => |x| x as i64, |v| v as u64;
    u64 => |x| x, |v| v;
    f64 => |x| f64::from_bits(x), |v| v.to_bits();
    i32 => |x| x as i32, |v| v as u32 as u64;
    u32 => |x| x as u32, |v| v as u64;
    f32 => |x| f32::from_bits(x as u32), |v| v.to_bits() as u64;
    u8 => |x| x as u8, |v| v as u64;
}

/// Naive oracle: the output, or the first out-of-range index.
fn naive<T: Bits>(src: &[T], idx: &[u64]) -> Result<Vec<T>, Error> {
    idx.iter()
        .enumerate()
        .map(|(position, &i)| {
            src.get(usize::try_from(i).unwrap_or(usize::MAX))
                .copied()
                .ok_or(Error::OutOfRange {
                    what: "gather index",
                    position,
                    index: i,
                    len: src.len(),
                })
        })
        .collect()
}

fn same<T: Bits>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.bits() == y.bits())
}

fn check<T: Bits, I: Index + Copy>(input: &GatherInput, idx: &[I], raw: &[u64]) {
    let src: Vec<T> = input.values.iter().map(|&x| T::make(x)).collect();
    let want = naive(&src, raw);
    let n = raw.len();
    // Frame: the column again, reversed, and as another copy.
    let rev: Vec<T> = src.iter().rev().copied().collect();
    let extra = (input.frame % 20) as usize;
    // The masked forms: the raw indices as a selection bitmap at a bit
    // offset, over the rows it covers.
    let off = usize::from(input.frame % 64);
    let covered = (raw.len() * 64).saturating_sub(off).min(src.len());
    let bit = |i: usize| raw[(i + off) / 64] >> ((i + off) % 64) & 1 == 1;
    let want_m: Vec<T> = (0..covered).filter(|&i| bit(i)).map(|i| src[i]).collect();
    let sel = Selection::Bitmap(MaskBits::with_offset(raw, off));
    // The bitmap form (`compact`): the column's raw words as the source
    // bits, packed at the rows the same bitmap counts.
    let mut want_b = vec![0u64; want_m.len().div_ceil(64) + 1];
    let vbit = |i: usize| input.values[i / 64] >> (i % 64) & 1;
    for (k, i) in (0..covered).filter(|&i| bit(i)).enumerate() {
        want_b[k / 64] |= vbit(i) << (k % 64);
    }
    *want_b.last_mut().expect("one word past") = !0;
    for k in Kernels::supported() {
        let mut words = vec![!0u64; want_b.len()];
        let got = k.compact(MaskBits::new(&input.values), covered, sel, &mut words);
        assert_eq!(got, Ok(want_m.len()), "{} compact", k.level());
        assert_eq!(words, want_b, "{} compact", k.level());
        let fill = T::make(0x5a5a_5a5a_5a5a_5a5a);
        let mut out = vec![fill; want_m.len() + 2];
        let got = k.gather_masked(&src[..covered], sel, &mut out);
        assert_eq!(got, Ok(want_m.len()), "{} gather_masked", k.level());
        assert!(
            same(&out[..want_m.len()], &want_m),
            "{} gather_masked",
            k.level()
        );
        assert!(
            same(&out[want_m.len()..], &[fill; 2]),
            "{} wrote past",
            k.level()
        );
        let took = k
            .take_masked(&src[..covered], sel)
            .expect("a covering bitmap");
        assert!(same(&took, &want_m), "{} take_masked", k.level());
        let mut out = vec![T::default(); n];
        let got = k.gather(&src, idx, &mut out);
        match &want {
            Ok(w) => {
                assert_eq!(got, Ok(()), "{}", k.level());
                assert!(same(&out, w), "{} differs from the naive loop", k.level());
                let mut out2 = vec![T::default(); n];
                // SAFETY: the oracle found every index in range.
                let r = unsafe { k.gather_unchecked(&src, idx, &mut out2) };
                assert_eq!(r, Ok(()));
                assert!(same(&out2, w), "{} unchecked differs", k.level());
            }
            Err(e) => assert_eq!(got, Err(*e), "{}", k.level()),
        }
        if extra > 0 {
            let mut outs_data: Vec<Vec<T>> = vec![vec![T::default(); n]; extra + 1];
            let mut cols = vec![Column::new(&src)];
            for c in 0..extra {
                cols.push(Column::new(if c % 2 == 0 { &rev } else { &src }));
            }
            let mut outs: Vec<ColumnMut<'_>> =
                outs_data.iter_mut().map(|o| ColumnMut::new(o)).collect();
            let got = k.gather_frame(&cols, idx, &mut outs);
            drop(outs);
            match &want {
                Ok(w) => {
                    assert_eq!(got, Ok(()), "{} frame", k.level());
                    let wr = naive(&rev, raw).expect("same length as src");
                    for (c, o) in outs_data.iter().enumerate() {
                        // Odd columns of the frame are `rev`, even ones `src`.
                        let want_c = if c % 2 == 1 { &wr } else { w };
                        assert!(same(o, want_c), "{} frame column {c}", k.level());
                    }
                }
                Err(e) => assert_eq!(got, Err(*e), "{} frame", k.level()),
            }
        }
    }
}

/// `compact` with its source at a bit offset, as words and as arrow's
/// bytes (cut to the bytes the rows need), under each form of mask: the
/// raw indices as a selection bitmap or a validity at a bit offset, both
/// together (the source's own words as the validity), or the rows they
/// count as a selection vector.
fn check_compact(input: &GatherInput, raw: &[u64]) {
    let v = &input.values;
    let (soff, off) = (usize::from(input.ty >> 2), usize::from(input.frame % 64));
    let rows = (v.len() * 64)
        .saturating_sub(soff)
        .min((raw.len() * 64).saturating_sub(off));
    let bit = |w: &[u64], o: usize, i: usize| w[(i + o) / 64] >> ((i + o) % 64) & 1 == 1;
    let sel: Vec<u32> = (0..rows as u32)
        .filter(|&i| bit(raw, off, i as usize))
        .collect();
    let bytes: Vec<u8> = v.iter().flat_map(|w| w.to_le_bytes()).collect();
    let bytes = &bytes[..(soff + rows).div_ceil(8).min(bytes.len())];
    let m = MaskBits::with_offset(raw, off);
    let (mask, counted): (Mask<'_>, Vec<usize>) = match input.frame / 64 {
        0 => (
            Selection::Bitmap(m).into(),
            sel.iter().map(|&i| i as usize).collect(),
        ),
        1 => (Mask::valid(m), sel.iter().map(|&i| i as usize).collect()),
        2 => (
            Mask::valid(MaskBits::new(v)).select(Selection::Bitmap(m)),
            sel.iter()
                .map(|&i| i as usize)
                .filter(|&i| bit(v, 0, i))
                .collect(),
        ),
        _ => (
            Selection::Rows(&sel).into(),
            sel.iter().map(|&i| i as usize).collect(),
        ),
    };
    let mut want = vec![0u64; counted.len().div_ceil(64) + 1];
    for (k, &i) in counted.iter().enumerate() {
        want[k / 64] |= u64::from(bit(v, soff, i)) << (k % 64);
    }
    *want.last_mut().expect("one word past") = !0;
    for k in Kernels::supported() {
        for src in [
            MaskBits::with_offset(v, soff),
            MaskBits::from_bytes(bytes, soff),
        ] {
            let mut words = vec![!0u64; want.len()];
            let got = k.compact(src, rows, mask, &mut words);
            assert_eq!(got, Ok(counted.len()), "{} compact at {soff}", k.level());
            assert_eq!(words, want, "{} compact at {soff}", k.level());
        }
    }
}

/// Runs one input at every supported level.
pub fn gather(input: &GatherInput) {
    let len = input.values.len() as u64;
    let raw: Vec<u64> = input
        .idx
        .iter()
        .map(|&i| if input.wrap && len > 0 { i % len } else { i })
        .map(|i| if input.wide { i } else { i as u32 as u64 })
        .collect();
    let idx32: Vec<u32> = raw.iter().map(|&i| i as u32).collect();
    check_compact(input, &raw);
    macro_rules! go {
        ($t:ty) => {
            if input.wide {
                check::<$t, u64>(input, &raw, &raw)
            } else {
                check::<$t, u32>(input, &idx32, &raw)
            }
        };
    }
    match input.ty % 7 {
        0 => go!(i64),
        1 => go!(u64),
        2 => go!(f64),
        3 => go!(i32),
        4 => go!(u32),
        5 => go!(f32),
        _ => go!(u8),
    }
}
