//! Aggregate and filter throughput of keel-kernels against (a) the plain
//! loop in the default build, (b) the same loop compiled for this CPU's
//! vector extensions (`#[target_feature]` wrapper: AVX-512 where detected,
//! else AVX2), (c) arrow-rs compute kernels (`arrow-arith` aggregates,
//! `arrow-ord` comparisons), and (d) at the largest size, read-only passes
//! over the same buffers the kernel reads (512-bit and 256-bit loads, the
//! faster of the two: the bandwidth yardstick), in the same rounds.
//! Sizes 4 Ki, 64 Ki, 1 Mi, 16 Mi and 128 Mi rows; contenders interleaved
//! round by round; medians of GB/s of input read (values, plus validity
//! bits where used); `select` (a bitmap to its set positions) counts the
//! bitmap read, `take-masked` (a column to the values a bitmap selects,
//! arrow's `filter`; every contender allocates its output) the values and
//! the bitmap, `filter-nulls` (the same for an arrow array with nulls,
//! through keel's arrow adapter) the values, the predicate and the
//! validity, `take-nulls` (random indices into an arrow array with nulls)
//! the indices, values and validity. Ends with the goals, met or missed.
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin kernels
//! # quicker: --max-log2 20 --rounds 5 ; one kernel: --only sum
//! ```

use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt8Type};
use arrow_array::{Array, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use keel_bench::{Contender, black_box, bytes_of, cli, help, interleave, print_table, read_pass};
use keel_kernels::filter::{CmpOp, Predicate};
use keel_kernels::{Element, Kernels, cpu};
use std::time::Instant;

struct Args {
    max_log2: u32,
    rounds: usize,
    only: Option<String>,
}

const USAGE: &str = "usage: kernels [--max-log2 N] [--rounds N] [--only KERNEL]
  --max-log2 N   largest column, 2^N rows (default 27; sizes 12 16 20 24 27)
  --rounds N     interleaved rounds (default 5)
  --only KERNEL  kernels whose name starts so (sum, min, max, lt, select, ...)";

/// The command line (`--help` prints the usage and exits).
fn parse(p: &mut lexopt::Parser) -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        max_log2: 27,
        rounds: 5,
        only: None,
    };
    while let Some(arg) = p.next()? {
        match arg {
            Long("max-log2") => a.max_log2 = p.value()?.parse()?,
            Long("rounds") => a.rounds = p.value()?.parse()?,
            Long("only") => a.only = Some(p.value()?.string()?),
            Long("help") | Short('h') => help(USAGE),
            other => return Err(other.unexpected()),
        }
    }
    if a.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    if a.max_log2 < 12 {
        return Err("--max-log2 must be at least 12 (the smallest size)".into());
    }
    Ok(a)
}

/// The plain loops: what a user writes. Each is `#[inline(always)]` so the
/// wrappers below compile it with their target features.
mod plain {
    pub trait Num: Copy + PartialOrd {
        fn add(self, o: Self) -> Self;
        const ZERO: Self;
    }
    impl Num for i64 {
        fn add(self, o: i64) -> i64 {
            self.wrapping_add(o)
        }
        const ZERO: i64 = 0;
    }
    impl Num for i32 {
        fn add(self, o: i32) -> i32 {
            self.wrapping_add(o)
        }
        const ZERO: i32 = 0;
    }
    impl Num for f64 {
        fn add(self, o: f64) -> f64 {
            self + o
        }
        const ZERO: f64 = 0.0;
    }
    impl Num for u8 {
        fn add(self, o: u8) -> u8 {
            self.wrapping_add(o)
        }
        const ZERO: u8 = 0;
    }

