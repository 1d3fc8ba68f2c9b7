#!/usr/bin/env bash
# The test command the README gives.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
# keel-heap with its thread's heap in a plain thread_local! (the dynamic-tls
# feature) instead of the initial-exec slot: the same suite must pass.
cargo test -p keel-heap --features dynamic-tls
