//! `keel topo` as a user runs it: on a recorded root, on garbage, and the
//! JSON field names scripts rely on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::fixture;

fn keel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(args)
        .output()
        .expect("run keel")
}

fn temp_root(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("keel-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("sys/devices/system/cpu/cpu0/topology")).unwrap();
    d
}

#[test]
fn json_on_a_fixture_matches_hwloc() {
    let Some(f) = fixture("16em64t-4s2c2t-offlines") else {
        return;
    };
    let out = keel(&["topo", "--json", "--root", f.join("root").to_str().unwrap()]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.join("expected.json")).unwrap()).unwrap();
    let e = &e["expected"];
    assert_eq!(v["usable_cpus"], e["pu_os_indexes"]);
    assert_eq!(v["offline_cpus"], e["offline_cpus"]);
    assert_eq!(v["physical_cores"], e["cores"]);
    assert_eq!(v["smt_histogram"], e["smt_histogram_threads_to_cores"]);
    assert_eq!(
        v["packages"].as_array().unwrap().len() as u64,
        e["packages_with_allowed_pus"].as_u64().unwrap()
    );
    assert_eq!(v["workers"]["bandwidth"], e["cores"]);
    assert_eq!(v["workers"]["latency"], e["pus_online_allowed"]);
    assert!(v["cpu_quota"].is_null());
    assert!(v["fallback"].is_null());
    // Every field scripts rely on, with its type.
    for k in ["usable_cpus", "online_cpus", "offline_cpus"] {
        assert!(v[k].is_string(), "{k}");
    }
    for k in ["packages", "numa_nodes", "caches", "core_kinds"] {
        assert!(v[k].is_array(), "{k}");
    }
    let n = &v["numa_nodes"][0];
    assert!(n["os_index"].is_u64() && n["cpus"].is_string() && n["memory_bytes"].is_u64());
    let c = &v["caches"][0];
    assert!(c["level"].is_u64() && c["size_bytes"].is_u64() && c["cpus"].is_string());
    assert!(["data", "instruction", "unified"].contains(&c["kind"].as_str().unwrap()));
}

#[test]
fn tree_on_a_fixture_shows_every_level() {
    let Some(f) = fixture("nvidia-dgx-gb10") else {
        return;
    };
    let out = keel(&["topo", "--root", f.join("root").to_str().unwrap()]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    for want in [
        "Package P#36",
        "NUMA node 0",
        "L3 16 MiB",
        "L1d 64 KiB",
        "Core: CPU 19",
        "20 for memory-bandwidth-bound work (scans, aggregations): one per physical core (20)",
        "20 for latency-bound work (pointer chasing, random gathers): one per usable logical CPU (20)",
    ] {
        assert!(s.contains(want), "missing {want:?} in:\n{s}");
    }
    // Two kinds, the efficient cores first.
    let kinds = s.split("Core kinds").nth(1).unwrap();
    assert!(kinds.find("CPUs 0-4,10-14").unwrap() < kinds.find("CPUs 5-9,15-19").unwrap());
}

/// The first line says why online CPUs are not usable, and names the
/// offline ones as CPUs rather than a bare list that reads as a count.
#[test]
fn the_machine_line_explains_unusable_and_offline_cpus() {
    let Some(f) = fixture("16amd64-8n2c-cpusets") else {
        return;
    };
    let out = keel(&["topo", "--root", f.join("root").to_str().unwrap()]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    let first = s.lines().next().unwrap();
    assert_eq!(
        first,
        "Machine: 10 usable CPUs (0-3,5-6,12-15) of 15 online (the other 5 are outside \
         this process's CPU affinity or cgroup cpuset); offline: CPU 4"
    );
}

#[test]
fn garbage_root_fails_with_the_file_and_text() {
    let d = temp_root("garbage");
    std::fs::write(d.join("sys/devices/system/cpu/online"), "0-\u{1F980}\n").unwrap();
    let out = keel(&["topo", "--json", "--root", d.to_str().unwrap()]);
    std::fs::remove_dir_all(&d).unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("online") && err.contains('\u{1F980}'), "{err}");
}

#[test]
fn missing_root_and_bad_arguments_fail() {
    let out = keel(&["topo", "--root", "/nonexistent/keel/root"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/keel/root: no such directory"),
        "{err}"
    );
    let out = keel(&["topo", "--frobnicate"]);
    assert!(!out.status.success());
    let out = keel(&["topo", "--root"]);
    assert!(!out.status.success());
    // Output that cannot be written (a full disk) fails the command, with
    // a word; a closed stderr is no panic.
    if let Ok(full) = std::fs::File::create("/dev/full") {
        let out = Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["topo", "--json"])
            .stdout(full)
            .output()
            .expect("run keel");
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cannot write the output"), "{err}");
    }
    if let Ok(full) = std::fs::File::create("/dev/full") {
        let out = Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["topo", "--frobnicate"])
            .stderr(full)
            .output()
            .expect("run keel");
        assert_eq!(out.status.code(), Some(1), "a panic is 101");
    }
}

