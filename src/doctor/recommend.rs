//! From measured curves to settings: a pure function, so that it can be
//! tested on recorded curves (a knee, a plateau, a curve that falls after
//! its peak, a single-CPU machine) without measuring anything.
//!
//! One rule throughout: more of a resource (workers, spinning) is only
//! worth it while it buys more than [`MARGIN`]; a setting other than the
//! default (a binding, a placement) must win by more than [`MARGIN`].

use std::fmt::Write as _;

use keel_rt::pool::settings;

/// How close to the best a setting must come to count as good enough: 5%.
/// Runs repeated on a quiet machine differ by less; a loaded one may need
/// a full (not `--quick`) run for the verdicts to settle.
pub const MARGIN: f64 = 0.05;

/// The three kinds of work the pool's batch widths are set for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A bandwidth-bound scan (a sum over a column larger than the caches).
    Scan,
    /// A random gather (rows fetched by random indices).
    Gather,
    /// A compute-bound kernel (hashing keys that stay in cache).
    Compute,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 3] = [Kind::Scan, Kind::Gather, Kind::Compute];

    /// The short name used in configurations, JSON and file names.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Scan => "scan",
            Kind::Gather => "gather",
            Kind::Compute => "compute",
        }
    }

    /// What the kind measures, in words.
    pub const fn what(self) -> &'static str {
        match self {
            Kind::Scan => "bandwidth-bound scan (sum of a column larger than the caches)",
            Kind::Gather => "random gather (rows fetched by random indices)",
            Kind::Compute => "compute-bound kernel (hashing keys that stay in cache)",
        }
    }

    /// The `KEEL_WIDTH_*` key of this kind.
    pub const fn key(self) -> &'static str {
        match self {
            Kind::Scan => settings::WIDTH_SCAN,
            Kind::Gather => settings::WIDTH_GATHER,
            Kind::Compute => settings::WIDTH_COMPUTE,
        }
    }

    /// The unit of its throughput.
    pub const fn unit(self) -> &'static str {
        match self {
            Kind::Scan => "GB/s",
            Kind::Gather => "M rows/s",
            Kind::Compute => "M keys/s",
        }
    }
}

/// Worker binding, as `KEEL_BIND` spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bind {
    /// Workers run where the OS schedules them (the default).
    None,
    /// Workers packed onto the first node's cores.
    Close,
    /// Consecutive workers on different nodes.
    Spread,
}

impl Bind {
    /// Every binding, the default first.
    pub const ALL: [Bind; 3] = [Bind::None, Bind::Close, Bind::Spread];

    /// The `KEEL_BIND` value.
    pub const fn name(self) -> &'static str {
        match self {
            Bind::None => "none",
            Bind::Close => "close",
            Bind::Spread => "spread",
        }
    }
}

/// The smallest width whose throughput is within `margin` of the peak:
/// past it, more workers buy less than `margin`. Points with no value (a
/// measurement that failed) are left out; `None` when none is left.
///
/// ```text
/// width      1   2   4   8  16  32
/// GB/s      10  19  35  60  78  80   → knee 16 (78 ≥ 0.95 × 80)
/// ```
pub fn knee(points: &[(usize, Option<f64>)], margin: f64) -> Option<usize> {
    let valid = || {
        points
            .iter()
            .filter_map(|&(w, v)| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| (w, v)))
    };
    let peak = valid().map(|(_, v)| v).fold(f64::NAN, f64::max);
    if peak.is_nan() {
        return None;
    }
    valid()
        .filter(|&(_, v)| v >= peak * (1.0 - margin))
        .map(|(w, _)| w)
        .min()
}

/// The width sweep of one kind.
#[derive(Clone, Debug, Default)]
pub struct WidthCurve {
    /// (width, median throughput); `None` where every measurement failed.
    pub points: Vec<(usize, Option<f64>)>,
}

/// The binding comparison of one kind, at its knee width.
#[derive(Clone, Debug)]
pub struct BindingRun {
    /// The kind measured.
    pub kind: Kind,
    /// The width it ran at.
    pub width: usize,
    /// Median throughput per binding; `None` where it failed.
    pub results: Vec<(Bind, Option<f64>)>,
}

impl BindingRun {
    /// `b`'s throughput, if it was measured.
    fn get(&self, b: Bind) -> Option<f64> {
        self.results
            .iter()
            .find(|(x, _)| *x == b)
            .and_then(|(_, v)| *v)
    }
}

