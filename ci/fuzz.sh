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
# The harnesses' own replays of fixed inputs (their unit tests), which a
# few seconds of fuzzing from an empty corpus may not reach.
cargo +nightly test --lib
cargo +nightly fuzz build $profile
# Two targets at a time (each fuzzer runs on one core); a target's lines
# are printed together when it ends, and any failure fails the step.
run_one() {
  local out rc=0
  out=$(cargo +nightly fuzz run $profile "$1" -- -max_total_time="$secs" -rss_limit_mb=4096 2>&1) || rc=$?
  printf '== fuzz %s (%ss, exit %s)\n%s\n' "$1" "$secs" "$rc" "$(tail -n 3 <<<"$out")"
  return "$rc"
}
export -f run_one
export profile secs
cargo +nightly fuzz list | xargs -P2 -I{} bash -c 'run_one "$1"' _ {}
