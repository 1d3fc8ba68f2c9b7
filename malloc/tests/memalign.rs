//! Runs `tests/c/memalign.c` on the system allocator and under the preload.

mod common;

#[test]
fn memalign_program_passes_under_preload() {
    let out = common::check_program("memalign.c", &[], &[]);
    assert!(out.contains("memalign: ok"), "{out}");
}
