//! The thread's heap once READY (null otherwise): the fast paths read only
//! this, so it is one thread-local read per call.
//!
//! On x86-64 Linux it is an initial-exec TLS slot read with two instructions.
//! A Rust `thread_local!` in a shared library (keel-malloc's cdylib) uses the
//! general-dynamic model, a call to `__tls_get_addr` on every access (11 of a
//! malloc's instructions under callgrind), and stable Rust cannot choose the
//! model; the slot is therefore declared in assembly. Initial-exec is what
//! mimalloc and glibc's own malloc use: fine for an executable and for a
//! library loaded at start-up or preloaded. A shared library holding this
//! crate and loaded later with `dlopen` (a Rust extension module using
//! [`KeelAlloc`](crate::KeelAlloc)) takes the 8 bytes from glibc's reserve
//! for such libraries (`glibc.rtld.optional_static_tls`, 512 bytes by
//! default); `dlopen` fails only if that reserve is used up. Elsewhere
//! (other targets, Miri), or with the `dynamic-tls` feature, a plain
//! `thread_local!` serves. The slot holds an opaque pointer (the heap, for
//! `raw`).

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(miri),
    not(feature = "dynamic-tls")
))]
mod imp {

    // The slot's symbol, with the crate's major and minor version in it:
    // two semver-incompatible keel-heap versions linked into one binary
    // each get their own slot instead of a duplicate-symbol error.
    macro_rules! slot {
        () => {
            concat!(
                "keel_heap_raw_cur_v",
                env!("CARGO_PKG_VERSION_MAJOR"),
                "_",
                env!("CARGO_PKG_VERSION_MINOR")
            )
        };
    }

    // One pointer in the thread's static TLS block, zero (null) in every
    // new thread. Hidden: only this crate refers to it.
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        concat!(".globl ", slot!()),
        concat!(".hidden ", slot!()),
        concat!(".type ", slot!(), ", @object"),
        concat!(".size ", slot!(), ", 8"),
        concat!(slot!(), ":"),
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub(crate) fn get() -> *const () {
        let v: *const ();
        // SAFETY: reads this thread's own 8-byte slot (initial-exec: the
        // GOT holds its offset from the thread pointer in %fs).
        unsafe {
            core::arch::asm!(
                concat!("mov {v}, qword ptr [rip + ", slot!(), "@GOTTPOFF]"),
                "mov {v}, qword ptr fs:[{v}]",
                v = out(reg) v,
                options(nostack, preserves_flags, readonly),
            );
        }
        v
    }

    #[inline]
    pub(crate) fn set(p: *const ()) {
        // SAFETY: writes this thread's own 8-byte slot.
        unsafe {
            core::arch::asm!(
                concat!("mov {t}, qword ptr [rip + ", slot!(), "@GOTTPOFF]"),
                "mov qword ptr fs:[{t}], {p}",
                t = out(reg) _,
                p = in(reg) p,
                options(nostack, preserves_flags),
            );
        }
    }
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(miri),
    not(feature = "dynamic-tls")
)))]
mod imp {
    use core::cell::Cell;

    std::thread_local! {
        static CUR: Cell<*const ()> = const { Cell::new(core::ptr::null()) };
    }

    #[inline(always)]
    pub(crate) fn get() -> *const () {
        CUR.with(|c| c.get())
    }

    #[inline]
    pub(crate) fn set(p: *const ()) {
        CUR.with(|c| c.set(p))
    }
}

pub(crate) use imp::{get, set};

/// Sets the heap and returns the previous one.
pub(crate) fn replace(p: *const ()) -> *const () {
    let old = get();
    set(p);
    old
}
