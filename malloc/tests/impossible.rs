//! Requests no mapping can serve fail at once, without the out-of-memory
//! retry that first releases every free page (`tests/c/impossible.c`).

mod common;

use common::{Run, assert_allocator_is_keel, assert_success, compile, run};

#[test]
fn impossible_requests_fail_without_releasing_cached_memory() {
    let exe = compile("impossible.c");
    let system = run(&exe, &[], &Run::SYSTEM);
    assert_success("impossible.c on the system allocator", &system);
    let keel = run(
        &exe,
        &[],
        &Run {
            preload: true,
            // No decay: the only release passes left are those the failing
            // requests would run.
            env: &[("KEEL_HEAP_STATS", "1"), ("KEEL_HEAP_DECAY_MS", "0")],
            dir: None,
        },
    );
    assert_success("impossible.c under the preload", &keel);
    let stdout = String::from_utf8_lossy(&keel.stdout);
    assert_allocator_is_keel("impossible.c", &stdout);
    assert!(stdout.contains("impossible: ok"), "{stdout}");
    let stderr = String::from_utf8_lossy(&keel.stderr);
    let passes: u64 = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("release passes"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no release-pass figure in the statistics: {stderr}"));
    assert_eq!(
        passes, 0,
        "failing requests released cached memory:\n{stderr}"
    );
}
