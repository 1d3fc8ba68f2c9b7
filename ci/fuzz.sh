#!/usr/bin/env bash
# Fuzz smoke: every target for a few seconds (FUZZ_SECONDS, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-2}
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cd fuzz
cargo +nightly fuzz build
for t in $(cargo +nightly fuzz list); do
  echo "== fuzz $t (${secs}s)"
  cargo +nightly fuzz run "$t" -- -max_total_time="$secs" -rss_limit_mb=4096 2>&1 | tail -n 3
  # tail hides the exit status; pipefail brings it back.
done
