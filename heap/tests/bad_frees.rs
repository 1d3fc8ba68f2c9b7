//! Double and interior frees never alias memory. The checks are always on
//! (release builds too): through `Heap::try_free` each case is an error and
//! changes nothing, and through `Heap::free`, `raw::free` and `realloc` it
//! ends the process with one line on stderr (run in a child process: this
//! test binary re-executes itself with `KEEL_BAD_FREE_CASE` set). Every size
//! range: small, medium (buddy), direct maps, and a direct map aligned to
//! 1 MiB.
#![cfg(not(keel_loom))]

mod common;
use common::SendPtr;
use keel_heap::{BadPointer, Heap, MEDIUM_MAX, SMALL_MAX, raw};
use std::process::Command;

/// (size, alignment) per size range.
const RANGES: [(usize, usize); 6] = [
    (32, 8),
    (64, 8),
    (SMALL_MAX, 8),
    (40_000, 8),
    (3 * MEDIUM_MAX, 8),
    (3 * MEDIUM_MAX, 1 << 20),
];

/// Allocates a few blocks and asserts none overlaps `[p, p + len)` or
/// another: nothing freed wrongly was handed out twice.
fn assert_no_alias(h: &Heap, live: &[(usize, usize)], size: usize, align: usize) {
    let fresh: Vec<*mut u8> = (0..8).map(|_| h.alloc(size, align)).collect();
    let mut all: Vec<(usize, usize)> = live.to_vec();
    all.extend(fresh.iter().map(|&q| (q as usize, size.max(1))));
    all.sort();
    for w in all.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "blocks overlap: {w:x?}");
    }
    for q in fresh {
        // SAFETY: live, freed once.
        unsafe { h.free(q) };
    }
}

#[test]
fn double_and_interior_frees_are_errors_that_change_nothing() {
    let h = Heap::new().unwrap();
    for (size, align) in RANGES {
        let keep = h.alloc(size, align);
        let p = h.alloc(size, align);
        assert!(!keep.is_null() && !p.is_null());
        // SAFETY: a live block.
        let usable = unsafe { keel_heap::usable_size(p) };
        // SAFETY: `p` and `keep` are live; every bad call only looks.
        unsafe {
            for off in [1, 8, 16, size / 2, size - 1] {
                let e = h.try_free(p.add(off));
                assert_eq!(
                    e,
                    Err(BadPointer::Interior {
                        addr: p as usize + off,
                        block: p as usize,
                        size: usable
                    }),
                    "size {size} align {align} offset {off}"
                );
            }
            assert_eq!(h.try_free(p), Ok(()), "size {size}");
            // Immediately, and after other frees and allocations.
            assert_eq!(h.try_free(p), Err(BadPointer::DoubleFree(p as usize)));
            let other = h.alloc(size, align);
            let q = h.alloc(size, align);
            assert_eq!(h.try_free(q), Ok(()));
            // (If `p` came back as `other`, freeing it is no double free.)
            if other != p {
                assert_eq!(
                    h.try_free(p),
                    Err(BadPointer::DoubleFree(p as usize)),
                    "size {size}"
                );
            }
            assert_no_alias(
                &h,
                &[(keep as usize, size), (other as usize, size)],
                size,
                align,
            );
            h.free(other);
            h.free(keep);
        }
    }
    let mut on_stack = [0u64; 4];
    let sp = on_stack.as_mut_ptr().cast::<u8>();
    // SAFETY: not keel-heap's: nothing happens to it.
    let r = unsafe { h.try_free(sp) };
    assert_eq!(r, Err(BadPointer::Foreign(sp as usize)));
    h.is_valid().unwrap();
}

/// Another thread's double free of a small block is refused at its second
/// free, and so is the owner's free of a block another thread already freed
/// (it waits on the owner's foreign list), and another thread's free of a
/// block the owner already freed (it is on its slab's free list).
#[test]
fn double_frees_across_threads_are_errors() {
    let h = Heap::new().unwrap();
    let p = SendPtr(h.alloc(48, 8));
    let q = h.alloc(48, 8);
    let r = std::thread::spawn(move || {
        let p = p;
        let other = Heap::new().unwrap();
        // SAFETY: `p` is live, freed once; the second call only looks.
        unsafe { (other.try_free(p.0), other.try_free(p.0)) }
    })
    .join()
    .unwrap();
    assert_eq!(r.0, Ok(()));
    assert!(matches!(r.1, Err(BadPointer::DoubleFree(_))));
    let q2 = SendPtr(q);
    std::thread::spawn(move || {
        let q2 = q2;
        // SAFETY: live, freed once, by a thread without a heap of its own.
        unsafe { raw::free(q2.0) }
    })
    .join()
    .unwrap();
    // SAFETY: already freed by the other thread: only looked at.
    let r = unsafe { h.try_free(q) };
    assert_eq!(r, Err(BadPointer::DoubleFree(q as usize)));
    // The other way round, with a live block in the slab so the count
    // cannot tell.
    let s = h.alloc(48, 8);
    let busy = h.alloc(48, 8);
    // SAFETY: live, freed once.
    unsafe { h.free(s) };
    let s2 = SendPtr(s);
    let r = std::thread::spawn(move || {
        let s2 = s2;
        let other = Heap::new().unwrap();
        // SAFETY: already freed by its owner: only looked at.
        unsafe { other.try_free(s2.0) }
    })
    .join()
    .unwrap();
    assert_eq!(r, Err(BadPointer::DoubleFree(s as usize)));
    // SAFETY: live, freed once.
    unsafe { h.free(busy) };
    h.is_valid().unwrap();
}

