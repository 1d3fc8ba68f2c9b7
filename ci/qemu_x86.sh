#!/usr/bin/env bash
# The cargo runner of ci/x86_cpus.sh: runs a test binary under qemu-user as
# the CPU model `KEEL_QEMU_CPU` names, without qemu's note, once per
# process, of each host feature its TCG does not emulate; exits as the
# binary did.
set -uo pipefail
exec 3>&1
qemu-x86_64 -cpu "$KEEL_QEMU_CPU" "$@" 2>&1 1>&3 3>&- \
  | grep -v "TCG doesn't support requested feature" >&2
status=${PIPESTATUS[0]}
exec 3>&-
exit "$status"
