//! loom models of the lock-free protocols: the foreign list (two threads
//! push while the owner drains), a slab's foreign list with the notify map
//! (two threads push into one slab while the owner collects it, and no
//! pushed block is ever left unannounced), and abandon/adopt (the adopter
//! sees the previous owner's writes and recovers every foreign free pushed
//! meanwhile, on the heap's list and on a slab's).
//! Run with `ci/loom.sh` (`--cfg keel_loom`, release, 2 preemptions).

use crate::foreign::{CountedList, ForeignList, Notify};
use crate::heap::Ownership;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use std::boxed::Box;
use std::vec;
use std::vec::Vec;

/// A node shaped like a freed block: its first word is the link.
#[repr(C, align(16))]
struct Node {
    link: *mut u8,
    id: usize,
}

fn nodes(n: usize) -> Vec<*mut u8> {
    (0..n)
        .map(|id| {
            Box::into_raw(Box::new(Node {
                link: core::ptr::null_mut(),
                id,
            }))
            .cast::<u8>()
        })
        .collect()
}

/// Walks a chain from `take_all`, returning the ids seen.
fn drain(list: &ForeignList, seen: &mut Vec<usize>) {
    let mut n = list.take_all();
    while !n.is_null() {
        // SAFETY: nodes in a drained chain are our boxed `Node`s.
        unsafe {
            let next = ForeignList::next(n);
            seen.push((*n.cast::<Node>()).id);
            drop(Box::from_raw(n.cast::<Node>()));
            n = next;
        }
    }
}

/// Takes a slab's list as the owner does, checking its count against its
/// nodes, and returns the ids seen.
fn collect(list: &CountedList, seen: &mut Vec<usize>) {
    let (mut n, count) = list.take_all();
    let mut walked = 0;
    while !n.is_null() {
        // SAFETY: nodes in a taken chain are our boxed `Node`s.
        unsafe {
            let next = ForeignList::next(n);
            seen.push((*n.cast::<Node>()).id);
            drop(Box::from_raw(n.cast::<Node>()));
            n = next;
        }
        walked += 1;
    }
    assert_eq!(walked, count, "the list's count matches its nodes");
}

/// Frees a node as another thread frees a small block: onto the slab's list,
/// raising the slab's bit (region key 0, slot 1) when the list was empty.
///
/// # Safety
/// `p` is pushed once and not touched again.
unsafe fn free_remote(slab: &CountedList, notify: &Notify<1>, p: *mut u8) {
    // SAFETY: forwarded.
    if unsafe { slab.push(p) } {
        notify.raise(0, 1);
    }
}

/// Whether the notify map has the model slab's bit raised (taking it).
fn notified(notify: &Notify<1>) -> bool {
    let mut w = [0u64; 1];
    notify.take(&mut w) && w[0] == 1 << 1
}

struct SendPtr(*mut u8);
// SAFETY: the node is handed to exactly one pusher.
unsafe impl Send for SendPtr {}

#[test]
fn loom_foreign_list_two_pushers_one_draining_owner() {
    loom::model(|| {
        let list = Arc::new(ForeignList::new());
        let ns = nodes(3);
        let mut hs = Vec::new();
        for chunk in [vec![SendPtr(ns[0]), SendPtr(ns[1])], vec![SendPtr(ns[2])]] {
            let l = list.clone();
            hs.push(thread::spawn(move || {
                for p in chunk {
                    // SAFETY: each node is pushed once and not touched again.
                    unsafe { l.push(p.0) };
                }
            }));
        }
        let mut seen = Vec::new();
        drain(&list, &mut seen);
        for h in hs {
            h.join().unwrap();
        }
        drain(&list, &mut seen);
        seen.sort();
        assert_eq!(seen, vec![0, 1, 2], "every push drained exactly once");
    });
}

