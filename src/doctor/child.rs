//! One measurement, run in a fresh child process (`keel doctor --child
//! ID`): the pool, its binding and the pages of its buffers are all
//! process-wide, so one configuration's state must not leak into the next.
//!
//! The child prints one JSON object on stdout and exits 0; anything else
//! (a crash, a hang, no answer) is the parent's to report.

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use keel_rt::heap::{self, Placement};
use keel_rt::kernels::{agg, gather, hash};
use keel_rt::pool::settings::Settings;
use keel_rt::pool::{Binding, Pool};
use keel_rt::topology::{CacheKind, Topology};
use serde_json::{Value, json};

use super::recommend::{Bind, Kind};

/// The hidden variable a test sets to make a child misbehave: `crash:PAT`
/// aborts the children whose ID matches `PAT`, `hang:PAT` makes them sleep
/// forever; several are separated by commas. `PAT` is an ID's first
/// `/`-separated parts, any of them `*` (`spin/*/10us`, `gather`).
pub const INJECT: &str = "KEEL_DOCTOR_INJECT";

/// Whether `id` matches the pattern `pat` (see [`INJECT`]).
fn matches(pat: &str, id: &str) -> bool {
    let (p, i): (Vec<&str>, Vec<&str>) = (pat.split('/').collect(), id.split('/').collect());
    !pat.is_empty() && p.len() <= i.len() && p.iter().zip(&i).all(|(p, i)| *p == "*" || p == i)
}

/// Page placement of a placement run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The kernel's default: pages on the node of the thread that first
    /// writes them (here the one that fills the buffer).
    Default,
    /// Pages interleaved over the usable nodes.
    Interleave,
}

impl Place {
    /// Both, the default first.
    pub const ALL: [Place; 2] = [Place::Default, Place::Interleave];

    /// The `KEEL_PLACEMENT` value.
    pub const fn name(self) -> &'static str {
        match self {
            Place::Default => "default",
            Place::Interleave => "interleave",
        }
    }
}

/// What one child measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Job {
    /// Throughput of `kind` at `width` hands, with a binding and a page
    /// placement.
    Work {
        /// The kernel.
        kind: Kind,
        /// Hands, the calling thread included.
        width: usize,
        /// Worker binding.
        bind: Bind,
        /// Page placement of the buffers.
        place: Place,
    },
    /// Round trip of small batches and idle CPU at one spin window.
    Spin {
        /// Hands.
        width: usize,
        /// The spin window, µs.
        window_us: u64,
    },
}

impl Job {
    /// The ID the child is started with and failures are reported by:
    /// `scan/w4/none/default`, `spin/w4/100us`.
    pub fn id(&self) -> String {
        match *self {
            Job::Work {
                kind,
                width,
                bind,
                place,
            } => format!("{}/w{width}/{}/{}", kind.name(), bind.name(), place.name()),
            Job::Spin { width, window_us } => format!("spin/w{width}/{window_us}us"),
        }
    }

    /// The job an ID names.
    pub fn parse(id: &str) -> Result<Job, String> {
        let bad = || format!("not a measurement ID: {id:?}");
        let parts: Vec<&str> = id.split('/').collect();
        let width = |s: &str| -> Result<usize, String> {
            s.strip_prefix('w')
                .and_then(|n| n.parse().ok())
                .filter(|&n| n >= 1)
                .ok_or_else(bad)
        };
        match parts.as_slice() {
            ["spin", w, us] => Ok(Job::Spin {
                width: width(w)?,
                window_us: us
                    .strip_suffix("us")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(bad)?,
            }),
            [k, w, b, p] => Ok(Job::Work {
                kind: *Kind::ALL.iter().find(|x| x.name() == *k).ok_or_else(bad)?,
                width: width(w)?,
                bind: *Bind::ALL.iter().find(|x| x.name() == *b).ok_or_else(bad)?,
                place: *Place::ALL.iter().find(|x| x.name() == *p).ok_or_else(bad)?,
            }),
            _ => Err(bad()),
        }
    }
}

/// How long and how large the child measures.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Timed repetitions run at least this long (after one untimed one).
    pub time: Duration,
    /// The scan and gather buffers hold at least this many times the
    /// last-level cache.
    pub cache_multiple: u64,
    /// And at least this many bytes.
    pub min_bytes: u64,
    /// Random indices a gather repetition fetches, at most.
    pub gather_rows: usize,
}

