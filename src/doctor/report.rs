//! What `keel doctor` says: the text on stdout, the JSON for scripts, and
//! in `--out DIR` the Markdown report, the plots and the config file.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use keel_rt::pool::settings::{self as keys, Settings};
use serde_json::{Value, json};

use super::recommend::{
    self, BindingRun, Measured, PlacementRun, Recommendation, SpinPoint, WidthCurve,
};
use super::{Doctor, knee_of, median, plot};

/// The name of the config file written into `--out DIR`.
pub const CONFIG_FILE: &str = "keel.conf";

/// A duration as a person reads it: `45 s`, `3 min 20 s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s < 90 {
        format!("{s} s")
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}

/// The medians, shaped for [`recommend::recommend`].
pub fn measured(d: &Doctor) -> Measured {
    Measured {
        cpus: d.machine.cpus,
        cores: d.machine.cores,
        widths: d
            .width
            .iter()
            .map(|(k, pts)| {
                let points = pts.iter().map(|(w, s)| (*w, median(s))).collect();
                (*k, WidthCurve { points })
            })
            .collect(),
        binding: d
            .binding
            .iter()
            .map(|c| BindingRun {
                kind: c.kind,
                width: c.width,
                results: c.results.iter().map(|(b, s)| (*b, median(s))).collect(),
            })
            .collect(),
        placement: d.placement.as_ref().map_err(Clone::clone).map(|runs| {
            runs.iter()
                .map(|c| {
                    let get = |p| {
                        c.results
                            .iter()
                            .find(|(q, _)| *q == p)
                            .and_then(|(_, s)| median(s))
                    };
                    PlacementRun {
                        kind: c.kind,
                        default: get(super::Place::Default),
                        interleave: get(super::Place::Interleave),
                    }
                })
                .collect()
        }),
        spin: d
            .spin
            .iter()
            .map(|(w, t, c)| SpinPoint {
                window_us: *w,
                round_trip_us: median(t),
                idle_cpus: median(c),
            })
            .collect(),
    }
}

/// The config file: `KEY=VALUE` lines as `KEEL_CONFIG` files take them,
/// written by the pool's own settings type so that its parser reads them
/// back.
pub fn config_text(d: &Doctor, rec: &Recommendation) -> String {
    format!(
        "# keel settings measured by keel doctor{} on {} usable CPUs ({} physical cores, {} NUMA node{}).\n\
         # Pool::builder() and Runtime::new() read this file when KEEL_CONFIG names it;\n\
         # a variable set in the environment overrides its line.\n{}",
        if d.quick {
            " --quick (a smoke run, not for decisions)"
        } else {
            ""
        },
        d.machine.cpus,
        d.machine.cores,
        d.machine.nodes.len(),
        if d.machine.nodes.len() == 1 { "" } else { "s" },
        settings(rec),
    )
}

/// The recommendation as keel settings.
pub fn settings(rec: &Recommendation) -> Settings {
    let mut s = Settings::new();
    let mut put = |k: &str, v: String| {
        // Every value here has the form its key takes; a refusal would be
        // a bug in this file, caught by the round-trip test below.
        let _ = s.set(k, &v);
    };
    put(keys::WORKERS, rec.workers.to_string());
    put(keys::SPIN_US, rec.spin_us.to_string());
    put(keys::BIND, rec.bind.name().to_string());
    put(keys::PLACEMENT, rec.placement.to_string());
    for (kind, w) in &rec.widths {
        put(kind.key(), w.to_string());
    }
    s
}

/// The same settings as shell `export` lines.
pub fn env_lines(rec: &Recommendation) -> String {
    settings(rec)
        .to_string()
        .lines()
        .map(|l| format!("export {l}\n"))
        .collect()
}

