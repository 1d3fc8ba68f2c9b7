//! Span scan: stops within 1 Ki rows of the row that breaks the budget,
//! including a morsel's first rows; never stops while the span is within
//! budget; one shared flag stops every worker.

mod common;
use common::*;
use keel_kernels::Kernels;
use keel_kernels::span::{CHECK_ROWS, Outcome, SpanScan};
use std::sync::atomic::{AtomicBool, Ordering};

const N: usize = if cfg!(miri) { 2100 } else { 20_000 };

fn levels() -> Vec<Kernels> {
    Kernels::supported().collect()
}

#[test]
fn stops_within_check_rows_of_the_breaking_row() {
    let mut r = Rng(7);
    for k in levels() {
        let mut positions = vec![0, 1, 1023, 1024, 1025, 2047, N - 1];
        // Random positions natively; under Miri the fixed ones above (each
        // block edge) only.
        positions.extend((0..if cfg!(miri) { 0 } else { 20 }).map(|_| r.below(N as u64) as usize));
        // Keys within [0, 100]; row e jumps to 1000; budget 500. One
        // column per level, copied per position (under Miri building it
        // is most of the time).
        let base: Vec<i64> = (0..N).map(|_| r.below(101) as i64).collect();
        for e in positions {
            let mut v = base.clone();
            v[e] = 1000;
            let abort = AtomicBool::new(false);
            let mut s = SpanScan::with_kernels(k, 500);
            match s.scan(&v, None, &abort).unwrap() {
                Outcome::Exceeded { rows } => {
                    assert!(
                        rows > e && rows - e <= CHECK_ROWS,
                        "{} e {e} rows {rows}",
                        k.level()
                    )
                }
                o => panic!("{} e {e}: {o:?}", k.level()),
            }
            assert!(abort.load(Ordering::Relaxed));
        }
    }
}

#[test]
fn breaking_row_first_in_a_later_morsel() {
    // The running min/max are set by morsel 1; morsel 2's first row breaks
    // the budget: the scan must stop in morsel 2's first block.
    // Built once and copied per case; under Miri a first morsel of one
    // block and a partial one.
    let m1_len = if cfg!(miri) { CHECK_ROWS + 77 } else { 3000 };
    let m1: Vec<u32> = (0..m1_len).map(|i| 100 + (i % 11) as u32).collect();
    let m2_base = vec![105u32; 8192];
    for k in levels() {
        for first in [0usize, 1, 5] {
            let abort = AtomicBool::new(false);
            let mut s = SpanScan::<u32>::with_kernels(k, 10);
            assert_eq!(s.scan(&m1, None, &abort).unwrap(), Outcome::Within);
            let mut m2 = m2_base.clone();
            m2[first] = 200;
            assert_eq!(
                s.scan(&m2, None, &abort).unwrap(),
                Outcome::Exceeded { rows: CHECK_ROWS }
            );
            // A fresh morsel after the flag is set does not scan at all.
            assert_eq!(
                s.scan(&m1, None, &abort).unwrap(),
                Outcome::Aborted { rows: 0 }
            );
        }
    }
}

#[test]
fn never_stops_within_budget() {
    let mut r = Rng(8);
    for k in levels() {
        // Under Miri up to a block and a row (the longest column, two
        // blocks and a partial one, runs in the test above).
        let lens: &[usize] = if cfg!(miri) {
            &[0, 1, 63, 1024, 1025]
        } else {
            &[0, 1, 63, 1024, 1025, N]
        };
        for &len in lens {
            // Under Miri no budget of 1 (0 and 77 bracket it).
            let budgets: &[u64] = if cfg!(miri) {
                &[0, 77, u32::MAX as u64]
            } else {
                &[0, 1, 77, u32::MAX as u64]
            };
            for &budget in budgets {
                let lo = r.next() as i32 as i64;
                let v: Vec<i64> = (0..len)
                    .map(|_| lo + (r.next() % (budget + 1)) as i64)
                    .collect();
                let abort = AtomicBool::new(false);
                let mut s = SpanScan::with_kernels(k, budget);
                assert_eq!(
                    s.scan(&v, None, &abort).unwrap(),
                    Outcome::Within,
                    "{} len {len} budget {budget}",
                    k.level()
                );
                assert!(!abort.load(Ordering::Relaxed));
                assert_eq!(s.min_max(), k.min_max_masked(&v, None).unwrap());
            }
        }
        // Full i64 range with the full budget.
        let v = [i64::MIN, 0, i64::MAX];
        let mut s = SpanScan::with_kernels(k, u64::MAX);
        assert_eq!(
            s.scan(&v, None, &AtomicBool::new(false)).unwrap(),
            Outcome::Within
        );
        assert_eq!(s.span(), Some(u64::MAX));
    }
}

