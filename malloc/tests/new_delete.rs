//! C++'s `operator new` / `operator delete` family: `tests/c/new_delete.cc`
//! calls every form, preloaded and linked statically, and checks the
//! standard's failure behaviour (`std::bad_alloc`, null from `nothrow`, the
//! `new_handler` loop) on the system's operators and on keel's.

mod common;

use common::{Run, assert_success, compile_with, run, static_library};

#[test]
fn every_operator_is_keels_under_preload() {
    let out = common::check_program("new_delete.cc", &[], &[]);
    assert!(out.contains("new_delete: ok"), "{out}");
    // Every form the program calls binds to keel-malloc, not libstdc++.
    let lib = common::library();
    assert!(
        out.contains(&format!("operators: {}\n", lib.display())),
        "operators not all keel-malloc's:\n{out}"
    );
    // And keel's statistics saw each block come and go.
    assert!(out.contains("keel statistics: found"), "{out}");
}

#[test]
fn every_operator_is_keels_when_linked_statically() {
    let exe = compile_with("new_delete.cc", Some(&static_library()));
    let out = run(&exe, &[], &Run::SYSTEM);
    assert_success("new_delete.cc linked statically", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("new_delete: ok"), "{stdout}");
    assert!(
        stdout.contains(&format!("operators: {}\n", exe.display())),
        "operators not linked in from the archive:\n{stdout}"
    );
    assert!(stdout.contains("keel statistics: found"), "{stdout}");
}