/// The placement comparison of one kind (default against interleave).
#[derive(Clone, Debug)]
pub struct PlacementRun {
    /// The kind measured.
    pub kind: Kind,
    /// Throughput with the kernel's default placement (first touch).
    pub default: Option<f64>,
    /// Throughput with pages interleaved over the nodes.
    pub interleave: Option<f64>,
}

/// One spin window's cost and benefit.
#[derive(Clone, Copy, Debug)]
pub struct SpinPoint {
    /// The window, in microseconds.
    pub window_us: u64,
    /// Median time from submitting a small batch to its end, in µs.
    pub round_trip_us: Option<f64>,
    /// CPU the idle workers burned, in CPUs (1.0 = one CPU kept busy).
    pub idle_cpus: Option<f64>,
}

/// Everything measured, as the recommendation reads it.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Usable logical CPUs.
    pub cpus: usize,
    /// Physical cores among them.
    pub cores: usize,
    /// The width sweep per kind.
    pub widths: Vec<(Kind, WidthCurve)>,
    /// The binding comparisons.
    pub binding: Vec<BindingRun>,
    /// The placement comparisons; `Err(reason)` when skipped.
    pub placement: Result<Vec<PlacementRun>, String>,
    /// The spin windows.
    pub spin: Vec<SpinPoint>,
}

/// What `keel doctor` recommends, with the reason for each setting.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    /// Batch width per kind of work.
    pub widths: Vec<(Kind, usize)>,
    /// The pool's width: the widest batch.
    pub workers: usize,
    /// Worker binding.
    pub bind: Bind,
    /// `KEEL_PLACEMENT`: `auto`, `interleave` or `default`.
    pub placement: &'static str,
    /// The spin window, µs.
    pub spin_us: u64,
    /// Why, one line per setting.
    pub reasons: Vec<String>,
}

impl Default for Measured {
    /// Nothing measured, on one CPU; placement not asked.
    fn default() -> Self {
        Measured {
            cpus: 1,
            cores: 1,
            widths: Vec::new(),
            binding: Vec::new(),
            placement: Err("not measured".into()),
            spin: Vec::new(),
        }
    }
}

/// The built-in spin window (the pool's `DEFAULT_SPIN`).
const DEFAULT_SPIN_US: u64 = 100;

/// The recommendation the measurements support.
pub fn recommend(m: &Measured) -> Recommendation {
    let pct = MARGIN * 100.0;
    let mut reasons = Vec::new();
    let fallback = m.cores.max(1).min(m.cpus.max(1));
    let mut widths = Vec::new();
    for &(kind, ref curve) in &m.widths {
        let w = match knee(&curve.points, MARGIN) {
            Some(w) => {
                // The SMT question: does this kind want more hands than
                // there are physical cores?
                let beyond = curve
                    .points
                    .iter()
                    .any(|&(x, v)| x > m.cores && v.is_some());
                let smt = if w > m.cores {
                    format!(
                        "; SMT siblings help: it is more than the {} physical cores",
                        m.cores
                    )
                } else if beyond {
                    format!(
                        "; SMT siblings beyond the {} physical cores add less than that",
                        m.cores
                    )
                } else {
                    String::new()
                };
                reasons.push(format!(
                    "{} width {w}: the smallest width within {pct:.0}% of the best throughput{smt}",
                    kind.name()
                ));
                w
            }
            None => {
                reasons.push(format!(
                    "{} width {fallback}: no measurement succeeded; the physical core count",
                    kind.name()
                ));
                fallback
            }
        };
        widths.push((kind, w));
    }
    let workers = widths.iter().map(|&(_, w)| w).max().unwrap_or(fallback);

    let bind = choose_binding(&m.binding);
    let detail = [Bind::Close, Bind::Spread]
        .iter()
        .map(|&b| format!("{}: {}", b.name(), binding_ratios(&m.binding, b)))
        .collect::<Vec<_>>()
        .join("; ");
    reasons.push(match bind {
        Bind::None if m.binding.is_empty() => "binding none: not measured; the default".into(),
        Bind::None => format!(
            "binding none: no binding beat unbound workers by more than {pct:.0}% on every kind ({detail})"
        ),
        b => format!(
            "binding {}: faster than unbound workers by more than {pct:.0}% on every kind ({detail})",
            b.name()
        ),
    });

    let placement = match &m.placement {
        Err(why) => {
            reasons.push(format!("placement auto: {why}"));
            "auto"
        }
        Ok(runs) => {
            let (p, why) = choose_placement(runs);
            reasons.push(format!("placement {p}: {why}"));
            p
        }
    };

    // Spinning may burn at most MARGIN of the machine while the pool idles
    // between batches; within that, the shortest window whose round trip
    // is within the margin of the fastest.
    let cpu_budget = MARGIN * m.cpus.max(1) as f64;
    let affordable = |p: &SpinPoint| p.idle_cpus.is_some_and(|c| c <= cpu_budget);
    let spin_points: Vec<(usize, Option<f64>)> = m
        .spin
        .iter()
        .filter(|p| affordable(p))
        .map(|p| {
            // Faster round trips score higher: the knee rule then picks the
            // shortest window within the margin of the fastest.
            let score = p.round_trip_us.filter(|&r| r > 0.0).map(|r| 1.0 / r);
            (p.window_us as usize, score)
        })
        .collect();
    let spin_us = match knee(&spin_points, MARGIN) {
        Some(w) => {
            let mut why = format!(
                "spin {w} µs: among the windows whose idle workers burn at most {pct:.0}% of the \
                 machine ({cpu_budget:.2} CPUs), the shortest whose round trip is within {pct:.0}% of the fastest"
            );
            let p = m.spin.iter().find(|p| p.window_us == w as u64);
            if let Some((rt, cpu)) = p.and_then(|p| Some((p.round_trip_us?, p.idle_cpus?))) {
                let _ = write!(why, " ({rt:.1} µs round trip, {cpu:.2} CPUs burned)");
            }
            reasons.push(why);
            w as u64
        }
        None => {
            reasons.push(format!(
                "spin {DEFAULT_SPIN_US} µs: not measured; the default"
            ));
            DEFAULT_SPIN_US
        }
    };
    Recommendation {
        widths,
        workers,
        bind,
        placement,
        spin_us,
        reasons,
    }
}

