#!/usr/bin/env bash
# Real programs under glibc, jemalloc, mimalloc, tcmalloc and keel-malloc
# (preloaded), interleaved (every round runs every program under every
# allocator, in a rotating order), each one's output checked against its
# output under glibc: sqlite3 inserting 1 M rows into an in-memory table
# with two indexes; `sort --parallel=2 -S 30M` of a generated 1.5 M-line
# file (temporary files, two threads); a Python script whose threads build
# objects another thread drops (cross-thread frees); `gcc -O2 -c` of a
# generated 500-function C file. Prints medians of wall time and peak RSS
# (`/usr/bin/time`), each with its ratio to glibc, as a markdown table.
#
#   bench/malloc/programs.sh                       # ROUNDS=3 by default
#   ROUNDS=5 ONLY="sqlite sort" bench/malloc/programs.sh
#   ALLOCATORS="glibc mimalloc keel" bench/malloc/programs.sh
#
# Installs sqlite3, gcc and python3 with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rounds=${ROUNDS:-3}
allocators=(${ALLOCATORS:-glibc jemalloc mimalloc tcmalloc keel})
need=()
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v gcc >/dev/null || need+=(gcc)
command -v python3 >/dev/null || need+=(python3)
source bench/malloc/allocators.sh
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"

d=$root/bench/malloc/programs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
python3 "$d/gen_c.py" 500 >"$work/big.c"
python3 - "$work/sort.in" <<'PY'
import random, sys
r = random.Random(19)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(3, 12))) for _ in range(50000)]
with open(sys.argv[1], "w") as f:
    for i in range(1_500_000):
        f.write(f"{r.choice(words)} {r.randint(0, 10**9)} {r.choice(words)}\n")
PY

# name | shell command (its stdout is the output checked against glibc's)
programs=(
  "sqlite|sqlite3 :memory: <'$d/sqlite_insert.sql'"
  "sort|sort --parallel=2 -S 30M -T '$work/tmp' '$work/sort.in' | sha256sum"
  "python|python3 '$d/cross_free.py' 300"
  "gcc|gcc -O2 -c '$work/big.c' -o '$work/big.o' && sha256sum <'$work/big.o'"
)
only=" ${ONLY:-} "
results="$work/results.tsv"
: >"$results"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 0; r < rounds; r++)); do
  for entry in "${programs[@]}"; do
    name=${entry%%|*}
    cmd=${entry#*|}
    [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
    n=${#allocators[@]}
    for ((i = 0; i < n; i++)); do
      a=${allocators[$(((i + r) % n))]}
      /usr/bin/time -f "%e %M" -o "$work/time" \
        env LD_PRELOAD="${lib[$a]}" sh -c "$cmd" >"$work/out.$name.$a.$r" 2>"$work/err" || {
        echo "$name under $a failed:" >&2
        cat "$work/err" >&2
        exit 1
      }
      read -r wall rss <"$work/time"
      printf '%s\t%s\t%s\t%s\n' "$name" "$a" "$wall" "$rss" >>"$results"
      echo "round $((r + 1))/$rounds $name $a: $wall s, $rss KiB" >&2
    done
  done
done
# Every output against glibc's (a run without the preload when glibc is
# not among the allocators).
for entry in "${programs[@]}"; do
  name=${entry%%|*}
  [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
  ref="$work/out.$name.glibc.0"
  [ -e "$ref" ] || { ref="$work/ref.$name"; env LD_PRELOAD= sh -c "${entry#*|}" >"$ref"; }
  for f in "$work/out.$name."*; do
    cmp -s "$f" "$ref" || {
      echo "${f#"$work/out."}: output differs from glibc's" >&2
      diff "$ref" "$f" | head -5 >&2
      exit 1
    }
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$results" "${allocators[@]}" <<'PY'
import statistics, sys
from collections import defaultdict
path, allocs = sys.argv[1], sys.argv[2:]
rows = defaultdict(lambda: defaultdict(list))
order = []
for line in open(path):
    name, a, wall, rss = line.rstrip("\n").split("\t")
    if name not in order:
        order.append(name)
    rows[name][a].append((float(wall), int(rss)))
med = statistics.median
print("| program | allocator | time s (median) | time × glibc | peak RSS MiB | RSS × glibc |")
print("|---|---|---:|---:|---:|---:|")
for name in order:
    st = {a: (med([x[0] for x in s]), med([x[1] for x in s])) for a, s in rows[name].items()}
    ref = st.get("glibc")
    for a in allocs:
        if a not in st:
            continue
        t, rss = st[a]
        tr = f"{t / ref[0]:.2f}" if ref else "-"
        rr = f"{rss / ref[1]:.2f}" if ref else "-"
        print(f"| {name} | {a} | {t:.2f} | {tr} | {rss/1024:.1f} | {rr} |")
n = len(next(iter(next(iter(rows.values())).values())))
print(f"\n{n} rounds, medians; every output byte-identical to glibc's.")
PY