#[test]
fn live_machine_json_is_consistent() {
    let out = keel(&["topo", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bw = v["workers"]["bandwidth"].as_u64().unwrap();
    let lat = v["workers"]["latency"].as_u64().unwrap();
    assert!(1 <= bw && bw <= lat);
}

/// Arguments are OS strings: one that is not UTF-8 (a legal Linux path)
/// must get an answer or a clear error, never a panic.
#[cfg(unix)]
#[test]
fn non_utf8_arguments_do_not_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;
    let bad = OsStr::from_bytes(b"/nonexistent/\xff");
    for args in [
        vec![OsStr::new("topo"), OsStr::new("--root"), bad],
        vec![OsStr::new("topo"), bad],
        vec![bad],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A recorded root whose directory name is not UTF-8 is read, in both
/// `--root DIR` and `--root=DIR` forms.
#[cfg(unix)]
#[test]
fn non_utf8_root_directory_is_read() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt as _;
    let mut name = std::env::temp_dir().into_os_string().into_vec();
    name.extend_from_slice(format!("/keel-cli-\u{e9}\u{ff}-{}-", std::process::id()).as_bytes());
    name.push(0xff);
    let d = PathBuf::from(OsString::from_vec(name));
    std::fs::create_dir_all(d.join("sys/devices/system/cpu/cpu0/topology")).unwrap();
    std::fs::create_dir_all(d.join("sys/devices/system/cpu/cpu1/topology")).unwrap();
    std::fs::write(d.join("sys/devices/system/cpu/online"), "0-1\n").unwrap();
    let mut eq = OsString::from("--root=");
    eq.push(d.as_os_str());
    let outs = [
        Command::new(env!("CARGO_BIN_EXE_keel"))
            .args([
                OsString::from("topo"),
                "--json".into(),
                "--root".into(),
                d.clone().into(),
            ])
            .output()
            .unwrap(),
        Command::new(env!("CARGO_BIN_EXE_keel"))
            .args([OsString::from("topo"), "--json".into(), eq])
            .output()
            .unwrap(),
    ];
    std::fs::remove_dir_all(&d).unwrap();
    for out in outs {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["usable_cpus"], "0-1");
    }
}

/// An empty `--root` is a mistake, not "the current directory": run from
/// `/` it would silently read this machine as if it were a recorded root.
#[test]
fn empty_root_is_an_error() {
    for args in [["topo", "--root", ""].as_slice(), &["topo", "--root="]] {
        let out = Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(args)
            .current_dir("/")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--root needs a directory"), "{args:?}: {err}");
    }
}

/// Without sysfs (some containers), `keel topo` answers from proc/cpuinfo,
/// says so in `fallback`, and still exits 0; with neither, it fails cleanly.
#[test]
fn root_without_sysfs_answers_from_cpuinfo() {
    let d = std::env::temp_dir().join(format!("keel-cli-nosys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("proc")).unwrap();
    std::fs::write(
        d.join("proc/cpuinfo"),
        "processor\t: 0\nphysical id\t: 0\ncore id\t: 0\n\n\
         processor\t: 1\nphysical id\t: 0\ncore id\t: 0\n",
    )
    .unwrap();
    let out = keel(&["topo", "--json", "--root", d.to_str().unwrap()]);
    std::fs::remove_file(d.join("proc/cpuinfo")).unwrap();
    let bare = keel(&["topo", "--root", d.to_str().unwrap()]);
    std::fs::remove_dir_all(&d).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["usable_cpus"], "0-1");
    assert_eq!(v["physical_cores"], 1);
    assert!(v["fallback"].as_str().unwrap().contains("proc/cpuinfo"));
    assert_eq!(bare.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("not a Linux sysfs root"));
}

/// A recorded root is data, and hostile data may hold special files where
/// sysfs attributes belong: an endless one (a link to /dev/zero) is refused
/// after a bound instead of eating memory, and a FIFO without a writer
/// reads as empty instead of blocking forever.
#[cfg(unix)]
#[test]
fn special_files_in_a_root_neither_hang_nor_exhaust_memory() {
    use std::time::{Duration, Instant};
    let d = temp_root("special");
    let online = d.join("sys/devices/system/cpu/online");
    std::os::unix::fs::symlink("/dev/zero", &online).unwrap();
    // Under a 1 GiB address-space limit, so the unbounded read this guards
    // against ends in an allocation failure, not in the OOM killer.
    let run = |d: &Path| {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1048576; exec \"$0\" topo --root \"$1\"")
            .arg(env!("CARGO_BIN_EXE_keel"))
            .arg(d)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(child.wait_with_output().unwrap())
    };
    let out = run(&d).expect("keel topo on /dev/zero finished");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("online") && err.contains("larger than"),
        "{err}"
    );
    std::fs::remove_file(&online).unwrap();
    let made = Command::new("mkfifo").arg(&online).status();
    if !made.is_ok_and(|s| s.success()) {
        std::fs::remove_dir_all(&d).unwrap();
        println!("skipped the FIFO half: mkfifo unavailable");
        return;
    }
    let out = run(&d);
    std::fs::remove_dir_all(&d).unwrap();
    let out = out.expect("keel topo on a FIFO finished");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Without the recorded machines these tests skip on a user's clone and
/// fail under CI.
#[test]
fn missing_fixtures_fail_under_ci() {
    for test in [
        "json_on_a_fixture_matches_hwloc",
        "tree_on_a_fixture_shows_every_level",
        "the_machine_line_explains_unusable_and_offline_cpus",
    ] {
        common::check_missing_oracle(test, false, "fixture");
    }
}

/// The worker and core-kind lines say in words what their numbers are.
#[test]
fn tree_explains_kinds_and_workers() {
    let Some(f) = fixture("nvidia-dgx-gb10") else {
        return;
    };
    let out = keel(&["topo", "--root", f.join("root").to_str().unwrap()]);
    let s = String::from_utf8(out.stdout).unwrap();
    for want in [
        "Core kinds, the most efficient first:",
        "capacity is the kernel's rating of a CPU's compute power, 1024 for the strongest",
        "midr is the ARM part number",
        "Workers keel runs by default:",
    ] {
        assert!(s.contains(want), "missing {want:?} in:\n{s}");
    }
    assert!(!s.contains("Workers: bandwidth"), "{s}");
    // Kinds no source ranks are not called "efficient to performant".
    let Some(f) = fixture("fakeheterocpunuma") else {
        return;
    };
    let out = keel(&["topo", "--root", f.join("root").to_str().unwrap()]);
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("nothing ranks them by efficiency"), "{s}");
    assert!(
        !s.contains("efficient first") && !s.contains("(unranked)"),
        "{s}"
    );
}

