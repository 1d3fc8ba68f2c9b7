//! `keel doctor`: measures this machine and says how to run keel on it.
//!
//! Four questions, each answered by measurement, every measurement in a
//! fresh child process of this binary (a pool's binding and a buffer's
//! pages are process-wide, so one configuration must not leak into the
//! next): how many hands each kind of work wants (the width knee, physical
//! cores against logical CPUs), whether binding workers helps, whether
//! interleaving pages over NUMA nodes helps, and what the spin window costs
//! and buys. [`recommend`] turns the curves into settings, written as the
//! config file `KEEL_CONFIG` names.

mod args;
mod child;
mod plot;
pub mod recommend;
mod report;
mod spawn;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use keel_rt::topology::Topology;
use serde_json::Value;

pub use args::{HELP, Options, Question, parse_args};
use child::{Budget, Job, Place};
use recommend::{Bind, Kind};

/// What the machine offers, as the measurements see it.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Usable logical CPUs.
    pub cpus: usize,
    /// Physical cores among them.
    pub cores: usize,
    /// NUMA node numbers.
    pub nodes: Vec<u32>,
    /// The last-level data caches, all instances together.
    pub llc_bytes: u64,
}

impl Machine {
    fn detect() -> Machine {
        Machine::of(&Topology::detect())
    }

    fn of(t: &Topology) -> Machine {
        let cpus = t.usable_cpus().len().max(1);
        Machine {
            cpus,
            // No core information: each CPU counts as a core, as
            // `Work::Bandwidth`'s worker count does.
            cores: match t.cores().len() {
                0 => cpus,
                n => n.min(cpus),
            },
            nodes: t.numa_nodes().iter().map(|n| n.os_index).collect(),
            llc_bytes: child::llc_bytes(t),
        }
    }

    /// The widths swept: 1, 2, 4, ... below the usable CPUs, the physical
    /// core count and the usable CPU count.
    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = std::iter::successors(Some(1usize), |&x| x.checked_mul(2))
            .take_while(|&x| x < self.cpus)
            .collect();
        w.push(self.cores);
        w.push(self.cpus);
        w.sort_unstable();
        w.dedup();
        w
    }
}

/// Per-round values of one configuration (one per child that answered).
pub type Samples = Vec<f64>;

/// One comparison: a kind of work at a width, each setting's samples.
pub struct Comparison<S> {
    /// The kind of work.
    pub kind: Kind,
    /// The width it ran at.
    pub width: usize,
    /// Per setting, the throughputs.
    pub results: Vec<(S, Samples)>,
}

impl<S: Copy> Comparison<S> {
    fn new(kind: Kind, width: usize, settings: &[S]) -> Self {
        Comparison {
            kind,
            width,
            results: settings.iter().map(|&s| (s, Vec::new())).collect(),
        }
    }
}

/// Everything one run measured.
pub struct Doctor {
    /// The machine.
    pub machine: Machine,
    /// A `--quick` run.
    pub quick: bool,
    /// Rounds of every question.
    pub rounds: usize,
    /// Width sweeps: per kind, per width, the throughputs.
    pub width: Vec<(Kind, Vec<(usize, Samples)>)>,
    /// Binding at each kind's knee.
    pub binding: Vec<Comparison<Bind>>,
    /// Placement at each kind's knee, or why it was skipped.
    pub placement: Result<Vec<Comparison<Place>>, String>,
    /// The spin windows: window, round trips, idle CPUs; and the width.
    pub spin: Vec<(u64, Samples, Samples)>,
    /// The width the spin window was measured at.
    pub spin_width: usize,
    /// Measurements that failed: ID and what happened.
    pub failures: Vec<(String, String)>,
    /// Remarks (binding the OS refused, questions not asked).
    pub notes: Vec<String>,
    /// How long the run took, and how long it was expected to take.
    pub elapsed: Duration,
    /// The estimate stated before the run.
    pub expected: Duration,
}

/// The median of `v`, if it has values.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    })
}

/// The knee of one kind's width sweep, from its medians; `None` where no
/// width was measured.
fn knee_of(points: &[(usize, Samples)]) -> Option<usize> {
    let pts: Vec<(usize, Option<f64>)> = points.iter().map(|(w, s)| (*w, median(s))).collect();
    recommend::knee(&pts, recommend::MARGIN)
}

/// Starts children and keeps count.
struct Runner {
    exe: PathBuf,
    quick: bool,
    limit: Duration,
    bar: indicatif::ProgressBar,
    failures: Vec<(String, String)>,
    binding_refused: usize,
    /// Children that answered.
    answered: usize,
}

impl Runner {
    fn measure(&mut self, job: Job) -> Option<Value> {
        let id = job.id();
        self.bar.set_message(id.clone());
        let r = spawn::run(&self.exe, &id, self.quick, self.limit);
        self.bar.inc(1);
        match r {
            Ok(v) => {
                self.answered += 1;
                if v["binding_failures"].as_u64().is_some_and(|n| n > 0) {
                    self.binding_refused += 1;
                }
                Some(v)
            }
            Err(what) => {
                // A hidden bar (stderr not a terminal) prints nothing.
                let line = format!("keel doctor: {id}: {what}");
                if self.bar.is_hidden() {
                    // (Not `eprintln!`, which panics when stderr is closed.)
                    let _ = writeln!(std::io::stderr(), "{line}");
                } else {
                    self.bar.println(line);
                }
                self.failures.push((id, what));
                None
            }
        }
    }

