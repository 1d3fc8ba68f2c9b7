//! keel-pool against rayon (`ThreadPool::install` + `par_iter`, and
//! `ThreadPool::scope`) and `std::thread::scope`, interleaved in one run:
//! (a) round-trip latency of k empty jobs from a thread outside the pool,
//! (b) a morsel scan (sum of 16M i64 in 64 Ki morsels) at 1 and 2 workers,
//! (c) the ramp from submit to the start of the last job,
//! (d) idle cost: CPU the pool's own threads burn in the 200 ms after a
//!     burst of 1,000 small batches (against keel's bound, the spin window
//!     times the spinners it allows), and CPU per batch when batches come
//!     every 1 ms; then keel's wakes and lock holds per batch.
//!
//! `cargo run --release --manifest-path bench/Cargo.toml --bin pool [-- --quick]`
//!
//! With `--widths 1,2,4,8,12,16` it measures scaling instead: for each width
//! a keel pool and a rayon pool of that many hands, interleaved, on a
//! bandwidth-bound morsel scan, a compute-bound morsel loop, the round trip
//! of one batch of `width` empty jobs, the ramp of `width` jobs of 50 µs,
//! and the idle cost after a burst against keel's bound. On a 16-core host
//! that one command is the whole 16-core table.

use keel_bench::{Contender, black_box, cli, help, interleave, print_table, usage};
use keel_pool::{MAX_SPINNERS, Pool};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Hands per batch for every contender: the machine's default keel width
/// (physical cores), and the same number of rayon threads.
fn width() -> usize {
    keel_topology::Topology::detect()
        .workers_for(keel_topology::Work::Bandwidth)
        .max(2)
}

/// A job as the ramp measurement hands it to each contender.
type Job<'a> = dyn Fn(usize) + Sync + 'a;

/// The thread ids of this process's threads whose name starts with
/// `prefix` (from `/proc/self/task/*/comm`). Listed before a measurement,
/// so that reading their clocks during it costs only system calls.
fn threads_named(prefix: &str) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm"))
                .is_ok_and(|name| name.starts_with(prefix))
        })
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// CPU µs the threads `tids` have used so far, from their per-thread CPU
/// clocks (exact, and current even for a thread that is running now, which
/// `/proc/.../schedstat` is not). A thread's clock id is Linux's
/// `make_thread_cpuclock(tid, CPUCLOCK_SCHED)`.
fn threads_cpu_us(tids: &[libc::pid_t]) -> f64 {
    let mut ns = 0u64;
    for &tid in tids {
        let clock = ((!tid) << 3) | 6;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; a bad clock id is an
        // error return, not undefined behaviour.
        if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
            ns += ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        }
    }
    ns as f64 / 1e3
}

/// The calling thread's id.
fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// CPU µs the threads `tids` burn in the 200 ms after `burst` ran 1,000
/// times.
fn idle_after_burst(burst: &dyn Fn(), tids: &[libc::pid_t]) -> f64 {
    for _ in 0..1000 {
        burst();
    }
    let c0 = threads_cpu_us(tids);
    std::thread::sleep(Duration::from_millis(200));
    threads_cpu_us(tids) - c0
}

/// The idle-cost bound keel promises: the spin window times the workers
/// allowed to spin at once.
fn idle_bound_us(pool: &Pool) -> f64 {
    pool.config().spin.as_secs_f64() * 1e6 * MAX_SPINNERS.min(pool.workers()) as f64
}

/// A rayon pool of `n` threads named `rayon-pool-{i}`, so its threads'
/// CPU can be read like keel's.
fn rayon_pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("rayon-pool-{i}"))
        .build()
        .expect("rayon pool")
}

/// Submit to the start of the last job, in µs, median of 50 batches of
/// `run`, each job busy for 50 µs so one hand cannot run them all; the
/// batches come back to back (`idle` zero) or after `idle` asleep.
fn ramp(idle: Duration, run: &dyn Fn(&Job)) -> f64 {
    let busy = |t: Instant| {
        while t.elapsed() < Duration::from_micros(50) {
            std::hint::spin_loop();
        }
    };
    let mut v = Vec::new();
    for _ in 0..50 {
        std::thread::sleep(idle);
        let last = AtomicU64::new(0);
        let t0 = Instant::now();
        run(&|_| {
            let s = Instant::now();
            last.fetch_max(s.duration_since(t0).as_nanos() as u64, Ordering::Relaxed);
            busy(s);
        });
        v.push(last.into_inner() as f64 / 1e3);
    }
    keel_bench::median(&mut v)
}

