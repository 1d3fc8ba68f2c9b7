//! HyperLogLog, hashing and partitioning: keel at every level this CPU
//! supports against published HyperLogLog crates with their default hashers,
//! interleaved round by round, medians and ratios.
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin hll [-- --quick | --help]
//! ```
//!
//! Anchors: `hyperloglockless` (its `HyperLogLog`, SipHash-1-3 by default)
//! and Cloudflare's `cardinality-estimator` (wyhash by default, 6-bit
//! registers), both at precision 14 like keel's default.

use std::hint::black_box;
use std::time::Instant;

use cardinality_estimator::CardinalityEstimator;
use keel_bench::{Contender, cli, help, interleave, print_table};
use keel_kernels::hll::HyperLogLog;
use keel_kernels::partition::Radix;
use keel_kernels::{Kernels, cpu::Level};

type Cf = CardinalityEstimator<u64, wyhash::WyHash, 14, 6>;

fn ns_per_key(n: usize, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64 / n as f64
}

const USAGE: &str = "usage: hll [--quick]\n  \
     --quick    1 Mi keys and 3 rounds (default 16 Mi keys, 11 rounds)";

/// Whether `--quick` was given (`--help` prints the usage and exits).
fn parse(p: &mut lexopt::Parser) -> Result<bool, lexopt::Error> {
    use lexopt::prelude::*;
    let mut quick = false;
    while let Some(arg) = p.next()? {
        match arg {
            Long("quick") => quick = true,
            Long("help") | Short('h') => help(USAGE),
            other => return Err(other.unexpected()),
        }
    }
    Ok(quick)
}

