//! Runs `tests/c/edge.c` on the system allocator and under the preload.

mod common;

#[test]
fn edge_program_passes_under_preload() {
    let out = common::check_program("edge.c", &[], &[]);
    assert!(out.contains("edge: ok"), "{out}");
}
