//! A worker thread the OS refuses to start makes `build` return
//! `BuildError::Spawn`, with the workers already started joined, never an
//! abort. Checked in a child process (this test binary run again) whose
//! `RLIMIT_NPROC` leaves room for only a few more threads.
#![cfg(all(not(keel_loom), target_os = "linux"))]

use keel_pool::{BuildError, ENV_WORKERS, Pool};
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child, naming the scenario it runs.
const CHILD: &str = "KEEL_POOL_SPAWN_LIMIT_CHILD";
/// Threads the child's limit leaves room for beyond those that exist.
const ROOM: u64 = 3;
/// The unprivileged user the child becomes when it runs as root, for whom
/// the kernel does not enforce `RLIMIT_NPROC`.
const NOBODY: libc::uid_t = 65534;

/// Tasks (threads) of this process, from `/proc/self/status`.
fn threads() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    s.lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("a Threads: line")
}

/// Tasks of every process whose real user is `uid`: what the kernel counts
/// against that user's `RLIMIT_NPROC`.
fn tasks_of(uid: libc::uid_t) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            n += field("Threads:").unwrap_or(1);
        }
    }
    n
}

/// Lowers `RLIMIT_NPROC` so that only `ROOM` more threads can start, first
/// dropping root (the kernel exempts it). Returns false if the limit cannot
/// be made to bite.
fn limit_threads() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: setuid changes this process's credentials only; glibc
        // applies it to every thread.
        if unsafe { libc::setuid(NOBODY) } != 0 {
            println!(
                "cannot drop root ({}): RLIMIT_NPROC does not bind root",
                std::io::Error::last_os_error()
            );
            return false;
        }
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let limit = tasks_of(uid) + ROOM;
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: `rl` is a valid rlimit; lowering a limit needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &rl) } != 0 {
        println!("setrlimit failed: {}", std::io::Error::last_os_error());
        return false;
    }
    true
}

/// Waits for the thread count to come back to `want` (a joined thread may
/// linger in `/proc` for a moment after `join` returns).
fn settles_at(want: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while threads() > want {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The child's side: one scenario, its outcome printed as `outcome: ...`.
fn child(scenario: &str) {
    if !limit_threads() {
        println!("outcome: no-limit");
        return;
    }
    let before = threads();
    let built = match scenario {
        "builder" => Pool::builder()
            .width(64)
            .spin_window(Duration::ZERO)
            .build(),
        // The environment's width is capped at a few hands per CPU, which
        // here still asks for more threads than the limit allows (or fits,
        // on a machine with more room than ROOM: either way, no abort).
        "env" => Pool::builder().spin_window(Duration::ZERO).build(),
        other => panic!("unknown scenario {other}"),
    };
    match built {
        Err(BuildError::Spawn { index, error }) => {
            assert!(
                settles_at(before),
                "started workers were not joined: {} threads, {before} before",
                threads()
            );
            println!("outcome: spawn-error index {index}: {error}");
            // The process goes on, and a pool that fits still builds.
            let p = Pool::builder()
                .width(2)
                .spin_window(Duration::ZERO)
                .build()
                .expect("a one-worker pool within the limit");
            let n = std::sync::atomic::AtomicUsize::new(0);
            p.run(4, |_| {
                n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
            assert_eq!(n.into_inner(), 4);
        }
        Ok(p) => println!("outcome: built width {}", p.width()),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Runs this test binary again as the child for `scenario`.
fn run_child(scenario: &str, env: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args(["--exact", "spawn_failure_is_an_error", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD, scenario)
        .envs(env.iter().copied())
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{scenario}: child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
        .lines()
        .find_map(|l| l.split_once("outcome: ").map(|(_, o)| o))
        .unwrap_or_else(|| panic!("{scenario}: no outcome line in\n{stdout}\n{stderr}"))
        .to_string()
}

#[test]
fn spawn_failure_is_an_error() {
    if cfg!(miri) {
        println!("skipping under Miri: it cannot run a child process");
        return;
    }
    if let Ok(scenario) = std::env::var(CHILD) {
        child(&scenario);
        return;
    }
    let builder = run_child("builder", &[]);
    if builder == "no-limit" {
        assert!(
            std::env::var_os("CI").is_none(),
            "under CI the thread limit must be testable"
        );
        println!("skipped: RLIMIT_NPROC cannot be made to bind here");
        return;
    }
    // Width 64 needs 63 workers; the limit left room for about ROOM
    // threads, so a few started, the next one failed, and the child checked
    // that the started ones were joined.
    let index: usize = builder
        .strip_prefix("spawn-error index ")
        .and_then(|r| r.split(':').next())
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("builder: {builder}"));
    assert!(index < 63, "builder: {builder}");
    // KEEL_WORKERS=65536 used to start ~16,000 threads and abort.
    let env = run_child("env", &[(ENV_WORKERS, "65536")]);
    assert!(
        env.starts_with("spawn-error") || env.starts_with("built width"),
        "env: {env}"
    );
    println!("builder: {builder}\nenv: {env}");
}
