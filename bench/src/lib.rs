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
