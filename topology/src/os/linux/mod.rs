//! Linux: sysfs and procfs under a root directory.
//!
//! The reading follows hwloc's Linux backend so that a recorded root gives
//! the answers hwloc gives: cores and packages come from sibling masks
//! (`core_cpus`/`thread_siblings`, `package_cpus`/`core_siblings`), an
//! object is created by the first online CPU of its mask, and IDs are only
//! labels. Reading is plain `std::fs`, so a recorded root
//! can be replayed on any OS; only the live affinity mask needs Linux.
//!
//! One file per source: [`sysfs`] reads files under the root, [`cpus`]
//! cores, packages and caches, [`numa`] nodes, [`cpuinfo`] `proc/cpuinfo`,
//! [`cgroup`] the cpuset and quota, [`kinds`] hybrid core kinds; this file
//! puts them together.

mod cgroup;
mod cpuinfo;
mod cpus;
mod kinds;
mod numa;
mod sysfs;

use std::format;
use std::fs;
use std::io;
use std::path::Path;
use std::string::ToString;

use crate::build::Raw;
use crate::{CpuSet, TopologyError};
use cgroup::Cgroups;
use cpuinfo::CpuInfo;
use sysfs::{CPU_DIR, Res, Sysfs};

/// Where the affinity mask comes from.
pub(crate) enum AffinitySource {
    /// No restriction (a recorded root).
    None,
    /// This set (tests, or the live mask read by the caller).
    Set(CpuSet),
}

/// Reads the topology under `root`.
pub(crate) fn read_root(root: &Path, affinity: AffinitySource) -> Res<Raw> {
    // Said plainly, rather than as "no CPU information" below. Other
    // failures (a directory that cannot be searched) read as absent files.
    match fs::metadata(root) {
        Ok(m) if !m.is_dir() => {
            return Err(TopologyError::NotADirectory {
                root: root.display().to_string(),
                exists: true,
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(TopologyError::NotADirectory {
                root: root.display().to_string(),
                exists: false,
            });
        }
        _ => {}
    }
    let fs = Sysfs::new(root);
    let mut raw = Raw::default();
    let cpuinfo = CpuInfo::read(&fs)?;

    // Which CPUs exist, which are online, which have topology files.
    let dirs: CpuSet = fs.numbered(CPU_DIR, "cpu").into_iter().collect();
    let online_file = fs.cpulist(&format!("{CPU_DIR}/online"))?;
    let present = fs.cpulist(&format!("{CPU_DIR}/present"))?;
    let mut online = CpuSet::new();
    if dirs.is_empty() {
        if let Some(o) = &online_file {
            online = o.clone();
        } else if !cpuinfo.procs.is_empty() {
            online = cpuinfo.procs.iter().map(|p| p.processor).collect();
            raw.notes
                .push("no sysfs CPU directory: CPUs from proc/cpuinfo".into());
        } else if fs.path(CPU_DIR).is_dir() {
            return Err(TopologyError::NoCpusListed {
                path: fs.shown(CPU_DIR),
            });
        } else {
            return Err(TopologyError::NotASysfsRoot {
                root: root.display().to_string(),
            });
        }
    } else {
        for cpu in dirs.iter() {
            let on = match &online_file {
                Some(o) => o.contains(cpu),
                None => fs
                    .int(&format!("{CPU_DIR}/cpu{cpu}/online"))?
                    .is_none_or(|v| v != 0),
            };
            if on {
                online.insert(cpu);
            }
        }
    }
    let exist = dirs.or(present.as_ref().unwrap_or(&CpuSet::new()));
    raw.offline = exist.and_not(&online);
    // hwloc skips CPUs whose topology directory is absent.
    let topo: CpuSet = online
        .and(&dirs)
        .iter()
        .filter(|c| fs.exists(&format!("{CPU_DIR}/cpu{c}/topology")))
        .collect();

    cpus::read_cores_and_packages(&fs, &topo, &cpuinfo, &mut raw)?;
    if topo.is_empty() && !online.is_empty() {
        cpus::cores_from_cpuinfo(&cpuinfo, &online, &mut raw);
        raw.notes.push(if raw.cores.is_empty() {
            "no sysfs CPU topology and no core IDs in proc/cpuinfo: no core information".into()
        } else {
            "no sysfs CPU topology: cores and packages from proc/cpuinfo".into()
        });
    }
    cpus::read_caches(&fs, &topo, &mut raw)?;
    numa::read_numa(&fs, &online, &mut raw)?;
    // Kinds cover the CPUs with topology, as hwloc's PU set does.
    raw.core_kinds = kinds::read(&fs, &topo)?;

    // Allowed = affinity ∩ cgroup cpuset.
    let cg = Cgroups::read(&fs)?;
    let mut allowed = match affinity {
        AffinitySource::None => None,
        AffinitySource::Set(s) => Some(s),
    };
    if let Some(mems) = cg.cpuset(&fs, "mems")? {
        raw.numa_nodes
            .retain(|n| mems.contains(n.os_index as usize));
    }
    if let Some(set) = cg.cpuset(&fs, "cpus")? {
        allowed = Some(match allowed {
            Some(a) => a.and(&set),
            None => set,
        });
    }
    raw.allowed = allowed;
    raw.cpu_quota = cg.quota(&fs)?;
    raw.online = online;
    Ok(raw)
}
