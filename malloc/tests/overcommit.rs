//! `tests/c/overcommit.c`: requests larger than memory and swap fail with
//! `ENOMEM` under the preload as on glibc (the kernel's default overcommit
//! heuristic), where they used to return pointers (direct maps were mapped
//! with `MAP_NORESERVE`).

mod common;

#[test]
fn requests_that_can_never_be_backed_fail_like_glibc() {
    let out = common::check_program("overcommit.c", &[], &[]);
    println!("{out}");
    assert!(
        out.contains("overcommit: ok") || out.contains("overcommit: skipped"),
        "{out}"
    );
}
