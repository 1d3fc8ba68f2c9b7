//! What the first write of a fresh output costs, with and without the
//! transparent huge-page advice `gather::take` gives outputs of 4 MiB or
//! more: a fresh anonymous mapping written once a 4 KiB page, in four
//! orders (each timed write right after an untimed one of the named kind,
//! whose memory it has just freed), interleaved round by round, medians.
//!
//! On bare metal the advice makes the write one fault a 2 MiB page; in a
//! guest whose host backs memory lazily (or takes freed memory back), a
//! huge page the guest has not used lately may first have to be backed by
//! the host, 4 KiB at a time, so the figure depends on what was freed just
//! before. This bench shows which holds on a machine.
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin first_touch
//! # --mib 128,1024 (sizes), --rounds 7
//! ```

use keel_bench::{cli, help, print_table};
use std::time::Instant;

const USAGE: &str = "usage: first_touch [--mib N[,N...]] [--rounds R]";
const HUGE: usize = 2 << 20;

/// Maps `bytes` (2 MiB aligned), advises huge pages or not, writes one byte
/// a 4 KiB page, unmaps; returns the seconds from the map to the last write.
fn touch(bytes: usize, huge: bool) -> f64 {
    let t = Instant::now();
    // SAFETY: a fresh private anonymous mapping, written only inside
    // [q, q + bytes), which lies inside it (2 MiB of slack for the
    // alignment), and unmapped once; madvise is advice on that range.
    unsafe {
        let len = bytes + HUGE;
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert!(p != libc::MAP_FAILED, "mmap of {len} bytes failed");
        let q = (p as usize).next_multiple_of(HUGE) as *mut u8;
        if huge {
            libc::madvise(q.cast(), bytes, libc::MADV_HUGEPAGE);
        }
        for off in (0..bytes).step_by(4096) {
            q.add(off).write_volatile(1);
        }
        let s = t.elapsed().as_secs_f64();
        libc::munmap(p, len);
        s
    }
}

fn main() {
    let (sizes, rounds) = cli(USAGE, |args| {
        use lexopt::prelude::*;
        let (mut sizes, mut rounds) = (vec![128usize, 1024], 7usize);
        while let Some(a) = args.next()? {
            match a {
                Long("mib") => {
                    sizes = args
                        .value()?
                        .string()?
                        .split(',')
                        .map(|s| s.parse::<usize>().map_err(|e| e.to_string().into()))
                        .collect::<Result<_, lexopt::Error>>()?;
                    if sizes.contains(&0) {
                        return Err("--mib: sizes must be positive".into());
                    }
                }
                Long("rounds") => {
                    rounds = args.value()?.parse()?;
                    if rounds == 0 {
                        return Err("--rounds must be positive".into());
                    }
                }
                Long("help") | Short('h') => help(USAGE),
                _ => return Err(a.unexpected()),
            }
        }
        Ok((sizes, rounds))
    });
    // (after, timed): the untimed write before, then the timed one.
    let orders = [(false, false), (false, true), (true, true), (true, false)];
    let name = |h: bool| if h { "huge-page advice" } else { "4 KiB pages" };
    let mut rows = Vec::new();
    for mib in sizes {
        let bytes = mib << 20;
        let mut samples = vec![Vec::new(); orders.len()];
        for r in 0..rounds {
            for k in 0..orders.len() {
                let (before, timed) = orders[(k + r) % orders.len()];
                touch(bytes, before);
                samples[(k + r) % orders.len()].push(touch(bytes, timed));
            }
        }
        for s in &mut samples {
            s.sort_by(f64::total_cmp);
        }
        let med: Vec<f64> = samples.iter().map(|s| s[s.len() / 2]).collect();
        for (k, &(before, timed)) in orders.iter().enumerate() {
            rows.push(vec![
                format!("{mib} MiB"),
                name(timed).into(),
                format!("after {}", name(before)),
                format!("{:.1}", med[k] * 1e3),
                format!(
                    "{:.1}-{:.1}",
                    samples[k][0] * 1e3,
                    samples[k][rounds - 1] * 1e3
                ),
                format!("{:.2}", bytes as f64 / med[k] / 1e9),
                format!("{:.2}", med[k] / if before { med[3] } else { med[0] }),
            ]);
        }
    }
    print_table(
        &[
            "output",
            "written on",
            "freed just before",
            "ms (median)",
            "min-max ms",
            "GB/s",
            "÷ 4 KiB pages, same history",
        ],
        &rows,
    );
}
