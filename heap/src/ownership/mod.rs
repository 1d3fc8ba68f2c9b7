//! Who owns a heap, and the registry of every heap. The protocol (states,
//! transitions, orderings and who may touch what) is in `README.md` beside
//! this file; the loom models in `loom_models.rs` check it.
//!
//! A leaf: it knows registrations, not heaps. Every heap embeds a
//! [`Registration`] as its first field, so the registry's entries are heaps.

use crate::foreign::ForeignList;
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
    /// next adopter. Sequentially consistent, for [`let_go`]'s check.
    #[inline]
    pub(crate) fn abandon(&self) {
        self.state.store(ABANDONED, Ordering::SeqCst);
        crate::sync::seqcst_pairing();
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

    /// Whether the heap has no owner, read after a push onto its foreign
    /// list ([`push_to_owned`]): sequentially consistent, so that either
    /// this load sees the owner's (or borrower's) let-go or its check of
    /// the list after it sees the push.
    #[inline]
    pub(crate) fn is_abandoned_now(&self) -> bool {
        self.state.load(Ordering::SeqCst) != OWNED
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
        // Sequentially consistent: a sweep that took the due flag a free
        // set after a let-go sees that let-go here (`README.md`).
        self.state.load(Ordering::SeqCst) == ABANDONED
            && self
                .state
                .compare_exchange(ABANDONED, BORROWED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Ends a borrow: the heap is abandoned again, with the borrower's
    /// writes visible to the next adopter or borrower. Sequentially
    /// consistent, for [`let_go`]'s check.
    #[inline]
    pub(crate) fn end_borrow(&self) {
        self.state.store(ABANDONED, Ordering::SeqCst);
        crate::sync::seqcst_pairing();
    }

    /// In a forked child: a heap some thread of the parent had borrowed
    /// (the decay thread's sweep, a statistics snapshot) is taken as owned
    /// by that thread, which does not exist here, as the heaps of the
    /// parent's other threads are: its state may be mid-update, so it is
    /// never adopted or borrowed again, and no `acquire` waits for it.
    #[inline]
    pub(crate) fn orphan_borrow(&self) {
        if self.state.load(Ordering::Relaxed) == BORROWED {
            self.state.store(OWNED, Ordering::Relaxed);
        }
    }
}

/// Pushes `node`, a block of a heap the caller does not own and found
/// owned, onto that heap's foreign list `list`, and makes the sweep of
/// abandoned heaps due if the heap was let go meanwhile: its owner's
/// drain before `abandon` (or a borrower's before `end_borrow`) may have
/// missed the push, and no owner comes to drain it (`README.md`, "Frees
/// into a heap that is not the caller's").
///
/// # Safety
/// As [`ForeignList::push`].
#[inline(always)]
pub(crate) unsafe fn push_to_owned(own: &Ownership, list: &ForeignList, node: *mut u8) {
    // SAFETY: forwarded.
    unsafe { push_to_owned_lane(own, list, node, crate::foreign::lane_of(node)) }
}

/// [`push_to_owned`] onto lane `lane` (the loom models pick it).
///
/// # Safety
/// As [`ForeignList::push_lane`].
#[inline(always)]
pub(crate) unsafe fn push_to_owned_lane(
    own: &Ownership,
    list: &ForeignList,
    node: *mut u8,
    lane: usize,
) {
    // SAFETY: forwarded.
    unsafe { list.push_lane(node, lane) };
    if own.is_abandoned_now() {
        crate::alloc::cold_path();
        crate::decay::note_abandoned_foreign();
    }
}

/// Lets a heap go: its owner abandons it (`borrowed` false) or its
/// borrower ends the borrow; then, if a block waits on its foreign list (a
/// push that raced the drain before this call), makes the sweep due, as
/// a free into a let-go heap does.
#[inline]
pub(crate) fn let_go(own: &Ownership, list: &ForeignList, borrowed: bool) {
    if borrowed {
        own.end_borrow();
    } else {
        own.abandon();
    }
    if list.left_waiting() {
        crate::decay::note_abandoned_foreign();
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

/// In a forked child: every heap a thread of the parent had borrowed is
/// taken as owned by that thread ([`Ownership::orphan_borrow`]).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) fn orphan_borrows() {
    for_each(|r, _| {
        // SAFETY: registrations are never freed.
        unsafe { (*r).ownership.orphan_borrow() }
    });
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

#[cfg(all(test, not(keel_loom)))]
mod tests {
    use super::*;

    /// In a forked child, a heap left borrowed becomes owned by the
    /// borrower that does not exist there: never adopted, borrowed or
    /// waited for again; other states stay as they were.
    #[test]
    fn orphan_borrow_takes_only_a_borrowed_heap() {
        let o = Ownership::new_owned();
        o.orphan_borrow();
        assert!(!o.is_abandoned(), "an owned heap stays owned");
        o.abandon();
        o.orphan_borrow();
        assert!(
            o.is_abandoned() && !o.is_borrowed(),
            "an abandoned heap stays adoptable"
        );
        assert!(o.try_borrow());
        o.orphan_borrow();
        assert!(!o.is_abandoned() && !o.is_borrowed());
        assert!(
            !o.try_adopt() && !o.try_borrow(),
            "an orphaned heap is never taken"
        );
    }
}
