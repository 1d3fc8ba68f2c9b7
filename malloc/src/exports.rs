//! The exported C symbols. Each forwards to [`crate::policy`]; the glibc
//! `__libc_*` names are covered too, so memory from one family is never
//! freed by another (glibc's own libraries and some programs call them).
//!
//! Compiled out of the crate's unit-test binary, which must keep the system
//! allocator.

use crate::policy;
use core::ffi::{c_int, c_void};

/// `malloc(3)`.
///
/// # Safety
/// None beyond C's: the result is freed with [`free`] at most once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    policy::malloc(size).cast()
}

/// `calloc(3)`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    policy::calloc(n, size).cast()
}

/// `free(3)`.
///
/// # Safety
/// `p` is null or a live block from this allocator, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: forwarded C contract.
    unsafe { policy::free(p.cast()) }
}

/// `realloc(3)`.
///
/// # Safety
/// `p` is null or a live block from this allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded C contract.
    unsafe { policy::realloc(p.cast(), size).cast() }
}

/// `reallocarray(3)`.
///
/// # Safety
/// As [`realloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    // SAFETY: forwarded C contract.
    unsafe { policy::reallocarray(p.cast(), n, size).cast() }
}

/// `posix_memalign(3)`.
///
/// # Safety
/// `out` is valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    // SAFETY: forwarded C contract.
    unsafe { policy::posix_memalign(out.cast(), align, size) }
}

/// `aligned_alloc(3)`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    policy::aligned_alloc(align, size).cast()
}

/// `memalign(3)`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    policy::memalign(align, size).cast()
}

/// `valloc(3)`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    policy::valloc(size).cast()
}

/// `pvalloc(3)`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    policy::pvalloc(size).cast()
}

/// `malloc_usable_size(3)`.
///
/// # Safety
/// `p` is null or a live block from this allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    // SAFETY: forwarded C contract.
    unsafe { policy::usable_size(p.cast()) }
}

/// `malloc_trim(3)`: releases every free page now; returns 1 (memory may
/// have been released).
///
/// # Safety
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_trim(_pad: usize) -> c_int {
    keel_heap::raw::release_pages();
    1
}

/// `cfree`: the obsolete alias of `free` glibc still exports.
///
/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    // SAFETY: forwarded C contract.
    unsafe { policy::free(p.cast()) }
}

/// C23 `free_sized`: the size hint is not needed.
///
/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free_sized(p: *mut c_void, _size: usize) {
    // SAFETY: forwarded C contract.
    unsafe { policy::free(p.cast()) }
}

/// C23 `free_aligned_sized`: the hints are not needed.
///
/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free_aligned_sized(p: *mut c_void, _align: usize, _size: usize) {
    // SAFETY: forwarded C contract.
    unsafe { policy::free(p.cast()) }
}

/// glibc's `__libc_malloc`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_malloc(size: usize) -> *mut c_void {
    policy::malloc(size).cast()
}

/// glibc's `__libc_calloc`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_calloc(n: usize, size: usize) -> *mut c_void {
    policy::calloc(n, size).cast()
}

/// glibc's `__libc_free`.
///
/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_free(p: *mut c_void) {
    // SAFETY: forwarded C contract.
    unsafe { policy::free(p.cast()) }
}

/// glibc's `__libc_realloc`.
///
/// # Safety
/// As [`realloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded C contract.
    unsafe { policy::realloc(p.cast(), size).cast() }
}

/// glibc's private `__libc_reallocarray` (used by other glibc libraries).
///
/// # Safety
/// As [`realloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    // SAFETY: forwarded C contract.
    unsafe { policy::reallocarray(p.cast(), n, size).cast() }
}

/// glibc's `__libc_memalign`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_memalign(align: usize, size: usize) -> *mut c_void {
    policy::memalign(align, size).cast()
}

/// glibc's `__libc_valloc`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_valloc(size: usize) -> *mut c_void {
    policy::valloc(size).cast()
}

/// glibc's `__libc_pvalloc`.
///
/// # Safety
/// As [`malloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_pvalloc(size: usize) -> *mut c_void {
    policy::pvalloc(size).cast()
}

/// keel extension: runs this thread's heap GC passes (the amortized release).
/// Programs may look it up with `dlsym(RTLD_DEFAULT, "keel_malloc_gc")`.
///
/// # Safety
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn keel_malloc_gc() {
    keel_heap::raw::gc();
}

/// keel extension: releases every free page to the OS now.
///
/// # Safety
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn keel_malloc_release_pages() {
    keel_heap::raw::release_pages();
}

/// keel extension: prints the statistics to stderr now (no allocation).
///
/// # Safety
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn keel_malloc_print_stats() {
    crate::report::print_stats();
}

/// keel extension: bytes in live blocks, process-wide (`in use` of the
/// statistics; this thread's counters are brought up to date first).
///
/// # Safety
/// None.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn keel_malloc_in_use() -> u64 {
    keel_heap::raw::stats().in_use
}
