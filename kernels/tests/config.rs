//! `KEEL_KERNELS` is read once per process, so each case runs this test
//! binary again as a child with the variable set, and checks what the child
//! printed on stderr and saw in `cpu::config()`.

use keel_kernels::cpu::{self, Level, Source};
use std::process::Command;

/// Set in the child: the case to check in-process.
const CHILD: &str = "KEEL_KERNELS_TEST_CHILD";

/// Runs the `child` test of this binary with `KEEL_KERNELS=value` and
/// returns its stderr, asserting that it passed.
fn run_child(case: &str, value: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    // Under a cargo runner (qemu-user for a cross target, as ci/aarch64.sh
    // sets one), the child runs through the same runner.
    let runner = std::env::vars()
        .find(|(k, _)| k.starts_with("CARGO_TARGET_") && k.ends_with("_RUNNER"))
        .map(|(_, v)| v.split_whitespace().map(String::from).collect::<Vec<_>>());
    let mut cmd = match runner.as_deref() {
        Some([prog, args @ ..]) => {
            let mut c = Command::new(prog);
            c.args(args).arg(&exe);
            c
        }
        _ => Command::new(&exe),
    };
    let out = cmd
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("KEEL_KERNELS", value)
        .env(CHILD, case)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "child {case} failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// The child half: in a parent run (no `CHILD` variable) it checks the
/// process as started, which has no `KEEL_KERNELS` when the suite runs
/// plainly; with the variable set it checks the case it was given.
#[test]
fn child() {
    let case = std::env::var(CHILD).unwrap_or_default();
    // Several calls: the variable is read, and its note printed, once.
    for _ in 0..3 {
        let _ = cpu::level();
    }
    let c = cpu::config();
    let _ = cpu::config();
    assert_eq!(c.level, cpu::level());
    assert_eq!(c.detected, cpu::detected());
    match case.as_str() {
        "bogus" => {
            assert_eq!(c.env.as_deref(), Some("bogus"));
            assert_eq!(c.source, Source::Detected);
            assert_eq!(c.level, cpu::detected());
            assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
            assert!(c.notes[0].contains("\"bogus\" ignored"), "{:?}", c.notes);
        }
        "scalar" => {
            assert_eq!(c.env.as_deref(), Some("Scalar "));
            assert_eq!(c.source, Source::Env);
            assert_eq!(c.level, Level::Scalar);
            assert!(c.notes.is_empty(), "{:?}", c.notes);
        }
        "above" => {
            // A level this CPU lacks: clamped, with a note.
            assert_eq!(c.source, Source::Env);
            assert_eq!(c.level, cpu::clamp(want_above(), cpu::detected()));
            assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
            assert!(c.notes[0].contains("does not support"), "{:?}", c.notes);
        }
        _ => {
            if std::env::var_os("KEEL_KERNELS").is_none() {
                assert!(c.notes.is_empty(), "{:?}", c.notes);
                assert_eq!(c.env, None);
            }
        }
    }
    cpu::set_max_level(Level::Scalar);
    assert_eq!(cpu::config().source, Source::SetMaxLevel);
    cpu::set_max_level(c.level);
}

/// A level the running CPU does not support: NEON on x86-64, AVX2 on
/// aarch64 and elsewhere.
fn want_above() -> Level {
    if cfg!(target_arch = "x86_64") {
        Level::Neon
    } else {
        Level::Avx2
    }
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn an_unknown_level_is_said_once_on_stderr_and_in_config() {
    let err = run_child("bogus", "bogus");
    assert_eq!(
        count(&err, "keel-kernels: KEEL_KERNELS=\"bogus\" ignored"),
        1,
        "{err}"
    );
}

#[test]
fn a_known_level_is_taken_silently() {
    let err = run_child("scalar", "Scalar ");
    assert_eq!(count(&err, "keel-kernels:"), 0, "{err}");
}

#[test]
fn a_level_the_cpu_lacks_is_clamped_with_a_note() {
    let err = run_child("above", want_above().name());
    assert_eq!(count(&err, "keel-kernels: KEEL_KERNELS="), 1, "{err}");
}

/// Under `ci/x86_cpus.sh`, which runs this suite on emulated x86-64 CPUs
/// (qemu-user), `KEEL_KERNELS_EXPECT` names the level that CPU must be
/// detected at: a run whose detection went wrong (and so tested another
/// level's leaves) fails here instead of passing unnoticed.
#[test]
fn detected_level_is_the_one_the_emulated_cpu_has() {
    match std::env::var("KEEL_KERNELS_EXPECT") {
        Ok(want) => assert_eq!(cpu::detected().name(), want),
        Err(_) => {
            eprintln!("KEEL_KERNELS_EXPECT unset (set by ci/x86_cpus.sh): nothing to compare")
        }
    }
}
