//! Gather throughput (GB/s of output) of keel against arrow's `take` and a
//! naive loop, for one column and for a frame of 8 mixed columns, sorted and
//! random `u32` indices, 1 and 2 threads, interleaved round by round in one
//! process; medians over rounds. For every single-column case a sequential
//! copy of the same number of rows (the streaming bandwidth of this machine
//! in the same run) is measured alongside, and both are also given as bytes
//! moved per second: a gather of sorted indices must read every cache line
//! its indices land on (over a 1 GiB column, nearly all of them), so its GB/s
//! of output cannot approach the copy's, while its bytes moved can. For
//! sorted indices a third yardstick is measured too: a sequential pass over
//! the very bytes the gather covers (the source span from the first index
//! to the last, the indices and the output): what the gather would cost if
//! it read its span as one stream. A last case gathers a column by as many
//! sorted indices as it has rows, where the gather touches nearly every
//! line once, as the copy does.
//!
//! Beside keel's gather into a reused buffer, `keel take` allocates its
//! output per call as arrow's `take` does (like for like: both allocate,
//! neither zeroes; keel's take also asks for transparent huge pages for
//! outputs of 4 MiB and more, which arrow's does not, so its fresh output
//! faults once per 2 MiB where arrow's faults once per 4 KiB page).
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin gather
//! # smaller: --rows-log2 24 --idx-log2 22 --frame-rows-log2 22 --frame-idx-log2 20
//! # columns on transparent huge pages (madvise): --huge-pages
//! ```

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, PrimitiveArray, UInt32Array};
use arrow_buffer::ScalarBuffer;
use keel_bench::{Contender, black_box, cli, help, interleave, print_table};
use keel_kernels::gather::{Column, ColumnMut, gather, gather_frame};
use std::sync::Arc;
use std::time::Instant;

struct Args {
    rows_log2: u32,
    idx_log2: u32,
    frame_rows_log2: u32,
    frame_idx_log2: u32,
    rounds: usize,
    threads: Vec<usize>,
    huge_pages: bool,
}

const USAGE: &str = "usage: gather [options]
  --rows-log2 N        random-gather column of 2^N i64 rows (default 27: 1 GiB)
  --idx-log2 N         2^N u32 indices (default 24)
  --frame-rows-log2 N  frame columns of 2^N rows (default 24)
  --frame-idx-log2 N   2^N indices into the frame (default 22)
  --rounds N           interleaved rounds (default 7)
  --threads LIST       thread counts, comma-separated (default 1,2)
  --huge-pages         columns on transparent huge pages (madvise)";

