//! `keel doctor`'s arguments and help.

use std::path::PathBuf;
use std::time::Duration;

/// `keel doctor --help`.
pub const HELP: &str = "\
usage: keel doctor [--quick] [--json] [--out DIR] [--only QUESTIONS] [--timeout SECS]

Measures this machine and says how to run keel on it. Every measurement
runs in a fresh process, so one configuration's state never leaks into
the next. The questions:

  width      how many hands a bandwidth-bound scan, a random gather and a
             compute-bound kernel want: throughput at 1, 2, 4, ... up to the
             usable CPUs, physical cores against logical CPUs
  binding    workers unbound, packed (close) or spread over nodes, at the
             width found above
  placement  pages as first touch leaves them against interleaved over the
             NUMA nodes (skipped, with the reason, on one node)
  spin       spin windows of 0, 10, 100 and 1000 us: round trip of a small
             batch against the CPU idle workers burn

Then it recommends a width per kind of work, a binding, a placement and a
spin window, as a config file (point KEEL_CONFIG at it) and as KEEL_*
environment lines.

options:
  --quick          one round of short measurements on smaller buffers: a
                   smoke run (under a minute on a 2-core machine), not for
                   decisions
  --json           print the measurements and the recommendation as JSON
  --out DIR        write report.md, one SVG plot per question and keel.conf
  --only LIST      ask only these questions (comma-separated, as above)
  --timeout SECS   give up on a measurement after this long (default 60
                   with --quick, 300 without)
  -h, --help       print this help

A measurement that crashes or outlives --timeout is reported and the run
goes on. The exit status is 1 when no measurement succeeded (the report is
written all the same), or the arguments are wrong; else 0.
";

/// A question `keel doctor` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// The width knee per kind of work.
    Width,
    /// Worker binding.
    Binding,
    /// NUMA page placement.
    Placement,
    /// The spin window.
    Spin,
}

impl Question {
    const ALL: [Question; 4] = [
        Question::Width,
        Question::Binding,
        Question::Placement,
        Question::Spin,
    ];

    fn name(self) -> &'static str {
        match self {
            Question::Width => "width",
            Question::Binding => "binding",
            Question::Placement => "placement",
            Question::Spin => "spin",
        }
    }
}

/// What `keel doctor` was asked for.
#[derive(Default)]
pub struct Options {
    /// Print the help instead.
    pub help: bool,
    /// Short measurements, one round.
    pub quick: bool,
    /// JSON on stdout instead of the text report.
    pub json: bool,
    /// Where to write the report, plots and config file.
    pub out: Option<PathBuf>,
    /// The questions to ask (all when empty).
    pub only: Vec<Question>,
    /// The time limit of one measurement.
    pub timeout: Option<Duration>,
    /// Run as the child measuring this ID (not in the help: the parent
    /// starts children this way).
    pub child: Option<String>,
}

/// Parses `keel doctor`'s arguments (those after `doctor`).
pub fn parse_args(p: &mut lexopt::Parser) -> Result<Options, String> {
    use lexopt::prelude::*;
    let mut o = Options::default();
    let text = |v: std::ffi::OsString, what: &str| {
        v.into_string()
            .map_err(|v| format!("{what}: not UTF-8: {v:?}"))
    };
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        match arg {
            Short('h') | Long("help") => o.help = true,
            Long("quick") => o.quick = true,
            Long("json") => o.json = true,
            Long("out") => {
                let dir = p.value().map_err(|_| "--out needs a directory")?;
                if dir.is_empty() {
                    return Err("--out needs a directory".into());
                }
                o.out = Some(PathBuf::from(dir));
            }
            Long("only") => {
                let list = text(p.value().map_err(|_| "--only needs a list")?, "--only")?;
                for q in list.split(',').map(str::trim).filter(|q| !q.is_empty()) {
                    let q = Question::ALL
                        .into_iter()
                        .find(|x| x.name() == q)
                        .ok_or_else(|| {
                            format!(
                                "--only: unknown question {q:?} (width, binding, placement, spin)"
                            )
                        })?;
                    o.only.push(q);
                }
                if o.only.is_empty() {
                    return Err("--only needs a list".into());
                }
            }
            Long("timeout") => {
                let v = text(
                    p.value().map_err(|_| "--timeout needs seconds")?,
                    "--timeout",
                )?;
                let s: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1e6)
                    .ok_or_else(|| format!("--timeout: {v:?} is not a number of seconds"))?;
                o.timeout = Some(Duration::from_secs_f64(s));
            }
            Long("child") => {
                o.child = Some(text(
                    p.value().map_err(|_| "--child needs an ID")?,
                    "--child",
                )?)
            }
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    Ok(o)
}
