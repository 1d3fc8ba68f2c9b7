//! Hash kernels: every level equals the scalar twin; the mixer avalanches
//! and spreads sequential keys evenly.

use keel_kernels::hash::{self, DEFAULT_SEED, combine, hash_bytes, hash_u64, mix};
use keel_kernels::{Error, Kernels, cpu::Level};

mod common;
use common::Rng;

const MAX_LEN: usize = if cfg!(miri) { 20 } else { 300 };
const MAX_OFF: usize = if cfg!(miri) { 3 } else { 63 };

/// Keys with the edge values first, then random ones.
fn edge_keys(n: usize) -> Vec<u64> {
    let edges = [
        0,
        1,
        u64::MAX,
        i64::MIN as u64,
        i64::MAX as u64,
        DEFAULT_SEED, // hashes to mix(0) = 0
        DEFAULT_SEED ^ 1,
        (-1i64) as u64,
        1 << 32,
        0xFFFF_FFFF,
    ];
    let mut r = Rng(0x1234_5678);
    (0..n)
        .map(|i| edges.get(i % 23).copied().unwrap_or_else(|| r.next()))
        .collect()
}

/// The SIMD levels this CPU runs; prints which it cannot.
fn simd_levels() -> Vec<Kernels> {
    for l in Level::ALL {
        if Kernels::at(l).is_none() {
            println!("skipping level {l}: not supported by this CPU");
        }
    }
    Kernels::supported()
        .filter(|k| k.level() != Level::Scalar)
        .collect()
}

#[test]
fn column_hash_equals_scalar_at_every_length_and_offset() {
    let keys = edge_keys(MAX_LEN + MAX_OFF + 1);
    let scalar = Kernels::scalar();
    for k in simd_levels() {
        for seed in [DEFAULT_SEED, u64::MAX] {
            for off in 0..=MAX_OFF {
                for len in 0..=MAX_LEN {
                    let src = &keys[off..off + len];
                    let mut want = vec![0u64; len + off];
                    let mut got = vec![!0u64; len + off];
                    scalar.hash_u64_column(src, seed, &mut want[off..]).unwrap();
                    k.hash_u64_column(src, seed, &mut got[off..]).unwrap();
                    assert_eq!(got[off..], want[off..], "{} len {len} off {off}", k.level());
                    // The accumulator form, seeded from the hashes just made.
                    let mut acc_w = want.clone();
                    let mut acc_g = want.clone();
                    scalar.combine_u64_column(src, &mut acc_w[off..]).unwrap();
                    k.combine_u64_column(src, &mut acc_g[off..]).unwrap();
                    assert_eq!(acc_g, acc_w, "combine {} len {len} off {off}", k.level());
                }
            }
        }
    }
}

#[test]
fn scalar_twin_is_the_documented_function() {
    let keys = edge_keys(64);
    let mut out = vec![0; 64];
    Kernels::scalar()
        .hash_u64_column(&keys, 7, &mut out)
        .unwrap();
    for (k, h) in keys.iter().zip(&out) {
        assert_eq!(*h, mix(k ^ 7));
        assert_eq!(*h, hash_u64(*k, 7));
    }
    let mut acc = out.clone();
    Kernels::scalar()
        .combine_u64_column(&keys, &mut acc)
        .unwrap();
    for i in 0..64 {
        assert_eq!(acc[i], combine(out[i], keys[i]));
    }
}

#[test]
fn i64_columns_hash_their_bits() {
    let keys: Vec<i64> = vec![i64::MIN, -1, 0, 1, i64::MAX, 42, -42];
    let mut out = vec![0; keys.len()];
    hash::hash_i64_column(&keys, DEFAULT_SEED, &mut out).unwrap();
    for (k, h) in keys.iter().zip(&out) {
        assert_eq!(*h, hash::hash_i64(*k, DEFAULT_SEED));
        assert_eq!(*h, hash_u64(*k as u64, DEFAULT_SEED));
    }
    let mut acc = out.clone();
    hash::combine_i64_column(&keys, &mut acc).unwrap();
    assert_eq!(acc[3], combine(out[3], 1));
}