/// A child's start: process, topology, pool (about 20 ms measured).
const START: Duration = Duration::from_millis(30);
/// Writing a fresh buffer, page faults included: 0.8 to 2 ns a byte
/// measured on a loaded 2-core Zen 4, single-threaded as [`column()`] does.
const FILL_NS_PER_BYTE: f64 = 1.5;

impl Budget {
    /// The budget of a full run or of `--quick`.
    pub fn new(quick: bool) -> Budget {
        if quick {
            Budget {
                time: Duration::from_millis(200),
                cache_multiple: 2,
                min_bytes: 32 << 20,
                gather_rows: 2 << 20,
            }
        } else {
            Budget {
                time: Duration::from_millis(700),
                cache_multiple: 4,
                min_bytes: 128 << 20,
                gather_rows: 8 << 20,
            }
        }
    }

    /// Bytes of the scan and gather column on a machine with `llc` bytes
    /// of last-level cache.
    pub fn column_bytes(&self, llc: u64) -> u64 {
        llc.saturating_mul(self.cache_multiple).max(self.min_bytes)
    }

    /// About how long a child measuring `kind` runs on a machine with `llc`
    /// bytes of last-level cache: start-up, the buffers it writes, then
    /// the timed repetitions. The buffers grow with the cache, so on a
    /// large server they, not the timed part, dominate.
    pub fn child_time(&self, kind: Kind, llc: u64) -> Duration {
        let bytes = self.column_bytes(llc);
        let written = match kind {
            Kind::Scan => bytes,
            // The indices (4 B a row) and the output (8 B), and about as
            // much again for the untimed repetition's random reads.
            Kind::Gather => {
                let rows = (bytes / 8).min(self.gather_rows as u64);
                bytes + 24 * rows
            }
            Kind::Compute => 0,
        };
        START + self.time + Duration::from_secs_f64(written as f64 * FILL_NS_PER_BYTE * 1e-9)
    }

    /// About how long a spin child runs.
    pub fn spin_time(&self) -> Duration {
        START + self.time * 2
    }
}

/// Runs the child `id` and returns the JSON it prints.
pub fn run(id: &str, quick: bool) -> Result<Value, String> {
    let job = Job::parse(id)?;
    obey_injection(id);
    let budget = Budget::new(quick);
    let topology = Topology::detect();
    match job {
        Job::Work {
            kind,
            width,
            bind,
            place,
        } => work(&topology, kind, width, bind, place, budget),
        Job::Spin { width, window_us } => spin(&topology, width, window_us, budget),
    }
}

/// Crashes or hangs on request (tests of the parent's reporting).
fn obey_injection(id: &str) {
    let Ok(spec) = std::env::var(INJECT) else {
        return;
    };
    for item in spec.split(',') {
        match item.split_once(':') {
            Some(("crash", p)) if matches(p, id) => std::process::abort(),
            Some(("hang", p)) if matches(p, id) => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            _ => {}
        }
    }
}

fn pool(t: &Topology, width: usize, bind: Bind, spin: Option<Duration>) -> Result<Pool, String> {
    let binding = match bind {
        Bind::None => Binding::None,
        Bind::Close => Binding::Close,
        Bind::Spread => Binding::Spread,
    };
    // Empty settings: nothing from the environment or a config file may
    // change what this ID measures.
    let mut b = Pool::builder()
        .settings(Settings::new())
        .width(width)
        .binding(binding)
        .topology(t.clone());
    if let Some(s) = spin {
        b = b.spin_window(s);
    }
    b.build().map_err(|e| format!("pool: {e}"))
}

/// The total size of the last-level data caches.
pub fn llc_bytes(t: &Topology) -> u64 {
    let data = || {
        t.caches()
            .iter()
            .filter(|c| c.kind != CacheKind::Instruction)
    };
    let level = data().map(|c| c.level).max().unwrap_or(0);
    // Saturating: a recorded size may be absurd (the parser takes what
    // sysfs says), and a sum of two must not overflow.
    data()
        .filter(|c| c.level == level)
        .fold(0u64, |t, c| t.saturating_add(c.size_bytes))
}

