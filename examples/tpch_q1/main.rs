//! TPC-H Q1 on keel, checked against a plain serial oracle.
//!
//! Generates `lineitem` at a scale factor with dbgen's rules (SF 1 is
//! 6,001,215 rows), runs Q1 on a [`keel_rt::Runtime`] (a pool sized from
//! the topology, one heap per hand, kernels inside the morsel loop), and
//! checks the answer against the oracle: exactly, since every sum is an
//! integer and every average is computed from the sums the same way. At
//! SF 1 it also checks dbgen's published answer.
//!
//! ```sh
//! cargo run --release --example tpch_q1 -- --sf 1
//! cargo run --release --example tpch_q1 -- --sf 10 --workers 2 --repeat 5
//! ```

#![allow(dead_code)]

pub mod lineitem;
pub mod plan;
pub mod q1;

use std::error::Error;
use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Instant;

/// dbgen's published Q1 answer at SF 1 (its `answers/q1.out`), sums and
/// averages to the cent.
pub const SF1_ANSWER: &str = "\
A|F|37734107.00|56586554400.73|53758257134.87|55909065222.83|25.52|38273.13|0.05|1478493
N|F|991417.00|1487504710.38|1413082168.05|1469649223.19|25.52|38284.47|0.05|38854
N|O|74476040.00|111701729697.74|106118230307.61|110367043872.50|25.50|38249.12|0.05|2920374
R|F|37719753.00|56568041380.90|53741292684.60|55889619119.83|25.51|38250.85|0.05|1478870
";

/// What a run found.
pub struct Report {
    /// The lines printed.
    pub text: String,
    /// The plan's answer.
    pub answer: q1::Answer,
    /// Whether it equals the oracle's (and, at SF 1, dbgen's).
    pub ok: bool,
}

struct Args {
    sf: f64,
    workers: Option<usize>,
    repeat: usize,
}

const USAGE: &str = "usage: tpch_q1 [--sf F] [--workers N] [--repeat N]";

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Args, Box<dyn Error>> {
    use lexopt::prelude::*;
    let mut a = Args {
        sf: 1.0,
        workers: None,
        repeat: 3,
    };
    let mut p = lexopt::Parser::from_args(args);
    while let Some(arg) = p.next()? {
        match arg {
            Long("sf") => a.sf = p.value()?.parse()?,
            Long("workers") => a.workers = Some(p.value()?.parse()?),
            Long("repeat") => a.repeat = p.value()?.parse::<usize>()?.max(1),
            Long("help") | Short('h') => return Err(USAGE.into()),
            _ => return Err(format!("{}\n{USAGE}", arg.unexpected()).into()),
        }
    }
    Ok(a)
}

/// Runs the example with `args` (the program name first, as
/// `std::env::args_os` gives them).
pub fn run(args: impl IntoIterator<Item = OsString>) -> Result<Report, Box<dyn Error>> {
    let a = parse(args.into_iter().skip(1))?;
    let scale = lineitem::Scale::new(a.sf)?;
    let mut text = String::new();
    let rt = match a.workers {
        Some(w) => {
            let pool = keel_rt::pool::Pool::builder().width(w).build()?;
            keel_rt::Runtime::from_parts(keel_rt::topology::Topology::detect(), pool)?
        }
        None => keel_rt::Runtime::new()?,
    };
    let t = Instant::now();
    let l = lineitem::generate(scale, rt.pool().width());
    text += &format!(
        "lineitem at SF {}: {} rows ({:.1} MB), generated in {:.0} ms\n",
        a.sf,
        l.len(),
        l.bytes() as f64 / 1e6,
        t.elapsed().as_secs_f64() * 1e3
    );

    let checked = plan::Checked::new(&l)?;
    let mut times = Vec::new();
    let mut answer = q1::Answer::default();
    for _ in 0..a.repeat {
        let t = Instant::now();
        answer = plan::q1(&rt, checked)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let t = Instant::now();
    let oracle = q1::oracle(&l);
    let oracle_ms = t.elapsed().as_secs_f64() * 1e3;

    text += &answer.to_string();
    text += &format!(
        "keel, {} hands: {:.2} ms (median of {}); serial oracle: {:.2} ms\n",
        rt.pool().width(),
        times[times.len() / 2],
        times.len(),
        oracle_ms
    );
    let mut ok = answer == oracle;
    text += if ok {
        "answer equals the oracle's\n"
    } else {
        "ANSWER DIFFERS from the oracle's\n"
    };
    if scale.sf() == 1.0 {
        let mine: String = answer
            .to_string()
            .lines()
            .skip(1)
            .map(|l| l.to_string() + "\n")
            .collect();
        let same = mine == SF1_ANSWER;
        ok &= same;
        text += if same {
            "answer equals dbgen's published SF 1 answer\n"
        } else {
            "ANSWER DIFFERS from dbgen's published SF 1 answer\n"
        };
    }
    Ok(Report { text, answer, ok })
}

fn main() -> ExitCode {
    match run(std::env::args_os()) {
        Ok(r) => {
            print!("{}", r.text);
            if r.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("tpch_q1: {e}");
            ExitCode::from(2)
        }
    }
}
