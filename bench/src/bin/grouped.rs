//! The engine-facing kernels against what an engine would write or call
//! instead, interleaved round by round, medians:
//!
//! * u8/u16 compare to a bitmap (`lt`) against arrow-rs's `lt`/`eq` on
//!   `UInt8Array`/`UInt16Array`, in cache and at 128 Mi rows, where a
//!   read-only pass over the same column (the ceiling loop) is the
//!   bandwidth yardstick, measured in the same rounds;
//! * grouped sum of f64 and of i64 by a u8 code (3, 16, 256 groups, 1 Mi
//!   rows) against a fused scalar loop and a `std::collections::HashMap`
//!   group-by, by a u16 code (256 to 65,536 groups, skewed, two columns)
//!   and by a pair of u8 keys (64 x 64 groups, uniform and skewed, in one
//!   call and in calls of a morsel's rows) against the fused loop;
//! * HyperLogLog add of the keys a selection bitmap picks against
//!   `select_into` + `gather` + add.
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin grouped
//! # quicker: --rounds 3 --big-log2 24; one section: --only grouped; --help
//! ```

use arrow_array::UInt8Array;
use arrow_array::UInt16Array;
use keel_bench::{Contender, black_box, cli, help, interleave, print_table, read_pass};
use keel_kernels::filter::CmpOp;
use keel_kernels::grouped::{Aggs, GroupTable, Groups, Keys};
use keel_kernels::hll::HyperLogLog;
use keel_kernels::mask::{Bits, Selection};
use keel_kernels::{Kernels, bitmap, cpu, gather};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn rng(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_F491_4F6C_DD1D)
        })
        .collect()
}

/// Calls `f` untimed for 2 ms (at least once) before a sample is timed.
/// On an Intel model 167 whichever contender followed the read pass ran
/// 15-35% slower for about a millisecond after it (the HLL 1 in 64 row:
/// keel 0.78-0.84x the three passes when it came next, 1.20-1.22x when
/// the three passes did; one untimed call changed nothing, 1 ms of calls
/// made the order not matter), so every sample starts from its own
/// steady state (`bench/results/2026-12-07-kernels-select-branchless-intel.md`).
fn settle(f: &mut impl FnMut()) {
    let t = Instant::now();
    f();
    while t.elapsed() < Duration::from_millis(2) {
        f();
    }
}

/// GB/s of `bytes` per call, over enough calls to last a few ms.
fn gbps(bytes: usize, mut f: impl FnMut()) -> f64 {
    let iters = ((64 << 20) / bytes.max(1)).max(1);
    settle(&mut f);
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    (bytes * iters) as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Nanoseconds per row of a call over `rows` rows.
fn ns_per_row(rows: usize, mut f: impl FnMut()) -> f64 {
    let iters = ((16 << 20) / rows.max(1)).max(1);
    settle(&mut f);
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / (rows * iters) as f64
}

const USAGE: &str = "usage: grouped [--rounds N] [--big-log2 N] [--only SECTION[,SECTION...]]\n  \
     --rounds N      interleaved rounds, medians of them (default 5)\n  \
     --big-log2 N    rows of the big compare column, log2 (default 27; 20..=31)\n  \
     --only LIST     sections to run: compare, grouped, hll (default all)";

const SECTIONS: [&str; 3] = ["compare", "grouped", "hll"];

struct Args {
    rounds: usize,
    big_log2: u32,
    /// Sections to run (`compare`, `grouped`, `hll`); empty: all.
    only: Vec<String>,
}

impl Args {
    fn runs(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == section)
    }
}

