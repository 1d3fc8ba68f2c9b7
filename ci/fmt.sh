#!/usr/bin/env bash
# Formatting of the workspace and of the two side workspaces.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo fmt --manifest-path fuzz/Cargo.toml --all --check
cargo fmt --manifest-path bench/Cargo.toml --all --check
