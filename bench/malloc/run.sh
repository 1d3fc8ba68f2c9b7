#!/usr/bin/env bash
# Allocator stress programs under glibc, jemalloc, mimalloc, tcmalloc and
# keel-malloc, interleaved (every round runs every program under every
# allocator, in a rotating order), printing medians of the program's own
# figure, peak RSS and minor faults, each with its ratio to mimalloc, as a
# markdown table.
#
#   bench/malloc/run.sh                 # ROUNDS=3 by default
#   ROUNDS=5 ONLY="query query-x query-pipe" bench/malloc/run.sh
#   ALLOCATORS="glibc mimalloc keel" bench/malloc/run.sh
#   EXTRA="keel-old=/tmp/libkeel_malloc.so" ALLOCATORS="mimalloc keel keel-old" \
#     bench/malloc/run.sh             # A/B against another build of a library
#   RATIOS="keel/keel-old keel/mimalloc" ...  # also each round's time ratio
#                                             # of those pairs, sorted
#
# Needs cc, /usr/bin/time, python3 (for the summary only; it never runs under
# a preload), and installs the Debian allocator packages when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rounds=${ROUNDS:-3}
allocators=(${ALLOCATORS:-glibc jemalloc mimalloc tcmalloc keel})
source bench/malloc/allocators.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for p in larson xmalloc cache_scratch small_random large medium query query_pipe; do
  cc -O2 -g -Wall -Wextra -pthread "bench/malloc/$p.c" -o "$work/$p"
done
# mimalloc-bench's larsonN in C++ (new[]/delete[]): the allocator's
# operator new when it exports one, libstdc++'s over its malloc otherwise.
c++ -O2 -g -Wall -Wextra -pthread bench/malloc/larson.cc -o "$work/larson_cxx"

# name | program and arguments
programs=(
  "larson|larson 2 40 50000 2000 16 1000"
  "larsonN|larson_cxx 2 8 1000 5000 100 4141 2"
  "larsonN-sized|larson_cxx 2 8 1000 5000 100 4141 2 sized"
  "xmalloc|xmalloc 1 1 6000000 256"
  "cache-scratch|cache_scratch 2 1500 8 5000"
  "small-random|small_random 2 2000000 200000"
  "large|large 2 3000"
  "medium|medium 2 3000000 2000"
  "query|query 200 2 20000 0"
  "query-x|query 200 2 20000 1"
  "query-pipe|query_pipe 200 2 20000 1000 1"
)
only=" ${ONLY:-} "

