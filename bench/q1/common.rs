//! What every Q1 contender process shares: the generated columns on disk,
//! the answer check, and the timing loop. Included by path into
//! `tpch_q1_keel` and `tpch_q1_rayon` (a process has one global allocator,
//! so the keel and the rayon contenders are two programs).
//!
//! A data directory holds one raw little-endian file per column, in the
//! generator's narrow layout (`l_quantity.u8`, `l_extendedprice.i32`,
//! `l_discount.u8`, `l_tax.u8`, `l_returnflag.u8`, `l_linestatus.u8`,
//! `l_shipdate.i32`: 13 bytes a row) and `answer.txt`,
//! the oracle's answer in [`canonical`] form. The DuckDB contender reads the
//! same files.

#![allow(dead_code)]

#[path = "../../examples/tpch_q1/lineitem.rs"]
pub mod lineitem;
#[path = "../../examples/tpch_q1/q1.rs"]
pub mod q1;

use lineitem::{Lineitem, Scale};
use q1::Answer;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The answer as exact integers, one group a line: flag, status, count,
/// then the sums in their units (whole items, cents, hundredths,
/// ten-thousandths, millionths). Every contender prints this.
pub fn canonical(a: &Answer) -> String {
    let mut s = String::new();
    for r in &a.rows {
        let m = &r.sums;
        s.push_str(&format!(
            "{} {} {} {} {} {} {} {}\n",
            r.returnflag as char,
            r.linestatus as char,
            m.count,
            m.qty,
            m.price,
            m.disc,
            m.disc_price,
            m.charge
        ));
    }
    s
}

fn write_col<T: Copy>(dir: &Path, name: &str, v: &[T], to_le: impl Fn(T) -> Vec<u8>) {
    let mut bytes = Vec::with_capacity(std::mem::size_of_val(v));
    for &x in v {
        bytes.extend_from_slice(&to_le(x));
    }
    std::fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

fn read_col<T, const N: usize>(dir: &Path, name: &str, from_le: impl Fn([u8; N]) -> T) -> Vec<T> {
    let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| {
        panic!(
            "read {}: {e} (generate the data first: --gen)",
            dir.join(name).display()
        )
    });
    assert!(
        bytes.len().is_multiple_of(N),
        "{name}: length is not a multiple of {N}"
    );
    bytes
        .chunks_exact(N)
        .map(|c| from_le(c.try_into().expect("chunk of N bytes")))
        .collect()
}

/// Generates `lineitem` at `sf` into `dir` with the oracle's answer.
pub fn generate(sf: f64, dir: &Path) {
    let scale = Scale::new(sf).unwrap_or_else(|e| panic!("{e}"));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let l = lineitem::generate(scale, threads);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    write_col(dir, "l_quantity.u8", &l.quantity, |x| vec![x]);
    write_col(dir, "l_extendedprice.i32", &l.extendedprice, |x| {
        x.to_le_bytes().to_vec()
    });
    write_col(dir, "l_discount.u8", &l.discount, |x| vec![x]);
    write_col(dir, "l_tax.u8", &l.tax, |x| vec![x]);
    write_col(dir, "l_returnflag.u8", &l.returnflag, |x| vec![x]);
    write_col(dir, "l_linestatus.u8", &l.linestatus, |x| vec![x]);
    write_col(dir, "l_shipdate.i32", &l.shipdate, |x| {
        x.to_le_bytes().to_vec()
    });
    std::fs::write(dir.join("answer.txt"), canonical(&q1::oracle(&l))).expect("write answer");
    println!("generated SF {sf}: {} rows in {}", l.len(), dir.display());
}

/// Reads the columns back.
pub fn load(dir: &Path) -> Lineitem {
    let l = Lineitem {
        quantity: read_col(dir, "l_quantity.u8", |[b]| b),
        extendedprice: read_col(dir, "l_extendedprice.i32", i32::from_le_bytes),
        discount: read_col(dir, "l_discount.u8", |[b]| b),
        tax: read_col(dir, "l_tax.u8", |[b]| b),
        returnflag: read_col(dir, "l_returnflag.u8", |[b]| b),
        linestatus: read_col(dir, "l_linestatus.u8", |[b]| b),
        shipdate: read_col(dir, "l_shipdate.i32", i32::from_le_bytes),
    };
    l.validate()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    l
}

/// The command line every contender process takes.
pub struct Args {
    /// `--gen SF`: generate instead of running.
    pub gen_sf: Option<f64>,
    /// `--dir D`: the data directory.
    pub dir: PathBuf,
    /// `--contender NAME`.
    pub contender: String,
    /// `--threads N`.
    pub threads: usize,
    /// `--reps N`: timed runs after one warm-up.
    pub reps: usize,
}

/// Parses the command line (`--gen SF --dir D` or
/// `--dir D --contender NAME --threads N --reps N`).
pub fn args() -> Args {
    let mut a = Args {
        gen_sf: None,
        dir: PathBuf::from("bench/target/q1/sf1"),
        contender: String::new(),
        threads: 2,
        reps: 5,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        let val = v.get(i + 1).cloned().unwrap_or_default();
        match v[i].as_str() {
            "--gen" => a.gen_sf = Some(val.parse().expect("--gen SF")),
            "--dir" => a.dir = PathBuf::from(val),
            "--contender" => a.contender = val,
            "--threads" => a.threads = val.parse().expect("--threads N"),
            "--reps" => a.reps = val.parse().expect("--reps N"),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    a
}

/// Runs `query` once unrecorded and `reps` times timed, checks every answer
/// against `answer.txt`, and prints one `RESULT` line with each time in
/// milliseconds.
pub fn measure(args: &Args, mut query: impl FnMut() -> Answer) {
    let want = std::fs::read_to_string(args.dir.join("answer.txt")).expect("answer.txt");
    measure_with(args, &mut query, |a: &Answer| {
        let got = canonical(a);
        assert!(
            got == want,
            "{}: wrong answer\n got:\n{got}want:\n{want}",
            args.contender
        );
    });
}

/// [`measure`] for a run whose result `check` judges (the bandwidth
/// yardstick is not a Q1 answer).
pub fn measure_with<R>(args: &Args, query: &mut impl FnMut() -> R, check: impl Fn(&R)) {
    check(&query());
    let mut ms = Vec::with_capacity(args.reps);
    for _ in 0..args.reps {
        let t = Instant::now();
        let a = query();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        check(&a);
    }
    let list: Vec<String> = ms.iter().map(|m| format!("{m:.3}")).collect();
    println!(
        "RESULT contender={} threads={} ms={}",
        args.contender,
        args.threads,
        list.join(",")
    );
}
