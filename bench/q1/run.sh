#!/usr/bin/env bash
# TPC-H Q1 side by side: keel, rayon + mimalloc (fused loop), rayon + arrow
# compute, and DuckDB, over the same generated lineitem columns on the same
# number of threads. Every sample is a fresh process (load excluded, one
# warm-up query, then REPS timed queries whose median is the sample); rounds
# interleave the contenders in a rotating order; the table gives the median
# over rounds and each contender's time over keel's.
#
#   bench/q1/run.sh                       # SF 1 and 10, 2 threads, 5 rounds
#   SFS=1 ROUNDS=3 REPS=5 THREADS=2 bench/q1/run.sh
#   CONTENDERS="keel rayon-fused" SFS=1 bench/q1/run.sh
#
# Installs DuckDB and NumPy from PyPI into a virtual environment under
# bench/target/q1/ (pinned: DUCKDB_VERSION, default 2.0.1); generates each
# scale factor's columns there once, in the generator's narrow layout (13
# bytes a row: SF 10 is 60 M rows, 780 MB).
# Writes the log to bench/results/q1-<date>.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
sfs=${SFS:-"1 10"}
rounds=${ROUNDS:-5}
reps=${REPS:-5}
threads=${THREADS:-2}
# read-all is the yardstick: keel's hands streaming the same columns and
# summing each, nothing else (the bandwidth floor of any Q1 plan);
# keel-scalar (not run by default) is keel's plan with a scalar group step
# (a fused loop's) in place of the kernels' grouped sums.
contenders=(${CONTENDERS:-keel rayon-fused rayon-arrow duckdb read-all})
data=${Q1_DATA:-bench/target/q1}
venv=$data/venv

echo "building the contenders (release)" >&2
cargo build --release --manifest-path bench/Cargo.toml --bin tpch_q1_keel --bin tpch_q1_rayon >&2
bin=bench/target/release
if [[ " ${contenders[*]} " == *" duckdb "* ]] && [ ! -x "$venv/bin/python" ]; then
  echo "installing duckdb ${DUCKDB_VERSION:-2.0.1} and numpy into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "duckdb==${DUCKDB_VERSION:-2.0.1}" numpy >&2
fi
for sf in $sfs; do
  [ -e "$data/sf$sf/l_quantity.u8" ] && [ -e "$data/sf$sf/answer.txt" ] ||
    { rm -rf "$data/sf$sf"; "$bin/tpch_q1_keel" --gen "$sf" --dir "$data/sf$sf" >&2; }
done

mkdir -p bench/results
log=bench/results/q1-$(date +%Y%m%d-%H%M%S).log
{
  echo "# $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')) | $(nproc) CPUs | threads=$threads rounds=$rounds reps=$reps"
  echo "# $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$log"

run_one() { # contender sf
  local dir=$data/sf$2
  case $1 in
    keel | keel-scalar | read-all) "$bin/tpch_q1_keel" --dir "$dir" --contender "$1" --threads "$threads" --reps "$reps" ;;
    rayon-*) "$bin/tpch_q1_rayon" --dir "$dir" --contender "$1" --threads "$threads" --reps "$reps" ;;
    duckdb) "$venv/bin/python" bench/q1/duckdb_q1.py --dir "$dir" --threads "$threads" --reps "$reps" ;;
    *) echo "unknown contender $1" >&2; exit 1 ;;
  esac
}

n=${#contenders[@]}
for sf in $sfs; do
  for ((r = 0; r < rounds; r++)); do
    for ((k = 0; k < n; k++)); do
      c=${contenders[$(((k + r) % n))]}
      line=$(run_one "$c" "$sf" | grep '^RESULT')
      echo "sf=$sf round=$r $line" | tee -a "$log" >&2
    done
  done
done
python3 bench/q1/summary.py "$log" | tee -a "$log"
