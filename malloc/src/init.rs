//! Start-up: options from the environment, `fork` handlers, the exit report.
//!
//! The first `malloc` can arrive before this library's constructor runs
//! (ld.so and libc allocate while they start), and even before libc has set
//! `environ`. So the options are applied lazily by the first allocation that
//! finds `environ` set ([`ensure`]), and again checked by the constructor,
//! which also registers the `pthread_atfork` handlers and the exit report.
//! Nothing here allocates, and a re-entrant call while another is applying
//! the options simply proceeds with keel-heap's defaults.

use crate::options::{self, EnvOptions};
use core::ffi::c_char;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

const UNINIT: u8 = 0;
const BUSY: u8 = 1;
const READY: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static STATS_AT_EXIT: AtomicBool = AtomicBool::new(false);
static CHECKER: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    // libc's environment pointer; null until libc has started.
    #[link_name = "environ"]
    static ENVIRON: *const *const c_char;
}

/// Whether the options are applied (one relaxed load; see [`ensure`]).
#[inline(always)]
pub fn ready() -> bool {
    STATE.load(Ordering::Relaxed) == READY
}

/// Applies the environment's options once, as early as the environment is
/// readable. Cheap after the first call: one relaxed load.
#[inline]
pub fn ensure() {
    if STATE.load(Ordering::Acquire) != READY {
        ensure_slow();
    }
}

#[cold]
fn ensure_slow() {
    // SAFETY: reading libc's `environ` pointer value; libc writes it once at
    // start-up (before any thread exists) and on setenv, never concurrently
    // with the start-up path this runs on.
    let env_ready = unsafe { !core::ptr::addr_of!(ENVIRON).read().is_null() };
    if !env_ready {
        return; // too early: the next allocation tries again
    }
    if STATE
        .compare_exchange(UNINIT, BUSY, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return; // another thread (or this one, re-entrantly) is on it
    }
    apply(options::from_env());
    STATE.store(READY, Ordering::Release);
}

/// Hands the options to keel-heap and remembers the ones this crate acts on.
pub fn apply(o: EnvOptions) {
    let mut heap = keel_heap::Options::default();
    if let Some(n) = o.purge_every {
        heap.purge_every = n.clamp(1, u64::from(u32::MAX)) as u32;
    }
    if let Some(ms) = o.decay_ms {
        heap.decay_ms = ms;
    }
    if let Some(mib) = o.pool_mib {
        heap.pool_budget = usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    }
    if let Some(on) = o.decay_thread {
        heap.decay_thread = on;
    }
    heap.checker = o.checker;
    keel_heap::raw::configure(heap);
    STATS_AT_EXIT.store(o.stats, Ordering::Relaxed);
    CHECKER.store(o.checker, Ordering::Relaxed);
}

/// Whether `KEEL_HEAP_CHECK` turned the checker on.
pub fn checker_on() -> bool {
    CHECKER.load(Ordering::Relaxed)
}

extern "C" fn fork_prepare() {
    keel_heap::raw::prepare_fork();
}

extern "C" fn fork_parent() {
    // SAFETY: pthread_atfork calls this after `fork_prepare`.
    unsafe { keel_heap::raw::parent_after_fork() };
}

extern "C" fn fork_child() {
    // SAFETY: pthread_atfork calls this in the child after `fork_prepare`.
    unsafe { keel_heap::raw::child_after_fork() };
}

extern "C" fn stats_at_exit() {
    crate::report::print_stats_at_exit();
}

/// Whether this copy of the library is the process's `malloc`. A program
/// linked with the static library and run with the shared one preloaded
/// holds two copies; only the one whose `malloc` the dynamic linker picked
/// (the executable's) reports warnings and statistics.
fn is_the_process_malloc() -> bool {
    #[cfg(test)]
    {
        false
    }
    #[cfg(not(test))]
    {
        // Our own `malloc`'s address would be resolved through the dynamic
        // linker too (to the winner), so compare the shared objects holding
        // the process's `malloc` and a function that is not exported.
        let object = |addr: *const libc::c_void| {
            // SAFETY: dladdr only looks the address up and fills `info`, a
            // plain C struct for which zero is a valid value.
            unsafe {
                let mut info: libc::Dl_info = core::mem::zeroed();
                (libc::dladdr(addr, &mut info) != 0).then_some(info.dli_fbase.addr())
            }
        };
        // SAFETY: dlsym with a NUL-terminated name; the constructor runs
        // after libc has started.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) };
        let mine = object(is_the_process_malloc as *const libc::c_void);
        found.is_null() || mine.is_none() || object(found) == mine
    }
}

/// The library constructor: options, `fork` handlers, exit report.
///
/// Registered early (a preloaded library initializes right after libc), our
/// `prepare` handler runs after those registered later (pthread_atfork runs
/// prepare handlers in reverse order), so other libraries' handlers may still
/// allocate before keel-heap's locks are taken, and our `child` handler runs
/// first, so theirs may allocate in the child.
extern "C" fn on_load() {
    ensure();
    if !is_the_process_malloc() {
        return;
    }
    crate::options::warn_bad_env();
    // SAFETY: the three handlers are `extern "C" fn()` that never unwind;
    // pthread_atfork only stores them.
    let rc =
        unsafe { libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
    if rc != 0 {
        crate::report::line("keel-malloc: pthread_atfork failed; fork from threads is unsafe\n");
    }
    if STATS_AT_EXIT.load(Ordering::Relaxed) {
        // Programs close stderr before exit (`ls`, `cat` and other GNU
        // tools do, in their own exit handlers, which run before ours): the
        // statistics go to a duplicate taken now.
        crate::report::keep_stderr();
        // SAFETY: `stats_at_exit` is an `extern "C" fn()` that never unwinds
        // and does not allocate.
        if unsafe { libc::atexit(stats_at_exit) } != 0 {
            crate::report::line("keel-malloc: atexit failed; no statistics at exit\n");
        }
    }
}

// Also registered in the crate's unit-test binary, where it only applies
// the options to keel-heap (which that binary does not allocate from).
#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn() = on_load;