/// `b`'s throughput relative to unbound workers, per kind and width.
fn binding_ratios(runs: &[BindingRun], b: Bind) -> String {
    runs.iter()
        .map(|r| match (r.get(Bind::None), r.get(b)) {
            (Some(n), Some(v)) if n > 0.0 => {
                format!("{} ×{:.2} at width {}", r.kind.name(), v / n, r.width)
            }
            _ => format!("{} failed", r.kind.name()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A binding other than `None` only where it beats `None` by more than the
/// margin on every kind measured (the best such binding); else `None`.
fn choose_binding(runs: &[BindingRun]) -> Bind {
    let mut best = (Bind::None, 1.0);
    for b in [Bind::Close, Bind::Spread] {
        let mut worst_gain = f64::INFINITY;
        let mut any = false;
        for r in runs {
            match (r.get(Bind::None), r.get(b)) {
                (Some(none), Some(v)) if none > 0.0 => {
                    worst_gain = worst_gain.min(v / none);
                    any = true;
                }
                // A kind where either side failed proves nothing.
                _ => {}
            }
        }
        if any && worst_gain > 1.0 + MARGIN && worst_gain > best.1 {
            best = (b, worst_gain);
        }
    }
    best.0
}

/// `interleave` where it wins by more than the margin on some kind and
/// loses by no more than the margin on any; `default` where first touch
/// wins by more than the margin on some kind and loses on none; else
/// `auto`, the built-in default (which interleaves on several nodes).
fn choose_placement(runs: &[PlacementRun]) -> (&'static str, String) {
    let pct = MARGIN * 100.0;
    let ratios: Vec<(Kind, f64)> = runs
        .iter()
        .filter_map(|r| match (r.default, r.interleave) {
            (Some(d), Some(i)) if d > 0.0 => Some((r.kind, i / d)),
            _ => None,
        })
        .collect();
    if ratios.is_empty() {
        return ("auto", "no comparison succeeded; the default".into());
    }
    let list = |f: &dyn Fn(f64) -> bool| {
        ratios
            .iter()
            .filter(|(_, r)| f(*r))
            .map(|(k, r)| format!("{} {:+.0}%", k.name(), (r - 1.0) * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let wins = |r: f64| r > 1.0 + MARGIN;
    let loses = |r: f64| r < 1.0 - MARGIN;
    if ratios.iter().any(|&(_, r)| wins(r)) && !ratios.iter().any(|&(_, r)| loses(r)) {
        (
            "interleave",
            format!("interleaving pages is faster ({})", list(&wins)),
        )
    } else if ratios.iter().any(|&(_, r)| loses(r)) && !ratios.iter().any(|&(_, r)| wins(r)) {
        (
            "default",
            format!(
                "first-touch placement is faster (interleave: {})",
                list(&loses)
            ),
        )
    } else {
        (
            "auto",
            format!("interleave and first touch are within {pct:.0}% of each other, or split"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(usize, f64)]) -> Vec<(usize, Option<f64>)> {
        points.iter().map(|&(w, v)| (w, Some(v))).collect()
    }

    #[test]
    fn a_knee_is_the_first_width_near_the_peak() {
        let c = curve(&[
            (1, 10.0),
            (2, 19.0),
            (4, 35.0),
            (8, 60.0),
            (16, 78.0),
            (32, 80.0),
        ]);
        assert_eq!(knee(&c, MARGIN), Some(16));
    }

    #[test]
    fn a_plateau_needs_one_worker() {
        let c = curve(&[(1, 10.0), (2, 10.2), (4, 10.1), (8, 10.3)]);
        assert_eq!(knee(&c, MARGIN), Some(1));
    }

    #[test]
    fn a_curve_that_falls_after_its_peak_stops_at_the_peak() {
        // Gathers saturating near 16 threads, 32 giving nothing, 64 worse.
        let c = curve(&[
            (1, 8.0),
            (2, 15.0),
            (4, 29.0),
            (8, 52.0),
            (16, 90.0),
            (32, 91.0),
            (64, 70.0),
        ]);
        assert_eq!(knee(&c, MARGIN), Some(16));
    }

    #[test]
    fn a_single_cpu_machine_has_width_one() {
        assert_eq!(knee(&curve(&[(1, 3.5)]), MARGIN), Some(1));
        let m = Measured {
            cpus: 1,
            cores: 1,
            widths: Kind::ALL
                .iter()
                .map(|&k| {
                    (
                        k,
                        WidthCurve {
                            points: curve(&[(1, 3.5)]),
                        },
                    )
                })
                .collect(),
            placement: Err("one NUMA node".into()),
            ..Measured::default()
        };
        let r = recommend(&m);
        assert_eq!(r.workers, 1);
        assert!(r.widths.iter().all(|&(_, w)| w == 1));
        assert_eq!(r.bind, Bind::None);
        assert_eq!(r.placement, "auto");
        assert_eq!(r.spin_us, DEFAULT_SPIN_US);
    }

    #[test]
    fn the_recorded_two_core_run_wants_both_cores() {
        // The width curves `keel doctor` recorded on a 2-core Zen 4
        // (bench/results/2026-12-01-doctor-epyc-2core.md): scan GB/s,
        // gather M rows/s and hashing M keys/s at widths 1 and 2.
        let recorded = [(13.1, 20.4), (77.1, 120.0), (5081.0, 6352.0)];
        let m = Measured {
            cpus: 2,
            cores: 2,
            widths: Kind::ALL
                .iter()
                .zip(recorded)
                .map(|(&k, (one, two))| {
                    (
                        k,
                        WidthCurve {
                            points: curve(&[(1, one), (2, two)]),
                        },
                    )
                })
                .collect(),
            placement: Err("one NUMA node".into()),
            ..Measured::default()
        };
        let r = recommend(&m);
        assert_eq!(r.workers, 2);
        assert!(r.widths.iter().all(|&(_, w)| w == 2), "{:?}", r.widths);
        assert_eq!(r.bind, Bind::None);
    }

    #[test]
    fn failed_points_are_left_out() {
        let c = vec![(1, Some(10.0)), (2, None), (4, Some(10.2))];
        assert_eq!(knee(&c, MARGIN), Some(1));
        assert_eq!(knee(&[(1, None), (2, Some(f64::NAN))], MARGIN), None);
        assert_eq!(knee(&[], MARGIN), None);
    }

    #[test]
    fn widths_per_kind_and_the_pool_width() {
        let m = Measured {
            cpus: 32,
            cores: 16,
            widths: vec![
                (
                    Kind::Scan,
                    WidthCurve {
                        points: curve(&[
                            (1, 10.0),
                            (2, 19.0),
                            (4, 28.0),
                            (8, 31.0),
                            (16, 31.5),
                            (32, 31.0),
                        ]),
                    },
                ),
                (
                    Kind::Gather,
                    WidthCurve {
                        points: curve(&[
                            (1, 1.0),
                            (2, 2.0),
                            (4, 4.0),
                            (8, 8.0),
                            (16, 15.0),
                            (32, 20.0),
                        ]),
                    },
                ),
                (
                    Kind::Compute,
                    WidthCurve {
                        points: vec![(1, None), (2, None)],
                    },
                ),
            ],
            ..Measured::default()
        };
        let r = recommend(&m);
        assert_eq!(
            r.widths,
            vec![(Kind::Scan, 8), (Kind::Gather, 32), (Kind::Compute, 16)]
        );
        assert_eq!(r.workers, 32);
        assert!(
            r.reasons.iter().any(|s| s.starts_with("scan width 8")
                && s.contains("SMT siblings beyond the 16 physical cores add less")),
            "{:?}",
            r.reasons
        );
        assert!(
            r.reasons
                .iter()
                .any(|s| s.starts_with("gather width 32") && s.contains("SMT siblings help")),
            "{:?}",
            r.reasons
        );
        assert!(
            r.reasons
                .iter()
                .any(|s| s.contains("compute width 16: no measurement succeeded"))
        );
    }

    fn bind_run(kind: Kind, none: f64, close: f64, spread: f64) -> BindingRun {
        BindingRun {
            kind,
            width: 16,
            results: vec![
                (Bind::None, Some(none)),
                (Bind::Close, Some(close)),
                (Bind::Spread, Some(spread)),
            ],
        }
    }

    #[test]
    fn binding_must_win_on_every_kind() {
        // Spread 24-51% slower, close within noise: stay unbound.
        let runs = [
            bind_run(Kind::Gather, 100.0, 102.0, 60.0),
            bind_run(Kind::Scan, 50.0, 51.0, 38.0),
        ];
        assert_eq!(choose_binding(&runs), Bind::None);
        // Close wins on both kinds by more than the margin.
        let runs = [
            bind_run(Kind::Gather, 100.0, 120.0, 90.0),
            bind_run(Kind::Scan, 50.0, 56.0, 40.0),
        ];
        assert_eq!(choose_binding(&runs), Bind::Close);
        // Winning on one kind and losing on another is no win.
        let runs = [
            bind_run(Kind::Gather, 100.0, 130.0, 90.0),
            bind_run(Kind::Scan, 50.0, 45.0, 40.0),
        ];
        assert_eq!(choose_binding(&runs), Bind::None);
        assert_eq!(choose_binding(&[]), Bind::None);
    }

    #[test]
    fn placement_verdicts() {
        let run = |kind, d, i| PlacementRun {
            kind,
            default: Some(d),
            interleave: Some(i),
        };
        assert_eq!(
            choose_placement(&[run(Kind::Gather, 10.0, 14.0), run(Kind::Scan, 20.0, 20.5)]).0,
            "interleave"
        );
        assert_eq!(
            choose_placement(&[run(Kind::Gather, 10.0, 8.0), run(Kind::Scan, 20.0, 20.0)]).0,
            "default"
        );
        assert_eq!(
            choose_placement(&[run(Kind::Gather, 10.0, 14.0), run(Kind::Scan, 20.0, 15.0)]).0,
            "auto"
        );
        assert_eq!(choose_placement(&[run(Kind::Gather, 10.0, 10.2)]).0, "auto");
        let failed = PlacementRun {
            kind: Kind::Scan,
            default: None,
            interleave: Some(1.0),
        };
        assert_eq!(choose_placement(&[failed]).0, "auto");
    }

    #[test]
    fn the_spin_window_is_the_shortest_near_the_fastest_round_trip() {
        let p = |w, rt, cpu| SpinPoint {
            window_us: w,
            round_trip_us: Some(rt),
            idle_cpus: Some(cpu),
        };
        // 16 CPUs: spinning may burn 0.8 of them, which rules out 1000 µs.
        let mut m = Measured {
            cpus: 16,
            cores: 16,
            spin: vec![
                p(0, 40.0, 0.01),
                p(10, 30.0, 0.05),
                p(100, 6.1, 0.4),
                p(1000, 5.9, 1.8),
            ],
            ..Measured::default()
        };
        let r = recommend(&m);
        assert_eq!(r.spin_us, 100);
        assert!(
            r.reasons
                .iter()
                .any(|s| s.contains("spin 100 µs") && s.contains("0.40 CPUs burned")),
            "{:?}",
            r.reasons
        );
        // With 64 CPUs the 1000 µs window is affordable, but 100 µs is
        // within the margin of its round trip.
        m.cpus = 64;
        assert_eq!(recommend(&m).spin_us, 100);
        // On 2 CPUs only the windows that burn under 0.1 CPUs count.
        m.cpus = 2;
        assert_eq!(recommend(&m).spin_us, 10);
        // Spinning buys nothing: do not spin.
        let m = Measured {
            cpus: 64,
            spin: vec![
                p(0, 20.0, 0.0),
                p(10, 19.5, 0.1),
                p(100, 19.8, 0.5),
                p(1000, 19.9, 1.0),
            ],
            ..Measured::default()
        };
        assert_eq!(recommend(&m).spin_us, 0);
    }
}
