#!/usr/bin/env bash
# The test command the README gives.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
