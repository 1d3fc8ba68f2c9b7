//! keel-kernels hashing, partitioning, group-by and HyperLogLog: every level
//! against the scalar twin on arbitrary input.
//!
//! Keys are decoded from raw bytes (every bit pattern) and sliced at an
//! arbitrary start (every alignment); every level the CPU supports must
//! produce exactly what `Kernels::scalar()` produces, and bad arguments must
//! be errors at every level, never panics.

use arbitrary::Arbitrary;
use keel_kernels::groupby::CountTable;
use keel_kernels::hll::HyperLogLog;
use keel_kernels::mask::{Bits, Mask};
use keel_kernels::partition::Radix;
use keel_kernels::{Kernels, hash};

/// Input of [`hash_family`].
#[derive(Arbitrary, Debug)]
pub struct HashInput {
    /// Start offset into the decoded keys (alignment).
    pub offset: u8,
    /// Hash seed.
    pub seed: u64,
    /// Raw key bytes, eight per key.
    pub bytes: Vec<u8>,
    /// Radix bits (may be invalid: then construction must fail).
    pub bits: u8,
    /// Radix shift.
    pub shift: u8,
    /// Output slack: negative lengths make outputs too short.
    pub slack: i8,
}

/// Input of [`hll_family`].
#[derive(Arbitrary, Debug)]
pub struct HllInput {
    /// Precision (may be out of 4..=18: then construction must fail).
    pub precision: u8,
    /// Hash seed.
    pub seed: u64,
    /// Start offset into the decoded keys.
    pub offset: u8,
    /// Raw key bytes, eight per key.
    pub bytes: Vec<u8>,
    /// Split point for the merge check.
    pub split: u16,
    /// Arbitrary register bytes for `from_registers`.
    pub registers: Vec<u8>,
    /// Validity bitmap words (repeated to cover the keys) for the masked
    /// add, eight bytes a word.
    pub mask: Vec<u8>,
    /// The mask's bit offset (mod 64) and, in the high bits, how many times
    /// its words are thinned (each time and-ed with a rotation of itself,
    /// about halving the rows counted): so masks of every density, word-
    /// aligned or not, reach the masked add's leaves (dense, walk, sparse).
    pub mask_shape: u8,
}

/// The masked add's validity words: `bytes` as little-endian words, repeated
/// to cover `bits` bits, thinned `thin` times.
fn mask_words(bytes: &[u8], bits: usize, thin: u8) -> Vec<u64> {
    let src: Vec<u64> = bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    if src.is_empty() {
        return vec![0; bits.div_ceil(64)];
    }
    src.iter()
        .cycle()
        .take(bits.div_ceil(64))
        .map(|&w| (0..u32::from(thin)).fold(w, |w, i| w & w.rotate_left(7 * i + 3)))
        .collect()
}

fn keys(bytes: &[u8], offset: u8) -> Vec<u64> {
    let all: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let off = usize::from(offset).min(all.len());
    all[off..].to_vec()
}

/// Hash columns, combine, partitioning by key and the count table.
pub fn hash_family(inp: &HashInput) {
    let all = keys(&inp.bytes, 0);
    let off = usize::from(inp.offset).min(all.len());
    let ks = &all[off..];
    let n = ks.len();
    let out_len = (n as isize + isize::from(inp.slack)).max(0) as usize;
    let scalar = Kernels::scalar();
    let mut want = vec![0u64; out_len];
    let want_r = scalar.hash_u64_column(ks, inp.seed, &mut want);
    assert_eq!(want_r.is_ok(), out_len == n);
    if want_r.is_ok() {
        for (k, h) in ks.iter().zip(&want) {
            assert_eq!(*h, hash::hash_u64(*k, inp.seed));
        }
    }
    let mut want_acc = want.clone();
    let want_c = scalar.combine_u64_column(ks, &mut want_acc);
    let radix = Radix::new(inp.bits, inp.shift);
    assert_eq!(
        radix.is_ok(),
        inp.bits <= 16 && u32::from(inp.bits) + u32::from(inp.shift) <= 64
    );
    let ik: Vec<i64> = ks.iter().map(|&k| k as i64).collect();
    let part = |k: Kernels| {
        let r = radix.ok()?;
        let mut o = vec![usize::MAX; r.partitions() + 1];
        let mut rows = vec![u32::MAX; out_len];
        let res = k.partition_rows_by_key(&ik, inp.seed, r, &mut o, &mut rows);
        Some((res, o, rows))
    };
    let want_p = part(scalar);
    let mut want_t = CountTable::with_capacity_and_seed(0, inp.seed);
    scalar.count_add_column(&mut want_t, &ik);
    let mut want_sorted: Vec<(i64, u64)> = want_t.iter().collect();
    want_sorted.sort_unstable();
    for k in Kernels::supported() {
        let mut got = vec![0u64; out_len];
        assert_eq!(
            k.hash_u64_column(ks, inp.seed, &mut got),
            want_r,
            "{}",
            k.level()
        );
        assert_eq!(got, want, "{}", k.level());
        let mut acc = want.clone();
        assert_eq!(k.combine_u64_column(ks, &mut acc), want_c);
        assert_eq!(acc, want_acc, "{}", k.level());
        assert_eq!(part(k), want_p, "{}", k.level());
        let mut t = CountTable::with_capacity_and_seed(0, inp.seed);
        k.count_add_column(&mut t, &ik);
        let mut sorted: Vec<(i64, u64)> = t.iter().collect();
        sorted.sort_unstable();
        assert_eq!(sorted, want_sorted, "{}", k.level());
    }
}

