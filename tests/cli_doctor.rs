//! `keel doctor` as CI runs it: a quick run with JSON and a report folder,
//! a run whose children crash and hang, and bad arguments. The machine may
//! be loaded, so nothing here depends on what was measured, only on the
//! measurements being there, consistent, and drawn.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use keel_rt::pool::settings::{self, Settings};
use keel_rt::pool::{Pool, Source};
use serde_json::Value;

/// Runs `keel` with `args` and `env`, killed if it outlives `limit` (a
/// doctor that hangs must fail the test, not stall CI).
fn keel(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_keel"));
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("run keel");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "keel {args:?} ran past {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("keel-doctor-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// The texts of an SVG file, after checking that it parses as XML.
fn svg_texts(path: &Path) -> (Vec<String>, usize, usize) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc =
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    let count = |tag| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
    (texts, count("polyline"), count("rect"))
}

fn has(texts: &[String], want: &str) -> bool {
    texts.iter().any(|t| t.contains(want))
}

#[test]
fn quick_run_writes_json_report_plots_and_config() {
    let dir = temp("quick");
    let out = keel(
        &[
            "doctor",
            "--quick",
            "--json",
            "--out",
            dir.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(900),
    );
    let v = json(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    // The expected duration is said before the run starts.
    assert!(
        err.contains("measurements") && err.contains("expected duration about"),
        "{err}"
    );
    let cpus = v["machine"]["usable_cpus"].as_u64().unwrap() as usize;
    let cores = v["machine"]["physical_cores"].as_u64().unwrap() as usize;
    let nodes = v["machine"]["numa_nodes"].as_array().unwrap().len();
    assert!(1 <= cores && cores <= cpus);
    assert_eq!(v["quick"], true);
    // `keel topo` gives the size of one last-level cache; the doctor sizes
    // its buffers from all of them, and names its field for that.
    let topo: Value = json(&keel(&["topo", "--json"], &[], Duration::from_secs(60)));
    let caches = topo["caches"].as_array().unwrap();
    let deepest = caches.iter().filter(|c| c["kind"] != "instruction");
    let level = deepest.clone().map(|c| c["level"].as_u64().unwrap()).max();
    let total: u64 = deepest
        .filter(|c| c["level"].as_u64() == level)
        .map(|c| c["size_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(v["machine"]["last_level_cache_total_bytes"], total);
    assert!(v["machine"]["last_level_cache_bytes"].is_null());
    let failures = v["failures"].as_array().unwrap();
    let failed: Vec<&str> = failures.iter().map(|f| f["id"].as_str().unwrap()).collect();

    // Width: every kind, from 1 to the usable CPUs, the core count among them.
    let width = v["width"].as_array().unwrap();
    let kinds: Vec<&str> = width.iter().map(|w| w["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["scan", "gather", "compute"]);
    for w in width {
        let widths: Vec<usize> = w["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["width"].as_u64().unwrap() as usize)
            .collect();
        assert_eq!(widths.first(), Some(&1));
        assert_eq!(widths.last(), Some(&cpus));
        assert!(widths.contains(&cores), "{widths:?}");
        let knee = w["knee"].as_u64().unwrap() as usize;
        assert!(widths.contains(&knee), "knee {knee} in {widths:?}");
        for p in w["points"].as_array().unwrap() {
            // A point is measured, or its measurement is listed as failed.
            let id_part = format!("{}/w{}/", w["kind"].as_str().unwrap(), p["width"]);
            assert!(
                p["median"].as_f64().is_some_and(|m| m > 0.0)
                    || failed.iter().any(|f| f.starts_with(&id_part)),
                "{p}"
            );
        }
    }

    // The recommendation, its config file and the same settings as
    // environment lines.
    let rec = &v["recommendation"];
    let workers = rec["workers"].as_u64().unwrap() as usize;
    assert!(1 <= workers && workers <= cpus);
    assert!(["none", "close", "spread"].contains(&rec["binding"].as_str().unwrap()));
    assert!([0, 10, 100, 1000].contains(&rec["spin_us"].as_u64().unwrap()));
    if nodes < 2 {
        assert_eq!(rec["placement"], "auto");
        assert!(
            v["placement"]["skipped"]
                .as_str()
                .unwrap()
                .contains("1 NUMA node")
        );
    }
    let conf = dir.join("keel.conf");
    let file = std::fs::read_to_string(&conf).unwrap();
    assert_eq!(file, rec["config_file"].as_str().unwrap());
    let lines: Vec<&str> = file.lines().filter(|l| !l.starts_with('#')).collect();
    let env: Vec<String> = rec["environment"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| l.strip_prefix("export ").unwrap().to_string())
        .collect();
    assert_eq!(lines, env);
    // The pool reads the file as KEEL_CONFIG names it, and runs with it.
    let s = Settings::from_lookup(|k| (k == settings::CONFIG).then(|| conf.clone().into()));
    assert!(s.notes().is_empty(), "{:?}", s.notes());
    assert_eq!(s.file(), Some(conf.as_path()));
    for w in width {
        let key = format!("KEEL_WIDTH_{}", w["kind"].as_str().unwrap().to_uppercase());
        assert_eq!(
            s.count(&key).map(|(n, _)| n as u64),
            w["knee"].as_u64(),
            "{key}"
        );
    }
    assert_eq!(
        s.get(settings::PLACEMENT).map(|(p, _)| p),
        rec["placement"].as_str()
    );
    let pool = Pool::builder().settings(s).build().unwrap();
    let c = pool.config();
    assert_eq!((c.width, c.width_source), (workers, Source::File));
    assert_eq!(c.spin.as_micros() as u64, rec["spin_us"].as_u64().unwrap());
    assert_eq!(c.spin_source, Source::File);
    assert_eq!(
        format!("{:?}", c.binding).to_lowercase(),
        rec["binding"].as_str().unwrap()
    );
    assert_eq!(c.binding_source, Source::File);
    drop(pool);

    // The report and one plot per question, each valid SVG with its series.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for want in [
        "--quick",
        "## Width",
        "## Binding",
        "## Placement",
        "## Spin window",
        "## Recommendation",
        "width.svg",
        "spin.svg",
    ] {
        assert!(md.contains(want), "report.md lacks {want:?}");
    }
    let (texts, lines, _) = svg_texts(&dir.join("width.svg"));
    for k in ["scan", "gather", "compute", "knee: width"] {
        assert!(has(&texts, k), "width.svg lacks {k:?}: {texts:?}");
    }
    assert!(lines >= 3, "width.svg: one line per kind, found {lines}");
    if v["binding"].as_array().unwrap().is_empty() {
        assert!(!dir.join("binding.svg").exists());
    } else {
        let (texts, _, rects) = svg_texts(&dir.join("binding.svg"));
        for b in ["none", "close", "spread"] {
            assert!(has(&texts, b), "binding.svg lacks {b:?}");
        }
        assert!(rects >= 3, "binding.svg: bars, found {rects} rects");
    }
    assert_eq!(dir.join("placement.svg").exists(), nodes >= 2);
    let (texts, lines, _) = svg_texts(&dir.join("spin.svg"));
    for w in ["0 µs", "10 µs", "100 µs", "1000 µs"] {
        assert!(has(&texts, w), "spin.svg lacks {w:?}: {texts:?}");
    }
    assert!(lines >= 1, "spin.svg: the trade-off curve");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A child that crashes and one that hangs are reported as such, as they
/// happen and in the report, and the others still run. Every width
/// measurement crashing leaves no knee to mark: the widths fall back to
/// the physical core count, and the report says why.
#[test]
fn crashing_and_hanging_children_are_reported_and_the_run_goes_on() {
    let dir = temp("inject");
    let out = keel(
        &[
            "doctor",
            "--quick",
            "--json",
            "--only",
            "width,spin",
            "--timeout",
            "3",
            "--out",
            dir.to_str().unwrap(),
        ],
        &[(
            "KEEL_DOCTOR_INJECT",
            "crash:scan,crash:gather,crash:compute,crash:spin/*/10us,hang:spin/*/100us",
        )],
        Duration::from_secs(300),
    );
    let v = json(&out);
    let failures = v["failures"].as_array().unwrap();
    let what = |suffix: &str| {
        failures
            .iter()
            .find(|f| f["id"].as_str().unwrap().ends_with(suffix))
            .map(|f| f["what"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no failure for {suffix}: {failures:?}"))
    };
    assert!(
        what("/10us").starts_with("crashed: killed by signal"),
        "{}",
        what("/10us")
    );
    assert_eq!(what("/100us"), "hung: no answer within 3 s; killed");
    // Said on stderr as it happens, even where stderr is not a terminal.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("keel doctor: spin/") && l.contains("/100us: hung")),
        "{err}"
    );
    let windows = v["spin"]["windows"].as_array().unwrap();
    for w in windows {
        let us = w["window_us"].as_u64().unwrap();
        let measured = w["round_trip_us"]["median"].is_number();
        assert_eq!(measured, us == 0 || us == 1000, "{w}");
    }
    // The recommendation comes from what was measured.
    let rec = &v["recommendation"];
    assert!([0, 1000].contains(&rec["spin_us"].as_u64().unwrap()));
    let cores = &v["machine"]["physical_cores"];
    let mut width_runs = 0;
    for w in v["width"].as_array().unwrap() {
        let kind = w["kind"].as_str().unwrap();
        width_runs += w["points"].as_array().unwrap().len();
        assert!(w["knee"].is_null(), "{kind}: a knee without measurements");
        assert_eq!(&rec["widths"][kind], cores, "{kind}");
    }
    assert_eq!(failures.len(), 2 + width_runs, "{failures:?}");
    let reasons = rec["reasons"].as_array().unwrap();
    assert!(
        reasons
            .iter()
            .filter(|r| r.as_str().unwrap().contains("no measurement succeeded"))
            .count()
            == 3,
        "{reasons:?}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!md.contains("| knee |"), "{md}");
    // The other questions were not asked, and say so.
    assert_eq!(v["placement"]["skipped"], "not asked (--only)");
    assert!(v["binding"].as_array().unwrap().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run in which no measurement succeeded still prints and writes what
/// it has (the failures, the defaults it falls back to), and exits 1, so
/// that a script does not take the defaults for measurements.
#[test]
fn a_run_with_nothing_measured_fails() {
    let dir = temp("nothing");
    let out = keel(
        &[
            "doctor",
            "--quick",
            "--json",
            "--only",
            "spin",
            "--out",
            dir.to_str().unwrap(),
        ],
        &[("KEEL_DOCTOR_INJECT", "crash:spin")],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .last()
            .unwrap_or("")
            .contains("no measurement succeeded"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["failures"].as_array().unwrap().len(), 4);
    assert!(dir.join("report.md").is_file() && dir.join("keel.conf").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn doctor_arguments() {
    let limit = Duration::from_secs(60);
    let out = keel(&["doctor", "--help"], &[], limit);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.starts_with("usage: keel doctor") && help.contains("--quick"),
        "{help}"
    );
    for (args, want) in [
        (&["doctor", "--only", "bogus"][..], "unknown question"),
        (&["doctor", "--only", ""], "--only needs a list"),
        (&["doctor", "--timeout", "soon"], "not a number of seconds"),
        (&["doctor", "--timeout", "-1"], "not a number of seconds"),
        (&["doctor", "--out"], "--out needs a directory"),
        (&["doctor", "--out", ""], "--out needs a directory"),
        (&["doctor", "--frobnicate"], "--frobnicate"),
        (
            &["doctor", "--child", "scan/w0/none/default"],
            "not a measurement ID",
        ),
    ] {
        let out = keel(args, &[], limit);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(want) && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    // A report folder that cannot be made fails before any measurement.
    let file = temp("file");
    std::fs::write(&file, "").unwrap();
    let under = file.join("report");
    let out = keel(&["doctor", "--out", under.to_str().unwrap()], &[], limit);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--out"), "{err}");
    // The plan of measurements is announced before the first one starts.
    assert!(!err.contains("measurements on"), "it measured first: {err}");
    // So does a folder that exists but takes no file.
    if Path::new("/proc/self").is_dir() {
        let out = keel(&["doctor", "--out", "/proc/self"], &[], limit);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cannot write there"), "{err}");
        assert!(!err.contains("measurements on"), "it measured first: {err}");
    }
}
