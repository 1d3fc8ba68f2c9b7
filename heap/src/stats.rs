//! Statistics, cheap enough to leave on.
//!
//! Per-heap counters are plain integers the owner bumps on its fast paths and
//! publishes to relaxed atomics on its slow paths (slab refill, region map,
//! GC, thread exit); rare process-wide events (maps, madvise calls, GC passes)
//! are relaxed atomic adds. A snapshot therefore lags a running thread by at
//! most one slow path; `peak` is sampled at slow paths and snapshots.

use crate::sync::plain::{AtomicU64, AtomicUsize, Ordering};

/// A statistics snapshot (process-wide from [`raw::stats`](crate::raw::stats),
/// or one heap's from [`Heap::stats`](crate::Heap::stats)).
///
/// ```
/// use keel_heap::{Heap, Stats};
/// let heap = Heap::new()?;
/// let p = heap.alloc(64, 8);
/// let s: Stats = keel_heap::stats();
/// assert!(s.in_use >= 64 && s.peak >= s.in_use);
/// assert!(s.heaps >= 1 && s.abandoned < s.heaps); // `heap` is owned
/// // SAFETY: `p` is live and freed once.
/// unsafe { heap.free(p) };
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes in live blocks (usable sizes).
    pub in_use: u64,
    /// Highest `in_use` seen at a slow path or snapshot.
    pub peak: u64,
    /// Bytes mapped from the OS (regions, direct maps, heap headers).
    pub mapped: u64,
    /// Bytes whose pages were given back with `madvise` (cumulative).
    pub released: u64,
    /// `madvise` calls made.
    pub madvise_calls: u64,
    /// Blocks freed by a thread other than their owner (counted when drained).
    pub foreign_frees: u64,
    /// GC calls that ran.
    pub gc_passes: u64,
    /// GC calls that ran the page-release pass.
    pub release_passes: u64,
    /// Idle-decay passes run (each releases what has stayed free for
    /// `decay_ms`).
    pub decay_passes: u64,
    /// Small allocations served from a slab that already had room.
    pub slab_hits: u64,
    /// Heaps in existence (owned or abandoned).
    pub heaps: u64,
    /// Heaps abandoned by exited threads and not yet adopted.
    pub abandoned: u64,
    /// Bytes of direct maps held in the reuse pool.
    pub pool_bytes: u64,
    /// Sweeps of abandoned heaps run (each drains what other threads freed
    /// into heaps of exited threads, and releases what aged there); at
    /// most one per 1/256 of `decay_ms`.
    pub sweeps: u64,
}

/// Counters of one heap: written by the owner, read by anyone.
#[derive(Default)]
pub(crate) struct HeapCounters {
    pub(crate) allocated: AtomicU64,
    pub(crate) freed: AtomicU64,
    pub(crate) peak: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) madvise_calls: AtomicU64,
    pub(crate) foreign_frees: AtomicU64,
    pub(crate) gc_passes: AtomicU64,
    pub(crate) release_passes: AtomicU64,
    pub(crate) decay_passes: AtomicU64,
    pub(crate) slab_hits: AtomicU64,
}

/// The owner's private copy of its hot counters.
pub(crate) struct LocalCounters {
    /// Bytes allocated other than small blocks (medium blocks).
    pub(crate) allocated_bytes: u64,
    /// Small blocks allocated, by class: the allocation adds one (the
    /// class is in a register there, its size not);
    /// [`allocated`](Self::allocated) sums them in bytes.
    pub(crate) allocated_small: [u64; crate::size_class::CLASSES],
    /// Small allocations that took a new slab (the rest are slab hits).
    pub(crate) slab_misses: u64,
    /// Bytes freed other than small blocks (medium blocks).
    pub(crate) freed_bytes: u64,
    /// Small blocks freed, by their slab's class byte: the free path adds
    /// one, where adding bytes would first load the class's size;
    /// [`freed`](Self::freed) sums them in bytes.
    pub(crate) freed_small: [u64; 256],
}

impl Default for LocalCounters {
    fn default() -> Self {
        LocalCounters {
            allocated_bytes: 0,
            allocated_small: [0; crate::size_class::CLASSES],
            slab_misses: 0,
            freed_bytes: 0,
            freed_small: [0; 256],
        }
    }
}

impl LocalCounters {
    /// Bytes allocated in all (read on slow paths, as `freed`).
    pub(crate) fn allocated(&self) -> u64 {
        let small = (0..crate::size_class::CLASSES).fold(0u64, |acc, c| {
            acc.wrapping_add(
                self.allocated_small[c].wrapping_mul(crate::size_class::class_size(c) as u64),
            )
        });
        self.allocated_bytes.wrapping_add(small)
    }

    /// Small allocations served by a slab already on its class's bin.
    pub(crate) fn slab_hits(&self) -> u64 {
        let all = self
            .allocated_small
            .iter()
            .fold(0u64, |acc, &n| acc.wrapping_add(n));
        all.wrapping_sub(self.slab_misses)
    }

