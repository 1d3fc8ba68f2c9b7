//! keel-heap against the system allocator and mimalloc, side by side.
//!
//! A process has one global allocator, so every measurement runs in a fresh
//! child process of this binary; the child's allocator is picked from
//! `KEEL_BENCH_ALLOC` (read with `getenv` on the first allocation, before
//! `main`). The driver alternates contenders round by round and prints
//! medians and ratios to mimalloc.
//!
//! Workloads:
//! - `query`: the repeated-query loop. Each iteration allocates four column
//!   buffers (8, 16, 32, 64 MiB) and 50 000 small objects, writes every page,
//!   frees everything and calls `gc()` (keel only; the others have no such
//!   call). Reports ms per iteration (median over steady-state iterations),
//!   minor faults per iteration, peak RSS, RSS after the loop, after
//!   `release_pages()` and after the idle decay.
//! - `query-xt`: the same, but a producer thread allocates and writes and the
//!   main thread frees (every free crosses threads).
//! - `churn`: larson-like: 2 threads replace random slots with new blocks of
//!   random sizes (16 B - 8 KiB); one replacement in eight goes through a
//!   shared mailbox, so its free happens on another thread. Reports Mops/s.
//!
//! Usage: `cargo run --release --bin heap -- [--rounds R] [--iters N] [workload...]`

use keel_bench::{cli, help, median, print_table, rss_bytes, usage};
use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Which allocator this process uses: 0 unknown, 1 system, 2 mimalloc, 3 keel.
static WHICH: AtomicU8 = AtomicU8::new(0);

fn which() -> u8 {
    let w = WHICH.load(Ordering::Relaxed);
    if w != 0 {
        return w;
    }
    // SAFETY: getenv with a NUL-terminated name; it does not allocate.
    let v = unsafe { libc::getenv(c"KEEL_BENCH_ALLOC".as_ptr()) };
    let w = if v.is_null() {
        1
    } else {
        // SAFETY: getenv returned a NUL-terminated string.
        match unsafe { std::ffi::CStr::from_ptr(v) }.to_bytes() {
            b"mimalloc" => 2,
            b"keel" | b"keel-n1" => 3,
            _ => 1,
        }
    };
    WHICH.store(w, Ordering::Relaxed);
    w
}

struct Switch;

static MI: mimalloc::MiMalloc = mimalloc::MiMalloc;
static KEEL: keel_heap::KeelAlloc = keel_heap::KeelAlloc;

// SAFETY: forwards every call to one allocator, fixed for the process's life.
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe {
            match which() {
                2 => MI.alloc(l),
                3 => KEEL.alloc(l),
                _ => System.alloc(l),
            }
        }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe {
            match which() {
                2 => MI.alloc_zeroed(l),
                3 => KEEL.alloc_zeroed(l),
                _ => System.alloc_zeroed(l),
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded to the allocator that made `p`.
        unsafe {
            match which() {
                2 => MI.dealloc(p, l),
                3 => KEEL.dealloc(p, l),
                _ => System.dealloc(p, l),
            }
        }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe {
            match which() {
                2 => MI.realloc(p, l, n),
                3 => KEEL.realloc(p, l, n),
                _ => System.realloc(p, l, n),
            }
        }
    }
}

#[global_allocator]
static GLOBAL: Switch = Switch;

const CONTENDERS: [&str; 4] = ["keel", "keel-n1", "system", "mimalloc"];
const COLUMNS: [usize; 4] = [8 << 20, 16 << 20, 32 << 20, 64 << 20];
const SMALL: usize = 50_000;
const PAGE: usize = 4096;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

fn is_keel() -> bool {
    which() == 3
}

fn gc() {
    if is_keel() {
        keel_heap::raw::gc();
    }
}

/// One iteration's memory: column buffers with every page written, and small objects.
fn allocate(rng: &mut Rng) -> (Vec<Vec<u8>>, Vec<Box<[u8]>>) {
    let cols = COLUMNS
        .iter()
        .map(|&n| {
            let mut v: Vec<u8> = Vec::with_capacity(n);
            let p = v.as_mut_ptr();
            for off in (0..n).step_by(PAGE) {
                // SAFETY: inside the capacity.
                unsafe { p.add(off).write(1) };
            }
            // SAFETY: the bytes are not read; length only marks them used.
            unsafe { v.set_len(n) };
            v
        })
        .collect();
    let small = (0..SMALL)
        .map(|_| {
            let n = 16 + (rng.next() % 240) as usize;
            vec![7u8; n].into_boxed_slice()
        })
        .collect();
    (cols, small)
}

