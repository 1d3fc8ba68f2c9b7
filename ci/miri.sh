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

# keel-kernels runs with the AVX2 and AVX-512 target features enabled: Miri's
# static detection then reports Level::Avx512, and each test compares every
# level (scalar, avx2, avx512) with the scalar twin, so the SIMD leaves run
# here even on CPUs without AVX-512, with Miri checking every masked load.
# (Miri has no model of the AVX-512 float compares into a mask; under Miri
# the float filter leaves use a lane-by-lane model of those two instructions.)
A5="+avx2,+bmi1,+bmi2,+popcnt,+fma,+lzcnt,+avx512f,+avx512bw,+avx512cd,+avx512dq,+avx512vl,+avx512vpopcntdq"

group_a() {
  export CARGO_TARGET_DIR=$base/miri-a
  # Sizes shrink under cfg(miri); statistics tests skip themselves there.
  RUSTFLAGS="-Ctarget-feature=$A5" cargo +nightly miri test -p keel-kernels \
    --test agg --test bitmap --test span --test hll \
    --test groupby --test naive --test gather --test grouped --test mask
  # The leaves of CPUs with VBMI2 (the tests above take the ones without:
  # A5 has no VBMI2): the masked HyperLogLog walk beside the one without,
  # the byte-compress select, and the byte compress of 1-byte values in
  # gather_masked.
  RUSTFLAGS="-Ctarget-feature=$A5,+avx512vbmi2" cargo +nightly miri test -p keel-kernels \
    --lib hll::tests::masked_walks
  RUSTFLAGS="-Ctarget-feature=$A5,+avx512vbmi2" cargo +nightly miri test -p keel-kernels \
    --test bitmap binops_popcount_select
  RUSTFLAGS="-Ctarget-feature=$A5,+avx512vbmi2" cargo +nightly miri test -p keel-kernels \
    --test gather masked_gather_over_bitmaps
}

group_b() {
  export CARGO_TARGET_DIR=$base/miri-b
  cargo +nightly miri test -p keel-topology --lib
  # keel-malloc: the pure C-API rules (overflow, alignment, option parsing,
  # the allocation-free stats writer); its C programs need a real process.
  cargo +nightly miri test -p keel-malloc --lib
  # keel-pool: a small real pool (threads, park/unpark, the latch freed by its
  # submitter, the offer table's pointers, per-hand slots and the reduction
  # tree); the timing-driven tests (high_water, wakes) and the child-process
  # one (spawn_limit) stay native.
  cargo +nightly miri test -p keel-pool --lib --test exactly_once --test panics \
    --test nested --test shutdown --test broadcast --test width_one --test cancel \
    --test morsels --test blocking --test config --test config_file --test binding \
    --test panic_payloads --test hands --test fold --test reduce --test try_morsels \
    --test join
  # keel-heap: the whole test suite on its Miri OS backend (256 KiB regions,
  # sizes shrunk under cfg(miri)); one test thread keeps it deterministic.
  cargo +nightly miri test -p keel-heap --tests -- --test-threads=1
  # keel-kernels filters, zone maps, radix partitions and hashes at every
  # level (see above); here for balance (on a 2-core Intel guest the
  # kernels group above runs 490 s of tests by Miri's clock, this one 485).
  RUSTFLAGS="-Ctarget-feature=$A5" cargo +nightly miri test -p keel-kernels \
    --test filter --test zone --test partition --test hash
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
