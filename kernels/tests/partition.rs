//! Radix partitioning: equals a naive oracle for every radix, and the
//! key-hashing form equals it at every level, length and offset.

use keel_kernels::hash::hash_i64;
use keel_kernels::partition::{self, Radix};
use keel_kernels::{Error, Kernels, cpu::Level};

mod common;
use common::Rng;

const MAX_LEN: usize = if cfg!(miri) { 20 } else { 300 };
const MAX_OFF: usize = if cfg!(miri) { 3 } else { 63 };

fn edge_hashes(n: usize) -> Vec<u64> {
    let edges = [0, u64::MAX, 1 << 63, 1, 0xFFFF_0000_0000_0000, 1 << 32];
    let mut r = Rng(42);
    (0..n)
        .map(|i| edges.get(i % 17).copied().unwrap_or_else(|| r.next()))
        .collect()
}

/// The naive oracle: rows of each partition in input order, and offsets.
fn oracle(hashes: &[u64], radix: Radix) -> (Vec<usize>, Vec<u32>) {
    let mut parts = vec![Vec::new(); radix.partitions()];
    for (i, &h) in hashes.iter().enumerate() {
        // Written out rather than via Radix::of, which is under test.
        let j = (h >> (radix.shift() % 64)) & ((1u64 << radix.bits()) - 1);
        parts[j as usize].push(i as u32);
    }
    let mut offsets = vec![0];
    let mut rows = Vec::new();
    for p in parts {
        rows.extend(p);
        offsets.push(rows.len());
    }
    (offsets, rows)
}

fn radixes() -> Vec<Radix> {
    let mut v = Vec::new();
    for bits in [0u8, 1, 3, 8] {
        v.push(Radix::top(bits).unwrap());
        v.push(Radix::new(bits, 0).unwrap());
        v.push(Radix::new(bits, 32).unwrap());
    }
    v
}

#[test]
fn partition_rows_equals_oracle() {
    let hashes = edge_hashes(1000);
    // 2^16 partitions and 1000 rows are too slow under Miri; it runs the rest.
    let widest = if cfg!(miri) { 8 } else { 16 };
    let lens: &[usize] = if cfg!(miri) {
        &[0, 1, 2, 7, 64]
    } else {
        &[0, 1, 2, 7, 64, 999, 1000]
    };
    for radix in radixes().into_iter().chain([Radix::top(widest).unwrap()]) {
        for &len in lens {
            let h = &hashes[..len];
            let (want_o, want_r) = oracle(h, radix);
            // Garbage in the outputs must not leak into the result.
            let mut offsets = vec![usize::MAX; radix.partitions() + 3];
            let mut rows = vec![u32::MAX; len + 2];
            partition::partition_rows(h, radix, &mut offsets, &mut rows).unwrap();
            assert_eq!(
                offsets[..=radix.partitions()],
                want_o[..],
                "{radix:?} len {len}"
            );
            assert_eq!(rows[..len], want_r[..], "{radix:?} len {len}");
            let owned = partition::partition_rows_vec(h, radix).unwrap();
            assert_eq!(
                (owned.offsets, owned.rows),
                (want_o.clone(), want_r.clone())
            );
            let mut counts = vec![7usize; radix.partitions()];
            partition::histogram(h, radix, &mut counts).unwrap();
            for j in 0..radix.partitions() {
                assert_eq!(counts[j], want_o[j + 1] - want_o[j]);
            }
        }
    }
}

#[test]
fn partition_pairs_equals_oracle() {
    let n = if cfg!(miri) { 50 } else { 500 };
    let hashes = edge_hashes(n);
    let keys: Vec<i64> = (0..n as i64).map(|i| i * 3 - 700).collect();
    let vals: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    for radix in radixes() {
        let (want_o, want_r) = oracle(&hashes, radix);
        let mut offsets = vec![usize::MAX; radix.partitions() + 1];
        let mut k = vec![0i64; n];
        let mut v = vec![0f64; n];
        partition::partition_pairs(&hashes, &keys, &vals, radix, &mut offsets, &mut k, &mut v)
            .unwrap();
        assert_eq!(offsets, want_o);
        for (pos, &row) in want_r.iter().enumerate() {
            assert_eq!(k[pos], keys[row as usize]);
            assert_eq!(v[pos].to_bits(), vals[row as usize].to_bits());
        }
    }
}

