//! The OS layer: the only module that talks to the kernel.
//!
//! `map` returns zeroed, readable and writable memory aligned as asked;
//! `unmap` gives it back; `grow` moves a mapping's pages to the start of a
//! larger aligned one (where the OS can); `release` drops the physical pages of a range while
//! keeping the mapping (the next touch faults in a zero page). Under Miri,
//! which has no `mmap`, the same interface is served by the global allocator
//! so that the rest of the crate runs unchanged.

#[cfg(not(miri))]
mod unix;
#[cfg(not(miri))]
pub(crate) use unix::{
    CAN_GROW, grow, map, map_from, now_ms, page_size, random_u64, release, unmap,
};

#[cfg(miri)]
mod miri;
#[cfg(miri)]
pub(crate) use miri::{
    CAN_GROW, grow, map, map_from, now_ms, page_size, random_u64, release, unmap,
};
pub(crate) mod numa;

// The calls below are the same under Miri, which emulates them.

/// Writes all of `bytes` to `fd` without allocating, retrying on partial
/// writes; gives up if the descriptor is closed or broken.
pub(crate) fn write_all(fd: i32, bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: `rest` is a live initialized byte slice.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// Gives the CPU to another thread (a wait for a borrow that may outlast a
/// spin: its holder may be descheduled; Miri's scheduler switches on it).
pub(crate) fn yield_now() {
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
}

/// Ends the process at once (a misuse that would corrupt memory).
pub(crate) fn abort() -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}
#[cfg(feature = "std")]
pub(crate) mod tls;
