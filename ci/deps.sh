#!/usr/bin/env bash
# System packages the tests compare against: hwloc (lstopo-no-graphics,
# hwloc-calc) for keel topo's agreement test and the topology benchmark.
# Idempotent: installs only what is missing.
set -euo pipefail
if ! command -v lstopo-no-graphics >/dev/null || ! command -v hwloc-calc >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
  $sudo apt-get install -y hwloc || { $sudo apt-get update && $sudo apt-get install -y hwloc; }
fi
lstopo-no-graphics --version
