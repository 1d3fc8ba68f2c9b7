//! loom models of the lock-free protocols: the foreign list (two threads
//! push onto two lanes, two of the pushes onto one, while the owner
//! drains), abandon/adopt (the adopter sees the
//! previous owner's writes and recovers every foreign free pushed meanwhile;
//! two adopters racing, one of them `release_pages` abandoning it again;
//! the sweep borrowing an abandoned heap; a free racing an owner's exit or
//! landing in a borrowed heap never left with no sweep due), the owner's
//! read of a waiting
//! block's foreign mark, and the decay thread's nudge of a live heap
//! (never lost for good).
//! Run with `ci/loom.sh` (`--cfg keel_loom`, release, 2 preemptions).

use crate::foreign::{ForeignList, LANES};
use crate::ownership::Ownership;
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

/// The lane a model pushes `node` to: its id's, so that the models are
/// deterministic (the heap hashes the address) and nodes 0 and 1 take
/// different lanes.
fn lane_of_node(node: *mut u8) -> usize {
    // SAFETY: every node of the models is one of `nodes`' boxed `Node`s,
    // read here by the thread that holds it.
    unsafe { (*node.cast::<Node>()).id % LANES }
}

/// One node, on the last lane (the lane 0 of most other models' first
/// node would leave a check that reads lane 0 alone unexercised).
fn last_lane_node() -> Vec<*mut u8> {
    vec![
        Box::into_raw(Box::new(Node {
            link: core::ptr::null_mut(),
            id: LANES - 1,
        }))
        .cast::<u8>(),
    ]
}

/// Walks the chains from `take_all`, returning the ids seen.
fn drain(list: &ForeignList, seen: &mut Vec<usize>) {
    for (lane, &chain) in list.take_all().iter().enumerate() {
        let mut n = chain;
        while !n.is_null() {
            // SAFETY: nodes in a drained chain are our boxed `Node`s.
            unsafe {
                let next = ForeignList::next(n);
                assert_eq!(lane_of_node(n), lane, "a node drained from another lane");
                seen.push((*n.cast::<Node>()).id);
                drop(Box::from_raw(n.cast::<Node>()));
                n = next;
            }
        }
    }
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
                    unsafe { l.push_lane(p.0, lane_of_node(p.0)) };
                }
            }));
        }
        let mut seen = Vec::new();
        // Lets the pushers run first too: without a yield here loom
        // explored only the order in which this drain finds the list empty
        // (58 executions, every first drain empty; with it 756, the first
        // drain finding 0, 1, 2 or 3 nodes).
        thread::yield_now();
        drain(&list, &mut seen);
        for h in hs {
            h.join().unwrap();
        }
        drain(&list, &mut seen);
        seen.sort();
        assert_eq!(seen, vec![0, 1, 2], "every push drained exactly once");
    });
}

/// The owner's check for a medium block waiting on its foreign list
/// (`HeapCore::free_medium`): a freer writes the block's foreign mark, then
/// pushes it; the owner reads the mark only when `waiting_in` says a block
/// waits on its lane, and then sees it (loom's cell reports a read unordered with the
/// write, as it would with a relaxed `waiting`).
#[test]
fn loom_owner_sees_the_mark_of_a_waiting_block() {
    loom::model(|| {
        let list = Arc::new(ForeignList::new());
        let mark = Arc::new(UnsafeCell::new(0u64));
        let ns = nodes(1);
        let freer = {
            let (l, m) = (list.clone(), mark.clone());
            let p = SendPtr(ns[0]);
            thread::spawn(move || {
                // SAFETY: the freer's write before its push, as in
                // `mark_foreign_free`; the owner reads it only after.
                m.with_mut(|v| unsafe { *v = 7 });
                // SAFETY: pushed once and not touched again.
                unsafe { l.push_lane(p.0, lane_of_node(p.0)) };
            })
        };
        // Lets the freer run first too: without a yield here loom explored
        // only the owner-first order (a relaxed `waiting_in` passed).
        thread::yield_now();
        if list.waiting_in(lane_of_node(ns[0])) {
            // SAFETY: ordered after the freer's write by `waiting_in`.
            let v = mark.with(|v| unsafe { *v });
            assert_eq!(v, 7, "a waiting block's mark must be seen");
        }
        freer.join().unwrap();
        let mut seen = Vec::new();
        drain(&list, &mut seen);
        assert_eq!(seen, vec![0]);
    });
}