/// A medium block freed through a heap that does not own it: a pointer
/// inside its first page, a page-aligned pointer inside it and its
/// region's header are refused there and change nothing (a foreign free
/// writes the link of the owner's foreign list into the block, so an
/// unchecked one would write into live memory); a second free through that
/// heap, and its owner's free after it, are double frees.
#[test]
fn medium_frees_through_another_heap_are_checked() {
    let h = Heap::new().unwrap();
    let size = 40_000;
    let p = h.alloc(size, 8);
    // SAFETY: a live block of `size` bytes.
    unsafe { p.write_bytes(0x5a, size) };
    let sp = SendPtr(p);
    let r = std::thread::spawn(move || {
        let sp = sp;
        let other = Heap::new().unwrap();
        // SAFETY: pointers into a live block and its region's header: only
        // looked at, each call must refuse them.
        unsafe {
            [16, 4096, 8192]
                .map(|o| other.try_free(sp.0.add(o)))
                .into_iter()
                .chain([other.try_free(sp.0.map_addr(|a| a & !(keel_heap::REGION - 1)))])
                .collect::<Vec<_>>()
        }
    })
    .join()
    .unwrap();
    for (i, e) in r.iter().enumerate() {
        assert!(
            matches!(e, Err(BadPointer::Interior { .. })),
            "case {i}: {e:?}"
        );
    }
    // SAFETY: live, `size` bytes.
    let intact = unsafe { std::slice::from_raw_parts(p, size) };
    assert!(
        intact.iter().all(|&b| b == 0x5a),
        "a refused free wrote into the block"
    );
    let sp = SendPtr(p);
    let r = std::thread::spawn(move || {
        let sp = sp;
        let other = Heap::new().unwrap();
        // SAFETY: live, freed once; the second call only looks.
        unsafe { (other.try_free(sp.0), other.try_free(sp.0)) }
    })
    .join()
    .unwrap();
    assert_eq!(r.0, Ok(()));
    assert_eq!(r.1, Err(BadPointer::DoubleFree(p as usize)));
    // SAFETY: freed by the other thread (it waits on this heap's foreign
    // list): only looked at.
    let again = unsafe { h.try_free(p) };
    assert_eq!(again, Err(BadPointer::DoubleFree(p as usize)));
    h.is_valid().unwrap();
    assert_no_alias(&h, &[], size, 8);
}

/// The aborting cases, each run in a child process. `pqp`: `p`, `q`, `p`
/// freed in turn (no immediate repeat; a third block keeps the slab in
/// use), then allocations; `emptied`: the same with no third block, so the
/// repeat frees into a slab with no live block; `emptygc`: as `pqp`, then a
/// collection instead of allocations (the slab counts no live block);
/// `written`: a write into a freed block's free mark (its first word, the
/// encoded free-list link), then an allocation; `reuse`: another thread
/// frees the block (it waits on the heap's foreign list), its owner frees
/// it again, then allocates that size (the block must not go out: draining
/// the foreign list would free it again while live); `writtenexit`: as
/// `writtengc`, but the heap is dropped (abandoned, its empty slab not
/// read) and a new heap adopts it and collects, which is where the broken
/// slab is found.
const CASES: &[&str] = &[
    "pqp-64",
    "reuse-64",
    "emptied-64",
    "emptygc-64",
    "written-64",
    "writtengc-64",
    "writtenexit-64",
    "double-32",
    "double-64",
    "double-medium",
    "double-direct",
    "double-aligned",
    "interior-64",
    "interior-medium",
    "interior-direct",
    "interior-aligned",
    "realloc-freed",
    "realloc-interior",
    "raw-double",
];

