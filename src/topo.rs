//! `keel topo`: the machine as keel sees it, as a tree or as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use keel_rt::topology::{CacheKind, CpuSet, Loader, Topology, Work};
use serde_json::{Value, json};

/// `keel topo --help`.
pub const HELP: &str = "\
usage: keel topo [--json] [--root DIR]

Prints the machine as keel sees it: the CPUs this process may use, the
physical cores behind them, packages, NUMA nodes with their memory, caches,
core kinds, the container's CPU quota, and how many workers keel runs by
default for each kind of work.

options:
  --json        print JSON for scripts (the top-level field names are stable)
  --root DIR    read a recorded machine instead of this one: a directory
                holding sys/ and proc/, as hwloc's HWLOC_FSROOT
  -h, --help    print this help
";

/// What `keel topo` was asked for.
#[derive(Default)]
pub struct Options {
    /// Print the help instead.
    pub help: bool,
    /// Print JSON instead of the tree.
    pub json: bool,
    /// Read a recorded root instead of this machine.
    pub root: Option<PathBuf>,
}

/// Parses `keel topo`'s arguments (those after `topo`). They stay OS
/// strings: a root directory's name need not be UTF-8.
pub fn parse_args(p: &mut lexopt::Parser) -> Result<Options, String> {
    use lexopt::prelude::*;
    let mut o = Options::default();
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        match arg {
            Long("json") => o.json = true,
            Short('h') | Long("help") => o.help = true,
            Long("root") => {
                let dir = p.value().map_err(|_| "--root needs a directory")?;
                o.root = Some(PathBuf::from(dir));
            }
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    // An empty path would read `sys/` and `proc/` under the current
    // directory, which from `/` is this machine posing as a recorded root.
    if o.root.as_ref().is_some_and(|r| r.as_os_str().is_empty()) {
        return Err("--root needs a directory".into());
    }
    Ok(o)
}

/// Runs `keel topo` and returns what to print on stdout.
pub fn run(o: &Options) -> Result<String, String> {
    if o.help {
        return Ok(HELP.to_string());
    }
    let t = match &o.root {
        // A recorded root: its own cgroup files apply, not our affinity.
        Some(root) => Loader::new(root).load().map_err(|e| e.to_string())?,
        None => Topology::detect(),
    };
    Ok(if o.json {
        let mut s = serde_json::to_string_pretty(&to_json(&t)).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        tree(&t)
    })
}

/// The JSON document; its top-level field names are a contract for scripts.
pub fn to_json(t: &Topology) -> Value {
    let mut smt: BTreeMap<String, usize> = BTreeMap::new();
    for c in t.cores() {
        *smt.entry(c.cpus.len().to_string()).or_default() += 1;
    }
    json!({
        "usable_cpus": t.usable_cpus().to_string(),
        "online_cpus": t.online_cpus().to_string(),
        "offline_cpus": t.offline_cpus().to_string(),
        "physical_cores": t.cores().len(),
        "smt_histogram": smt,
        "packages": t.packages().iter().map(|p| json!({
            "os_index": p.os_index,
            "cpus": p.cpus.to_string(),
        })).collect::<Vec<_>>(),
        "dies": t.dies().iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        "clusters": t.clusters().iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "numa_nodes": t.numa_nodes().iter().map(|n| json!({
            "os_index": n.os_index,
            "cpus": n.cpus.to_string(),
            "memory_bytes": n.memory_bytes,
        })).collect::<Vec<_>>(),
        "caches": t.caches().iter().map(|c| json!({
            "level": c.level,
            "kind": c.kind.name(),
            "size_bytes": c.size_bytes,
            "line_bytes": c.line_bytes,
            "cpus": c.cpus.to_string(),
        })).collect::<Vec<_>>(),
        "last_level_cache_bytes": last_level(t),
        "core_kinds": t.core_kinds().iter().map(|k| json!({
            "cpus": k.cpus.to_string(),
            "label": k.label,
        })).collect::<Vec<_>>(),
        "cpu_quota": t.cpu_quota(),
        "workers": {
            "bandwidth": t.workers_for(Work::Bandwidth),
            "latency": t.workers_for(Work::Latency),
            // What the bandwidth count counts: physical cores, or usable
            // CPUs where the machine reports no cores.
            "bandwidth_from": if t.cores().is_empty() { "usable_cpus" } else { "physical_cores" },
            "capped_by_quota": capped_by_quota(t, Work::Bandwidth) || capped_by_quota(t, Work::Latency),
        },
        "fallback": t.fallback(),
    })
}

/// Size of one instance of the deepest data or unified cache.
fn last_level(t: &Topology) -> Option<u64> {
    t.caches()
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .max_by_key(|c| (c.level, c.size_bytes))
        .map(|c| c.size_bytes)
}

fn size(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The readable tree: packages → NUMA nodes → caches → cores → CPUs (or
/// nodes above packages when a node spans several), then kinds, quota and
/// worker counts.
pub fn tree(t: &Topology) -> String {
    let mut out = String::new();
    let left_out = t.online_cpus().len().saturating_sub(t.usable_cpus().len());
    let offline = t.offline_cpus();
    let _ = writeln!(
        out,
        "Machine: {} usable CPUs ({}) of {} online{}{}",
        t.usable_cpus().len(),
        t.usable_cpus(),
        t.online_cpus().len(),
        match left_out {
            0 => String::new(),
            n => format!(
                " (the other {n} {} outside this process's CPU affinity or cgroup cpuset)",
                if n == 1 { "is" } else { "are" }
            ),
        },
        match offline.len() {
            0 => String::new(),
            1 => format!("; offline: CPU {offline}"),
            _ => format!("; offline: CPUs {offline}"),
        }
    );
    let pkgs: Vec<(String, CpuSet)> = t
        .packages()
        .iter()
        .map(|p| {
            let id = p.os_index.map_or("?".to_string(), |i| i.to_string());
            (format!("Package P#{id}"), p.cpus.clone())
        })
        .collect();
    let nodes: Vec<(String, CpuSet)> = t
        .numa_nodes()
        .iter()
        .map(|n| {
            let mem = match n.memory_bytes {
                0 => "memory unknown".to_string(),
                b => size(b),
            };
            (format!("NUMA node {} ({mem})", n.os_index), n.cpus.clone())
        })
        .collect();
    let nodes_in_pkgs = nodes
        .iter()
        .all(|(_, n)| pkgs.iter().any(|(_, p)| n.is_subset(p)));
    let (outer, inner) = if nodes_in_pkgs || pkgs.is_empty() {
        (&pkgs, &nodes)
    } else {
        (&nodes, &pkgs)
    };
    let mut levels: Vec<u8> = t.caches().iter().map(|c| c.level).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    let mut groups: Vec<(Option<&str>, CpuSet)> = outer
        .iter()
        .map(|(n, s)| (Some(n.as_str()), s.clone()))
        .collect();
    let covered = groups.iter().fold(CpuSet::new(), |a, (_, s)| a.or(s));
    let rest = t.usable_cpus().and_not(&covered);
    if !rest.is_empty() {
        groups.push((None, rest));
    }
    for (name, set) in groups {
        let depth = match name {
            Some(n) => {
                let _ = writeln!(out, "  {n}: CPUs {set}");
                2
            }
            None => 1,
        };
        let subs: Vec<(&str, CpuSet)> = inner
            .iter()
            .filter_map(|(n, s)| {
                let s = s.and(&set);
                (!s.is_empty()).then_some((n.as_str(), s))
            })
            .collect();
        let covered = subs.iter().fold(CpuSet::new(), |a, (_, s)| a.or(s));
        for (n, s) in &subs {
            let _ = writeln!(out, "{}{n}: CPUs {s}", "  ".repeat(depth));
            caches_and_cores(t, s, &levels, depth + 1, &mut out);
        }
        let rest = set.and_not(&covered);
        if !rest.is_empty() {
            caches_and_cores(t, &rest, &levels, depth, &mut out);
        }
    }
    core_kinds(t, &mut out);
    match t.cpu_quota() {
        Some(q) => {
            let _ = writeln!(
                out,
                "CPU quota: {q:.2} CPUs (the CPU time the cgroup grants per second)"
            );
        }
        None => {
            let _ = writeln!(out, "CPU quota: none");
        }
    }
    workers(t, &mut out);
    if let Some(f) = t.fallback() {
        let _ = writeln!(out, "Fallback: {f}");
    }
    out
}

/// The core kinds, with the terms of their labels said in words.
fn core_kinds(t: &Topology, out: &mut String) {
    let kinds = t.core_kinds();
    if kinds.is_empty() {
        let _ = writeln!(
            out,
            "Core kinds: not reported (nothing tells the cores apart)"
        );
        return;
    }
    const UNRANKED: &str = " (unranked)";
    if kinds.len() == 1 {
        let _ = writeln!(out, "Core kinds: one kind of core:");
    } else if kinds.iter().any(|k| k.label.ends_with(UNRANKED)) {
        let _ = writeln!(
            out,
            "Core kinds (nothing ranks them by efficiency; listed in the order found):"
        );
    } else {
        let _ = writeln!(out, "Core kinds, the most efficient first:");
    }
    let mut terms: Vec<&str> = Vec::new();
    for k in kinds {
        let label = k.label.strip_suffix(UNRANKED).unwrap_or(&k.label);
        let _ = writeln!(out, "  {label}: CPUs {}", k.cpus);
        for part in label.split(", ") {
            let term = part.split(' ').next().unwrap_or(part);
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
    }
    let words: Vec<&str> = terms
        .iter()
        .filter_map(|&term| {
            Some(match term {
                "capacity" => {
                    "capacity is the kernel's rating of a CPU's compute power, 1024 for the strongest"
                }
                "midr" => "midr is the ARM part number each CPU reports in its MIDR register",
                "base" => "base is the clock a CPU sustains",
                "max" => "max is the highest clock a CPU reaches",
                "intel_atom" => "intel_atom are Intel's efficiency cores",
                "intel_core" => "intel_core are Intel's performance cores",
                "intel_lowpower" => "intel_lowpower are Intel's low-power cores",
                _ => return None,
            })
        })
        .collect();
    if !words.is_empty() {
        let _ = writeln!(out, "  ({})", words.join("; "));
    }
}

/// Whether the CPU quota lowers `work`'s worker count.
fn capped_by_quota(t: &Topology, work: Work) -> bool {
    let uncapped = match work {
        Work::Bandwidth if t.cores().is_empty() => t.usable_cpus().len(),
        Work::Bandwidth => t.cores().len(),
        Work::Latency => t.usable_cpus().len(),
    };
    t.workers_for(work) < uncapped
}

/// The default worker counts, each with what it is for and where it came
/// from.
fn workers(t: &Topology, out: &mut String) {
    let _ = writeln!(out, "Workers keel runs by default:");
    let cores = t.cores().len();
    let cpus = t.usable_cpus().len();
    let bandwidth_from = if cores == 0 {
        format!("one per usable CPU ({cpus}), since this machine reports no physical cores")
    } else {
        format!("one per physical core ({cores})")
    };
    for (work, what, from) in [
        (
            Work::Bandwidth,
            "memory-bandwidth-bound work (scans, aggregations)",
            bandwidth_from,
        ),
        (
            Work::Latency,
            "latency-bound work (pointer chasing, random gathers)",
            format!("one per usable logical CPU ({cpus})"),
        ),
    ] {
        let n = t.workers_for(work);
        let cap = match t.cpu_quota() {
            Some(q) if capped_by_quota(t, work) => format!(", capped by the CPU quota of {q:.2}"),
            _ => String::new(),
        };
        let _ = writeln!(out, "  {n} for {what}: {from}{cap}");
    }
}

fn caches_and_cores(t: &Topology, scope: &CpuSet, levels: &[u8], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let Some((&level, rest)) = levels.split_first() else {
        for c in t.cores().iter().filter(|c| c.cpus.is_subset(scope)) {
            let cpus: Vec<String> = c.cpus.iter().map(|x| x.to_string()).collect();
            let _ = writeln!(out, "{pad}Core: CPU {}", cpus.join(", CPU "));
        }
        return;
    };
    let here: Vec<_> = t
        .caches()
        .iter()
        .filter(|c| c.level == level && c.kind != CacheKind::Instruction && c.cpus.is_subset(scope))
        .collect();
    if here.is_empty() {
        return caches_and_cores(t, scope, rest, depth, out);
    }
    let mut covered = CpuSet::new();
    for c in here {
        let name = if c.kind == CacheKind::Data { "d" } else { "" };
        let mut line = format!("{pad}L{level}{name} {}", size(c.size_bytes));
        // The instruction cache of the same CPUs shares the line.
        if let Some(i) = t
            .caches()
            .iter()
            .find(|i| i.level == level && i.kind == CacheKind::Instruction && i.cpus == c.cpus)
        {
            let _ = write!(line, " + L{level}i {}", size(i.size_bytes));
        }
        let _ = writeln!(out, "{line}: CPUs {}", c.cpus);
        covered = covered.or(&c.cpus);
        caches_and_cores(t, &c.cpus, rest, depth + 1, out);
    }
    let left = scope.and_not(&covered);
    if !left.is_empty() {
        caches_and_cores(t, &left, rest, depth, out);
    }
}
