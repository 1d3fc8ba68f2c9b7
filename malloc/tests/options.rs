//! Environment options: `KEEL_HEAP_STATS=1` prints statistics at exit,
//! a malformed value is ignored with a warning, and with `KEEL_HEAP_DECAY_MS`
//! a program that never calls gc still returns its idle memory.

mod common;

use common::{Run, assert_success, compile, run};

#[test]
fn stats_printed_at_exit() {
    let exe = compile("memalign.c");
    let out = run(
        &exe,
        &[],
        &Run {
            preload: true,
            env: &[("KEEL_HEAP_STATS", "1")],
            dir: None,
        },
    );
    assert_success("memalign.c with KEEL_HEAP_STATS=1", &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("keel-malloc statistics"),
        "no statistics on stderr: {stderr:?}"
    );
    let quiet = run(&exe, &[], &Run::KEEL);
    assert_success("memalign.c without KEEL_HEAP_STATS", &quiet);
    assert!(
        quiet.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&quiet.stderr)
    );
}

#[test]
fn malformed_option_warns_and_is_ignored() {
    let exe = compile("memalign.c");
    let out = run(
        &exe,
        &[],
        &Run {
            preload: true,
            env: &[
                ("KEEL_HEAP_PURGE_EVERY", "often"),
                ("KEEL_HEAP_DECAY_MS", "250"),
            ],
            dir: None,
        },
    );
    assert_success("memalign.c with a malformed option", &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ignoring KEEL_HEAP_PURGE_EVERY=often: not a decimal number"),
        "{stderr:?}"
    );
    assert!(!stderr.contains("KEEL_HEAP_DECAY_MS"), "{stderr:?}");
}

/// Freed memory comes back by age while the program keeps allocating small
/// blocks without pause (the heap is never quiet), and while it allocates
/// one block a millisecond (too few calls for a fixed count of allocations
/// between checks to come round).
#[test]
fn idle_memory_returns_without_gc_calls() {
    for mode in ["busy", "sparse"] {
        let out = common::check_program(
            "idle.c",
            &[mode],
            &[
                ("KEEL_HEAP_DECAY_MS", "100"),
                ("KEEL_HEAP_PURGE_EVERY", "16"),
            ],
        );
        println!("{out}");
        assert!(out.contains("idle: ok"), "{mode}: {out}");
    }
}