/// The command line (`--help` prints the usage and exits).
fn parse(p: &mut lexopt::Parser) -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        rounds: 5,
        big_log2: 27,
        only: Vec::new(),
    };
    while let Some(arg) = p.next()? {
        match arg {
            Long("rounds") => {
                a.rounds = p.value()?.parse().map_err(|e| format!("--rounds: {e}"))?;
                if a.rounds == 0 {
                    return Err("--rounds must be at least 1".into());
                }
            }
            Long("big-log2") => {
                a.big_log2 = p.value()?.parse().map_err(|e| format!("--big-log2: {e}"))?;
                if !(20..=31).contains(&a.big_log2) {
                    return Err(format!("--big-log2 {} is outside 20..=31", a.big_log2).into());
                }
            }
            Long("only") => {
                let v: String = p.value()?.string()?;
                a.only = v.split(',').map(str::to_owned).collect();
                if let Some(bad) = a.only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                    return Err(format!("--only: unknown section {bad:?}").into());
                }
            }
            Long("help") | Short('h') => help(USAGE),
            other => return Err(other.unexpected()),
        }
    }
    Ok(a)
}

fn compare_rows(a: &Args, rows: &mut Vec<Vec<String>>) {
    let k = Kernels::current();
    for log2 in [12u32, 16, a.big_log2] {
        let n = 1usize << log2;
        let raw = rng(n / 8 + 1, 7);
        let u8s: Vec<u8> = raw.iter().flat_map(|x| x.to_le_bytes()).take(n).collect();
        let u16s: Vec<u16> = u8s.iter().map(|&x| u16::from(x) * 257).collect();
        let a8 = UInt8Array::from(u8s.clone());
        let a16 = UInt16Array::from(u16s.clone());
        let (s8, s16) = (UInt8Array::new_scalar(128), UInt16Array::new_scalar(32768));
        let mut out = vec![0u64; n.div_ceil(64)];
        let big = log2 == a.big_log2;
        for (ty, bytes) in [("u8", n), ("u16", 2 * n)] {
            let mut c = vec![
                Contender::new("keel lt", || {
                    gbps(bytes, || {
                        if ty == "u8" {
                            k.compare(black_box(&u8s), CmpOp::Lt, 128, &mut out)
                                .unwrap();
                        } else {
                            k.compare(black_box(&u16s), CmpOp::Lt, 32768, &mut out)
                                .unwrap();
                        }
                        black_box(&out);
                    })
                }),
                Contender::new("arrow lt", || {
                    gbps(bytes, || {
                        if ty == "u8" {
                            black_box(arrow_ord::cmp::lt(black_box(&a8), &s8).unwrap());
                        } else {
                            black_box(arrow_ord::cmp::lt(black_box(&a16), &s16).unwrap());
                        }
                    })
                }),
                Contender::new("arrow eq", || {
                    gbps(bytes, || {
                        if ty == "u8" {
                            black_box(arrow_ord::cmp::eq(black_box(&a8), &s8).unwrap());
                        } else {
                            black_box(arrow_ord::cmp::eq(black_box(&a16), &s16).unwrap());
                        }
                    })
                }),
            ];
            if big {
                let bytes_view: &[u8] = if ty == "u8" {
                    &u8s
                } else {
                    // SAFETY: u16 has no padding and u8 no alignment: the
                    // same memory as bytes.
                    unsafe { std::slice::from_raw_parts(u16s.as_ptr().cast(), 2 * n) }
                };
                c.push(Contender::new("read pass", move || {
                    gbps(bytes, || {
                        black_box(read_pass::<512>(black_box(bytes_view)));
                    })
                }));
                c.push(Contender::new("read pass 256", move || {
                    gbps(bytes, || {
                        black_box(read_pass::<256>(black_box(bytes_view)));
                    })
                }));
            }
            let m = interleave(a.rounds, &mut c);
            rows.push(vec![
                format!("compare lt {ty}"),
                format!("{} rows", size(n)),
                format!("{:.1}", m[0]),
                format!("{:.1} / {:.1}", m[1], m[2]),
                format!("{:.2}x / {:.2}x", m[0] / m[1], m[0] / m[2]),
                if big {
                    let read = m[3].max(m[4]);
                    format!("{read:.1} ({:.2})", m[0] / read)
                } else {
                    "-".into()
                },
            ]);
            eprintln!("{:?}", rows.last().unwrap());
        }
    }
}

