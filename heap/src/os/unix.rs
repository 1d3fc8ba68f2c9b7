//! `mmap`/`munmap`/`madvise` over libc.

use core::ptr;

/// Maps `len` bytes (a multiple of the page size) aligned to `align` (a power
/// of two). Returns null on failure. Alignments above the page size over-map
/// by `align` and trim the excess.
pub(crate) fn map(len: usize, align: usize) -> *mut u8 {
    let page = crate::PAGE;
    if align <= page {
        return raw_map(len);
    }
    let Some(total) = len.checked_add(align) else {
        return ptr::null_mut();
    };
    let base = raw_map(total);
    if base.is_null() {
        return base;
    }
    let addr = base as usize;
    let start = (addr + align - 1) & !(align - 1);
    let head = start - addr;
    let tail = total - head - len;
    // SAFETY: both ranges lie inside the mapping just created and are page
    // multiples (addr, start, len and align are all page multiples).
    unsafe {
        if head > 0 {
            libc::munmap(base.cast(), head);
        }
        if tail > 0 {
            libc::munmap(base.add(head + len).cast(), tail);
        }
        base.add(head)
    }
}

fn raw_map(len: usize) -> *mut u8 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let flags = libc::MAP_PRIVATE | libc::MAP_ANON;
    // SAFETY: an anonymous private mapping at a kernel-chosen address touches
    // no existing memory.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Unmaps a range returned by [`map`].
///
/// # Safety
/// `ptr`/`len` is a whole mapping from [`map`] (with the same `len`), and no
/// reference into it outlives this call.
pub(crate) unsafe fn unmap(ptr: *mut u8, len: usize, _align: usize) {
    // SAFETY: the caller passes a range this module mapped.
    unsafe {
        libc::munmap(ptr.cast(), len);
    }
}

/// Drops the physical pages of `[ptr, ptr+len)`; they read as zero afterwards.
///
/// # Safety
/// The range is page-aligned, inside a mapping from [`map`], and holds no
/// data anyone still needs.
pub(crate) unsafe fn release(ptr: *mut u8, len: usize) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let advice = libc::MADV_DONTNEED;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let advice = libc::MADV_FREE;
    // SAFETY: the caller guarantees the range is ours and dead.
    unsafe { libc::madvise(ptr.cast(), len, advice) == 0 }
}

/// Monotonic milliseconds (for idle decay).
pub(crate) fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Writes diagnostics to stderr without allocating.
pub(crate) fn write_stderr(msg: &[u8]) {
    // SAFETY: writes `msg.len()` bytes from a live slice to fd 2.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
    }
}
