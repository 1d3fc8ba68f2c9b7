//! Column sums at every size, with the yardsticks in the same rounds:
//! keel as dispatched, keel's AVX-512 and AVX2 leaves pinned, arrow-rs's
//! `sum`, a hand-written ceiling loop (eight independent accumulators of the
//! widest vectors, no masks, no tail handling beyond a scalar remainder;
//! for `i32` a wrapping sum, and beside it an exact one, which does the
//! work keel's exact sum does),
//! and read-only passes over the same buffer with 512-bit and with 256-bit
//! loads (the faster of the two is the bandwidth yardstick for the
//! share-of-bandwidth column, named with its width). GB/s of input, medians of interleaved
//! rounds, every contender over the same buffer; `ceiling B/cyc` is the
//! ceiling loop's bytes per TSC cycle (the TSC rate measured against the
//! wall clock: `tsc_hz` below). On AMD CPUs unmasked sums of 64-bit
//! columns past the last-level cache run a 128-bit loop at both SIMD levels
//! (`SUM_STREAM_FROM_BYTES` in `kernels/src/agg.rs`), so from 16 Mi rows of
//! those the three keel columns are the same loop; on Intel CPUs unmasked
//! sums at the AVX-512 level run the wide loops at every size
//! (`cpu::wide_sums`), and "keel avx512" is the same as "keel"; on Intel
//! family 6 model 167 those of 4- and 8-byte values from 64 MiB on run the
//! AVX2 leaf (`cpu::dram_256`), so there all three keel columns are
//! that leaf.
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin sums
//! # quicker: --rounds 3 --max-log2 24
//! # columns off the cache line by 2 rows: --offset-rows 2
//! ```

use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{ArrowPrimitiveType, PrimitiveArray};
use keel_bench::{Contender, black_box, bytes_of, cli, help, median, print_table, read_pass};
use keel_kernels::{Element, Kernels, cpu};
use std::arch::x86_64::*;
use std::time::Instant;

