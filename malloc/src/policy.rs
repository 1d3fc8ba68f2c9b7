//! The C allocation API's rules, over `keel_heap::raw`.
//!
//! Everything the C standard, POSIX and glibc say about sizes, alignments and
//! `errno` is decided here; keel-heap only ever sees a size and a power-of-two
//! alignment it can serve. The pure parts (overflow, alignment and page
//! rounding rules) are separate functions so they are unit-tested without
//! preloading anything.

use core::ffi::c_int;
use keel_heap::raw;

/// The alignment every `malloc` result has: `alignof(max_align_t)` on the
/// 64-bit targets glibc supports, and what programs built with SSE assume.
pub const MIN_ALIGN: usize = 16;

/// Requests above this are refused with `ENOMEM` before reaching the heap:
/// no mapping can be this large (keel-heap's own limit), so the
/// out-of-memory retry, which releases every free page first, is not run
/// for them.
pub const MAX_SIZE: usize = keel_heap::MAX_SIZE;

/// Why a request is refused before it reaches the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `EINVAL`: an alignment the function does not accept.
    BadAlignment,
    /// `ENOMEM`: the size overflows or exceeds [`MAX_SIZE`].
    TooLarge,
}

impl Refusal {
    /// The `errno` value C expects.
    pub fn errno(self) -> c_int {
        match self {
            Refusal::BadAlignment => libc::EINVAL,
            Refusal::TooLarge => libc::ENOMEM,
        }
    }
}

/// `n * size` for `calloc` and `reallocarray`, refused on overflow.
pub fn array_size(n: usize, size: usize) -> Result<usize, Refusal> {
    match n.checked_mul(size) {
        Some(t) if t <= MAX_SIZE => Ok(t),
        _ => Err(Refusal::TooLarge),
    }
}

/// `posix_memalign`'s rule: a power of two that is a multiple of
/// `sizeof(void *)`.
pub fn posix_alignment(align: usize) -> Result<usize, Refusal> {
    if align.is_power_of_two() && align.is_multiple_of(size_of::<*mut u8>()) {
        Ok(align.max(MIN_ALIGN))
    } else {
        Err(Refusal::BadAlignment)
    }
}

/// `aligned_alloc`'s rule (C17, glibc >= 2.38): any power of two. The size
/// need not be a multiple of the alignment (C17 dropped that requirement).
pub fn aligned_alloc_alignment(align: usize) -> Result<usize, Refusal> {
    if align.is_power_of_two() {
        Ok(align.max(MIN_ALIGN))
    } else {
        Err(Refusal::BadAlignment)
    }
}

/// `memalign`'s legacy rule, as glibc: any alignment is rounded up to a power
/// of two; one beyond the largest power of two is `EINVAL`.
pub fn memalign_alignment(align: usize) -> Result<usize, Refusal> {
    if align <= MIN_ALIGN {
        return Ok(MIN_ALIGN);
    }
    align
        .checked_next_power_of_two()
        .ok_or(Refusal::BadAlignment)
}

/// `pvalloc`'s size: rounded up to whole pages, at least one page.
pub fn pvalloc_size(size: usize, page: usize) -> Result<usize, Refusal> {
    debug_assert!(page.is_power_of_two());
    match size.checked_add(page - 1) {
        Some(s) if s <= MAX_SIZE => Ok((s & !(page - 1)).max(page)),
        _ => Err(Refusal::TooLarge),
    }
}

/// The system page size (queried once; 4096 until then is never used because
/// `sysconf` cannot fail for `_SC_PAGESIZE`).
pub fn page_size() -> usize {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions and does not allocate.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let p = if p > 0 && (p as usize).is_power_of_two() {
        p as usize
    } else {
        4096
    };
    PAGE.store(p, Ordering::Relaxed);
    p
}

/// Sets the calling thread's `errno`.
pub fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot, valid
    // for the thread's lifetime.
    unsafe { *libc::__errno_location() = e };
}

fn refuse(r: Refusal) -> *mut u8 {
    set_errno(r.errno());
    core::ptr::null_mut()
}