#[test]
fn nulls_do_not_break_the_budget() {
    for k in levels() {
        let mut v = vec![5i32; 3000];
        v[2000] = i32::MAX;
        let mut valid = vec![!0u64; 3000usize.div_ceil(64)];
        valid[2000 / 64] &= !(1 << (2000 % 64));
        let abort = AtomicBool::new(false);
        let mut s = SpanScan::with_kernels(k, 0);
        assert_eq!(s.scan(&v, Some(&valid), &abort).unwrap(), Outcome::Within);
        assert!(s.scan(&v, Some(&valid[1..]), &abort).is_err());
    }
}

#[test]
fn one_flag_stops_every_worker() {
    let abort = AtomicBool::new(false);
    let workers = 4;
    let mut r = Rng(9);
    let cols: Vec<Vec<i64>> = (0..workers)
        .map(|_| (0..N).map(|_| r.below(50) as i64).collect())
        .collect();
    std::thread::scope(|sc| {
        let handles: Vec<_> = cols
            .iter()
            .enumerate()
            .map(|(w, col)| {
                let abort = &abort;
                sc.spawn(move || {
                    let mut s = SpanScan::<i64>::new(1000);
                    if w == 0 {
                        let mut col = col.clone();
                        col[10] = 5000;
                        s.scan(&col, None, abort).unwrap()
                    } else {
                        // Start only once worker 0 has raised the flag: the
                        // first poll must see it.
                        while !abort.load(Ordering::Relaxed) {
                            std::thread::yield_now();
                        }
                        s.scan(col, None, abort).unwrap()
                    }
                })
            })
            .collect();
        let out: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(out[0], Outcome::Exceeded { rows: CHECK_ROWS });
        for o in &out[1..] {
            assert_eq!(*o, Outcome::Aborted { rows: 0 });
        }
    });
}

#[test]
fn merged_workers_equal_one_scan() {
    let mut r = Rng(10);
    let v: Vec<u64> = (0..N).map(|_| 1_000 + r.below(900)).collect();
    let abort = AtomicBool::new(false);
    let mut total = SpanScan::<u64>::new(1000);
    for part in v.chunks(3333) {
        let mut s = SpanScan::<u64>::new(1000);
        assert_eq!(s.scan(part, None, &abort).unwrap(), Outcome::Within);
        total.merge(&s);
    }
    assert_eq!(
        total.min_max(),
        Kernels::scalar().min_max_masked(&v, None).unwrap()
    );
}

#[test]
fn a_scan_over_budget_never_reports_within_again() {
    // A worker whose running span already broke the budget must not answer
    // `Within` for a later morsel, empty ones included, whatever the flag.
    for k in levels() {
        let abort = AtomicBool::new(false);
        let mut s = SpanScan::<i64>::with_kernels(k, 10);
        assert_eq!(
            s.scan(&[0, 100], None, &abort).unwrap(),
            Outcome::Exceeded { rows: 2 }
        );
        let fresh = AtomicBool::new(false);
        assert_eq!(
            s.scan(&[], None, &fresh).unwrap(),
            Outcome::Exceeded { rows: 0 },
            "{}",
            k.level()
        );
        assert!(fresh.load(Ordering::Relaxed), "{}", k.level());
        assert_ne!(s.scan(&[], None, &abort).unwrap(), Outcome::Within);
        assert_eq!(
            s.scan(&[5], None, &AtomicBool::new(false)).unwrap(),
            Outcome::Exceeded { rows: 1 }
        );
        // A scan within budget still answers `Within` for an empty morsel.
        let mut ok = SpanScan::<i64>::with_kernels(k, 10);
        assert_eq!(
            ok.scan(&[0, 10], None, &AtomicBool::new(false)).unwrap(),
            Outcome::Within
        );
        assert_eq!(
            ok.scan(&[], None, &AtomicBool::new(false)).unwrap(),
            Outcome::Within
        );
    }
}

#[test]
fn a_span_broken_only_across_workers_shows_in_the_merged_state() {
    // Each worker's keys fit the budget; together they do not. No worker
    // stops (each sees only its rows), and the merged state says so.
    let abort = AtomicBool::new(false);
    let (lo, hi) = (vec![0i64; 3000], vec![1000i64; 3000]);
    let mut a = SpanScan::<i64>::new(500);
    let mut b = SpanScan::<i64>::new(500);
    assert_eq!(a.scan(&lo, None, &abort).unwrap(), Outcome::Within);
    assert_eq!(b.scan(&hi, None, &abort).unwrap(), Outcome::Within);
    assert!(!a.exceeded() && !b.exceeded());
    a.merge(&b);
    assert!(a.exceeded());
    assert_eq!(a.span(), Some(1000));
}