fn child_query(iters: usize, cross: bool) {
    let mut rng = Rng(0x1234_5678);
    let warm = 10.min(iters / 4);
    let mut times = Vec::with_capacity(iters);
    let mut cpus = Vec::with_capacity(iters);
    let mut faults0 = 0;
    let base = rss_bytes();
    if cross {
        let (to_main, from_prod) =
            std::sync::mpsc::sync_channel::<(Vec<Vec<u8>>, Vec<Box<[u8]>>)>(1);
        let (to_prod, from_main) = std::sync::mpsc::sync_channel::<()>(1);
        let prod = std::thread::spawn(move || {
            let mut rng = Rng(0x1234_5678);
            for _ in 0..iters {
                to_main.send(allocate(&mut rng)).unwrap();
                from_main.recv().unwrap();
                gc(); // the owner drains the frees the main thread made
            }
        });
        for i in 0..iters {
            if i == warm {
                faults0 = usage().minor_faults;
            }
            let t = Instant::now();
            let c = usage().cpu;
            let batch = from_prod.recv().unwrap();
            drop(batch);
            to_prod.send(()).unwrap();
            times.push(t.elapsed().as_secs_f64());
            cpus.push((usage().cpu - c).as_secs_f64());
        }
        prod.join().unwrap();
    } else {
        for i in 0..iters {
            if i == warm {
                faults0 = usage().minor_faults;
            }
            let t = Instant::now();
            let c = usage().cpu;
            let batch = allocate(&mut rng);
            drop(batch);
            gc();
            times.push(t.elapsed().as_secs_f64());
            cpus.push((usage().cpu - c).as_secs_f64());
        }
    }
    let u = usage();
    let faults = (u.minor_faults - faults0) as f64 / (iters - warm) as f64;
    let ms = median(&mut times[warm..].to_vec()) * 1e3;
    // CPU time (user + system, all threads) per iteration: far less
    // sensitive than wall time to other load on a shared machine.
    let cpu_ms = median(&mut cpus[warm..].to_vec()) * 1e3;
    let after_loop = rss_bytes();
    let (mut after_release, mut after_decay) = (f64::NAN, f64::NAN);
    if is_keel() {
        keel_heap::raw::release_pages();
        after_release = rss_bytes() as f64;
        // Load again, then let it go idle and let the decay release it.
        drop(allocate(&mut rng));
        gc();
        std::thread::sleep(Duration::from_millis(keel_heap::options().decay_ms + 200));
        keel_heap::raw::maybe_collect();
        after_decay = rss_bytes() as f64;
    }
    println!(
        "RESULT ms={ms} cpu_ms={cpu_ms} faults={faults} peak={} base={base} after_loop={after_loop} after_release={after_release} after_decay={after_decay}",
        u.max_rss_bytes
    );
}

fn child_churn(ops: usize) {
    const THREADS: usize = 2;
    const SLOTS: usize = 1000;
    const MAILBOX: usize = 256;
    static BOX: [AtomicPtr<u8>; MAILBOX] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; MAILBOX];
    fn alloc(rng: &mut Rng) -> *mut u8 {
        let n = 16 + (rng.next() % 8176) as usize;
        let n = if rng.next().is_multiple_of(4) {
            n
        } else {
            n % 512 + 16
        };
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc(Layout::from_size_align(n, 8).unwrap()) };
        assert!(!p.is_null());
        // The size lives in the block so any thread can free it.
        // SAFETY: at least 16 bytes.
        unsafe { p.cast::<usize>().write(n) };
        p
    }
    fn free(p: *mut u8) {
        if !p.is_null() {
            // SAFETY: a block from `alloc` with its size in front.
            unsafe {
                std::alloc::dealloc(
                    p,
                    Layout::from_size_align(p.cast::<usize>().read(), 8).unwrap(),
                )
            };
        }
    }
    let t = Instant::now();
    let hs: Vec<_> = (0..THREADS)
        .map(|ti| {
            std::thread::spawn(move || {
                let mut rng = Rng(0xC0FFEE + ti as u64);
                let mut slots: Vec<*mut u8> = (0..SLOTS).map(|_| alloc(&mut rng)).collect();
                for _ in 0..ops {
                    let r = rng.next();
                    let p = alloc(&mut rng);
                    if r.is_multiple_of(8) {
                        free(BOX[(r >> 8) as usize % MAILBOX].swap(p, Ordering::AcqRel));
                    } else {
                        let i = (r >> 8) as usize % SLOTS;
                        free(std::mem::replace(&mut slots[i], p));
                    }
                }
                for p in slots {
                    free(p);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    for b in &BOX {
        free(b.swap(std::ptr::null_mut(), Ordering::AcqRel));
    }
    println!("RESULT mops={}", (THREADS * ops) as f64 / secs / 1e6);
}

fn parse(line: &str) -> Vec<(String, f64)> {
    line.trim_start_matches("RESULT ")
        .split_whitespace()
        .filter_map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.parse().unwrap_or(f64::NAN)))
        })
        .collect()
}

