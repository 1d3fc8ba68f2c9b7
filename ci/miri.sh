#!/usr/bin/env bash
# Miri over the parts of each crate that Miri can run (tests shrink their
# sizes under cfg(miri); mmap-backed and threaded stress tests are skipped
# there with a printed reason).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component add --toolchain nightly miri rust-src
cargo +nightly miri setup
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}"
cargo +nightly miri test -p keel-topology --lib
# keel-malloc: the pure C-API rules (overflow, alignment, option parsing,
# the allocation-free stats writer); its C programs need a real process.
cargo +nightly miri test -p keel-malloc --lib
# keel-pool: a small real pool (threads, park/unpark, the latch freed by its
# submitter); the timing-driven tests (high_water, wakes) stay native.
cargo +nightly miri test -p keel-pool --lib --test exactly_once --test panics \
  --test nested --test shutdown --test broadcast --test width_one --test cancel \
  --test morsels --test blocking --test config --test binding
# keel-kernels: Miri detects no SIMD, so this is the scalar level (the twins)
# on lengths around the 64-row word boundaries; each kernel family lists its
# own test files.
cargo +nightly miri test -p keel-kernels --test agg --test filter --test bitmap \
  --test zone --test span --test naive
# keel-heap: the whole test suite on its Miri OS backend (256 KiB regions,
# sizes shrunk under cfg(miri)); one test thread keeps the run deterministic.
cargo +nightly miri test -p keel-heap --tests -- --test-threads=1
# keel-kernels hashing, partitioning, group-by and HyperLogLog, scalar level
# (statistics tests skip themselves here; about 1 minute).
cargo +nightly miri test -p keel-kernels --test hash --test hll --test partition --test groupby
# keel-kernels gather, scalar level (sizes shrunk under cfg(miri); about 2
# minutes on this shared 2-core machine at load 10).
cargo +nightly miri test -p keel-kernels --test gather
