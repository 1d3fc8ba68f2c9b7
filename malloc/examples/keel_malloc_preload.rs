//! The preloadable library again, built as an example only so that
//! `cargo test` produces it for the C tests (see `Cargo.toml`). The modules
//! are the crate's own files; keep this list in step with `src/lib.rs`.

#[path = "../src/init.rs"]
pub mod init;
#[path = "../src/options.rs"]
pub mod options;
#[path = "../src/policy.rs"]
pub mod policy;
#[path = "../src/report.rs"]
pub mod report;

#[path = "../src/exports.rs"]
pub(crate) mod exports;
#[cfg(target_pointer_width = "64")]
#[path = "../src/exports_cxx.rs"]
pub(crate) mod exports_cxx;