    #[inline(always)]
    pub fn sum<T: Num>(v: &[T]) -> T {
        let mut s = T::ZERO;
        for &x in v {
            s = s.add(x);
        }
        s
    }
    #[inline(always)]
    pub fn sum_valid<T: Num>(v: &[T], b: &[u64]) -> T {
        let mut s = T::ZERO;
        for (i, &x) in v.iter().enumerate() {
            s = s.add(if b[i / 64] >> (i % 64) & 1 == 1 {
                x
            } else {
                T::ZERO
            });
        }
        s
    }
    #[inline(always)]
    pub fn min<T: Num>(v: &[T]) -> Option<T> {
        let mut m = *v.first()?;
        for &x in v {
            m = if x < m { x } else { m };
        }
        Some(m)
    }
    #[inline(always)]
    pub fn max<T: Num>(v: &[T]) -> Option<T> {
        let mut m = *v.first()?;
        for &x in v {
            m = if x > m { x } else { m };
        }
        Some(m)
    }
    #[inline(always)]
    pub fn min_max<T: Num>(v: &[T]) -> Option<(T, T)> {
        let (mut a, mut b) = (*v.first()?, *v.first()?);
        for &x in v {
            a = if x < a { x } else { a };
            b = if x > b { x } else { b };
        }
        Some((a, b))
    }
    #[inline(always)]
    pub fn lt<T: Num>(v: &[T], c: T, out: &mut [u64]) {
        for (o, ch) in out.iter_mut().zip(v.chunks(64)) {
            let mut w = 0u64;
            for (j, &x) in ch.iter().enumerate() {
                w |= ((x < c) as u64) << j;
            }
            *o = w;
        }
    }
    #[inline(always)]
    pub fn between<T: Num>(v: &[T], lo: T, hi: T, out: &mut [u64]) {
        for (o, ch) in out.iter_mut().zip(v.chunks(64)) {
            let mut w = 0u64;
            for (j, &x) in ch.iter().enumerate() {
                w |= ((lo <= x && x <= hi) as u64) << j;
            }
            *o = w;
        }
    }
    #[inline(always)]
    pub fn lt_and<T: Num>(v: &[T], c: T, out: &mut [u64]) {
        for (o, ch) in out.iter_mut().zip(v.chunks(64)) {
            let mut w = 0u64;
            for (j, &x) in ch.iter().enumerate() {
                w |= ((x < c) as u64) << j;
            }
            *o &= w;
        }
    }
    #[inline(always)]
    pub fn count(b: &[u64]) -> usize {
        b.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// The values at the set bits, in order, into a vector of their count
    /// (the count taken first, as arrow's `filter` takes it).
    #[inline(always)]
    pub fn filter_rows<T: Num>(v: &[T], b: &[u64]) -> Vec<T> {
        let mut out = Vec::with_capacity(count(b));
        for (i, &w) in b.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push(v[i * 64 + w.trailing_zeros() as usize]);
                w &= w - 1;
            }
        }
        out
    }
    /// [`filter_rows`] of a column with nulls: the values, and the
    /// validity bits of the same rows packed in order.
    #[inline(always)]
    pub fn filter_rows_valid<T: Num>(v: &[T], b: &[u64], valid: &[u64]) -> (Vec<T>, Vec<u64>) {
        let n = count(b);
        let (mut out, mut bits) = (Vec::with_capacity(n), vec![0u64; n.div_ceil(64)]);
        for (i, &w) in b.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let r = i * 64 + w.trailing_zeros() as usize;
                let k = out.len();
                bits[k / 64] |= (valid[r / 64] >> (r % 64) & 1) << (k % 64);
                out.push(v[r]);
                w &= w - 1;
            }
        }
        (out, bits)
    }
    /// `v[idx[i]]` and the validity bit of each indexed row, packed.
    #[inline(always)]
    pub fn take_valid<T: Num>(v: &[T], idx: &[u32], valid: &[u64]) -> (Vec<T>, Vec<u64>) {
        let mut bits = vec![0u64; idx.len().div_ceil(64)];
        let out = idx
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let r = x as usize;
                bits[i / 64] |= (valid[r / 64] >> (r % 64) & 1) << (i % 64);
                v[r]
            })
            .collect();
        (out, bits)
    }
    /// The set bits' positions, lowest first: a `tzcnt` loop a set bit.
    #[inline(always)]
    pub fn select(b: &[u64], out: &mut [u32]) -> usize {
        let mut n = 0;
        for (i, &w) in b.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out[n] = (i * 64) as u32 + w.trailing_zeros();
                n += 1;
                w &= w - 1;
            }
        }
        n
    }
}