#[test]
fn by_key_equals_scalar_and_oracle_at_every_length_and_offset() {
    let mut r = Rng(9);
    let edges = [i64::MIN, i64::MAX, 0, -1, 1];
    let keys: Vec<i64> = (0..MAX_LEN + MAX_OFF + 1)
        .map(|i| {
            edges
                .get(i % 13)
                .copied()
                .unwrap_or_else(|| r.next() as i64 % 50)
        })
        .collect();
    let radix = Radix::new(3, 20).unwrap();
    let seed = 0xC0FFEE;
    for k in Kernels::supported() {
        if k.level() == Level::Scalar {
            continue;
        }
        for off in 0..=MAX_OFF {
            for len in 0..=MAX_LEN {
                let src = &keys[off..off + len];
                let (mut o1, mut r1) = (vec![0usize; 9], vec![0u32; len]);
                let (mut o2, mut r2) = (vec![0usize; 9], vec![0u32; len]);
                Kernels::scalar()
                    .partition_rows_by_key(src, seed, radix, &mut o1, &mut r1)
                    .unwrap();
                k.partition_rows_by_key(src, seed, radix, &mut o2, &mut r2)
                    .unwrap();
                assert_eq!((&o2, &r2), (&o1, &r1), "{} len {len} off {off}", k.level());
            }
        }
    }
    for l in Level::ALL {
        if Kernels::at(l).is_none() {
            println!("skipping level {l}: not supported by this CPU");
        }
    }
    // And the scalar twin against the oracle on the hashes, on a long column.
    let hashes: Vec<u64> = keys.iter().map(|&k| hash_i64(k, seed)).collect();
    let (want_o, want_r) = oracle(&hashes, radix);
    let (mut o, mut rows) = (vec![0usize; 9], vec![0u32; keys.len()]);
    partition::partition_rows_by_key(&keys, seed, radix, &mut o, &mut rows).unwrap();
    assert_eq!((o, rows), (want_o, want_r));
}

#[test]
fn bad_arguments_are_errors() {
    assert!(matches!(
        Radix::new(17, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(Radix::new(8, 57).is_err());
    assert!(Radix::new(8, 56).is_ok());
    assert!(Radix::new(0, 64).is_ok());
    assert!(Radix::top(17).is_err());
    let r = Radix::top(2).unwrap();
    let h = [1u64, 2, 3];
    assert!(matches!(
        partition::histogram(&h, r, &mut [0; 3]),
        Err(Error::OutputTooShort {
            needed: 4,
            actual: 3,
            ..
        })
    ));
    assert!(partition::partition_rows(&h, r, &mut [0; 4], &mut [0; 3]).is_err());
    assert!(partition::partition_rows(&h, r, &mut [0; 5], &mut [0; 2]).is_err());
    assert!(partition::partition_rows(&h, r, &mut [0; 5], &mut [0; 3]).is_ok());
    let (mut k, mut v) = ([0i64; 3], [0i64; 3]);
    assert!(matches!(
        partition::partition_pairs(&h, &[1, 2], &[1, 2, 3], r, &mut [0; 5], &mut k, &mut v),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(
        partition::partition_pairs(
            &h,
            &[1, 2, 3],
            &[1, 2, 3],
            r,
            &mut [0; 5],
            &mut k,
            &mut v[..2]
        )
        .is_err()
    );
    for k in Kernels::supported() {
        assert!(
            k.partition_rows_by_key(&[1, 2], 0, r, &mut [0; 4], &mut [0; 2])
                .is_err()
        );
        assert!(
            k.partition_rows_by_key(&[1, 2], 0, r, &mut [0; 5], &mut [0; 1])
                .is_err()
        );
    }
}

#[test]
fn rows_of_never_panics_on_offsets_edited_by_the_caller() {
    // `Partitions` has public fields: offsets that do not delimit a range of
    // `rows` give an empty partition, not a panic.
    let mut p = partition::partition_rows_vec(&[0, u64::MAX, 1], Radix::top(1).unwrap()).unwrap();
    assert_eq!(
        (p.rows_of(0), p.rows_of(1), p.rows_of(2)),
        (&[0u32, 2][..], &[1u32][..], &[][..])
    );
    assert_eq!(p.rows_of(usize::MAX), &[] as &[u32]);
    p.offsets = vec![2, 1, 9];
    assert_eq!(p.rows_of(0), &[] as &[u32]);
    assert_eq!(p.rows_of(1), &[] as &[u32]);
    p.rows.clear();
    p.offsets = vec![0, 2, 3];
    assert_eq!(p.rows_of(0), &[] as &[u32]);
}
