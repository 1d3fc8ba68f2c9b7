#!/usr/bin/env bash
# Fuzz smoke: every target for a few seconds (FUZZ_SECONDS, default 3).
#
# The smoke builds the dev profile (ASan and coverage still on, debug
# assertions too): the release build spends about 6.5 of its 7 minutes in
# keel-kernels' SIMD leaves under the sanitizer, the dev build 1.5 minutes in
# all. A target then runs hundreds to thousands of inputs a second instead of
# tens of thousands, which is what a smoke needs: every harness builds, runs,
# and passes its corpus. Long campaigns use the release build:
#   cargo +nightly fuzz run <target> -- -max_total_time=600
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-3}
profile=${FUZZ_PROFILE-"--dev"}  # FUZZ_PROFILE= (empty) builds release
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cd fuzz
cargo +nightly fuzz build $profile
for t in $(cargo +nightly fuzz list); do
  echo "== fuzz $t (${secs}s)"
  cargo +nightly fuzz run $profile "$t" -- -max_total_time="$secs" -rss_limit_mb=4096 2>&1 | tail -n 3
  # tail hides the exit status; pipefail brings it back.
done
