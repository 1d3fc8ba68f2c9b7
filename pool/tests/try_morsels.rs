//! A fallible morsel loop returns the first error and starts no morsel
//! once it is seen.
#![cfg(not(keel_loom))]

use keel_pool::{Cancel, Pool, TryError};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn first_error_and_no_new_morsels() {
    // One hand: morsels run in order, so exactly 0..=3 run.
    let pool = Pool::builder().width(1).build().unwrap();
    let ran = AtomicUsize::new(0);
    let r = pool.try_for_each_morsel(100, 10, |_, r| {
        ran.fetch_add(1, Ordering::Relaxed);
        if r.start == 30 { Err(r.start) } else { Ok(()) }
    });
    assert_eq!(r, Err(30));
    assert_eq!(ran.into_inner(), 4);

    // Several hands: the loop stops early, and the error is one a morsel
    // returned.
    let pool = Pool::builder().width(4).build().unwrap();
    let n = if cfg!(miri) { 1_000 } else { 1 << 20 };
    let ran = AtomicUsize::new(0);
    let r = pool.try_for_each_morsel(n, 1, |_, r| {
        ran.fetch_add(1, Ordering::Relaxed);
        if r.start % 97 == 13 {
            Err(r.start)
        } else {
            Ok(())
        }
    });
    let e = r.unwrap_err();
    assert_eq!(e % 97, 13);
    assert!(ran.into_inner() < n, "every morsel ran after an error");

    // No error: every morsel, Ok.
    let ran = AtomicUsize::new(0);
    let r: Result<(), ()> = pool.try_for_each_morsel(1000, 7, |_, r| {
        ran.fetch_add(r.len(), Ordering::Relaxed);
        Ok(())
    });
    assert_eq!(r, Ok(()));
    assert_eq!(ran.into_inner(), 1000);
}

#[test]
fn cancelled_without_an_error() {
    let pool = Pool::builder().width(2).build().unwrap();
    let cancel = Cancel::new();
    let r: Result<(), TryError<()>> =
        pool.batch()
            .cancel(&cancel)
            .try_for_each_morsel(1 << 16, 8, |_, r| {
                if r.start > 80 {
                    cancel.cancel();
                }
                Ok(())
            });
    assert_eq!(r, Err(TryError::Cancelled));
    // An error wins over the cancel.
    cancel.reset();
    let r = pool
        .batch()
        .cancel(&cancel)
        .try_for_each_morsel(1 << 16, 8, |_, r| {
            if r.start == 800 {
                cancel.cancel();
                return Err("stop");
            }
            Ok(())
        });
    assert_eq!(r, Err(TryError::Failed("stop")));
    assert_eq!(
        TryError::<&str>::Cancelled.to_string(),
        "batch cancelled before all of its jobs ran"
    );
}