/// Allocates `size` bytes aligned to `align` (a power of two), sets `ENOMEM`
/// on failure. The fast path makes no call at all ([`alloc_fast`]): a small
/// block of a slab with room. Zeroing, refills, keel-heap's slow-path check
/// (idle decay), large sizes and failures are all in [`alloc_with_slow`],
/// called only at the end, so the fast path keeps nothing live across a
/// call and saves no registers.
#[inline(always)]
fn alloc_with(size: usize, align: usize, zeroed: bool) -> *mut u8 {
    if !zeroed {
        let p = alloc_fast(size, align);
        if !p.is_null() {
            return p;
        }
    }
    alloc_with_slow(size, align, zeroed)
}

/// The allocation fast path alone (keel-heap's [`raw::alloc_fast`],
/// inlined): null when it cannot serve the call, which then goes on with
/// [`alloc_with_slow`] (once: the call was counted). A thread has a heap
/// only after its first allocation took the slow path, which applies the
/// options ([`crate::init::ensure`]), so the fast path needs no start-up
/// test: allocations made on it before `environ` is readable run on
/// keel-heap's defaults, as the start-up allocations before them did,
/// until a slow path or the constructor applies the options.
#[inline(always)]
pub fn alloc_fast(size: usize, align: usize) -> *mut u8 {
    // The size test `raw::alloc_fast` makes anyway, first and marked cold:
    // LLVM then keeps it and the null-heap test as two predicted branches
    // instead of two `setcc`s, an `or` and one branch (two instructions).
    if size > keel_heap::SMALL_MAX {
        cold_path();
        return core::ptr::null_mut();
    }
    raw::alloc_fast(size, align)
}

/// A call marks its path unlikely: `core::hint::cold_path` (Rust 1.95)
/// within this crate's older minimum Rust version.
#[cold]
#[inline(always)]
fn cold_path() {}

/// Everything [`alloc_fast`] does not serve, after it returned null (or
/// in its place): start-up, zeroing, refills, large sizes, failures.
#[inline(never)]
pub fn alloc_with_slow(size: usize, align: usize, zeroed: bool) -> *mut u8 {
    crate::init::ensure();
    if size <= MAX_SIZE && align <= keel_heap::MAX_ALIGN {
        let p = raw::alloc_after_fast(size, align, zeroed);
        if !p.is_null() {
            return p;
        }
    }
    alloc_slow(size, align, zeroed)
}

/// Failures: refuses sizes beyond [`MAX_SIZE`] and alignments beyond
/// keel-heap's [`MAX_ALIGN`](keel_heap::MAX_ALIGN), and otherwise asks the
/// heap to release what it holds free and tries once more, so cached free
/// memory never turns into a spurious out-of-memory.
#[cold]
#[inline(never)]
fn alloc_slow(size: usize, align: usize, zeroed: bool) -> *mut u8 {
    if size > MAX_SIZE || align > keel_heap::MAX_ALIGN {
        return refuse(Refusal::TooLarge);
    }
    raw::release_pages();
    let p = if zeroed {
        raw::alloc_zeroed(size, align)
    } else {
        raw::alloc(size, align)
    };
    if p.is_null() {
        return refuse(Refusal::TooLarge);
    }
    p
}

/// `malloc`: `size` 0 gives a unique pointer (keel-heap's contract).
#[inline]
pub fn malloc(size: usize) -> *mut u8 {
    alloc_with(size, MIN_ALIGN, false)
}

/// `calloc`: overflow of `n * size` is `ENOMEM`.
#[inline]
pub fn calloc(n: usize, size: usize) -> *mut u8 {
    match array_size(n, size) {
        Ok(total) => alloc_with(total, MIN_ALIGN, true),
        Err(r) => refuse(r),
    }
}

/// Whether keel-heap manages `p`. Pointers it does not own (a program bug, or
/// memory from before the preload took effect) are never passed to it.
#[inline]
fn ours(p: *const u8) -> bool {
    raw::owns(p)
}

