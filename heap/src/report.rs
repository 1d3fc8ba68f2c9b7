//! The free mark and the reports of misuse: one line on stderr (formatted
//! into a stack buffer, never allocating) and, for a double or interior
//! free or a broken heap, an abort.

use crate::error::{BadPointer, InvalidHeap};
use crate::locate::Bad;
use crate::os;
use crate::sync::plain::{AtomicU64, Ordering};
use crate::writer::StackWriter;
use core::fmt::Write as _;

/// The free key: a random odd word, set once before the first heap exists,
/// that every free small block carries: xor-ed into its free-list link (its
/// first word) on a slab's list, or as the foreign mark (its second word)
/// on a foreign list. See `free::encode_link` and `HeapCore::free_local_in`.
static FREE_KEY: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
pub(crate) fn free_key() -> u64 {
    FREE_KEY.load(Ordering::Relaxed)
}

/// Sets the free mark once (before any block exists; racing first heaps
/// agree on one value).
pub(crate) fn init_free_key() {
    if FREE_KEY.load(Ordering::Relaxed) == 0 {
        // Never 0 (a fresh page's word) and odd (no aligned pointer).
        let k = os::random_u64() | 1;
        let _ = FREE_KEY.compare_exchange(0, k, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Whether every free is looked up in full (the checker: debug builds, or
/// [`Options::checker`](crate::Options::checker)).
#[inline(always)]
pub(crate) fn full_checks() -> bool {
    cfg!(debug_assertions) || crate::options::checker_on()
}

/// Reports a double free or an interior pointer and ends the process.
#[cold]
#[inline(never)]
pub(crate) fn report_fatal(e: Bad) -> ! {
    report_bad_free(e);
    // A foreign pointer is no fatal error: callers never pass one.
    abort()
}

/// Reports a bad free. A double free or an interior pointer is one line on
/// stderr and an abort, in every build: going on would hand the block out
/// twice. A pointer keel-heap does not own is ignored (the safe choice for
/// a C `free` of memory that is not ours), with a line when the checker is
/// on.
#[cold]
pub(crate) fn report_bad_free(e: Bad) {
    // SAFETY: reported where it was found, nothing changed since.
    let e = unsafe { e.describe() };
    let mut w = StackWriter::<160>::new();
    match e {
        BadPointer::Foreign(_) => {
            if full_checks() {
                let _ = writeln!(w, "keel-heap: {e}; ignored");
                w.write_to_stderr();
            }
        }
        _ => {
            let _ = writeln!(w, "keel-heap: {e}");
            w.write_to_stderr();
            abort();
        }
    }
}

/// Reports a free block that lost its free mark (found when it was about
/// to be handed out, or when its empty slab was checked) and ends the
/// process: it was freed twice, or written after it was freed.
#[cold]
#[inline(never)]
pub(crate) fn report_changed(p: *mut u8) -> ! {
    let mut w = StackWriter::<160>::new();
    let _ = writeln!(
        w,
        "keel-heap: free block at {:#x} was changed: double free or write after free",
        p.addr()
    );
    w.write_to_stderr();
    abort()
}

#[cold]
pub(crate) fn report_invalid(e: InvalidHeap) -> ! {
    let mut w = StackWriter::<160>::new();
    let _ = writeln!(w, "keel-heap: {e}");
    w.write_to_stderr();
    abort();
}

fn abort() -> ! {
    os::abort()
}
