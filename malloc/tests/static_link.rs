//! The static library: a C program linked with `libkeel_malloc_preload.a`
//! gets keel-malloc's `malloc` family at link time (no preload) and still
//! runs the library constructor (options, fork handlers).

mod common;

use common::{Run, assert_success, compile_with, run, static_library};

fn check_static(file: &str, ok: &str) {
    let exe = compile_with(file, Some(&static_library()));
    let out = run(
        &exe,
        &[],
        &Run {
            preload: false,
            env: &[("KEEL_HEAP_DECAY_MS", "soon")],
            dir: None,
        },
    );
    assert_success(&format!("{file} linked statically"), &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(ok), "{stdout}");
    // malloc is defined by the executable itself, not by libc.
    let line = stdout.lines().next().unwrap_or_default();
    assert!(
        line == format!("allocator: {}", exe.display()),
        "malloc not linked in from the archive: {line}"
    );
    // The constructor ran: it read (and rejected) the option, once.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("keel-malloc: ignoring KEEL_HEAP_DECAY_MS=soon")
            .count(),
        1,
        "{stderr}"
    );
    // Linked in and preloaded as well: two copies of the library in one
    // process, and still one warning (the preloaded copy is not the
    // process's malloc and stays silent).
    let both = run(
        &exe,
        &[],
        &Run {
            preload: true,
            env: &[("KEEL_HEAP_DECAY_MS", "soon")],
            dir: None,
        },
    );
    assert_success(&format!("{file} linked statically and preloaded"), &both);
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert_eq!(
        stderr
            .matches("keel-malloc: ignoring KEEL_HEAP_DECAY_MS=soon")
            .count(),
        1,
        "{stderr}"
    );
}

#[test]
fn edge_cases_linked_statically() {
    check_static("edge.c", "edge: ok");
}

#[test]
fn fork_linked_statically() {
    check_static("fork.c", "fork: ok");
}
