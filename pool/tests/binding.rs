//! Worker binding: the CPU choice on recorded multi-node machines, and the
//! masks bound workers really get on this machine.
#![cfg(all(not(keel_loom), feature = "topology"))]

use keel_pool::{Binding, Pool, places, plan};
use keel_topology::current_affinity;
use keel_topology::{CpuSet, Topology};
use std::collections::HashSet;
use std::sync::Mutex;

fn fixture(name: &str) -> Option<Topology> {
    let root = format!(
        "{}/../../shared/fixtures/topology/{name}/root",
        env!("CARGO_MANIFEST_DIR")
    );
    if !std::path::Path::new(&root).is_dir() {
        // A user's clone may lack the recorded machines; CI (`CI` set, as
        // CI services set it) must check them.
        let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
        assert!(
            !ci,
            "fixture {root} is absent, and CI is set: the check must run"
        );
        println!("skipping fixture {name}: {root} is absent");
        return None;
    }
    Some(Topology::from_root(&root).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// The group Spread alternates over for the core whose CPUs are `place`:
/// its NUMA node, else its package.
fn group(t: &Topology, place: &CpuSet) -> usize {
    let core = t
        .cores()
        .iter()
        .find(|c| &c.cpus == place)
        .expect("a place is a core");
    core.numa_node.unwrap_or(core.package.unwrap_or(0))
}

/// Properties every plan must have, checked on every fixture given.
fn check(name: &str, t: &Topology) {
    let cores: HashSet<String> = t.cores().iter().map(|c| c.cpus.to_string()).collect();
    let groups: HashSet<usize> = t
        .cores()
        .iter()
        .map(|c| c.numa_node.unwrap_or(c.package.unwrap_or(0)))
        .collect();
    for mode in [Binding::Close, Binding::Spread] {
        let p = places(t.cores(), mode);
        // Every core once.
        let got: HashSet<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(p.len(), t.cores().len(), "{name} {mode:?}");
        assert_eq!(got, cores, "{name} {mode:?}");
        let g: Vec<usize> = p.iter().map(|c| group(t, c)).collect();
        match mode {
            // Close fills one group before the next.
            Binding::Close => assert!(g.windows(2).all(|w| w[0] <= w[1]), "{name}: {g:?}"),
            // Spread: the first |groups| workers land on distinct groups.
            Binding::Spread => {
                let first: HashSet<usize> = g.iter().take(groups.len()).copied().collect();
                assert_eq!(first.len(), groups.len(), "{name}: {g:?}");
            }
            Binding::None => unreachable!(),
        }
    }
    // More workers than cores reuse places in order; None binds nothing.
    let n = t.cores().len();
    let pl = plan(t, Binding::Close, n + 1);
    assert_eq!(pl[n], pl[0], "{name}");
    assert!(plan(t, Binding::None, 4).iter().all(Option::is_none));
}

#[test]
fn recorded_multi_node_machines() {
    if cfg!(miri) {
        println!("skipping under Miri: reading the fixture trees needs file access");
        return;
    }
    let mut ran = 0;
    for name in [
        "16amd64-8n2c",
        "64fake-4n2s2ca2c2t",
        "16em64t-4s2c2t",
        "8ia64-2n2s2c",
        "40intel64-4n10c+pci-conflicts",
    ] {
        let Some(t) = fixture(name) else { continue };
        check(name, &t);
        ran += 1;
    }
    // 8 NUMA nodes of 2 cores: Close keeps workers 0 and 1 on one node,
    // Spread puts workers 0..8 on 8 different nodes.
    if let Some(t) = fixture("16amd64-8n2c") {
        assert_eq!(t.numa_nodes().len(), 8);
        let close = plan(&t, Binding::Close, 2);
        let spread = plan(&t, Binding::Spread, 8);
        let node = |s: &Option<CpuSet>| group(&t, s.as_ref().unwrap());
        assert_eq!(node(&close[0]), node(&close[1]));
        let nodes: HashSet<usize> = spread.iter().map(node).collect();
        assert_eq!(nodes.len(), 8);
    }
    println!("{ran} fixtures checked");
}

/// Each bound worker's `sched_getaffinity` mask is exactly its planned core.
#[test]
fn bound_workers_masks_on_this_machine() {
    if cfg!(miri) {
        println!("skipping under Miri: sched_setaffinity is a foreign call it cannot run");
        return;
    }
    let t = Topology::detect();
    if t.cores().len() < 2 {
        println!(
            "skipping: this machine shows {} usable core(s), need 2",
            t.cores().len()
        );
        return;
    }
    let workers = t.cores().len();
    for mode in [Binding::Close, Binding::Spread, Binding::None] {
        let pool = Pool::builder()
            .width(workers + 1)
            .binding(mode)
            .topology(t.clone())
            .build()
            .unwrap();
        assert!(
            pool.binding_failures().is_empty(),
            "{:?}",
            pool.binding_failures()
        );
        let masks = Mutex::new(vec![None; workers]);
        pool.broadcast(|w| masks.lock().unwrap()[w] = Some(current_affinity().unwrap()));
        let masks = masks.into_inner().unwrap();
        let expect = plan(&t, mode, workers);
        for (w, m) in masks.iter().enumerate() {
            let m = m.as_ref().expect("every worker ran the broadcast");
            match &expect[w] {
                Some(cpus) => assert_eq!(m, cpus, "{mode:?} worker {w}"),
                // Unbound workers keep the process's mask.
                None => assert!(t.usable_cpus().is_subset(m), "{mode:?} worker {w}: {m}"),
            }
        }
        if mode != Binding::None {
            let distinct: HashSet<String> = masks.iter().map(|m| format!("{m:?}")).collect();
            assert_eq!(distinct.len(), workers, "{mode:?}: one core per worker");
        }
    }
}

/// A binding the OS refuses (the recorded machine's far CPUs do not exist
/// here) is reported by `binding_failures` as soon as `build` returns, not
/// only once the workers get round to binding themselves.
#[test]
fn binding_failures_are_known_when_build_returns() {
    if cfg!(miri) {
        println!("skipping under Miri: sched_setaffinity is a foreign call it cannot run");
        return;
    }
    let Some(t) = fixture("16amd64-8n2c") else {
        return;
    };
    let here = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = t.cores().len();
    // Close: worker w on the w-th core; count those past this machine's CPUs.
    let far = plan(&t, Binding::Close, workers)
        .iter()
        .filter(|p| {
            p.as_ref()
                .is_some_and(|s| s.first().is_some_and(|c| c >= here))
        })
        .count();
    if far == 0 {
        println!("skipping: this machine has the recorded machine's CPUs, so binding succeeds");
        return;
    }
    for _ in 0..10 {
        let pool = Pool::builder()
            .width(workers + 1)
            .binding(Binding::Close)
            .topology(t.clone())
            .spin_window(std::time::Duration::ZERO)
            .build()
            .unwrap();
        let failures = pool.binding_failures();
        assert!(
            failures.len() >= far,
            "{} failures reported at build, {far} workers cannot bind",
            failures.len()
        );
    }
}