#[test]
fn loom_slab_list_two_pushers_owner_collects_nothing_unannounced() {
    loom::model(|| {
        let slab = Arc::new(CountedList::new());
        let notify = Arc::new(Notify::<1>::new());
        let ns = nodes(3);
        let mut hs = Vec::new();
        for chunk in [vec![SendPtr(ns[0]), SendPtr(ns[1])], vec![SendPtr(ns[2])]] {
            let (s, n) = (slab.clone(), notify.clone());
            hs.push(thread::spawn(move || {
                for p in chunk {
                    // SAFETY: each node is pushed once and not touched again.
                    unsafe { free_remote(&s, &n, p.0) };
                }
            }));
        }
        // The owner: the slab's local list runs out while it is on the bin
        // (collect whatever is there), then the slab is full and off the bin,
        // so it collects only when notified.
        let mut seen = Vec::new();
        collect(&slab, &mut seen);
        if notified(&notify) {
            collect(&slab, &mut seen);
        }
        for h in hs {
            h.join().unwrap();
        }
        // Every block still waiting was announced after the owner last looked.
        let raised = notified(&notify);
        assert!(
            slab.is_empty() || raised,
            "a foreign free waits on a slab nobody announced"
        );
        collect(&slab, &mut seen);
        seen.sort();
        assert_eq!(seen, vec![0, 1, 2], "every push collected exactly once");
    });
}

struct HeapModel {
    ownership: Ownership,
    foreign: ForeignList,
    /// One slab's foreign list and the heap's notify map.
    slab: CountedList,
    notify: Notify<1>,
    /// Stands in for the heap's owner-only local state.
    local: UnsafeCell<usize>,
}

// SAFETY: `local` is only touched by whoever owns the model heap.
unsafe impl Sync for HeapModel {}
// SAFETY: as above.
unsafe impl Send for HeapModel {}

#[test]
fn loom_abandon_then_adopt_sees_owner_state_and_foreign_frees() {
    loom::model(|| {
        let h = Arc::new(HeapModel {
            ownership: Ownership::new_owned(),
            foreign: ForeignList::new(),
            slab: CountedList::new(),
            notify: Notify::new(),
            local: UnsafeCell::new(0),
        });
        let ns = nodes(4);
        // The owner works on its local state, then exits.
        let owner = {
            let h = h.clone();
            thread::spawn(move || {
                // SAFETY: the owner is the only thread touching `local` until
                // it abandons the heap (the property this model checks).
                h.local.with_mut(|v| unsafe { *v = 42 });
                h.ownership.abandon();
            })
        };
        // Another thread frees a medium block and a small block (of a full
        // slab) of this heap, whatever its state.
        let pusher = {
            let h = h.clone();
            let (p, q) = (SendPtr(ns[0]), SendPtr(ns[2]));
            thread::spawn(move || {
                // SAFETY: each node is pushed once and not touched again.
                unsafe {
                    h.foreign.push(p.0);
                    free_remote(&h.slab, &h.notify, q.0);
                }
            })
        };
        // A new thread tries to adopt it.
        let adopter = {
            let h = h.clone();
            thread::spawn(move || {
                let mut seen = Vec::new();
                if h.ownership.try_adopt() {
                    // SAFETY: adoption succeeded, so this thread now owns
                    // `local` and the previous owner has abandoned it.
                    let v = h.local.with(|v| unsafe { *v });
                    assert_eq!(v, 42, "adopter must see the previous owner's writes");
                    drain(&h.foreign, &mut seen);
                    if notified(&h.notify) {
                        collect(&h.slab, &mut seen);
                    }
                    h.ownership.abandon();
                }
                seen
            })
        };
        // SAFETY: pushed once.
        unsafe {
            h.foreign.push(ns[1]);
            free_remote(&h.slab, &h.notify, ns[3]);
        }
        owner.join().unwrap();
        pusher.join().unwrap();
        let mut seen = adopter.join().unwrap();
        // Whoever adopts last gets the rest.
        assert!(h.ownership.try_adopt(), "heap is abandoned at the end");
        drain(&h.foreign, &mut seen);
        let raised = notified(&h.notify);
        assert!(
            h.slab.is_empty() || raised,
            "a foreign free waits on a slab nobody announced"
        );
        collect(&h.slab, &mut seen);
        seen.sort();
        assert_eq!(seen, vec![0, 1, 2, 3]);
    });
}
