//! Everyday tools under the preload (`ls -R`, `sort`, `python3`, `git`):
//! their output must be byte-identical to a run on the system allocator.
//! Each preloaded run gets `KEEL_HEAP_PURGE_EVERY=not-a-number`, which
//! keel-malloc (and only keel-malloc) answers with a warning on stderr at
//! start-up: proof that the library was really loaded and initialized in
//! that process.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(name: &str) -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .expect("run sh");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        out.status.success() && !path.is_empty(),
        "{name} is not installed; this test needs it"
    );
    PathBuf::from(path)
}

/// Runs `tool args` both ways in `dir` and asserts identical stdout and
/// success; returns the stdout.
fn same_output(name: &str, args: &[&str], dir: &Path) -> Vec<u8> {
    let exe = tool(name);
    let env = [("LC_ALL", "C"), ("TZ", "UTC")];
    let sys = common::run(
        &exe,
        args,
        &common::Run {
            preload: false,
            env: &env,
            dir: Some(dir),
        },
    );
    common::assert_success(&format!("{name} {args:?} on the system allocator"), &sys);
    let keel_env = [
        ("LC_ALL", "C"),
        ("TZ", "UTC"),
        ("KEEL_HEAP_PURGE_EVERY", "not-a-number"),
    ];
    let keel = common::run(
        &exe,
        args,
        &common::Run {
            preload: true,
            env: &keel_env,
            dir: Some(dir),
        },
    );
    common::assert_success(&format!("{name} {args:?} under the preload"), &keel);
    assert!(
        String::from_utf8_lossy(&keel.stderr)
            .contains("keel-malloc: ignoring KEEL_HEAP_PURGE_EVERY"),
        "{name} did not run on keel-malloc: {}",
        String::from_utf8_lossy(&keel.stderr)
    );
    assert!(
        sys.stdout == keel.stdout,
        "{name} {args:?}: output differs under the preload ({} vs {} bytes)",
        sys.stdout.len(),
        keel.stdout.len()
    );
    assert!(!sys.stdout.is_empty(), "{name} {args:?} printed nothing");
    sys.stdout
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("keel-malloc-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

#[test]
fn ls_recursive() {
    let dir = Path::new("/usr/include");
    assert!(dir.is_dir(), "/usr/include is missing");
    same_output("ls", &["-R", "-l", "--time-style=+%s", "."], dir);
}

#[test]
fn sort_generated_file() {
    let d = scratch("sort");
    let mut text = String::new();
    let mut x: u64 = 12345;
    for i in 0..150_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        text.push_str(&format!("{:x} {} line-{i}\n", x >> 20, x % 1000));
    }
    std::fs::write(d.join("in.txt"), text).unwrap();
    same_output("sort", &["in.txt"], &d);
    // Several threads, a small buffer: merges through temporary files.
    same_output(
        "sort",
        &[
            "--parallel=2",
            "-S",
            "2M",
            "-T",
            ".",
            "-k2,2n",
            "-k1,1",
            "in.txt",
        ],
        &d,
    );
}

#[test]
fn python_script() {
    let script = r#"
import hashlib, json, threading
d = {f"key-{i}": [i, str(i) * (i % 17), {"v": i * 0.5}] for i in range(120000)}
s = json.dumps(sorted(d.items())[::7])
parts = []
def work(k):
    parts.append((k, hashlib.sha256((s[k::4]).encode()).hexdigest()))
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(len(s), hashlib.sha256(s.encode()).hexdigest(), sorted(parts))
big = [bytearray(1 << 20) for _ in range(40)]
print(sum(len(b) for b in big))
"#;
    let d = scratch("python");
    same_output("python3", &["-c", script], &d);
}

#[test]
fn git_status_and_log() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let inside = Command::new(tool("git"))
        .args(["rev-parse", "--git-dir"])
        .current_dir(&repo)
        .output()
        .expect("run git rev-parse");
    if !inside.status.success() {
        println!(
            "skipped: {} is not a git checkout (a source archive)",
            repo.display()
        );
        return;
    }
    let d = scratch("git");
    // A private clone, so other work in the repository cannot change the
    // output between the two runs.
    let out = Command::new(tool("git"))
        .args(["clone", "--quiet", "--shared"])
        .arg(&repo)
        .arg(d.join("clone"))
        .output()
        .expect("run git clone");
    common::assert_success("git clone", &out);
    let clone = d.join("clone");
    std::fs::write(clone.join("untracked.txt"), "x\n").unwrap();
    same_output("git", &["status"], &clone);
    same_output("git", &["log", "--stat", "-n", "20"], &clone);
    // And on the repository itself, under the preload: it must succeed.
    let keel = common::run(
        &tool("git"),
        &["status", "--short"],
        &common::Run {
            preload: true,
            env: &[],
            dir: Some(&repo),
        },
    );
    common::assert_success("git status on the repository", &keel);
}
