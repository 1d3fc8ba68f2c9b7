//! Runs `tests/c/fork.c` on the system allocator and under the preload.

mod common;

#[test]
fn fork_program_passes_under_preload() {
    let out = common::check_program("fork.c", &[], &[]);
    assert!(out.contains("fork: ok"), "{out}");
}