/// The same loops compiled for this CPU: AVX-512 or AVX2 wrappers.
macro_rules! wrappers {
    ($($name:ident<$($g:ident),*>($($a:ident: $t:ty),*) -> $r:ty;)*) => {
        mod avx2 {
            use super::plain::{self, *};
            $(
                /// # Safety
                /// The CPU supports AVX2.
                #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
                pub unsafe fn $name<$($g: Num),*>($($a: $t),*) -> $r { plain::$name($($a),*) }
            )*
        }
        mod avx512 {
            use super::plain::{self, *};
            $(
                /// # Safety
                /// The CPU supports AVX-512 F/BW/DQ/VL.
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vpopcntdq,popcnt,bmi2")]
                pub unsafe fn $name<$($g: Num),*>($($a: $t),*) -> $r { plain::$name($($a),*) }
            )*
        }
        /// Dispatch the wrappers on the detected level.
        mod native {
            use super::plain::*;
            use keel_kernels::cpu::{self, Level};
            $(
                #[inline]
                pub fn $name<$($g: Num),*>($($a: $t),*) -> $r {
                    match cpu::detected() {
                        // SAFETY: detected() says the CPU supports AVX-512.
                        Level::Avx512 => unsafe { super::avx512::$name($($a),*) },
                        // SAFETY: detected() says the CPU supports AVX2.
                        Level::Avx2 => unsafe { super::avx2::$name($($a),*) },
                        _ => super::plain::$name($($a),*),
                    }
                }
            )*
        }
    };
}
wrappers! {
    sum<T>(v: &[T]) -> T;
    sum_valid<T>(v: &[T], b: &[u64]) -> T;
    min<T>(v: &[T]) -> Option<T>;
    max<T>(v: &[T]) -> Option<T>;
    min_max<T>(v: &[T]) -> Option<(T, T)>;
    lt<T>(v: &[T], c: T, out: &mut [u64]) -> ();
    between<T>(v: &[T], lo: T, hi: T, out: &mut [u64]) -> ();
    lt_and<T>(v: &[T], c: T, out: &mut [u64]) -> ();
    select<>(b: &[u64], out: &mut [u32]) -> usize;
    filter_rows<T>(v: &[T], b: &[u64]) -> Vec<T>;
    filter_rows_valid<T>(v: &[T], b: &[u64], valid: &[u64]) -> (Vec<T>, Vec<u64>);
    take_valid<T>(v: &[T], idx: &[u32], valid: &[u64]) -> (Vec<T>, Vec<u64>);
}

/// GB/s of `bytes` per call over enough calls to last ~2 ms or more.
fn gbps(bytes: usize, mut f: impl FnMut()) -> f64 {
    let iters = (64 << 20) / bytes.max(1);
    let iters = iters.max(1);
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    (bytes * iters) as f64 / t.elapsed().as_secs_f64() / 1e9
}

struct Row {
    kernel: String,
    ty: &'static str,
    rows: usize,
    keel: f64,
    plain: f64,
    native: f64,
    arrow: f64,
    bw: Option<f64>,
}

trait Bench: Element + plain::Num + arrow_array::ArrowNativeTypeOp {
    type A: ArrowPrimitiveType<Native = Self>;
    fn make(i: u64) -> Self;
}
impl Bench for i64 {
    type A = Int64Type;
    fn make(r: u64) -> i64 {
        (r % 1_000_000) as i64 - 500_000
    }
}
impl Bench for i32 {
    type A = Int32Type;
    fn make(r: u64) -> i32 {
        (r % 1_000_000) as i32 - 500_000
    }
}
impl Bench for f64 {
    type A = Float64Type;
    fn make(r: u64) -> f64 {
        (r % 1_000_000) as f64 / 7.0 - 70_000.0
    }
}

