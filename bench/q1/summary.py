"""Summarizes a bench/q1/run.sh log: per scale factor and contender, the
median over rounds of each process's median query time, and that time over
keel's (how many times faster keel is)."""

import statistics
import sys
from collections import defaultdict


def main(path):
    samples = defaultdict(list)  # (sf, contender) -> per-process medians
    order = []
    machine = ""
    for line in open(path):
        if line.startswith("# ") and not machine:
            machine = line[2:].strip()
        if "RESULT" not in line:
            continue
        kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
        key = (kv["sf"], kv["contender"])
        if kv["contender"] not in order:
            order.append(kv["contender"])
        ms = [float(x) for x in kv["ms"].split(",")]
        samples[key].append(statistics.median(ms))
    sfs = sorted({sf for sf, _ in samples}, key=float)
    print(f"\n{machine}\n")
    print("| SF | contender | median ms | min-max of rounds | time / keel's |")
    print("|---|---|---|---|---|")
    for sf in sfs:
        keel = statistics.median(samples.get((sf, "keel"), [float("nan")]))
        for c in order:
            s = samples.get((sf, c))
            if not s:
                continue
            m = statistics.median(s)
            print(f"| {sf} | {c} | {m:.1f} | {min(s):.1f}-{max(s):.1f} | {m / keel:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1])