/// A root without core information counts usable CPUs for bandwidth work,
/// and says so, in the tree and in the JSON.
#[test]
fn workers_without_core_information_say_where_they_came_from() {
    let d = std::env::temp_dir().join(format!("keel-cli-nocores-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for cpu in 0..4 {
        std::fs::create_dir_all(d.join(format!("sys/devices/system/cpu/cpu{cpu}/topology")))
            .unwrap();
    }
    std::fs::write(d.join("sys/devices/system/cpu/online"), "0-3\n").unwrap();
    let tree = keel(&["topo", "--root", d.to_str().unwrap()]);
    let json = keel(&["topo", "--json", "--root", d.to_str().unwrap()]);
    std::fs::remove_dir_all(&d).unwrap();
    let s = String::from_utf8(tree.stdout).unwrap();
    assert!(
        s.contains("4 for memory-bandwidth-bound work (scans, aggregations): one per usable CPU (4), since this machine reports no physical cores"),
        "{s}"
    );
    assert!(
        !s.contains("physical core (") && !s.contains("(physical cores)"),
        "{s}"
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["physical_cores"], 0);
    assert_eq!(v["workers"]["bandwidth"], 4);
    assert_eq!(v["workers"]["bandwidth_from"], "usable_cpus");
}

/// A CPU quota that lowers a count is named beside it.
#[test]
fn quota_capped_workers_say_so() {
    let d = temp_root("quota");
    for cpu in 1..4 {
        std::fs::create_dir_all(d.join(format!("sys/devices/system/cpu/cpu{cpu}/topology")))
            .unwrap();
    }
    std::fs::write(d.join("sys/devices/system/cpu/online"), "0-3\n").unwrap();
    std::fs::create_dir_all(d.join("proc/self")).unwrap();
    std::fs::create_dir_all(d.join("sys/fs/cgroup")).unwrap();
    std::fs::write(d.join("proc/self/cgroup"), "0::/\n").unwrap();
    std::fs::write(
        d.join("proc/self/mountinfo"),
        "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
    )
    .unwrap();
    std::fs::write(d.join("sys/fs/cgroup/cpu.max"), "150000 100000\n").unwrap();
    let tree = keel(&["topo", "--root", d.to_str().unwrap()]);
    let json = keel(&["topo", "--json", "--root", d.to_str().unwrap()]);
    std::fs::remove_dir_all(&d).unwrap();
    let s = String::from_utf8(tree.stdout).unwrap();
    assert!(s.contains("CPU quota: 1.50 CPUs"), "{s}");
    assert!(s.contains("2 for latency-bound work (pointer chasing, random gathers): one per usable logical CPU (4), capped by the CPU quota of 1.50"), "{s}");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["workers"]["latency"], 2);
    assert_eq!(v["workers"]["capped_by_quota"], true);
}

