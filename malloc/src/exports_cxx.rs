//! C++'s replaceable `operator new` and `operator delete`, exported under
//! their Itanium-ABI names (64-bit `std::size_t`), as mimalloc does: a C++
//! program preloaded with keel-malloc or linked with its static library
//! allocates through keel-heap's fast path directly, not through
//! libstdc++'s operators calling `malloc`.
//!
//! Every form the standard lists: plain and array; `std::nothrow_t`;
//! aligned (`std::align_val_t`); sized delete; sized and aligned delete.
//! The deletes ignore the size and alignment hints: keel-heap finds a
//! block's size class in its slab's metadata, the cache line the free
//! writes anyway, so a hint saves no lookup (and a wrong one cannot
//! corrupt the heap).
//!
//! Failure follows the standard: keel-heap has already given back its free
//! memory and retried once; then the call goes on to the C++ runtime's own
//! operator of the same name (the next definition, `dlsym(RTLD_NEXT)`),
//! which runs the `new_handler` loop over `malloc` (keel's) and throws
//! `std::bad_alloc`, or, for the `nothrow` forms, returns null (an aligned
//! request past `MAX_SIZE` goes on to the unaligned form instead, whose
//! size cannot wrap: `past_any_alignment`). The
//! exception unwinds through these functions, hence `extern "C-unwind"`.
//! With no C++ runtime to defer to (a program with libstdc++ linked in
//! statically), a throwing form that fails prints one line and aborts, and
//! a `nothrow` form returns null.

use crate::policy::{self, MIN_ALIGN as MIN};
use core::ffi::{CStr, c_void};

/// `operator new(size_t)` and its kin, as the C++ runtime defines them.
type New = unsafe extern "C-unwind" fn(usize) -> *mut c_void;
type NewNothrow = unsafe extern "C-unwind" fn(usize, *const c_void) -> *mut c_void;
type NewAligned = unsafe extern "C-unwind" fn(usize, usize) -> *mut c_void;
type NewAlignedNothrow = unsafe extern "C-unwind" fn(usize, usize, *const c_void) -> *mut c_void;

