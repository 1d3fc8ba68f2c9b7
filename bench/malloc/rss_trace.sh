#!/usr/bin/env bash
# RSS over time of the pipelined query (query_pipe) and its idle tail under
# glibc, jemalloc, mimalloc, tcmalloc and keel-malloc, one after the other
# in a rotating order, sampled every 5 ms by `rss-plot trace`, and drawn as
# one SVG by `rss-plot plot` (a ring marks where each loop ended).
#
#   bench/malloc/rss_trace.sh OUT.svg [query_pipe arguments]
#   ALLOCATORS="mimalloc keel" bench/malloc/rss_trace.sh /tmp/rss.svg 100
#
# The traces (ms<TAB>KiB) are left beside the SVG as OUT.<allocator>.tsv
# when KEEP_TSV=1. Installs the Debian allocator packages as run.sh does.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${1:?usage: rss_trace.sh OUT.svg [query_pipe arguments]}
shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(200 2 20000 1000 1)
allocators=(${ALLOCATORS:-glibc jemalloc mimalloc tcmalloc keel})
source bench/malloc/allocators.sh
echo "building rss-plot (release)" >&2
cargo build --release --manifest-path bench/Cargo.toml --bin rss-plot >&2
plot="$root/bench/target/release/rss-plot"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -g -Wall -Wextra -pthread bench/malloc/query_pipe.c -o "$work/query_pipe"
# Start the rotation at a different allocator on each run (by the clock).
n=${#allocators[@]}
shift_by=$(($(date +%s) % n))
traces=()
for ((i = 0; i < n; i++)); do
  a=${allocators[$(((i + shift_by) % n))]}
  echo "tracing under $a" >&2
  # `env` execs the program in place, so the traced pid is the program's
  # and only it runs under the preload.
  "$plot" trace --out "$work/$a.tsv" --every-ms 5 -- \
    env LD_PRELOAD="${lib[$a]}" "$work/query_pipe" "${args[@]}" >"$work/$a.out"
  sed 's/^/  /' "$work/$a.out" >&2
done
# The legend in the usual order.
for a in "${allocators[@]}"; do traces+=("$work/$a.tsv"); done
"$plot" plot --out "$out" \
  --title "query_pipe ${args[*]}: RSS over time (loop, then idle)" "${traces[@]}"
if [ "${KEEP_TSV:-0}" = 1 ]; then
  for a in "${allocators[@]}"; do cp "$work/$a.tsv" "${out%.svg}.$a.tsv"; done
fi
