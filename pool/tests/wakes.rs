//! What a batch costs in wakeups and lock holds, counted from the pool's
//! stats: a batch wakes exactly the parked workers it can use (never one per
//! job beyond that, never every worker for a small batch), takes the pool's
//! lock at most twice itself plus once per worker woken (each parks again
//! once), claims no ticket under the lock, and never has more than
//! `MAX_SPINNERS` idle workers spinning. Width 16 runs on any machine: these
//! are counts, not timings.
#![cfg(not(keel_loom))]

use keel_pool::{MAX_SPINNERS, Pool, Stats};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Waits until the workers have parked `n` times since `before`.
fn wait_parked(pool: &Pool, before: u64, n: u64) -> Stats {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = pool.stats();
        if s.parks >= before + n {
            return s;
        }
        assert!(Instant::now() < deadline, "workers never parked: {s:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `k` jobs on `pool`, each of the first `hands` jobs holding its hand
/// until all `hands` hands have started one (or 20 s pass), so no hand
/// takes a second job before every hand the batch can use has one: the
/// batch then needs every worker it woke, whatever the machine's load.
fn run_held(pool: &Pool, k: usize, hands: usize) {
    let started = AtomicUsize::new(0);
    pool.run(k, |_| {
        let n = started.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= hands {
            let deadline = Instant::now() + Duration::from_secs(20);
            while started.load(Ordering::SeqCst) < hands && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    });
    assert!(started.into_inner() == k);
}

/// For batches of each size in `ks` on a parked pool of `width`: wakes per
/// batch = the workers it can use, lock holds per batch <= 2 + wakes.
fn check_counts(width: usize, ks: &[usize]) {
    let pool = Pool::builder()
        .width(width)
        .spin_window(Duration::ZERO)
        .build()
        .unwrap();
    let workers = (width - 1) as u64;
    let mut s0 = wait_parked(&pool, 0, workers);
    for &k in ks {
        let hands = k.min(width);
        run_held(&pool, k, hands);
        let want = (hands - 1) as u64;
        // Every woken worker parks again once the batch is done.
        let s1 = wait_parked(&pool, s0.parks, want);
        let wakes = s1.wakes - s0.wakes;
        let locks = s1.lock_acquisitions - s0.lock_acquisitions;
        assert_eq!(s1.batches - s0.batches, 1);
        assert_eq!(wakes, want, "width {width} k {k}: {s1:?}");
        assert!(
            locks <= 2 + wakes,
            "width {width} k {k}: {locks} lock holds for {wakes} wakes"
        );
        println!("width {width} k {k}: {wakes} wakes, {locks} lock holds");
        s0 = s1;
    }
}

#[test]
fn wakes_match_the_batch() {
    check_counts(5, &[1, 2, 3, 5, 9]);
}

#[test]
fn wakes_and_lock_holds_at_width_16() {
    if cfg!(miri) {
        println!("skipping under Miri: 16 threads of held jobs take minutes there");
        return;
    }
    check_counts(16, &[2, 5, 15, 16, 40, 16]);
}

/// With a spin window longer than the test, the first `MAX_SPINNERS` idle
/// workers spin until work shows up and the others park, so who is where is
/// known without timing: a refused spinner saw the cap's increments held,
/// and admitted ones stop only for work (or shutdown). A batch then wakes
/// only the parked workers it needs beyond the spinners, the spinners claim
/// their tickets without the lock (a batch the spinners alone can serve
/// takes the lock once, to offer), and each woken worker that parks again
/// takes it once more.
#[test]
fn spinners_are_not_woken_and_claim_without_the_lock() {
    if cfg!(miri) {
        println!("skipping under Miri: two workers spin for the whole test");
        return;
    }
    let width = 16;
    let pool = Pool::builder()
        .width(width)
        .spin_window(Duration::from_secs(3600))
        .build()
        .unwrap();
    let spinners = MAX_SPINNERS.min(width - 1);
    let parked = (width - 1 - spinners) as u64;
    let mut s0 = wait_parked(&pool, 0, parked);
    // (k, wakes): the parked workers a batch of k needs beyond the spinners.
    // A batch that follows one the spinners served alone needs every parked
    // worker, so it does not depend on whether they are back in their spin
    // yet (the count it reads may lag); every other batch follows one after
    // which the workers it woke parked again, leaving both spinners spinning.
    for (k, want) in [(5, 2), (3, 0), (16, parked), (2, 0), (40, parked)] {
        let hands = k.min(width);
        run_held(&pool, k, hands);
        // The woken workers come back; as many as were woken park again.
        let s1 = wait_parked(&pool, s0.parks, want);
        let wakes = s1.wakes - s0.wakes;
        let locks = s1.lock_acquisitions - s0.lock_acquisitions;
        println!("width {width} k {k}: {wakes} wakes, {locks} lock holds");
        assert_eq!(wakes, want, "k {k}: {s1:?}");
        assert!(
            locks <= 2 + wakes,
            "k {k}: {locks} lock holds, {wakes} wakes"
        );
        if want == 0 {
            assert_eq!(locks, 1, "k {k}: the spinners' claims took the lock");
        }
        // Both spinners ran a hand of the first batch, so both have counted
        // themselves by now, and nobody else ever spun.
        assert_eq!(s1.spinners_high_water, spinners as u64, "{s1:?}");
        s0 = s1;
    }
}

#[test]
fn spinners_never_above_the_cap() {
    if cfg!(miri) {
        println!("skipping under Miri: thousands of batches on 16 threads");
        return;
    }
    let pool = Pool::builder()
        .width(16)
        .spin_window(Duration::from_micros(500))
        .build()
        .unwrap();
    let n = AtomicUsize::new(0);
    for round in 0..200 {
        // Back-to-back batches, some with jobs long enough to wake workers,
        // then a gap in which the spinners give up.
        for _ in 0..20 {
            pool.run(16, |_| {
                n.fetch_add(1, Ordering::Relaxed);
            });
        }
        pool.run(16, |_| std::thread::sleep(Duration::from_micros(100)));
        if round % 20 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        let s = pool.stats();
        assert!(
            s.spinners_high_water <= MAX_SPINNERS as u64,
            "round {round}: {s:?}"
        );
    }
    assert_eq!(n.into_inner(), 200 * 20 * 16);
    let s = pool.stats();
    // Idle workers did spin: the cap holds with spinning, not for lack of it.
    assert!(s.spinners_high_water >= 1, "{s:?}");
    println!("{s:?}");
    // And once idle, every worker parks: the spinners' windows end.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let a = pool.stats();
        std::thread::sleep(Duration::from_millis(20));
        let b = pool.stats();
        if b.spin_time == a.spin_time && b.parks == a.parks {
            break;
        }
        assert!(Instant::now() < deadline, "workers still spinning: {b:?}");
    }
}
