//! Shared harness: compile a C program from `tests/c/`, run it with and
//! without `LD_PRELOAD` of the freshly built `libkeel_malloc.so`.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The preloadable library cargo built for this test run. `cargo test` never
/// builds a cdylib-only library target (it cannot be linked into the test
/// executables), so the package builds the same source as the example
/// `keel_malloc_preload`, which `cargo test` always builds:
/// `target/<profile>/examples/libkeel_malloc_preload.so`, found from this test
/// executable's path (`target/<profile>/deps/<test>`).
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps");
    let lib = profile_dir.join("examples/libkeel_malloc_preload.so");
    assert!(
        lib.is_file(),
        "{} is missing: `cargo test -p keel-malloc` builds it as the example \
         `keel_malloc_preload`, but a `--test <name>` filter or a test binary \
         run by hand skips examples: run `cargo build -p keel-malloc --examples` first",
        lib.display()
    );
    lib
}

/// The static library built beside [`library`]
/// (`examples/libkeel_malloc_preload.a`).
pub fn static_library() -> PathBuf {
    let lib = library().with_extension("a");
    assert!(
        lib.is_file(),
        "{} is missing: run `cargo build -p keel-malloc --examples` first",
        lib.display()
    );
    lib
}

/// Compiles `tests/c/<file>` (C or C++ by extension) into the test temp
/// directory and returns the executable's path.
pub fn compile(file: &str) -> PathBuf {
    compile_with(file, None)
}

/// As [`compile`], linking `archive` (a static allocator library) into the
/// program when given; the executable's name says which.
pub fn compile_with(file: &str, archive: Option<&Path>) -> PathBuf {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(file);
    assert!(src.is_file(), "missing C source {}", src.display());
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("keel-malloc-c");
    std::fs::create_dir_all(&out_dir).expect("create the C output directory");
    let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
    let exe = out_dir.join(if archive.is_some() {
        format!("{stem}-static")
    } else {
        stem.clone()
    });
    // Tests run in parallel and in several processes: build under a unique
    // name, then rename into place atomically.
    let tmp = out_dir.join(format!(
        "{stem}.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let cxx = file.ends_with(".cc");
    let mut cmd = Command::new(if cxx { "c++" } else { "cc" });
    cmd.args(["-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"]);
    if !cxx {
        // So the compiler cannot fold malloc/free calls (or their failure
        // cases) away: every call must reach the allocator under test.
        cmd.args(["-std=gnu11", "-fno-builtin"]);
    }
    cmd.arg(&src).arg("-o").arg(&tmp);
    if let Some(a) = archive {
        // The archive's malloc family replaces libc's at link time; Rust's
        // std inside it needs libm and libdl (libgcc_s comes by default).
        cmd.arg(a).arg("-lm");
    }
    cmd.arg("-ldl");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler for {file}: {e}"));
    assert!(
        out.status.success(),
        "compiling {file} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &exe).expect("move the compiled program into place");
    exe
}

/// How to run a program.
pub struct Run<'a> {
    /// Preload keel-malloc.
    pub preload: bool,
    /// Extra environment.
    pub env: &'a [(&'a str, &'a str)],
    /// Working directory (inherited when `None`).
    pub dir: Option<&'a Path>,
}

impl Run<'_> {
    /// Preloaded, no extra environment.
    pub const KEEL: Run<'static> = Run {
        preload: true,
        env: &[],
        dir: None,
    };
    /// The system allocator.
    pub const SYSTEM: Run<'static> = Run {
        preload: false,
        env: &[],
        dir: None,
    };
}

/// Runs `program args` as described by `how` and returns its output.
pub fn run(program: &Path, args: &[&str], how: &Run<'_>) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args);
    // Never inherit a preload or an option from the environment running the
    // tests: each run says exactly what it wants.
    cmd.env_remove("LD_PRELOAD");
    for v in [
        "KEEL_HEAP_PURGE_EVERY",
        "KEEL_HEAP_DECAY_MS",
        "KEEL_HEAP_STATS",
        "KEEL_HEAP_CHECK",
        "KEEL_HEAP_STATS_FILE",
    ] {
        cmd.env_remove(v);
    }
    if how.preload {
        cmd.env("LD_PRELOAD", library());
    }
    for (k, v) in how.env {
        cmd.env(k, v);
    }
    if let Some(d) = how.dir {
        cmd.current_dir(d);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// Asserts a run succeeded, showing its output otherwise.
pub fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `file`, runs it once on the system allocator (so the program
/// itself is proven correct) and once preloaded, asserting both succeed and
/// that the preloaded run really used keel-malloc. Returns the preloaded
/// run's stdout.
pub fn check_program(file: &str, args: &[&str], keel_env: &[(&str, &str)]) -> String {
    let exe = compile(file);
    let system = run(&exe, args, &Run::SYSTEM);
    assert_success(&format!("{file} on the system allocator"), &system);
    let keel = run(
        &exe,
        args,
        &Run {
            preload: true,
            env: keel_env,
            dir: None,
        },
    );
    assert_success(&format!("{file} under LD_PRELOAD=libkeel_malloc.so"), &keel);
    let stdout = String::from_utf8_lossy(&keel.stdout).into_owned();
    assert_allocator_is_keel(file, &stdout);
    stdout
}

/// The C programs print `allocator: <object defining malloc>` first.
pub fn assert_allocator_is_keel(what: &str, stdout: &str) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("allocator: "))
        .unwrap_or_else(|| panic!("{what}: no allocator line in {stdout:?}"));
    let lib = library();
    let name = lib.file_name().unwrap().to_string_lossy();
    assert!(
        line.ends_with(&*name),
        "{what}: malloc was not keel-malloc's under the preload: {line}"
    );
}
