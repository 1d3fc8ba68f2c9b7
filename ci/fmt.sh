#!/usr/bin/env bash
# Formatting of the workspace and of the two side workspaces.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
(cd fuzz && cargo fmt --check)
(cd bench && cargo fmt --check)