/// keel's wakes and lock holds per batch between two stats snapshots.
fn per_batch(a: keel_pool::Stats, b: keel_pool::Stats) -> (f64, f64) {
    let n = (b.batches - a.batches).max(1) as f64;
    (
        (b.wakes - a.wakes) as f64 / n,
        (b.lock_acquisitions - a.lock_acquisitions) as f64 / n,
    )
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.1}", a / b)
}

const USAGE: &str = "usage: pool [--quick] [--widths 1,2,4,...]";

/// The command line: `--quick` (fewer rounds) and `--widths 1,2,4` (the
/// scaling table at those widths instead of the default one).
fn args() -> (bool, Option<Vec<usize>>) {
    use lexopt::prelude::*;
    cli(USAGE, |args| {
        let (mut quick, mut widths) = (false, None);
        while let Some(arg) = args.next()? {
            match arg {
                Long("quick") => quick = true,
                Long("widths") => {
                    let list = args.value()?.string()?;
                    let w: Result<Vec<usize>, _> = list.split(',').map(str::parse).collect();
                    match w {
                        Ok(w) if !w.is_empty() && !w.contains(&0) => widths = Some(w),
                        _ => {
                            return Err(format!(
                                "--widths takes counts of at least 1 such as 1,2,4, not {list:?}"
                            )
                            .into());
                        }
                    }
                }
                Long("help") | Short('h') => help(USAGE),
                _ => return Err(arg.unexpected()),
            }
        }
        Ok((quick, widths))
    })
}

