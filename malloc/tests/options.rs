//! Environment options: `KEEL_HEAP_STATS=1` prints statistics at exit,
//! a malformed value is ignored with a warning, and with `KEEL_HEAP_DECAY_MS`
//! a program that never calls gc still returns its idle memory.

mod common;

use common::{Run, assert_success, compile, run};
use std::path::Path;

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
    assert_eq!(
        stderr
            .matches("keel-malloc: ignoring KEEL_HEAP_PURGE_EVERY=often: not a decimal number")
            .count(),
        1,
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

/// `KEEL_HEAP_STATS=1` in a program that closes stderr from its own exit
/// handler (as `ls` and `cat` do): the statistics still reach stderr, through
/// a duplicate taken at start-up (they were lost: `write(2) = EBADF`).
#[test]
fn stats_survive_a_program_closing_stderr() {
    let exe = compile("closestd.c");
    let out = run(
        &exe,
        &[],
        &Run {
            preload: true,
            env: &[("KEEL_HEAP_STATS", "1")],
            dir: None,
        },
    );
    assert_success("closestd.c with KEEL_HEAP_STATS=1", &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("keel-malloc statistics"), "{stderr:?}");
    // And `ls`, the program the report came from.
    let ls = run(
        Path::new("/bin/ls"),
        &["/"],
        &Run {
            preload: true,
            env: &[("KEEL_HEAP_STATS", "1")],
            dir: None,
        },
    );
    assert_success("ls with KEEL_HEAP_STATS=1", &ls);
    let stderr = String::from_utf8_lossy(&ls.stderr);
    assert!(stderr.contains("keel-malloc statistics"), "ls: {stderr:?}");
}

/// `KEEL_HEAP_STATS_FILE=path` appends the statistics to that file (one
/// report per process) and leaves stderr alone.
#[test]
fn stats_file_gets_the_report() {
    let exe = compile("closestd.c");
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("stats-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    for _ in 0..2 {
        let out = run(
            &exe,
            &[],
            &Run {
                preload: true,
                env: &[("KEEL_HEAP_STATS_FILE", path.to_str().unwrap())],
                dir: None,
            },
        );
        assert_success("closestd.c with KEEL_HEAP_STATS_FILE", &out);
        assert!(
            out.stderr.is_empty(),
            "{:?}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("keel-malloc statistics").count(), 2, "{text}");
    let _ = std::fs::remove_file(&path);
}

/// `KEEL_HEAP_DECAY_THREAD=0` keeps the process single-threaded: no
/// `keel-decay` thread after a direct map is pooled (one by default), and
/// a value that is not a flag is ignored with one warning line.
#[test]
fn decay_thread_can_be_turned_off() {
    let exe = compile("decaythread.c");
    for (value, threads) in [(None, 1), (Some("0"), 0), (Some("maybe"), 1)] {
        let env: Vec<(&str, &str)> = value
            .map(|v| ("KEEL_HEAP_DECAY_THREAD", v))
            .into_iter()
            .collect();
        let out = run(
            &exe,
            &[],
            &Run {
                preload: true,
                env: &env,
                dir: None,
            },
        );
        assert_success("decaythread.c", &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        common::assert_allocator_is_keel("decaythread.c", &stdout);
        assert!(
            stdout.contains(&format!("decay threads: {threads}\n")),
            "KEEL_HEAP_DECAY_THREAD={value:?}: {stdout}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let warned = stderr
            .matches("keel-malloc: ignoring KEEL_HEAP_DECAY_THREAD=maybe: not 0/1/")
            .count();
        assert_eq!(warned, usize::from(value == Some("maybe")), "{stderr:?}");
    }
}
