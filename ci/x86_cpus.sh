#!/usr/bin/env bash
# keel-kernels on x86-64 CPUs other than the one CI runs on: its test suite
# under qemu-user as an Intel core with AVX2 (Haswell: cpuid says Intel, so
# the Intel-only choices, such as the AVX2 leaves' prefetch, are taken), as
# AMD Zen 3 (EPYC-Milan: family 25 without AVX-512) and as an x86-64 with
# no AVX2 (Nehalem: the scalar level). The runtime dispatch reads the
# emulated cpuid, so each run checks the leaves and choices that CPU gets,
# and a test asserts the level detected (`KEEL_KERNELS_EXPECT`). qemu's TCG
# has no AVX-512; the host runs that level in ci/test.sh. Release with
# debug assertions and overflow checks on, as in ci/aarch64.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# qemu-user (qemu-x86_64 is in the same package as qemu-aarch64).
bash ci/aarch64_deps.sh

export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
# Doctests run on the host in ci/test.sh; here the unit and integration tests.
cargo test -p keel-kernels --release --tests --no-run

runner="$PWD/ci/qemu_x86.sh"
for cpu_level in Haswell:avx2 EPYC-Milan:avx2 Nehalem:scalar; do
  cpu=${cpu_level%%:*}
  echo "--- keel-kernels as $cpu (expected level ${cpu_level##*:})"
  KEEL_QEMU_CPU="$cpu" KEEL_KERNELS_EXPECT="${cpu_level##*:}" \
    CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$runner" \
    cargo test -p keel-kernels --release --tests -q
done