struct HeapModel {
    ownership: Ownership,
    foreign: ForeignList,
    /// Stands in for the heap's owner-only local state.
    local: UnsafeCell<usize>,
}

impl HeapModel {
    /// A model heap owned by its creator, its local count 0.
    fn owned() -> Arc<HeapModel> {
        Arc::new(HeapModel {
            ownership: Ownership::new_owned(),
            foreign: ForeignList::new(),
            local: UnsafeCell::new(0),
        })
    }
}

// SAFETY: `local` is only touched by whoever owns the model heap.
unsafe impl Sync for HeapModel {}
// SAFETY: as above.
unsafe impl Send for HeapModel {}

#[test]
fn loom_abandon_then_adopt_sees_owner_state_and_foreign_frees() {
    loom::model(|| {
        let h = HeapModel::owned();
        let ns = nodes(2);
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
        // Another thread frees a block of this heap, whatever its state.
        let pusher = {
            let h = h.clone();
            let p = SendPtr(ns[0]);
            // SAFETY: each node is pushed once and not touched again.
            thread::spawn(move || unsafe { h.foreign.push_lane(p.0, lane_of_node(p.0)) })
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
                    h.ownership.abandon();
                }
                seen
            })
        };
        // SAFETY: pushed once.
        unsafe { h.foreign.push_lane(ns[1], lane_of_node(ns[1])) };
        owner.join().unwrap();
        pusher.join().unwrap();
        let mut seen = adopter.join().unwrap();
        // Whoever adopts last gets the rest.
        assert!(h.ownership.try_adopt(), "heap is abandoned at the end");
        drain(&h.foreign, &mut seen);
        seen.sort();
        assert_eq!(seen, vec![0, 1]);
    });
}

/// Two threads race for one abandoned heap while a third frees into it: a new
/// thread's `acquire` (adopts and keeps the heap) and `raw::release_pages`
/// (borrows, collects, gives back). Whoever wins owns the local state
/// alone (loom's cell reports any unordered access), the heap is never owned
/// twice, and the pending free is drained exactly once by some owner.
#[test]
fn loom_two_adopters_race_and_release_pages_abandons_again() {
    loom::model(|| {
        let h = HeapModel::owned();
        // The first owner exits.
        h.local.with_mut(|v| {
            // SAFETY: still the owner here.
            unsafe { *v = 1 }
        });
        h.ownership.abandon();
        let ns = nodes(1);
        let owner_work = |h: &HeapModel, seen: &mut Vec<usize>| {
            // SAFETY: called only after a successful `try_adopt`, so this
            // thread owns `local` until it abandons the heap (or forever).
            h.local.with_mut(|v| unsafe { *v += 1 });
            drain(&h.foreign, seen);
        };
        // A new thread adopts the heap and keeps it.
        let newcomer = {
            let h = h.clone();
            thread::spawn(move || {
                let mut seen = Vec::new();
                let adopted = h.ownership.try_adopt();
                if adopted {
                    owner_work(&h, &mut seen);
                }
                (adopted, seen)
            })
        };
        // release_pages: borrow, collect, give back.
        let releaser = {
            let h = h.clone();
            thread::spawn(move || {
                let mut seen = Vec::new();
                let adopted = h.ownership.try_borrow();
                if adopted {
                    owner_work(&h, &mut seen);
                    h.ownership.end_borrow();
                }
                (adopted, seen)
            })
        };
        let pusher = {
            let h = h.clone();
            let p = SendPtr(ns[0]);
            // SAFETY: the node is pushed once and not touched again.
            thread::spawn(move || unsafe { h.foreign.push_lane(p.0, lane_of_node(p.0)) })
        };
        let (kept, mut seen) = newcomer.join().unwrap();
        let (released, seen2) = releaser.join().unwrap();
        pusher.join().unwrap();
        seen.extend(seen2);
        // The newcomer's ownership passes to us through the join; otherwise
        // the heap must be abandoned now.
        assert!(kept || h.ownership.try_adopt(), "heap left owned by nobody");
        if kept {
            assert!(!h.ownership.is_abandoned(), "kept heap shows abandoned");
        }
        drain(&h.foreign, &mut seen);
        assert_eq!(seen, vec![0], "the pending free drained exactly once");
        let adoptions = 1 + kept as usize + released as usize;
        // SAFETY: every other thread has been joined.
        let v = h.local.with(|v| unsafe { *v });
        assert_eq!(v, adoptions, "an owner's work was lost or doubled");
    });
}

