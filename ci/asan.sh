#!/usr/bin/env bash
# AddressSanitizer over keel-heap's test suite, on nightly with std rebuilt
# under ASan (-Zbuild-std), so the tests' own buffers, the standard library
# and every access keel-heap makes to memory it did not map are checked.
# keel-heap maps its own memory with mmap, so ASan does not see individual
# blocks inside it; the heap checker, the double-free detector and the
# stress/fuzz models cover those. Run time is noted in heap/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component add --toolchain nightly rust-src
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Zsanitizer=address ${RUSTFLAGS:-}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export CARGO_TARGET_DIR=${ASAN_TARGET_DIR:-target/asan}
# --tests: the library's unit tests and every integration test (doctests do
# not take -Zbuild-std).
cargo +nightly test -Zbuild-std --target "$host" -p keel-heap --tests
