//! `mmap`/`munmap`/`madvise` over libc.
//!
//! The commit rule: memory keel-heap will write is mapped readable and
//! writable *without* `MAP_NORESERVE`, so the kernel's overcommit policy
//! applies to it exactly as to glibc's heaps (in the default heuristic mode
//! a request larger than memory and swap together fails at once, and the
//! allocation returns null). `MAP_NORESERVE` is used only where nothing is
//! committed: `PROT_NONE` reservations, the slack taken to align a mapping
//! and trimmed at once, and the padding before a direct map's data when its
//! alignment is larger than a page.

use core::ptr;

/// Maps `len` bytes (a multiple of the page size) aligned to `align` (a
/// power of two), committed, readable and writable. Returns null on failure
/// (including a commit the kernel's overcommit policy refuses).
pub(crate) fn map(len: usize, align: usize) -> *mut u8 {
    map_from(len, align, 0)
}

/// As [`map`], but only `[commit_from, len)` is committed: the first
/// `commit_from` bytes (a page multiple) are an inaccessible reservation,
/// which costs address space and no memory. Alignments above the page size
/// reserve `len + align`, commit the aligned part and trim the rest.
pub(crate) fn map_from(len: usize, align: usize, commit_from: usize) -> *mut u8 {
    debug_assert!(commit_from <= len && commit_from.is_multiple_of(crate::layout::PAGE));
    if align <= crate::layout::PAGE && commit_from == 0 {
        return raw_map(ptr::null_mut(), len, true);
    }
    let Some(total) = len.checked_add(align.max(crate::layout::PAGE)) else {
        return ptr::null_mut();
    };
    let base = raw_map(ptr::null_mut(), total, false);
    if base.is_null() {
        return base;
    }
    let addr = base as usize;
    let start = (addr + align - 1) & !(align - 1);
    let head = start - addr;
    let tail = total - head - len;
    // SAFETY: every range below lies inside the reservation just made and
    // is a page multiple (addr, start, len, align and commit_from are).
    unsafe {
        let data = base.add(head + commit_from);
        if commit_from < len && raw_map(data, len - commit_from, true).is_null() {
            libc::munmap(base.cast(), total);
            return ptr::null_mut();
        }
        if head > 0 {
            libc::munmap(base.cast(), head);
        }
        if tail > 0 {
            libc::munmap(base.add(head + len).cast(), tail);
        }
        base.add(head)
    }
}

/// `mmap` of anonymous private memory: committed and writable, or an
/// inaccessible `MAP_NORESERVE` reservation. With `at`, replaces that range
/// (which must lie in a reservation of ours).
fn raw_map(at: *mut u8, len: usize, commit: bool) -> *mut u8 {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANON;
    let mut prot = libc::PROT_NONE;
    if commit {
        prot = libc::PROT_READ | libc::PROT_WRITE;
    } else {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            flags |= libc::MAP_NORESERVE;
        }
    }
    if !at.is_null() {
        flags |= libc::MAP_FIXED;
    }
    // SAFETY: an anonymous private mapping at a kernel-chosen address
    // touches no existing memory; with MAP_FIXED the caller passes a range
    // of its own reservation.
    let p = unsafe { libc::mmap(at.cast(), len, prot, flags, -1, 0) };
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

/// Whether [`grow`] can keep pages (Linux has `mremap`).
pub(crate) const CAN_GROW: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// Moves the mapping `[base, base+old_len)` to the start of a fresh range of
/// `new_len` bytes aligned to `align`, keeping its pages resident (the rest
/// of the new range is fresh, zero memory); the old range is gone after the
/// call. Returns the new base, or null (with the old mapping untouched) when
/// the OS refuses or cannot move pages.
///
/// # Safety
/// `base`/`old_len` is a whole mapping from [`map`] that nobody uses during
/// the call, and `new_len >= old_len`, both page multiples.
pub(crate) unsafe fn grow(base: *mut u8, old_len: usize, new_len: usize, align: usize) -> *mut u8 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let target = map(new_len, align);
        if target.is_null() {
            return target;
        }
        // SAFETY: both ranges are whole mappings of ours; MREMAP_FIXED
        // replaces the first `old_len` bytes of `target` (which nobody else
        // knows of) with the old pages and unmaps the old range.
        let moved = unsafe {
            libc::mremap(
                base.cast(),
                old_len,
                old_len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                target.cast::<libc::c_void>(),
            )
        };
        if moved == libc::MAP_FAILED {
            // SAFETY: `target` is ours and unused.
            unsafe { libc::munmap(target.cast(), new_len) };
            return ptr::null_mut();
        }
        target
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (base, old_len, new_len, align);
        ptr::null_mut()
    }
}

