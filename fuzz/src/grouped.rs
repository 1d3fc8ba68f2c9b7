//! keel-kernels grouped aggregates: every level against the scalar twin on
//! arbitrary keys (often out of the layout: then every level must refuse
//! alike), values, masks and layouts.

use arbitrary::Arbitrary;
use keel_kernels::Kernels;
use keel_kernels::grouped::{Aggs, GroupTable, Groups, Keys};
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

fn run<T: keel_kernels::Element + Copy>(inp: &GroupedInput, values: &[T]) {
    let n = values.len();
    let g = usize::from(inp.groups % 256) + 1;
    let (groups, k8, k16, pa, pb);
    let keys = match inp.layout % 3 {
        0 => {
            groups = Groups::u8(g).unwrap();
            k8 = inp.keys.iter().copied().take(n).collect::<Vec<u8>>();
            Keys::U8(&k8)
        }
        1 => {
            groups = Groups::u16(g * 3).unwrap();
            k16 = inp
                .keys
                .chunks(2)
                .map(|c| u16::from(c[0]) | u16::from(*c.get(1).unwrap_or(&0)) << 8)
                .take(n)
                .collect::<Vec<u16>>();
            Keys::U16(&k16)
        }
        _ => {
            groups = Groups::pair(b'A'..=b'Z', 0..=(g as u8 % 16)).unwrap();
            pa = inp.keys.iter().step_by(2).copied().take(n).collect::<Vec<u8>>();
            pb = inp.keys.iter().skip(1).step_by(2).copied().take(n).collect::<Vec<u8>>();
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
    let cols = [values, values];
    let mut want = GroupTable::<T>::new(groups, 2, aggs).unwrap();
    let r = Kernels::scalar().group_add(&mut want, keys, &cols, mask);
    for k in Kernels::supported() {
        let mut got = GroupTable::<T>::new(groups, 2, aggs).unwrap();
        assert_eq!(k.group_add(&mut got, keys, &cols, mask), r, "{}", k.level());
        for s in 0..groups.len() {
            assert_eq!(got.count(s), want.count(s), "{} slot {s}", k.level());
            for c in 0..2 {
                assert!(T::sum_same(got.sum(s, c), want.sum(s, c)), "{} sum {s}", k.level());
                assert_eq!(format!("{:?}", got.min(s, c)), format!("{:?}", want.min(s, c)));
                assert_eq!(format!("{:?}", got.max(s, c)), format!("{:?}", want.max(s, c)));
            }
        }
    }
}

/// Grouped aggregates of f64 and i64 columns at every level equal the
/// scalar twin's, errors included.
pub fn grouped(inp: &GroupedInput) {
    let f: Vec<f64> = inp.values.iter().map(|&x| f64::from_bits(x)).collect();
    run(inp, &f);
    let i: Vec<i64> = inp.values.iter().map(|&x| x as i64).collect();
    run(inp, &i);
}
