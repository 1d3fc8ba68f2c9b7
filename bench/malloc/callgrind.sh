#!/usr/bin/env bash
# Instructions per operation of the allocators' hot paths, counted by
# callgrind (repeatable where wall-clock time on a shared machine is not):
# mimalloc-bench's larsonN (bench/malloc/larson.cc, C++ new[]/delete[])
# under each allocator, printing the inclusive instructions of the
# `operator new[]` and `operator delete[]` calls larson's loop makes (and
# `free`, where an allocator's delete[] is that symbol), each divided by
# the number of `new[]` calls, as a markdown table.
#
#   bench/malloc/callgrind.sh                       # keel and mimalloc
#   EXTRA="keel-old=/tmp/libkeel_malloc.so" ALLOCATORS="keel keel-old mimalloc" \
#     bench/malloc/callgrind.sh                     # A/B against another build
#   ARGS="3 8 1000 5000 100 4141 2 sized" bench/malloc/callgrind.sh
#   KEEP=dir bench/malloc/callgrind.sh  # keep the callgrind files (for
#                                       # callgrind_annotate) in dir
#
# Needs valgrind, c++ and python3; allocators.sh installs the Debian
# allocator packages when missing and builds keel-malloc in release.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
allocators=(${ALLOCATORS:-keel mimalloc})
args=(${ARGS:-3 8 1000 5000 100 4141 2})
source bench/malloc/allocators.sh
command -v valgrind >/dev/null || apt_install valgrind

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
c++ -O2 -g -Wall -Wextra -pthread bench/malloc/larson.cc -o "$work/larson_cxx"
echo "| allocator | operations | new[] instr/op | delete[] instr/op | allocator instr/op | whole program instr/op |"
echo "|---|---:|---:|---:|---:|---:|"
for a in "${allocators[@]}"; do
  out="$work/$a"
  mkdir -p "$out"
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out/cg.%p" \
    env LD_PRELOAD="${lib[$a]}" "$work/larson_cxx" "${args[@]}" >/dev/null 2>"$out/stderr" || {
    echo "larsonN under $a failed:" >&2
    cat "$out/stderr" >&2
    exit 1
  }
  # The largest output is larson's (the others are env's and the like).
  f=$(ls -S "$out"/cg.* | head -1)
  [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP" && cp "$f" "$KEEP/callgrind.$a"; }
  python3 - "$f" "$a" <<'PY'
import collections, re, sys
path, alloc = sys.argv[1:]
names = {}
def name(s):
    m = re.match(r'\((\d+)\)(?: (.*))?', s)
    if not m:
        return s
    i, n = m.groups()
    if n:
        names[i] = n
    return names.get(i, i)
calls, incl = collections.Counter(), collections.Counter()
fn = cfn = None
total = 0
lines = open(path).read().split('\n')
i = 0
while i < len(lines):
    l = lines[i]
    if l.startswith('fn='):
        fn = name(l[3:])
    elif l.startswith('cfn='):
        cfn = name(l[4:])
    elif l.startswith('calls='):
        # The next line holds the call's inclusive cost, last field.
        if fn is not None and 'run(void*)' in fn and cfn != fn:
            calls[cfn] += int(l[6:].split()[0])
            incl[cfn] += int(lines[i + 1].split()[-1])
        i += 1
    elif l.startswith(('summary:', 'totals:')):
        total = int(l.split()[1])
    i += 1
n = sum(c for k, c in calls.items() if 'operator new[]' in k)
a = sum(c for k, c in incl.items() if 'operator new[]' in k)
d = sum(c for k, c in incl.items() if 'operator delete[]' in k or k == 'free')
if n == 0:
    sys.exit(f"{alloc}: no operator new[] calls from larson's loop found")
print(f"| {alloc} | {n} | {a / n:.1f} | {d / n:.1f} | {(a + d) / n:.1f} | {total / n:.1f} |")
PY
done