fn gbps(bytes: usize, mut f: impl FnMut()) -> f64 {
    let iters = ((64 << 20) / bytes.max(1)).max(1);
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    (bytes * iters) as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// TSC ticks per second, measured against the wall clock.
fn tsc_hz() -> f64 {
    // SAFETY: rdtsc has no preconditions.
    let (t0, c0) = (Instant::now(), unsafe { _rdtsc() });
    while t0.elapsed().as_millis() < 100 {}
    // SAFETY: as above.
    let c1 = unsafe { _rdtsc() };
    (c1 - c0) as f64 / t0.elapsed().as_secs_f64()
}

/// The ceiling loops: eight 512-bit accumulators, 512 bytes an iteration.
mod ceiling {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU supports AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn i64s(v: &[i64]) -> i64 {
        let mut acc = [_mm512_setzero_si512(); 8];
        let mut ch = v.chunks_exact(64);
        for c in &mut ch {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: the chunk holds 64 values.
                let x = unsafe { _mm512_loadu_si512(c.as_ptr().add(8 * j).cast()) };
                *a = _mm512_add_epi64(*a, x);
            }
        }
        let s = acc
            .iter()
            .fold(_mm512_setzero_si512(), |a, &b| _mm512_add_epi64(a, b));
        _mm512_reduce_add_epi64(s)
            .wrapping_add(ch.remainder().iter().fold(0i64, |a, &b| a.wrapping_add(b)))
    }

    /// # Safety
    /// The CPU supports AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f64s(v: &[f64]) -> f64 {
        let mut acc = [_mm512_setzero_pd(); 8];
        let mut ch = v.chunks_exact(64);
        for c in &mut ch {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: the chunk holds 64 values.
                let x = unsafe { _mm512_loadu_pd(c.as_ptr().add(8 * j)) };
                *a = _mm512_add_pd(*a, x);
            }
        }
        let s = acc
            .iter()
            .fold(_mm512_setzero_pd(), |a, &b| _mm512_add_pd(a, b));
        _mm512_reduce_add_pd(s) + ch.remainder().iter().sum::<f64>()
    }

    /// A wrapping 32-bit sum (what arrow's `sum` of `Int32` computes).
    ///
    /// # Safety
    /// The CPU supports AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn i32s(v: &[i32]) -> i32 {
        let mut acc = [_mm512_setzero_si512(); 8];
        let mut ch = v.chunks_exact(128);
        for c in &mut ch {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: the chunk holds 128 values.
                let x = unsafe { _mm512_loadu_si512(c.as_ptr().add(16 * j).cast()) };
                *a = _mm512_add_epi32(*a, x);
            }
        }
        let s = acc
            .iter()
            .fold(_mm512_setzero_si512(), |a, &b| _mm512_add_epi32(a, b));
        _mm512_reduce_add_epi32(s)
            .wrapping_add(ch.remainder().iter().fold(0i32, |a, &b| a.wrapping_add(b)))
    }

    /// The exact 64-bit sum of 32-bit values, by hand, the fastest way we
    /// know: per vector a wrapping 32-bit add of the values and an add of
    /// their high halves (with VNNI one `vpdpwssd` by the words (0, 1), else
    /// a shift and an add), eight chains of each; every 4096 steps the
    /// lanes fold into 64 bits as (high halves << 16) + the low halves,
    /// which are the wrapping sum less the high halves << 16.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F (and VNNI when `VNNI`).
    #[inline(always)]
    unsafe fn i32s_exact<const VNNI: bool>(v: &[i32]) -> i64 {
        // SAFETY: the callers enable AVX-512 F (and VNNI with `VNNI`); each
        // chunk holds 128 values, so the loads at 16 * j lie inside it.
        unsafe {
            let mut total = _mm512_setzero_si512();
            let mut ch = v.chunks_exact(128);
            loop {
                let mut w = [_mm512_setzero_si512(); 8];
                let mut h = [_mm512_setzero_si512(); 8];
                let mut k = 0;
                for c in ch.by_ref().take(4096) {
                    for j in 0..8 {
                        let x = _mm512_loadu_si512(c.as_ptr().add(16 * j).cast());
                        w[j] = _mm512_add_epi32(w[j], x);
                        h[j] = if VNNI {
                            _mm512_dpwssd_epi32(h[j], x, _mm512_set1_epi32(1 << 16))
                        } else {
                            _mm512_add_epi32(h[j], _mm512_srai_epi32::<16>(x))
                        };
                    }
                    k += 1;
                }
                // Per lane at most 8 * 4096 high halves (each |h| <= 2^15:
                // the sum under 2^31) and as many low halves (each under
                // 2^16: the sum under 2^32).
                let ws = w
                    .iter()
                    .fold(_mm512_setzero_si512(), |a, &b| _mm512_add_epi32(a, b));
                let hs = h
                    .iter()
                    .fold(_mm512_setzero_si512(), |a, &b| _mm512_add_epi32(a, b));
                let lo = _mm512_sub_epi32(ws, _mm512_slli_epi32::<16>(hs));
                for (hh, ll) in [
                    (_mm512_castsi512_si256(hs), _mm512_castsi512_si256(lo)),
                    (
                        _mm512_extracti64x4_epi64::<1>(hs),
                        _mm512_extracti64x4_epi64::<1>(lo),
                    ),
                ] {
                    let hi = _mm512_slli_epi64::<16>(_mm512_cvtepi32_epi64(hh));
                    total = _mm512_add_epi64(total, hi);
                    total = _mm512_add_epi64(total, _mm512_cvtepu32_epi64(ll));
                }
                if k < 4096 {
                    break;
                }
            }
            _mm512_reduce_add_epi64(total)
                .wrapping_add(ch.remainder().iter().map(|&x| x as i64).sum::<i64>())
        }
    }

    /// [`i32s_exact`] with VNNI.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F and VNNI.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn i32s_exact_vnni(v: &[i32]) -> i64 {
        // SAFETY: forwarded.
        unsafe { i32s_exact::<true>(v) }
    }

    /// [`i32s_exact`] without VNNI.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn i32s_exact_shift(v: &[i32]) -> i64 {
        // SAFETY: forwarded.
        unsafe { i32s_exact::<false>(v) }
    }
}

/// An exact ceiling loop (see [`Col::exact_ceiling`]).
type ExactSum<T, S> = unsafe fn(&[T]) -> S;

trait Col: Element + arrow_array::ArrowNativeTypeOp {
    type A: ArrowPrimitiveType<Native = Self>;
    fn make(r: u64) -> Self;
    /// # Safety
    /// The CPU supports AVX-512 F.
    unsafe fn ceiling(v: &[Self]) -> Self;
    /// A ceiling loop that computes what keel's sum does where the plain
    /// one does less (the exact sum of `i32`, which the wrapping loop is
    /// not); `None` where the plain ceiling already does the same work.
    fn exact_ceiling() -> Option<ExactSum<Self, Self::Sum>> {
        None
    }
}
impl Col for i64 {
    type A = Int64Type;
    fn make(r: u64) -> i64 {
        (r % 1_000_000) as i64 - 500_000
    }
    unsafe fn ceiling(v: &[i64]) -> i64 {
        // SAFETY: forwarded.
        unsafe { ceiling::i64s(v) }
    }
}
impl Col for f64 {
    type A = Float64Type;
    fn make(r: u64) -> f64 {
        (r % 1_000_000) as f64 / 7.0
    }
    unsafe fn ceiling(v: &[f64]) -> f64 {
        // SAFETY: forwarded.
        unsafe { ceiling::f64s(v) }
    }
}
impl Col for i32 {
    type A = Int32Type;
    fn make(r: u64) -> i32 {
        (r % 1_000_000) as i32 - 500_000
    }
    unsafe fn ceiling(v: &[i32]) -> i32 {
        // SAFETY: forwarded.
        unsafe { ceiling::i32s(v) }
    }
    fn exact_ceiling() -> Option<unsafe fn(&[i32]) -> i64> {
        // SAFETY (of the calls): `main` checked the CPU has AVX-512, and
        // VNNI is picked only where it is detected.
        Some(if is_x86_feature_detected!("avx512vnni") {
            ceiling::i32s_exact_vnni
        } else {
            ceiling::i32s_exact_shift
        })
    }
}

