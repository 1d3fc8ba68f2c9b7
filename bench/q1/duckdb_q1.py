"""TPC-H Q1's DuckDB contender: one process, the same generated columns.

Loads the raw column files of a data directory (see bench/q1/common.rs)
into an in-memory DuckDB table of the same narrow types the other
contenders read: UTINYINT quantity (whole items), discount and tax
(hundredths); INTEGER extendedprice (cents); ENUM flags (DuckDB's
dictionary codes, one byte); DATE (int32 days). Outside the timing. Then
runs Q1 in those units (the decimal arithmetic of the standard text, on
integers: `price * (100 - discount)` is ten-thousandths, the charge
millionths; the charge's product is BIGINT, as the others compute it in
64 bits) with `SET threads` to the same count as the others. Checks every
answer against the oracle's answer.txt (counts and sums exactly, averages
within a relative 1e-9) and prints one RESULT line as the Rust contenders
do.

    python bench/q1/duckdb_q1.py --dir bench/target/q1/sf1 --threads 2 --reps 5
"""

import argparse
import os
import sys
import time

import duckdb
import numpy as np

Q1 = """
select l_returnflag, l_linestatus,
       sum(l_quantity) as sum_qty,
       sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (100 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (100 - l_discount) * (100 + l_tax)::bigint) as sum_charge,
       avg(l_quantity) as avg_qty,
       avg(l_extendedprice) as avg_price,
       avg(l_discount) as avg_disc,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""


def load(con, d):
    cols = {
        "q": np.fromfile(os.path.join(d, "l_quantity.u8"), dtype="u1"),
        "p": np.fromfile(os.path.join(d, "l_extendedprice.i32"), dtype="<i4"),
        "d": np.fromfile(os.path.join(d, "l_discount.u8"), dtype="u1"),
        "t": np.fromfile(os.path.join(d, "l_tax.u8"), dtype="u1"),
        "rf": np.fromfile(os.path.join(d, "l_returnflag.u8"), dtype="u1"),
        "ls": np.fromfile(os.path.join(d, "l_linestatus.u8"), dtype="u1"),
        "sd": np.fromfile(os.path.join(d, "l_shipdate.i32"), dtype="<i4"),
    }
    con.register("raw", cols)
    con.execute("create type returnflag as enum ('A', 'N', 'R')")
    con.execute("create type linestatus as enum ('F', 'O')")
    con.execute(
        """
        create table lineitem as select
            cast(q as utinyint) as l_quantity,
            cast(p as integer) as l_extendedprice,
            cast(d as utinyint) as l_discount,
            cast(t as utinyint) as l_tax,
            cast(['A', 'N', 'R'][rf + 1] as returnflag) as l_returnflag,
            cast(['F', 'O'][ls + 1] as linestatus) as l_linestatus,
            date '1970-01-01' + cast(sd as integer) as l_shipdate
        from raw
        """
    )
    con.unregister("raw")
    return len(cols["sd"])


def expected(d):
    """answer.txt: flag status count qty price disc disc_price charge."""
    rows = []
    with open(os.path.join(d, "answer.txt")) as f:
        for line in f:
            v = line.split()
            rows.append((v[0], v[1]) + tuple(int(x) for x in v[2:]))
    return rows


def check(got, want):
    if len(got) != len(want):
        sys.exit(f"duckdb: {len(got)} groups, expected {len(want)}")
    for g, w in zip(got, want):
        rf, ls, sq, sp, sdp, sc, aq, ap, ad, cnt = g
        wrf, wls, wcnt, wq, wp, wd, wdp, wc = w
        exact = [
            (rf, wrf), (ls, wls), (cnt, wcnt),
            (int(sq), wq), (int(sp), wp), (int(sdp), wdp), (int(sc), wc),
        ]
        for a, b in exact:
            if a != b:
                sys.exit(f"duckdb: wrong answer in group {rf}{ls}: {a} != {b}")
        # Averages in the columns' units: items, cents, hundredths.
        for a, b in [(aq, wq), (ap, wp), (ad, wd)]:
            want_avg = b / wcnt
            if abs(float(a) - want_avg) > 1e-9 * abs(want_avg):
                sys.exit(f"duckdb: average in group {rf}{ls}: {a} != {want_avg}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    con = duckdb.connect()
    load(con, a.dir)
    con.execute(f"set threads = {a.threads}")
    want = expected(a.dir)
    check(con.execute(Q1).fetchall(), want)
    ms = []
    for _ in range(a.reps):
        t = time.perf_counter()
        got = con.execute(Q1).fetchall()
        ms.append((time.perf_counter() - t) * 1e3)
        check(got, want)
    print(
        f"RESULT contender=duckdb threads={a.threads} "
        f"ms={','.join(f'{m:.3f}' for m in ms)}"
    )


if __name__ == "__main__":
    main()
