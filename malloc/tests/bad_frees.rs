//! Double and interior frees under the preload (`tests/c/badfree.c`): every
//! case, in every size range, ends the process at once with one line
//! (`keel-heap: double free of 0x…` or `keel-heap: invalid free of 0x…,
//! inside a N-byte block at 0x…`) and SIGABRT, with the checks keel-heap
//! always runs and with `KEEL_HEAP_CHECK=1`. A double free that is not
//! immediate (`pqp`) is refused at the free with the checker on (debug
//! builds, or `KEEL_HEAP_CHECK=1`), and otherwise at the allocation that
//! would hand the block out again (`keel-heap: free block at 0x… was
//! changed: double free or write after free`), as is a write into a freed
//! block's free mark (`written`): never with a block handed out twice.

mod common;

use common::{Run, compile, run};
use std::os::unix::process::ExitStatusExt;

const CASES: &[(&str, &str)] = &[
    ("double-32", "double free of 0x"),
    ("double-40k", "double free of 0x"),
    ("double-8m", "double free of 0x"),
    ("double-aligned", "double free of 0x"),
    ("interior-64", "invalid free of 0x"),
    ("interior-40k", "invalid free of 0x"),
    ("interior-8m", "invalid free of 0x"),
    ("interior-aligned", "invalid free of 0x"),
    ("realloc-interior", "invalid free of 0x"),
    ("realloc-freed", "double free of 0x"),
    ("thread-double", "double free of 0x"),
    ("owner-after-thread", "double free of 0x"),
    ("thread-after-owner", "double free of 0x"),
    ("owner-after-thread-busy", "double free of 0x"),
    ("owner-after-thread-reuse", "double free of 0x"),
    ("thread-interior-40k", "invalid free of 0x"),
    ("thread-double-40k", "double free of 0x"),
    ("owner-after-thread-40k", "double free of 0x"),
    ("pqp", "double free of "),
    ("written", "free block at "),
];

#[test]
fn double_and_interior_frees_abort_with_one_line() {
    let exe = compile("badfree.c");
    for check in ["0", "1"] {
        for (case, want) in CASES {
            let out = run(
                &exe,
                &[case],
                &Run {
                    preload: true,
                    env: &[("KEEL_HEAP_CHECK", check)],
                    dir: None,
                },
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!(
                "{case} (KEEL_HEAP_CHECK={check}): {}\n{stdout}\n{stderr}",
                out.status
            );
            assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{what}");
            assert!(!stdout.contains("survived"), "{what}");
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{what}");
            let mut got: Vec<&str> = stdout
                .lines()
                .filter_map(|l| l.strip_prefix("got "))
                .collect();
            got.sort();
            assert!(got.windows(2).all(|w| w[0] != w[1]), "{what}");
            let checker = cfg!(debug_assertions) || check == "1";
            let want = match *want {
                "double free of " if !checker => "free block at ",
                w => w,
            };
            // The block the case named, where it printed one (its `0x`
            // then comes from the address).
            let block = stdout
                .lines()
                .find_map(|l| l.strip_prefix("block "))
                .unwrap_or("");
            let want = if block.is_empty() {
                want
            } else {
                want.trim_end_matches("0x")
            };
            assert!(
                lines[0].starts_with(&format!("keel-heap: {want}{block}")),
                "{what}"
            );
            if want.starts_with("invalid") {
                assert!(lines[0].contains("-byte block at 0x"), "{what}");
            }
        }
    }
}