/// A value type of the grouped rows (its name is `Num::NAME`) and its
/// sum's add as an engine's loop writes it (wrapping for integers).
trait Value: keel_kernels::Element<Sum = Self> + Copy + Default + 'static {
    fn make(r: u64) -> Self;
    fn plus(self, x: Self) -> Self;
}

impl Value for f64 {
    fn make(r: u64) -> Self {
        (r % 10_000) as f64 / 7.0
    }
    fn plus(self, x: Self) -> Self {
        self + x
    }
}

impl Value for i64 {
    fn make(r: u64) -> Self {
        (r % 10_000) as i64 - 5_000
    }
    fn plus(self, x: Self) -> Self {
        self.wrapping_add(x)
    }
}

/// The fused scalar loop an engine writes: one pass, count and sum.
#[inline(never)]
fn fused<T: Value>(codes: &[u8], v: &[T], sums: &mut [T; 256], counts: &mut [u64; 256]) {
    for (&c, &x) in codes.iter().zip(v) {
        sums[usize::from(c)] = sums[usize::from(c)].plus(x);
        counts[usize::from(c)] += 1;
    }
}

/// The fused loop over two-byte codes (tables of `groups` slots).
#[inline(never)]
fn fused16<T: Value>(codes: &[u16], v: &[T], sums: &mut [T], counts: &mut [u64]) {
    for (&c, &x) in codes.iter().zip(v) {
        sums[usize::from(c)] = sums[usize::from(c)].plus(x);
        counts[usize::from(c)] += 1;
    }
}

/// [`fused16`] over two value columns.
#[inline(never)]
fn fused16_2<T: Value>(codes: &[u16], v: [&[T]; 2], sums: [&mut [T]; 2], counts: &mut [u64]) {
    let [s0, s1] = sums;
    for ((&c, &x), &y) in codes.iter().zip(v[0]).zip(v[1]) {
        let k = usize::from(c);
        s0[k] = s0[k].plus(x);
        s1[k] = s1[k].plus(y);
        counts[k] += 1;
    }
}

fn grouped_rows(a: &Args, rows: &mut Vec<Vec<String>>) {
    grouped_typed::<f64>(a, rows);
    grouped_typed::<i64>(a, rows);
    grouped_u16::<f64>(
        a,
        rows,
        &[(256, 0, 1), (4096, 0, 1), (4096, 90, 1), (1024, 0, 2)],
    );
    let i64_rows = [
        (256, 0, 1),
        (4096, 0, 1),
        (65_536, 0, 1),
        (4096, 90, 1),
        (1024, 0, 2),
    ];
    grouped_u16::<i64>(a, rows, &i64_rows);
    let whole = 1 << 20;
    grouped_pair::<f64>(a, rows, &[(64, 0, whole), (64, 90, whole)]);
    let i64_pairs = [
        (64, 0, whole),
        (64, 90, whole),
        (64, 0, 1 << 16),
        (64, 90, 4096),
    ];
    grouped_pair::<i64>(a, rows, &i64_pairs);
}

/// The fused loop over a pair of one-byte keys, `b` in `0..nb`.
#[inline(never)]
fn fused_pair<T: Value>(k: [&[u8]; 2], nb: usize, v: &[T], sums: &mut [T], counts: &mut [u64]) {
    for ((&a, &b), &x) in k[0].iter().zip(k[1]).zip(v) {
        let s = usize::from(a) * nb + usize::from(b);
        sums[s] = sums[s].plus(x);
        counts[s] += 1;
    }
}