/// The C++ runtime's own definition of `name`, the one after ours.
fn next(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT looks past this object.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// A throwing form failed and nothing can throw `std::bad_alloc`.
#[cold]
fn no_runtime(name: &CStr) -> ! {
    use core::fmt::Write as _;
    let mut w = keel_heap::StackWriter::<160>::new();
    let _ = writeln!(
        w,
        "keel-malloc: out of memory in {}, and no C++ runtime to throw std::bad_alloc",
        name.to_str().unwrap_or("operator new")
    );
    w.write_to_stderr();
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}

/// The failure path of the throwing `new(size)` forms.
#[cold]
#[inline(never)]
unsafe fn new_failed(name: &CStr, size: usize) -> *mut c_void {
    let f = next(name);
    if f.is_null() {
        no_runtime(name);
    }
    // SAFETY: the runtime's definition of this very operator has this type.
    unsafe { core::mem::transmute::<*mut c_void, New>(f)(size) }
}

/// The failure path of the throwing aligned forms.
#[cold]
#[inline(never)]
unsafe fn new_aligned_failed(name: &CStr, size: usize, align: usize) -> *mut c_void {
    if size > policy::MAX_SIZE {
        // SAFETY: as `new_failed` (see `past_any_alignment`).
        return unsafe { new_failed(past_any_alignment(false), size) };
    }
    let f = next(name);
    if f.is_null() {
        no_runtime(name);
    }
    // SAFETY: as `new_failed`.
    unsafe { core::mem::transmute::<*mut c_void, NewAligned>(f)(size, align) }
}

/// The failure path of the `nothrow` forms.
#[cold]
#[inline(never)]
unsafe fn new_nothrow_failed(name: &CStr, size: usize, tag: *const c_void) -> *mut c_void {
    let f = next(name);
    if f.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: as `new_failed`; the runtime's nothrow form catches its own
    // `bad_alloc` (thrown from our throwing form, which it calls).
    unsafe { core::mem::transmute::<*mut c_void, NewNothrow>(f)(size, tag) }
}

/// The failure path of the aligned `nothrow` forms.
#[cold]
#[inline(never)]
unsafe fn new_aligned_nothrow_failed(
    name: &CStr,
    size: usize,
    align: usize,
    tag: *const c_void,
) -> *mut c_void {
    if size > policy::MAX_SIZE {
        // SAFETY: as `new_nothrow_failed` (see `past_any_alignment`).
        return unsafe { new_nothrow_failed(past_any_alignment(true), size, tag) };
    }
    let f = next(name);
    if f.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: as `new_nothrow_failed`.
    unsafe { core::mem::transmute::<*mut c_void, NewAlignedNothrow>(f)(size, align, tag) }
}

/// The symbol name `$sym` as a C string, for `dlsym`.
macro_rules! cname {
    ($sym:literal) => {
        match CStr::from_bytes_with_nul(concat!($sym, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("a symbol name holds no NUL"),
        }
    };
}

/// The unaligned form a failed aligned request past `MAX_SIZE` goes on
/// to: the C++ runtime's aligned form rounds the size up to the alignment
/// before it allocates, which wraps a size near `SIZE_MAX` to a small one
/// (libstdc++ then returned a 64-byte block for `new(SIZE_MAX,
/// align_val_t(64))`), while no size past `MAX_SIZE` can be served at any
/// alignment: the unaligned form fails as it must (the `new_handler` loop,
/// then `std::bad_alloc` or null).
fn past_any_alignment(nothrow: bool) -> &'static CStr {
    if nothrow {
        cname!("_ZnwmRKSt9nothrow_t")
    } else {
        cname!("_Znwm")
    }
}

/// Defines `new` forms: keel's fast path (`$fast`, inlined: no call, so
/// the operator is a leaf that saves no register), else one tail call to
/// the rest (`$slow`, which must not repeat the fast path: it was counted),
/// then the failure path.
macro_rules! new_forms {
    ($($(#[$doc:meta])* $sym:literal $name:ident($($arg:ident: $ty:ty),*)
        => $fast:expr, $slow:expr, $fail:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// C++'s: the block is released with a matching `operator delete`.
        #[unsafe(export_name = $sym)]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) -> *mut c_void {
            /// Everything the fast path does not serve.
            #[inline(never)]
            unsafe fn slow($($arg: $ty),*) -> *mut c_void {
                let p: *mut u8 = $slow;
                if !p.is_null() {
                    return p.cast();
                }
                const NAME: &CStr = cname!($sym);
                // SAFETY: the failure path of this very operator.
                unsafe { $fail(NAME, $($arg),*) }
            }
            let p: *mut u8 = $fast;
            if !p.is_null() {
                return p.cast();
            }
            // SAFETY: forwarded C++ contract.
            unsafe { slow($($arg),*) }
        }
    )*};
}

/// Defines `delete` forms: `free`, the hints unused.
macro_rules! delete_forms {
    ($($(#[$doc:meta])* $sym:literal $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `p` is null or a live block from a matching `operator new`.
        #[unsafe(export_name = $sym)]
        pub unsafe extern "C" fn $name(p: *mut c_void $(, $arg: $ty)*) {
            $(let _ = $arg;)*
            // SAFETY: forwarded C++ contract.
            unsafe { policy::free(p.cast()) }
        }
    )*};
}

new_forms! {
    /// `operator new(std::size_t)`.
    "_Znwm" new(size: usize)
        => policy::alloc_fast(size, MIN), policy::alloc_with_slow(size, MIN, false), new_failed;
    /// `operator new[](std::size_t)`.
    "_Znam" new_array(size: usize)
        => policy::alloc_fast(size, MIN), policy::alloc_with_slow(size, MIN, false), new_failed;
    /// `operator new(std::size_t, const std::nothrow_t&)`.
    "_ZnwmRKSt9nothrow_t" new_nothrow(size: usize, tag: *const c_void)
        => policy::alloc_fast(size, MIN), policy::alloc_with_slow(size, MIN, false),
        new_nothrow_failed;
    /// `operator new[](std::size_t, const std::nothrow_t&)`.
    "_ZnamRKSt9nothrow_t" new_array_nothrow(size: usize, tag: *const c_void)
        => policy::alloc_fast(size, MIN), policy::alloc_with_slow(size, MIN, false),
        new_nothrow_failed;
    /// `operator new(std::size_t, std::align_val_t)`.
    "_ZnwmSt11align_val_t" new_aligned(size: usize, align: usize)
        => policy::alloc_fast(size, align), policy::aligned_new_slow(size, align),
        new_aligned_failed;
    /// `operator new[](std::size_t, std::align_val_t)`.
    "_ZnamSt11align_val_t" new_array_aligned(size: usize, align: usize)
        => policy::alloc_fast(size, align), policy::aligned_new_slow(size, align),
        new_aligned_failed;
    /// `operator new(std::size_t, std::align_val_t, const std::nothrow_t&)`.
    "_ZnwmSt11align_val_tRKSt9nothrow_t"
        new_aligned_nothrow(size: usize, align: usize, tag: *const c_void)
        => policy::alloc_fast(size, align), policy::aligned_new_slow(size, align),
        new_aligned_nothrow_failed;
    /// `operator new[](std::size_t, std::align_val_t, const std::nothrow_t&)`.
    "_ZnamSt11align_val_tRKSt9nothrow_t"
        new_array_aligned_nothrow(size: usize, align: usize, tag: *const c_void)
        => policy::alloc_fast(size, align), policy::aligned_new_slow(size, align),
        new_aligned_nothrow_failed;
}

delete_forms! {
    /// `operator delete(void*)`.
    "_ZdlPv" delete();
    /// `operator delete[](void*)`.
    "_ZdaPv" delete_array();
    /// `operator delete(void*, std::size_t)`.
    "_ZdlPvm" delete_sized(size: usize);
    /// `operator delete[](void*, std::size_t)`.
    "_ZdaPvm" delete_array_sized(size: usize);
    /// `operator delete(void*, const std::nothrow_t&)`.
    "_ZdlPvRKSt9nothrow_t" delete_nothrow(tag: *const c_void);
    /// `operator delete[](void*, const std::nothrow_t&)`.
    "_ZdaPvRKSt9nothrow_t" delete_array_nothrow(tag: *const c_void);
    /// `operator delete(void*, std::align_val_t)`.
    "_ZdlPvSt11align_val_t" delete_aligned(align: usize);
    /// `operator delete[](void*, std::align_val_t)`.
    "_ZdaPvSt11align_val_t" delete_array_aligned(align: usize);
    /// `operator delete(void*, std::size_t, std::align_val_t)`.
    "_ZdlPvmSt11align_val_t" delete_sized_aligned(size: usize, align: usize);
    /// `operator delete[](void*, std::size_t, std::align_val_t)`.
    "_ZdaPvmSt11align_val_t" delete_array_sized_aligned(size: usize, align: usize);
    /// `operator delete(void*, std::align_val_t, const std::nothrow_t&)`.
    "_ZdlPvSt11align_val_tRKSt9nothrow_t" delete_aligned_nothrow(align: usize, tag: *const c_void);
    /// `operator delete[](void*, std::align_val_t, const std::nothrow_t&)`.
    "_ZdaPvSt11align_val_tRKSt9nothrow_t"
        delete_array_aligned_nothrow(align: usize, tag: *const c_void);
}