fn run<T: Col>(sizes: &[usize], rounds: usize, off: usize, hz: f64, rows: &mut Vec<Vec<String>>) {
    let max = *sizes.last().unwrap();
    let mut s = 7u64;
    // Room to start the columns on a cache line, then `off` rows past it.
    let pad = 64 / std::mem::size_of::<T>() + off;
    let values: Vec<T> = (0..max + pad)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            T::make(s.wrapping_mul(0x2545_F491_4F6C_DD1D))
        })
        .collect();
    // One buffer for every contender: arrow's array owns the values and
    // keel reads the same memory (a copy would sit on other pages). The
    // columns start on a cache line, or `off` rows past one (a large `Vec`
    // from glibc's malloc starts 16 bytes past).
    let head = (64 - values.as_ptr() as usize % 64) % 64 / std::mem::size_of::<T>();
    let arr = PrimitiveArray::<T::A>::new(arrow_buffer::ScalarBuffer::from(values), None)
        .slice(head + off, max);
    let values: &[T] = arr.values();
    eprintln!(
        "{}: column starts {} bytes past a cache line",
        T::NAME,
        values.as_ptr() as usize % 64
    );
    let (k, k5, k2) = (
        Kernels::current(),
        Kernels::at(cpu::Level::Avx512).unwrap(),
        Kernels::at(cpu::Level::Avx2).unwrap(),
    );
    for &n in sizes {
        let v = &values[..n];
        let a = arr.slice(0, n);
        let bytes = std::mem::size_of_val(v);
        let raw = bytes_of(v);
        let exact = T::exact_ceiling();
        if let Some(f) = exact {
            // The yardstick must compute what keel does.
            // SAFETY: see `Col::exact_ceiling`.
            assert_eq!(
                unsafe { f(v) },
                k.sum(v),
                "{}: exact ceiling differs from keel",
                T::NAME
            );
        }
        let mut c = vec![
            Contender::new("keel", || {
                gbps(bytes, || {
                    black_box(k.sum(black_box(v)));
                })
            }),
            Contender::new("keel avx512", || {
                gbps(bytes, || {
                    black_box(k5.sum(black_box(v)));
                })
            }),
            Contender::new("keel avx2", || {
                gbps(bytes, || {
                    black_box(k2.sum(black_box(v)));
                })
            }),
            Contender::new("arrow", || {
                gbps(bytes, || {
                    black_box(arrow_arith::aggregate::sum(black_box(&a)));
                })
            }),
            Contender::new("ceiling", || {
                // SAFETY: the caller checked the CPU has AVX-512.
                gbps(bytes, || {
                    black_box(unsafe { T::ceiling(black_box(v)) });
                })
            }),
            Contender::new("read pass", || {
                gbps(bytes, || {
                    black_box(read_pass::<512>(black_box(raw)));
                })
            }),
            Contender::new("read pass 256", || {
                gbps(bytes, || {
                    black_box(read_pass::<256>(black_box(raw)));
                })
            }),
        ];
        if let Some(f) = exact {
            c.push(Contender::new("exact ceiling", move || {
                gbps(bytes, || {
                    // SAFETY: see `Col::exact_ceiling`.
                    black_box(unsafe { f(black_box(v)) });
                })
            }));
        }
        // Interleaved rounds after one warm-up sample each, as
        // `keel_bench::interleave`, keeping the rounds for the ratio spread.
        for x in c.iter_mut() {
            (x.sample)();
        }
        let per: Vec<Vec<f64>> = (0..rounds)
            .map(|_| c.iter_mut().map(|x| (x.sample)()).collect())
            .collect();
        let m: Vec<f64> = (0..c.len())
            .map(|i| median(&mut per.iter().map(|r| r[i]).collect::<Vec<_>>()))
            .collect();
        // The bandwidth yardstick: the faster of the two read passes.
        let read = m[5].max(m[6]);
        let ratios = per.iter().map(|r| r[0] / r[3]);
        let (lo, hi) = ratios.fold((f64::MAX, 0f64), |(l, h), x| (l.min(x), h.max(x)));
        let name = if n % (1 << 20) == 0 {
            format!("{} Mi", n >> 20)
        } else if n % (1 << 10) == 0 {
            format!("{} Ki", n >> 10)
        } else {
            n.to_string()
        };
        rows.push(vec![
            T::NAME.to_string(),
            name,
            format!("{:.1}", m[0]),
            format!("{:.1}", m[1]),
            format!("{:.1}", m[2]),
            format!("{:.1}", m[3]),
            format!("{:.1}", m[4]),
            format!("{:.2}", m[4] * 1e9 / hz),
            format!("{read:.1} ({})", if m[6] > m[5] { 256 } else { 512 }),
            format!("{:.2}", m[0] / m[3]),
            format!("{lo:.2}-{hi:.2}"),
            format!("{:.2}", m[0] / m[4]),
            match m.get(7) {
                Some(e) => format!("{e:.1} ({:.2})", e * 1e9 / hz),
                None => "-".to_string(),
            },
            m.get(7)
                .map_or("-".to_string(), |e| format!("{:.2}", m[0] / e)),
            format!("{:.2}", m[0] / read),
        ]);
        eprintln!("{:?}", rows.last().unwrap());
    }
}

