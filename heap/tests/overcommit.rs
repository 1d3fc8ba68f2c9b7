//! Requests that can never be backed fail, as glibc's do under the kernel's
//! default overcommit heuristic (mode 0): keel-heap commits what it will
//! write without `MAP_NORESERVE`, so a request larger than memory and swap
//! together is refused by the kernel and the allocation returns null. A
//! large alignment costs address space only: 16 bytes aligned to 1 TiB are
//! served, with the padding reserved and not committed.
#![cfg(not(any(keel_loom, miri)))]

use keel_heap::{Heap, raw};

/// Whether the kernel refuses a single commit of `bytes` here: heuristic
/// overcommit and less memory and swap than that.
fn refuses(bytes: u64) -> Result<(), String> {
    // qemu-user (ci/aarch64.sh) maps its guest's memory itself, and keeps
    // bookkeeping per guest page that a terabyte map exhausts.
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    if comm.starts_with("qemu-") {
        return Err(format!("running under {}", comm.trim()));
    }
    let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
        .map_err(|e| format!("no /proc/sys/vm/overcommit_memory: {e}"))?;
    if mode.trim() != "0" {
        return Err(format!(
            "overcommit mode {} (not the heuristic 0)",
            mode.trim()
        ));
    }
    let info = std::fs::read_to_string("/proc/meminfo").map_err(|e| e.to_string())?;
    let kib = |key: &str| -> u64 {
        info.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let total = (kib("MemTotal:") + kib("SwapTotal:")) << 10;
    if total >= bytes / 2 {
        return Err(format!("{total} bytes of memory and swap"));
    }
    // The kernel itself must refuse more than memory and swap in one map
    // (an emulator such as qemu-user maps for its guest its own way).
    let probe = (total + (1 << 30)) as usize;
    // SAFETY: an anonymous private mapping at a kernel-chosen address,
    // unmapped at once if it is made.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            probe,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p != libc::MAP_FAILED {
            libc::munmap(p, probe);
            return Err(format!("a {probe}-byte commit was allowed"));
        }
    }
    Ok(())
}

#[test]
fn requests_that_can_never_be_backed_fail() {
    if let Err(why) = refuses(1 << 40) {
        println!("skipped: the kernel would allow 1 TiB here ({why})");
        return;
    }
    let h = Heap::new().unwrap();
    assert!(h.alloc(1 << 40, 16).is_null(), "Heap::alloc(1 TiB)");
    assert!(
        h.alloc_zeroed(1 << 40, 16).is_null(),
        "Heap::alloc_zeroed(1 TiB)"
    );
    assert!(raw::alloc(1 << 40, 16).is_null(), "raw::alloc(1 TiB)");
    let p = h.alloc(100, 8);
    assert!(!p.is_null());
    // SAFETY: a live block of 100 bytes; a failed realloc leaves it valid.
    unsafe {
        p.write_bytes(7, 100);
        assert!(h.realloc(p, 32 << 40, 8).is_null(), "realloc to 32 TiB");
        assert!((0..100).all(|i| *p.add(i) == 7), "the block survived");
        h.free(p);
    }
    // Address space, not memory: 16 bytes at a 1 TiB alignment.
    let q = h.alloc(16, 1 << 40);
    assert!(!q.is_null() && (q as usize).is_multiple_of(1 << 40));
    // SAFETY: a live 16-byte block, freed once.
    unsafe {
        q.write_bytes(1, 16);
        h.free(q);
    }
    h.is_valid().unwrap();
}
