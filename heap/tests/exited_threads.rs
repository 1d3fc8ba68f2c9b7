//! Memory of exited threads: many short-lived threads each allocate a batch
//! of blocks and exit, and another thread frees every batch only after its
//! thread has exited. The frees land in the abandoned heaps in place, so the
//! process-wide in-use figure comes back to where it started, the heaps
//! stay few (new threads adopt the abandoned ones) and the mapped memory
//! stays bounded. One test in its own process (process-wide figures).
#![cfg(not(keel_loom))]

mod common;
use common::SendPtr;
use keel_heap::{raw, stats};
use std::sync::mpsc;

#[test]
fn blocks_freed_after_their_thread_exited_leave_nothing_in_use() {
    let threads = if cfg!(miri) { 8 } else { 4000 };
    let at_once = 4;
    let (tx, rx) = mpsc::sync_channel::<Vec<SendPtr>>(8);
    let freer = std::thread::spawn(move || {
        for batch in rx {
            for p in batch {
                // SAFETY: a live block of an exited thread, freed once.
                unsafe { raw::free(p.0) };
            }
        }
    });
    // This thread's heap exists before the figure is taken.
    // SAFETY: allocated and freed once.
    unsafe { raw::free(raw::alloc(16, 8)) };
    let before = stats();
    for t in (0..threads).step_by(at_once) {
        let hs: Vec<_> = (0..at_once)
            .map(|i| {
                std::thread::spawn(move || {
                    (0..24)
                        .map(|k| {
                            let n = match k {
                                0 => 300_000,
                                1..=3 => 8192 + (t + i + k) * 37 % 60_000,
                                _ => 16 + (t * 7 + i + k * 13) % 2000,
                            };
                            let p = raw::alloc(n, 8);
                            assert!(!p.is_null());
                            // SAFETY: a live block of `n` bytes.
                            unsafe { p.write_bytes(1, n) };
                            SendPtr(p)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in hs {
            // Joined first: the batch is freed after its thread exited.
            let batch = h.join().unwrap();
            tx.send(batch).unwrap();
        }
    }
    drop(tx);
    freer.join().unwrap();
    let after = stats();
    println!(
        "{threads} threads: in use {} -> {} bytes, heaps {} ({} abandoned), mapped {} MiB",
        before.in_use,
        after.in_use,
        after.heaps,
        after.abandoned,
        after.mapped >> 20
    );
    assert!(
        after.in_use <= before.in_use + (64 << 10),
        "{} bytes still in use after every block was freed",
        after.in_use - before.in_use
    );
    assert!(
        after.heaps <= 16,
        "{} heaps for {at_once} threads at a time",
        after.heaps
    );
    assert!(
        after.mapped <= 128 << 20,
        "{} MiB mapped",
        after.mapped >> 20
    );
}
