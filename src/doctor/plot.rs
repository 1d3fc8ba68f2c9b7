//! One SVG plot per question, drawn with plotters: throughput against
//! width with the knee marked, bars for binding and placement, and the spin
//! window's trade-off between round trip and idle CPU.

use std::path::Path;

use plotters::prelude::*;

use super::child::Place;
use super::recommend::{Bind, Recommendation};
use super::{Comparison, Doctor, median};

type Res<T> = Result<T, String>;

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];
const FONT: &str = "sans-serif";

fn err(file: &str) -> impl Fn(String) -> String + '_ {
    move |e| format!("{file}: cannot draw: {e}")
}

/// Draws every plot the run has data for into `dir`; returns each file's
/// name and caption.
pub fn all(dir: &Path, d: &Doctor, rec: &Recommendation) -> Res<Vec<(String, String)>> {
    let mut files = Vec::new();
    if !d.width.is_empty() {
        width(&dir.join("width.svg"), d, rec).map_err(err("width.svg"))?;
        files.push(("width.svg".into(), "throughput against width".into()));
    }
    if !d.binding.is_empty() {
        let g = groups(&d.binding, Bind::name);
        bars(
            &dir.join("binding.svg"),
            "Binding: throughput ÷ unbound",
            &g,
        )
        .map_err(err("binding.svg"))?;
        files.push(("binding.svg".into(), "binding".into()));
    }
    if let Ok(runs) = &d.placement {
        let g = groups(runs, Place::name);
        bars(
            &dir.join("placement.svg"),
            "Placement: throughput ÷ first touch",
            &g,
        )
        .map_err(err("placement.svg"))?;
        files.push(("placement.svg".into(), "placement".into()));
    }
    if !d.spin.is_empty() {
        spin(&dir.join("spin.svg"), d, rec).map_err(err("spin.svg"))?;
        files.push(("spin.svg".into(), "spin window trade-off".into()));
    }
    Ok(files)
}

