//! RSS over time of a program, for each allocator: `trace` runs a command
//! and samples its resident set from `/proc/<pid>/status` (`VmRSS`) every
//! few ms until it exits, writing `ms<TAB>KiB` lines (and the time its
//! first stderr line starting with `loop end` came, if any); `plot` draws
//! several such traces as one SVG (plotters).
//!
//! ```text
//! rss-plot trace --out glibc.tsv [--every-ms 5] -- bench/query_pipe 200 2 20000 1000 1
//! rss-plot plot --out rss.svg --title "..." glibc.tsv mimalloc.tsv keel.tsv
//! ```
//!
//! The allocator is whatever the command runs under (set `LD_PRELOAD` in
//! the environment of `trace`); `bench/malloc/rss_trace.sh` runs all five.
//! A trace's label is its file name without `.tsv`.

use lexopt::prelude::*;
use plotters::prelude::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: rss-plot trace --out FILE [--every-ms N] -- COMMAND [ARGS...]\n       \
                     rss-plot plot --out FILE.svg [--title TEXT] TRACE.tsv...";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rss-plot: {e}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = lexopt::Parser::from_env();
    let mode = match args.next().map_err(|e| e.to_string())? {
        Some(Value(v)) => v.string().map_err(|e| e.to_string())?,
        Some(Long("help")) | Some(Short('h')) => {
            println!("{USAGE}");
            return Ok(());
        }
        other => return Err(format!("expected trace or plot, got {other:?}")),
    };
    let mut out: Option<PathBuf> = None;
    let mut every_ms = 5u64;
    let mut title = String::from("RSS over time");
    let mut rest: Vec<String> = Vec::new();
    while let Some(arg) = args.next().map_err(|e| e.to_string())? {
        match arg {
            Long("out") => out = Some(args.value().map_err(|e| e.to_string())?.into()),
            Long("every-ms") => {
                every_ms = args
                    .value()
                    .map_err(|e| e.to_string())?
                    .parse()
                    .map_err(|e| format!("--every-ms: {e}"))?;
                if every_ms == 0 {
                    return Err("--every-ms must be at least 1".into());
                }
            }
            Long("title") => {
                title = args
                    .value()
                    .map_err(|e| e.to_string())?
                    .string()
                    .map_err(|e| e.to_string())?
            }
            Value(v) => {
                rest.push(v.string().map_err(|e| e.to_string())?);
                for v in args.raw_args().map_err(|e| e.to_string())? {
                    rest.push(v.into_string().map_err(|v| format!("not UTF-8: {v:?}"))?);
                }
            }
            other => return Err(other.unexpected().to_string()),
        }
    }
    let out = out.ok_or("--out is required")?;
    match mode.as_str() {
        "trace" => trace(&out, every_ms, &rest),
        "plot" => plot(&out, &title, &rest),
        m => Err(format!("unknown mode {m:?}")),
    }
}

/// `VmRSS` of a process in KiB, or `None` once it is gone (or a zombie).
fn vm_rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn trace(out: &Path, every_ms: u64, cmd: &[String]) -> Result<(), String> {
    let (prog, args) = cmd.split_first().ok_or("no command to trace")?;
    let start = Instant::now();
    let mut child = Command::new(prog)
        .args(args)
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    let pid = child.id();
    let stderr = child.stderr.take().expect("piped");
    // Passes the program's stderr through and notes when the loop ended.
    let reader = std::thread::spawn(move || {
        let mut loop_end = None;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if loop_end.is_none() && line.starts_with("loop end") {
                loop_end = Some(start.elapsed().as_secs_f64() * 1e3);
            }
            eprintln!("{line}");
        }
        loop_end
    });
    let mut samples = Vec::new();
    let step = Duration::from_millis(every_ms);
    let mut next = start;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if let Some(kib) = vm_rss_kib(pid) {
            samples.push((start.elapsed().as_secs_f64() * 1e3, kib));
        }
        next += step;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    };
    let loop_end = reader.join().unwrap_or(None);
    if !status.success() {
        return Err(format!("{prog} failed: {status}"));
    }
    let mut f = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    if let Some(ms) = loop_end {
        writeln!(f, "# loop_end_ms {ms:.1}").map_err(|e| e.to_string())?;
    }
    for (ms, kib) in &samples {
        writeln!(f, "{ms:.1}\t{kib}").map_err(|e| e.to_string())?;
    }
    eprintln!(
        "rss-plot: {} samples, peak {} KiB -> {}",
        samples.len(),
        samples.iter().map(|s| s.1).max().unwrap_or(0),
        out.display()
    );
    Ok(())
}

/// One trace file: its samples (ms, MiB) and loop end (ms).
struct Trace {
    label: String,
    points: Vec<(f64, f64)>,
    loop_end: Option<f64>,
}

fn read_trace(path: &str) -> Result<Trace, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut points = Vec::new();
    let mut loop_end = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(ms) = line.strip_prefix("# loop_end_ms ") {
            loop_end = Some(
                ms.trim()
                    .parse()
                    .map_err(|e| format!("{path}:{}: {e}", i + 1))?,
            );
            continue;
        }
        let mut it = line.split('\t');
        let (Some(ms), Some(kib), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!("{path}:{}: expected `ms<TAB>KiB`", i + 1));
        };
        let ms: f64 = ms.parse().map_err(|e| format!("{path}:{}: {e}", i + 1))?;
        let kib: f64 = kib.parse().map_err(|e| format!("{path}:{}: {e}", i + 1))?;
        points.push((ms / 1e3, kib / 1024.0));
    }
    if points.is_empty() {
        return Err(format!("{path}: no samples"));
    }
    let label = Path::new(path)
        .file_stem()
        .map_or_else(|| path.to_string(), |s| s.to_string_lossy().into_owned());
    Ok(Trace {
        label,
        points,
        loop_end: loop_end.map(|ms: f64| ms / 1e3),
    })
}

fn plot(out: &Path, title: &str, files: &[String]) -> Result<(), String> {
    if files.is_empty() {
        return Err("no trace files to plot".into());
    }
    let traces = files
        .iter()
        .map(|f| read_trace(f))
        .collect::<Result<Vec<_>, _>>()?;
    let x_max = traces
        .iter()
        .flat_map(|t| t.points.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        * 1.02;
    let y_max = traces
        .iter()
        .flat_map(|t| t.points.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        * 1.08;
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let root = SVGBackend::new(out, (960, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds since start")
        .y_desc("RSS (MiB)")
        .draw()
        .map_err(err)?;
    for (i, t) in traces.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                t.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(t.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        if let Some(end) = t.loop_end {
            // The RSS when the loop ended: a ring on the curve.
            let at = t
                .points
                .iter()
                .min_by(|a, b| (a.0 - end).abs().total_cmp(&(b.0 - end).abs()))
                .map_or(0.0, |p| p.1);
            chart
                .draw_series(std::iter::once(Circle::new(
                    (end, at),
                    5,
                    color.stroke_width(2),
                )))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    eprintln!("rss-plot: {} traces -> {}", traces.len(), out.display());
    Ok(())
}
