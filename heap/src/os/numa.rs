//! NUMA memory policy syscalls: `mbind` and `get_mempolicy`, raw through
//! `libc::syscall` (no libnuma). Linux only; elsewhere, and under Miri, every
//! call reports `ENOSYS` so callers fall back the same way as on a kernel
//! built without NUMA.

/// `MPOL_DEFAULT`: the thread's policy (normally local allocation).
pub(crate) const MPOL_DEFAULT: i32 = 0;
/// `MPOL_BIND`: only from the given nodes.
pub(crate) const MPOL_BIND: i32 = 2;
/// `MPOL_INTERLEAVE`: pages round-robin over the given nodes.
pub(crate) const MPOL_INTERLEAVE: i32 = 3;

/// Node-mask words: 16 × 64 = 1024 nodes, Linux's largest `MAX_NUMNODES`.
pub(crate) const MASK_WORDS: usize = 16;

/// Sets the memory policy of the pages in `[addr, addr + len)` (page
/// aligned) for future faults. `mask` is ignored for [`MPOL_DEFAULT`].
/// Returns the errno on failure.
///
/// Safe to call on any range: a policy never touches page contents, and an
/// unmapped range is an error (`EFAULT`/`ENOMEM`). Callers should own the
/// range, since the policy applies to everyone who maps those pages.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn mbind(
    addr: usize,
    len: usize,
    mode: i32,
    mask: &[u64; MASK_WORDS],
) -> Result<(), i32> {
    let (mask_ptr, maxnode) = if mode == MPOL_DEFAULT {
        (core::ptr::null::<u64>(), 0usize)
    } else {
        // The kernel reads maxnode - 1 bits; numactl passes the mask size + 1.
        (mask.as_ptr(), MASK_WORDS * 64 + 1)
    };
    // SAFETY: the kernel reads `mask` (MASK_WORDS words, live for the call)
    // and changes only the memory policy of the range, never its contents.
    let r = unsafe { libc::syscall(libc::SYS_mbind, addr, len, mode, mask_ptr, maxnode, 0u32) };
    if r == 0 { Ok(()) } else { Err(errno()) }
}

/// Reads back the policy and node mask in force at `addr`
/// (`get_mempolicy(MPOL_F_ADDR)`). Returns the errno on failure.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn get_mempolicy(addr: usize) -> Result<(i32, [u64; MASK_WORDS]), i32> {
    const MPOL_F_ADDR: u32 = 1 << 1;
    let mut mode: i32 = 0;
    let mut mask = [0u64; MASK_WORDS];
    // SAFETY: the kernel writes one int into `mode` and at most
    // MASK_WORDS words into `mask`, both live locals; `addr` is only looked up.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut i32,
            mask.as_mut_ptr(),
            MASK_WORDS * 64,
            addr,
            MPOL_F_ADDR,
        )
    };
    if r == 0 {
        Ok((mode, mask))
    } else {
        Err(errno())
    }
}

/// The system page size.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

#[cfg(all(target_os = "linux", not(miri)))]
fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// See the Linux version: without NUMA syscalls this always reports `ENOSYS`.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn mbind(
    _addr: usize,
    _len: usize,
    _mode: i32,
    _mask: &[u64; MASK_WORDS],
) -> Result<(), i32> {
    Err(libc::ENOSYS)
}

/// See the Linux version: without NUMA syscalls this always reports `ENOSYS`.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn get_mempolicy(_addr: usize) -> Result<(i32, [u64; MASK_WORDS]), i32> {
    Err(libc::ENOSYS)
}

/// The page size assumed where it cannot be asked.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn page_size() -> usize {
    4096
}