/// Grouped sum of `T` by a pair of one-byte keys, each in `0..side`
/// (`side * side` groups, past the 256 that one byte codes), with `skew`
/// percent of the rows in one group, added in calls of `call` rows (an
/// engine's morsels; the fused loop runs over the same calls).
fn grouped_pair<T: Value>(a: &Args, rows: &mut Vec<Vec<String>>, cases: &[(usize, u64, usize)]) {
    let n = 1 << 20;
    let v: Vec<T> = rng(n, 5).iter().map(|&r| T::make(r)).collect();
    for &(side, skew, call) in cases {
        let (ka, kb): (Vec<u8>, Vec<u8>) = rng(n, 9)
            .iter()
            .map(|&r| {
                if (r >> 40) % 100 < skew {
                    (1, 5)
                } else {
                    ((r % side as u64) as u8, (r >> 20) as u8 % side as u8)
                }
            })
            .unzip();
        let g = side * side;
        let layout = Groups::pair(0..=(side - 1) as u8, 0..=(side - 1) as u8).unwrap();
        let mut c = vec![
            Contender::new("keel", || {
                ns_per_row(n, || {
                    let mut t = GroupTable::<T>::new(layout, 1, Aggs::SUM).unwrap();
                    for s in (0..n).step_by(call) {
                        let e = n.min(s + call);
                        let keys = Keys::Pair(black_box(&ka[s..e]), black_box(&kb[s..e]));
                        t.add(keys, &[black_box(&v[s..e])], None).unwrap();
                    }
                    black_box(t.count(0));
                })
            }),
            Contender::new("fused loop", || {
                ns_per_row(n, || {
                    let (mut sums, mut c) = (vec![T::default(); g], vec![0u64; g]);
                    for s in (0..n).step_by(call) {
                        let e = n.min(s + call);
                        let k = [black_box(&ka[s..e]), black_box(&kb[s..e])];
                        fused_pair(k, side, black_box(&v[s..e]), &mut sums, &mut c);
                    }
                    black_box((sums, c));
                })
            }),
            Contender::new("read pass", || {
                // SAFETY: the value types have no padding: the same memory
                // as bytes.
                let vb = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), 8 * n) };
                ns_per_row(n, || {
                    let keys = read_pass::<512>(black_box(&ka)) ^ read_pass::<512>(black_box(&kb));
                    black_box(keys ^ read_pass::<512>(black_box(vb)));
                })
            }),
        ];
        let m = interleave(a.rounds, &mut c);
        let name = <T as keel_kernels::Num>::NAME;
        let calls = if call < n {
            format!(", calls of {} rows", size(call))
        } else {
            String::new()
        };
        let label = format!(
            "grouped {name} sum by a pair of u8 keys, {side} x {side} groups{}{calls}",
            skew_note(skew)
        );
        push_row(rows, label, &m);
    }
}

/// " (P% in one)" for a skew of P percent, else nothing.
fn skew_note(skew: u64) -> String {
    if skew > 0 {
        format!(" ({skew}% in one)")
    } else {
        String::new()
    }
}

/// A row of 1 Mi rows: keel's and the other's time a row (medians `m[0]`
/// and `m[1]`), the other's over keel's, and the read pass's (`m[2]`) with
/// its share of keel's.
fn push_row(rows: &mut Vec<Vec<String>>, label: String, m: &[f64]) {
    rows.push(vec![
        label,
        "1 Mi rows".into(),
        format!("{:.3} ns/row", m[0]),
        format!("{:.3} ns/row", m[1]),
        format!("{:.2}x", m[1] / m[0]),
        format!("{:.3} ns/row ({:.2})", m[2], m[2] / m[0]),
    ]);
    eprintln!("{:?}", rows.last().unwrap());
}