/// A few rounds of a 64-bit mixer: work that touches no memory, so only
/// the scheduling and the hands limit its scaling.
fn mix(mut x: u64) -> u64 {
    for _ in 0..8 {
        x ^= x >> 31;
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    x
}

/// The morsel scans' column of `n` rows and its wrapping sum.
fn scan_data(n: usize) -> (Vec<i64>, i64) {
    let data: Vec<i64> = (0..n as i64)
        .map(|i| i.wrapping_mul(0x9E37_79B9) >> 7)
        .collect();
    let sum = fold_sum(&data);
    (data, sum)
}

/// The wrapping sum every scan contender computes over its morsel.
fn fold_sum(v: &[i64]) -> i64 {
    v.iter().copied().fold(0i64, i64::wrapping_add)
}

/// Scaling at each width in `widths`: keel and rayon pools of `w` hands,
/// interleaved round by round, medians over `rounds`.
fn scaling(widths: &[usize], quick: bool) {
    let rounds = if quick { 3 } else { 9 };
    let n = if quick { 1 << 24 } else { 64 << 20 };
    let morsel = 64 * 1024;
    let (data, expect) = scan_data(n);
    let cn: usize = if quick { 1 << 22 } else { 1 << 25 };
    let cexpect = (0..cn as u64).map(mix).fold(0u64, u64::wrapping_add);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "scaling: scan = sum of {} Mi i64 ({} MiB) in {morsel}-row morsels; compute = 8 mixer rounds on each of {} Mi u64 in {morsel}-item morsels; round trip = one batch of `width` empty jobs; medians of {rounds} interleaved rounds; loadavg {}",
        n >> 20,
        (n * 8) >> 20,
        cn >> 20,
        load.trim()
    );
    let mut rows = Vec::new();
    let mut rows2 = Vec::new();
    let mut base = [0.0f64; 4];
    for &w in widths {
        let keel = Pool::builder().width(w).build().expect("keel pool");
        let rp = rayon_pool(w);
        let ms = |f: &dyn Fn()| keel_bench::time_secs(f) * 1e3;
        let keel_scan = || {
            let sum = AtomicU64::new(0);
            keel.for_each_morsel(data.len(), morsel, |r| {
                let s = fold_sum(&data[r]);
                sum.fetch_add(s as u64, Ordering::Relaxed);
            });
            assert_eq!(sum.into_inner() as i64, expect);
        };
        let rayon_scan = || {
            let s: i64 = rp.install(|| {
                data.par_chunks(morsel)
                    .map(fold_sum)
                    .reduce(|| 0, i64::wrapping_add)
            });
            assert_eq!(s, expect);
        };
        let keel_compute = || {
            let sum = AtomicU64::new(0);
            keel.for_each_morsel(cn, morsel, |r| {
                let s = r.map(|i| mix(i as u64)).fold(0u64, u64::wrapping_add);
                sum.fetch_add(s, Ordering::Relaxed);
            });
            assert_eq!(sum.into_inner(), cexpect);
        };
        let rayon_compute = || {
            let s: u64 = rp.install(|| {
                (0..cn.div_ceil(morsel))
                    .into_par_iter()
                    .map(|m| {
                        (m * morsel..((m + 1) * morsel).min(cn))
                            .map(|i| mix(i as u64))
                            .fold(0u64, u64::wrapping_add)
                    })
                    .reduce(|| 0, u64::wrapping_add)
            });
            assert_eq!(s, cexpect);
        };
        let iters = if quick { 1_000 } else { 10_000 };
        let s0 = keel.stats();
        let mut cs = vec![
            Contender::new("keel scan", || ms(&keel_scan)),
            Contender::new("rayon scan", || ms(&rayon_scan)),
            Contender::new("keel compute", || ms(&keel_compute)),
            Contender::new("rayon compute", || ms(&rayon_compute)),
            Contender::new("keel round trip", || {
                keel_bench::ns_per_iter(iters, || {
                    keel.run(w, |i| {
                        black_box(i);
                    })
                })
            }),
            Contender::new("rayon round trip", || {
                keel_bench::ns_per_iter(iters, || {
                    rp.install(|| {
                        (0..w).into_par_iter().for_each(|i| {
                            black_box(i);
                        })
                    })
                })
            }),
        ];
        let m = interleave(rounds, &mut cs);
        drop(cs);
        let (wakes, locks) = per_batch(s0, keel.stats());
        // Ramp of `w` jobs of 50 µs (k = hands), back to back, and the idle
        // cost of each pool's own threads after a burst of `w`-wide batches.
        let keel_tids = threads_named("keel-pool");
        let rayon_tids = threads_named("rayon-pool");
        let burst_keel = || {
            keel.run(w, |i| {
                black_box(i);
            })
        };
        let burst_rayon = || {
            rp.install(|| {
                (0..w).into_par_iter().for_each(|i| {
                    black_box(i);
                })
            })
        };
        let keel_idle_max = std::cell::Cell::new(0.0f64);
        let mut cs = vec![
            Contender::new("keel ramp", || ramp(Duration::ZERO, &|f| keel.run(w, f))),
            Contender::new("rayon ramp", || {
                ramp(Duration::ZERO, &|f| {
                    rp.install(|| (0..w).into_par_iter().for_each(f))
                })
            }),
            Contender::new("keel idle", || {
                let us = idle_after_burst(&burst_keel, &keel_tids);
                keel_idle_max.set(keel_idle_max.get().max(us));
                us
            }),
            Contender::new("rayon idle", || idle_after_burst(&burst_rayon, &rayon_tids)),
        ];
        let r = interleave(if quick { 1 } else { 5 }, &mut cs);
        drop(cs);
        let worst = keel_idle_max.get();
        let bound = idle_bound_us(&keel);
        rows2.push(vec![
            w.to_string(),
            format!("{:.1}", r[0]),
            format!("{:.1}", r[1]),
            format!("{:.2}", r[0] / r[1]),
            format!("{:.0}", r[2]),
            format!("{:.0}", r[3]),
            format!("{bound:.0}"),
            if worst <= bound { "yes" } else { "no" }.to_string(),
            format!("{wakes:.2}"),
            format!("{locks:.2}"),
            keel.stats().spinners_high_water.to_string(),
        ]);
        if base[0] == 0.0 {
            base = [m[0], m[1], m[2], m[3]];
        }
        rows.push(vec![
            w.to_string(),
            format!("{:.2}", m[0]),
            format!("{:.2}", m[1]),
            format!("{:.2}", m[1] / m[0]),
            format!("{:.1} / {:.1}", base[0] / m[0], base[1] / m[1]),
            format!("{:.2}", m[2]),
            format!("{:.2}", m[3]),
            format!("{:.2}", m[3] / m[2]),
            format!("{:.1} / {:.1}", base[2] / m[2], base[3] / m[3]),
            format!("{:.0}", m[4]),
            format!("{:.0}", m[5]),
            format!("{:.2}", m[5] / m[4]),
        ]);
    }
    print_table(
        &[
            "width",
            "keel scan ms",
            "rayon scan ms",
            "rayon/keel",
            "scan speedup over first width, keel / rayon",
            "keel compute ms",
            "rayon compute ms",
            "rayon/keel",
            "compute speedup over first width, keel / rayon",
            "keel round trip ns",
            "rayon round trip ns",
            "rayon/keel",
        ],
        &rows,
    );
    println!();
    print_table(
        &[
            "width",
            "keel ramp µs",
            "rayon ramp µs",
            "keel/rayon",
            "keel idle CPU µs",
            "rayon idle CPU µs",
            "keel bound µs",
            "keel within bound, every round",
            "keel wakes / batch",
            "keel lock holds / batch",
            "keel spinners high water",
        ],
        &rows2,
    );
    println!(
        "ramp = submit to the start of the last of `width` jobs of 50 µs, back to back; idle = CPU of the pool's own threads in the 200 ms after 1,000 `width`-wide batches; bound = spin window x min({MAX_SPINNERS}, workers); wakes and lock holds per batch counted over the round-trip runs"
    );
}

