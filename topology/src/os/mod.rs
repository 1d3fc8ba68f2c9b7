//! The OS layer: everything that reads the live system or a recorded root.
//!
//! `linux` reads sysfs/procfs under a root with plain file reads, so it
//! builds everywhere `std` does (a recorded Linux root replays on any OS);
//! the live affinity mask is the one Linux-only call. macOS answers from
//! sysctl (`macos`); other systems, or a failed native read, from
//! `fallback` (`available_parallelism`, marked as a fallback).

pub(crate) mod fallback;
pub(crate) mod linux;
#[cfg(target_os = "macos")]
pub(crate) mod macos;

use std::string::String;

use crate::CpuSet;
use crate::build::Raw;

/// The live machine from this OS's own source, or why there is none.
#[cfg(target_os = "linux")]
pub(crate) fn native() -> Result<Raw, String> {
    let affinity = match live_affinity() {
        Some(s) => linux::AffinitySource::Set(s),
        None => linux::AffinitySource::None,
    };
    linux::read_root(std::path::Path::new("/"), affinity)
        .map_err(|e| std::format!("sysfs unreadable ({e})"))
}

/// The live machine from this OS's own source, or why there is none.
#[cfg(target_os = "macos")]
pub(crate) fn native() -> Result<Raw, String> {
    macos::raw()
}

/// The live machine from this OS's own source, or why there is none.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) fn native() -> Result<Raw, String> {
    Err("no topology source on this OS".into())
}

/// The calling thread's affinity mask, on systems that have one.
pub(crate) fn live_affinity() -> Option<CpuSet> {
    current_affinity().ok()
}

/// The CPUs the calling thread may run on: its affinity mask, as
/// `sched_getaffinity` reports it, however many CPUs the kernel supports
/// (the buffer grows past `cpu_set_t`'s 1024 until the kernel takes it).
///
/// On systems without per-thread affinity masks (anything but Linux) the
/// error is of kind [`std::io::ErrorKind::Unsupported`].
///
/// ```
/// let cpus = keel_topology::current_affinity()?;
/// // This thread is running, so it may run somewhere.
/// # #[cfg(target_os = "linux")]
/// assert!(!cpus.is_empty());
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg(target_os = "linux")]
pub fn current_affinity() -> std::io::Result<CpuSet> {
    // Start at 1024 CPUs and grow: the kernel answers EINVAL while the
    // buffer is smaller than its own mask.
    let mut words = 16usize;
    loop {
        let mut buf = std::vec![0u64; words];
        let bytes = words * 8;
        // A `cpu_set_t` is a plain bitmap of u64-compatible words, so
        // treating the buffer as one is sound.
        // SAFETY: `buf` is a live, writable allocation of exactly `bytes`
        // bytes, and the kernel writes at most `bytes` bytes into it.
        let rc = unsafe {
            libc::sched_getaffinity(0, bytes, buf.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            return Ok(CpuSet::from_words(buf));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) || words >= (crate::parse::MAX_CPU + 1) / 64 {
            return Err(e);
        }
        words *= 2;
    }
}

/// The CPUs the calling thread may run on (not available on this OS).
///
/// ```
/// let cpus = keel_topology::current_affinity();
/// # #[cfg(not(target_os = "linux"))]
/// assert!(cpus.is_err());
/// ```
#[cfg(not(target_os = "linux"))]
pub fn current_affinity() -> std::io::Result<CpuSet> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no per-thread affinity mask on this OS",
    ))
}