/// Grouped sum of `T` by a `u16` code (a dictionary's keys) over each of
/// `groups` (a count of groups, the percentage of rows that all fall in
/// group 5, the rest uniform, and the value columns, 1 or 2), in a layout
/// of exactly that many slots.
fn grouped_u16<T: Value>(a: &Args, rows: &mut Vec<Vec<String>>, groups: &[(usize, u64, usize)]) {
    let n = 1 << 20;
    let v: Vec<T> = rng(n, 5).iter().map(|&r| T::make(r)).collect();
    let v2: Vec<T> = rng(n, 7).iter().map(|&r| T::make(r)).collect();
    for &(g, skew, cols) in groups {
        let codes: Vec<u16> = rng(n, 9)
            .iter()
            .map(|&r| {
                if (r >> 40) % 100 < skew {
                    5
                } else {
                    (r % g as u64) as u16
                }
            })
            .collect();
        let layout = Groups::u16(g).unwrap();
        let mut c = vec![
            Contender::new("keel", || {
                ns_per_row(n, || {
                    let mut t = GroupTable::<T>::new(layout, cols, Aggs::SUM).unwrap();
                    let values: [&[T]; 2] = [black_box(&v), black_box(&v2)];
                    t.add(Keys::U16(black_box(&codes)), &values[..cols], None)
                        .unwrap();
                    black_box(t.count(0));
                })
            }),
            Contender::new("fused loop", || {
                ns_per_row(n, || {
                    let (mut s, mut s2, mut c) =
                        (vec![T::default(); g], vec![T::default(); g], vec![0u64; g]);
                    if cols == 1 {
                        fused16(black_box(&codes), black_box(&v), &mut s, &mut c);
                    } else {
                        let values = [black_box(&v[..]), black_box(&v2[..])];
                        fused16_2(black_box(&codes), values, [&mut s, &mut s2], &mut c);
                    }
                    black_box((s, s2, c));
                })
            }),
            Contender::new("read pass", || {
                // SAFETY: the value types and u16 have no padding: the
                // same memory as bytes.
                let vb = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), 8 * n) };
                let vb2 = unsafe { std::slice::from_raw_parts(v2.as_ptr().cast::<u8>(), 8 * n) };
                let cb = unsafe { std::slice::from_raw_parts(codes.as_ptr().cast::<u8>(), 2 * n) };
                ns_per_row(n, || {
                    let second = if cols == 2 {
                        read_pass::<512>(black_box(vb2))
                    } else {
                        0
                    };
                    black_box(
                        read_pass::<512>(black_box(cb)) ^ read_pass::<512>(black_box(vb)) ^ second,
                    );
                })
            }),
        ];
        let m = interleave(a.rounds, &mut c);
        let name = <T as keel_kernels::Num>::NAME;
        let cols_note = if cols > 1 { " of 2 columns" } else { "" };
        let label = format!(
            "grouped {name} sum{cols_note} by u16, {g} groups{}",
            skew_note(skew)
        );
        push_row(rows, label, &m);
    }
}

/// Grouped sum of `T` by a `u8` code over 3, 16 and 256 groups.
fn grouped_typed<T: Value>(a: &Args, rows: &mut Vec<Vec<String>>) {
    let n = 1 << 20;
    let v: Vec<T> = rng(n, 5).iter().map(|&r| T::make(r)).collect();
    for groups in [3u64, 16, 256] {
        let codes: Vec<u8> = rng(n, 9).iter().map(|&r| (r % groups) as u8).collect();
        let layout = Groups::u8(256).unwrap();
        let mut c = vec![
            Contender::new("keel", || {
                ns_per_row(n, || {
                    let mut t = GroupTable::<T>::new(layout, 1, Aggs::SUM).unwrap();
                    t.add(Keys::U8(black_box(&codes)), &[black_box(&v)], None)
                        .unwrap();
                    black_box(t.count(0));
                })
            }),
            Contender::new("fused loop", || {
                ns_per_row(n, || {
                    let (mut s, mut c) = ([T::default(); 256], [0u64; 256]);
                    fused(black_box(&codes), black_box(&v), &mut s, &mut c);
                    black_box((s, c));
                })
            }),
            Contender::new("read pass", || {
                // SAFETY: the value types have no padding and u8 no
                // alignment: the same memory as bytes.
                let vb = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), 8 * n) };
                ns_per_row(n, || {
                    black_box(
                        read_pass::<512>(black_box(&codes)) ^ read_pass::<512>(black_box(vb)),
                    );
                })
            }),
            Contender::new("HashMap", || {
                ns_per_row(n, || {
                    let mut m: HashMap<u8, (T, u64)> = HashMap::new();
                    for (&k, &x) in black_box(&codes).iter().zip(black_box(&v)) {
                        let e = m.entry(k).or_insert((T::default(), 0));
                        e.0 = e.0.plus(x);
                        e.1 += 1;
                    }
                    black_box(m.len());
                })
            }),
        ];
        let m = interleave(a.rounds, &mut c);
        rows.push(vec![
            format!(
                "grouped {} sum, {groups} groups",
                <T as keel_kernels::Num>::NAME
            ),
            "1 Mi rows".into(),
            format!("{:.3} ns/row", m[0]),
            format!("{:.3} / {:.3} ns/row", m[1], m[3]),
            format!("{:.2}x / {:.2}x", m[1] / m[0], m[3] / m[0]),
            format!("{:.3} ns/row ({:.2})", m[2], m[2] / m[0]),
        ]);
        eprintln!("{:?}", rows.last().unwrap());
    }
}

