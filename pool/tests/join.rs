//! `join(a, b)`: both run, results come back, panics resume after both,
//! borrowing the caller's stack is fine, and joins nest.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::atomic::{AtomicUsize, Ordering};

fn sum(pool: &Pool, v: &[u64], depth: usize) -> u64 {
    if depth == 0 || v.len() < 2 {
        return v.iter().sum();
    }
    let (l, r) = v.split_at(v.len() / 2);
    let (a, b) = pool.join(|| sum(pool, l, depth - 1), || sum(pool, r, depth - 1));
    a + b
}

#[test]
fn results_borrows_and_nesting() {
    for width in [1, 2, 4] {
        let pool = Pool::builder().width(width).build().unwrap();
        let v: Vec<u64> = (0..10_000).collect();
        let depth = if cfg!(miri) { 2 } else { 5 };
        assert_eq!(sum(&pool, &v, depth), 9_999 * 10_000 / 2, "width {width}");
        let mut out = String::new();
        let (n, ()) = pool.join(|| v.len(), || out.push_str("written from a job"));
        assert_eq!((n, out.as_str()), (10_000, "written from a job"));
    }
}

#[test]
fn a_panic_resumes_after_both_ran() {
    let pool = Pool::builder().width(2).build().unwrap();
    let ran = AtomicUsize::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.join(
            || -> u32 { panic!("left") },
            || {
                ran.fetch_add(1, Ordering::SeqCst);
                7
            },
        )
    }));
    assert!(r.is_err());
    assert_eq!(ran.into_inner(), 1);
}
