#!/usr/bin/env bash
# Proves the no_std crates build without std for a bare-metal target and for a
# 32-bit one, and that keel-heap's core builds without its std feature.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-none
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
for crate in keel-topology keel-kernels; do
  cargo build -p "$crate" --no-default-features --target "$target"
done
cargo build -p keel-kernels --no-default-features --features alloc --target "$target"
cargo build -p keel-heap --no-default-features
# A 32-bit target: the no_std crates must not assume a 64-bit usize.
t32=i686-unknown-linux-gnu
rustup target list --installed | grep -qx "$t32" || rustup target add "$t32"
for crate in keel-topology keel-kernels; do
  cargo build -p "$crate" --no-default-features --target "$t32"
done
cargo build -p keel-kernels --no-default-features --features alloc --target "$t32"