/// Sketch batch add, merge, and register validation.
pub fn hll_family(inp: &HllInput) {
    let ks = keys(&inp.bytes, inp.offset);
    let sketch = HyperLogLog::with_seed(inp.precision, inp.seed);
    assert_eq!(sketch.is_ok(), (4..=18).contains(&inp.precision));
    if let Ok(h) = HyperLogLog::from_registers(inp.precision, inp.seed, &inp.registers) {
        let e = h.estimate();
        assert!(!e.is_nan() && e >= 0.0);
    }
    let Ok(empty) = sketch else { return };
    let split = usize::from(inp.split).min(ks.len());
    let scalar = Kernels::scalar();
    let mut want = empty.clone();
    scalar.hll_add_u64_column(&mut want, &ks);
    let mut one = empty.clone();
    ks.iter().for_each(|&k| one.add_u64(k));
    assert_eq!(one, want);
    let e = want.estimate();
    assert!(e.is_finite() && e >= 0.0);
    for k in Kernels::supported() {
        let mut got = empty.clone();
        k.hll_add_u64_column(&mut got, &ks);
        assert_eq!(got, want, "{}", k.level());
        let mut hashes = empty.clone();
        k.hll_add_hashes(&mut hashes, &ks);
        let mut hashes_want = empty.clone();
        scalar.hll_add_hashes(&mut hashes_want, &ks);
        assert_eq!(hashes, hashes_want, "{}", k.level());
        // Merge of the two halves is the sketch of the whole.
        let (mut a, mut b) = (empty.clone(), empty.clone());
        k.hll_add_u64_column(&mut a, &ks[..split]);
        k.hll_add_u64_column(&mut b, &ks[split..]);
        k.hll_merge(&mut a, &b).unwrap();
        assert_eq!(a, want, "{}", k.level());
        // The masked add: exactly the scalar twin's sketch (or the same
        // error), whatever the mask's density and offset.
        let off = usize::from(inp.mask_shape % 64);
        let words = mask_words(&inp.mask, ks.len() + off, inp.mask_shape / 64);
        let m = Mask::valid(Bits::with_offset(&words, off));
        let (mut got, mut twin) = (empty.clone(), empty.clone());
        let r = k.hll_add_u64_column_masked(&mut got, &ks, m);
        let r_twin = scalar.hll_add_u64_column_masked(&mut twin, &ks, m);
        assert_eq!(r.is_ok(), r_twin.is_ok(), "{}", k.level());
        assert_eq!(got, twin, "masked, {}", k.level());
        // Different precision or seed: an error, never a panic.
        let other_p = if inp.precision == 18 {
            17
        } else {
            inp.precision + 1
        };
        assert!(
            k.hll_merge(&mut a, &HyperLogLog::with_seed(other_p, inp.seed).unwrap())
                .is_err()
        );
        assert!(
            k.hll_merge(
                &mut a,
                &HyperLogLog::with_seed(inp.precision, !inp.seed).unwrap()
            )
            .is_err()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_small_inputs() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(8 * 300).collect();
        for slack in [-1i8, 0, 3] {
            hash_family(&HashInput {
                offset: 3,
                seed: 9,
                bytes: bytes.clone(),
                bits: 4,
                shift: 30,
                slack,
            });
        }
        for p in [3u8, 4, 14, 18, 19] {
            hll_family(&HllInput {
                precision: p,
                seed: 1,
                offset: 5,
                bytes: bytes.clone(),
                split: 100,
                registers: vec![3; 16],
                mask: vec![0xa5, 0x0f, 0x81, 0xff, 0, 0x10, 0x7e, 0x42, 0xff],
                mask_shape: p.wrapping_mul(37),
            });
        }
        // One full word in eight (1 in 8 rows, the walk's range), at offsets
        // 0 and 9: every store of a word's positions is taken.
        let long: Vec<u8> = (0..8 * 2000u32).map(|i| ((i * 131) >> 3) as u8).collect();
        let mut mask = vec![0xffu8; 8];
        mask.resize(64, 0);
        for mask_shape in [0u8, 9] {
            hll_family(&HllInput {
                precision: 14,
                seed: 3,
                offset: 0,
                bytes: long.clone(),
                split: 700,
                registers: vec![],
                mask: mask.clone(),
                mask_shape,
            });
        }
    }
}
