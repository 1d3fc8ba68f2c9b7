//! loom model checks of keel's public concurrent protocols.
//!
//! The models live in `tests/` and only build with `--cfg keel_loom`; run
//! them with `ci/loom.sh`. This library is empty on purpose.
