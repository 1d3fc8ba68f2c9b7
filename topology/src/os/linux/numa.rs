//! NUMA nodes: their CPUs and memory, with the CPUs of CPU-less nodes
//! taken from their initiators or their nearest nodes.

use std::format;
use std::vec::Vec;

use super::sysfs::{NODE_DIR, Res, Sysfs};
use crate::build::Raw;
use crate::parse;
use crate::{CpuSet, NumaNode, TopologyError};

pub(crate) fn read_numa(fs: &Sysfs, online: &CpuSet, raw: &mut Raw) -> Res<()> {
    // Online nodes that have a directory: one listing, then only those (a
    // hostile `online` of a million nodes cost a million failed opens).
    let dirs = fs.numbered(NODE_DIR, "node");
    let ids: Vec<usize> = match fs.cpulist(&format!("{NODE_DIR}/online"))? {
        Some(s) => dirs.into_iter().filter(|&n| s.contains(n)).collect(),
        None => dirs,
    };
    // NUMA nodes backed by NVIDIA GPU memory are not CPU-local memory.
    let gpu_nodes = gpu_numa_nodes(fs)?;
    // (os index, cpus, memory); cpus as sysfs gives them, then fixed below.
    let mut nodes: Vec<(usize, CpuSet, u64)> = Vec::new();
    for &n in &ids {
        let d = format!("{NODE_DIR}/node{n}");
        let Some(cpus) = fs.cpumask(&format!("{d}/cpumap"))? else {
            continue;
        };
        let cpus = cpus.and(online);
        if gpu_nodes.contains(n) {
            continue;
        }
        // A buggy BIOS repeats CPUs across nodes: like hwloc, keep the
        // first node and drop the repeats. A node nested in another (a
        // memory tier spanning several) is kept.
        let clash = nodes.iter().any(|(_, c, _)| {
            c.intersects(&cpus) && (c == &cpus || !(c.is_subset(&cpus) || cpus.is_subset(c)))
        });
        if clash {
            continue;
        }
        let memory_bytes = fs
            .parsed(&format!("{d}/meminfo"), parse::parse_meminfo_total)?
            .unwrap_or(0);
        nodes.push((n, cpus, memory_bytes));
    }
    // CPU-less nodes take the CPUs of their HMAT initiators, else of the
    // nodes nearest in the distance matrix (hwloc's locality fixup).
    // The distance matrix matters only for CPU-less nodes; skip reading it
    // otherwise.
    let dist = if nodes.iter().any(|(_, c, _)| c.is_empty()) {
        distances(fs, &ids)?
    } else {
        Vec::new()
    };
    for i in 0..nodes.len() {
        if !nodes[i].1.is_empty() {
            continue;
        }
        let n = nodes[i].0;
        let mut fixed = CpuSet::new();
        let mut found_initiators = false;
        for acc in ["access1", "access0"] {
            let dir = format!("{NODE_DIR}/node{n}/{acc}/initiators");
            if !fs.exists(&dir) {
                continue;
            }
            found_initiators = true;
            for m in fs.numbered(&dir, "node") {
                if m != n {
                    if let Some((_, c, _)) = nodes.iter().find(|(o, _, _)| *o == m) {
                        fixed = fixed.or(c);
                    }
                }
            }
            break;
        }
        if (!found_initiators || fixed.is_empty()) && !dist.is_empty() {
            fixed = nearest_cpus(&nodes, &ids, &dist, i);
        }
        nodes[i].1 = fixed;
    }
    raw.numa_nodes = nodes
        .into_iter()
        .map(|(n, cpus, memory_bytes)| NumaNode {
            os_index: u32::try_from(n).unwrap_or(u32::MAX),
            cpus: cpus.and(online),
            memory_bytes,
        })
        .collect();
    if raw.numa_nodes.is_empty() {
        let memory_bytes = fs
            .parsed("proc/meminfo", parse::parse_meminfo_total)?
            .unwrap_or(0);
        raw.numa_nodes.push(NumaNode {
            os_index: 0,
            cpus: online.clone(),
            memory_bytes,
        });
    }
    Ok(())
}

/// The node numbers that `proc/driver/nvidia/gpus/*/numa_status` names.
fn gpu_numa_nodes(fs: &Sysfs) -> Res<CpuSet> {
    let mut set = CpuSet::new();
    let Ok(dir) = std::fs::read_dir(fs.path("proc/driver/nvidia/gpus")) else {
        return Ok(set);
    };
    for e in dir.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(t) = fs.text(&format!("proc/driver/nvidia/gpus/{name}/numa_status"))? {
            if let Some(rest) = t.split("Node:").nth(1) {
                let v = rest.split_whitespace().next().unwrap_or("");
                if let Ok(n) = parse::parse_uint(v) {
                    if n as usize <= parse::MAX_CPU {
                        set.insert(n as usize);
                    }
                }
            }
        }
    }
    Ok(set)
}

/// The node distance matrix, row per node in `ids` order; empty when any
/// row is missing or of the wrong width.
fn distances(fs: &Sysfs, ids: &[usize]) -> Res<Vec<Vec<u64>>> {
    let mut rows = Vec::with_capacity(ids.len());
    for n in ids {
        let path = format!("{NODE_DIR}/node{n}/distance");
        let Some(t) = fs.text(&path)? else {
            return Ok(Vec::new());
        };
        let row: Result<Vec<u64>, _> = t.split_whitespace().map(parse::parse_uint).collect();
        let row = row.map_err(|error| TopologyError::Parse {
            path: fs.shown(&path),
            error,
        })?;
        if row.len() != ids.len() {
            return Ok(Vec::new());
        }
        rows.push(row);
    }
    Ok(rows)
}

fn nearest_cpus(
    nodes: &[(usize, CpuSet, u64)],
    ids: &[usize],
    dist: &[Vec<u64>],
    i: usize,
) -> CpuSet {
    let Some(row_i) = ids.iter().position(|&n| n == nodes[i].0) else {
        return CpuSet::new();
    };
    let row = &dist[row_i];
    let mut min = u64::MAX;
    let mut nb = 0;
    for (j, node) in nodes.iter().enumerate() {
        if j == i {
            continue;
        }
        let Some(col) = ids.iter().position(|&n| n == node.0) else {
            continue;
        };
        match row[col].cmp(&min) {
            core::cmp::Ordering::Less => {
                min = row[col];
                nb = 1;
            }
            core::cmp::Ordering::Equal => nb += 1,
            core::cmp::Ordering::Greater => {}
        }
    }
    if min == u64::MAX || min <= row[row_i] || nb + 1 == nodes.len() {
        return CpuSet::new();
    }
    let mut set = CpuSet::new();
    for (j, node) in nodes.iter().enumerate() {
        let col = ids.iter().position(|&n| n == node.0);
        if j != i && col.is_some_and(|c| row[c] == min) {
            set = set.or(&node.1);
        }
    }
    set
}