results="$work/results.tsv"
: >"$results"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 0; r < rounds; r++)); do
  for entry in "${programs[@]}"; do
    name=${entry%%|*}
    cmd=(${entry#*|})
    [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
    n=${#allocators[@]}
    for ((i = 0; i < n; i++)); do
      a=${allocators[$(((i + r) % n))]}
      out=$(/usr/bin/time -f "%e %M %R" -o "$work/time" \
        env LD_PRELOAD="${lib[$a]}" "$work/${cmd[0]}" "${cmd[@]:1}" 2>"$work/stderr") || {
        echo "$name under $a failed:" >&2
        cat "$work/stderr" >&2
        exit 1
      }
      read -r metric value < <(echo "$out" | awk '$1 == "result" {print $2, $3}')
      read -r wall rss flt <"$work/time"
      # Programs with an idle tail (query_pipe) also print their live-bytes
      # peak and the RSS at the loop's end and after the idle time.
      read -r live endrss idle < <(echo "$out" | awk '
        $1 == "peak_live_kib" {l = $2} $1 == "end_rss_kib" {e = $2} $1 == "idle_rss_kib" {i = $2}
        END {print (l == "" ? "-" : l), (e == "" ? "-" : e), (i == "" ? "-" : i)}')
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$a" "$metric" "$value" "$rss" "$flt" \
        "$live" "$endrss" "$idle" >>"$results"
      echo "round $((r + 1))/$rounds $name $a: $metric $value, wall $wall s, $rss KiB, $flt faults" >&2
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$results" "${allocators[@]}" <<'PY'
import os, statistics, sys
from collections import defaultdict
path, allocs = sys.argv[1], sys.argv[2:]
rows = defaultdict(lambda: defaultdict(list))
tails = defaultdict(lambda: defaultdict(list))
metric = {}
order = []
for line in open(path):
    name, a, m, v, rss, flt, live, endrss, idle = line.rstrip("\n").split("\t")
    if name not in order:
        order.append(name)
    metric[name] = m
    rows[name][a].append((float(v), int(rss), int(flt)))
    if idle != "-":
        tails[name][a].append((int(live), int(rss), int(endrss), int(idle)))
def med(xs): return statistics.median(xs)
print("| program | allocator | figure (median) | time × mimalloc | peak RSS MiB | RSS × mimalloc | minor faults | faults × mimalloc |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for name in order:
    m = metric[name]
    ref = rows[name].get("mimalloc")
    def stats(a):
        s = rows[name][a]
        return med([x[0] for x in s]), med([x[1] for x in s]), med([x[2] for x in s])
    rv = stats("mimalloc") if ref else None
    for a in allocs:
        if a not in rows[name]:
            continue
        v, rss, flt = stats(a)
        fig = f"{v:.3f} s" if m == "seconds" else f"{v/1e6:.2f} Mops/s"
        if rv:
            # Always a time ratio (lower is better): seconds / mimalloc's
            # seconds, or mimalloc's throughput / this throughput.
            tr = v / rv[0] if m == "seconds" else rv[0] / v
            rr = rss / rv[1]
            fr = flt / rv[2] if rv[2] else float("nan")
            ratios = (f"{tr:.2f}", f"{rr:.2f}", f"{fr:.2f}")
        else:
            ratios = ("-", "-", "-")
        print(f"| {name} | {a} | {fig} | {ratios[0]} | {rss/1024:.1f} | {ratios[1]} | {flt} | {ratios[2]} |")
n = len(next(iter(next(iter(rows.values())).values())))
print(f"\n{n} rounds, medians; time × mimalloc < 1 is faster than mimalloc.")
pairs = [p.split("/") for p in os.environ.get("RATIOS", "").split()]
if pairs:
    # Each round runs every allocator back to back, so a round's ratio
    # compares runs made under the same outside load.
    print("\n| program | time ratio | per-round ratios (sorted) | median | min | max |")
    print("|---|---|---|---:|---:|---:|")
    for name in order:
        for a, b in pairs:
            if a not in rows[name] or b not in rows[name]:
                continue
            sec = metric[name] == "seconds"
            rs = sorted((x[0] / y[0]) if sec else (y[0] / x[0])
                        for x, y in zip(rows[name][a], rows[name][b]))
            print(f"| {name} | {a} / {b} | {' '.join(f'{r:.2f}' for r in rs)} | "
                  f"{med(rs):.2f} | {rs[0]:.2f} | {rs[-1]:.2f} |")
if tails:
    print("\n| program | allocator | live peak MiB | peak RSS MiB | RSS × mimalloc | RSS at loop end MiB | RSS after idle MiB | idle RSS × mimalloc |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in order:
        if name not in tails:
            continue
        t = {a: [med([x[i] for x in s]) for i in range(4)] for a, s in tails[name].items()}
        ref = t.get("mimalloc")
        for a in allocs:
            if a not in t:
                continue
            live, rss, endrss, idle = t[a]
            rr = f"{rss / ref[1]:.2f}" if ref else "-"
            ir = f"{idle / ref[3]:.2f}" if ref else "-"
            print(f"| {name} | {a} | {live/1024:.1f} | {rss/1024:.1f} | {rr} | {endrss/1024:.1f} | {idle/1024:.1f} | {ir} |")
    print("\nlive peak: the most bytes the program held at once (requested; it counts a column when")
    print("allocated, before its pages are written); idle: after the loop, 1 s of a 64-byte")
    print("allocation every 10 ms.")
PY
