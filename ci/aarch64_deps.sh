#!/usr/bin/env bash
# The aarch64 step's system packages (qemu-user, the cross gcc and libc),
# installed if missing; called by ci/aarch64.sh and ci/prefetch.sh.
set -euo pipefail
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null \
  || [ ! -d /usr/aarch64-linux-gnu/lib ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -q
  $sudo apt-get install -y qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
fi