/// Drops the physical pages of `[ptr, ptr+len)`; the range reads as zero
/// afterwards. keel-heap's unit ([`PAGE`](crate::layout::PAGE), 4 KiB) may
/// be smaller than the system's page (16 or 64 KiB on some aarch64
/// kernels): only the whole system pages inside the range are given back,
/// and the bytes before and after them are zeroed in place.
///
/// # Safety
/// The range is inside a mapping from [`map`] and holds no data anyone
/// still needs.
pub(crate) unsafe fn release(ptr: *mut u8, len: usize) -> bool {
    // SAFETY: forwarded.
    unsafe { release_in(ptr, len, page_size()) }
}

/// [`release`] for a system page size of `ps` (a power of two that is a
/// multiple of the system's).
///
/// # Safety
/// As [`release`].
unsafe fn release_in(ptr: *mut u8, len: usize, ps: usize) -> bool {
    let start = ptr.addr().next_multiple_of(ps);
    let end = (ptr.addr() + len) & !(ps - 1);
    if end <= start {
        // SAFETY: the caller gives us the range.
        unsafe { ptr.write_bytes(0, len) };
        return true;
    }
    // SAFETY: the edges lie inside the caller's range.
    unsafe {
        ptr.write_bytes(0, start - ptr.addr());
        ptr.add(end - ptr.addr())
            .write_bytes(0, ptr.addr() + len - end);
    }
    let mid = ptr.with_addr(start);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: whole pages of the caller's dead range; private anonymous
        // pages read as zero after MADV_DONTNEED.
        unsafe { libc::madvise(mid.cast(), end - start, libc::MADV_DONTNEED) == 0 }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        // MADV_FREE keeps old contents until the kernel takes the pages, so
        // map fresh zero pages over the range instead.
        !raw_map(mid, end - start, true).is_null()
    }
}

/// Monotonic milliseconds for idle decay, from the coarse clock where
/// there is one (a memory read in the vDSO, about a quarter of the cost of
/// the precise clock, at the kernel tick's granularity of a few ms).
pub(crate) fn now_ms() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let clock = libc::CLOCK_MONOTONIC_COARSE;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let clock = libc::CLOCK_MONOTONIC;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we own.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// 64 unpredictable bits without a syscall that could fail: the kernel's
/// per-process random bytes (`AT_RANDOM`) where there are some, mixed with
/// the clock and an address (so two processes differ even without them).
pub(crate) fn random_u64() -> u64 {
    let here = 0u8;
    let mut x = now_ms() ^ ((&raw const here).addr() as u64).rotate_left(32);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: getauxval has no preconditions; AT_RANDOM, when present,
        // points at 16 bytes the kernel placed on the initial stack.
        unsafe {
            let p = libc::getauxval(libc::AT_RANDOM) as *const u64;
            if !p.is_null() {
                x ^= p.read_unaligned();
            }
        }
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    x ^= (ts.tv_nsec as u64) << 17;
    // splitmix64's finalizer spreads the bits.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The system page size, `sysconf(_SC_PAGESIZE)`, read once (4096 if it
/// cannot be read).
pub(crate) fn page_size() -> usize {
    use crate::sync::plain::{AtomicUsize, Ordering};
    static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
    let p = PAGE_SIZE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions and does not allocate.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let p = if v > 0 && (v as usize).is_power_of_two() {
        (v as usize).max(crate::layout::PAGE)
    } else {
        crate::layout::PAGE
    };
    PAGE_SIZE.store(p, Ordering::Relaxed);
    p
}

#[cfg(test)]
mod tests {
    /// With a page larger than keel-heap's unit, a release of a range that
    /// is not page-aligned gives back the whole pages inside it and zeroes
    /// the rest: the whole range reads as zero, and nothing outside it is
    /// touched.
    #[test]
    fn release_rounds_inward_and_zeroes_the_edges() {
        let big = 256 << 10;
        let ps = 64 << 10;
        let m = super::map(big, ps);
        assert!(!m.is_null());
        // SAFETY: a fresh mapping of `big` bytes, ours alone.
        unsafe {
            m.write_bytes(7, big);
            for (off, len) in [(4096, 3 * ps), (ps, ps), (12288, 8192), (4096, big - 8192)] {
                m.write_bytes(7, big);
                assert!(super::release_in(m.add(off), len, ps));
                for i in 0..big {
                    let inside = i >= off && i < off + len;
                    assert_eq!(
                        *m.add(i),
                        if inside { 0 } else { 7 },
                        "byte {i} of {off}+{len}"
                    );
                }
            }
            super::unmap(m, big, ps);
        }
    }
}
