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
# keel-kernels with its arrow feature (the adapters), in the arrow-check
# workspace where that feature is on, beside the checks against arrow.
cargo clippy --manifest-path kernels/arrow-check/Cargo.toml --all-targets \
  -p keel-kernels -p keel-kernels-arrow-check -- -D warnings
cargo clippy -p keel-heap --features dynamic-tls --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
