//! keel-malloc loaded with `dlopen` instead of preloaded: keel-heap keeps the
//! thread's heap pointer in an initial-exec TLS slot (the library is marked
//! `STATIC_TLS`), which glibc serves from its static TLS reserve for a
//! library loaded late. `tests/c/dlopen.c` drives the exported functions
//! from the main thread and from threads started after the load.

mod common;

use common::{Run, assert_success, compile, library, run};

#[test]
fn library_loaded_with_dlopen_serves_every_thread() {
    let exe = compile("dlopen.c");
    let lib = library();
    let out = run(&exe, &[lib.to_str().expect("a UTF-8 path")], &Run::SYSTEM);
    assert_success("dlopen.c with the library loaded by dlopen", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("dlopen: ok"), "{stdout}");
}

/// Closing the library while keel-heap's decay thread runs (a pooled map
/// started it) leaves the library mapped (`-z nodelete`, `build.rs`): the
/// thread keeps running this library's code, and unmapped it would crash
/// the process at its next wake-up (`tests/c/dlclose.c`).
#[test]
fn library_closed_with_its_decay_thread_running_stays_mapped() {
    let exe = compile("dlclose.c");
    let lib = library();
    let out = run(&exe, &[lib.to_str().expect("a UTF-8 path")], &Run::SYSTEM);
    assert_success("dlclose.c with the decay thread running", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("dlclose: ok"), "{stdout}");
}
