//! What the command-line tests share: where the recorded machines are, and
//! what a missing oracle means.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The recorded machines, beside the repository; `KEEL_FIXTURES` points
/// elsewhere (the oracle tests use it to stand for a clone without them).
pub fn fixture_dir() -> PathBuf {
    match std::env::var_os("KEEL_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/topology"),
    }
}

/// Whether this run is CI's (`CI` set to anything but empty, `0` or
/// `false`, as CI services set it).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// An oracle a test compares against is absent. A user's clone may lack
/// it, and the test says it skipped; CI must run the check, so there it
/// is a failure.
pub fn absent(what: &str) {
    assert!(!in_ci(), "{what}, and CI is set: the comparison must run");
    println!("skipped: {what}");
}

/// The recorded machine `name`, or `None` (skipped, or a failure under CI)
/// when it is absent.
pub fn fixture(name: &str) -> Option<PathBuf> {
    let p = fixture_dir().join(name);
    if p.join("root").is_dir() {
        Some(p)
    } else {
        absent(&format!("fixture {} is absent", p.display()));
        None
    }
}

/// Runs `test` of the calling test binary alone in a child, with `CI` as
/// given and either the fixtures (`KEEL_FIXTURES`) or every program on
/// `PATH` taken away; returns its stdout and stderr together, and whether
/// it passed.
pub fn rerun_without_oracle(test: &str, ci: Option<&str>, no_path: bool) -> (bool, String) {
    let empty = std::env::temp_dir().join(format!("keel-no-oracle-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    c.env_remove("CI");
    if let Some(v) = ci {
        c.env("CI", v);
    }
    if no_path {
        c.env("PATH", &empty);
    } else {
        c.env("KEEL_FIXTURES", empty.join("absent"));
    }
    let out: Output = c.output().unwrap();
    let _ = std::fs::remove_dir(&empty);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The rule of [`absent`], checked on `test`: under `CI=true` it fails
/// naming `why`, on a user's clone it passes and says it skipped.
pub fn check_missing_oracle(test: &str, no_path: bool, why: &str) {
    let (ok, text) = rerun_without_oracle(test, Some("true"), no_path);
    assert!(!ok, "{test} passed under CI without its oracle: {text}");
    assert!(
        text.contains(why) && text.contains("CI is set"),
        "{test}: {text}"
    );
    let (ok, text) = rerun_without_oracle(test, None, no_path);
    assert!(ok, "{test} failed on a clone without its oracle: {text}");
    assert!(text.contains(&format!("skipped: {why}")), "{test}: {text}");
}