    fn value(&mut self, job: Job, key: &str) -> Option<f64> {
        self.measure(job)?[key].as_f64()
    }
}

const SPIN_WINDOWS_US: [u64; 4] = [0, 10, 100, 1000];
const PLACEMENT_KINDS: [Kind; 2] = [Kind::Scan, Kind::Gather];

/// What a run has to say: the text for stdout, and why the run failed
/// even so (no measurement succeeded: the output holds only defaults).
pub type Outcome = (String, Option<String>);

/// Runs `keel doctor` and returns what to print on stdout.
pub fn run(o: &Options) -> Result<Outcome, String> {
    if o.help {
        return Ok((HELP.to_string(), None));
    }
    if let Some(id) = &o.child {
        let v = child::run(id, o.quick)?;
        return Ok((format!("{v}\n"), None));
    }
    // Before measuring anything: a folder that cannot be made fails now,
    // not after minutes of measurements.
    if let Some(dir) = &o.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
        // A folder that exists but takes no file (`/proc/self`, a
        // read-only mount) fails now too.
        let probe = dir.join(".keel-doctor-write-test");
        std::fs::write(&probe, b"")
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| format!("--out {}: cannot write there: {e}", dir.display()))?;
    }
    let asked = |q| o.only.is_empty() || o.only.contains(&q);
    let machine = Machine::detect();
    let rounds = if o.quick { 1 } else { 3 };
    let widths = machine.widths();
    let placement_possible = machine.nodes.len() >= 2;
    let count = |q, n: usize| if asked(q) { rounds * n } else { 0 };
    // Children per kind of work, and spin children.
    let children = |k: Kind| {
        count(Question::Width, widths.len())
            + count(Question::Binding, Bind::ALL.len())
            + if placement_possible && PLACEMENT_KINDS.contains(&k) {
                count(Question::Placement, Place::ALL.len())
            } else {
                0
            }
    };
    let spins = count(Question::Spin, SPIN_WINDOWS_US.len());
    let total = Kind::ALL.iter().map(|&k| children(k)).sum::<usize>() + spins;
    let budget = Budget::new(o.quick);
    let expected = Kind::ALL
        .iter()
        .map(|&k| budget.child_time(k, machine.llc_bytes) * children(k) as u32)
        .sum::<Duration>()
        + budget.spin_time() * spins as u32;
    let _ = writeln!(
        std::io::stderr(),
        "keel doctor: up to {total} measurements on {} CPUs ({} cores), each in a fresh process; expected duration about {}{}",
        machine.cpus,
        machine.cores,
        report::duration(expected),
        if o.quick {
            " (--quick: one round of 0.2 s measurements on buffers twice the last-level cache: a smoke run, not for decisions)"
        } else {
            ""
        }
    );
    let limit = o
        .timeout
        .unwrap_or(Duration::from_secs(if o.quick { 60 } else { 300 }));
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] configuration {pos}/{len}, about {eta} left  {msg}",
        )
        .map_err(|e| e.to_string())?
        .progress_chars("=> "),
    );
    let mut r = Runner {
        exe: std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?,
        quick: o.quick,
        limit,
        bar,
        failures: Vec::new(),
        binding_refused: 0,
        answered: 0,
    };
    let start = Instant::now();
    let mut notes = Vec::new();

    let work = |kind, width, bind, place| Job::Work {
        kind,
        width,
        bind,
        place,
    };
    let mut width: Vec<(Kind, Vec<(usize, Samples)>)> = Kind::ALL
        .iter()
        .map(|&k| (k, widths.iter().map(|&w| (w, Vec::new())).collect()))
        .collect();
    if asked(Question::Width) {
        for round in 0..rounds {
            for (kind, points) in &mut width {
                // Alternate the order, so that drift over the run does not
                // favour small or large widths.
                let order: Vec<usize> = if round % 2 == 0 {
                    (0..points.len()).collect()
                } else {
                    (0..points.len()).rev().collect()
                };
                for i in order {
                    let w = points[i].0;
                    if let Some(v) = r.value(work(*kind, w, Bind::None, Place::Default), "value") {
                        points[i].1.push(v);
                    }
                }
            }
        }
    } else {
        width.clear();
        notes.push(
            "width: not asked (--only); binding and placement ran at the physical core count"
                .into(),
        );
    }
    let knee = |kind: Kind| -> usize {
        width
            .iter()
            .find(|(k, _)| *k == kind)
            .and_then(|(_, pts)| knee_of(pts))
            .unwrap_or(machine.cores)
    };

    let mut binding = Vec::new();
    if asked(Question::Binding) {
        for &k in &Kind::ALL {
            let w = knee(k);
            if w < 2 {
                // The calling thread is the only hand, and the pool binds
                // only its workers: there is nothing to compare.
                notes.push(format!(
                    "binding: {} not compared: at width 1 the calling thread works alone, and the pool binds only workers",
                    k.name()
                ));
                let len = r.bar.length().unwrap_or(0);
                r.bar
                    .set_length(len.saturating_sub((rounds * Bind::ALL.len()) as u64));
                continue;
            }
            binding.push(Comparison::new(k, w, &Bind::ALL));
        }
        for _ in 0..rounds {
            for c in &mut binding {
                for (b, samples) in c.results.iter_mut() {
                    if let Some(v) = r.value(work(c.kind, c.width, *b, Place::Default), "value") {
                        samples.push(v);
                    }
                }
            }
        }
    } else {
        notes.push("binding: not asked (--only)".into());
    }

    let placement = if !asked(Question::Placement) {
        Err("not asked (--only)".to_string())
    } else if !placement_possible {
        Err(format!(
            "skipped: this machine has {} NUMA node{}, so there is nothing to interleave over",
            machine.nodes.len(),
            if machine.nodes.len() == 1 { "" } else { "s" }
        ))
    } else {
        let mut runs: Vec<Comparison<Place>> = PLACEMENT_KINDS
            .iter()
            .map(|&k| Comparison::new(k, knee(k), &Place::ALL))
            .collect();
        for _ in 0..rounds {
            for c in &mut runs {
                for (p, samples) in c.results.iter_mut() {
                    if let Some(v) = r.value(work(c.kind, c.width, Bind::None, *p), "value") {
                        samples.push(v);
                    }
                }
            }
        }
        Ok(runs)
    };

    let spin_width = Kind::ALL
        .iter()
        .map(|&k| knee(k))
        .max()
        .unwrap_or(machine.cores)
        .max(1);
    let mut spin: Vec<(u64, Samples, Samples)> = Vec::new();
    if asked(Question::Spin) {
        spin = SPIN_WINDOWS_US
            .iter()
            .map(|&w| (w, Vec::new(), Vec::new()))
            .collect();
        for _ in 0..rounds {
            for (us, trips, cpus) in &mut spin {
                let job = Job::Spin {
                    width: spin_width,
                    window_us: *us,
                };
                if let Some(v) = r.measure(job)
                    && let (Some(t), Some(c)) =
                        (v["round_trip_us"].as_f64(), v["idle_cpus"].as_f64())
                {
                    trips.push(t);
                    cpus.push(c);
                }
            }
        }
    } else {
        notes.push("spin: not asked (--only)".into());
    }
    r.bar.finish_and_clear();
    if r.binding_refused > 0 {
        notes.push(format!(
            "{} measurement{} could not bind every worker (the OS refused); they ran partly unbound",
            r.binding_refused,
            if r.binding_refused == 1 { "" } else { "s" }
        ));
    }
    let doctor = Doctor {
        machine,
        quick: o.quick,
        rounds,
        width,
        binding,
        placement,
        spin,
        spin_width,
        failures: r.failures,
        notes,
        elapsed: start.elapsed(),
        expected,
    };
    let rec = recommend::recommend(&report::measured(&doctor));
    if let Some(dir) = &o.out {
        report::write_dir(dir, &doctor, &rec)?;
    }
    let text = if o.json {
        let mut s = serde_json::to_string_pretty(&report::json(&doctor, &rec))
            .map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        report::text(&doctor, &rec, o.out.as_deref())
    };
    let failed = (r.answered == 0 && !doctor.failures.is_empty()).then(|| {
        format!(
            "no measurement succeeded ({} failed); the recommendation is only the defaults",
            doctor.failures.len()
        )
    });
    Ok((text, failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_rt::topology::Loader;

    /// A machine that reports no cores (no sysfs topology, no core IDs in
    /// proc/cpuinfo) counts each usable CPU as a core, as the topology's
    /// worker count does, rather than claiming one core with SMT siblings.
    #[test]
    fn a_machine_without_core_information_has_one_core_per_cpu() {
        let root = std::env::temp_dir().join(format!("keel-doctor-nocores-{}", std::process::id()));
        for cpu in 0..4 {
            std::fs::create_dir_all(root.join(format!("sys/devices/system/cpu/cpu{cpu}"))).unwrap();
        }
        std::fs::write(root.join("sys/devices/system/cpu/online"), "0-3\n").unwrap();
        let t = Loader::new(&root).load().unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert!(t.cores().is_empty());
        let m = Machine::of(&t);
        assert_eq!((m.cpus, m.cores), (4, 4));
        assert_eq!(m.widths(), [1, 2, 4]);
    }

    #[test]
    fn widths_are_powers_of_two_then_cores_and_cpus() {
        let m = |cpus, cores| Machine {
            cpus,
            cores,
            nodes: vec![0],
            llc_bytes: 0,
        };
        assert_eq!(m(1, 1).widths(), [1]);
        assert_eq!(m(2, 2).widths(), [1, 2]);
        assert_eq!(m(48, 24).widths(), [1, 2, 4, 8, 16, 24, 32, 48]);
    }
}
