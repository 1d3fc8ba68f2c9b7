//! Morsel loops cover the range exactly once and share it between hands.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn cover_exactly_once() {
    let pool = Pool::builder().width(3).build().unwrap();
    let lens: &[usize] = if cfg!(miri) {
        &[0, 1, 65, 300]
    } else {
        &[0, 1, 63, 64, 65, 1000, 4097]
    };
    for &len in lens {
        for morsel in [0, 1, 7, 64, 5000] {
            let seen: Vec<AtomicUsize> = (0..len).map(|_| AtomicUsize::new(0)).collect();
            pool.for_each_morsel(len, morsel, |r| {
                assert!(r.len() <= morsel.max(1));
                for i in r {
                    seen[i].fetch_add(1, Ordering::Relaxed);
                }
            });
            assert!(
                seen.iter().all(|s| s.load(Ordering::Relaxed) == 1),
                "len {len} morsel {morsel}"
            );
        }
    }
}

#[test]
fn sum_matches_and_width_caps() {
    let pool = Pool::builder().width(4).build().unwrap();
    let n = if cfg!(miri) { 5_000 } else { 200_000 };
    let data: Vec<i64> = (0..n).map(|i| i * 3 - 7).collect();
    let expect: i64 = data.iter().sum();
    for width in [1, 2, 4] {
        let sum = std::sync::atomic::AtomicI64::new(0);
        let threads = std::sync::Mutex::new(std::collections::HashSet::new());
        pool.batch()
            .width(width)
            .for_each_morsel(data.len(), if cfg!(miri) { 256 } else { 1 << 10 }, |r| {
                threads.lock().unwrap().insert(std::thread::current().id());
                sum.fetch_add(data[r].iter().sum::<i64>(), Ordering::Relaxed);
            })
            .unwrap();
        assert_eq!(sum.into_inner(), expect);
        assert!(threads.lock().unwrap().len() <= width);
    }
}
