//! Conformance with hwloc: every recorded machine in the shared fixtures
//! (from hwloc's own test suite) must give hwloc's answers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use keel_topology::{CacheKind, Topology};
use serde_json::Value;

/// The recorded machines, beside the repository; `KEEL_FIXTURES` points
/// elsewhere (the test below uses it to stand for a clone without them).
fn fixture_dir() -> PathBuf {
    match std::env::var_os("KEEL_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/topology"),
    }
}

/// Whether this run is CI's (`CI` set to anything but empty, `0` or
/// `false`, as CI services set it).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// An oracle this file compares against is absent. A user's clone may
/// lack it, and the test says it skipped; CI must run the check, so there
/// it is a failure.
fn absent(what: &str) {
    assert!(!in_ci(), "{what}, and CI is set: the comparison must run");
    println!("skipped: {what}");
}

/// Fixtures whose `expected` does not describe their `root/` (see the
/// crate README): `allowed-test1` holds only a cgroup cpuset that hwloc
/// applies to a synthetic machine; it has its own test below.
const NOT_A_MACHINE: &[&str] = &["allowed-test1"];

fn fixtures() -> Option<Vec<PathBuf>> {
    let dir = fixture_dir();
    if !dir.is_dir() {
        absent(&format!("fixture folder {} is absent", dir.display()));
        return None;
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    v.sort();
    Some(v)
}

fn size_hist(t: &Topology, level: u8) -> Value {
    let mut m: BTreeMap<String, u64> = BTreeMap::new();
    let mut n = 0;
    for c in t.caches() {
        if c.level == level && c.kind != CacheKind::Instruction {
            *m.entry(c.size_bytes.to_string()).or_default() += 1;
            n += 1;
        }
    }
    if n == 0 {
        return Value::Null;
    }
    serde_json::json!({ "count": n, "sizes_bytes": m })
}

/// The compared fields, from our answer, shaped like `expected`.
fn ours(t: &Topology) -> Value {
    let mut smt: BTreeMap<String, u64> = BTreeMap::new();
    for c in t.cores() {
        *smt.entry(c.cpus.len().to_string()).or_default() += 1;
    }
    serde_json::json!({
        "pu_os_indexes": t.usable_cpus().to_string(),
        "cores": t.cores().len(),
        "smt_histogram_threads_to_cores": smt,
        "packages_with_allowed_pus": t.packages().len(),
        "packages": t.packages().iter().map(|p| p.cpus.to_string()).collect::<Vec<_>>(),
        "numa_nodes_with_allowed_pus": t.numa_nodes().len(),
        "numa": t.numa_nodes().iter()
            .map(|n| serde_json::json!([n.os_index, n.cpus.to_string(), n.memory_bytes]))
            .collect::<Vec<_>>(),
        "l1d": size_hist(t, 1),
        "l2": size_hist(t, 2),
        "l3": size_hist(t, 3),
        "cpukinds": t.core_kinds().iter().map(|k| k.cpus.to_string()).collect::<Vec<_>>(),
        "cpukinds_count": t.core_kinds().len(),
        "pus_online_allowed": t.usable_cpus().len(),
        "offline_cpus": t.offline_cpus().to_string(),
        "disallowed_cpus_by_cgroup": t.online_cpus().and_not(t.usable_cpus()).to_string(),
        // hwloc's per-package core count is by containment.
        "package_ids_and_cores": t.packages().iter().map(|p| serde_json::json!([
            p.cpus.to_string(),
            p.os_index,
            t.cores().iter().filter(|c| c.cpus.is_subset(&p.cpus)).count(),
        ])).collect::<Vec<_>>(),
        "last_level_cache": last_level(t),
    })
}

/// The deepest data or unified cache level: its level, count and sizes.
fn last_level(t: &Topology) -> Value {
    let Some(level) = t
        .caches()
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .map(|c| c.level)
        .max()
    else {
        return Value::Null;
    };
    let mut h = size_hist(t, level);
    h["level"] = level.into();
    h
}

/// The same fields from hwloc's `expected`, narrowed to usable CPUs.
fn theirs(e: &Value) -> Value {
    let mut pk: Vec<String> = e["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cpus"].as_str().unwrap().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    pk.sort_by_key(|s| first_cpu(s));
    let mut numa: Vec<Value> = e["numa"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| !n["cpus"].as_str().unwrap().is_empty())
        .map(|n| serde_json::json!([n["os_index"], n["cpus"], n["local_memory_bytes"]]))
        .collect();
    numa.sort_by_key(|n| n[0].as_u64());
    let mut pk_ids: Vec<Value> = e["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["cpus"].as_str().unwrap().is_empty())
        .map(|p| serde_json::json!([p["cpus"], p["os_index"], p["cores"]]))
        .collect();
    pk_ids.sort_by_key(|p| first_cpu(p[0].as_str().unwrap()));
    let llc = match &e["last_level_cache"] {
        Value::Null => Value::Null,
        l => serde_json::json!({
            "level": l["level"],
            "count": l["count"],
            "sizes_bytes": l["sizes_bytes"],
        }),
    };
    let kinds: Vec<Value> = e["cpukinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["cpus"].clone())
        .collect();
    serde_json::json!({
        "pu_os_indexes": e["pu_os_indexes"],
        "cores": e["cores"],
        "smt_histogram_threads_to_cores": e["smt_histogram_threads_to_cores"],
        "packages_with_allowed_pus": e["packages_with_allowed_pus"],
        "packages": pk,
        "numa_nodes_with_allowed_pus": e["numa_nodes_with_allowed_pus"],
        "numa": numa,
        "l1d": e["l1d"],
        "l2": e["l2"],
        "l3": e["l3"],
        "cpukinds": kinds,
        "cpukinds_count": e["cpukinds_count"],
        "pus_online_allowed": e["pus_online_allowed"],
        "offline_cpus": e["offline_cpus"],
        "disallowed_cpus_by_cgroup": e["disallowed_cpus_by_cgroup"],
        "package_ids_and_cores": pk_ids,
        "last_level_cache": llc,
    })
}

/// Fields of `expected` not compared, and why; every other field must be.
const NOT_COMPARED: &[&str] = &[
    // The keys of the SMT histogram, which is compared.
    "smt_threads_per_core",
    // Counts CPU-less memory nodes, which keel leaves out of numa_nodes()
    // by design (their memory is in the nodes compared under `numa`).
    "total_memory_bytes",
];

fn first_cpu(s: &str) -> usize {
    keel_topology::parse::parse_cpulist(s)
        .ok()
        .and_then(|s| s.first())
        .unwrap_or(usize::MAX)
}

#[test]
fn every_fixture_agrees_with_hwloc() {
    let Some(dirs) = fixtures() else { return };
    assert!(
        dirs.len() >= 37,
        "expected 37 fixtures, found {}",
        dirs.len()
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for d in &dirs {
        let name = d.file_name().unwrap().to_string_lossy().to_string();
        if NOT_A_MACHINE.contains(&name.as_str()) {
            println!("{name}: not a whole machine, checked by its own test");
            continue;
        }
        let e: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("expected.json")).unwrap())
                .unwrap();
        let want = theirs(&e["expected"]);
        // A field hwloc's answers gain later must not go unchecked silently.
        for k in e["expected"].as_object().unwrap().keys() {
            if !want.as_object().unwrap().contains_key(k) && !NOT_COMPARED.contains(&k.as_str()) {
                failures.push(format!("{name}: expected field {k} is never compared"));
            }
        }
        match Topology::from_root(d.join("root")) {
            Ok(t) => {
                // `Core::package` names the package holding the core, or is
                // `None` when no package holds it (as documented).
                for c in t.cores() {
                    let holder = t.packages().iter().position(|p| c.cpus.is_subset(&p.cpus));
                    if holder != c.package {
                        failures.push(format!(
                            "{name}: core {} has package {:?} but lies in {holder:?}",
                            c.cpus, c.package
                        ));
                    }
                }
                let got = ours(&t);
                for (k, v) in want.as_object().unwrap() {
                    if &got[k] != v {
                        failures.push(format!("{name}: {k}: got {} want {v}", got[k]));
                    }
                }
            }
            Err(err) => failures.push(format!("{name}: error {err}")),
        }
        checked += 1;
    }
    println!("checked {checked} fixtures against hwloc's expected answers");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `allowed-test1` is only a cgroup-v1 cpuset (hwloc applies it to a
/// synthetic machine): give it 16 online CPUs and check the cpuset and
/// memory nodes it allows.
#[test]
fn allowed_test1_cpuset() {
    let Some(dirs) = fixtures() else { return };
    let Some(src) = dirs.iter().find(|d| d.ends_with("allowed-test1")) else {
        panic!("allowed-test1 missing from the fixtures");
    };
    let tmp = std::env::temp_dir().join(format!("keel-allowed-test1-{}", std::process::id()));
    copy_dir(&src.join("root"), &tmp);
    let cpu = tmp.join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(cpu.join("online"), "0-15\n").unwrap();
    for n in 0..4 {
        let d = tmp.join(format!("sys/devices/system/node/node{n}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cpumap"), format!("{:x}\n", 0xfu32 << (4 * n))).unwrap();
    }
    let t = Topology::from_root(&tmp).unwrap();
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(t.usable_cpus().to_string(), "1-6,10,12-14");
    let nodes: Vec<u32> = t.numa_nodes().iter().map(|n| n.os_index).collect();
    assert_eq!(nodes, [1, 2], "mems 1-2 allowed");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// Dies are not in `expected`; ask hwloc itself where it is installed.
#[test]
fn dies_agree_with_hwloc_calc() {
    let Some(dirs) = fixtures() else { return };
    if std::process::Command::new("hwloc-calc")
        .arg("--version")
        .output()
        .is_err()
    {
        absent("hwloc-calc not found (install the `hwloc` package, as ci/deps.sh does)");
        return;
    }
    let mut checked = 0;
    for d in &dirs {
        let root = d.join("root");
        if !root
            .join("sys/devices/system/cpu/cpu0/topology/die_cpus")
            .exists()
        {
            continue;
        }
        let out = std::process::Command::new("hwloc-calc")
            .args(["--number-of", "die", "all"])
            .env("HWLOC_FSROOT", &root)
            .env("HWLOC_COMPONENTS", "linux,stop")
            .output()
            .unwrap();
        // A failed or unparsable hwloc answer is a failure, not a 0 that
        // happens to match.
        assert!(
            out.status.success(),
            "hwloc-calc on {}: {}",
            root.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let theirs: usize = if stdout.trim().is_empty()
            && String::from_utf8_lossy(&out.stderr).contains("unavailable")
        {
            // hwloc 2.x: "unavailable --number-of type Die" when it made
            // no die objects.
            0
        } else {
            stdout.trim().parse().expect("hwloc-calc prints a number")
        };
        let t = Topology::from_root(&root).unwrap();
        assert_eq!(t.dies().len(), theirs, "{}", d.display());
        checked += 1;
    }
    assert!(checked >= 4, "fixtures with die_cpus: {checked}");
}

/// Under CI a missing oracle fails the test instead of skipping it; on a
/// user's clone it still skips, and says so. Runs this file's own tests in
/// a child with the fixtures (`KEEL_FIXTURES`) or `hwloc-calc` (`PATH`)
/// taken away.
#[test]
fn a_missing_oracle_fails_under_ci_and_skips_elsewhere() {
    let empty = std::env::temp_dir().join(format!("keel-no-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let run = |test: &str, ci: Option<&str>, no_hwloc: bool| {
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args(["--exact", test, "--nocapture", "--test-threads=1"]);
        c.env_remove("CI");
        if let Some(v) = ci {
            c.env("CI", v);
        }
        if no_hwloc {
            c.env("PATH", &empty);
        } else {
            c.env("KEEL_FIXTURES", empty.join("absent"));
        }
        c.output().unwrap()
    };
    let cases = [
        ("every_fixture_agrees_with_hwloc", false, "fixture folder"),
        ("allowed_test1_cpuset", false, "fixture folder"),
        ("dies_agree_with_hwloc_calc", true, "hwloc-calc not found"),
    ];
    for (test, no_hwloc, why) in cases {
        // The dies test needs the fixtures first; without them it stops there.
        if no_hwloc && !fixture_dir().is_dir() {
            continue;
        }
        let ci = run(test, Some("true"), no_hwloc);
        let err = String::from_utf8_lossy(&ci.stderr) + String::from_utf8_lossy(&ci.stdout);
        assert!(!ci.status.success(), "{test} passed under CI: {err}");
        assert!(
            err.contains(why) && err.contains("CI is set"),
            "{test}: {err}"
        );
        let user = run(test, None, no_hwloc);
        let out = String::from_utf8_lossy(&user.stdout);
        assert!(
            user.status.success(),
            "{test} failed on a user's clone: {out}"
        );
        assert!(out.contains(&format!("skipped: {why}")), "{test}: {out}");
    }
    std::fs::remove_dir_all(&empty).unwrap();
}
