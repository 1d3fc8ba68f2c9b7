//! The sizes everything else is laid out by: a leaf.

/// The page size keel-heap assumes (and the alignment every class gives at least).
pub const PAGE: usize = 4096;
pub(crate) const REGION_SHIFT: u32 = if cfg!(miri) { 18 } else { 22 };
/// Region size and alignment (4 MiB; 256 KiB under Miri to keep it fast).
pub const REGION: usize = 1 << REGION_SHIFT;
/// The largest slab-backed size.
pub const SMALL_MAX: usize = 8192;
/// The largest buddy-backed size (and alignment); larger ones are direct maps.
pub const MEDIUM_MAX: usize = {
    let half = REGION / 4;
    if half < (1 << 20) { half } else { 1 << 20 }
};

/// The largest size keel-heap can ever serve: a quarter of the address
/// space, page-rounded (no system maps more). Larger requests return null
/// at once, without first collecting memory the program may reuse.
pub const MAX_SIZE: usize = (isize::MAX as usize / 2) & !(PAGE - 1);
/// The largest alignment keel-heap serves (2^60 on 64-bit targets); larger
/// ones return null at once, as [`MAX_SIZE`] does.
pub const MAX_ALIGN: usize = 1 << (usize::BITS - 4);
