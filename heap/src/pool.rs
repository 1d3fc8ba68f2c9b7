//! The direct-map pool's passes: the GC's trim to the budget and release
//! of aged maps, and idle decay by age (`direct.rs` holds the pool and its
//! reuse policy).

use crate::decay::{self, NEVER};
use crate::direct::{POOL, POOL_DUE, split_beyond, unmap_chain};
use crate::os;
use crate::stats::global;
use crate::sync::plain::Ordering;
use core::ptr;

/// GC pass 4: unmap the oldest pooled maps beyond the budget.
pub(crate) fn reclaim_beyond_budget() {
    let budget = crate::options::options().pool_budget;
    let victims = POOL.with(|p| {
        if p.bytes > budget {
            split_beyond(p, budget)
        } else {
            ptr::null_mut()
        }
    });
    // SAFETY: unlinked under the lock.
    unsafe { unmap_chain(victims) };
}

/// A full release: unmaps every pooled map, so that its address space
/// (alignment padding included) and commit charge go back too, as the
/// regions beyond the first go on a full release. An allocation that
/// failed retries after this, so pooled maps never turn into a spurious
/// out-of-memory under an address-space limit or strict overcommit.
pub(crate) fn unmap_all() {
    let victims = POOL.with(|p| split_beyond(p, 0));
    // SAFETY: unlinked under the lock.
    unsafe { unmap_chain(victims) };
}

/// Releases the pages of pooled maps free for at least `min_age` global GCs,
/// within `budget` bytes. Returns (bytes released, madvise calls).
pub(crate) fn release_aged(epoch: u64, min_age: u64, budget: usize) -> (usize, u64) {
    POOL.with(|p| {
        let mut done = 0usize;
        let mut calls = 0u64;
        let mut cur = p.head;
        // SAFETY: pool entries are live headers, followed under the pool lock.
        unsafe {
            while !cur.is_null() {
                let u = (*cur).usable;
                if !(*cur).released
                    && epoch.saturating_sub((*cur).since) >= min_age
                    && done + u <= budget
                {
                    if os::release((*cur).data, u) {
                        (*cur).released = true;
                        (*cur).zero = true;
                        done += u;
                    }
                    calls += 1;
                }
                cur = (*cur).next;
            }
        }
        (done, calls)
    })
}

/// The pool's idle decay, if due: releases the pages of every pooled map
/// unused for at least 7/8 of `decay` ms (as a heap's decay pass does).
pub(crate) fn decay(now: u64, decay: u64) {
    if now < POOL_DUE.load(Ordering::Relaxed) {
        return;
    }
    let age = decay::decay_age(decay);
    let (bytes, calls) = POOL.with(|p| {
        if now < p.due {
            return (0, 0); // another thread ran it
        }
        let (mut bytes, mut calls) = (0u64, 0u64);
        let mut next = NEVER;
        let mut cur = p.head;
        // SAFETY: pool entries are live headers, followed under the pool lock.
        unsafe {
            while !cur.is_null() {
                if !(*cur).released {
                    let ms = (*cur).since_ms;
                    if decay::is_aged(now, ms, age) {
                        calls += 1;
                        if os::release((*cur).data, (*cur).usable) {
                            (*cur).released = true;
                            (*cur).zero = true;
                            bytes += (*cur).usable as u64;
                        }
                    } else {
                        let a = ((now as u32).wrapping_sub(ms) as i32).max(0) as u64;
                        next = next.min(now + age.saturating_sub(a));
                    }
                }
                cur = (*cur).next;
            }
        }
        p.last = now;
        p.due = if next == NEVER {
            NEVER
        } else {
            next.max(now + decay::pool_step(decay))
        };
        POOL_DUE.store(p.due, Ordering::Relaxed);
        (bytes, calls)
    });
    let g = global();
    g.released.fetch_add(bytes, Ordering::Relaxed);
    g.madvise_calls.fetch_add(calls, Ordering::Relaxed);
}

/// Bytes held by the pool.
pub(crate) fn pool_bytes() -> usize {
    POOL.with(|p| p.bytes)
}