/// A column of `n` values whose pages are placed as asked before they are
/// first written; returns it with what placement did.
fn column(n: usize, placement: Place, nodes: &[u32]) -> (Vec<u64>, String) {
    let mut v: Vec<u64> = Vec::with_capacity(n);
    let outcome = match placement {
        // Leave the process's policy alone: first touch decides.
        Place::Default => "first touch".to_string(),
        Place::Interleave => {
            heap::place(v.spare_capacity_mut(), Placement::Interleave, nodes).to_string()
        }
    };
    // Written by this one thread, as a loader would: under the default
    // policy every page lands on its node.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    v.extend((0..n).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }));
    (v, outcome)
}

/// Runs `rep` once untimed, then until the budget is spent (at least three
/// times); returns (median, first) throughput in units of `work` per second.
fn repeat(budget: Budget, work: f64, mut rep: impl FnMut()) -> (f64, f64) {
    let t0 = Instant::now();
    rep();
    let first = work / t0.elapsed().as_secs_f64();
    let mut rates = Vec::new();
    let start = Instant::now();
    while rates.len() < 3 || (start.elapsed() < budget.time && rates.len() < 1000) {
        let t = Instant::now();
        rep();
        rates.push(work / t.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() / 2], first)
}

fn work(
    t: &Topology,
    kind: Kind,
    width: usize,
    bind: Bind,
    place: Place,
    budget: Budget,
) -> Result<Value, String> {
    let pool = pool(t, width, bind, None)?;
    let failures = pool.binding_failures();
    let nodes: Vec<u32> = t.numa_nodes().iter().map(|n| n.os_index).collect();
    let bytes = budget.column_bytes(llc_bytes(t));
    let rows = (bytes / 8) as usize;
    let sink = AtomicU64::new(0);
    let (value, first, placed) = match kind {
        Kind::Scan => {
            let (col, placed) = column(rows, place, &nodes);
            let (v, f) = repeat(budget, bytes as f64 / 1e9, || {
                pool.for_each_morsel(col.len(), 1 << 16, |r| {
                    let s = agg::sum(&col[r]);
                    sink.fetch_add(s, Ordering::Relaxed);
                });
            });
            (v, f, placed)
        }
        Kind::Gather => {
            let (col, placed) = column(rows, place, &nodes);
            let n = rows.min(budget.gather_rows);
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            let bound = col.len().min(u32::MAX as usize) as u64;
            let idx: Vec<u32> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % bound) as u32
                })
                .collect();
            const MORSEL: usize = 1 << 14;
            let mut out = vec![0u64; n];
            let outs: Vec<Mutex<&mut [u64]>> = out.chunks_mut(MORSEL).map(Mutex::new).collect();
            let (v, f) = repeat(budget, n as f64 / 1e6, || {
                pool.run(outs.len(), |i| {
                    let mut o = outs[i].lock().unwrap_or_else(|e| e.into_inner());
                    let ix = &idx[i * MORSEL..i * MORSEL + o.len()];
                    if gather::gather(&col, ix, &mut o).is_ok() {
                        sink.fetch_add(o[0], Ordering::Relaxed);
                    }
                });
            });
            (v, f, placed)
        }
        Kind::Compute => {
            // Each job hashes its own block of keys many times (8 KiB in,
            // 8 KiB out: in the L1 cache), so the core, not memory, sets
            // the pace.
            const KEYS: usize = 1024;
            const PASSES: usize = 256;
            let jobs = width * 16;
            let blocks: Vec<Mutex<(Vec<u64>, Vec<u64>)>> = (0..jobs)
                .map(|j| {
                    Mutex::new((
                        (0..KEYS as u64).map(|k| k ^ (j as u64) << 32).collect(),
                        vec![0; KEYS],
                    ))
                })
                .collect();
            let keys = (jobs * KEYS * PASSES) as f64;
            let (v, f) = repeat(budget, keys / 1e6, || {
                pool.run(jobs, |j| {
                    let mut b = blocks[j].lock().unwrap_or_else(|e| e.into_inner());
                    let (k, o) = &mut *b;
                    for pass in 0..PASSES {
                        if hash::hash_u64_column(k, pass as u64, o).is_ok() {
                            k[0] = o[KEYS - 1];
                        }
                    }
                    sink.fetch_add(o[0], Ordering::Relaxed);
                });
            });
            (v, f, "not placed".to_string())
        }
    };
    black_box(sink.load(Ordering::Relaxed));
    Ok(json!({
        "value": value,
        "first": first,
        "unit": kind.unit(),
        "bytes": bytes,
        "placement": placed,
        "binding_failures": failures.len(),
    }))
}