const USAGE: &str = "usage: sums [--rounds N] [--max-log2 N] [--rows LIST] [--offset-rows N]
  --rounds N       interleaved rounds per size (default 5)
  --max-log2 N     largest column, 2^N rows (default 27; sizes 12 16 20 22 24 27)
  --rows LIST      these column sizes instead, in rows, ascending, each a number
                   with an optional Ki or Mi suffix (say 1Mi,2Mi,3Mi,4Mi,6Mi)
  --offset-rows N  start every column N rows past a cache line (default 0)";

struct Args {
    rounds: usize,
    max_log2: u32,
    /// `--rows`: sizes in rows; empty: the powers of two.
    rows: Vec<usize>,
    off: usize,
}

/// A size such as `4096`, `64Ki` or `3Mi`, in rows.
fn parse_rows(s: &str) -> Result<usize, String> {
    let (num, unit) = if let Some(n) = s.strip_suffix("Mi") {
        (n, 1 << 20)
    } else if let Some(n) = s.strip_suffix("Ki") {
        (n, 1 << 10)
    } else {
        (s, 1)
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("--rows: {s:?} is not a positive row count"))
}

/// The command line (`--help` prints the usage and exits).
fn parse(p: &mut lexopt::Parser) -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        rounds: 5,
        max_log2: 27,
        rows: Vec::new(),
        off: 0,
    };
    while let Some(arg) = p.next()? {
        match arg {
            Long("rounds") => a.rounds = p.value()?.parse()?,
            Long("max-log2") => a.max_log2 = p.value()?.parse()?,
            Long("rows") => {
                a.rows = p
                    .value()?
                    .string()?
                    .split(',')
                    .map(parse_rows)
                    .collect::<Result<_, _>>()?;
                if !a.rows.is_sorted() {
                    return Err("--rows: sizes must be ascending".into());
                }
            }
            Long("offset-rows") => a.off = p.value()?.parse()?,
            Long("help") | Short('h') => help(USAGE),
            other => return Err(other.unexpected()),
        }
    }
    if a.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    Ok(a)
}

fn main() -> std::process::ExitCode {
    let Args {
        rounds,
        max_log2,
        rows: listed,
        off,
    } = cli(USAGE, parse);
    assert_eq!(
        cpu::detected(),
        cpu::Level::Avx512,
        "this bench needs an AVX-512 CPU"
    );
    let sizes: Vec<usize> = if listed.is_empty() {
        [12u32, 16, 20, 22, 24, 27]
            .into_iter()
            .filter(|&l| l <= max_log2)
            .map(|l| 1 << l)
            .collect()
    } else {
        listed
    };
    let hz = tsc_hz();
    println!(
        "sums: level {}, rounds {rounds}, TSC {:.3} GHz",
        cpu::level(),
        hz / 1e9
    );
    let mut rows = Vec::new();
    run::<i64>(&sizes, rounds, off, hz, &mut rows);
    run::<f64>(&sizes, rounds, off, hz, &mut rows);
    run::<i32>(&sizes, rounds, off, hz, &mut rows);
    print_table(
        &[
            "type",
            "rows",
            "keel",
            "keel avx512",
            "keel avx2",
            "arrow",
            "ceiling",
            "ceiling B/cyc",
            "read pass (bits)",
            "keel/arrow",
            "keel/arrow rounds",
            "keel/ceiling",
            "exact ceiling (B/cyc)",
            "keel/exact ceiling",
            "keel/read",
        ],
        &rows,
    );
    std::process::ExitCode::SUCCESS
}