/// The decay thread (Linux with `std`): a program that stops allocating
/// would otherwise keep its pooled maps, and the heaps its exited threads
/// left, until some later slow path, and a live thread that allocates only
/// from its fast path would reach its next check late (`nudge.rs`). It
/// starts with the first map pooled, or at the first slow-path check that
/// sees a decay deadline pending, while decay is on (once per process;
/// never in a forked child of a process that started one, whose slow paths
/// decay as before: the child of a threaded program may run only
/// async-signal-safe code until it `exec`s, and creating a thread is not),
/// sleeps until the pool's pass, the sweep of abandoned heaps or the nudge
/// of live ones is due, and runs them (the first two as a slow path would,
/// each taking its own lock or borrows; the nudge only zeroes counts). It
/// never allocates, blocks every signal, and a thread that cannot be
/// created (or `Options::decay_thread` off) leaves the slow paths to do
/// the work.
#[cfg(all(feature = "std", target_os = "linux", not(miri), not(keel_loom)))]
pub(crate) mod thread {
    use super::{NEVER, POOL_DUE};
    use crate::os;
    use crate::sync::plain::{AtomicU32, Ordering};
    use core::ffi::c_void;
    use core::ptr;

    /// The process whose decay thread runs (0: none started). A forked
    /// child inherits its parent's pid here, so it never starts one.
    static OWNER: AtomicU32 = AtomicU32::new(0);
    /// Bumped when a deadline comes nearer while the thread may sleep.
    static WAKE: AtomicU32 = AtomicU32::new(0);

    /// Starts the thread if none was started in this process or, before a
    /// `fork`, in its parent.
    pub(crate) fn ensure_started() {
        if OWNER.load(Ordering::Relaxed) != 0 {
            return;
        }
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u32;
        if OWNER
            .compare_exchange(0, pid, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // SAFETY: all-signals-blocked while creating, so the thread starts
        // with them blocked (it must not run the program's handlers); the
        // caller's mask is restored right after. The attribute object is
        // ours, the entry point never unwinds.
        unsafe {
            let mut all: libc::sigset_t = core::mem::zeroed();
            let mut old: libc::sigset_t = core::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let mut attr: libc::pthread_attr_t = core::mem::zeroed();
            libc::pthread_attr_init(&mut attr);
            libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
            // Its frames are a few hundred bytes: 64 KiB, not the 8 MiB default.
            libc::pthread_attr_setstacksize(&mut attr, 64 << 10);
            let mut t: libc::pthread_t = 0;
            if libc::pthread_create(&mut t, &attr, run, ptr::null_mut()) == 0 {
                libc::pthread_setname_np(t, c"keel-decay".as_ptr());
            }
            libc::pthread_attr_destroy(&mut attr);
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut());
        }
    }

    /// Tells a sleeping thread that a deadline came nearer (a syscall only
    /// when one was started).
    pub(crate) fn wake() {
        if OWNER.load(Ordering::Relaxed) == 0 {
            return;
        }
        WAKE.fetch_add(1, Ordering::Release);
        // SAFETY: a futex wake on a word we own; no memory is touched.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                WAKE.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            );
        }
    }

    /// The earliest deadline of the pool's pass, the abandoned sweep and
    /// the live heaps' nudge.
    fn next_due(decay: u64) -> u64 {
        POOL_DUE
            .load(Ordering::Relaxed)
            .min(crate::decay::abandoned_sweep_at(decay))
            .min(crate::nudge::board_due())
    }

    extern "C" fn run(_: *mut c_void) -> *mut c_void {
        loop {
            let seen = WAKE.load(Ordering::Acquire);
            // Off (decay or the thread): sleep until `configure` wakes it.
            let decay = if crate::options::decay_thread_on() {
                crate::options::options_decay_ms()
            } else {
                0
            };
            let now = os::now_ms();
            let due = next_due(decay);
            if decay != 0 && due <= now {
                super::decay(now, decay);
                crate::gc::sweep_abandoned(now, decay);
                crate::nudge::nudge_live(now, decay);
                if next_due(decay) <= now {
                    // The passes set no later deadline (another thread
                    // raced them): look again after a step.
                    sleep(seen, crate::decay::pool_step(decay));
                }
                continue;
            }
            if decay == 0 || due == NEVER {
                sleep(seen, 0);
            } else {
                // The coarse clock ticks every few ms: wake just after it.
                sleep(seen, due - now + 4);
            }
        }
    }

    /// Waits until [`wake`] bumps the word past `seen`, or `ms` pass (0:
    /// no time limit).
    fn sleep(seen: u32, ms: u64) {
        let ts = libc::timespec {
            tv_sec: (ms / 1000) as libc::time_t,
            tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
        };
        let timeout: *const libc::timespec = if ms == 0 { ptr::null() } else { &ts };
        // SAFETY: a futex wait on a word we own, with a timespec on our
        // stack; it returns early on a wake, a signal or a changed word.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                WAKE.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                seen,
                timeout,
            );
        }
    }
}

/// Without the decay thread, the slow paths do all the work.
#[cfg(not(all(feature = "std", target_os = "linux", not(miri), not(keel_loom))))]
pub(crate) mod thread {
    pub(crate) fn ensure_started() {}
    pub(crate) fn wake() {}
}
