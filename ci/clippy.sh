#!/usr/bin/env bash
# Lints, warnings as errors, for the workspace and the side workspaces;
# then rustdoc's warnings (broken intra-doc links) as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --manifest-path bench/Cargo.toml --all-targets -- -D warnings
# The fuzz targets' crate builds on stable too (cargo-fuzz adds the
# sanitizer flags, not the code), so its lints are held here as well.
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
cargo clippy -p keel-heap --features dynamic-tls --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