/// Process and calling-thread CPU time.
fn cpu_times() -> (Duration, Duration) {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's
        // duration; the clock IDs are the POSIX constants.
        let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
        if rc != 0 {
            return Duration::ZERO;
        }
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    };
    (
        read(libc::CLOCK_PROCESS_CPUTIME_ID),
        read(libc::CLOCK_THREAD_CPUTIME_ID),
    )
}

/// The gaps between batches: a short pause between two operators, a longer
/// one, and one longer than every window measured.
const GAPS_US: [u64; 3] = [20, 200, 2000];

fn spin(t: &Topology, width: usize, window_us: u64, budget: Budget) -> Result<Value, String> {
    let pool = pool(t, width, Bind::None, Some(Duration::from_micros(window_us)))?;
    let mut trips: Vec<Vec<f64>> = vec![Vec::new(); GAPS_US.len()];
    let (p0, t0) = cpu_times();
    let start = Instant::now();
    let mut i = 0;
    while start.elapsed() < budget.time * 2 || i < 3 * GAPS_US.len() {
        let g = i % GAPS_US.len();
        std::thread::sleep(Duration::from_micros(GAPS_US[g]));
        let s = Instant::now();
        pool.run(width, |j| {
            black_box(j);
        });
        trips[g].push(s.elapsed().as_secs_f64() * 1e6);
        i += 1;
    }
    let wall = start.elapsed();
    let (p1, t1) = cpu_times();
    // The workers' CPU: the process's less this (submitting) thread's.
    let workers = (p1 - p0).saturating_sub(t1 - t0);
    let medians: Vec<f64> = trips
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    let round_trip = medians.iter().sum::<f64>() / medians.len() as f64;
    Ok(json!({
        "round_trip_us": round_trip,
        "idle_cpus": workers.as_secs_f64() / wall.as_secs_f64(),
        "gaps_us": GAPS_US,
        "round_trip_by_gap_us": medians,
        "batches": i,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injection_patterns() {
        assert!(matches("spin/*/10us", "spin/w2/10us"));
        assert!(!matches("spin/*/10us", "spin/w2/100us"));
        assert!(matches("gather", "gather/w4/none/default"));
        assert!(!matches("gather", "scan/w4/none/default"));
        assert!(!matches("", "scan/w4/none/default"));
        assert!(!matches("scan/w4/none/default/x", "scan/w4/none/default"));
    }

    /// The estimate counts the buffers, which grow with the cache: on a
    /// server with 768 MiB of L3 a full run's scan child writes 3 GiB
    /// before its timed part starts.
    #[test]
    fn the_estimate_grows_with_the_buffers() {
        let full = Budget::new(false);
        let small = full.child_time(Kind::Scan, 32 << 20);
        let large = full.child_time(Kind::Scan, 768 << 20);
        assert_eq!(full.column_bytes(768 << 20), 3 << 30);
        assert!(large >= full.time + Duration::from_secs(3), "{large:?}");
        assert!(small < full.time + Duration::from_millis(400), "{small:?}");
        assert!(full.child_time(Kind::Gather, 32 << 20) > small);
        assert_eq!(full.child_time(Kind::Compute, 768 << 20), START + full.time);
        let quick = Budget::new(true);
        assert!(quick.child_time(Kind::Scan, 32 << 20) < small);
        assert_eq!(quick.spin_time(), START + quick.time * 2);
    }

    #[test]
    fn ids_round_trip() {
        for job in [
            Job::Work {
                kind: Kind::Gather,
                width: 16,
                bind: Bind::Spread,
                place: Place::Interleave,
            },
            Job::Spin {
                width: 4,
                window_us: 1000,
            },
        ] {
            assert_eq!(Job::parse(&job.id()), Ok(job));
        }
        for bad in [
            "",
            "scan",
            "scan/w0/none/default",
            "scan/4/none/default",
            "spin/w2/10",
            "sort/w1/none/default",
        ] {
            assert!(Job::parse(bad).is_err(), "{bad}");
        }
    }
}