/// One panel per kind: throughput against width, the knee circled, the
/// physical core count marked where SMT adds CPUs beyond it.
fn width(path: &Path, d: &Doctor, rec: &Recommendation) -> Res<()> {
    let root = SVGBackend::new(path, (900, 300 * d.width.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let panels = root.split_evenly((d.width.len(), 1));
    // The widths swept are the axis' ticks: a log axis's own ticks are
    // powers of ten, which leave 2 to 8 and 16 to 64 unnamed.
    let mut ticks: Vec<f64> = d
        .width
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(w, _)| *w as f64))
        .collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let max_w = ticks.last().copied().unwrap_or(1.0);
    for (i, ((kind, pts), panel)) in d.width.iter().zip(panels.iter()).enumerate() {
        let points: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|(w, s)| median(s).map(|v| (*w as f64, v)))
            .collect();
        let top = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{}: {}", kind.name(), kind.what()), (FONT, 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (0.8f64..max_w * 1.25)
                    .log_scale()
                    .with_key_points(ticks.clone()),
                0f64..top,
            )
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("width (hands)")
            .y_desc(kind.unit())
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(kind.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| e.to_string())?;
        if d.machine.cpus > d.machine.cores {
            let c = d.machine.cores as f64;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(c, 0.0), (c, top)],
                    BLACK.mix(0.4).stroke_width(1),
                )))
                .map_err(|e| e.to_string())?
                .label(format!("physical cores ({})", d.machine.cores))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
        }
        let knee = rec
            .widths
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, w)| *w as f64);
        if let Some(k) = knee.and_then(|k| points.iter().find(|p| p.0 == k).copied()) {
            chart
                .draw_series(std::iter::once(Circle::new(
                    k,
                    8,
                    COLORS[3].stroke_width(2),
                )))
                .map_err(|e| e.to_string())?
                .label(format!("knee: width {}", k.0))
                .legend(|(x, y)| Circle::new((x + 10, y), 5, COLORS[3].stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// One group of bars per comparison, named by kind and width.
fn groups<S: Copy>(cs: &[Comparison<S>], name: fn(S) -> &'static str) -> Vec<Group> {
    cs.iter()
        .map(|c| Group {
            name: format!("{} (width {})", c.kind.name(), c.width),
            bars: c
                .results
                .iter()
                .map(|(x, s)| (name(*x), median(s)))
                .collect(),
        })
        .collect()
}

/// Bars of one group: each setting's median, shown relative to the first.
struct Group {
    name: String,
    bars: Vec<(&'static str, Option<f64>)>,
}

fn bars(path: &Path, title: &str, groups: &[Group]) -> Res<()> {
    let per = groups.iter().map(|g| g.bars.len()).max().unwrap_or(1);
    let slot = per as f64 + 1.0;
    let ratios: Vec<Vec<Option<f64>>> = groups
        .iter()
        .map(|g| {
            let base = g.bars.first().and_then(|b| b.1).filter(|&b| b > 0.0);
            g.bars
                .iter()
                .map(|(_, v)| match (v, base) {
                    (Some(v), Some(b)) => Some(v / b),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let top = ratios
        .iter()
        .flatten()
        .flatten()
        .fold(1.0f64, |a, &b| a.max(b))
        * 1.2;
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 18))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..slot * groups.len() as f64, 0f64..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc("throughput ÷ the first bar")
        .draw()
        .map_err(|e| e.to_string())?;
    let names: Vec<&'static str> = groups
        .first()
        .map(|g| g.bars.iter().map(|b| b.0).collect())
        .unwrap_or_default();
    for (j, name) in names.iter().enumerate() {
        let color = COLORS[j % COLORS.len()];
        let rects: Vec<Rectangle<(f64, f64)>> = ratios
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let v = (*r.get(j)?)?;
                let x = i as f64 * slot + 0.5 + j as f64;
                Some(Rectangle::new([(x, 0.0), (x + 0.85, v)], color.filled()))
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    // Group names under their bars, and failed bars said as such.
    for (i, g) in groups.iter().enumerate() {
        let x = i as f64 * slot + 0.5;
        chart
            .draw_series(std::iter::once(Text::new(
                g.name.clone(),
                (x, top * 0.97),
                (FONT, 15),
            )))
            .map_err(|e| e.to_string())?;
        for (j, r) in ratios[i].iter().enumerate() {
            let label = match r {
                Some(v) => format!("{v:.2}"),
                None => "failed".into(),
            };
            let y = r.unwrap_or(0.0) + top * 0.02;
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (x + j as f64, y),
                    (FONT, 13),
                )))
                .map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// Round trip against idle CPU, one point per spin window, the
/// recommended window circled.
fn spin(path: &Path, d: &Doctor, rec: &Recommendation) -> Res<()> {
    let points: Vec<(u64, f64, f64)> = d
        .spin
        .iter()
        .filter_map(|(w, t, c)| Some((*w, median(c)?, median(t)?)))
        .collect();
    let right = points.iter().map(|p| p.1).fold(0.0, f64::max).max(0.05) * 1.25;
    let top = points.iter().map(|p| p.2).fold(0.0, f64::max).max(1.0) * 1.25;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Spin window: round trip of a {}-hand batch against idle CPU",
                d.spin_width
            ),
            (FONT, 18),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..right, 0f64..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("CPUs burned by idle workers")
        .y_desc("round trip, µs")
        .draw()
        .map_err(|e| e.to_string())?;
    let xy = |p: &(u64, f64, f64)| (p.1, p.2);
    chart
        .draw_series(LineSeries::new(
            points.iter().map(xy),
            COLORS[0].stroke_width(2),
        ))
        .map_err(|e| e.to_string())?
        .label("spin windows 0 to 1000 µs")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], COLORS[0].stroke_width(2)));
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Circle::new(xy(p), 4, COLORS[0].filled())),
        )
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Text::new(format!("{} µs", p.0), (p.1, p.2 + top * 0.03), (FONT, 14))),
        )
        .map_err(|e| e.to_string())?;
    if let Some(p) = points.iter().find(|p| p.0 == rec.spin_us) {
        chart
            .draw_series(std::iter::once(Circle::new(
                xy(p),
                9,
                COLORS[3].stroke_width(2),
            )))
            .map_err(|e| e.to_string())?
            .label(format!("recommended: {} µs", p.0))
            .legend(|(x, y)| Circle::new((x + 10, y), 5, COLORS[3].stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::doctor::recommend::{self, Kind};
    use crate::doctor::{Machine, report};

    /// A made-up run on a 2-node machine of 64 CPUs on 32 cores.
    fn server() -> Doctor {
        let widths = [1usize, 2, 4, 8, 16, 32, 64];
        let curve = |f: fn(f64) -> f64| -> Vec<(usize, Vec<f64>)> {
            widths.iter().map(|&w| (w, vec![f(w as f64)])).collect()
        };
        let bars = |v: [f64; 3]| {
            Bind::ALL
                .iter()
                .zip(v)
                .map(|(&b, x)| (b, vec![x]))
                .collect()
        };
        Doctor {
            machine: Machine {
                cpus: 64,
                cores: 32,
                nodes: vec![0, 1],
                llc_bytes: 256 << 20,
            },
            quick: false,
            rounds: 1,
            width: vec![
                (Kind::Scan, curve(|w| 12.0 * w.min(10.0))),
                (
                    Kind::Gather,
                    curve(|w| 8.0 * w.min(32.0) - (w - 32.0).max(0.0)),
                ),
                (
                    Kind::Compute,
                    curve(|w| 900.0 * w.min(32.0) + (w - 32.0).max(0.0)),
                ),
            ],
            binding: vec![Comparison {
                kind: Kind::Gather,
                width: 32,
                results: bars([100.0, 90.0, 60.0]),
            }],
            placement: Ok(vec![Comparison {
                kind: Kind::Gather,
                width: 32,
                results: vec![
                    (Place::Default, vec![100.0]),
                    (Place::Interleave, vec![130.0]),
                ],
            }]),
            spin: vec![
                (0, vec![40.0], vec![0.01]),
                (10, vec![30.0], vec![0.2]),
                (100, vec![8.0], vec![1.5]),
                (1000, vec![6.0], vec![9.0]),
            ],
            spin_width: 32,
            failures: Vec::new(),
            notes: Vec::new(),
            elapsed: Duration::from_secs(60),
            expected: Duration::from_secs(60),
        }
    }

    /// The texts of an SVG file that parses as XML.
    fn texts(path: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or("").trim().to_string())
            .collect()
    }

    /// Every width measured is a tick of its own on the (logarithmic)
    /// width axis, so that a reader can tell which point is which.
    #[test]
    fn each_width_measured_is_labelled() {
        let d = server();
        let rec = recommend::recommend(&report::measured(&d));
        let dir = std::env::temp_dir().join(format!("keel-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = all(&dir, &d, &rec).unwrap();
        assert_eq!(files.len(), 4, "{files:?}");
        let t = texts(&dir.join("width.svg"));
        std::fs::remove_dir_all(&dir).unwrap();
        for w in ["1", "2", "4", "8", "16", "32", "64"] {
            assert_eq!(
                t.iter().filter(|x| *x == w).count(),
                d.width.len(),
                "width {w}, one tick a panel: {t:?}"
            );
        }
        assert!(t.iter().any(|x| x == "knee: width 16"), "{t:?}");
        assert!(t.iter().any(|x| x == "physical cores (32)"), "{t:?}");
    }
}