fn rng(n: usize, seed: u64) -> impl Iterator<Item = u64> {
    let mut s = seed | 1;
    (0..n).map(move |_| {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

struct Ctx<'a> {
    args: &'a Args,
    rows: Vec<Row>,
}

impl Ctx<'_> {
    fn want(&self, kernel: &str) -> bool {
        self.args
            .only
            .as_deref()
            .is_none_or(|o| kernel.starts_with(o))
    }

    /// Measures one (kernel, type, size) group. `reads` are the buffers
    /// the kernel reads (their bytes are the input GB/s counts).
    #[allow(clippy::too_many_arguments)]
    fn group(
        &mut self,
        kernel: &str,
        ty: &'static str,
        n: usize,
        reads: &[&[u8]],
        keel: &mut dyn FnMut(),
        plainf: &mut dyn FnMut(),
        native: &mut dyn FnMut(),
        arrow: &mut dyn FnMut(),
    ) {
        let big = n >= 1 << 27;
        let bytes: usize = reads.iter().map(|r| r.len()).sum();
        let mut c = vec![
            Contender::new("keel", || gbps(bytes, &mut *keel)),
            Contender::new("loop", || gbps(bytes, &mut *plainf)),
            Contender::new("loop-native", || gbps(bytes, &mut *native)),
            Contender::new("arrow", || gbps(bytes, &mut *arrow)),
        ];
        if big {
            c.push(Contender::new("read 512", || {
                gbps(bytes, || {
                    for r in reads {
                        black_box(read_pass::<512>(black_box(r)));
                    }
                })
            }));
            c.push(Contender::new("read 256", || {
                gbps(bytes, || {
                    for r in reads {
                        black_box(read_pass::<256>(black_box(r)));
                    }
                })
            }));
        }
        let m = interleave(self.args.rounds, &mut c);
        self.rows.push(Row {
            kernel: kernel.to_string(),
            ty,
            rows: n,
            keel: m[0],
            plain: m[1],
            native: m[2],
            arrow: m[3],
            bw: big.then(|| m[4].max(m[5])),
        });
        eprintln!(
            "{kernel:>14} {ty} {n:>10}: keel {:.1} loop {:.1} native {:.1} arrow {:.1}{}",
            m[0],
            m[1],
            m[2],
            m[3],
            if big {
                format!(
                    " bw {:.1} (512 {:.1}, 256 {:.1})",
                    m[4].max(m[5]),
                    m[4],
                    m[5]
                )
            } else {
                String::new()
            }
        );
    }
}

fn run_type<T: Bench>(ctx: &mut Ctx<'_>, sizes: &[usize], nullable: bool, filters: bool) {
    let k = Kernels::current();
    let max = *sizes.last().unwrap();
    let ty = T::NAME;
    let values: Vec<T> = rng(max, 7).map(T::make).collect();
    let valid: Vec<u64> = rng(max.div_ceil(64), 9).map(|r| r | (r >> 7)).collect();
    let buf = ScalarBuffer::<T>::from(values);
    let full = PrimitiveArray::<T::A>::new(buf.clone(), None);
    let nulls = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(valid.clone()), 0, max));
    let full_null = PrimitiveArray::<T::A>::new(buf, Some(nulls));
    let c = T::make(500_000); // about half the rows are below
    let (lo, hi) = (T::make(250_000), T::make(750_000));
    for &n in sizes {
        let arr = full.slice(0, n);
        let arr_null = full_null.slice(0, n);
        let v: &[T] = &full.values()[..n];
        let b = &valid[..n.div_ceil(64)];
        let (vr, br) = (bytes_of(v), bytes_of(b));
        let words = n.div_ceil(64);
        // One output buffer per contender: each closure owns its own.
        let (mut o1, mut o2, mut o3) = (vec![0u64; words], vec![0u64; words], vec![0u64; words]);
        let (mut p1, mut p2, mut p3) = (vec![!0u64; words], vec![!0u64; words], vec![!0u64; words]);
        let prior = BooleanArray::new(
            BooleanBuffer::new(Buffer::from_vec(vec![!0u64; words]), 0, n),
            None,
        );
        let scalar_c = PrimitiveArray::<T::A>::new_scalar(c);
        let (s_lo, s_hi) = (
            PrimitiveArray::<T::A>::new_scalar(lo),
            PrimitiveArray::<T::A>::new_scalar(hi),
        );

        if ctx.want("sum") {
            ctx.group(
                "sum",
                ty,
                n,
                &[vr],
                &mut || {
                    black_box(k.sum_masked(black_box(v), None).unwrap());
                },
                &mut || {
                    black_box(plain::sum(black_box(v)));
                },
                &mut || {
                    black_box(native::sum(black_box(v)));
                },
                &mut || {
                    black_box(arrow_arith::aggregate::sum(black_box(&arr)));
                },
            );
        }
        if nullable && ctx.want("sum-nulls") {
            ctx.group(
                "sum-nulls",
                ty,
                n,
                &[vr, br],
                &mut || {
                    black_box(k.sum_masked(black_box(v), Some(b)).unwrap());
                },
                &mut || {
                    black_box(plain::sum_valid(black_box(v), b));
                },
                &mut || {
                    black_box(native::sum_valid(black_box(v), b));
                },
                &mut || {
                    black_box(arrow_arith::aggregate::sum(black_box(&arr_null)));
                },
            );
        }
        if ctx.want("min") {
            ctx.group(
                "min",
                ty,
                n,
                &[vr],
                &mut || {
                    black_box(k.min_masked(black_box(v), None).unwrap());
                },
                &mut || {
                    black_box(plain::min(black_box(v)));
                },
                &mut || {
                    black_box(native::min(black_box(v)));
                },
                &mut || {
                    black_box(arrow_arith::aggregate::min(black_box(&arr)));
                },
            );
        }
        if ctx.want("max") {
            ctx.group(
                "max",
                ty,
                n,
                &[vr],
                &mut || {
                    black_box(k.max_masked(black_box(v), None).unwrap());
                },
                &mut || {
                    black_box(plain::max(black_box(v)));
                },
                &mut || {
                    black_box(native::max(black_box(v)));
                },
                &mut || {
                    black_box(arrow_arith::aggregate::max(black_box(&arr)));
                },
            );
        }
        if ctx.want("min_max") {
            // arrow has no one-pass min-max: its contender is min then max.
            ctx.group(
                "min_max",
                ty,
                n,
                &[vr],
                &mut || {
                    black_box(k.min_max_masked(black_box(v), None).unwrap());
                },
                &mut || {
                    black_box(plain::min_max(black_box(v)));
                },
                &mut || {
                    black_box(native::min_max(black_box(v)));
                },
                &mut || {
                    black_box(arrow_arith::aggregate::min(black_box(&arr)));
                    black_box(arrow_arith::aggregate::max(black_box(&arr)));
                },
            );
        }
        if nullable && ctx.want("count") {
            let nb = arr_null.nulls().unwrap().inner().clone();
            ctx.group(
                "count",
                ty,
                n,
                &[br],
                &mut || {
                    black_box(k.count_masked(black_box(v), Some(b)).unwrap());
                },
                &mut || {
                    black_box(plain::count(black_box(b)));
                },
                &mut || {
                    black_box(native_count(black_box(b)));
                },
                &mut || {
                    black_box(black_box(&nb).count_set_bits());
                },
            );
        }
        if filters && ctx.want("lt") {
            // keel and the loops write into a caller buffer; arrow's API
            // allocates its result, as arrow callers pay.
            ctx.group(
                "lt",
                ty,
                n,
                &[vr],
                &mut || {
                    k.filter(black_box(v), Predicate::Cmp(CmpOp::Lt, c), &mut o1)
                        .unwrap();
                    black_box(&o1);
                },
                &mut || {
                    plain::lt(black_box(v), c, &mut o2);
                    black_box(&o2);
                },
                &mut || {
                    native::lt(black_box(v), c, &mut o3);
                    black_box(&o3);
                },
                &mut || {
                    black_box(arrow_ord::cmp::lt(black_box(&arr), &scalar_c).unwrap());
                },
            );
        }
        if filters && ctx.want("between") {
            ctx.group(
                "between",
                ty,
                n,
                &[vr],
                &mut || {
                    k.filter(black_box(v), Predicate::Between(lo, hi), &mut o1)
                        .unwrap();
                    black_box(&o1);
                },
                &mut || {
                    plain::between(black_box(v), lo, hi, &mut o2);
                    black_box(&o2);
                },
                &mut || {
                    native::between(black_box(v), lo, hi, &mut o3);
                    black_box(&o3);
                },
                &mut || {
                    let a = arrow_ord::cmp::gt_eq(black_box(&arr), &s_lo).unwrap();
                    let b = arrow_ord::cmp::lt_eq(black_box(&arr), &s_hi).unwrap();
                    black_box(arrow_arith::boolean::and(&a, &b).unwrap());
                },
            );
        }
        if filters && ctx.want("lt-and") {
            // The read pass reads the validity words in place of the prior
            // bitmap (the keel closure holds that one mutably): same size.
            ctx.group(
                "lt-and",
                ty,
                n,
                &[vr, br],
                &mut || {
                    k.filter_and(black_box(v), Predicate::Cmp(CmpOp::Lt, c), &mut p1)
                        .unwrap();
                    black_box(&p1);
                },
                &mut || {
                    plain::lt_and(black_box(v), c, &mut p2);
                    black_box(&p2);
                },
                &mut || {
                    native::lt_and(black_box(v), c, &mut p3);
                    black_box(&p3);
                },
                &mut || {
                    let a = arrow_ord::cmp::lt(black_box(&arr), &scalar_c).unwrap();
                    black_box(arrow_arith::boolean::and(&a, black_box(&prior)).unwrap());
                },
            );
        }
    }
}