#[test]
fn short_outputs_are_errors() {
    for k in Kernels::supported() {
        let e = k.hash_u64_column(&[1, 2, 3], 0, &mut [0; 2]).unwrap_err();
        assert!(matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                actual: 2,
                ..
            }
        ));
        assert!(k.combine_u64_column(&[1, 2], &mut [0; 3]).is_err());
    }
    assert!(hash::hash_bytes_column(&[], b"", 0, &mut []).is_err());
    assert!(hash::hash_bytes_column(&[0, 5], b"abc", 0, &mut [0]).is_err());
    assert!(hash::hash_bytes_column(&[2, 1], b"abc", 0, &mut [0]).is_err());
    assert!(hash::hash_bytes_column(&[0, 1, 2], b"abc", 0, &mut [0]).is_err());
}

#[test]
fn strict_avalanche() {
    if cfg!(miri) {
        println!("skipping the avalanche statistics under Miri: no unsafe code, too slow");
        return;
    }
    // Flip each input bit of random keys; each output bit must flip with
    // probability 1/2. With N keys a cell's standard deviation is
    // 0.5/sqrt(N) (0.0035 at N = 20 000): 0.02 is over 5 sigma.
    let (n, bound) = (20_000, 0.02);
    let mut r = Rng(99);
    let mut flips = vec![[0u32; 64]; 64];
    for _ in 0..n {
        let x = r.next();
        let h = hash_u64(x, DEFAULT_SEED);
        for (i, row) in flips.iter_mut().enumerate() {
            let d = h ^ hash_u64(x ^ (1 << i), DEFAULT_SEED);
            for (j, c) in row.iter_mut().enumerate() {
                *c += ((d >> j) & 1) as u32;
            }
        }
    }
    let mut worst = 0.0f64;
    for row in &flips {
        for &c in row {
            worst = worst.max((f64::from(c) / n as f64 - 0.5).abs());
        }
    }
    println!("worst avalanche bias over 64x64 cells: {worst:.4}");
    assert!(worst < bound, "worst avalanche bias {worst}");
}

/// Chi-square of `n` bucket counts against a uniform expectation.
fn chi2(counts: &[u32], total: usize) -> f64 {
    let e = total as f64 / counts.len() as f64;
    counts.iter().map(|&c| (f64::from(c) - e).powi(2) / e).sum()
}

#[test]
fn sequential_keys_spread_evenly() {
    if cfg!(miri) {
        println!("skipping the bucket statistics under Miri: no unsafe code, too slow");
        return;
    }
    // 2^16 sequential keys in 2^10 buckets (64 expected each), by the top
    // bits (what HyperLogLog and radix partitioning use) and by the low
    // bits (what hash tables use). 1023 degrees of freedom: mean 1023,
    // sd 45; the 99.9% quantile is about 1168.
    let (bits, n, limit) = (10, 1 << 16, 1168.0);
    for seed in [DEFAULT_SEED, 0, 0x5EED_0000_0000_0001] {
        let mut top = vec![0u32; 1 << bits];
        let mut low = vec![0u32; 1 << bits];
        let mut strs = vec![0u32; 1 << bits];
        for k in 0..n as u64 {
            let h = hash_u64(k, seed);
            top[(h >> (64 - bits)) as usize] += 1;
            low[(h & ((1 << bits) - 1)) as usize] += 1;
            let s = hash_bytes(format!("key{k}").as_bytes(), seed);
            strs[(s >> (64 - bits)) as usize] += 1;
        }
        for (name, c) in [("top", &top), ("low", &low), ("strings", &strs)] {
            let x = chi2(c, n);
            println!("seed {seed:#x} {name} bits: chi2 {x:.1}");
            assert!(x < limit, "seed {seed:#x} {name}: chi2 {x}");
        }
    }
}

#[test]
fn bytes_column_equals_one_at_a_time() {
    let data: Vec<u8> = (0..=255u8)
        .cycle()
        .take(if cfg!(miri) { 100 } else { 700 })
        .collect();
    let mut offsets = vec![0usize];
    let mut r = Rng(5);
    while *offsets.last().unwrap() < data.len() {
        let next = (offsets.last().unwrap() + (r.next() % 20) as usize).min(data.len());
        offsets.push(next);
    }
    let mut out = vec![0; offsets.len() - 1];
    hash::hash_bytes_column(&offsets, &data, 3, &mut out).unwrap();
    for (i, h) in out.iter().enumerate() {
        assert_eq!(*h, hash_bytes(&data[offsets[i]..offsets[i + 1]], 3));
    }
    // Every length 0..=24 hashes distinctly from its zero-padded neighbour.
    for len in 0..=24 {
        let a = vec![0u8; len];
        let b = vec![0u8; len + 1];
        assert_ne!(hash_bytes(&a, 0), hash_bytes(&b, 0), "len {len}");
    }
}