/// The JSON document `--json` prints.
pub fn json(d: &Doctor, rec: &Recommendation) -> Value {
    let samples = |s: &[f64]| json!({ "median": median(s), "samples": s });
    json!({
        "machine": {
            "usable_cpus": d.machine.cpus,
            "physical_cores": d.machine.cores,
            "numa_nodes": d.machine.nodes,
            // All instances together (`keel topo` gives one instance's).
            "last_level_cache_total_bytes": d.machine.llc_bytes,
        },
        "quick": d.quick,
        "rounds": d.rounds,
        "margin": recommend::MARGIN,
        "width": d.width.iter().map(|(k, pts)| json!({
            "kind": k.name(),
            "what": k.what(),
            "unit": k.unit(),
            "points": pts.iter().map(|(w, s)| {
                let mut p = samples(s);
                p["width"] = json!(w);
                p["smt"] = json!(*w > d.machine.cores);
                p
            }).collect::<Vec<_>>(),
            // Measured: null where no width was (the recommendation
            // then falls back, and says so).
            "knee": knee_of(pts),
        })).collect::<Vec<_>>(),
        "binding": d.binding.iter().map(|c| json!({
            "kind": c.kind.name(),
            "width": c.width,
            "unit": c.kind.unit(),
            "results": c.results.iter().map(|(b, s)| {
                let mut p = samples(s);
                p["binding"] = json!(b.name());
                p
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "placement": match &d.placement {
            Err(why) => json!({ "skipped": why }),
            Ok(runs) => json!({ "runs": runs.iter().map(|c| json!({
                "kind": c.kind.name(),
                "width": c.width,
                "unit": c.kind.unit(),
                "results": c.results.iter().map(|(p, s)| {
                    let mut v = samples(s);
                    v["placement"] = json!(p.name());
                    v
                }).collect::<Vec<_>>(),
            })).collect::<Vec<_>>() }),
        },
        "spin": {
            "width": d.spin_width,
            "windows": d.spin.iter().map(|(w, t, c)| json!({
                "window_us": w,
                "round_trip_us": samples(t),
                "idle_cpus": samples(c),
            })).collect::<Vec<_>>(),
        },
        "failures": d.failures.iter().map(|(id, what)| json!({ "id": id, "what": what })).collect::<Vec<_>>(),
        "notes": d.notes,
        "recommendation": {
            "workers": rec.workers,
            "widths": rec.widths.iter().map(|(k, w)| (k.name().to_string(), json!(w))).collect::<serde_json::Map<_, _>>(),
            "binding": rec.bind.name(),
            "placement": rec.placement,
            "spin_us": rec.spin_us,
            "reasons": rec.reasons,
            "config_file": config_text(d, rec),
            "environment": env_lines(rec),
        },
        "duration_s": d.elapsed.as_secs_f64(),
        "expected_duration_s": d.expected.as_secs_f64(),
    })
}

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "failed".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// The findings as Markdown tables (shared by the text and the report).
fn findings(d: &Doctor, rec: &Recommendation, out: &mut String) {
    let m = &d.machine;
    let smt = if m.cpus > m.cores {
        format!("widths above {} use SMT siblings", m.cores)
    } else {
        "this machine has no SMT: each CPU is a core of its own".to_string()
    };
    let _ = writeln!(
        out,
        "## Width\n\nThroughput (median of {} round{}) at each width; {smt}. \
         The knee is the smallest width within {:.0}% of the best.\n",
        d.rounds,
        if d.rounds == 1 { "" } else { "s" },
        recommend::MARGIN * 100.0
    );
    if d.width.is_empty() {
        let _ = writeln!(out, "Not asked.\n");
    }
    for (k, pts) in &d.width {
        let knee = knee_of(pts);
        let _ = writeln!(out, "{} ({}):\n", k.what(), k.unit());
        let _ = writeln!(out, "| width | {} | |\n|---|---|---|", k.unit());
        for (w, s) in pts {
            let mark = if Some(*w) == knee { "knee" } else { "" };
            let _ = writeln!(out, "| {w} | {} | {mark} |", fmt_value(median(s)));
        }
        if m.cpus > m.cores {
            let at = |w| {
                pts.iter()
                    .find(|(x, _)| *x == w)
                    .and_then(|(_, s)| median(s))
            };
            if let (Some(c), Some(l)) = (at(m.cores), at(m.cpus)) {
                let _ = writeln!(
                    out,
                    "\nSMT: {} logical CPUs give {:+.0}% over {} physical cores.",
                    m.cpus,
                    (l / c - 1.0) * 100.0,
                    m.cores
                );
            }
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "## Binding\n");
    if d.binding.is_empty() {
        let _ = writeln!(out, "Not asked.\n");
    }
    for c in &d.binding {
        let (k, w, res) = (c.kind, c.width, &c.results);
        let none = res.first().and_then(|(_, s)| median(s));
        let _ = writeln!(
            out,
            "{} at width {w}:\n\n| binding | {} | ÷ none |\n|---|---|---|",
            k.name(),
            k.unit()
        );
        for (b, s) in res {
            let v = median(s);
            let ratio = match (v, none) {
                (Some(v), Some(n)) if n > 0.0 => format!("{:.2}", v / n),
                _ => "-".into(),
            };
            let _ = writeln!(out, "| {} | {} | {ratio} |", b.name(), fmt_value(v));
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "## Placement\n");
    match &d.placement {
        Err(why) => {
            let _ = writeln!(out, "Placement: {why}.\n");
        }
        Ok(runs) => {
            for c in runs {
                let (k, w, res) = (c.kind, c.width, &c.results);
                let _ = writeln!(
                    out,
                    "{} at width {w}:\n\n| placement | {} |\n|---|---|",
                    k.name(),
                    k.unit()
                );
                for (p, s) in res {
                    let _ = writeln!(out, "| {} | {} |", p.name(), fmt_value(median(s)));
                }
                let _ = writeln!(out);
            }
        }
    }
    let _ = writeln!(out, "## Spin window\n");
    if d.spin.is_empty() {
        let _ = writeln!(out, "Not asked.\n");
    } else {
        let _ = writeln!(
            out,
            "Batches of {} hands separated by pauses of 20, 200 and 2000 µs: the round trip (mean of the \
             three pauses' medians) against the CPU the idle workers burn (1.00 = one CPU kept busy).\n\n\
             | spin window | round trip µs | idle CPUs |\n|---|---|---|",
            d.spin_width
        );
        for (w, t, c) in &d.spin {
            let _ = writeln!(
                out,
                "| {w} µs | {} | {} |",
                fmt_value(median(t)),
                fmt_value(median(c))
            );
        }
        let _ = writeln!(out);
    }
    if !d.failures.is_empty() {
        let _ = writeln!(out, "## Failed measurements\n");
        for (id, what) in &d.failures {
            let _ = writeln!(out, "- `{id}`: {what}");
        }
        let _ = writeln!(out);
    }
    if !d.notes.is_empty() {
        let _ = writeln!(out, "## Notes\n");
        for n in &d.notes {
            let _ = writeln!(out, "- {n}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "## Recommendation\n");
    for r in &rec.reasons {
        let _ = writeln!(out, "- {r}");
    }
    let _ = writeln!(
        out,
        "\nAs a config file (point `KEEL_CONFIG` at it):\n\n```\n{}```\n\nOr in the environment:\n\n```sh\n{}```\n",
        config_text(d, rec),
        env_lines(rec)
    );
}

fn header(d: &Doctor, out: &mut String) {
    let m = &d.machine;
    let _ = writeln!(
        out,
        "# keel doctor\n\nMachine: {} usable CPUs, {} physical cores, {} NUMA node{}, {} MiB of last-level cache in all.\n",
        m.cpus,
        m.cores,
        m.nodes.len(),
        if m.nodes.len() == 1 { "" } else { "s" },
        m.llc_bytes >> 20
    );
    let _ = writeln!(
        out,
        "Run: {}, every measurement in a fresh process; took {} (expected {}).\n",
        if d.quick {
            "`--quick` (one round of 0.2 s measurements on buffers twice the last-level cache, at least 32 MiB: \
             a smoke run, not for decisions)"
        } else {
            "three interleaved rounds of 0.7 s measurements on buffers four times the last-level cache, at least 128 MiB"
        },
        duration(d.elapsed),
        duration(d.expected)
    );
}

/// The text `keel doctor` prints (Markdown, readable as it is).
pub fn text(d: &Doctor, rec: &Recommendation, out_dir: Option<&Path>) -> String {
    let mut s = String::new();
    header(d, &mut s);
    findings(d, rec, &mut s);
    if let Some(dir) = out_dir {
        let _ = writeln!(
            s,
            "Report, plots and {CONFIG_FILE} written to {}.",
            dir.display()
        );
    }
    s
}

/// Writes report.md, the plots and the config file into `dir`.
pub fn write_dir(dir: &Path, d: &Doctor, rec: &Recommendation) -> Result<(), String> {
    let fail = |what: &str, e: std::io::Error| format!("{}: {what}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| fail("cannot create", e))?;
    let plots = plot::all(dir, d, rec)?;
    let mut md = String::new();
    header(d, &mut md);
    for (file, what) in &plots {
        let _ = writeln!(md, "![{what}]({file})\n");
    }
    findings(d, rec, &mut md);
    std::fs::write(dir.join("report.md"), md).map_err(|e| fail("cannot write report.md", e))?;
    std::fs::write(dir.join(CONFIG_FILE), config_text(d, rec))
        .map_err(|e| fail("cannot write the config file", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::recommend::{Bind, Kind};
    use keel_rt::heap::Placement;
    use keel_rt::pool::{Binding, Pool, Source};
    use keel_rt::topology::Topology;
    use keel_rt::{Runtime, WorkKind};

    /// Every value the recommendation can take is written so that the
    /// pool's parser reads it back, and a pool and a runtime built from it
    /// run with it.
    #[test]
    fn the_settings_round_trip_through_the_pool() {
        for (bind, binding) in [
            (Bind::None, Binding::None),
            (Bind::Close, Binding::Close),
            (Bind::Spread, Binding::Spread),
        ] {
            for placement in ["auto", "interleave", "default"] {
                let rec = Recommendation {
                    widths: vec![(Kind::Scan, 2), (Kind::Gather, 3), (Kind::Compute, 1)],
                    workers: 3,
                    bind,
                    placement,
                    spin_us: 10,
                    reasons: Vec::new(),
                };
                let text = settings(&rec).to_string();
                let back = Settings::parse(&text);
                assert!(back.notes().is_empty(), "{:?}", back.notes());
                assert_eq!(back.workers(), Some((3, Source::File)));
                assert_eq!(back.get(keys::PLACEMENT).map(|(v, _)| v), Some(placement));
                for (key, n) in [
                    (keys::WIDTH_SCAN, 2),
                    (keys::WIDTH_GATHER, 3),
                    (keys::WIDTH_COMPUTE, 1),
                ] {
                    assert_eq!(back.count(key).map(|(v, _)| v), Some(n), "{key}");
                }
                // The runtime reads placement and the widths per kind
                // through the same parser.
                let rt = Runtime::with_settings(Topology::detect(), back.clone()).unwrap();
                let rc = rt.config();
                let want = match placement {
                    "auto" => Placement::Auto,
                    "interleave" => Placement::Interleave,
                    _ => Placement::Default,
                };
                assert_eq!((rc.placement, rc.placement_source), (want, Source::File));
                for (kind, n) in [
                    (WorkKind::Scan, 2),
                    (WorkKind::Gather, 3),
                    (WorkKind::Compute, 1),
                ] {
                    assert_eq!(rt.width_for(kind), n, "{kind:?}");
                }
                assert!(rc.widths.iter().all(|&(_, src)| src == Source::File));
                assert!(rc.notes.is_empty(), "{:?}", rc.notes);
                assert_eq!(rt.pool().width(), 3);
                drop(rt);
                let pool = Pool::builder().settings(back).build().unwrap();
                let c = pool.config();
                assert_eq!((c.width, c.width_source), (3, Source::File));
                assert_eq!((c.spin.as_micros(), c.spin_source), (10, Source::File));
                assert_eq!((c.binding, c.binding_source), (binding, Source::File));
                assert_eq!(
                    env_lines(&rec),
                    text.lines()
                        .map(|l| format!("export {l}\n"))
                        .collect::<String>()
                );
            }
        }
    }
}
