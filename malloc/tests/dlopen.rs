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
