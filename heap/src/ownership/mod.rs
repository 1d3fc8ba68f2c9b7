//! Who owns a heap, and the registry of every heap. The protocol (states,
//! transitions, orderings and who may touch what) is in `README.md` beside
//! this file; the loom models in `loom_models.rs` check it.
//!
//! A leaf: it knows registrations, not heaps. Every heap embeds a
//! [`Registration`] as its first field, so the registry's entries are heaps.

use crate::sync::plain::{self, Ordering as POrd};
use crate::sync::{AtomicU8, Ordering};
use core::ptr;

pub(crate) const OWNED: u8 = 1;
pub(crate) const ABANDONED: u8 = 2;
pub(crate) const BORROWED: u8 = 3;

/// The ownership word of a heap (see `README.md` beside this file).
pub(crate) struct Ownership {
    state: AtomicU8,
}

impl Ownership {
    #[inline]
    pub(crate) fn new_owned() -> Self {
        Ownership {
            state: AtomicU8::new(OWNED),
        }
    }

    /// Gives the heap up; everything the owner did before is visible to the
    /// next adopter.
    #[inline]
    pub(crate) fn abandon(&self) {
        self.state.store(ABANDONED, Ordering::Release);
    }

    /// Claims an abandoned heap.
    #[inline]
    pub(crate) fn try_adopt(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ABANDONED
            && self
                .state
                .compare_exchange(ABANDONED, OWNED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Whether the heap has no owner (abandoned, or borrowed for a moment).
    #[inline]
    pub(crate) fn is_abandoned(&self) -> bool {
        self.state.load(Ordering::Relaxed) != OWNED
    }

    /// Whether a borrow is under way (it ends shortly).
    #[inline]
    pub(crate) fn is_borrowed(&self) -> bool {
        self.state.load(Ordering::Relaxed) == BORROWED
    }

    /// Borrows an abandoned heap for a short operation; everything the
    /// previous owner or borrower did is visible.
    #[inline]
    pub(crate) fn try_borrow(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ABANDONED
            && self
                .state
                .compare_exchange(ABANDONED, BORROWED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Ends a borrow: the heap is abandoned again, with the borrower's
    /// writes visible to the next adopter or borrower.
    #[inline]
    pub(crate) fn end_borrow(&self) {
        self.state.store(ABANDONED, Ordering::Release);
    }
}

/// A heap's entry in the registry: its ownership word and the link to the
/// heap registered before it.
pub(crate) struct Registration {
    pub(crate) ownership: Ownership,
    next: plain::AtomicPtr<Registration>,
}

impl Registration {
    /// The registration of a new heap, owned by its creator.
    pub(crate) fn new_owned() -> Self {
        Registration {
            ownership: Ownership::new_owned(),
            next: plain::AtomicPtr::new(ptr::null_mut()),
        }
    }
}

/// Every registration, newest first (append-only, lock-free: heaps are
/// never unmapped, so an entry stays valid for the life of the process).
static HEAPS: plain::AtomicPtr<Registration> = plain::AtomicPtr::new(ptr::null_mut());

/// Publishes `r` (a fresh heap's, written in full before this call: the
/// release CAS makes it visible to every walk that finds it).
///
/// # Safety
/// `r` is valid for the rest of the process and not registered yet.
pub(crate) unsafe fn register(r: *mut Registration) {
    let mut head = HEAPS.load(POrd::Relaxed);
    loop {
        // SAFETY: `r` is ours until the CAS publishes it.
        unsafe { (*r).next.store(head, POrd::Relaxed) };
        match HEAPS.compare_exchange_weak(head, r, POrd::Release, POrd::Relaxed) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

/// Calls `f` on every registration with whether its heap has no owner.
pub(crate) fn for_each(mut f: impl FnMut(*const Registration, bool)) {
    let mut r = HEAPS.load(POrd::Acquire);
    while !r.is_null() {
        // SAFETY: registrations are never freed and `next` is set before
        // publication.
        unsafe {
            f(r, (*r).ownership.is_abandoned());
            r = (*r).next.load(POrd::Acquire);
        }
    }
}
