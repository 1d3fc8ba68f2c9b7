//! Fuzz harness for keel-heap: operation sequences against a model.
//!
//! The model keeps every live block's address, size, alignment and fill tag.
//! After every operation it checks that the new block is aligned and
//! overlaps no live block, and before every free/realloc that the block's
//! contents survived. `run_threads` splits the operations over two threads
//! that hand blocks to each other, so frees cross heaps.

use arbitrary::Arbitrary;
use keel_heap::{Heap, MEDIUM_MAX};
use std::collections::BTreeMap;

/// One operation.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Op {
    /// Allocate: `class` picks small / medium / direct, `size` the bytes.
    Alloc {
        class: u8,
        size: u32,
        align_log: u8,
        zeroed: bool,
    },
    /// Free the live block at `index % live`.
    Free { index: u16 },
    /// Resize the live block at `index % live`.
    Realloc { index: u16, class: u8, size: u32 },
    /// Run the GC.
    Gc,
    /// Release every free page.
    ReleasePages,
    /// Hand the block at `index % live` to the other thread (threaded runs).
    Pass { index: u16 },
    /// Drop the heap's handle (the heap is abandoned, its blocks stay live
    /// and its empty slabs unread) and open a new one, which adopts an
    /// abandoned heap: this one, or one an earlier run left.
    Rehome,
}

const MAX_LIVE_BYTES: usize = 256 << 20;

fn size_of(class: u8, size: u32) -> usize {
    match class % 8 {
        0..=4 => size as usize % 9000,
        5 | 6 => size as usize % (MEDIUM_MAX + 1),
        _ => MEDIUM_MAX + size as usize % (8 << 20),
    }
}

#[derive(Clone, Copy)]
struct Block {
    ptr: usize,
    size: usize,
    tag: u8,
}

fn fill(b: &Block) {
    // SAFETY: the block is live and holds `size` bytes.
    unsafe { std::ptr::write_bytes(b.ptr as *mut u8, b.tag, b.size) };
}

fn intact(b: &Block, upto: usize) -> bool {
    // SAFETY: as above.
    let s = unsafe { std::slice::from_raw_parts(b.ptr as *const u8, upto.min(b.size)) };
    s.iter().all(|&x| x == b.tag)
}

/// The model of one thread's live blocks.
#[derive(Default)]
struct Model {
    live: Vec<Block>,
    by_addr: BTreeMap<usize, usize>,
    bytes: usize,
    tag: u8,
}

impl Model {
    fn insert(&mut self, b: Block) {
        let end = b.ptr + b.size.max(1);
        if let Some((&a, &e)) = self.by_addr.range(..end).next_back() {
            assert!(
                e <= b.ptr || a >= end,
                "block {:#x}+{} overlaps live block {a:#x}..{e:#x}",
                b.ptr,
                b.size
            );
        }
        self.by_addr.insert(b.ptr, end);
        self.bytes += b.size;
        self.live.push(b);
    }

    fn take(&mut self, index: u16) -> Option<Block> {
        if self.live.is_empty() {
            return None;
        }
        let b = self.live.swap_remove(index as usize % self.live.len());
        self.by_addr.remove(&b.ptr);
        self.bytes -= b.size;
        assert!(
            intact(&b, b.size),
            "contents of {:#x} changed while live",
            b.ptr
        );
        Some(b)
    }

    fn next_tag(&mut self) -> u8 {
        self.tag = self.tag.wrapping_add(1) | 1;
        self.tag
    }
}

