//! keel-kernels grouped aggregates: every level against the scalar twin on
//! arbitrary keys (often out of the layout: then every level must refuse
//! alike), values, masks and layouts.

use arbitrary::Arbitrary;
use keel_kernels::Kernels;
use keel_kernels::grouped::{Aggs, GroupTable, Groups, Key, Keys};
use keel_kernels::mask::{Bits, Mask, Selection};

/// One call's input.
#[derive(Arbitrary, Debug)]
pub struct GroupedInput {
    /// `layout % 3`: u8 codes, u16 codes, a pair of u8 keys.
    pub layout: u8,
    /// Slots of the u8/u16 layouts (`% 256 + 1`) or the pair's second span.
    pub groups: u16,
    /// Key bytes (two per row for u16 and pairs).
    pub keys: Vec<u8>,
    /// Value words (f64 bits and i64 values).
    pub values: Vec<u64>,
    /// Validity words, at bit offset `shift % 64`.
    pub validity: Option<Vec<u64>>,
    /// Selection bytes (arrow's order) at bit offset `shift % 8`.
    pub selection: Option<Vec<u8>>,
    /// Bit offsets.
    pub shift: u8,
    /// `aggs % 8`: the aggregates kept (0 keeps sums).
    pub aggs: u8,
}

/// Whether row `i` counts under the input's validity words and selection
/// bytes (arrow's order), read bit by bit.
fn counted(inp: &GroupedInput, i: usize) -> bool {
    let valid = inp.validity.as_deref().is_none_or(|w| {
        let j = usize::from(inp.shift % 64) + i;
        w[j / 64] >> (j % 64) & 1 == 1
    });
    let selected = inp.selection.as_deref().is_none_or(|b| {
        let j = usize::from(inp.shift % 8) + i;
        b[j / 8] >> (j % 8) & 1 == 1
    });
    valid && selected
}

/// The naive per-slot table: counts, and per column the sum in the
/// documented lane order (row `i` in lane `i % lanes`, `lanes` 8 for a
/// table of at most 256 slots and 1 above, starting from `SUM_ZERO`, folded
/// pairwise; integers wrap, so their order is moot), the min and the max
/// by the documented order.
struct Naive<T: keel_kernels::Element> {
    counts: Vec<u64>,
    lanes: Vec<Vec<[T::Sum; 8]>>,
    mins: Vec<Vec<Option<T>>>,
    maxs: Vec<Vec<Option<T>>>,
}

fn naive<T: keel_kernels::Element + Copy>(
    inp: &GroupedInput,
    slots: &[usize],
    len: usize,
    cols: &[&[T]; 2],
) -> Naive<T> {
    let lanes = if len <= 256 { 8 } else { 1 };
    let mut t = Naive::<T> {
        counts: vec![0; len],
        lanes: vec![vec![[T::SUM_ZERO; 8]; 2]; len],
        mins: vec![vec![None; 2]; len],
        maxs: vec![vec![None; 2]; len],
    };
    for (i, &s) in slots.iter().enumerate() {
        if !counted(inp, i) {
            continue;
        }
        t.counts[s] += 1;
        for (c, col) in cols.iter().enumerate() {
            let x = col[i];
            let l = &mut t.lanes[s][c][i % lanes];
            *l = T::sum_add(*l, x.widen());
            let m = &mut t.mins[s][c];
            if m.is_none_or(|m| x.order_lt(m)) {
                *m = Some(x);
            }
            let m = &mut t.maxs[s][c];
            if m.is_none_or(|m| m.order_lt(x)) {
                *m = Some(x);
            }
        }
    }
    t
}

fn opt_same<T: keel_kernels::Element>(a: Option<T>, b: Option<T>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(b),
        _ => false,
    }
}

