//! Helpers shared by the test files.
#![allow(dead_code)]

/// Sets a decay clock (an hour) that no run reaches, emulated ones
/// included: for tests of what an adopter finds in an abandoned heap, which
/// the abandoned heap's own clock (a 256th of `decay_ms`) would otherwise
/// release first on a slow machine. `decay_abandoned.rs` tests that clock.
pub fn decay_out_of_reach() {
    keel_heap::configure(keel_heap::Options {
        decay_ms: 3_600_000,
        ..keel_heap::options()
    });
}

/// A block pointer handed to another thread to free.
pub struct SendPtr(pub *mut u8);
// SAFETY: the pointer is handed over to exactly one thread.
unsafe impl Send for SendPtr {}

/// A seeded xorshift generator (tests must be reproducible).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn pattern(tag: u64) -> [u8; 251] {
    let mut p = [0u8; 251];
    for (i, b) in p.iter_mut().enumerate() {
        *b = (tag as usize).wrapping_add(i * 31) as u8;
    }
    p
}

/// Fills `len` bytes at `p` with a pattern derived from `tag`.
///
/// # Safety
/// `p` holds `len` writable bytes.
pub unsafe fn fill(p: *mut u8, len: usize, tag: u64) {
    let pat = pattern(tag);
    // SAFETY: in bounds per the contract.
    let dst = unsafe { std::slice::from_raw_parts_mut(p, len) };
    for c in dst.chunks_mut(251) {
        c.copy_from_slice(&pat[..c.len()]);
    }
}

/// Whether `len` bytes at `p` still hold `fill`'s pattern for `tag`.
///
/// # Safety
/// `p` holds `len` readable bytes.
pub unsafe fn check(p: *const u8, len: usize, tag: u64) -> bool {
    let pat = pattern(tag);
    // SAFETY: in bounds per the contract.
    let src = unsafe { std::slice::from_raw_parts(p, len) };
    src.chunks(251).all(|c| c == &pat[..c.len()])
}

/// Resident set size in bytes, if readable: the `Rss:` line of
/// /proc/self/smaps_rollup, which walks the page tables (since Linux 6.2
/// statm's figure comes from per-CPU counters and can lag by megabytes on a
/// machine with many CPUs); /proc/self/statm, with a note printed once,
/// where smaps_rollup is absent (kernels before 4.14).
pub fn rss() -> Option<u64> {
    if let Ok(s) = std::fs::read_to_string("/proc/self/smaps_rollup") {
        let line = s.lines().find(|l| l.starts_with("Rss:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        return Some(kib * 1024);
    }
    static NOTE: std::sync::Once = std::sync::Once::new();
    NOTE.call_once(|| {
        println!("note: /proc/self/smaps_rollup is not readable here: RSS from /proc/self/statm")
    });
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Sizes scaled down under Miri.
pub const fn scale(n: usize) -> usize {
    if cfg!(miri) { n.div_ceil(50) } else { n }
}

/// Creates heaps until one adopts the abandoned heap `id` and returns it,
/// with the other heaps made on the way (kept alive: dropped, they would be
/// abandoned and could be adopted in place of `id`).
pub fn adopt(id: usize) -> (keel_heap::Heap, Vec<keel_heap::Heap>) {
    let mut held = Vec::new();
    loop {
        let n = keel_heap::Heap::new().unwrap();
        if n.id() == id {
            return (n, held);
        }
        held.push(n);
        assert!(held.len() < 64, "abandoned heap never adopted");
    }
}

/// Threads of this process named `keel-decay` (Linux: /proc/self/task; 0
/// where it cannot be read).
pub fn decay_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim_end() == "keel-decay")
        })
        .count()
}
