#!/usr/bin/env bash
# keel-kernels and keel-heap on aarch64 without an aarch64 machine:
# cross-builds their test suites and runs them under qemu-user, so the NEON
# leaves are compared with their scalar twins (every length 0..=300 at
# offsets 0..=63, the filter sweep at 16 of them; edge values, with and
# without validity) and the allocator runs without its x86-64 TLS slot.
# Then clippy for that target.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu

bash ci/aarch64_deps.sh
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"

# Optimized, because qemu runs the debug build about 5x slower (over 4
# minutes on the 2-core CI machine, against under a minute here); debug
# assertions and overflow checks stay on, as in a debug build.
# Both crates in one build, so their compiles overlap. keel-heap: two tests
# say they skip here (the overcommit one: qemu maps its guest's memory
# itself; the bad-free one re-executes the test binary).
CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true \
  cargo test -p keel-kernels -p keel-heap --release --target "$target"
cargo clippy -p keel-kernels -p keel-heap --all-targets --target "$target" -- -D warnings
