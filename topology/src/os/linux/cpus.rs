//! Cores, packages, dies and clusters from the sibling masks (or from
//! `proc/cpuinfo` where sysfs has no topology), and every cache instance.

use std::format;

use super::cpuinfo::CpuInfo;
use super::sysfs::{CPU_DIR, Res, Sysfs};
use crate::build::Raw;
use crate::parse;
use crate::{Cache, CacheKind, CpuSet};

pub(crate) fn read_cores_and_packages(
    fs: &Sysfs,
    topo: &CpuSet,
    info: &CpuInfo,
    raw: &mut Raw,
) -> Res<()> {
    // -1: not known yet whether SMT siblings carry their own core IDs (AMD
    // compute units, where hwloc makes one core per thread).
    let mut thread_with_core_id: i8 = if info.is_amd_with_cu { -1 } else { 0 };
    let mut cores_seen = false;
    // Each CPU and the first CPU its core list names, for CPUs no core took.
    let mut named: std::vec::Vec<(usize, usize)> = std::vec::Vec::new();
    for i in topo.iter() {
        let t = format!("{CPU_DIR}/cpu{i}/topology");
        let mut not_first_of_core = false;
        let coreset = match fs.cpumask(&format!("{t}/core_cpus"))? {
            Some(s) => Some(s),
            None => fs.cpumask(&format!("{t}/thread_siblings"))?,
        };
        if let Some(coreset) = coreset {
            cores_seen = true;
            // A CPU's own lists name it; a broken one (empty, or naming
            // only offline CPUs) must not leave it, and the package it
            // would make, out.
            let mut coreset = coreset.and(topo);
            coreset.insert(i);
            named.push((i, coreset.first().unwrap_or(i)));
            if coreset.len() > 1 && thread_with_core_id == -1 {
                let mine = fs.int(&format!("{t}/core_id"))?;
                let sib = coreset.iter().find(|&c| c != i).unwrap_or(i);
                let theirs = fs.int(&format!("{CPU_DIR}/cpu{sib}/topology/core_id"))?;
                thread_with_core_id = i8::from(mine != theirs);
            }
            not_first_of_core = coreset.first() != Some(i);
            if thread_with_core_id == 1 {
                raw.cores.push(core::iter::once(i).collect());
            } else if !not_first_of_core {
                raw.cores.push(coreset);
            }
        }
        if not_first_of_core {
            continue;
        }
        let pkg = match fs.cpumask(&format!("{t}/package_cpus"))? {
            Some(s) => Some(s),
            None => fs.cpumask(&format!("{t}/core_siblings"))?,
        };
        let pkg = pkg.map(|p| {
            let mut p = p.and(topo);
            p.insert(i);
            p
        });
        if let Some(pkg) = &pkg {
            if pkg.first() == Some(i) {
                let id = fs.int(&format!("{t}/physical_package_id"))?;
                let id = id.and_then(|v| u32::try_from(v).ok());
                raw.packages.push((id, pkg.clone()));
            }
        }
        // Dies and clusters, made by their first CPU; single-CPU ones are
        // kernel defaults on arches without them.
        let first_of = |name: &str| -> Res<Option<CpuSet>> {
            Ok(fs
                .cpumask(&format!("{t}/{name}"))?
                .map(|s| s.and(topo))
                .filter(|s| s.len() > 1 && s.first() == Some(i)))
        };
        // A die equal to its package adds no structure (hwloc drops it too).
        let die = first_of("die_cpus")?.filter(|d| Some(d) != pkg.as_ref());
        let cluster = first_of("cluster_cpus")?
            .filter(|c| Some(c) != die.as_ref() && Some(c) != pkg.as_ref());
        raw.dies.extend(die);
        raw.clusters.extend(cluster);
    }
    if !cores_seen && !topo.is_empty() {
        raw.notes
            .push("no core sibling lists in sysfs: physical cores unknown".into());
    }
    // A CPU whose list names an earlier CPU whose own list left it out
    // (lists that disagree) joins that CPU's core, or is a core alone.
    for (i, first) in named {
        if raw.cores.iter().any(|c| c.contains(i)) {
            continue;
        }
        match raw.cores.iter_mut().find(|c| c.contains(first)) {
            Some(c) => c.insert(i),
            None => raw.cores.push(core::iter::once(i).collect()),
        }
        raw.notes.push(format!(
            "cpu{i}: its core's sibling lists disagree; put in the core of cpu{first}"
        ));
    }
    Ok(())
}

pub(crate) fn cores_from_cpuinfo(info: &CpuInfo, online: &CpuSet, raw: &mut Raw) {
    use std::collections::BTreeMap;
    let mut cores: BTreeMap<(i64, i64), CpuSet> = BTreeMap::new();
    let mut pkgs: BTreeMap<i64, CpuSet> = BTreeMap::new();
    // A processor listed again (with other IDs) keeps its first entry, so
    // each CPU lies in one core and one package.
    let mut seen = CpuSet::new();
    for p in &info.procs {
        if !online.contains(p.processor) || seen.contains(p.processor) {
            continue;
        }
        seen.insert(p.processor);
        if let (Some(pk), Some(co)) = (p.physical_id, p.core_id) {
            cores.entry((pk, co)).or_default().insert(p.processor);
        }
        if let Some(pk) = p.physical_id {
            pkgs.entry(pk).or_default().insert(p.processor);
        }
    }
    raw.cores.extend(cores.into_values());
    raw.packages
        .extend(pkgs.into_iter().map(|(id, s)| (u32::try_from(id).ok(), s)));
}

pub(crate) fn read_caches(fs: &Sysfs, topo: &CpuSet, raw: &mut Raw) -> Res<()> {
    for i in topo.iter() {
        let base = format!("{CPU_DIR}/cpu{i}/cache");
        for j in fs.numbered(&base, "index") {
            let d = format!("{base}/index{j}");
            let set = match fs.cpumask(&format!("{d}/shared_cpu_map"))? {
                Some(s) => Some(s),
                None => fs.cpulist(&format!("{d}/shared_cpu_list"))?,
            };
            let Some(mut set) = set else { continue };
            if set.is_empty() {
                // ia64 reports empty maps for some caches: use the core.
                let t = format!("{CPU_DIR}/cpu{i}/topology");
                if let Some(c) = fs.cpumask(&format!("{t}/core_cpus"))? {
                    set = c;
                } else if let Some(c) = fs.cpumask(&format!("{t}/thread_siblings"))? {
                    set = c;
                }
            }
            let set = set.and(topo);
            if set.first() != Some(i) {
                continue;
            }
            let Some(level) = fs.uint(&format!("{d}/level"))? else {
                continue;
            };
            let kind = match fs.text(&format!("{d}/type"))?.as_deref().map(str::trim) {
                Some(t) if t.starts_with("Data") => CacheKind::Data,
                Some(t) if t.starts_with("Instruction") => CacheKind::Instruction,
                _ => CacheKind::Unified,
            };
            if level == 0 || level > 5 || (kind == CacheKind::Instruction && level > 3) {
                continue;
            }
            let size_bytes = fs
                .parsed(&format!("{d}/size"), parse::parse_cache_size)?
                .unwrap_or(0);
            let line = fs.uint(&format!("{d}/coherency_line_size"))?.unwrap_or(0);
            raw.caches.push(Cache {
                level: level as u8,
                kind,
                size_bytes,
                line_bytes: u32::try_from(line).unwrap_or(0),
                cpus: set,
            });
        }
    }
    Ok(())
}
