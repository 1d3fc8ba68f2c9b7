//! Grouped aggregates: every level equals the scalar twin bit for bit, over
//! every layout, mask and set of aggregates, on columns long enough to
//! cross the AVX-512 leaf's chunks and its hot-set changes; the scalar twin
//! equals a naive per-group loop; merges and errors.

mod common;
use common::*;
use keel_kernels::grouped::{Aggs, GroupTable, Groups, Key, Keys};
use keel_kernels::mask::{Bits, Mask, Selection};
use keel_kernels::{Element, Error, Kernels};

fn same_tables<T: Element>(a: &GroupTable<T>, b: &GroupTable<T>) -> bool {
    let g = a.groups().len();
    (0..g).all(|s| {
        a.count(s) == b.count(s)
            && (0..a.columns()).all(|c| {
                T::sum_same(a.sum(s, c), b.sum(s, c))
                    && opt_same(a.min(s, c), b.min(s, c))
                    && opt_same(a.max(s, c), b.max(s, c))
            })
    })
}

fn opt_same<T: Element>(a: Option<T>, b: Option<T>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(b),
        _ => false,
    }
}

/// Key columns for a layout: `spread` distinct keys drawn with the
/// generator, changing their set halfway through (so the AVX-512 leaf's hot
/// set must move).
struct KeyData {
    layout: u8,
    groups: Groups,
    a: Vec<u8>,
    b: Vec<u8>,
    w: Vec<u16>,
}

fn key_data(layout: u8, spread: u64, n: usize, r: &mut Rng) -> KeyData {
    let shift = |i: usize| if i < n / 2 { 0 } else { spread / 2 };
    match layout {
        0 => {
            // Every code; under Miri 16, so comparing tables stays short.
            let slots: u64 = if cfg!(miri) { 16 } else { 256 };
            let groups = Groups::u8(slots as usize).unwrap();
            let a = (0..n)
                .map(|i| ((r.below(spread) + shift(i)) % slots) as u8)
                .collect();
            KeyData {
                layout,
                groups,
                a,
                b: vec![],
                w: vec![],
            }
        }
        1 => {
            // Past 256 slots (one float lane); fewer under Miri.
            let slots: u64 = if cfg!(miri) { 300 } else { 3000 };
            let groups = Groups::u16(slots as usize).unwrap();
            let w = (0..n)
                .map(|i| ((r.below(spread) * 11 + shift(i)) % slots) as u16)
                .collect();
            KeyData {
                layout,
                groups,
                a: vec![],
                b: vec![],
                w,
            }
        }
        _ => {
            // 18 by 10 pairs; under Miri 4 by 6, past the hot slots still
            // (a table's every lane is filled and compared per call).
            let (na, nb): (u8, u8) = if cfg!(miri) { (4, 6) } else { (18, 10) };
            let groups = Groups::pair(b'A'..=b'A' + na - 1, b'F'..=b'F' + nb - 1).unwrap();
            let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for i in 0..n {
                let k = r.below(spread) + shift(i);
                a.push(b'A' + (k % u64::from(na)) as u8);
                b.push(b'F' + (k / u64::from(na) % u64::from(nb)) as u8);
            }
            KeyData {
                layout,
                groups,
                a,
                b,
                w: vec![],
            }
        }
    }
}

impl KeyData {
    fn keys(&self) -> Keys<'_> {
        match self.layout {
            0 => Keys::U8(&self.a),
            1 => Keys::U16(&self.w),
            _ => Keys::Pair(&self.a, &self.b),
        }
    }
}

fn lengths() -> Vec<usize> {
    if cfg!(miri) {
        // One full 64-row block and a partial one.
        vec![0, 70]
    } else {
        let mut v: Vec<usize> = (0..=300).step_by(7).collect();
        v.extend([4095, 4096, 4097, 9000, 20_011]);
        v
    }
}

/// Random masks' data over `n` rows, for [`mask_kinds`]: validity, a
/// selection bitmap (about three rows in four) and a selection vector
/// (about two in three).
fn mask_data(n: usize, r: &mut Rng) -> (Vec<u64>, Vec<u64>, Vec<u32>) {
    let valid = validity(Nulls::Random, n, r.next()).unwrap_or_default();
    let sel = (0..n.div_ceil(64) + 1)
        .map(|_| r.next() | r.next())
        .collect();
    let rows = (0..n as u32).filter(|_| r.below(3) != 0).collect();
    (valid, sel, rows)
}

/// The mask kinds every grouped test runs: none, validity, validity and a
/// selection bitmap at a bit offset, a selection vector.
fn mask_kinds<'a>(valid: &'a [u64], sel: &'a [u64], rows: &'a [u32]) -> [Mask<'a>; 4] {
    [
        Mask::ALL,
        Mask::valid(Bits::new(valid)),
        Mask::valid(Bits::new(valid)).select(Selection::Bitmap(Bits::with_offset(sel, 5))),
        Mask::ALL.select(Selection::Rows(rows)),
    ]
}