fn run_case(case: &str) {
    let h = Heap::new().unwrap();
    let (kind, what) = case.split_once('-').unwrap();
    let (size, align) = match what {
        "32" => (32, 8),
        "64" | "freed" => (64, 8),
        "medium" => (40_000, 8),
        "direct" => (8 << 20, 8),
        "aligned" => (3 * MEDIUM_MAX, 1 << 20),
        _ => (64, 8),
    };
    let p = h.alloc(size, align);
    println!("block {p:p}");
    // Every block handed out after the misuse, printed as it comes, so the
    // parent sees that none came twice.
    let take = |n: usize| {
        for _ in 0..n {
            let x = h.alloc(size, align);
            println!("got {x:p}");
        }
    };
    // SAFETY: deliberately wrong, in a child process that must abort.
    unsafe {
        match kind {
            "pqp" | "emptied" | "emptygc" => {
                let q = h.alloc(size, align);
                let _r = if kind == "emptied" {
                    core::ptr::null_mut()
                } else {
                    h.alloc(size, align)
                };
                h.free(p);
                h.free(q);
                h.free(p);
                if kind == "emptygc" {
                    h.gc();
                }
                take(4);
            }
            "writtengc" | "writtenexit" => {
                // The slab's last block freed, so it is empty; then one of
                // its free blocks is written and the slab given back, by
                // this heap or by the heap that adopts it.
                let q = h.alloc(size, align);
                println!("q {q:p}");
                h.free(q);
                h.free(p);
                q.cast::<u64>().write(0x5a5a);
                if kind == "writtengc" {
                    h.gc();
                    take(2);
                } else {
                    drop(h);
                    println!("abandoned");
                    let adopter = Heap::new().unwrap();
                    println!("adopted");
                    adopter.gc();
                    println!("got {:p}", adopter.alloc(size, align));
                }
            }
            "reuse" => {
                let _busy = h.alloc(size, align);
                let pp = SendPtr(p);
                std::thread::spawn(move || {
                    let pp = pp;
                    let other = Heap::new().unwrap();
                    other.free(pp.0);
                })
                .join()
                .unwrap();
                h.free(p);
                take(1);
            }
            "written" => {
                h.free(p);
                p.cast::<u64>().write(0x5a5a);
                take(2);
            }
            "double" => {
                h.free(p);
                h.free(p);
            }
            "interior" => h.free(p.add(16)),
            "realloc" if what == "freed" => {
                h.free(p);
                h.realloc(p, 200, 8);
            }
            "realloc" => {
                h.realloc(p.add(16), 200, 8);
            }
            "raw" => {
                let q = raw::alloc(32, 8);
                raw::free(q);
                raw::free(q);
            }
            _ => unreachable!(),
        }
    }
    println!("survived {case}");
}

#[test]
fn bad_frees_end_the_process_with_one_line() {
    if let Ok(case) = std::env::var("KEEL_BAD_FREE_CASE") {
        run_case(&case);
        return;
    }
    if cfg!(miri) {
        println!("skipped under Miri: needs child processes");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // Under an emulating test runner (qemu for a cross target) the binary
    // cannot run itself directly.
    let probe = Command::new(&exe).arg("--list").output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        println!("skipped: this test binary cannot run itself here ({probe:?})");
        return;
    }
    for case in CASES {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "bad_frees_end_the_process_with_one_line",
                "--nocapture",
            ])
            .env("KEEL_BAD_FREE_CASE", case)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("keel-heap:"))
            .collect();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(libc_sigabrt()),
            "{case}: {}\n{stdout}\n{err}",
            out.status
        );
        assert!(!stdout.contains("survived"), "{case}: went on");
        assert_eq!(lines.len(), 1, "{case}: {err}");
        let block = stdout
            .lines()
            .find_map(|l| l.strip_prefix("block "))
            .unwrap_or_default();
        let mut got: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("got "))
            .collect();
        got.sort();
        assert!(
            got.windows(2).all(|w| w[0] != w[1]),
            "{case}: a block handed out twice: {stdout}"
        );
        // With the checker (debug builds) every free is looked up, so a
        // double free is refused at the free; without it, a repeat that
        // is not immediate is found where the block would go out again.
        let checker = cfg!(debug_assertions);
        let changed = format!("keel-heap: free block at {block} was changed");
        let double = format!("keel-heap: double free of {block}");
        let want = match *case {
            "pqp-64" if !checker => changed,
            "emptygc-64" if !checker => {
                "keel-heap: invalid heap: empty slab's block is not free".into()
            }
            "written-64" => changed,
            // Named by address: the block that lost its mark.
            "writtengc-64" | "writtenexit-64" if checker => {
                "keel-heap: invalid heap: free object lost its free mark".into()
            }
            "writtengc-64" | "writtenexit-64" => {
                "keel-heap: invalid heap: empty slab's block is not free".into()
            }
            c if c.starts_with("interior") || c == "realloc-interior" => {
                "keel-heap: invalid free of 0x".into()
            }
            c if c.starts_with("double") || c == "raw-double" || c == "realloc-freed" => {
                "keel-heap: double free of 0x".into()
            }
            _ => double,
        };
        assert!(lines[0].starts_with(&want), "{case}: {}", lines[0]);
        if *case == "writtenexit-64" {
            // Found by the adopter, not when the thread let the heap go.
            assert!(stdout.contains("adopted"), "{case}: {stdout}\n{err}");
        }
        if *case == "writtengc-64" || *case == "writtenexit-64" {
            let q = stdout
                .lines()
                .find_map(|l| l.strip_prefix("q "))
                .unwrap_or("none");
            assert!(
                lines[0].ends_with(&format!(" at {q}")),
                "{case}: {}",
                lines[0]
            );
        }
        if case.starts_with("interior") || *case == "realloc-interior" {
            assert!(
                lines[0].contains("-byte block at 0x"),
                "{case}: {}",
                lines[0]
            );
        }
    }
}

fn libc_sigabrt() -> i32 {
    6
}
