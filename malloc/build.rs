//! Links the shared library with `-z nodelete`: keel-heap's decay thread
//! runs this library's code for the rest of the process once it is started
//! (a pooled map or a heap nobody owns starts it), so a `dlclose` that
//! unmapped the library would leave the thread to wake into unmapped code
//! (`tests/c/dlopen.c`). With the flag, `dlclose` succeeds and the library
//! stays.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        // Every target of the package: cargo's per-kind forms miss the
        // preloadable copy the tests use, an example built as a cdylib (it
        // builds no cdylib library for tests); on the test executables the
        // flag changes nothing.
        println!("cargo:rustc-link-arg=-Wl,-z,nodelete");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
