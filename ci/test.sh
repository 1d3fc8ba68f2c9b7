#!/usr/bin/env bash
# The test command the README gives.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
# keel-heap with its thread's heap in a plain thread_local! (the dynamic-tls
# feature) instead of the initial-exec slot: the same suite must pass.
cargo test -p keel-heap --features dynamic-tls
# The HyperLogLog error check at 1 M and 10 M keys is ignored in debug builds
# (too slow there); it runs here in release, where it takes seconds, with
# the debug assertions and overflow checks ci/x86_cpus.sh builds with, so
# that step reuses this build of the crate.
CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true \
  cargo test --release -p keel-kernels --test hll -- --ignored
# The always-on misuse checks of a release build (debug builds run the full
# checker, which finds every double free at the free): a double free of a
# small block is found at the allocation that would hand it out again.
cargo test --release -p keel-heap --test bad_frees
cargo build --release -p keel-malloc --examples
cargo test --release -p keel-malloc --test bad_frees
# keel-kernels' arrow adapters against arrow's own compute kernels, in
# their own workspace so arrow never reaches the default build.
cargo test --manifest-path kernels/arrow-check/Cargo.toml
# The arrow feature's doctests, built in that workspace too (where
# keel-kernels has the feature on), so arrow is compiled once.
cargo test --manifest-path kernels/arrow-check/Cargo.toml -p keel-kernels --doc arrow
