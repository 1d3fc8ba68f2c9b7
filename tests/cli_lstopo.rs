//! On this machine, `keel topo --json` agrees with hwloc (`hwloc-calc`, from
//! the Debian package `hwloc`; `ci/deps.sh` installs it).

use std::process::Command;

mod common;

fn hwloc(args: &[&str]) -> Option<String> {
    let out = Command::new("hwloc-calc").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn count(t: &str) -> u64 {
    let out = Command::new("hwloc-calc")
        .args(["--number-of", t, "all"])
        .output()
        .unwrap_or_else(|e| panic!("hwloc-calc {t}: {e}"));
    assert!(out.status.success(), "hwloc-calc {t} failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // hwloc 2.x prints "unavailable --number-of type L3Cache" on stderr,
    // and nothing on stdout, for a level the machine lacks: zero of them.
    if stdout.trim().is_empty() && String::from_utf8_lossy(&out.stderr).contains("unavailable") {
        return 0;
    }
    stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("hwloc-calc {t}: {stdout:?}"))
}

#[test]
fn keel_topo_agrees_with_hwloc_on_this_machine() {
    if hwloc(&["--version"]).is_none() {
        common::absent("hwloc-calc not found (install the `hwloc` package, as ci/deps.sh does)");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["topo", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    if !v["fallback"].is_null() {
        panic!("keel fell back on a Linux machine: {}", v["fallback"]);
    }
    // hwloc lists the PUs the cgroup allows; keel's usable set also applies
    // this process's affinity, which the test harness leaves whole.
    let pus = hwloc(&["--physical-output", "--intersect", "pu", "all"]).unwrap();
    let ours = keel_topology_list(v["usable_cpus"].as_str().unwrap());
    assert_eq!(ours, pus, "usable CPUs");
    assert_eq!(
        v["physical_cores"].as_u64().unwrap(),
        count("core"),
        "cores"
    );
    assert_eq!(
        v["packages"].as_array().unwrap().len() as u64,
        count("package"),
        "packages"
    );
    assert_eq!(
        v["numa_nodes"].as_array().unwrap().len() as u64,
        count("numanode"),
        "NUMA nodes"
    );
    let caches = v["caches"].as_array().unwrap();
    for (level, name) in [(1, "l1dcache"), (2, "l2cache"), (3, "l3cache")] {
        let n = caches
            .iter()
            .filter(|c| c["level"] == level && c["kind"] != "instruction")
            .count() as u64;
        assert_eq!(n, count(name), "{name}");
    }
}

/// `0-2,5` as hwloc-calc prints it: `0,1,2,5`.
fn keel_topology_list(s: &str) -> String {
    let set = keel_rt::topology::parse::parse_cpulist(s).unwrap();
    set.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Without `hwloc-calc` the comparison skips on a user's clone and fails
/// under CI.
#[test]
fn missing_hwloc_calc_fails_under_ci() {
    common::check_missing_oracle(
        "keel_topo_agrees_with_hwloc_on_this_machine",
        true,
        "hwloc-calc not found",
    );
}
