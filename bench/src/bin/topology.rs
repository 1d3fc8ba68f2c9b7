//! keel-topology against hwloc, loading the same recorded root.
//!
//! Two comparisons, interleaved round by round on the largest fixture (the
//! one with the most files):
//!
//! - process vs process: this binary in `--load-once ROOT` mode (start,
//!   `Topology::from_root`, print a summary, exit) against `hwloc-calc` and
//!   `lstopo-no-graphics` with `HWLOC_FSROOT=ROOT HWLOC_COMPONENTS=linux,stop`
//!   (start, load, print, exit); `/bin/true` shows the spawn floor;
//! - in-process `Topology::from_root` alone, for scale (hwloc's in-process
//!   load is not reachable without linking libhwloc, so it is not claimed).
//!
//! With `KEEL_BIN` set to a built `keel` command, `keel topo --json --root`
//! joins as the command a user runs. To compare two versions of keel in the
//! same interleaved run, `KEEL_BASELINE` names another build of this bench
//! binary (its `--load-once` process joins as "baseline process") and
//! `KEEL_BIN_BASELINE` another `keel` command.
//!
//! Usage: `cargo run --release --bin topology [-- ROUNDS]` from `bench/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use keel_bench::{Contender, cli, help, interleave, print_table, time_secs};
use keel_topology::Topology;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/fixtures/topology"
);

fn count_files(p: &Path) -> usize {
    std::fs::read_dir(p).map_or(0, |d| {
        d.filter_map(|e| e.ok())
            .map(|e| {
                if e.path().is_dir() {
                    count_files(&e.path())
                } else {
                    1
                }
            })
            .sum()
    })
}

