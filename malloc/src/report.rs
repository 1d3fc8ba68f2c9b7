//! Messages to stderr that never allocate, through keel-heap's
//! [`StackWriter`] (a fixed buffer formatted with `core::fmt` and written
//! with one `write(2)`).

use core::fmt::{self, Write as _};
use core::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use keel_heap::StackWriter;

/// Writes one fixed line to stderr.
pub fn line(s: &str) {
    let mut w = StackWriter::<256>::new();
    let _ = w.write_str(s);
    w.write_to_stderr();
}

/// Reports a pointer keel-heap does not own when `checker` (the call is
/// otherwise ignored, as a leak is safer than corrupting a heap).
pub fn foreign_pointer(func: &str, p: *const u8, checker: bool) {
    if checker {
        let mut w = StackWriter::<160>::new();
        let _ = writeln!(
            w,
            "keel-malloc: {func}({p:p}): not a block keel-heap manages; ignored"
        );
        w.write_to_stderr();
    }
}

/// Formats keel-heap's statistics into `w`, one `name value` pair a line,
/// byte counts also in MiB.
pub fn format_stats<W: fmt::Write>(w: &mut W, s: &keel_heap::Stats) -> fmt::Result {
    writeln!(w, "keel-malloc statistics:")?;
    let bytes = [
        ("in use", s.in_use),
        ("peak", s.peak),
        ("mapped", s.mapped),
        ("released", s.released),
        ("direct-map pool", s.pool_bytes),
    ];
    for (name, v) in bytes {
        writeln!(
            w,
            "  {name:<16} {v:>16} bytes ({:.1} MiB)",
            v as f64 / 1048576.0
        )?;
    }
    let counts = [
        ("madvise calls", s.madvise_calls),
        ("foreign frees", s.foreign_frees),
        ("gc passes", s.gc_passes),
        ("release passes", s.release_passes),
        ("decay passes", s.decay_passes),
        ("slab hits", s.slab_hits),
        ("heaps", s.heaps),
        ("abandoned heaps", s.abandoned),
        ("sweeps", s.sweeps),
    ];
    for (name, v) in counts {
        writeln!(w, "  {name:<16} {v:>16}")?;
    }
    Ok(())
}

/// Prints keel-heap's process-wide statistics to stderr without allocating.
pub fn print_stats() {
    let s = keel_heap::raw::stats();
    let mut w = StackWriter::<2048>::new();
    let _ = format_stats(&mut w, &s);
    w.write_to_stderr();
}

/// The duplicate of stderr taken at start-up ([`keep_stderr`]) and the file
/// it refers to (device, inode), or -1.
static KEPT_FD: AtomicI32 = AtomicI32::new(-1);
static KEPT_ID: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// The (device, inode) of an open descriptor.
fn identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: fstat writes into the struct we own; a zeroed `stat` is a
    // valid value of the plain C struct.
    unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev as u64, st.st_ino as u64))
    }
}

/// Takes a duplicate of stderr (close-on-exec, above the low descriptors)
/// for the exit statistics: a program may close fd 2 before its exit
/// handlers end.
pub fn keep_stderr() {
    // SAFETY: fcntl on fd 2 has no memory effects; a failure returns -1.
    let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 10) };
    if let Some((dev, ino)) = (fd >= 0).then(|| identity(fd)).flatten() {
        KEPT_ID[0].store(dev, Ordering::Relaxed);
        KEPT_ID[1].store(ino, Ordering::Relaxed);
        KEPT_FD.store(fd, Ordering::Relaxed);
    }
}

/// The exit report: to `KEEL_HEAP_STATS_FILE` (appended) when set, else to
/// the duplicate of stderr taken at start-up if it still refers to the same
/// file (the program may have closed it and reused the number), else to
/// fd 2. Never allocates.
pub fn print_stats_at_exit() {
    let s = keel_heap::raw::stats();
    let mut w = StackWriter::<2048>::new();
    let _ = format_stats(&mut w, &s);
    if let Some(path) = crate::options::getenv("KEEL_HEAP_STATS_FILE") {
        let mut name = [0u8; 4096];
        if !path.is_empty() && path.len() < name.len() {
            name[..path.len()].copy_from_slice(path);
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC;
            // SAFETY: `name` is NUL-terminated (zero beyond the path).
            let fd = unsafe { libc::open(name.as_ptr().cast(), flags, 0o644) };
            if fd >= 0 {
                // SAFETY: our own descriptor, opened just now, closed
                // right after.
                unsafe {
                    w.write_to(fd);
                    libc::close(fd);
                }
                return;
            }
        }
        line("keel-malloc: cannot open KEEL_HEAP_STATS_FILE; statistics on stderr\n");
    }
    let fd = KEPT_FD.load(Ordering::Relaxed);
    let same = identity(fd).is_some_and(|(dev, ino)| {
        dev == KEPT_ID[0].load(Ordering::Relaxed) && ino == KEPT_ID[1].load(Ordering::Relaxed)
    });
    // SAFETY: the kept duplicate of stderr while it is still the file it
    // was (same device and inode), else stderr itself.
    unsafe { w.write_to(if fd >= 0 && same { fd } else { 2 }) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_fit_the_exit_buffer() {
        let s = keel_heap::Stats {
            in_use: u64::MAX,
            peak: 1 << 40,
            mapped: 3 << 20,
            released: 0,
            madvise_calls: u64::MAX,
            foreign_frees: 12,
            gc_passes: 7,
            release_passes: 1,
            decay_passes: 5,
            slab_hits: 99,
            heaps: 3,
            abandoned: 1,
            pool_bytes: 4096,
            sweeps: 2,
        };
        let mut w = StackWriter::<2048>::new();
        format_stats(&mut w, &s).unwrap();
        let text = core::str::from_utf8(w.as_bytes()).unwrap();
        assert!(!text.ends_with("...\n"), "cut off: {text}");
        assert!(
            text.contains("mapped                    3145728 bytes (3.0 MiB)"),
            "{text}"
        );
        assert!(text.contains("foreign frees                  12"), "{text}");
        assert_eq!(text.lines().count(), 15);
    }
}
