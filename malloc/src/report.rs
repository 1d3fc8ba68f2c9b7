//! Messages to stderr that never allocate: a fixed buffer formatted with
//! `core::fmt` and written with one `write(2)`.

use core::fmt::{self, Write as _};

/// A `core::fmt::Write` sink over a stack buffer; output past `N` bytes is
/// cut off (and marked with `...`), never allocated.
pub struct StackWriter<const N: usize> {
    buf: [u8; N],
    len: usize,
    cut: bool,
}

impl<const N: usize> StackWriter<N> {
    /// An empty writer.
    pub const fn new() -> Self {
        StackWriter {
            buf: [0; N],
            len: 0,
            cut: false,
        }
    }

    /// What was written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Writes the buffer to stderr (file descriptor 2) in one call where the
    /// kernel allows, retrying on partial writes.
    pub fn write_to_stderr(&self) {
        let mut rest = self.as_bytes();
        while !rest.is_empty() {
            // SAFETY: `rest` is a valid initialized byte slice.
            let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
            if n <= 0 {
                return; // stderr closed or broken: nothing useful to do
            }
            rest = &rest[n as usize..];
        }
    }
}

impl<const N: usize> Default for StackWriter<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for StackWriter<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = N - self.len;
        let b = s.as_bytes();
        if b.len() <= room && !self.cut {
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        } else if !self.cut {
            self.cut = true;
            let keep = room.saturating_sub(4);
            self.buf[self.len..self.len + keep].copy_from_slice(&b[..keep]);
            self.len += keep;
            let tail = b"...\n";
            let t = tail.len().min(N - self.len);
            self.buf[self.len..self.len + t].copy_from_slice(&tail[..t]);
            self.len += t;
        }
        Ok(())
    }
}

/// Writes one fixed line to stderr.
pub fn line(s: &str) {
    let mut w = StackWriter::<256>::new();
    let _ = w.write_str(s);
    w.write_to_stderr();
}

/// Reports a pointer keel-heap does not own, when the checker is on (the
/// call is otherwise ignored, as a leak is safer than corrupting a heap).
pub fn foreign_pointer(func: &str, p: *const u8) {
    if crate::init::checker_on() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_cuts_instead_of_growing() {
        let mut w = StackWriter::<16>::new();
        write!(w, "0123456789").unwrap();
        assert_eq!(w.as_bytes(), b"0123456789");
        write!(w, "abcdefghij").unwrap();
        assert_eq!(w.as_bytes().len(), 16);
        assert!(w.as_bytes().ends_with(b"...\n"));
        write!(w, "more").unwrap();
        assert_eq!(w.as_bytes().len(), 16);
    }

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
        assert_eq!(text.lines().count(), 14);
    }
}