fn step(h: &Heap, m: &mut Model, op: Op, pass: &mut dyn FnMut(Block)) {
    match op {
        Op::Alloc {
            class,
            size,
            align_log,
            zeroed,
        } => {
            let size = size_of(class, size);
            let align = 1usize << (align_log % 24);
            if m.bytes + size > MAX_LIVE_BYTES {
                return;
            }
            let p = if zeroed {
                h.alloc_zeroed(size, align)
            } else {
                h.alloc(size, align)
            };
            assert!(!p.is_null(), "alloc({size}, {align}) failed");
            assert_eq!(p as usize % align, 0, "alloc({size}, {align}) misaligned");
            let b = Block {
                ptr: p as usize,
                size,
                tag: m.next_tag(),
            };
            if zeroed {
                assert!(
                    intact(&Block { tag: 0, ..b }, size),
                    "alloc_zeroed({size}) not zero"
                );
            }
            fill(&b);
            m.insert(b);
        }
        Op::Free { index } => {
            if let Some(b) = m.take(index) {
                // SAFETY: a live block from keel-heap, freed once.
                unsafe { h.free(b.ptr as *mut u8) };
            }
        }
        Op::Realloc { index, class, size } => {
            let size = size_of(class, size);
            if m.bytes + size > MAX_LIVE_BYTES {
                return;
            }
            if let Some(b) = m.take(index) {
                // SAFETY: a live block from keel-heap.
                let q = unsafe { h.realloc(b.ptr as *mut u8, size, 8) };
                assert!(!q.is_null(), "realloc to {size} failed");
                let nb = Block {
                    ptr: q as usize,
                    size,
                    tag: b.tag,
                };
                assert!(intact(&nb, b.size), "realloc lost contents");
                fill(&nb);
                m.insert(nb);
            }
        }
        Op::Gc => {
            h.gc();
            h.is_valid().unwrap();
        }
        Op::ReleasePages => {
            h.release_pages();
            h.is_valid().unwrap();
        }
        Op::Pass { index } => {
            if let Some(b) = m.take(index) {
                pass(b);
            }
        }
        // Replaces the handle: see `rehome`, which the callers run.
        Op::Rehome => {}
    }
}

/// Drops handle `h` first, so that the new one can adopt its heap, and
/// checks what the new one holds.
fn rehome(h: Heap) -> Heap {
    drop(h);
    let h = Heap::new().unwrap();
    h.is_valid().unwrap();
    h
}

/// Runs `ops` on one heap against the model, then frees what is left.
pub fn run_ops(ops: &[Op]) {
    let mut h = Heap::new().unwrap();
    let mut m = Model::default();
    let mut passed = Vec::new();
    for &op in ops {
        if let Op::Rehome = op {
            h = rehome(h);
        }
        step(&h, &mut m, op, &mut |b| passed.push(b));
        // "Passing" to nobody: free it later through the raw API.
    }
    for b in passed {
        assert!(intact(&b, b.size));
        // SAFETY: live, freed once.
        unsafe { keel_heap::raw::free(b.ptr as *mut u8) };
    }
    while let Some(b) = m.take(0) {
        // SAFETY: a live block the model held, freed once.
        unsafe { h.free(b.ptr as *mut u8) };
    }
    h.gc();
    h.is_valid().unwrap();
}

