//! An allocation-free formatter for diagnostics: `core::fmt` into a stack
//! buffer, written with `write(2)`. An allocator cannot allocate while it
//! reports (it may be reporting from inside `malloc`), so keel-heap's own
//! reports and keel-malloc's warnings and statistics all go through this.

use core::fmt;

/// A `core::fmt::Write` sink over a stack buffer of `N` bytes; output past
/// `N` bytes is cut off (and marked with `...`), never allocated.
///
/// ```
/// use core::fmt::Write as _;
/// let mut w = keel_heap::StackWriter::<32>::new();
/// write!(w, "{} MiB in use", 42).unwrap();
/// assert_eq!(w.as_bytes(), b"42 MiB in use");
/// ```
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

    /// Writes the buffer to stderr (file descriptor 2).
    ///
    /// ```
    /// use core::fmt::Write as _;
    /// let mut w = keel_heap::StackWriter::<16>::new();
    /// writeln!(w, "keel-heap: {}", "a long report line").unwrap();
    /// assert_eq!(w.as_bytes(), b"keel-heap: a...\n"); // cut to 16 bytes
    /// w.write_to_stderr();
    /// ```
    pub fn write_to_stderr(&self) {
        // SAFETY: descriptor 2 is the process's stderr by convention; if
        // it is closed the write fails quietly.
        unsafe { self.write_to(2) };
    }

    /// Writes the buffer to file descriptor `fd`, in one call where the
    /// kernel allows, retrying on partial writes; gives up quietly if the
    /// descriptor is closed or broken (there is nothing useful to do).
    ///
    /// ```
    /// use std::{fmt::Write as _, io::Read as _, os::fd::AsRawFd as _};
    /// let (mut reader, writer) = std::io::pipe()?;
    /// let mut w = keel_heap::StackWriter::<64>::new();
    /// writeln!(w, "{} GC passes", 3).unwrap();
    /// // SAFETY: `writer` owns the descriptor, open for the call.
    /// unsafe { w.write_to(writer.as_raw_fd()) };
    /// drop(writer);
    /// let mut got = Vec::new();
    /// reader.read_to_end(&mut got)?;
    /// assert_eq!(got, b"3 GC passes\n");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Safety
    /// `fd` is a descriptor the caller owns or borrows for the call (I/O
    /// safety: a raw number could name another part of the program's
    /// file, socket or pipe).
    pub unsafe fn write_to(&self, fd: i32) {
        crate::os::write_all(fd, self.as_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write as _;

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
}
