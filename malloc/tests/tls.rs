//! Thread start-up and exit that allocate: `tests/c/tls.c` (pthread_key
//! destructors, `__thread`) and `tests/c/tls_cxx.cc` (C++ `thread_local`).

mod common;

#[test]
fn tls_program_passes_under_preload() {
    let out = common::check_program("tls.c", &[], &[]);
    assert!(out.contains("tls: ok"), "{out}");
}

#[test]
fn cxx_thread_locals_pass_under_preload() {
    let out = common::check_program("tls_cxx.cc", &[], &[]);
    assert!(out.contains("tls_cxx: ok"), "{out}");
}
