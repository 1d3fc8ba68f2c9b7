//! A worker thread: optionally binds itself, then takes tickets until the
//! pool shuts down.

use crate::Shared;
use crate::sync::{Arc, thread, thread_local};
use std::cell::Cell;

#[cfg(not(keel_loom))]
thread_local! {
    /// The pool (address of its shared state) and index of the worker this
    /// thread is, if it is one.
    static CURRENT: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

// loom's `thread_local!` does not take the `const { .. }` form.
#[cfg(keel_loom)]
thread_local! {
    static CURRENT: Cell<Option<(usize, usize)>> = Cell::new(None);
}

/// Which worker of the pool whose shared state is at `shared` the calling
/// thread is.
pub(crate) fn current_index(shared: &Arc<Shared>) -> Option<usize> {
    let id = Arc::as_ptr(shared) as usize;
    CURRENT
        .with(|c| c.get())
        .and_then(|(p, i)| (p == id).then_some(i))
}

/// What a worker is told at spawn.
pub(crate) struct Start {
    pub(crate) index: usize,
    /// CPUs to bind to, if binding was asked for.
    #[cfg(feature = "topology")]
    pub(crate) bind: Option<keel_topology::CpuSet>,
}

/// The worker's whole life.
pub(crate) fn main(shared: Arc<Shared>, start: Start) {
    let w = start.index;
    #[cfg(all(feature = "topology", not(keel_loom)))]
    if let Some(cpus) = &start.bind {
        let outcome = crate::affinity::bind_current(cpus);
        crate::sync::lock(&shared.binding)[w] = Some(outcome);
    }
    CURRENT.with(|c| c.set(Some((Arc::as_ptr(&shared) as usize, w))));
    let me = thread::current();
    let mut park_cost = std::time::Duration::ZERO;
    while let Some((batch, claimed)) = shared.sleep.next_ticket(w, &me, &mut park_cost) {
        // SAFETY: next_ticket hands out a ticket counted in the batch's
        // latch and not yet released; run_hand releases it.
        unsafe { batch.run_hand(w, claimed, &shared.sleep) };
    }
    CURRENT.with(|c| c.set(None));
}