fn run<T: keel_kernels::Element + Copy>(inp: &GroupedInput, c0: &[T], c1: &[T]) {
    let g = usize::from(inp.groups % 256) + 1;
    // One input in four keeps its raw key bytes (often out of the layout:
    // every level must refuse alike) and its column length (often not the
    // keys'); the rest decode into range, one key per value.
    let raw = (inp.layout >> 4) & 3 == 0;
    let nk = match inp.layout % 3 {
        0 => inp.keys.len(),
        1 => inp.keys.len().div_ceil(2),
        _ => inp.keys.len() / 2,
    };
    let n = if raw { c0.len() } else { c0.len().min(nk) };
    let (c0, c1) = (&c0[..n], &c1[..n]);
    let (groups, k8, k16, pa, pb);
    let bytes = |skip: usize| inp.keys.iter().skip(skip).step_by(2).copied().take(n);
    let keys = match inp.layout % 3 {
        0 => {
            groups = Groups::u8(g).unwrap();
            k8 = inp
                .keys
                .iter()
                .map(|&b| if raw { b } else { (usize::from(b) % g) as u8 })
                .take(n)
                .collect::<Vec<u8>>();
            Keys::U8(&k8)
        }
        1 => {
            groups = Groups::u16(g * 3).unwrap();
            k16 = inp
                .keys
                .chunks(2)
                .map(|c| u16::from(c[0]) | u16::from(*c.get(1).unwrap_or(&0)) << 8)
                .map(|k| {
                    if raw {
                        k
                    } else {
                        (usize::from(k) % (g * 3)) as u16
                    }
                })
                .take(n)
                .collect::<Vec<u16>>();
            Keys::U16(&k16)
        }
        _ => {
            let span_b = g as u8 % 16 + 1;
            groups = Groups::pair(b'A'..=b'Z', 0..=span_b - 1).unwrap();
            pa = bytes(0)
                .map(|b| if raw { b } else { b'A' + b % 26 })
                .collect::<Vec<u8>>();
            pb = bytes(1)
                .map(|b| if raw { b } else { b % span_b })
                .collect::<Vec<u8>>();
            Keys::Pair(&pa, &pb)
        }
    };
    let aggs = match Aggs::from_bits_truncate(inp.aggs % 8) {
        a if a.is_empty() => Aggs::SUM,
        a => a,
    };
    let mask = Mask {
        validity: inp
            .validity
            .as_deref()
            .map(|w| Bits::with_offset(w, usize::from(inp.shift % 64))),
        selection: inp.selection.as_deref().map_or(Selection::All, |b| {
            Selection::Bitmap(Bits::from_bytes(b, usize::from(inp.shift % 8)))
        }),
    };
    let cols = [c0, c1];
    let mut want = GroupTable::<T>::new(groups, 2, aggs).unwrap();
    let r = Kernels::scalar().group_add(&mut want, keys, &cols, mask);
    for k in Kernels::supported() {
        let mut got = GroupTable::<T>::new(groups, 2, aggs).unwrap();
        assert_eq!(k.group_add(&mut got, keys, &cols, mask), r, "{}", k.level());
        for s in 0..groups.len() {
            assert_eq!(got.count(s), want.count(s), "{} slot {s}", k.level());
            for c in 0..2 {
                assert!(
                    T::sum_same(got.sum(s, c), want.sum(s, c)),
                    "{} sum {s}",
                    k.level()
                );
                assert!(
                    opt_same(got.min(s, c), want.min(s, c)),
                    "{} min {s}",
                    k.level()
                );
                assert!(
                    opt_same(got.max(s, c), want.max(s, c)),
                    "{} max {s}",
                    k.level()
                );
            }
        }
    }
    // The scalar twin against the naive per-slot loop. Keys the layout
    // refuses leave the table empty; so does an error of any other kind.
    let len = groups.len();
    let slots: Option<Vec<usize>> = match keys {
        Keys::U8(k) => k.iter().map(|&k| groups.slot(Key::U8(k))).collect(),
        Keys::U16(k) => k.iter().map(|&k| groups.slot(Key::U16(k))).collect(),
        Keys::Pair(a, b) => a
            .iter()
            .zip(b)
            .map(|(&a, &b)| groups.slot(Key::Pair(a, b)))
            .collect(),
    };
    let slots = slots.unwrap_or_default();
    let bits_ok = |bits: usize, off: usize, words: Option<usize>| {
        words.is_none_or(|w| (w * bits).saturating_sub(off) >= n)
    };
    let in_range = slots.len() == n;
    let masks_ok = bits_ok(
        64,
        usize::from(inp.shift % 64),
        inp.validity.as_ref().map(Vec::len),
    ) && bits_ok(
        8,
        usize::from(inp.shift % 8),
        inp.selection.as_ref().map(Vec::len),
    );
    let keys_long = match keys {
        Keys::U8(k) => k.len() == n,
        Keys::U16(k) => k.len() == n,
        Keys::Pair(a, b) => a.len() == n && b.len() == n,
    };
    assert_eq!(
        r.is_ok(),
        in_range && masks_ok && keys_long,
        "keys in range {in_range}, masks long enough {masks_ok}, keys long enough {keys_long}: {r:?}"
    );
    if r.is_err() {
        for s in 0..len {
            assert_eq!(want.count(s), 0, "a refused call added to slot {s}");
        }
        return;
    }
    let t = naive(inp, &slots, len, &cols);
    let lanes = if len <= 256 { 8 } else { 1 };
    for s in 0..len {
        assert_eq!(want.count(s), t.counts[s], "count of slot {s}");
        for c in 0..2 {
            let sum = if !aggs.contains(Aggs::SUM) || t.counts[s] == 0 {
                T::EMPTY_SUM
            } else {
                let mut l = t.lanes[s][c];
                let mut w = lanes;
                while w > 1 {
                    w /= 2;
                    for j in 0..w {
                        l[j] = T::sum_add(l[j], l[j + w]);
                    }
                }
                l[0]
            };
            let got = want.sum(s, c);
            assert!(
                T::sum_same(got, sum),
                "sum of slot {s} column {c}: {got:?} != {sum:?}"
            );
            let kept = |a: Aggs, v: Option<T>| v.filter(|_| aggs.contains(a));
            let (lo, hi) = (kept(Aggs::MIN, t.mins[s][c]), kept(Aggs::MAX, t.maxs[s][c]));
            assert!(opt_same(want.min(s, c), lo), "min of slot {s} column {c}");
            assert!(opt_same(want.max(s, c), hi), "max of slot {s} column {c}");
        }
    }
}

/// Grouped aggregates of f64 and i64 columns at every level equal the
/// scalar twin's, errors included, and the scalar twin equals a naive
/// per-slot loop. The second column is the first reversed, its bits
/// flipped in the sign and lowest places, so a leaf that mixes up columns
/// shows.
pub fn grouped(inp: &GroupedInput) {
    let other: Vec<u64> = inp
        .values
        .iter()
        .rev()
        .map(|&x| x ^ (1 << 63 | 1))
        .collect();
    let f = |v: &[u64]| v.iter().map(|&x| f64::from_bits(x)).collect::<Vec<f64>>();
    run(inp, &f(&inp.values), &f(&other));
    let i = |v: &[u64]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
    run(inp, &i(&inp.values), &i(&other));
}
