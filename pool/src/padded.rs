//! A value on cache lines of its own.

/// Keeps its contents on cache lines of their own: values written by
/// different threads (the lock, the hints spinners poll, each hand's
/// accumulator) must not share a line, or every write is a transfer.
/// 128 bytes, because x86-64 prefetches lines in pairs (as crossbeam's
/// `CachePadded` assumes).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> core::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for Padded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

// A padded value never shares a 128-byte pair of lines with another.
static_assertions::const_assert!(core::mem::align_of::<Padded<u8>>() == 128);
static_assertions::const_assert!(core::mem::size_of::<Padded<u64>>() == 128);
