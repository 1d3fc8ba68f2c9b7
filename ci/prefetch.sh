#!/usr/bin/env bash
# What the later steps download (Rust targets and components, the Debian
# packages of the aarch64 step), fetched in the background while fmt,
# clippy and the tests build: on a fresh machine that is about a minute of
# waiting on the network off the critical path. Each step still checks for
# what it needs, so it runs on its own too. `.ci/run` waits for this before
# the first step that needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
for t in x86_64-unknown-none i686-unknown-linux-gnu aarch64-unknown-linux-gnu; do
  rustup target list --installed | grep -qx "$t" || rustup target add "$t"
done
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component add --toolchain nightly miri rust-src
# Miri's sysroot (std built for the interpreter, about a minute of one
# core): built here, where the tests' sleeping timing checks leave a core
# idle, instead of at the start of the Miri step.
cargo +nightly miri setup
bash ci/aarch64_deps.sh
# cargo-fuzz for the fuzz step: a build, on one job so the steps in front
# keep most of the machine (it fills the tests' waits on timers).
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked -j1
