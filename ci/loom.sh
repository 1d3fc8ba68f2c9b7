#!/usr/bin/env bash
# loom model checks: the models beside the code (tests named `loom_*` inside
# keel-pool and keel-heap) and the public-behaviour ones in loom-tests/.
# Release mode with debug assertions, 2 preemptions, as tokio's CI does; a
# separate target dir so the cfg change does not invalidate normal builds.
# About 2 minutes on the 2-core CI machine, half of it the build; the
# models' times are in loom-tests/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg keel_loom ${RUSTFLAGS:-}"
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-2}
export CARGO_TARGET_DIR=${LOOM_TARGET_DIR:-target/loom}
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
cargo test --release -p keel-pool -p keel-heap -p keel-loom-tests -- loom