/// Adds `values` by `keys` under `mask` twice (the second call onto the
/// first's table) at the scalar twin and at each of `levels`: the first
/// level whose table differs from the twin's.
fn first_differing<T: Element>(
    levels: &[Kernels],
    (groups, aggs): (Groups, Aggs),
    keys: Keys<'_>,
    values: &[&[T]],
    mask: Mask<'_>,
) -> Option<Kernels> {
    let table = |k: Kernels| {
        let mut t = GroupTable::<T>::new(groups, values.len(), aggs).unwrap();
        k.group_add(&mut t, keys, values, mask).unwrap();
        k.group_add(&mut t, keys, values, mask).unwrap();
        t
    };
    let want = table(Kernels::scalar());
    levels
        .iter()
        .copied()
        .find(|&k| !same_tables(&table(k), &want))
}

fn check_type<T: Gen>(seed: u64) {
    // The reference is the scalar twin: every other level is compared with it.
    let levels = simd_levels();
    let mut r = Rng(seed | 1);
    let spreads: &[u64] = if cfg!(miri) {
        &[3]
    } else {
        &[1, 3, 8, 16, 200]
    };
    let aggs_all = [Aggs::SUM, Aggs::SUM | Aggs::MIN | Aggs::MAX, Aggs::MAX];
    for n in lengths() {
        let cols: Vec<Vec<T>> = (0..3)
            .map(|c| column(Pattern::Edges, n, seed ^ (n as u64) << 4 ^ c))
            .collect();
        let (valid, sel, rows) = mask_data(n, &mut r);
        for layout in 0..3u8 {
            for &spread in spreads {
                if n > 5000 && spread == 8 {
                    continue;
                }
                let kd = key_data(layout, spread, n, &mut r);
                for (mi, mask) in mask_kinds(&valid, &sel, &rows).into_iter().enumerate() {
                    // Under Miri three of the four masks a layout, a
                    // different one left out in each: every mask still
                    // meets two layouts.
                    if cfg!(miri) && (mi + layout as usize) % 4 == 3 {
                        continue;
                    }
                    let aggs = aggs_all[(mi + layout as usize) % 3];
                    let ncols = 1 + (mi + n) % 3;
                    let values: Vec<&[T]> = cols[..ncols].iter().map(|c| &c[..]).collect();
                    let bad = first_differing(&levels, (kd.groups, aggs), kd.keys(), &values, mask);
                    if let Some(k) = bad {
                        panic!(
                            "{} {} len {n} layout {layout} spread {spread} mask {mi} {aggs:?}",
                            k.level(),
                            T::NAME
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn f64_every_level_equals_scalar() {
    check_type::<f64>(1);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the f64 sweep (the AVX-512 leaf macro i64 shares) and i64's spread layouts (its AVX2 leaf)"
)]
fn i64_every_level_equals_scalar() {
    check_type::<i64>(2);
}
#[test]
#[cfg_attr(miri, ignore = "Miri runs the f64 and i64 sweeps: the same leaves")]
fn u64_every_level_equals_scalar() {
    check_type::<u64>(3);
}
#[test]
#[cfg_attr(miri, ignore = "Miri runs the f64 and i64 sweeps: the same leaves")]
fn f32_every_level_equals_scalar() {
    check_type::<f32>(4);
}
#[test]
#[cfg_attr(miri, ignore = "Miri runs the f64 and i64 sweeps: the same leaves")]
fn i32_every_level_equals_scalar() {
    check_type::<i32>(5);
}
#[test]
#[cfg_attr(miri, ignore = "Miri runs the f64 and i64 sweeps: the same leaves")]
fn u8_every_level_equals_scalar() {
    check_type::<u8>(6);
}

/// The scalar twin against a naive loop: counts, exact integer sums, mins
/// and maxes per group, and float sums of small integers (exact in any
/// order).
#[test]
fn scalar_twin_equals_naive_per_group_loop() {
    let mut r = Rng(77);
    let n = if cfg!(miri) { 200 } else { 5000 };
    let codes: Vec<u8> = (0..n).map(|_| r.below(7) as u8 * 3).collect();
    let v: Vec<i64> = (0..n).map(|_| r.below(2001) as i64 - 1000).collect();
    let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    let valid = validity(Nulls::Random, n, 5).unwrap();
    let on = |i: usize| valid[i / 64] >> (i % 64) & 1 == 1;
    let g = Groups::u8(21).unwrap();
    for k in Kernels::supported() {
        let mut t = GroupTable::<i64>::new(g, 1, Aggs::all()).unwrap();
        t.add(Keys::U8(&codes), &[&v], Some(&valid[..])).unwrap();
        k.group_add(&mut t, Keys::U8(&codes), &[&v], Some(&valid[..]))
            .unwrap();
        let mut tf = GroupTable::<f64>::new(g, 1, Aggs::SUM).unwrap();
        k.group_add(&mut tf, Keys::U8(&codes), &[&f], Some(&valid[..]))
            .unwrap();
        for slot in 0..21 {
            let rows: Vec<i64> = (0..n)
                .filter(|&i| on(i) && usize::from(codes[i]) == slot)
                .map(|i| v[i])
                .collect();
            assert_eq!(t.count(slot), 2 * rows.len() as u64, "{}", k.level());
            assert_eq!(t.sum(slot, 0), 2 * rows.iter().sum::<i64>());
            assert_eq!(t.min(slot, 0), rows.iter().copied().min());
            assert_eq!(t.max(slot, 0), rows.iter().copied().max());
            assert_eq!(tf.sum(slot, 0), rows.iter().sum::<i64>() as f64);
            assert_eq!(tf.count(slot), rows.len() as u64);
        }
        assert_eq!(t.iter().count(), 7);
        assert!(t.iter().all(|(key, slot)| key == Key::U8(slot as u8)));
    }
}

#[test]
fn partial_tables_merge_into_the_whole() {
    let mut r = Rng(9);
    let n = if cfg!(miri) { 300 } else { 10_000 };
    let a: Vec<u8> = (0..n).map(|_| b'A' + r.below(3) as u8).collect();
    let b: Vec<u8> = (0..n).map(|_| b'F' + r.below(2) as u8 * 9).collect();
    let v: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
    let g = Groups::pair(b'A'..=b'C', b'F'..=b'O').unwrap();
    let mut whole = GroupTable::<i64>::new(g, 2, Aggs::all()).unwrap();
    whole.add(Keys::Pair(&a, &b), &[&v, &v], None).unwrap();
    let mid = n / 3;
    let mut left = GroupTable::<i64>::new(g, 2, Aggs::all()).unwrap();
    left.add(
        Keys::Pair(&a[..mid], &b[..mid]),
        &[&v[..mid], &v[..mid]],
        None,
    )
    .unwrap();
    let mut right = left.clone();
    right.clear();
    right
        .add(
            Keys::Pair(&a[mid..], &b[mid..]),
            &[&v[mid..], &v[mid..]],
            None,
        )
        .unwrap();
    left.merge(&right).unwrap();
    assert!(same_tables(&left, &whole));
    assert_eq!(left.iter().count(), 6);
    let other = GroupTable::<i64>::new(g, 1, Aggs::all()).unwrap();
    assert!(left.merge(&other).is_err());
}

#[test]
fn bad_arguments_are_errors() {
    let g = Groups::u8(10).unwrap();
    let mut t = GroupTable::<f64>::new(g, 2, Aggs::SUM).unwrap();
    let v = [1.0; 100];
    let mut codes = [3u8; 100];
    codes[57] = 10;
    assert_eq!(
        t.add(Keys::U8(&codes), &[&v, &v], None),
        Err(Error::OutOfRange {
            what: "group key",
            position: 57,
            index: 10,
            len: 10
        })
    );
    assert_eq!(t.count(3), 0, "nothing is added before the error");
    codes[57] = 9;
    assert!(matches!(
        t.add(Keys::U8(&codes), &[&v], None),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        t.add(Keys::U8(&codes[..99]), &[&v, &v], None),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        t.add(Keys::U8(&codes), &[&v, &v[..50]], None),
        Err(Error::ColumnLength { column: 1, .. })
    ));
    assert!(matches!(
        t.add(Keys::U16(&[1u16; 100]), &[&v, &v], None),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(
        t.add(Keys::U8(&codes), &[&v, &v], Some(&[0u64][..]))
            .is_err()
    );
    t.add(Keys::U8(&codes), &[&v, &v], None).unwrap();
    assert_eq!(t.count(3), 99);
    assert_eq!(t.sum(3, 1), 99.0);
    assert_eq!(
        t.sum(4, 0).to_bits(),
        0f64.to_bits(),
        "an empty group sums to +0.0"
    );
    let p = Groups::pair(b'a'..=b'c', 0..=1).unwrap();
    let mut t = GroupTable::<u8>::new(p, 1, Aggs::MIN).unwrap();
    assert_eq!(
        t.add(Keys::Pair(b"abd", &[0, 1, 0]), &[&[1, 2, 3]], None),
        Err(Error::OutOfRange {
            what: "group key",
            position: 2,
            index: u64::from(b'd') << 8,
            len: 6
        })
    );
    assert_eq!(p.slot(Key::Pair(b'c', 1)), Some(5));
    assert_eq!(p.key(5), Some(Key::Pair(b'c', 1)));
    assert_eq!(p.key(6), None);
    assert_eq!(p.key(usize::MAX), None);
    // Every slot's key maps back to it, in every layout (under Miri every
    // 97th of the 65,536 two-byte slots, and the last).
    for g in [Groups::u8(256).unwrap(), Groups::u16(65_536).unwrap(), p] {
        let step = if cfg!(miri) && g.len() > 256 { 97 } else { 1 };
        for s in (0..g.len()).step_by(step).chain([g.len() - 1]) {
            assert_eq!(g.slot(g.key(s).unwrap()), Some(s));
        }
        assert_eq!(g.key(g.len()), None);
    }
    assert_eq!(p.slot(Key::Pair(b'd', 0)), None);
    assert_eq!(p.slot(Key::U8(0)), None);
    assert!(Groups::u8(0).is_err() && Groups::u8(257).is_err() && Groups::u16(65_537).is_err());
    let (hi, lo) = (3u8, 2u8);
    assert!(Groups::pair(hi..=lo, 0..=1).is_err());
    assert!(GroupTable::<f64>::new(g, 0, Aggs::SUM).is_err());
}

/// Layouts of 1 to 9 slots (the AVX-512 leaf keeps up to 8 all in
/// registers from the start), one-byte codes and pairs, integer columns of
/// every width on unaligned slices: every level equals a naive per-group
/// loop (exact sums, wrapping in the sum type), at every length from 0.
fn small_layouts<T: Gen + Into<i128>>(seed: u64)
where
    T::Sum: Into<i128>,
{
    let mut r = Rng(seed | 1);
    let lens: &[usize] = if cfg!(miri) {
        &[0, 70]
    } else {
        &[0, 1, 7, 63, 64, 65, 200, 4095, 4097, 9001]
    };
    let slot_counts: &[usize] = if cfg!(miri) {
        &[3]
    } else {
        &[1, 2, 3, 5, 6, 8, 9]
    };
    for &n in lens {
        for &slots in slot_counts {
            for skew in 0..2usize {
                // Offsets 1..=3 so that no column starts on a vector boundary.
                let off = 1 + (n + slots + skew) % 3;
                let vals: Vec<T> = column(Pattern::Edges, n + off, seed ^ n as u64);
                let prod: Vec<T> = column(Pattern::Any, n + off, seed ^ 7 ^ n as u64);
                // With `skew`, one slot holds most rows, another none.
                let pick = |r: &mut Rng| {
                    if skew == 1 && r.below(4) != 0 {
                        0
                    } else {
                        r.below(slots as u64) as usize
                    }
                };
                let codes: Vec<usize> = (0..n + off).map(|_| pick(&mut r)).collect();
                let sel: Vec<u64> = (0..(n + off).div_ceil(64))
                    .map(|_| r.next() | r.next())
                    .collect();
                let (v, p) = (&vals[off..], &prod[off..]);
                let wts: Vec<u16> = (0..n).map(|_| r.next() as u16).collect();
                let u8k: Vec<u8> = codes[off..].iter().map(|&c| c as u8).collect();
                // Pairs over 'a'.. by 0..3: the slot is a * 3 + b.
                let span = slots.min(3);
                let pa: Vec<u8> = codes[off..]
                    .iter()
                    .map(|&c| b'a' + (c / span) as u8)
                    .collect();
                let pb: Vec<u8> = codes[off..].iter().map(|&c| (c % span) as u8).collect();
                let pair = Groups::pair(
                    b'a'..=b'a' + (slots.div_ceil(span) - 1) as u8,
                    0..=span as u8 - 1,
                )
                .unwrap();
                let bits = Bits::with_offset(&sel, off);
                let on = |i: usize| bits.get(i) == Some(true);
                for k in Kernels::supported() {
                    for (groups, keys) in [
                        (Groups::u8(slots).unwrap(), Keys::U8(&u8k)),
                        (pair, Keys::Pair(&pa, &pb)),
                    ] {
                        let mut t = GroupTable::<T>::new(groups, 2, Aggs::SUM).unwrap();
                        k.group_add(&mut t, keys, &[v, p], Selection::Bitmap(bits))
                            .unwrap();
                        // The same columns and the first again, the last two
                        // weighted (three columns: one fused pass).
                        let mut tw = GroupTable::<T>::new(groups, 3, Aggs::SUM).unwrap();
                        let wsel = Selection::Bitmap(bits);
                        let ws: &[Option<&[u16]>] = &[None, Some(&wts), Some(&wts)];
                        k.group_add_weighted(&mut tw, keys, &[v, p, v], ws, wsel)
                            .unwrap();
                        for c in 0..slots {
                            let slot = match keys {
                                Keys::Pair(..) => groups
                                    .slot(Key::Pair(b'a' + (c / span) as u8, (c % span) as u8))
                                    .unwrap(),
                                _ => c,
                            };
                            let rows: Vec<usize> =
                                (0..n).filter(|&i| on(i) && codes[off + i] == c).collect();
                            let wrap = |s: i128| {
                                // The sum type's wrapping: 64 bits, signed or not.
                                if <T as Into<i128>>::into(T::LEAST) < 0 {
                                    i128::from(s as i64)
                                } else {
                                    i128::from(s as u64)
                                }
                            };
                            let sv = wrap(rows.iter().map(|&i| v[i].into()).sum());
                            let sp = wrap(rows.iter().map(|&i| p[i].into()).sum());
                            let what = format!(
                                "{} {} n {n} slots {slots} skew {skew} slot {c}",
                                k.level(),
                                T::NAME
                            );
                            assert_eq!(t.count(slot), rows.len() as u64, "{what}");
                            assert_eq!(t.sum(slot, 0).into(), sv, "{what}");
                            assert_eq!(t.sum(slot, 1).into(), sp, "{what}");
                            let spw =
                                wrap(rows.iter().map(|&i| p[i].into() * i128::from(wts[i])).sum());
                            assert_eq!(tw.count(slot), rows.len() as u64, "{what}");
                            assert_eq!(tw.sum(slot, 0).into(), sv, "{what}");
                            assert_eq!(tw.sum(slot, 1).into(), spw, "{what} weighted");
                            let svw =
                                wrap(rows.iter().map(|&i| v[i].into() * i128::from(wts[i])).sum());
                            assert_eq!(tw.sum(slot, 2).into(), svw, "{what} weighted");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn small_layouts_u8() {
    small_layouts::<u8>(11);
}
#[test]
#[cfg_attr(miri, ignore = "Miri runs the u8 sweep: the same leaf macro")]
fn small_layouts_i8_i16_u16() {
    small_layouts::<i8>(12);
    small_layouts::<i16>(13);
    small_layouts::<u16>(14);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the u8 sweep: the same leaf macros, the same loads and masks (the AVX2 leaf's 64-bit weighting is arithmetic only)"
)]
fn small_layouts_i32_u32_i64_u64() {
    small_layouts::<i32>(15);
    small_layouts::<u32>(16);
    small_layouts::<i64>(17);
    small_layouts::<u64>(18);
}

/// Weighted float sums: every level equals the scalar twin bit for bit
/// (one rounding per product, the lanes' order kept), over layouts small
/// and large and every mask kind.
#[test]
fn weighted_floats_every_level_equals_scalar() {
    // The reference is the scalar twin: every other level is compared with it.
    let levels = simd_levels();
    let mut r = Rng(41);
    let s = Kernels::scalar();
    let lens: &[usize] = if cfg!(miri) {
        &[0, 70]
    } else {
        &[0, 5, 64, 200, 4097, 9001]
    };
    for &n in lens {
        let v: Vec<f64> = column(Pattern::Any, n, n as u64);
        let f: Vec<f32> = column(Pattern::Edges, n, n as u64 ^ 3);
        let wts: Vec<u16> = (0..n).map(|_| r.next() as u16).collect();
        let sel: Vec<u64> = (0..n.div_ceil(64) + 1)
            .map(|_| r.next() | r.next())
            .collect();
        let rows: Vec<u32> = (0..n as u32).filter(|_| r.below(3) != 0).collect();
        // Hot slots only, and past them (the cold leaf); under Miri 24
        // slots rather than 200 (the table's lanes are filled and compared
        // per call, most of its time there).
        for slots in [3usize, if cfg!(miri) { 24 } else { 200 }] {
            let codes: Vec<u8> = (0..n).map(|_| r.below(slots as u64) as u8).collect();
            let g = Groups::u8(slots).unwrap();
            let masks: [Mask<'_>; 3] = [
                Mask::ALL,
                Mask::ALL.select(Selection::Bitmap(Bits::with_offset(&sel, 3))),
                Mask::ALL.select(Selection::Rows(&rows)),
            ];
            for mask in masks {
                let w: &[Option<&[u16]>] = &[Some(&wts), None];
                let mut want = GroupTable::<f64>::new(g, 2, Aggs::SUM).unwrap();
                s.group_add_weighted(&mut want, Keys::U8(&codes), &[&v, &v], w, mask)
                    .unwrap();
                let mut want32 = GroupTable::<f32>::new(g, 1, Aggs::SUM).unwrap();
                s.group_add_weighted(&mut want32, Keys::U8(&codes), &[&f], &[Some(&wts)], mask)
                    .unwrap();
                for &k in &levels {
                    let mut got = GroupTable::<f64>::new(g, 2, Aggs::SUM).unwrap();
                    k.group_add_weighted(&mut got, Keys::U8(&codes), &[&v, &v], w, mask)
                        .unwrap();
                    assert!(
                        same_tables(&got, &want),
                        "{} n {n} slots {slots}",
                        k.level()
                    );
                    let mut got = GroupTable::<f32>::new(g, 1, Aggs::SUM).unwrap();
                    k.group_add_weighted(&mut got, Keys::U8(&codes), &[&f], &[Some(&wts)], mask)
                        .unwrap();
                    assert!(
                        same_tables(&got, &want32),
                        "{} f32 n {n} slots {slots}",
                        k.level()
                    );
                }
            }
        }
    }
}

#[test]
fn bad_weights_are_errors() {
    let g = Groups::u8(4).unwrap();
    let (codes, v, w) = ([1u8; 10], [2i32; 10], [3u16; 10]);
    let mut t = GroupTable::<i32>::new(g, 1, Aggs::SUM).unwrap();
    assert!(matches!(
        t.add_weighted(Keys::U8(&codes), &[&v], &[], None),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        t.add_weighted(Keys::U8(&codes), &[&v], &[Some(&w[..9])], None),
        Err(Error::ColumnLength {
            column: 0,
            len: 9,
            ..
        })
    ));
    assert_eq!(t.count(1), 0, "nothing is added before an error");
    t.add_weighted(Keys::U8(&codes), &[&v], &[Some(&w)], None)
        .unwrap();
    assert_eq!((t.count(1), t.sum(1, 0)), (10, 60));
    let mut mm = GroupTable::<i32>::new(g, 1, Aggs::SUM | Aggs::MAX).unwrap();
    assert!(matches!(
        mm.add_weighted(Keys::U8(&codes), &[&v], &[Some(&w)], None),
        Err(Error::InvalidArgument { .. })
    ));
}

/// Layouts of 12 to 256 slots whose rows spread over more slots than the
/// AVX-512 leaf keeps in registers, past its first chunk (so the rest of a
/// call runs its cold leaf: pairs of sum and count where the call has 64
/// rows a slot ahead, the table's own lanes else): every level equals the scalar twin bit
/// for bit, on columns at offsets 0 to 2, with every bitmap mask, one to
/// three columns and weights, and two calls adding onto each other.
fn spread_layouts<T: Gen>(seed: u64) {
    // The reference is the scalar twin: every other level is compared with it.
    let levels = simd_levels();
    let mut r = Rng(seed | 1);
    let s = Kernels::scalar();
    // Under Miri the leaf's chunks are 2 blocks and the pairs pay from one
    // row a slot, so 200 rows run the cold leaf in both modes.
    let lens: &[usize] = if cfg!(miri) { &[200] } else { &[4100, 9001] };
    for &n in lens {
        let cols: Vec<Vec<T>> = (0..3)
            .map(|c| column(Pattern::Edges, n + 2, seed ^ (n as u64) << 4 ^ c))
            .collect();
        let wts: Vec<u16> = (0..n + 2).map(|_| r.next() as u16).collect();
        let valid = validity(Nulls::Random, n, r.next()).unwrap_or_default();
        let sel: Vec<u64> = (0..n.div_ceil(64) + 1)
            .map(|_| r.next() | r.next() | r.next())
            .collect();
        for (li, layout) in [
            Groups::u8(12).unwrap(),
            Groups::u8(64).unwrap(),
            Groups::u8(65).unwrap(),
            Groups::u8(256).unwrap(),
            Groups::pair(b'a'..=b'd', b'0'..=b'9').unwrap(),
        ]
        .into_iter()
        .enumerate()
        // Miri: pairs (12 slots, and keyed by pairs) and in place (256).
        .filter(|&(li, _)| !cfg!(miri) || matches!(li, 0 | 3 | 4))
        {
            let slots = layout.len() as u64;
            let (a, b): (Vec<u8>, Vec<u8>) = (0..n)
                .map(|_| {
                    let k = r.below(slots);
                    if li == 4 {
                        (b'a' + (k / 10) as u8, b'0' + (k % 10) as u8)
                    } else {
                        (k as u8, 0)
                    }
                })
                .unzip();
            let keys = if li == 4 {
                Keys::Pair(&a, &b)
            } else {
                Keys::U8(&a)
            };
            let off = li % 3;
            let masks: [Mask<'_>; 3] = [
                Mask::ALL,
                Mask::valid(Bits::with_offset(&valid, 0)),
                Mask::ALL.select(Selection::Bitmap(Bits::with_offset(&sel, 7))),
            ];
            // Miri: one mask a layout, in turn.
            let masks = masks
                .iter()
                .enumerate()
                .filter(|&(mi, _)| !cfg!(miri) || mi == li % 3);
            for (mi, &mask) in masks {
                let ncols = 1 + (mi + li) % 3;
                let values: Vec<&[T]> = cols[..ncols].iter().map(|c| &c[off..off + n]).collect();
                let w: Vec<Option<&[u16]>> = (0..ncols)
                    .map(|c| ((c + mi) % 2 == 1).then_some(&wts[off..off + n]))
                    .collect();
                let mut want = GroupTable::<T>::new(layout, ncols, Aggs::SUM).unwrap();
                for _ in 0..2 {
                    s.group_add_weighted(&mut want, keys, &values, &w, mask)
                        .unwrap();
                }
                for &k in &levels {
                    let mut got = GroupTable::<T>::new(layout, ncols, Aggs::SUM).unwrap();
                    for _ in 0..2 {
                        k.group_add_weighted(&mut got, keys, &values, &w, mask)
                            .unwrap();
                    }
                    assert!(
                        same_tables(&got, &want),
                        "{} {} n {n} slots {slots} mask {mi} cols {ncols}",
                        k.level(),
                        T::NAME
                    );
                }
            }
        }
    }
}

#[test]
fn spread_layouts_every_level_equals_scalar() {
    spread_layouts::<f64>(51);
    spread_layouts::<i64>(52);
    if cfg!(miri) {
        // The float leaf and one integer one: the integer widths share the
        // leaf macro.
        return;
    }
    spread_layouts::<u32>(53);
    spread_layouts::<i8>(54);
    spread_layouts::<u8>(55);
}

/// Every group count around the AVX-512 leaf's eight register slots and
/// the cold leaf's 256-slot scratch, on one-byte codes (1 to 256 groups)
/// and two-byte ones (1 to 65 536), rows spread evenly over every group,
/// over several of the leaf's chunks (so the cold leaf takes full blocks,
/// with pairs up to 256 slots): every level equals the scalar twin bit for
/// bit, for sums alone and for sums with min and max.
fn group_counts<T: Gen>(seed: u64) {
    // The reference is the scalar twin: every other level is compared with it.
    let levels = simd_levels();
    let mut r = Rng(seed | 1);
    let s = Kernels::scalar();
    let n = 24_011;
    let cols: Vec<Vec<T>> = (0..2)
        .map(|c| column(Pattern::Edges, n, seed ^ c))
        .collect();
    let values: Vec<&[T]> = cols.iter().map(|c| &c[..]).collect();
    let narrow = [1usize, 2, 3, 7, 8, 9, 15, 16, 17, 64, 65, 255, 256];
    let wide = [257usize, 4096, 65_536];
    for (groups, wide) in narrow
        .iter()
        .map(|&g| (g, false))
        .chain(wide.iter().map(|&g| (g, true)))
    {
        let codes: Vec<u64> = (0..n).map(|_| r.below(groups as u64)).collect();
        let a: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
        let w: Vec<u16> = codes.iter().map(|&c| c as u16).collect();
        // Narrow layouts as one-byte and as two-byte codes (the latter
        // take the cold leaf whole at the x86 SIMD levels, its pairs up to
        // 256 slots).
        let forms = if wide {
            vec![(Groups::u16(groups).unwrap(), Keys::U16(&w))]
        } else {
            vec![
                (Groups::u8(groups).unwrap(), Keys::U8(&a)),
                (Groups::u16(groups).unwrap(), Keys::U16(&w)),
            ]
        };
        for (layout, keys) in forms {
            for aggs in [Aggs::SUM, Aggs::SUM | Aggs::MIN | Aggs::MAX] {
                let mut want = GroupTable::<T>::new(layout, 2, aggs).unwrap();
                s.group_add(&mut want, keys, &values, Mask::ALL).unwrap();
                for &k in &levels {
                    let mut got = GroupTable::<T>::new(layout, 2, aggs).unwrap();
                    k.group_add(&mut got, keys, &values, Mask::ALL).unwrap();
                    assert!(
                        same_tables(&got, &want),
                        "{} {} groups {groups} {aggs:?} {}",
                        k.level(),
                        T::NAME,
                        if matches!(keys, Keys::U16(_)) {
                            "u16 codes"
                        } else {
                            "u8 codes"
                        }
                    );
                }
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "Miri runs the spread layouts: the same leaves")]
fn group_counts_every_level_equals_scalar() {
    group_counts::<f64>(61);
    group_counts::<i64>(62);
    group_counts::<u8>(63);
}

/// Sums of one to four columns over layouts past 256 slots, with rows
/// enough a slot that the x86 levels add them into a scratch of
/// sum-and-count pairs (one integer column 4, 2 and 1 lanes a slot by the
/// layout's size, the last on the heap, and 8 over skewed codes; floats
/// and several columns one)
/// and write it back to the table (five columns: the table in place; float
/// tables of one lane then the scalar twin):
/// every level equals the scalar twin bit for bit, over uniform and skewed
/// codes, two-byte codes and pairs, every mask kind, a call onto a table
/// that already holds sums, and values at the types' edges (integer sums
/// wrap; float edges include infinities, NaNs and signed zeros); and so do
/// calls by pairs with too few rows for the scratch.
fn wide_layouts<T: Gen>(seed: u64, miri_slots: &[usize]) {
    let levels = simd_levels();
    let mut r = Rng(seed | 1);
    let slot_counts: &[usize] = if cfg!(miri) {
        miri_slots
    } else {
        &[257, 600, 1500, 3000]
    };
    // Rows a slot past the scratch's threshold (16; 1 under Miri), and a
    // partial block; then, for pairs of keys only, too few rows for the
    // scratch (the register leaves take those calls, handing off to the
    // table in place).
    let lens = |slots: usize| {
        if cfg!(miri) {
            [(slots + 77, false), (slots / 2, true)]
        } else {
            [(slots * 17 + 77, false), (slots * 4 + 9, true)]
        }
    };
    for (slots, (n, short)) in slot_counts.iter().flat_map(|&s| lens(s).map(|l| (s, l))) {
        let cols: Vec<Vec<T>> = (0..5)
            .map(|c| column(Pattern::Edges, n, seed ^ (slots as u64) << 3 ^ c))
            .collect();
        let (valid, sel, rows) = mask_data(n, &mut r);
        // Under Miri skewed codes only, and two masks.
        let skews: &[bool] = if cfg!(miri) { &[true] } else { &[false, true] };
        for &skew in skews {
            // Skewed: nine rows in ten in slot 5.
            let code = |r: &mut Rng| {
                if skew && r.below(10) != 0 {
                    5
                } else {
                    r.below(slots as u64)
                }
            };
            let w: Vec<u16> = (0..n).map(|_| code(&mut r) as u16).collect();
            // Pairs over `slots` slots where they factor as up to 256 by
            // up to 250 (600 = 3 x 200, 1500 = 6 x 250, 3000 = 12 x 250).
            let nb = (2..=250)
                .rev()
                .find(|b| slots % b == 0 && slots / b <= 256)
                .unwrap_or(1);
            let na = slots / nb;
            let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for _ in 0..n {
                let k = code(&mut r);
                a.push((k / nb as u64) as u8);
                b.push((k % nb as u64) as u8);
            }
            let mut forms = vec![];
            if !short {
                forms.push((Groups::u16(slots).unwrap(), Keys::U16(&w)));
            }
            if nb > 1 {
                let pair = Groups::pair(0..=(na - 1) as u8, 0..=(nb - 1) as u8).unwrap();
                forms.push((pair, Keys::Pair(&a, &b)));
            }
            for (layout, keys) in forms {
                for (mi, mask) in mask_kinds(&valid, &sel, &rows).into_iter().enumerate() {
                    if cfg!(miri) && (mi % 3 != 0 || short && mi != 0) {
                        continue;
                    }
                    // One to four columns take the pairs, five the table in
                    // place: one count each mask and skew, every count for
                    // each layout (under Miri 1 and 2 over its two masks).
                    for ncols in 1..=5 {
                        let pick = if cfg!(miri) {
                            1 + mi / 3
                        } else {
                            1 + (mi + usize::from(skew) + slots) % 5
                        };
                        // And one column over skewed codes at every
                        // size: its rows come back to slot 5 within a few
                        // rows, which gives integer sums more lanes.
                        let close = skew && ncols == 1 && !cfg!(miri);
                        if ncols != pick && !close {
                            continue;
                        }
                        let values: Vec<&[T]> = cols[..ncols].iter().map(|c| &c[..]).collect();
                        let bad =
                            first_differing(&levels, (layout, Aggs::SUM), keys, &values, mask);
                        if let Some(k) = bad {
                            panic!(
                                "{} {} slots {slots} rows {n} skew {skew} mask {mi} {ncols} columns {layout:?}",
                                k.level(),
                                T::NAME
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn wide_layouts_every_level_equals_scalar() {
    // Under Miri 300 slots (the stack scratch; the heap's is the same walk
    // over a vector).
    wide_layouts::<i64>(71, &[300]);
    wide_layouts::<f64>(75, &[300]);
    if !cfg!(miri) {
        wide_layouts::<u64>(72, &[]);
        wide_layouts::<i32>(73, &[]);
        wide_layouts::<u16>(74, &[]);
        wide_layouts::<f32>(76, &[]);
    }
}

/// Absurd sizes and counts are errors, not panics or aborts: cells that
/// overflow `usize` or cannot be allocated, and a merge that would take a
/// count past `i64::MAX` (refused whole, nothing changed).
#[test]
fn absurd_tables_and_merged_counts_are_errors() {
    let too_large = |r: Result<(), Error>| {
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    };
    let big = Groups::u16(65536).unwrap();
    too_large(GroupTable::<f64>::new(big, usize::MAX / 1024, Aggs::SUM).map(drop));
    let one = Groups::u8(1).unwrap();
    // Cells times lanes overflow; then cells whose bytes pass `isize::MAX`.
    too_large(GroupTable::<f64>::new(one, usize::MAX / 4, Aggs::SUM).map(drop));
    too_large(GroupTable::<f64>::new(one, usize::MAX / 8, Aggs::MIN).map(drop));
    let g = Groups::u8(256).unwrap();
    too_large(GroupTable::<i64>::new(g, usize::MAX, Aggs::empty()).map(drop));

    let mut t = GroupTable::<i64>::new(one, 1, Aggs::SUM).unwrap();
    t.add(Keys::U8(&[0]), &[&[5]], None).unwrap();
    for _ in 0..62 {
        let c = t.clone();
        t.merge(&c).unwrap();
    }
    assert_eq!(t.count(0), 1 << 62);
    let c = t.clone();
    too_large(t.merge(&c));
    assert_eq!((t.count(0), t.sum(0, 0)), (1 << 62, 5 << 62));
    // Below the bound a table still counts rows.
    t.add(Keys::U8(&[0; 3]), &[&[1; 3]], None).unwrap();
    assert_eq!(t.count(0), (1 << 62) + 3);
}