fn main() -> std::process::ExitCode {
    let quick = cli(USAGE, parse);
    let rounds = if quick { 3 } else { 11 };
    let n: usize = if quick { 1 << 20 } else { 1 << 24 };
    let keys: Vec<u64> = (0..n as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let levels: Vec<Kernels> = Level::ALL
        .into_iter()
        .rev()
        .filter_map(Kernels::at)
        .collect();
    println!(
        "# HyperLogLog p=14, {n} distinct u64 keys per sample, {rounds} interleaved rounds; levels here: {}",
        levels
            .iter()
            .map(|k| k.level().name())
            .collect::<Vec<_>>()
            .join(", ")
    );

    // ---- batch add throughput ----
    let mut names: Vec<String> = levels
        .iter()
        .map(|k| format!("keel add_u64_column ({})", k.level()))
        .collect();
    names.push("keel add_u64 one at a time".into());
    names.push("hyperloglockless insert (SipHash-1-3)".into());
    names.push("cardinality-estimator insert (wyhash)".into());
    let mut cs: Vec<Contender> = Vec::new();
    for (i, &k) in levels.iter().enumerate() {
        let keys = &keys;
        cs.push(Contender::new(&names[i], move || {
            let mut h = HyperLogLog::new(14).unwrap();
            let t = ns_per_key(keys.len(), || k.hll_add_u64_column(&mut h, keys));
            black_box(h.registers()[0]);
            t
        }));
    }
    let l = levels.len();
    cs.push(Contender::new(&names[l], || {
        let mut h = HyperLogLog::new(14).unwrap();
        let t = ns_per_key(keys.len(), || keys.iter().for_each(|&x| h.add_u64(x)));
        black_box(h.registers()[0]);
        t
    }));
    cs.push(Contender::new(&names[l + 1], || {
        let mut h = hyperloglockless::HyperLogLog::new(14);
        let t = ns_per_key(keys.len(), || keys.iter().for_each(|x| h.insert(x)));
        black_box(h.raw_count());
        t
    }));
    cs.push(Contender::new(&names[l + 2], || {
        let mut h = Cf::new();
        let t = ns_per_key(keys.len(), || keys.iter().for_each(|x| h.insert(x)));
        black_box(h.estimate());
        t
    }));
    let med = interleave(rounds, &mut cs);
    drop(cs);
    let fastest_anchor = med[l + 1].min(med[l + 2]);
    let rows: Vec<Vec<String>> = names
        .iter()
        .zip(&med)
        .map(|(name, &ns)| {
            vec![
                name.clone(),
                format!("{ns:.3}"),
                format!("{:.0}", 1e3 / ns),
                format!("{:.2}x", fastest_anchor / ns),
            ]
        })
        .collect();
    println!("\n## Batch add (median ns/key; Mkeys/s; speed-up over the fastest anchor)\n");
    print_table(
        &["contender", "ns/key", "Mkeys/s", "vs fastest anchor"],
        &rows,
    );
    let best = med[0];
    println!(
        "\nverdict: keel best level {:.2}x the fastest published crate (goal >= 3x): {}",
        fastest_anchor / best,
        if fastest_anchor / best >= 3.0 {
            "MET"
        } else {
            "NOT MET"
        }
    );

    // ---- merge of two p=14 sketches ----
    let mut a = HyperLogLog::new(14).unwrap();
    a.add_u64_column(&keys[..n / 2]);
    let mut b = HyperLogLog::new(14).unwrap();
    b.add_u64_column(&keys[n / 4..]);
    let mut ha = hyperloglockless::HyperLogLog::seeded(14, 1);
    let mut hb = hyperloglockless::HyperLogLog::seeded(14, 1);
    keys[..n / 8].iter().for_each(|x| ha.insert(x));
    keys[n / 16..n / 4].iter().for_each(|x| hb.insert(x));
    let mut ca = Cf::new();
    let mut cb = Cf::new();
    keys[..n / 8].iter().for_each(|x| ca.insert(x));
    keys[n / 16..n / 4].iter().for_each(|x| cb.insert(x));
    let iters = 2000;
    let mut mnames: Vec<String> = levels
        .iter()
        .map(|k| format!("keel merge ({})", k.level()))
        .collect();
    mnames.push("hyperloglockless union".into());
    mnames.push("cardinality-estimator merge".into());
    let mut cs: Vec<Contender> = Vec::new();
    for (i, &k) in levels.iter().enumerate() {
        let (a, b) = (&a, &b);
        cs.push(Contender::new(&mnames[i], move || {
            let mut d = a.clone();
            let t = Instant::now();
            for _ in 0..iters {
                k.hll_merge(black_box(&mut d), black_box(b)).unwrap();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        }));
    }
    cs.push(Contender::new(&mnames[l], || {
        let mut d = ha.clone();
        let t = Instant::now();
        for _ in 0..iters {
            black_box(&mut d).union(black_box(&hb)).unwrap();
        }
        t.elapsed().as_nanos() as f64 / iters as f64
    }));
    cs.push(Contender::new(&mnames[l + 1], || {
        let mut d = ca.clone();
        let t = Instant::now();
        for _ in 0..iters {
            black_box(&mut d).merge(black_box(&cb));
        }
        t.elapsed().as_nanos() as f64 / iters as f64
    }));
    let mmed = interleave(rounds, &mut cs);
    drop(cs);
    let rows: Vec<Vec<String>> = mnames
        .iter()
        .zip(&mmed)
        .map(|(name, &ns)| {
            vec![
                name.clone(),
                format!("{ns:.0}"),
                format!("{:.2}x", mmed[0] / ns),
            ]
        })
        .collect();
    println!("\n## Merge of two p=14 sketches (median ns per merge; ratio = keel best / this)\n");
    print_table(&["contender", "ns/merge", "keel best / this"], &rows);
    println!(
        "\nverdict: keel merge {:.0} ns (goal < 1000 ns): {}",
        mmed[0],
        if mmed[0] < 1000.0 { "MET" } else { "NOT MET" }
    );

    // ---- estimate ----
    let mut cs = vec![
        Contender::new("keel estimate (Ertl)", || {
            let t = Instant::now();
            for _ in 0..100 {
                black_box(black_box(&a).estimate());
            }
            t.elapsed().as_nanos() as f64 / 100.0
        }),
        Contender::new("hyperloglockless count", || {
            let t = Instant::now();
            for _ in 0..100 {
                black_box(black_box(&ha).count());
            }
            t.elapsed().as_nanos() as f64 / 100.0
        }),
        Contender::new("cardinality-estimator estimate", || {
            let t = Instant::now();
            for _ in 0..100 {
                black_box(black_box(&ca).estimate());
            }
            t.elapsed().as_nanos() as f64 / 100.0
        }),
    ];
    let emed = interleave(rounds, &mut cs);
    let rows: Vec<Vec<String>> = [
        "keel estimate (Ertl, 16 Ki registers read)",
        "hyperloglockless count (running sum kept on insert)",
        "cardinality-estimator estimate",
    ]
    .iter()
    .zip(&emed)
    .map(|(name, &ns)| vec![name.to_string(), format!("{ns:.0}")])
    .collect();
    println!("\n## Estimate of a p=14 sketch (median ns)\n");
    print_table(&["contender", "ns"], &rows);

    // ---- error ----
    let cards: &[(usize, usize)] = if quick {
        &[(10, 200), (1_000, 50), (100_000, 10), (1_000_000, 3)]
    } else {
        &[
            (10, 1000),
            (1_000, 300),
            (100_000, 50),
            (1_000_000, 20),
            (10_000_000, 8),
        ]
    };
    let bound = 1.04 / 128.0;
    println!(
        "\n## Mean absolute relative error, p=14 (bound 1.04/sqrt(m) = {bound:.5}); keys (s << 40) + i per seed s\n"
    );
    let mut rows = Vec::new();
    let mut all_ok = true;
    for &(card, seeds) in cards {
        let (mut ek, mut eh, mut ec, mut bias) = (0.0, 0.0, 0.0, 0.0);
        for s in 0..seeds as u64 {
            let ks: Vec<u64> = (0..card as u64).map(|i| (s << 40) + i).collect();
            let mut h = HyperLogLog::with_seed(14, keel_kernels::hash::mix(s + 1)).unwrap();
            h.add_u64_column(&ks);
            let rel = (h.estimate() - card as f64) / card as f64;
            ek += rel.abs();
            bias += rel;
            let mut x = hyperloglockless::HyperLogLog::seeded(14, u128::from(s) + 1);
            ks.iter().for_each(|k| x.insert(k));
            eh += ((x.count() as f64 - card as f64) / card as f64).abs();
            let mut c = Cf::new();
            ks.iter().for_each(|k| c.insert(k));
            ec += ((c.estimate() as f64 - card as f64) / card as f64).abs();
        }
        let d = seeds as f64;
        all_ok &= ek / d <= bound;
        rows.push(vec![
            card.to_string(),
            seeds.to_string(),
            format!("{:.5}", ek / d),
            format!("{:+.5}", bias / d),
            format!("{:.5}", eh / d),
            format!("{:.5}", ec / d),
        ]);
    }
    print_table(
        &[
            "cardinality",
            "seeds",
            "keel |rel err|",
            "keel mean rel err",
            "hyperloglockless",
            "cardinality-estimator",
        ],
        &rows,
    );
    println!(
        "\nverdict: keel error within 1.04/sqrt(m) at every cardinality: {}",
        if all_ok { "MET" } else { "NOT MET" }
    );

    // ---- hashing and partitioning ----
    let mut out = vec![0u64; n];
    let mut hnames: Vec<String> = levels
        .iter()
        .map(|k| format!("hash_u64_column ({})", k.level()))
        .collect();
    hnames.extend(
        levels
            .iter()
            .map(|k| format!("partition_rows_by_key 2^8 ({})", k.level())),
    );
    let ikeys: Vec<i64> = keys.iter().map(|&k| k as i64).collect();
    let radix = Radix::new(8, 32).unwrap();
    let mut offsets = vec![0usize; 257];
    let mut rows_out = vec![0u32; n];
    let out_cell = std::cell::RefCell::new((&mut out, &mut offsets, &mut rows_out));
    let mut cs: Vec<Contender> = Vec::new();
    for (i, &k) in levels.iter().enumerate() {
        let (keys, out_cell) = (&keys, &out_cell);
        cs.push(Contender::new(&hnames[i], move || {
            let mut g = out_cell.borrow_mut();
            ns_per_key(keys.len(), || k.hash_u64_column(keys, 7, g.0).unwrap())
        }));
    }
    for (i, &k) in levels.iter().enumerate() {
        let (ikeys, out_cell) = (&ikeys, &out_cell);
        cs.push(Contender::new(&hnames[l + i], move || {
            let mut g = out_cell.borrow_mut();
            let (_, o, r) = &mut *g;
            ns_per_key(ikeys.len(), || {
                k.partition_rows_by_key(ikeys, 7, radix, o, r).unwrap()
            })
        }));
    }
    let hmed = interleave(rounds, &mut cs);
    drop(cs);
    let rows: Vec<Vec<String>> = hnames
        .iter()
        .zip(&hmed)
        .map(|(name, &ns)| vec![name.clone(), format!("{ns:.3}"), format!("{:.2}", 8.0 / ns)])
        .collect();
    println!("\n## Hashing and partitioning {n} keys (median ns/key; GB/s of keys read)\n");
    print_table(&["kernel", "ns/key", "GB/s"], &rows);
    std::process::ExitCode::SUCCESS
}