fn native_count(b: &[u64]) -> usize {
    match cpu::detected() {
        // SAFETY: detected() says the CPU supports AVX-512 with VPOPCNTDQ.
        cpu::Level::Avx512 => unsafe { count512(b) },
        // SAFETY: detected() says the CPU supports AVX2 and POPCNT.
        cpu::Level::Avx2 => unsafe { count256(b) },
        _ => plain::count(b),
    }
}
/// # Safety
/// The CPU supports AVX-512 F/VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
unsafe fn count512(b: &[u64]) -> usize {
    plain::count(b)
}
/// # Safety
/// The CPU supports AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn count256(b: &[u64]) -> usize {
    plain::count(b)
}

fn main() -> std::process::ExitCode {
    let args = cli(USAGE, parse);
    let sizes: Vec<usize> = [12u32, 16, 20, 24, 27]
        .into_iter()
        .filter(|&l| l <= args.max_log2)
        .map(|l| 1usize << l)
        .collect();
    println!(
        "keel-kernels bench: level {} (detected {}), rounds {}, sizes {:?}",
        cpu::level(),
        cpu::detected(),
        args.rounds,
        sizes
    );
    let mut ctx = Ctx {
        args: &args,
        rows: Vec::new(),
    };
    run_type::<i64>(&mut ctx, &sizes, true, true);
    run_type::<f64>(&mut ctx, &sizes, true, true);
    run_type::<i32>(&mut ctx, &sizes, false, true);
    run_select(&mut ctx, &sizes);
    run_take_masked(&mut ctx, &sizes);
    run_filter_nulls(&mut ctx, &sizes);
    run_take_nulls(&mut ctx, &sizes);

    let mut table = Vec::new();
    for r in &ctx.rows {
        table.push(vec![
            r.kernel.clone(),
            r.ty.to_string(),
            size_name(r.rows),
            format!("{:.1}", r.keel),
            format!("{:.1}", r.plain),
            format!("{:.1}", r.native),
            format!("{:.1}", r.arrow),
            format!("{:.2}", r.keel / r.arrow),
            r.bw.map_or("-".into(), |b| format!("{b:.1}")),
            r.bw.map_or("-".into(), |b| format!("{:.2}", r.keel / b)),
        ]);
    }
    println!();
    print_table(
        &[
            "kernel",
            "type",
            "rows",
            "keel GB/s",
            "loop",
            "loop-native",
            "arrow",
            "keel/arrow",
            "read-bw",
            "keel/bw",
        ],
        &table,
    );
    goals(&ctx.rows);
    std::process::ExitCode::SUCCESS
}

