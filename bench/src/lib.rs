//! Shared measurement helpers for keel's side-by-side benchmarks.
//!
//! Every benchmark measures keel and its anchors in the same process,
//! interleaved round by round (A B C A B C ...), so that drift on a shared,
//! noisy machine hits every contender alike. Figures are medians over rounds;
//! comparisons are ratios of medians.

use std::time::{Duration, Instant};

/// One contender: a name and a closure that runs one measured sample and
/// returns the figure for it (seconds, ns per op, GB/s: the caller decides).
pub struct Contender<'a> {
    /// Name printed in the table.
    pub name: &'a str,
    /// Runs one sample and returns its figure.
    pub sample: Box<dyn FnMut() -> f64 + 'a>,
}

impl<'a> Contender<'a> {
    /// A contender from a name and a sampling closure.
    pub fn new(name: &'a str, sample: impl FnMut() -> f64 + 'a) -> Self {
        Contender {
            name,
            sample: Box::new(sample),
        }
    }
}

/// Runs `rounds` rounds; each round takes one sample of every contender in
/// turn (after one unrecorded warm-up round). Returns the median per contender,
/// in the order given.
pub fn interleave(rounds: usize, contenders: &mut [Contender<'_>]) -> Vec<f64> {
    for c in contenders.iter_mut() {
        (c.sample)();
    }
    let mut samples = vec![Vec::with_capacity(rounds); contenders.len()];
    for _ in 0..rounds {
        for (i, c) in contenders.iter_mut().enumerate() {
            samples[i].push((c.sample)());
        }
    }
    samples.iter_mut().map(|s| median(s)).collect()
}

/// The median of `v` (sorted in place). NaN-free input expected; an empty
/// slice gives NaN.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Times `f` once and returns the elapsed wall time in seconds.
pub fn time_secs(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// Times `iters` calls of `f` and returns nanoseconds per call.
pub fn ns_per_iter(iters: u64, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

/// Process resource usage at one instant (`getrusage(RUSAGE_SELF)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// User plus system CPU time.
    pub cpu: Duration,
    /// Minor page faults so far.
    pub minor_faults: u64,
    /// Peak resident set size in bytes.
    pub max_rss_bytes: u64,
}

/// Reads this process's resource usage.
pub fn usage() -> Usage {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Usage {
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        minor_faults: ru.ru_minflt as u64,
        max_rss_bytes: ru.ru_maxrss as u64 * 1024,
    }
}

/// Current resident set size in bytes, from `/proc/self/statm`.
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

/// Prints a markdown table: a header row and then rows of cells.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    println!("| {} |", header.join(" | "));
    println!("|{}", "---|".repeat(header.len()));
    for r in rows {
        println!("| {} |", r.join(" | "));
    }
}

/// Prevents the optimizer from discarding `x`.
pub fn black_box<T>(x: T) -> T {
    std::hint::black_box(x)
}

/// Parses a bench program's command line with lexopt: `parse` walks the
/// arguments and returns the settings; an error (an unknown argument, a
/// missing or malformed value) is printed with `usage` and the program
/// exits with status 2, so a typo never runs a long benchmark with
/// defaults. `parse` answers `--help` by calling [`help`].
pub fn cli<T>(
    usage: &str,
    parse: impl FnOnce(&mut lexopt::Parser) -> Result<T, lexopt::Error>,
) -> T {
    let mut args = lexopt::Parser::from_env();
    match parse(&mut args) {
        Ok(t) => t,
        Err(e) => {
            let bin = args
                .bin_name()
                .and_then(|b| std::path::Path::new(b).file_name()?.to_str())
                .unwrap_or("bench");
            eprintln!("{bin}: {e}\n{usage}");
            std::process::exit(2)
        }
    }
}

/// Prints `usage` on stdout and exits with status 0 (`--help`).
pub fn help(usage: &str) -> ! {
    println!("{usage}");
    std::process::exit(0)
}

/// The bandwidth yardstick: a read of every byte of `v`, xor-folded into
/// eight independent accumulators (no add chain to wait on), with
/// `BITS`-wide loads: 512 needs AVX-512, 256 AVX2; without them, a fold of
/// plain bytes. Benches time both widths over the buffers a kernel reads and
/// take the faster: on some CPUs (an Intel family 6 model 167 guest) the
/// 256-bit loads stream DRAM 1.1-1.2x faster, in L1 and L2 the 512-bit ones.
pub fn read_pass<const BITS: usize>(v: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        #[target_feature(enable = "avx512f")]
        unsafe fn r512(v: &[u8]) -> u64 {
            let mut acc = [_mm512_setzero_si512(); 8];
            let mut ch = v.chunks_exact(512);
            for c in &mut ch {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: the chunk holds 512 bytes.
                    let x = unsafe { _mm512_loadu_si512(c.as_ptr().add(64 * j).cast()) };
                    *a = _mm512_xor_si512(*a, x);
                }
            }
            let s = acc
                .iter()
                .fold(_mm512_setzero_si512(), |a, &b| _mm512_xor_si512(a, b));
            _mm512_reduce_add_epi64(s) as u64 ^ fold(ch.remainder())
        }
        #[target_feature(enable = "avx2")]
        unsafe fn r256(v: &[u8]) -> u64 {
            let mut acc = [_mm256_setzero_si256(); 8];
            let mut ch = v.chunks_exact(256);
            for c in &mut ch {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: the chunk holds 256 bytes.
                    let x = unsafe { _mm256_loadu_si256(c.as_ptr().add(32 * j).cast()) };
                    *a = _mm256_xor_si256(*a, x);
                }
            }
            let s = acc
                .iter()
                .fold(_mm256_setzero_si256(), |a, &b| _mm256_xor_si256(a, b));
            (_mm256_extract_epi64::<0>(s) ^ _mm256_extract_epi64::<3>(s)) as u64
                ^ fold(ch.remainder())
        }
        if BITS == 512 && is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512 F (just checked).
            return unsafe { r512(v) };
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (just checked).
            return unsafe { r256(v) };
        }
    }
    fold(v)
}

/// `read_pass`'s fallback and tail: every byte folded in.
fn fold(v: &[u8]) -> u64 {
    v.iter().fold(0u64, |a, &b| a.rotate_left(8) ^ u64::from(b))
}

/// The bytes of a slice of plain numbers (no padding, every bit pattern
/// initialised), for [`read_pass`].
pub fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: the slice's memory is initialised and `T` is a plain number
    // type at every call site (the benches' columns); `u8` has no
    // alignment; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}
