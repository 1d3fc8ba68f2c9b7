//! Pointers keel-heap does not own are never handed to it (`tests/c/foreign.c`).
//! glibc aborts on them, so this program runs only under the preload.

mod common;

use common::{Run, assert_allocator_is_keel, assert_success, compile, run};

#[test]
fn foreign_pointers_are_ignored_and_reported_with_checker() {
    let exe = compile("foreign.c");
    let quiet = run(&exe, &[], &Run::KEEL);
    assert_success("foreign.c under the preload", &quiet);
    let stdout = String::from_utf8_lossy(&quiet.stdout);
    assert_allocator_is_keel("foreign.c", &stdout);
    assert!(stdout.contains("foreign: ok"), "{stdout}");
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );

    let checked = run(
        &exe,
        &[],
        &Run {
            preload: true,
            env: &[("KEEL_HEAP_CHECK", "1")],
            dir: None,
        },
    );
    assert_success("foreign.c with KEEL_HEAP_CHECK=1", &checked);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    for func in ["free", "realloc"] {
        assert!(
            stderr.contains(&format!("keel-malloc: {func}(0x"))
                && stderr.contains("not a block keel-heap manages"),
            "no report for {func}: {stderr}"
        );
    }
}