/// The sweep of abandoned heaps borrows one to drain it while a new
/// thread's `acquire` waits out the borrow and adopts the heap, and a free
/// (`free_unowned`, the shipped order) lands in it meanwhile. The local
/// state is only ever touched by one thread at a time (loom's cell reports
/// any unordered access), every free is drained exactly once, and the
/// waiting adopter gets the heap.
#[test]
fn loom_sweep_borrows_an_abandoned_heap_while_a_newcomer_adopts_it() {
    loom::model(|| {
        let h = HeapModel::owned();
        h.ownership.abandon();
        let ns = nodes(2);
        // The sweep: borrows the heap, drains it, lets it go.
        let sweeper = {
            let h = h.clone();
            thread::spawn(move || {
                if h.ownership.try_borrow() {
                    drain_count(&h);
                    crate::ownership::let_go(&h.ownership, &h.foreign, true);
                }
            })
        };
        let freer = spawn_free_unowned(&h, ns[0]);
        // A block freed before the newcomer looked.
        free_unowned(&h, ns[1]);
        // The newcomer: adopt, waiting out borrows (bounded, as `acquire`).
        let mut adopted = false;
        for _ in 0..4 {
            if h.ownership.try_adopt() {
                adopted = true;
                break;
            }
            if !h.ownership.is_borrowed() {
                break;
            }
            crate::sync::spin_wait();
        }
        if adopted {
            drain_count(&h);
        }
        sweeper.join().unwrap();
        freer.join().unwrap();
        // Whoever owns it now drains what is left.
        assert!(adopted || h.ownership.try_adopt(), "heap left owned");
        drain_count(&h);
        // SAFETY: every other thread has been joined; we own the heap.
        let v = h.local.with(|v| unsafe { *v });
        assert_eq!(v, 2, "a free was lost or applied twice");
    });
}

/// A free from a thread that does not own the model heap, as
/// `HeapCore::free_other` makes it: into a heap with no owner, a push and
/// the sweep made due; into an owned one, `push_to_owned`.
fn free_unowned(h: &HeapModel, node: *mut u8) {
    if h.ownership.is_abandoned() {
        // SAFETY: pushed once, not touched again.
        unsafe { h.foreign.push_lane(node, lane_of_node(node)) };
        crate::decay::note_abandoned_foreign();
    } else {
        // SAFETY: as above.
        unsafe {
            crate::ownership::push_to_owned_lane(&h.ownership, &h.foreign, node, lane_of_node(node))
        };
    }
}

/// A thread that frees `node` into the model heap as `free_unowned` does.
fn spawn_free_unowned(h: &Arc<HeapModel>, node: *mut u8) -> thread::JoinHandle<()> {
    let h = h.clone();
    let p = SendPtr(node);
    thread::spawn(move || {
        let p = p;
        free_unowned(&h, p.0)
    })
}

/// No free waits on a let-go heap's foreign list without the sweep of
/// abandoned heaps due (which then borrows the heap and drains it).
fn assert_not_stranded(h: &HeapModel) {
    let waiting = !h.foreign.is_empty();
    let due = crate::decay::abandoned_due();
    assert!(
        !waiting || due != crate::decay::NEVER,
        "a free waits on an abandoned heap with no sweep due"
    );
}