/// A bitmap of `rows` bits, each set with chance 1 in `d`.
fn random_bits(rows: usize, d: u64, seed: u64) -> Vec<u64> {
    let mut bits = rng(rows, seed);
    (0..rows.div_ceil(64))
        .map(|_| {
            (0..64).fold(0u64, |w, b| {
                w | u64::from(bits.next().is_some_and(|r| r.is_multiple_of(d))) << b
            })
        })
        .collect()
}

/// A bitmap to its set positions (`select_into`), 1 in 2, 10, 64, 200
/// and 1000 rows set at random: GB/s of bitmap read. Every contender writes into a
/// buffer it reuses; arrow's is `BooleanBuffer::set_indices_u32` extending
/// a cleared `Vec`.
fn run_select(ctx: &mut Ctx<'_>, sizes: &[usize]) {
    let k = Kernels::current();
    let max = *sizes.last().unwrap();
    for d in [2u64, 10, 64, 200, 1000] {
        let kernel = format!("select 1/{d}");
        if !ctx.want(&kernel) {
            continue;
        }
        let words = random_bits(max, d, 11 + d);
        for &n in sizes {
            let b = &words[..n.div_ceil(64)];
            let set = k.popcount(b, n).unwrap();
            let bb = BooleanBuffer::new(Buffer::from_vec(b.to_vec()), 0, n);
            let (mut o1, mut o2, mut o3) = (vec![0u32; set], vec![0u32; set], vec![0u32; set]);
            let mut o4: Vec<u32> = Vec::with_capacity(set);
            ctx.group(
                &kernel,
                "bit",
                n,
                &[bytes_of(b)],
                &mut || {
                    black_box(k.select_into(black_box(b), n, &mut o1).unwrap());
                },
                &mut || {
                    black_box(plain::select(black_box(b), &mut o2));
                },
                &mut || {
                    black_box(native::select(black_box(b), &mut o3));
                },
                &mut || {
                    o4.clear();
                    o4.extend(black_box(&bb).set_indices_u32());
                    black_box(o4.len());
                },
            );
        }
    }
}

