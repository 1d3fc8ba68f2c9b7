//! The group-by count table equals a `BTreeMap` oracle at every level.

use std::collections::BTreeMap;

use keel_kernels::groupby::CountTable;
use keel_kernels::{Kernels, cpu::Level};

mod common;
use common::Rng;

const MAX_LEN: usize = if cfg!(miri) { 20 } else { 300 };
const MAX_OFF: usize = if cfg!(miri) { 3 } else { 63 };

fn keys(n: usize, distinct: u64, seed: u64) -> Vec<i64> {
    let edges = [i64::MIN, i64::MAX, 0, -1, 1, i64::MIN + 1];
    let mut r = Rng(seed);
    (0..n)
        .map(|i| {
            edges
                .get(i % 11)
                .copied()
                .unwrap_or_else(|| (r.next() % distinct) as i64 - (distinct / 2) as i64)
        })
        .collect()
}

fn oracle(keys: &[i64]) -> Vec<(i64, u64)> {
    let mut m = BTreeMap::new();
    for &k in keys {
        *m.entry(k).or_insert(0u64) += 1;
    }
    m.into_iter().collect()
}

#[test]
fn every_level_counts_like_the_scalar_twin_at_every_length_and_offset() {
    let ks = keys(MAX_LEN + MAX_OFF + 1, 40, 1);
    for len in 0..=MAX_LEN {
        let mut t = CountTable::new();
        Kernels::scalar().count_add_column(&mut t, &ks[..len]);
        assert_eq!(t.into_sorted(), oracle(&ks[..len]), "scalar len {len}");
    }
    // Tables are cleared and reused: a debug-build allocation per case
    // would dominate the run time.
    let (mut want, mut got) = (CountTable::new(), CountTable::new());
    let sorted = |t: &CountTable| {
        let mut v: Vec<(i64, u64)> = t.iter().collect();
        v.sort_unstable();
        v
    };
    // The level only changes the hash kernel, which tests/hash.rs sweeps at
    // every length 0..=300 and every offset 0..=63; here every length runs
    // at four offsets and every offset at the block-edge lengths, since a
    // debug-build hashbrown probe costs a microsecond.
    let cases = (0..=MAX_LEN)
        .flat_map(|len| [0, 1, 7, MAX_OFF].map(|off| (off, len)))
        .chain((0..=MAX_OFF).flat_map(|off| [1, 255, 256, 257, MAX_LEN].map(|len| (off, len))))
        // Miri's shorter sweep stops before some of these lengths and offsets.
        .filter(|&(off, len)| off <= MAX_OFF && len <= MAX_LEN);
    let cases: Vec<(usize, usize)> = cases.collect();
    for k in Kernels::supported().filter(|k| k.level() != Level::Scalar) {
        for &(off, len) in &cases {
            {
                let src = &ks[off..off + len];
                want.clear();
                got.clear();
                Kernels::scalar().count_add_column(&mut want, src);
                k.count_add_column(&mut got, src);
                assert_eq!(got.total(), len as u64);
                assert_eq!(
                    sorted(&got),
                    sorted(&want),
                    "{} len {len} off {off}",
                    k.level()
                );
            }
        }
    }
    for l in Level::ALL {
        if Kernels::at(l).is_none() {
            println!("skipping level {l}: not supported by this CPU");
        }
    }
}

#[test]
fn large_columns_one_at_a_time_and_batched_agree() {
    let n = if cfg!(miri) { 60 } else { 100_000 };
    for distinct in [3u64, 1000, 1 << 40] {
        let ks = keys(n, distinct, distinct);
        let want = oracle(&ks);
        let mut one = CountTable::with_capacity_and_seed(0, 77);
        ks.iter().for_each(|&k| one.add(k));
        let mut batch = CountTable::new();
        batch.add_column(&ks);
        assert_eq!(batch.len(), want.len());
        for &(k, c) in want.iter().take(200) {
            assert_eq!(batch.get(k), c);
            assert_eq!(one.get(k), c);
        }
        assert_eq!(one.into_sorted(), want);
        assert_eq!(batch.into_sorted(), want);
    }
}

#[test]
fn merge_adds_counts_across_seeds() {
    let ks = keys(if cfg!(miri) { 100 } else { 5000 }, 300, 5);
    let (a, b) = ks.split_at(ks.len() / 4);
    let mut ta = CountTable::with_capacity_and_seed(10, 1);
    ta.add_column(a);
    let mut tb = CountTable::with_capacity_and_seed(0, 2);
    tb.add_column(b);
    ta.merge(&tb);
    assert_eq!(ta.clone().into_sorted(), oracle(&ks));
    ta.clear();
    assert!(ta.is_empty());
    assert_eq!(ta.get(0), 0);
    assert_eq!(ta.total(), 0);
}

/// A capacity no table can have is a hint not taken (no panic), and counts
/// merged past `u64::MAX` saturate, as does their total.
#[test]
fn absurd_capacity_and_merged_counts_saturate() {
    let mut t = CountTable::with_capacity_and_seed(usize::MAX, 7);
    t.add_column(&[4, 4, -1]);
    assert_eq!((t.get(4), t.get(-1), t.len()), (2, 1, 2));
    for _ in 0..64 {
        let c = t.clone();
        t.merge(&c);
    }
    assert_eq!(t.get(4), u64::MAX);
    assert_eq!(t.total(), u64::MAX);
    t.add(-1);
    assert_eq!(t.get(-1), u64::MAX);
}