fn hwloc(cmd: &str, root: &Path) -> Command {
    let mut c = Command::new(cmd);
    c.env("HWLOC_FSROOT", root)
        .env("HWLOC_COMPONENTS", "linux,stop")
        .env("HWLOC_DUMPED_HWDATA_DIR", "/nonexistent")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

fn run(mut c: Command) -> String {
    let out = c.output().expect("spawn");
    assert!(out.status.success(), "{c:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const USAGE: &str = "usage: topology [ROUNDS]   (default 30)";

/// What the command line asks for: load one root and exit (`--load-once
/// ROOT`, the process the driver times), or drive ROUNDS rounds.
enum Args {
    LoadOnce(PathBuf),
    Drive(usize),
}

fn args() -> Args {
    use lexopt::prelude::*;
    cli(USAGE, |args| {
        let mut rounds = 30;
        while let Some(arg) = args.next()? {
            match arg {
                Long("load-once") => return Ok(Args::LoadOnce(args.value()?.into())),
                Long("help") | Short('h') => help(USAGE),
                Value(v) => {
                    rounds = v.parse()?;
                    if rounds == 0 {
                        return Err("ROUNDS must be at least 1".into());
                    }
                }
                _ => return Err(arg.unexpected()),
            }
        }
        Ok(Args::Drive(rounds))
    })
}

fn main() {
    let rounds = match args() {
        Args::LoadOnce(root) => match Topology::from_root(&root) {
            Ok(t) => {
                println!("{} {}", t.cores().len(), t.usable_cpus());
                return;
            }
            Err(e) => {
                eprintln!("topology: {e}");
                std::process::exit(1)
            }
        },
        Args::Drive(rounds) => rounds,
    };
    let dir = Path::new(FIXTURES);
    let Ok(entries) = std::fs::read_dir(dir) else {
        println!("skipped: fixture folder {FIXTURES} is absent");
        return;
    };
    let root: PathBuf = entries
        .filter_map(|e| e.ok().map(|e| e.path().join("root")))
        .filter(|p| p.is_dir())
        .max_by_key(|p| count_files(p))
        .expect("a fixture");
    if Command::new("hwloc-calc")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipped: hwloc-calc not found (run ci/deps.sh)");
        return;
    }
    let name = root
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let me = std::env::current_exe().unwrap();

    // Agree before timing: same cores, same PUs.
    let ours = run({
        let mut c = Command::new(&me);
        c.arg("--load-once").arg(&root).stdout(Stdio::piped());
        c
    });
    let cores = run({
        let mut c = hwloc("hwloc-calc", &root);
        c.args(["--number-of", "core", "all"]);
        c
    });
    let pus = run({
        let mut c = hwloc("hwloc-calc", &root);
        c.args(["--number-of", "pu", "all"]);
        c
    });
    let t = Topology::from_root(&root).unwrap();
    assert_eq!(
        ours.split_whitespace().next(),
        Some(cores.trim()),
        "cores agree"
    );
    assert_eq!(t.usable_cpus().len().to_string(), pus.trim(), "PUs agree");
    println!(
        "fixture {name}: {} files, {} PUs, {} cores; keel and hwloc agree. {rounds} rounds, medians in ms.\n",
        count_files(&root),
        pus.trim(),
        cores.trim()
    );

    let r = root.clone();
    let meb = me.clone();
    let r2 = root.clone();
    let r3 = root.clone();
    let r4 = root.clone();
    let mut c = vec![
        Contender::new("keel process (--load-once)", move || {
            time_secs(|| {
                run({
                    let mut c = Command::new(&meb);
                    c.arg("--load-once").arg(&r).stdout(Stdio::piped());
                    c
                });
            }) * 1e3
        }),
        Contender::new("hwloc-calc --number-of core all", move || {
            time_secs(|| {
                run({
                    let mut c = hwloc("hwloc-calc", &r2);
                    c.args(["--number-of", "core", "all"]);
                    c
                });
            }) * 1e3
        }),
        Contender::new("lstopo-no-graphics", move || {
            time_secs(|| {
                run(hwloc("lstopo-no-graphics", &r3));
            }) * 1e3
        }),
        Contender::new("/bin/true (spawn floor)", || {
            time_secs(|| {
                run(Command::new("true"));
            }) * 1e3
        }),
        Contender::new("keel in-process Topology::from_root", move || {
            time_secs(|| {
                std::hint::black_box(Topology::from_root(&r4).unwrap());
            }) * 1e3
        }),
    ];
    let keel_bin = std::env::var_os("KEEL_BIN").map(PathBuf::from);
    if let Some(bin) = keel_bin.filter(|b| b.is_file()) {
        let r5 = root.clone();
        c.push(Contender::new("keel topo --json --root", move || {
            time_secs(|| {
                run({
                    let mut c = Command::new(&bin);
                    c.args(["topo", "--json", "--root"])
                        .arg(&r5)
                        .stdout(Stdio::piped());
                    c
                });
            }) * 1e3
        }));
    }
    for (var, what) in [
        ("KEEL_BASELINE", "baseline process (--load-once)"),
        ("KEEL_BIN_BASELINE", "baseline keel topo --json --root"),
    ] {
        let Some(bin) = std::env::var_os(var).map(PathBuf::from) else {
            continue;
        };
        assert!(bin.is_file(), "{var}={} is not a file", bin.display());
        let load_once = var == "KEEL_BASELINE";
        let r6 = root.clone();
        c.push(Contender::new(what, move || {
            time_secs(|| {
                run({
                    let mut c = Command::new(&bin);
                    if load_once {
                        c.arg("--load-once");
                    } else {
                        c.args(["topo", "--json", "--root"]);
                    }
                    c.arg(&r6).stdout(Stdio::piped());
                    c
                });
            }) * 1e3
        }));
    }
    let med = interleave(rounds, &mut c);
    let base = med[0];
    let rows: Vec<Vec<String>> = c
        .iter()
        .zip(&med)
        .map(|(c, m)| {
            vec![
                c.name.to_string(),
                format!("{m:.2}"),
                format!("{:.2}", m / base),
            ]
        })
        .collect();
    print_table(&["contender", "median ms", "÷ keel process"], &rows);
    println!(
        "\nhwloc-calc / keel (process vs process): {:.2}x; lstopo / keel: {:.2}x",
        med[1] / med[0],
        med[2] / med[0]
    );
}