/// `free`: null is a no-op; a pointer keel-heap does not own is left alone
/// (reported when the checker is on).
///
/// # Safety
/// `p` is null or a live block from this allocator, not used afterwards.
#[inline(always)]
pub unsafe fn free(p: *mut u8) {
    // Frees are not counted toward the collection deadline (they never
    // run the check), and a thread that only frees needs no heap of its own:
    // keel-heap hands other heaps' blocks to their owners without a lock.
    // The fast path (a block of this thread's heap) makes no call; null,
    // in no memory keel-heap manages, is told apart off it.
    // SAFETY: by the caller's contract `p` is null, a live block not used
    // after this call, or memory keel-heap does not own (left alone).
    unsafe { raw::free_or_else(p, not_ours) }
}

/// [`free`] of a pointer keel-heap does not manage (or null).
///
/// # Safety
/// None: `p` is only printed.
#[cold]
unsafe fn not_ours(p: *mut u8) {
    if !p.is_null() {
        crate::report::foreign_pointer("free", p, crate::init::checker_on());
    }
}

/// `realloc`: null is `malloc`; size 0 frees and returns null, as glibc does
/// (C17 leaves it implementation-defined; matching glibc keeps preloaded
/// programs' behaviour unchanged); on failure the block stays valid.
///
/// # Safety
/// `p` is null or a live block from this allocator.
pub unsafe fn realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        return malloc(size);
    }
    if size == 0 {
        // SAFETY: forwarded caller contract; C says `p` is not used after a
        // successful realloc, and glibc's realloc(p, 0) frees it.
        unsafe { free(p) };
        return core::ptr::null_mut();
    }
    if size > MAX_SIZE {
        return refuse(Refusal::TooLarge);
    }
    if !ours(p) {
        crate::report::foreign_pointer("realloc", p, crate::init::checker_on());
        return refuse(Refusal::TooLarge);
    }
    // SAFETY: `p` is a live keel-heap block (checked above) and MIN_ALIGN is a
    // power of two; on failure keel-heap leaves `p` valid.
    let mut q = unsafe { raw::realloc(p, size, MIN_ALIGN) };
    if q.is_null() {
        raw::release_pages();
        // SAFETY: as above; `p` is still valid after the failed attempt.
        q = unsafe { raw::realloc(p, size, MIN_ALIGN) };
        if q.is_null() {
            return refuse(Refusal::TooLarge);
        }
    }
    q
}

/// `reallocarray`: `realloc(p, n * size)` with overflow refused (`ENOMEM`,
/// the block left valid).
///
/// # Safety
/// As [`realloc`].
pub unsafe fn reallocarray(p: *mut u8, n: usize, size: usize) -> *mut u8 {
    match array_size(n, size) {
        // SAFETY: forwarded caller contract.
        Ok(total) => unsafe { realloc(p, total) },
        Err(r) => refuse(r),
    }
}

/// `posix_memalign`: returns the error number and leaves `errno` and `*out`
/// untouched on failure.
///
/// # Safety
/// `out` is valid for a pointer-sized write.
pub unsafe fn posix_memalign(out: *mut *mut u8, align: usize, size: usize) -> c_int {
    let align = match posix_alignment(align) {
        Ok(a) => a,
        Err(r) => return r.errno(),
    };
    // SAFETY: __errno_location is the calling thread's errno slot.
    let saved = unsafe { *libc::__errno_location() };
    let p = alloc_with(size, align, false);
    set_errno(saved);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller guarantees `out` is writable.
    unsafe { *out = p };
    0
}

/// `aligned_alloc`: a non-power-of-two alignment is `EINVAL`.
pub fn aligned_alloc(align: usize, size: usize) -> *mut u8 {
    match aligned_alloc_alignment(align) {
        Ok(a) => alloc_with(size, a, false),
        Err(r) => refuse(r),
    }
}

/// C++'s aligned `operator new`: `align` is a power of two (the language
/// requires it of `std::align_val_t`; anything else is refused); the block
/// is at least [`MIN_ALIGN`]-aligned, as `malloc`'s are. The fast path is
/// `malloc`'s.
#[inline]
pub fn aligned_new(size: usize, align: usize) -> *mut u8 {
    let p = alloc_fast(size, align);
    if !p.is_null() {
        return p;
    }
    aligned_new_slow(size, align)
}