/// `keel topo --help` prints its usage on stdout and succeeds.
#[test]
fn topo_help() {
    for flag in ["--help", "-h"] {
        let out = keel(&["topo", flag]);
        assert!(out.status.success(), "{flag}");
        let s = String::from_utf8(out.stdout).unwrap();
        assert!(s.starts_with("usage: keel topo"), "{s}");
        assert!(s.contains("--root DIR") && s.contains("--json"), "{s}");
    }
}

/// A root that is a file is "not a directory"; a CPU folder that exists but
/// lists nothing is said to be empty, not missing.
#[test]
fn file_root_and_empty_cpu_folder_are_named_for_what_they_are() {
    let file = std::env::temp_dir().join(format!("keel-cli-file-{}", std::process::id()));
    std::fs::write(&file, "not a root").unwrap();
    let out = keel(&["topo", "--root", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a directory"), "{err}");
    assert!(!err.contains("no sys/devices/system/cpu"), "{err}");

    let d = std::env::temp_dir().join(format!("keel-cli-emptycpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("sys/devices/system/cpu")).unwrap();
    let out = keel(&["topo", "--root", d.to_str().unwrap()]);
    std::fs::remove_dir_all(&d).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sys/devices/system/cpu: lists no CPU"),
        "{err}"
    );
    assert!(!err.contains("no sys/devices/system/cpu"), "{err}");
}
