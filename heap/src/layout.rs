//! The sizes everything else is laid out by: a leaf.

/// The page size keel-heap assumes (and the alignment every class gives at least).
///
/// ```
/// use keel_heap::{Heap, PAGE};
/// let heap = Heap::new()?;
/// for size in [1, 5000, 100_000, 2 << 20] {
///     let p = heap.alloc(size, PAGE); // small, medium and direct-mapped
///     assert!(!p.is_null() && p as usize % PAGE == 0);
///     // SAFETY: `p` is live and freed once.
///     unsafe { heap.free(p) };
/// }
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub const PAGE: usize = 4096;
pub(crate) const REGION_SHIFT: u32 = if cfg!(miri) { 18 } else { 22 };
/// Region size and alignment (4 MiB; 256 KiB under Miri to keep it fast).
///
/// ```
/// use keel_heap::{Heap, REGION, owns};
/// let heap = Heap::new()?;
/// let p = heap.alloc(100, 8); // a small block, inside a region
/// // The region's header starts at the block's address rounded down.
/// assert!(owns(p.map_addr(|a| a & !(REGION - 1))));
/// // SAFETY: `p` is live and freed once.
/// unsafe { heap.free(p) };
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub const REGION: usize = 1 << REGION_SHIFT;
/// The largest slab-backed size.
///
/// ```
/// use keel_heap::{Heap, SMALL_MAX, usable_size};
/// let heap = Heap::new()?;
/// let (small, medium) = (heap.alloc(SMALL_MAX, 8), heap.alloc(SMALL_MAX + 1, 8));
/// // SAFETY: both are live, and freed once.
/// unsafe {
///     assert_eq!(usable_size(small), SMALL_MAX); // the largest class
///     assert!(usable_size(medium).is_power_of_two()); // a buddy block
///     heap.free(small);
///     heap.free(medium);
/// }
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub const SMALL_MAX: usize = 8192;
/// The largest buddy-backed size (and alignment); larger ones are direct maps.
///
/// ```
/// use keel_heap::{Heap, MEDIUM_MAX, usable_size};
/// let heap = Heap::new()?;
/// let p = heap.alloc(MEDIUM_MAX, 8);
/// assert!(!p.is_null() && p as usize % MEDIUM_MAX == 0); // naturally aligned
/// // SAFETY: `p` is live and freed once.
/// unsafe {
///     assert_eq!(usable_size(p), MEDIUM_MAX);
///     heap.free(p);
/// }
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub const MEDIUM_MAX: usize = {
    let half = REGION / 4;
    if half < (1 << 20) { half } else { 1 << 20 }
};

/// The largest size keel-heap can ever serve: a quarter of the address
/// space, page-rounded (no system maps more). Larger requests return null
/// at once, without first collecting memory the program may reuse.
///
/// ```
/// use keel_heap::{Heap, MAX_SIZE};
/// let heap = Heap::new()?;
/// assert!(heap.alloc(MAX_SIZE + 1, 8).is_null());
/// assert!(heap.alloc(usize::MAX, 8).is_null());
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub const MAX_SIZE: usize = (isize::MAX as usize / 2) & !(PAGE - 1);
/// The largest alignment keel-heap serves (2^60 on 64-bit targets); larger
/// ones return null at once, as [`MAX_SIZE`] does.
///
/// ```
/// use keel_heap::{Heap, MAX_ALIGN};
/// let heap = Heap::new()?;
/// assert!(MAX_ALIGN.is_power_of_two());
/// assert!(heap.alloc(64, MAX_ALIGN << 1).is_null());
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub const MAX_ALIGN: usize = 1 << (usize::BITS - 4);