/// Runs the even-indexed ops on one thread and the odd ones on another;
/// `Pass` hands a block to the other thread, which frees or resizes it later.
pub fn run_threads(ops: &[Op]) {
    use std::sync::mpsc;
    let (t0, r0) = mpsc::channel::<(usize, usize, u8)>();
    let (t1, r1) = mpsc::channel::<(usize, usize, u8)>();
    let halves: [Vec<Op>; 2] = [
        ops.iter().step_by(2).copied().collect(),
        ops.iter().skip(1).step_by(2).copied().collect(),
    ];
    std::thread::scope(|s| {
        let mut threads = Vec::new();
        for (i, (mine, (tx, rx))) in halves.iter().zip([(t1, r0), (t0, r1)]).enumerate() {
            threads.push(s.spawn(move || {
                let mut h = Heap::new().unwrap();
                let mut m = Model {
                    tag: i as u8 * 64,
                    ..Model::default()
                };
                for &op in mine {
                    while let Ok((ptr, size, tag)) = rx.try_recv() {
                        m.insert(Block { ptr, size, tag });
                    }
                    if let Op::Rehome = op {
                        h = rehome(h);
                    }
                    step(&h, &mut m, op, &mut |b| {
                        let _ = tx.send((b.ptr, b.size, b.tag));
                    });
                }
                drop(tx);
                for (ptr, size, tag) in rx.iter() {
                    m.insert(Block { ptr, size, tag });
                }
                while let Some(b) = m.take(0) {
                    // SAFETY: live, freed once.
                    unsafe { h.free(b.ptr as *mut u8) };
                }
                h.gc();
                h.is_valid().unwrap();
            }));
        }
        // Joined one by one: the scope's own wait ends when a thread's
        // closure returns, before the thread's TLS destructors free what
        // std keeps there (the leak check after each input would see it).
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// One operation of the misuse harness: a valid operation, or a wrong free
/// that keel-heap must refuse without changing anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Misuse {
    /// A valid operation of [`Op`] (`Pass` frees the block later).
    Valid(Op),
    /// Free again a block freed earlier (`index` among the recent frees).
    DoubleFree { index: u8 },
    /// Free a pointer `off` bytes inside the live block at `index % live`.
    Interior { index: u16, off: u32 },
    /// Free a pointer keel-heap never handed out (stack or global memory).
    Foreign { on_stack: bool, off: u8 },
}

/// Runs valid operations mixed with double, interior and foreign frees on
/// one heap. Every wrong free must be an error of its kind (a double free
/// may also read as interior or foreign once the memory was reused for
/// something else or unmapped) and must change nothing: every live block
/// keeps its contents and no two live blocks ever overlap.
pub fn run_misuse(ops: &[Misuse]) {
    static GLOBAL: [u64; 8] = [0; 8];
    let mut h = Heap::new().unwrap();
    let mut m = Model::default();
    let mut freed: Vec<usize> = Vec::new();
    let mut later = Vec::new();
    let mut stack = [0u64; 8];
    for &op in ops {
        match op {
            Misuse::Valid(Op::Free { index }) => {
                if let Some(b) = m.take(index) {
                    // SAFETY: a live block, freed once.
                    assert_eq!(unsafe { h.try_free(b.ptr as *mut u8) }, Ok(()));
                    freed.push(b.ptr);
                    if freed.len() > 64 {
                        freed.remove(0);
                    }
                }
            }
            Misuse::Valid(Op::Rehome) => h = rehome(h),
            Misuse::Valid(op) => step(&h, &mut m, op, &mut |b| later.push(b)),
            Misuse::DoubleFree { index } => {
                if freed.is_empty() {
                    continue;
                }
                let p = freed[index as usize % freed.len()];
                // Only an address no live block covers: one handed out again
                // is that block's to free.
                let covered = m
                    .by_addr
                    .range(..=p)
                    .next_back()
                    .is_some_and(|(_, &end)| end > p)
                    || later
                        .iter()
                        .any(|b: &Block| b.ptr <= p && p < b.ptr + b.size.max(1));
                if covered {
                    continue;
                }
                // SAFETY: keel-heap memory freed before (mapped, or no longer
                // keel-heap's): only looked at, the call must refuse it.
                let r = unsafe { h.try_free(p as *mut u8) };
                assert!(r.is_err(), "double free of {p:#x} was taken");
            }
            Misuse::Interior { index, off } => {
                if m.live.is_empty() {
                    continue;
                }
                let b = m.live[index as usize % m.live.len()];
                if b.size < 2 {
                    continue;
                }
                let q = b.ptr + 1 + off as usize % (b.size - 1);
                // SAFETY: inside a live block: only looked at.
                let r = unsafe { h.try_free(q as *mut u8) };
                match r {
                    Err(keel_heap::BadPointer::Interior { addr, block, .. }) => {
                        assert_eq!(addr, q);
                        assert_eq!(block, b.ptr, "interior {q:#x} named the wrong block");
                    }
                    other => panic!("interior free of {q:#x} in {:#x}: {other:?}", b.ptr),
                }
                assert!(intact(&b, b.size), "interior free changed {:#x}", b.ptr);
            }
            Misuse::Foreign { on_stack, off } => {
                let base = if on_stack {
                    stack.as_mut_ptr().cast::<u8>()
                } else {
                    GLOBAL.as_ptr().cast::<u8>().cast_mut()
                };
                // SAFETY: not keel-heap's memory: never touched.
                let q = unsafe { base.add(off as usize % 64) };
                // SAFETY: as above.
                let r = unsafe { h.try_free(q) };
                assert_eq!(r, Err(keel_heap::BadPointer::Foreign(q as usize)));
            }
        }
    }
    stack[0] = 1;
    assert_eq!(stack[0], 1);
    for b in later {
        assert!(intact(&b, b.size));
        // SAFETY: live, freed once.
        unsafe { h.free(b.ptr as *mut u8) };
    }
    while let Some(b) = m.take(0) {
        // SAFETY: live, freed once.
        unsafe { h.free(b.ptr as *mut u8) };
    }
    h.gc();
    h.is_valid().unwrap();
}