    /// Bytes freed in all (read on slow paths: a GC, a new region, a
    /// direct map, a published snapshot).
    pub(crate) fn freed(&self) -> u64 {
        let small = (0..=u8::MAX).fold(0u64, |acc, c| {
            acc.wrapping_add(
                self.freed_small[c as usize].wrapping_mul(crate::size_class::class1_size(c) as u64),
            )
        });
        self.freed_bytes.wrapping_add(small)
    }

    /// Bytes in use: allocated and not freed.
    pub(crate) fn live(&self) -> u64 {
        self.allocated().saturating_sub(self.freed())
    }
}

impl HeapCounters {
    /// Publishes the owner's hot counters (owner only: load + store, no RMW).
    pub(crate) fn publish(&self, l: &LocalCounters) {
        let (allocated, freed) = (l.allocated(), l.freed());
        self.allocated.store(allocated, Ordering::Relaxed);
        self.freed.store(freed, Ordering::Relaxed);
        self.slab_hits.store(l.slab_hits(), Ordering::Relaxed);
        let live = allocated.saturating_sub(freed);
        if live > self.peak.load(Ordering::Relaxed) {
            self.peak.store(live, Ordering::Relaxed);
        }
    }

    /// Owner-only increment (no RMW).
    pub(crate) fn bump(c: &AtomicU64, by: u64) {
        c.store(c.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let a = self.allocated.load(Ordering::Relaxed);
        let f = self.freed.load(Ordering::Relaxed);
        Stats {
            in_use: a.saturating_sub(f),
            peak: self.peak.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            madvise_calls: self.madvise_calls.load(Ordering::Relaxed),
            foreign_frees: self.foreign_frees.load(Ordering::Relaxed),
            gc_passes: self.gc_passes.load(Ordering::Relaxed),
            release_passes: self.release_passes.load(Ordering::Relaxed),
            decay_passes: self.decay_passes.load(Ordering::Relaxed),
            slab_hits: self.slab_hits.load(Ordering::Relaxed),
            ..Stats::default()
        }
    }
}

/// Process-wide counters.
pub(crate) struct Global {
    pub(crate) mapped: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) madvise_calls: AtomicU64,
    pub(crate) direct_in_use: AtomicUsize,
    pub(crate) direct_maps: AtomicUsize,
    pub(crate) peak: AtomicU64,
    /// Incremented by every GC of any heap: the pool's notion of age.
    pub(crate) gc_epoch: AtomicU64,
    /// Sweeps of abandoned heaps run.
    pub(crate) sweeps: AtomicU64,
}

static GLOBAL: Global = Global {
    mapped: AtomicU64::new(0),
    released: AtomicU64::new(0),
    madvise_calls: AtomicU64::new(0),
    direct_in_use: AtomicUsize::new(0),
    direct_maps: AtomicUsize::new(0),
    peak: AtomicU64::new(0),
    gc_epoch: AtomicU64::new(0),
    sweeps: AtomicU64::new(0),
};

pub(crate) fn global() -> &'static Global {
    &GLOBAL
}

impl Stats {
    /// Adds one heap's published counters (`abandoned`: it has no owner).
    pub(crate) fn add_heap(&mut self, h: &HeapCounters, abandoned: bool) {
        let hs = h.snapshot();
        self.in_use += hs.in_use;
        self.foreign_frees += hs.foreign_frees;
        self.gc_passes += hs.gc_passes;
        self.release_passes += hs.release_passes;
        self.decay_passes += hs.decay_passes;
        self.slab_hits += hs.slab_hits;
        self.released += hs.released;
        self.madvise_calls += hs.madvise_calls;
        self.heaps += 1;
        self.abandoned += abandoned as u64;
    }

    /// Adds the process-wide counters and `pool_bytes`, and samples the peak.
    pub(crate) fn add_global(&mut self, pool_bytes: usize) {
        let g = global();
        self.in_use += g.direct_in_use.load(Ordering::Relaxed) as u64;
        self.mapped = g.mapped.load(Ordering::Relaxed);
        self.released += g.released.load(Ordering::Relaxed);
        self.madvise_calls += g.madvise_calls.load(Ordering::Relaxed);
        self.pool_bytes = pool_bytes as u64;
        self.sweeps = g.sweeps.load(Ordering::Relaxed);
        self.peak = g
            .peak
            .fetch_max(self.in_use, Ordering::Relaxed)
            .max(self.in_use);
    }
}

/// Samples the process-wide in-use figure into the peak (slow paths only).
pub(crate) fn sample_peak(heap_live: u64) {
    let g = global();
    let v = heap_live + g.direct_in_use.load(Ordering::Relaxed) as u64;
    g.peak.fetch_max(v, Ordering::Relaxed);
}