fn hll_rows(a: &Args, rows: &mut Vec<Vec<String>>) {
    let n = 1 << 20;
    let keys = rng(n, 11);
    for density in [2u64, 10, 64] {
        // About 1/density of the rows selected.
        let r = rng(n, 17);
        let sel: Vec<u64> = r
            .chunks(64)
            .map(|ch| {
                ch.iter()
                    .enumerate()
                    .fold(0u64, |w, (j, &x)| w | (u64::from(x % density == 0) << j))
            })
            .collect();
        let picked = bitmap::popcount(&sel, n).unwrap();
        let mut rows_buf = vec![0u32; n];
        let mut gathered = vec![0u64; n];
        let mut c = vec![
            Contender::new("keel masked add", || {
                ns_per_row(n, || {
                    let mut h = HyperLogLog::new(14).unwrap();
                    h.add_u64_column_masked(black_box(&keys), Selection::Bitmap(Bits::new(&sel)))
                        .unwrap();
                    black_box(h.registers()[0]);
                })
            }),
            Contender::new("select+gather+add", || {
                ns_per_row(n, || {
                    let mut h = HyperLogLog::new(14).unwrap();
                    let m = bitmap::select_into(black_box(&sel), n, &mut rows_buf).unwrap();
                    gather::gather(black_box(&keys), &rows_buf[..m], &mut gathered[..m]).unwrap();
                    h.add_u64_column(&gathered[..m]);
                    black_box(h.registers()[0]);
                })
            }),
        ];
        // The yardstick: a read of the keys and the selection, which
        // both sides read whole (at 1 in 10 every key's line holds a
        // picked one).
        c.push(Contender::new("read pass", || {
            // SAFETY: u64 has no padding and u8 no alignment: the same
            // memory as bytes.
            let kb = unsafe { std::slice::from_raw_parts(keys.as_ptr().cast::<u8>(), 8 * n) };
            let sb =
                unsafe { std::slice::from_raw_parts(sel.as_ptr().cast::<u8>(), 8 * sel.len()) };
            ns_per_row(n, || {
                black_box(read_pass::<512>(black_box(kb)) ^ read_pass::<512>(black_box(sb)));
            })
        }));
        let m = interleave(a.rounds, &mut c);
        let label = format!("HLL add, 1 in {density} selected ({picked} keys)");
        push_row(rows, label, &m);
    }
}

fn size(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} Mi", n >> 20)
    } else {
        format!("{} Ki", n >> 10)
    }
}

fn main() -> std::process::ExitCode {
    let a = cli(USAGE, parse);
    println!(
        "keel-kernels engine bench: level {} (detected {}), rounds {}",
        cpu::level(),
        cpu::detected(),
        a.rounds
    );
    let mut rows = Vec::new();
    if a.runs("compare") {
        compare_rows(&a, &mut rows);
    }
    if a.runs("grouped") {
        grouped_rows(&a, &mut rows);
    }
    if a.runs("hll") {
        hll_rows(&a, &mut rows);
    }
    println!();
    print_table(
        &[
            "kernel",
            "size",
            "keel",
            "anchor(s)",
            "keel vs anchor(s)",
            "read pass of the same buffers (keel share)",
        ],
        &rows,
    );
    std::process::ExitCode::SUCCESS
}