/// A free that finds the heap owned races its owner's exit (`abandon`: a
/// last drain, then `let_go`). Either the owner drains the block, or the
/// sweep of abandoned heaps is due when it is done (the freer's check of
/// the state after its push, or the owner's check of the list after its
/// store). Without both checks the block can wait on the list of a heap
/// nobody owns, with no sweep due.
#[test]
fn loom_free_racing_abandon_leaves_the_sweep_due() {
    loom::model(|| {
        let h = HeapModel::owned();
        let ns = last_lane_node();
        let freer = spawn_free_unowned(&h, ns[0]);
        // The owner's exit.
        drain_count(&h);
        crate::ownership::let_go(&h.ownership, &h.foreign, false);
        freer.join().unwrap();
        assert_not_stranded(&h);
        assert!(h.ownership.try_adopt());
        drain_count(&h);
        // SAFETY: every other thread has been joined; we own the heap.
        assert_eq!(h.local.with(|v| unsafe { *v }), 1);
    });
}

/// A free into a heap that another thread has borrowed (`release_pages`,
/// a statistics snapshot) makes the sweep due; the sweep takes the flag,
/// finds the heap borrowed and skips it. The borrower's `let_go` reads the
/// list after it ends the borrow and makes the sweep due again, so the
/// block is never left with no sweep due; and a sweep that took the flag
/// after the borrow ended borrows the heap itself.
#[test]
fn loom_free_into_a_borrowed_heap_is_swept() {
    loom::model(|| {
        let h = HeapModel::owned();
        h.ownership.abandon();
        let ns = last_lane_node();
        let borrow = |h: &HeapModel| {
            if h.ownership.try_borrow() {
                drain_count(h);
                crate::ownership::let_go(&h.ownership, &h.foreign, true);
            }
        };
        let borrower = {
            let h = h.clone();
            thread::spawn(move || borrow(&h))
        };
        let freer = spawn_free_unowned(&h, ns[0]);
        // The sweep, from some heap's slow path (its clock at 1 ms).
        let sweeper = {
            let h = h.clone();
            thread::spawn(move || {
                if crate::decay::take_abandoned_due(1) {
                    borrow(&h);
                }
            })
        };
        borrower.join().unwrap();
        freer.join().unwrap();
        sweeper.join().unwrap();
        assert_not_stranded(&h);
        assert!(h.ownership.try_adopt());
        drain_count(&h);
        // SAFETY: every other thread has been joined; we own the heap.
        assert_eq!(h.local.with(|v| unsafe { *v }), 1);
    });
}

/// Drains the model heap's foreign list into its local count (owner or
/// borrower only).
fn drain_count(h: &HeapModel) {
    let mut seen = Vec::new();
    drain(&h.foreign, &mut seen);
    // SAFETY: the caller owns or borrowed the heap.
    h.local.with_mut(|v| unsafe { *v += seen.len() });
}

/// The decay thread's nudge (`nudge.rs`) against an owner that publishes a
/// deadline and goes on allocating from its fast path. Whatever the
/// interleaving, the nudge is never lost for good: either it stands (the
/// owner's count says its check is due) or the board holds a deadline by
/// which the decay thread comes back (the published one, or its retry).
/// With the board's fold and take `Relaxed`, the decay thread can take the
/// board yet read the deadline from before the publish, skip the heap and
/// leave nothing on the board: this model fails. So it does without the
/// retry (a nudge stored between the owner's load and store is lost).
#[test]
fn loom_nudge_is_never_lost() {
    use crate::decay::NEVER;
    use crate::nudge::{Nudge, nudge};
    use crate::sync::{AtomicU64, Ordering};
    loom::model(|| {
        let board = Arc::new(AtomicU64::new(NEVER));
        let n = Arc::new(Nudge::new());
        n.rearm(100);
        let owner = {
            let (board, n) = (board.clone(), n.clone());
            thread::spawn(move || {
                n.publish(&board, 5);
                // Two fast-path allocations, each a load and a store.
                n.tick();
                n.tick();
            })
        };
        nudge(&board, 10, 1, |f| f(&n));
        owner.join().unwrap();
        assert!(
            board.load(Ordering::Relaxed) <= 11 || n.is_due(),
            "the nudge was lost and nothing brings the decay thread back"
        );
    });
}