fn main() {
    let (quick, widths) = args();
    if let Some(widths) = widths {
        scaling(&widths, quick);
        return;
    }
    let rounds = if quick { 3 } else { 11 };
    let w = width();
    let keel = Pool::builder().width(w).build().expect("keel pool");
    let rp = rayon_pool(w);
    let rp1 = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    // (b) compares 2 hands with 2 threads whatever the width.
    let rp2 = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "width {w} (keel: {} workers + the caller; rayon: {w} threads); spin window {:?}; loadavg at start: {}",
        keel.workers(),
        keel.config().spin,
        load.trim()
    );

    // (a) Round trip of k empty jobs from this (outside) thread.
    println!(
        "\n(a) round trip of a batch of k empty jobs, ns per batch (median of {rounds} rounds)"
    );
    let iters = if quick { 2_000 } else { 20_000 };
    let mut rows = Vec::new();
    for k in [1usize, 2, 4, 8] {
        let mut cs = vec![
            Contender::new("keel run", || {
                keel_bench::ns_per_iter(iters, || {
                    keel.run(k, |i| {
                        black_box(i);
                    })
                })
            }),
            Contender::new("rayon install+par_iter", || {
                keel_bench::ns_per_iter(iters / 4, || {
                    rp.install(|| {
                        (0..k).into_par_iter().for_each(|i| {
                            black_box(i);
                        })
                    })
                })
            }),
            Contender::new("rayon scope", || {
                keel_bench::ns_per_iter(iters / 4, || {
                    rp.scope(|s| {
                        for i in 0..k {
                            s.spawn(move |_| {
                                black_box(i);
                            });
                        }
                    })
                })
            }),
            Contender::new("std::thread::scope", || {
                keel_bench::ns_per_iter(iters / 100, || {
                    std::thread::scope(|s| {
                        for i in 0..k {
                            s.spawn(move || black_box(i));
                        }
                    })
                })
            }),
        ];
        let m = interleave(rounds, &mut cs);
        rows.push(vec![
            k.to_string(),
            format!("{:.0}", m[0]),
            format!("{:.0}", m[1]),
            format!("{:.0}", m[2]),
            format!("{:.0}", m[3]),
            ratio(m[1], m[0]),
            ratio(m[2], m[0]),
        ]);
    }
    print_table(
        &[
            "k",
            "keel ns",
            "rayon install ns",
            "rayon scope ns",
            "thread::scope ns",
            "rayon install / keel",
            "rayon scope / keel",
        ],
        &rows,
    );

    // (b) Morsel scan.
    let n = if quick { 1 << 22 } else { 16 << 20 };
    let morsel = 64 * 1024;
    let (data, expect) = scan_data(n);
    println!(
        "\n(b) sum of {} i64 in {morsel}-row morsels, ms (median of {rounds} rounds)",
        n
    );
    let keel_scan = |hands: usize| {
        let sum = AtomicU64::new(0);
        keel.batch()
            .width(hands)
            .for_each_morsel(data.len(), morsel, |r| {
                let s = fold_sum(&data[r]);
                sum.fetch_add(s as u64, Ordering::Relaxed);
            })
            .unwrap();
        assert_eq!(sum.into_inner() as i64, expect);
    };
    let rayon_scan = |p: &rayon::ThreadPool| {
        let s: i64 = p.install(|| {
            data.par_chunks(morsel)
                .map(fold_sum)
                .reduce(|| 0, i64::wrapping_add)
        });
        assert_eq!(s, expect);
    };
    let std_scan = |hands: usize| {
        let next = AtomicUsize::new(0);
        let sum = AtomicU64::new(0);
        let body = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) * morsel;
                if i >= data.len() {
                    break;
                }
                let s = fold_sum(&data[i..(i + morsel).min(data.len())]);
                sum.fetch_add(s as u64, Ordering::Relaxed);
            }
        };
        std::thread::scope(|s| {
            for _ in 1..hands {
                s.spawn(body);
            }
            body();
        });
        assert_eq!(sum.into_inner() as i64, expect);
    };
    let ms = |f: &dyn Fn()| keel_bench::time_secs(f) * 1e3;
    let mut cs = vec![
        Contender::new("keel 1", || ms(&|| keel_scan(1))),
        Contender::new("rayon 1", || ms(&|| rayon_scan(&rp1))),
        Contender::new("std 1", || ms(&|| std_scan(1))),
        Contender::new("keel 2", || ms(&|| keel_scan(2))),
        Contender::new("rayon 2", || ms(&|| rayon_scan(&rp2))),
        Contender::new("std 2", || ms(&|| std_scan(2))),
    ];
    let m = interleave(rounds, &mut cs);
    let speedups = [m[0] / m[3], m[1] / m[4], m[2] / m[5]];
    let best = speedups.iter().copied().fold(0.0, f64::max);
    print_table(
        &[
            "contender",
            "1 worker ms",
            "2 workers ms",
            "speedup",
            "speedup / best",
        ],
        &["keel", "rayon", "thread::scope"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                vec![
                    name.to_string(),
                    format!("{:.2}", m[i]),
                    format!("{:.2}", m[i + 3]),
                    format!("{:.2}", speedups[i]),
                    format!("{:.3}", speedups[i] / best),
                ]
            })
            .collect::<Vec<_>>(),
    );

    // (c) Ramp: submit to the start of the last of w jobs, each job busy for
    // 50 µs so one hand cannot run them all; hot (back to back) and cold
    // (after 2 ms idle, workers parked).
    println!(
        "\n(c) submit to last job start, {w} jobs of 50 µs, µs (median of {rounds} rounds of 50)"
    );
    let mut rows = Vec::new();
    for (label, idle) in [
        ("hot", Duration::ZERO),
        ("after 2 ms idle", Duration::from_millis(2)),
    ] {
        let mut cs = vec![
            Contender::new("keel", || ramp(idle, &|f| keel.run(w, f))),
            Contender::new("rayon install", || {
                ramp(idle, &|f| rp.install(|| (0..w).into_par_iter().for_each(f)))
            }),
            Contender::new("rayon scope", || {
                ramp(idle, &|f| {
                    rp.scope(|s| {
                        for i in 0..w {
                            s.spawn(move |_| f(i));
                        }
                    })
                })
            }),
            Contender::new("thread::scope", || {
                ramp(idle, &|f| {
                    std::thread::scope(|s| {
                        for i in 0..w {
                            s.spawn(move || f(i));
                        }
                    })
                })
            }),
        ];
        let r = if quick { 1 } else { 5 };
        let m = interleave(r, &mut cs);
        rows.push(vec![
            label.to_string(),
            format!("{:.1}", m[0]),
            format!("{:.1}", m[1]),
            format!("{:.1}", m[2]),
            format!("{:.1}", m[3]),
        ]);
    }
    print_table(
        &[
            "when",
            "keel µs",
            "rayon install µs",
            "rayon scope µs",
            "thread::scope µs",
        ],
        &rows,
    );

    // (d) Idle cost.
    println!(
        "\n(d) idle cost (median of {} rounds)",
        if quick { 1 } else { 5 }
    );
    let small: Vec<i64> = (0..4096).collect();
    let small_job = |i: usize| {
        black_box(small[i * 1024..(i + 1) * 1024].iter().sum::<i64>());
    };
    // CPU per batch when batches come every 1 ms: the submitting thread's
    // own clock plus the pool's threads' (`tids`), or, for thread::scope,
    // whose threads exit, the whole process (getrusage counts exited
    // threads exactly; a live thread running elsewhere it may count up to
    // a tick late, which is why the pools are read by their threads).
    let sparse = |run: &dyn Fn(), tids: Option<&[libc::pid_t]>| {
        let n = 200;
        std::thread::sleep(Duration::from_millis(50));
        let me = [gettid()];
        let read = || match tids {
            Some(t) => threads_cpu_us(t) + threads_cpu_us(&me),
            None => usage().cpu.as_secs_f64() * 1e6,
        };
        let c0 = read();
        for _ in 0..n {
            run();
            std::thread::sleep(Duration::from_millis(1));
        }
        (read() - c0) / n as f64
    };
    let k4 = 4.min(small.len() / 1024);
    let keel_b = || keel.run(k4, small_job);
    let rayon_b = || rp.install(|| (0..k4).into_par_iter().for_each(small_job));
    let rscope_b = || {
        rp.scope(|s| {
            for i in 0..k4 {
                s.spawn(move |_| small_job(i));
            }
        })
    };
    let std_b = || {
        std::thread::scope(|s| {
            for i in 0..k4 {
                s.spawn(move || small_job(i));
            }
        })
    };
    let r = if quick { 1 } else { 5 };
    let keel_tids = threads_named("keel-pool");
    // The width-w pool's threads (rp1 and rp2 are unnamed, and idle here).
    let rayon_tids = threads_named("rayon-pool");
    // The bound holds for every round, not only the median: keep the highest.
    let keel_idle_max = std::cell::Cell::new(0.0f64);
    let mut cs = vec![
        Contender::new("keel", || {
            let us = idle_after_burst(&keel_b, &keel_tids);
            keel_idle_max.set(keel_idle_max.get().max(us));
            us
        }),
        Contender::new("rayon install", || idle_after_burst(&rayon_b, &rayon_tids)),
        Contender::new("rayon scope", || idle_after_burst(&rscope_b, &rayon_tids)),
    ];
    let idle = interleave(r, &mut cs);
    drop(cs);
    let mut cs = vec![
        Contender::new("keel", || sparse(&keel_b, Some(&keel_tids))),
        Contender::new("rayon install", || sparse(&rayon_b, Some(&rayon_tids))),
        Contender::new("rayon scope", || sparse(&rscope_b, Some(&rayon_tids))),
        Contender::new("thread::scope", || sparse(&std_b, None)),
    ];
    let per = interleave(r, &mut cs);
    drop(cs);
    let bound = idle_bound_us(&keel);
    print_table(
        &[
            "measure",
            "keel",
            "rayon install",
            "rayon scope",
            "thread::scope",
            "keel / rayon install",
        ],
        &[
            vec![
                "CPU µs of the pool's own threads in the 200 ms after 1,000 batches".into(),
                format!("{:.0}", idle[0]),
                format!("{:.0}", idle[1]),
                format!("{:.0}", idle[2]),
                "0 (no threads left)".into(),
                format!("{:.2}", idle[0] / idle[1].max(1.0)),
            ],
            vec![
                "CPU µs per batch, one batch every 1 ms".into(),
                format!("{:.1}", per[0]),
                format!("{:.1}", per[1]),
                format!("{:.1}", per[2]),
                format!("{:.1}", per[3]),
                format!("{:.2}", per[0] / per[1]),
            ],
        ],
    );
    let worst = keel_idle_max.get();
    println!(
        "idle-cost bound for keel: spin window {:?} x min({MAX_SPINNERS}, {} workers) = {bound:.0} µs; keel's threads: median {:.0} µs, highest of {r} rounds {worst:.0} µs, {} it",
        keel.config().spin,
        keel.workers(),
        idle[0],
        if worst <= bound {
            "every round within"
        } else {
            "over"
        }
    );
    let s = keel.stats();
    let n = s.batches.max(1) as f64;
    println!(
        "\nkeel stats: {} batches, {} jobs, {} wakes ({:.3} per batch), {} lock holds ({:.3} per batch), {} parks, {} spins found work, {:?} spinning, spinners high water {}; submitter parks {}",
        s.batches,
        s.jobs,
        s.wakes,
        s.wakes as f64 / n,
        s.lock_acquisitions,
        s.lock_acquisitions as f64 / n,
        s.parks,
        s.spins_found_work,
        s.spin_time,
        s.spinners_high_water,
        s.submitter_parks
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("loadavg at end: {}", load.trim());
}
