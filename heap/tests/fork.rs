//! The fork handlers: a child of a threaded program can allocate, and
//! starts no decay thread of its own.
#![cfg(not(any(keel_loom, miri)))]

mod common;
use common::decay_threads;
use keel_heap::raw;

#[test]
fn child_of_a_threaded_program_can_allocate_after_fork() {
    // Other threads hold heaps and may be inside the allocator at fork time.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let t = std::thread::spawn(move || {
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            let p = raw::alloc(5 << 20, 8);
            // SAFETY: freed once.
            unsafe { raw::free(p) };
        }
    });
    // A pooled direct map starts the decay thread (Linux); wait for it, so
    // every child below is forked from a process that has one.
    // SAFETY: freed once.
    unsafe { raw::free(raw::alloc(5 << 20, 8)) };
    let linux = cfg!(target_os = "linux");
    let start = std::time::Instant::now();
    while linux && decay_threads() == 0 && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(!linux || decay_threads() == 1, "the parent's decay thread");
    for _ in 0..5 {
        raw::prepare_fork();
        // SAFETY: the child only calls async-signal-tolerant code of ours and _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: the child, after `prepare_fork` in the parent.
            unsafe { raw::child_after_fork() };
            let ok = (0..100).all(|i| {
                let p = raw::alloc(if i % 2 == 0 { 100 } else { 3 << 20 }, 8);
                // SAFETY: freed once.
                unsafe { raw::free(p) };
                !p.is_null()
            });
            // The child pooled maps, but creating a thread in the child of
            // a threaded program is not async-signal-safe: it has none.
            let ok = ok && decay_threads() == 0;
            // SAFETY: leaving the child without running the parent's atexit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        // SAFETY: after `prepare_fork` on this thread.
        unsafe { raw::parent_after_fork() };
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    t.join().unwrap();
}