/// An i64 and a u8 column to the values a bitmap selects (`take_masked`,
/// arrow's `filter`), 1 in 2, 4, 10 and 64 rows at random: GB/s of values and bitmap
/// read. Every contender allocates a vector of the selected count per
/// call, as arrow's `filter` does.
fn run_take_masked(ctx: &mut Ctx<'_>, sizes: &[usize]) {
    take_masked_typed::<Int64Type>(ctx, sizes, "i64", |r| r as i64);
    take_masked_typed::<UInt8Type>(ctx, sizes, "u8", |r| r as u8);
}

/// [`run_take_masked`] for one value type.
fn take_masked_typed<A: ArrowPrimitiveType>(
    ctx: &mut Ctx<'_>,
    sizes: &[usize],
    ty: &'static str,
    make: fn(u64) -> A::Native,
) where
    A::Native: plain::Num + keel_kernels::gather::Value,
{
    use keel_kernels::mask::{Bits, Selection};
    let k = Kernels::current();
    let max = *sizes.last().unwrap();
    let values: Vec<A::Native> = rng(max, 13).map(make).collect();
    for d in [2u64, 4, 10, 64] {
        let kernel = format!("take-masked 1/{d}");
        if !ctx.want(&kernel) {
            continue;
        }
        let words = random_bits(max, d, 17 + d);
        for &n in sizes {
            let b = &words[..n.div_ceil(64)];
            let v = &values[..n];
            let arr = PrimitiveArray::<A>::new(ScalarBuffer::from(v.to_vec()), None);
            let pred =
                BooleanArray::new(BooleanBuffer::new(Buffer::from_vec(b.to_vec()), 0, n), None);
            ctx.group(
                &kernel,
                ty,
                n,
                &[bytes_of(v), bytes_of(b)],
                &mut || {
                    let m = Selection::Bitmap(Bits::new(black_box(b)));
                    black_box(k.take_masked(black_box(v), m).unwrap());
                },
                &mut || {
                    black_box(plain::filter_rows(black_box(v), b));
                },
                &mut || {
                    black_box(native::filter_rows(black_box(v), b));
                },
                &mut || {
                    black_box(arrow_select::filter::filter(black_box(&arr), &pred).unwrap());
                },
            );
        }
    }
}

/// An arrow i64 array of `v` (copied) whose validity is `valid`'s first
/// `v.len()` bits.
fn nullable_i64(v: &[i64], valid: &[u64]) -> PrimitiveArray<Int64Type> {
    let nulls = NullBuffer::new(BooleanBuffer::new(
        Buffer::from_vec(valid.to_vec()),
        0,
        v.len(),
    ));
    PrimitiveArray::new(ScalarBuffer::from(v.to_vec()), Some(nulls))
}

/// arrow's `filter` of an i64 array with nulls (1 row in 8 null) by a
/// predicate array selecting 1 in 2, 10 and 64 rows: keel's
/// `arrow::filter_by` (values by `take_masked`, the nulls by
/// `bitmap::compact`) against arrow's `filter` and a loop that packs
/// each selected row's value and validity bit. GB/s of values, predicate
/// and validity read; every contender allocates its outputs.
fn run_filter_nulls(ctx: &mut Ctx<'_>, sizes: &[usize]) {
    let max = *sizes.last().unwrap();
    let values: Vec<i64> = rng(max, 19).map(|r| r as i64).collect();
    let valid: Vec<u64> = random_bits(max, 8, 23).iter().map(|w| !w).collect();
    for d in [2u64, 10, 64] {
        let kernel = format!("filter-nulls 1/{d}");
        if !ctx.want(&kernel) {
            continue;
        }
        let words = random_bits(max, d, 29 + d);
        for &n in sizes {
            let (b, val, v) = (
                &words[..n.div_ceil(64)],
                &valid[..n.div_ceil(64)],
                &values[..n],
            );
            let arr = nullable_i64(v, val);
            let pred =
                BooleanArray::new(BooleanBuffer::new(Buffer::from_vec(b.to_vec()), 0, n), None);
            ctx.group(
                &kernel,
                "i64",
                n,
                &[bytes_of(v), bytes_of(b), bytes_of(val)],
                &mut || {
                    black_box(keel_kernels::arrow::filter_by(black_box(&arr), &pred).unwrap());
                },
                &mut || {
                    black_box(plain::filter_rows_valid(black_box(v), b, val));
                },
                &mut || {
                    black_box(native::filter_rows_valid(black_box(v), b, val));
                },
                &mut || {
                    black_box(arrow_select::filter::filter(black_box(&arr), &pred).unwrap());
                },
            );
        }
    }
}

