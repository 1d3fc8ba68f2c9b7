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

# Miri runs one test binary at a time on one core; the two groups below take
# about the same time and run side by side (own target dirs, so neither waits
# on the other's build lock), halving the wall time on a 2-core machine.
base=${CARGO_TARGET_DIR:-target}

group_a() {
  export CARGO_TARGET_DIR=$base/miri-a
  # keel-kernels gather, scalar level (sizes shrunk under cfg(miri)).
  cargo +nightly miri test -p keel-kernels --test gather
  # keel-kernels hashing, partitioning, group-by and HyperLogLog, scalar
  # level (statistics tests skip themselves here).
  cargo +nightly miri test -p keel-kernels --test hash --test hll --test partition --test groupby
  # keel-kernels zone maps and the naive oracles.
  cargo +nightly miri test -p keel-kernels --test zone --test naive
}

group_b() {
  export CARGO_TARGET_DIR=$base/miri-b
  cargo +nightly miri test -p keel-topology --lib
  # keel-malloc: the pure C-API rules (overflow, alignment, option parsing,
  # the allocation-free stats writer); its C programs need a real process.
  cargo +nightly miri test -p keel-malloc --lib
  # keel-pool: a small real pool (threads, park/unpark, the latch freed by its
  # submitter); the timing-driven tests (high_water, wakes) stay native.
  cargo +nightly miri test -p keel-pool --lib --test exactly_once --test panics \
    --test nested --test shutdown --test broadcast --test width_one --test cancel \
    --test morsels --test blocking --test config --test binding
  # keel-kernels: Miri detects no SIMD, so this is the scalar level (the
  # twins) on lengths around the 64-row word boundaries.
  cargo +nightly miri test -p keel-kernels --test agg --test filter --test bitmap --test span
  # keel-heap: the whole test suite on its Miri OS backend (256 KiB regions,
  # sizes shrunk under cfg(miri)); one test thread keeps it deterministic.
  cargo +nightly miri test -p keel-heap --tests -- --test-threads=1
}

logs=$(mktemp -d)
( set -e; group_a ) >"$logs/a" 2>&1 &
pa=$!
( set -e; group_b ) >"$logs/b" 2>&1 &
pb=$!
ra=0; rb=0
wait "$pa" || ra=$?
wait "$pb" || rb=$?
echo "=== miri group a (exit $ra)"; cat "$logs/a"
echo "=== miri group b (exit $rb)"; cat "$logs/b"
[ "$ra" = 0 ] && [ "$rb" = 0 ]