fn run_child(contender: &str, workload: &str, iters: usize) -> Vec<(String, f64)> {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--child", workload, &iters.to_string()])
        .env("KEEL_BENCH_ALLOC", contender);
    let out = cmd.output().expect("spawn child");
    let s = String::from_utf8_lossy(&out.stdout);
    match s.lines().find(|l| l.starts_with("RESULT")) {
        Some(l) => parse(l),
        None => panic!(
            "{contender} {workload} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

const USAGE: &str = "usage: heap [--rounds R] [--iters N] [query|query-xt|churn]...";

const WORKLOADS: [&str; 3] = ["query", "query-xt", "churn"];

/// What the command line asks for: one child sample (`--child WORKLOAD N`,
/// as `run_child` spawns it), or the driver's rounds, iterations and
/// workloads.
enum Args {
    Child(String, usize),
    Drive(usize, usize, Vec<String>),
}

fn args() -> Args {
    use lexopt::prelude::*;
    cli(USAGE, |args| {
        let (mut rounds, mut iters, mut workloads) = (3, 200, Vec::new());
        while let Some(arg) = args.next()? {
            match arg {
                Long("child") => {
                    let w = args.value()?.string()?;
                    if !WORKLOADS.contains(&w.as_str()) {
                        return Err(format!("unknown workload {w:?}").into());
                    }
                    return Ok(Args::Child(w, args.value()?.parse()?));
                }
                Long("rounds") => rounds = args.value()?.parse()?,
                Long("iters") => iters = args.value()?.parse()?,
                Long("help") | Short('h') => help(USAGE),
                Value(w) => {
                    let w = w.string()?;
                    if !WORKLOADS.contains(&w.as_str()) {
                        return Err(format!("unknown workload {w:?}").into());
                    }
                    workloads.push(w);
                }
                _ => return Err(arg.unexpected()),
            }
        }
        if rounds == 0 || iters == 0 {
            return Err("--rounds and --iters must be at least 1".into());
        }
        Ok(Args::Drive(rounds, iters, workloads))
    })
}

fn main() {
    let (rounds, iters, mut workloads) = match args() {
        Args::Child(w, n) => {
            if std::env::var("KEEL_BENCH_ALLOC").as_deref() == Ok("keel-n1") {
                keel_heap::configure(keel_heap::Options {
                    purge_every: 1,
                    min_free_gcs: 0,
                    release_budget: usize::MAX,
                    ..keel_heap::Options::default()
                });
            }
            match w.as_str() {
                "query" => child_query(n, false),
                "query-xt" => child_query(n, true),
                _ => child_churn(n),
            }
            return;
        }
        Args::Drive(r, i, w) => (r, i, w),
    };
    if workloads.is_empty() {
        workloads = WORKLOADS.map(String::from).to_vec();
    }
    println!(
        "# keel-heap bench: {rounds} rounds, contenders interleaved, one fresh process per sample"
    );
    for w in &workloads {
        let n = if w == "churn" { 2_000_000 } else { iters };
        let mut samples: Vec<Vec<Vec<(String, f64)>>> = vec![Vec::new(); CONTENDERS.len()];
        for _ in 0..rounds {
            for (i, c) in CONTENDERS.iter().enumerate() {
                samples[i].push(run_child(c, w, n));
            }
        }
        let med = |i: usize, k: &str| -> f64 {
            let mut v: Vec<f64> = samples[i]
                .iter()
                .filter_map(|s| s.iter().find(|(kk, _)| kk == k).map(|x| x.1))
                .collect();
            median(&mut v)
        };
        let mi = CONTENDERS.len() - 1;
        let mib = |b: f64| {
            if b.is_nan() {
                "-".to_string()
            } else {
                format!("{:.1}", b / (1 << 20) as f64)
            }
        };
        println!(
            "\n## {w} ({n} {})",
            if w == "churn" {
                "ops per thread"
            } else {
                "iterations"
            }
        );
        if w == "churn" {
            let rows: Vec<Vec<String>> = (0..CONTENDERS.len())
                .map(|i| {
                    vec![
                        CONTENDERS[i].to_string(),
                        format!("{:.2}", med(i, "mops")),
                        format!("{:.2}", med(i, "mops") / med(mi, "mops")),
                    ]
                })
                .collect();
            print_table(&["allocator", "Mops/s", "vs mimalloc"], &rows);
        } else {
            let rows: Vec<Vec<String>> = (0..CONTENDERS.len())
                .map(|i| {
                    vec![
                        CONTENDERS[i].to_string(),
                        format!("{:.2}", med(i, "ms")),
                        format!("{:.2}", med(mi, "ms") / med(i, "ms")),
                        format!("{:.2}", med(i, "cpu_ms")),
                        format!("{:.2}", med(mi, "cpu_ms") / med(i, "cpu_ms")),
                        format!("{:.0}", med(i, "faults")),
                        mib(med(i, "peak")),
                        format!("{:.2}", med(i, "peak") / med(mi, "peak")),
                        mib(med(i, "base")),
                        mib(med(i, "after_loop")),
                        mib(med(i, "after_release")),
                        mib(med(i, "after_decay")),
                    ]
                })
                .collect();
            print_table(
                &[
                    "allocator",
                    "wall ms/iter",
                    "wall speed-up vs mimalloc",
                    "CPU ms/iter",
                    "CPU speed-up vs mimalloc",
                    "minor faults/iter",
                    "peak RSS MiB",
                    "peak vs mimalloc",
                    "RSS before MiB",
                    "RSS after loop MiB",
                    "after release_pages MiB",
                    "after idle decay MiB",
                ],
                &rows,
            );
        }
    }
}