/// arrow's `take` of an i64 array with nulls (1 row in 8 null) by as many
/// random u32 indices as rows: keel's `arrow::take` against arrow's
/// `take` and a loop gathering each value and its validity bit. GB/s of
/// indices, values and validity read (each index reads one value);
/// every contender allocates its outputs.
fn run_take_nulls(ctx: &mut Ctx<'_>, sizes: &[usize]) {
    if !ctx.want("take-nulls") {
        return;
    }
    let max = *sizes.last().unwrap();
    let values: Vec<i64> = rng(max, 31).map(|r| r as i64).collect();
    let valid: Vec<u64> = random_bits(max, 8, 37).iter().map(|w| !w).collect();
    for &n in sizes {
        let idx: Vec<u32> = rng(n, 41).map(|r| (r % n as u64) as u32).collect();
        let (val, v) = (&valid[..n.div_ceil(64)], &values[..n]);
        let arr = nullable_i64(v, val);
        let ia = arrow_array::UInt32Array::from(idx.clone());
        ctx.group(
            "take-nulls",
            "i64",
            n,
            &[bytes_of(&idx), bytes_of(v), bytes_of(val)],
            &mut || {
                black_box(keel_kernels::arrow::take(black_box(&arr), &ia).unwrap());
            },
            &mut || {
                black_box(plain::take_valid(black_box(v), &idx, val));
            },
            &mut || {
                black_box(native::take_valid(black_box(v), &idx, val));
            },
            &mut || {
                black_box(arrow_select::take::take(black_box(&arr), &ia, None).unwrap());
            },
        );
    }
}

fn size_name(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} Mi", n >> 20)
    } else {
        format!("{} Ki", n >> 10)
    }
}

/// The goals on this machine, checked row by row.
fn goals(rows: &[Row]) {
    let hot = |k: &str| matches!(k, "sum" | "min" | "max" | "lt");
    let mut verdicts = Vec::new();
    let all_ge = rows
        .iter()
        .filter(|r| r.keel < r.arrow)
        .map(|r| format!("{} {} {}", r.kernel, r.ty, size_name(r.rows)))
        .collect::<Vec<_>>();
    verdicts.push(("keel >= arrow, every kernel and size".to_string(), all_ge));
    let twice = rows
        .iter()
        .filter(|r| {
            hot(&r.kernel) && (1 << 12..=1 << 20).contains(&r.rows) && r.keel < 2.0 * r.arrow
        })
        .map(|r| {
            format!(
                "{} {} {} ({:.2}x)",
                r.kernel,
                r.ty,
                size_name(r.rows),
                r.keel / r.arrow
            )
        })
        .collect::<Vec<_>>();
    verdicts.push((
        "keel >= 2x arrow for sum/min/max/lt at 4 Ki-1 Mi".to_string(),
        twice,
    ));
    let bw = rows
        .iter()
        .filter(|r| hot(&r.kernel) && r.bw.is_some_and(|b| r.keel < 0.9 * b))
        .map(|r| {
            format!(
                "{} {} ({:.2} of bw)",
                r.kernel,
                r.ty,
                r.keel / r.bw.unwrap()
            )
        })
        .collect::<Vec<_>>();
    let have_big = rows.iter().any(|r| r.bw.is_some());
    println!();
    for (goal, misses) in verdicts {
        println!(
            "goal: {goal}: {}",
            if misses.is_empty() {
                "met".into()
            } else {
                format!("MISSED for {}", misses.join(", "))
            }
        );
    }
    if have_big {
        println!(
            "goal: >= 90% of read bandwidth for sum/min/max/lt at 128 Mi: {}",
            if bw.is_empty() {
                "met".into()
            } else {
                format!("MISSED for {}", bw.join(", "))
            }
        );
    } else {
        println!("goal: >= 90% of read bandwidth at 128 Mi: not measured (run without --max-log2)");
    }
}