/// [`aligned_new`] after [`alloc_fast`] returned null.
#[inline(never)]
pub fn aligned_new_slow(size: usize, align: usize) -> *mut u8 {
    if !align.is_power_of_two() {
        return refuse(Refusal::BadAlignment);
    }
    alloc_with_slow(size, align.max(MIN_ALIGN), false)
}

/// `memalign`: glibc's lenient rules (see [`memalign_alignment`]).
pub fn memalign(align: usize, size: usize) -> *mut u8 {
    match memalign_alignment(align) {
        Ok(a) => alloc_with(size, a, false),
        Err(r) => refuse(r),
    }
}

/// `valloc`: page-aligned.
pub fn valloc(size: usize) -> *mut u8 {
    alloc_with(size, page_size(), false)
}

/// `pvalloc`: page-aligned, size rounded up to whole pages (at least one).
pub fn pvalloc(size: usize) -> *mut u8 {
    let page = page_size();
    match pvalloc_size(size, page) {
        Ok(s) => alloc_with(s, page, false),
        Err(r) => refuse(r),
    }
}

/// `malloc_usable_size`: 0 for null and for pointers keel-heap does not own.
///
/// # Safety
/// `p` is null or a live block from this allocator.
#[inline]
pub unsafe fn usable_size(p: *const u8) -> usize {
    if p.is_null() || !ours(p) {
        return 0;
    }
    // SAFETY: `p` is a live keel-heap block by the caller's contract.
    unsafe { raw::usable_size(p) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_overflow_is_too_large() {
        assert_eq!(array_size(3, 5), Ok(15));
        assert_eq!(array_size(0, usize::MAX), Ok(0));
        assert_eq!(array_size(usize::MAX / 2 + 2, 2), Err(Refusal::TooLarge));
        assert_eq!(array_size(usize::MAX, usize::MAX), Err(Refusal::TooLarge));
        assert_eq!(array_size(1, MAX_SIZE + 1), Err(Refusal::TooLarge));
        assert_eq!(Refusal::TooLarge.errno(), libc::ENOMEM);
    }

    #[test]
    fn posix_alignment_rule() {
        for bad in [0, 1, 2, 4, 3, 24, 48, 4097, usize::MAX] {
            assert_eq!(posix_alignment(bad), Err(Refusal::BadAlignment), "{bad}");
        }
        assert_eq!(posix_alignment(8), Ok(MIN_ALIGN));
        assert_eq!(posix_alignment(4096), Ok(4096));
        assert_eq!(posix_alignment(1 << 40), Ok(1 << 40));
        assert_eq!(Refusal::BadAlignment.errno(), libc::EINVAL);
    }

    #[test]
    fn aligned_alloc_and_memalign_rules() {
        assert_eq!(aligned_alloc_alignment(0), Err(Refusal::BadAlignment));
        assert_eq!(aligned_alloc_alignment(3), Err(Refusal::BadAlignment));
        assert_eq!(aligned_alloc_alignment(1), Ok(MIN_ALIGN));
        assert_eq!(aligned_alloc_alignment(64), Ok(64));
        assert_eq!(memalign_alignment(0), Ok(MIN_ALIGN));
        assert_eq!(memalign_alignment(3), Ok(MIN_ALIGN));
        assert_eq!(memalign_alignment(17), Ok(32));
        assert_eq!(memalign_alignment(4096), Ok(4096));
        assert_eq!(memalign_alignment(4097), Ok(8192));
        assert_eq!(
            memalign_alignment(usize::MAX / 2 + 2),
            Err(Refusal::BadAlignment)
        );
    }

    #[test]
    fn pvalloc_rounds_to_pages() {
        assert_eq!(pvalloc_size(0, 4096), Ok(4096));
        assert_eq!(pvalloc_size(1, 4096), Ok(4096));
        assert_eq!(pvalloc_size(4096, 4096), Ok(4096));
        assert_eq!(pvalloc_size(4097, 4096), Ok(8192));
        assert_eq!(pvalloc_size(usize::MAX, 4096), Err(Refusal::TooLarge));
        assert_eq!(pvalloc_size(MAX_SIZE, 4096), Err(Refusal::TooLarge));
        assert!(page_size().is_power_of_two());
    }
}
