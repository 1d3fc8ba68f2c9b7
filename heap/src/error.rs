//! The crate's error types: a leaf every layer can name.

/// Allocation failed (out of memory or an impossible size/alignment).
///
/// ```
/// use core::alloc::Layout;
/// use keel_heap::{AllocError, Heap, MAX_SIZE};
/// let heap = Heap::new()?;
/// let too_big = Layout::from_size_align(MAX_SIZE + 4096, 8).unwrap();
/// assert_eq!(heap.allocate(too_big), Err(AllocError));
/// assert_eq!(AllocError.to_string(), "keel-heap: allocation failed");
/// # Ok::<(), AllocError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError;

impl core::fmt::Display for AllocError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("keel-heap: allocation failed")
    }
}

impl core::error::Error for AllocError {}

/// A broken heap invariant: what and where.
///
/// ```
/// use keel_heap::{Heap, InvalidHeap};
/// let heap = Heap::new()?;
/// heap.is_valid()?; // an `InvalidHeap` if an invariant is broken
/// let e = InvalidHeap { what: "free list loops", addr: 0x7f00_0000_1000 };
/// assert_eq!(e.to_string(), "invalid heap: free list loops at 0x7f0000001000");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidHeap {
    /// The invariant that does not hold.
    pub what: &'static str,
    /// The address where it was found.
    pub addr: usize,
}

impl core::fmt::Display for InvalidHeap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid heap: {} at {:#x}", self.what, self.addr)
    }
}

impl core::error::Error for InvalidHeap {}

/// Why a pointer is not a live block.
///
/// ```
/// use keel_heap::{BadPointer, Heap};
/// let heap = Heap::new()?;
/// let p = heap.alloc(48, 16);
/// // SAFETY: `p` is live; `try_free` of a pointer inside it changes nothing.
/// let e = unsafe { heap.try_free(p.add(16)) }.unwrap_err();
/// let (addr, block) = (p as usize + 16, p as usize);
/// assert_eq!(e, BadPointer::Interior { addr, block, size: 48 });
/// let text = format!("invalid free of {addr:#x}, inside a 48-byte block at {block:#x}");
/// assert_eq!(e.to_string(), text);
/// assert_eq!(BadPointer::DoubleFree(0x40).to_string(), "double free of 0x40");
/// // SAFETY: `p` is live and freed once.
/// unsafe { heap.free(p) };
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadPointer {
    /// The pointer is not in memory keel-heap manages.
    Foreign(usize),
    /// The pointer is inside keel-heap memory but not at the start of a live
    /// block. `block` and `size` are the live block it falls in, when there
    /// is one (both 0 otherwise).
    Interior {
        /// The pointer.
        addr: usize,
        /// The start of the live block holding it, or 0.
        block: usize,
        /// That block's usable size, or 0.
        size: usize,
    },
    /// The block is already free (a double free).
    DoubleFree(usize),
}

impl BadPointer {
    /// The offending pointer's address.
    ///
    /// ```
    /// assert_eq!(keel_heap::BadPointer::DoubleFree(0x40).addr(), 0x40);
    /// ```
    pub fn addr(&self) -> usize {
        match *self {
            BadPointer::Foreign(a) | BadPointer::DoubleFree(a) => a,
            BadPointer::Interior { addr, .. } => addr,
        }
    }

    /// An interior pointer with no live block known around it.
    pub(crate) fn interior(addr: usize) -> Self {
        BadPointer::Interior {
            addr,
            block: 0,
            size: 0,
        }
    }
}

impl core::fmt::Display for BadPointer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            BadPointer::Foreign(p) => write!(f, "free of {p:#x}, which keel-heap did not allocate"),
            BadPointer::Interior { addr, block, size } if block != 0 => write!(
                f,
                "invalid free of {addr:#x}, inside a {size}-byte block at {block:#x}"
            ),
            BadPointer::Interior { addr, .. } => write!(
                f,
                "invalid free of {addr:#x}, which is not the start of a keel-heap block"
            ),
            BadPointer::DoubleFree(p) => write!(f, "double free of {p:#x}"),
        }
    }
}

impl core::error::Error for BadPointer {}
