//! Runs `tests/c/threads.c` on the system allocator and under the preload.

mod common;

#[test]
fn threads_program_passes_under_preload() {
    let out = common::check_program("threads.c", &[], &[]);
    assert!(out.contains("threads: ok"), "{out}");
}