/// The command line (`--help` prints the usage and exits).
fn parse(p: &mut lexopt::Parser) -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        rows_log2: 27,
        idx_log2: 24,
        frame_rows_log2: 24,
        frame_idx_log2: 22,
        rounds: 7,
        threads: vec![1, 2],
        huge_pages: false,
    };
    while let Some(arg) = p.next()? {
        match arg {
            Long("rows-log2") => a.rows_log2 = p.value()?.parse()?,
            Long("idx-log2") => a.idx_log2 = p.value()?.parse()?,
            Long("frame-rows-log2") => a.frame_rows_log2 = p.value()?.parse()?,
            Long("frame-idx-log2") => a.frame_idx_log2 = p.value()?.parse()?,
            Long("rounds") => a.rounds = p.value()?.parse()?,
            Long("threads") => {
                let v: String = p.value()?.string()?;
                a.threads = v
                    .split(',')
                    .map(|t| match t.parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(format!("--threads: {t:?} is not a thread count (1,2,...)")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            Long("huge-pages") => a.huge_pages = true,
            Long("help") | Short('h') => help(USAGE),
            other => return Err(other.unexpected()),
        }
    }
    if a.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    if a.rows_log2 > 32 || a.frame_rows_log2 > 32 || a.idx_log2 > 34 || a.frame_idx_log2 > 34 {
        return Err("--*-rows-log2 at most 32 (u32 indices), --*-idx-log2 at most 34".into());
    }
    Ok(a)
}

/// xorshift64*: the same indices every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn indices(n: usize, rows: usize, sorted: bool, seed: u64) -> UInt32Array {
    assert!(rows <= u32::MAX as usize + 1);
    let mut rng = Rng(seed | 1);
    let mut v: Vec<u32> = (0..n).map(|_| (rng.next() % rows as u64) as u32).collect();
    if sorted {
        v.sort_unstable();
    }
    UInt32Array::new(ScalarBuffer::from(v), None)
}

/// Whether columns ask for transparent huge pages (`--huge-pages`).
static HUGE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn column<T: ArrowPrimitiveType>(rows: usize, f: impl Fn(usize) -> T::Native) -> PrimitiveArray<T> {
    let mut v: Vec<T::Native> = Vec::with_capacity(rows);
    if HUGE.load(std::sync::atomic::Ordering::Relaxed) {
        // Before the first touch, so the faults can be served with 2 MiB pages.
        let p = v.as_mut_ptr() as usize;
        let start = p.next_multiple_of(2 << 20);
        let end = p + rows * std::mem::size_of::<T::Native>();
        if end > start {
            // SAFETY: advice on whole pages inside our own allocation.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v.extend((0..rows).map(f));
    PrimitiveArray::new(ScalarBuffer::from(v), None)
}

/// Runs `f(part)` for `t` contiguous parts of `0..n`, on `t` threads (inline
/// for one).
fn split(n: usize, t: usize, f: impl Fn(usize, std::ops::Range<usize>) + Sync) {
    let chunk = n.div_ceil(t.max(1)).max(1);
    if t <= 1 {
        f(0, 0..n);
        return;
    }
    std::thread::scope(|s| {
        for k in 0..t {
            let r = (k * chunk).min(n)..((k + 1) * chunk).min(n);
            let f = &f;
            s.spawn(move || f(k, r));
        }
    });
}

fn naive<T: Copy>(src: &[T], idx: &[u32], out: &mut [T]) {
    for (o, &i) in out.iter_mut().zip(idx) {
        *o = src[i as usize];
    }
}

/// A `&mut [T]` that several threads write disjoint parts of.
struct Shared<T>(*mut T, usize);
// SAFETY: each thread writes a disjoint range (see `part`).
unsafe impl<T: Send> Sync for Shared<T> {}
impl<T> Shared<T> {
    fn new(v: &mut [T]) -> Self {
        Shared(v.as_mut_ptr(), v.len())
    }
    /// # Safety
    ///
    /// Ranges handed out concurrently must not overlap, and the slice this
    /// was made from must outlive every part.
    #[allow(clippy::mut_from_ref)]
    unsafe fn part(&self, r: std::ops::Range<usize>) -> &mut [T] {
        assert!(r.start <= r.end && r.end <= self.1);
        // SAFETY: in bounds (asserted); disjointness and lifetime by contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(r.start), r.len()) }
    }
}

/// The bytes a gather of `i64` rows by `ix` must move: each source cache
/// line it lands on (counted again whenever the next index leaves it), the
/// `u32` indices and the output.
fn moved_bytes(ix: &[u32]) -> usize {
    let mut lines = 0;
    let mut last = u64::MAX;
    for &i in ix {
        let line = u64::from(i) / 8;
        if line != last {
            lines += 1;
            last = line;
        }
    }
    lines * 64 + ix.len() * (4 + 8)
}

/// The sequential twin of a gather by ascending `ix`: the source rows from
/// the first index to the last read as one stream (every line a prefetcher
/// would pull), and the indices read and the output written in order,
/// interleaved in chunks of 1,024 indices as the gather interleaves them.
/// Same bytes, no dependent loads: what a sorted gather would cost if it
/// read its span as one stream.
fn span_stream(src: &[i64], ix: &[u32], out: &mut [i64]) {
    let mut from = match ix.first() {
        Some(&f) => f as usize,
        None => return,
    };
    for (o, c) in out.chunks_mut(1024).zip(ix.chunks(1024)) {
        let to = *c.last().expect("chunks are not empty") as usize;
        // A chunk of repeats of the last chunk's final index reads nothing.
        let s = src[from.min(to + 1)..=to]
            .iter()
            .fold(0i64, |a, &x| a.wrapping_add(x));
        for (o, &i) in o.iter_mut().zip(c) {
            *o = i64::from(i) ^ s;
        }
        from = to + 1;
    }
}

fn gbs(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

/// One column of `2^rows_log2` rows gathered by `2^idx_log2` indices, for
/// each pattern in `sorted` (false: random, true: sorted).
fn one_column(
    a: &Args,
    rows_log2: u32,
    idx_log2: u32,
    sorted_cases: &[bool],
    rows_out: &mut Vec<Vec<String>>,
) {
    let rows = 1usize << rows_log2;
    let n = 1usize << idx_log2;
    let dense = rows == n;
    let col = column::<Int64Type>(rows, |i| (i as i64).wrapping_mul(0x9E37));
    let col_ref: ArrayRef = Arc::new(col.clone());
    let src: &[i64] = col.values();
    let mut out = vec![0i64; n];
    let bytes = n * 8;
    for &sorted in sorted_cases {
        let idx = indices(n, rows, sorted, 7);
        let ix: &[u32] = idx.values();
        // Bytes moved per byte of output: the gather's, and the copy's
        // (it reads and writes each byte once).
        let keel_moved = moved_bytes(ix) as f64 / bytes as f64;
        let keel_span = span_bytes(ix).map(|b| b as f64 / bytes as f64);
        for &t in &a.threads {
            let shared = Shared::new(&mut out);
            let mut c = vec![
                Contender::new("keel", || {
                    let t0 = Instant::now();
                    split(n, t, |_, r| {
                        // SAFETY: `split` hands out disjoint ranges of `out`.
                        let o = unsafe { shared.part(r.clone()) };
                        gather(src, &ix[r], o).expect("in range");
                    });
                    gbs(bytes, t0.elapsed().as_secs_f64())
                }),
                Contender::new("arrow take", || {
                    let t0 = Instant::now();
                    let mut parts: Vec<Option<ArrayRef>> = vec![None; t];
                    let slots = Shared::new(&mut parts);
                    split(n, t, |k, r| {
                        let part = idx.slice(r.start, r.len());
                        let taken = arrow_select::take::take(&col_ref, &part, None).unwrap();
                        // SAFETY: slot k belongs to this thread alone.
                        unsafe { slots.part(k..k + 1)[0] = Some(taken) };
                    });
                    let s = t0.elapsed().as_secs_f64();
                    black_box(parts);
                    gbs(bytes, s)
                }),
                Contender::new("naive", || {
                    let t0 = Instant::now();
                    split(n, t, |_, r| {
                        // SAFETY: disjoint ranges.
                        let o = unsafe { shared.part(r.clone()) };
                        naive(src, &ix[r], o);
                    });
                    gbs(bytes, t0.elapsed().as_secs_f64())
                }),
                Contender::new("stream copy", || {
                    let t0 = Instant::now();
                    split(n, t, |_, r| {
                        // SAFETY: disjoint ranges.
                        let o = unsafe { shared.part(r.clone()) };
                        // The same number of rows, read sequentially.
                        o.copy_from_slice(&src[r.start * (rows / n)..][..r.len()]);
                    });
                    gbs(bytes, t0.elapsed().as_secs_f64())
                }),
            ];
            if sorted {
                c.push(Contender::new("span stream", || {
                    let t0 = Instant::now();
                    split(n, t, |_, r| {
                        // SAFETY: disjoint ranges.
                        let o = unsafe { shared.part(r.clone()) };
                        span_stream(src, &ix[r], o);
                    });
                    gbs(bytes, t0.elapsed().as_secs_f64())
                }));
            }
            // Like for like with arrow's take: keel allocating its output per
            // call too (uninitialised, as `take` does), per thread part.
            c.push(Contender::new("keel take", || {
                let t0 = Instant::now();
                let mut parts: Vec<Option<Vec<i64>>> = vec![None; t];
                let slots = Shared::new(&mut parts);
                split(n, t, |k, r| {
                    let taken = keel_kernels::gather::take(src, &ix[r]).expect("in range");
                    // SAFETY: slot k belongs to this thread alone.
                    unsafe { slots.part(k..k + 1)[0] = Some(taken) };
                });
                let s = t0.elapsed().as_secs_f64();
                black_box(parts);
                gbs(bytes, s)
            }));
            let m = interleave(a.rounds, &mut c);
            let take = m[m.len() - 1];
            // Output check against the naive loop, outside the timing.
            gather(src, ix, &mut out).unwrap();
            let mut check = vec![0i64; n];
            naive(src, ix, &mut check);
            assert!(out == check, "keel gather differs from the naive loop");
            rows_out.push(vec![
                format!("1 col i64, {} MiB", (rows * 8) >> 20),
                match (sorted, dense) {
                    (false, _) => "random",
                    (true, false) => "sorted",
                    (true, true) => "sorted, 1 per row",
                }
                .into(),
                t.to_string(),
                format!("{:.2}", m[0]),
                format!("{:.2}", m[1]),
                format!("{:.2}", m[2]),
                format!("{:.2}", m[3]),
                format!("{:.2}x", m[0] / m[1]),
                format!("{:.2}x", m[0] / m[2]),
                format!("{:.0}%", 100.0 * m[0] / m[3]),
                format!("{:.2}", m[0] * keel_moved),
                format!("{:.2}", m[3] * 2.0),
                format!("{:.0}%", 100.0 * m[0] * keel_moved / (m[3] * 2.0)),
                keel_span.map_or("-".into(), |sp| {
                    format!("{:.0}%", 100.0 * m[0] * sp / (m[3] * 2.0))
                }),
                if sorted {
                    format!("{:.0}%", 100.0 * m[0] / m[4])
                } else {
                    "-".into()
                },
                format!("{take:.2}"),
                format!("{:.2}x", take / m[1]),
            ]);
            eprintln!("{:?}", rows_out.last().unwrap());
        }
    }
}

fn frame(a: &Args, rows_out: &mut Vec<Vec<String>>) {
    let rows = 1usize << a.frame_rows_log2;
    let n = 1usize << a.frame_idx_log2;
    let c0 = column::<Int64Type>(rows, |i| i as i64);
    let c1 = column::<Float64Type>(rows, |i| i as f64 * 0.5);
    let c2 = column::<Int32Type>(rows, |i| i as i32);
    let c3 = column::<UInt32Type>(rows, |i| (i as u32).wrapping_mul(3));
    let c4 = column::<UInt64Type>(rows, |i| i as u64 * 7);
    let c5 = column::<Float32Type>(rows, |i| i as f32);
    let c6 = column::<Int64Type>(rows, |i| -(i as i64));
    let c7 = column::<Float64Type>(rows, |i| i as f64);
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(c0.clone()),
        Arc::new(c1.clone()),
        Arc::new(c2.clone()),
        Arc::new(c3.clone()),
        Arc::new(c4.clone()),
        Arc::new(c5.clone()),
        Arc::new(c6.clone()),
        Arc::new(c7.clone()),
    ];
    let cols = [
        Column::new(c0.values()),
        Column::new(c1.values()),
        Column::new(c2.values()),
        Column::new(c3.values()),
        Column::new(c4.values()),
        Column::new(c5.values()),
        Column::new(c6.values()),
        Column::new(c7.values()),
    ];
    let row_bytes = 8 + 8 + 4 + 4 + 8 + 4 + 8 + 8;
    let bytes = n * row_bytes;
    let (mut o0, mut o1, mut o2, mut o3) =
        (vec![0i64; n], vec![0f64; n], vec![0i32; n], vec![0u32; n]);
    let (mut o4, mut o5, mut o6, mut o7) =
        (vec![0u64; n], vec![0f32; n], vec![0i64; n], vec![0f64; n]);
    for sorted in [false, true] {
        let idx = indices(n, rows, sorted, 11);
        let ix: &[u32] = idx.values();
        for &t in &a.threads {
            let (s0, s1, s2, s3) = (
                Shared::new(&mut o0),
                Shared::new(&mut o1),
                Shared::new(&mut o2),
                Shared::new(&mut o3),
            );
            let (s4, s5, s6, s7) = (
                Shared::new(&mut o4),
                Shared::new(&mut o5),
                Shared::new(&mut o6),
                Shared::new(&mut o7),
            );
            let mut c = vec![
                Contender::new("keel frame", || {
                    let t0 = Instant::now();
                    split(n, t, |_, r| {
                        // SAFETY: `split` hands out disjoint row ranges.
                        let mut outs = unsafe {
                            [
                                ColumnMut::new(s0.part(r.clone())),
                                ColumnMut::new(s1.part(r.clone())),
                                ColumnMut::new(s2.part(r.clone())),
                                ColumnMut::new(s3.part(r.clone())),
                                ColumnMut::new(s4.part(r.clone())),
                                ColumnMut::new(s5.part(r.clone())),
                                ColumnMut::new(s6.part(r.clone())),
                                ColumnMut::new(s7.part(r.clone())),
                            ]
                        };
                        gather_frame(&cols, &ix[r], &mut outs).expect("in range");
                    });
                    gbs(bytes, t0.elapsed().as_secs_f64())
                }),
                Contender::new("arrow take_arrays", || {
                    let t0 = Instant::now();
                    let mut parts: Vec<Option<Vec<ArrayRef>>> = vec![None; t];
                    let slots = Shared::new(&mut parts);
                    split(n, t, |k, r| {
                        let part = idx.slice(r.start, r.len());
                        let taken = arrow_select::take::take_arrays(&arrays, &part, None).unwrap();
                        // SAFETY: slot k belongs to this thread alone.
                        unsafe { slots.part(k..k + 1)[0] = Some(taken) };
                    });
                    let s = t0.elapsed().as_secs_f64();
                    black_box(parts);
                    gbs(bytes, s)
                }),
                Contender::new("naive, column by column", || {
                    let t0 = Instant::now();
                    split(n, t, |_, r| {
                        let i = &ix[r.clone()];
                        // SAFETY: disjoint row ranges.
                        unsafe {
                            naive(c0.values(), i, s0.part(r.clone()));
                            naive(c1.values(), i, s1.part(r.clone()));
                            naive(c2.values(), i, s2.part(r.clone()));
                            naive(c3.values(), i, s3.part(r.clone()));
                            naive(c4.values(), i, s4.part(r.clone()));
                            naive(c5.values(), i, s5.part(r.clone()));
                            naive(c6.values(), i, s6.part(r.clone()));
                            naive(c7.values(), i, s7.part(r.clone()));
                        }
                    });
                    gbs(bytes, t0.elapsed().as_secs_f64())
                }),
            ];
            let m = interleave(a.rounds, &mut c);
            drop(c);
            let mut check = vec![0i64; n];
            naive(c0.values(), ix, &mut check);
            assert!(o0 == check, "keel frame differs from the naive loop");
            rows_out.push(vec![
                format!("frame 8 cols, {} MiB", (rows * row_bytes) >> 20),
                if sorted { "sorted" } else { "random" }.into(),
                t.to_string(),
                format!("{:.2}", m[0]),
                format!("{:.2}", m[1]),
                format!("{:.2}", m[2]),
                "".into(),
                format!("{:.2}x", m[0] / m[1]),
                format!("{:.2}x", m[0] / m[2]),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
                "".into(),
            ]);
            eprintln!("{:?}", rows_out.last().unwrap());
        }
    }
}

/// For ascending indices, the bytes of every source line from the first
/// index's to the last's, plus indices and output: a model of the traffic
/// if the prefetchers fetch every untouched line between touched ones too
/// (not a measured bound: this VM exposes no counters to read it).
fn span_bytes(ix: &[u32]) -> Option<usize> {
    let (first, last) = (*ix.first()?, *ix.last()?);
    let ascending = ix.windows(2).all(|w| w[0] <= w[1]);
    ascending.then(|| (last as usize / 8 - first as usize / 8 + 1) * 64 + ix.len() * (4 + 8))
}

fn main() -> std::process::ExitCode {
    let a = cli(USAGE, parse);
    HUGE.store(a.huge_pages, std::sync::atomic::Ordering::Relaxed);
    println!(
        "gather: {} Mi u32 indices into a {} MiB i64 column, and sorted into one of {} MiB; {} Mi indices into a frame of 8 columns x {} Mi rows; {} rounds; level {}; huge pages {}",
        (1usize << a.idx_log2) >> 20,
        (8usize << a.rows_log2) >> 20,
        (8usize << a.idx_log2) >> 20,
        (1usize << a.frame_idx_log2) >> 20,
        (1usize << a.frame_rows_log2) >> 20,
        a.rounds,
        keel_kernels::cpu::level(),
        a.huge_pages
    );
    let mut rows = Vec::new();
    one_column(&a, a.rows_log2, a.idx_log2, &[false, true], &mut rows);
    // As many sorted indices as rows: the gather touches nearly every line
    // once, as the copy does.
    one_column(&a, a.idx_log2, a.idx_log2, &[true], &mut rows);
    frame(&a, &mut rows);
    println!(
        "GB/s of output, medians over rounds; \"moved\" columns: GB/s of bytes moved (source lines touched, indices and output for the gather; read and write for the copy); \"span/stream\": the same with every source line between the first and last sorted index counted (a model of the traffic if the prefetchers fetch them all); \"keel/span stream\": keel's speed against a measured sequential pass over those same bytes (the span read once, indices read and output written in order):"
    );
    print_table(
        &[
            "case",
            "indices",
            "threads",
            "keel",
            "arrow",
            "naive",
            "stream copy",
            "keel/arrow",
            "keel/naive",
            "keel/stream",
            "keel moved",
            "stream moved",
            "moved/stream",
            "span/stream",
            "keel/span stream",
            "keel take",
            "keel take/arrow",
        ],
        &rows,
    );
    std::process::ExitCode::SUCCESS
}
