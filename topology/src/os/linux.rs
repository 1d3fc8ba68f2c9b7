//! Linux: sysfs and procfs under a root directory.
//!
//! The reading follows hwloc's Linux backend (`topology-linux.c`) so that a
//! recorded root gives the answers hwloc gives: cores and packages come from
//! sibling masks (`core_cpus`/`thread_siblings`, `package_cpus`/
//! `core_siblings`), an object is created by the first online CPU of its mask,
//! and IDs are only labels. Reading is plain `std::fs`, so a recorded root
//! can be replayed on any OS; only the live affinity mask needs Linux.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use crate::build::Raw;
use crate::parse::{self, ParseError};
use crate::{Cache, CacheKind, CpuSet, NumaNode, TopologyError};

const CPU_DIR: &str = "sys/devices/system/cpu";
const NODE_DIR: &str = "sys/devices/system/node";

/// The most a file may hold: far above any real attribute or procfs table
/// (cpuinfo of 8192 CPUs is ~20 MiB), far below what would hurt.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads a whole file without asking its size first: sysfs reports 4096
/// for every attribute, so the `stat` that `fs::read` makes buys nothing.
///
/// A recorded root is data and may hold special files: the read stops at
/// [`MAX_FILE_BYTES`] (a link to `/dev/zero` would never end), and the
/// open does not block (a FIFO without a writer would wait forever; it
/// reads as empty).
fn read_small(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // No effect on regular files, sysfs or procfs.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = opts.open(path)?;
    let mut buf = Vec::with_capacity(128);
    f.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(io::Error::other(format!(
            "larger than {} MiB",
            MAX_FILE_BYTES >> 20
        )));
    }
    Ok(buf)
}

/// Files under one root, read as text.
pub(crate) struct Sysfs {
    root: PathBuf,
}

type Res<T> = Result<T, TopologyError>;

impl Sysfs {
    pub(crate) fn new(root: &Path) -> Self {
        Sysfs {
            root: root.to_path_buf(),
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    pub(crate) fn shown(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    /// The file's bytes up to its first NUL; `None` when it is absent (or
    /// unreadable the way sysfs attributes without a value are).
    fn bytes(&self, rel: &str) -> Res<Option<Vec<u8>>> {
        match read_small(&self.path(rel)) {
            Ok(mut bytes) => {
                // Some kernels (and captures of them) end attributes with a
                // NUL; like C readers, the text stops there.
                if let Some(nul) = bytes.iter().position(|&b| b == 0) {
                    bytes.truncate(nul);
                }
                Ok(Some(bytes))
            }
            Err(e) => match e.kind() {
                io::ErrorKind::NotFound
                | io::ErrorKind::NotADirectory
                | io::ErrorKind::IsADirectory
                | io::ErrorKind::PermissionDenied
                | io::ErrorKind::InvalidInput => Ok(None),
                // sysfs answers EINVAL/ENODEV/EIO for attributes that have
                // no value on this machine: that is absence, not a fault.
                _ if e.raw_os_error().is_some() => Ok(None),
                _ => Err(TopologyError::Read {
                    path: self.shown(rel),
                    reason: e.to_string(),
                }),
            },
        }
    }

    /// The file's text; `None` when it is absent (or unreadable the way
    /// sysfs attributes without a value are).
    pub(crate) fn text(&self, rel: &str) -> Res<Option<String>> {
        let Some(bytes) = self.bytes(rel)? else {
            return Ok(None);
        };
        match String::from_utf8(bytes) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(TopologyError::Parse {
                path: self.shown(rel),
                error: ParseError::new("text", &String::from_utf8_lossy(e.as_bytes()), "not UTF-8"),
            }),
        }
    }

    /// The file's text with invalid UTF-8 replaced, for tables whose lines
    /// are independent (the mount table, cpuinfo): one mount point or model
    /// name in another encoding must not hide the lines around it.
    pub(crate) fn text_lossy(&self, rel: &str) -> Res<Option<String>> {
        Ok(self
            .bytes(rel)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// The file parsed with `f`; `None` when absent or blank (sysfs writes
    /// empty files for values it does not know).
    pub(crate) fn parsed<T>(
        &self,
        rel: &str,
        f: impl Fn(&str) -> Result<T, ParseError>,
    ) -> Res<Option<T>> {
        match self.text(rel)? {
            Some(t) if !t.trim().is_empty() => {
                f(&t).map(Some).map_err(|error| TopologyError::Parse {
                    path: self.shown(rel),
                    error,
                })
            }
            _ => Ok(None),
        }
    }

    pub(crate) fn cpulist(&self, rel: &str) -> Res<Option<CpuSet>> {
        self.parsed(rel, parse::parse_cpulist)
    }

    pub(crate) fn cpumask(&self, rel: &str) -> Res<Option<CpuSet>> {
        self.parsed(rel, parse::parse_cpumask)
    }

    pub(crate) fn int(&self, rel: &str) -> Res<Option<i64>> {
        self.parsed(rel, parse::parse_int)
    }

    pub(crate) fn uint(&self, rel: &str) -> Res<Option<u64>> {
        self.parsed(rel, parse::parse_uint)
    }

    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Numbers `N` of the entries `PREFIXN` in a directory, sorted (and
    /// so unique: `N` is written without leading zeros).
    pub(crate) fn numbered(&self, rel: &str, prefix: &str) -> Vec<usize> {
        let mut v: Vec<usize> = match fs::read_dir(self.path(rel)) {
            Ok(d) => d
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name();
                    let rest = name.to_str()?.strip_prefix(prefix)?;
                    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    // Callers rebuild the name from the number: `index00`
                    // would read as a second `index0`. The kernel writes
                    // no leading zeros.
                    if rest.len() > 1 && rest.starts_with('0') {
                        return None;
                    }
                    rest.parse::<usize>().ok().filter(|&n| n <= parse::MAX_CPU)
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        v.sort_unstable();
        v
    }
}

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

    read_cores_and_packages(&fs, &topo, &cpuinfo, &mut raw)?;
    if topo.is_empty() && !online.is_empty() {
        raw.notes
            .push("no sysfs CPU topology: cores and packages from proc/cpuinfo".into());
        cores_from_cpuinfo(&cpuinfo, &online, &mut raw);
    }
    read_caches(&fs, &topo, &mut raw)?;
    read_numa(&fs, &online, &mut raw)?;
    // Kinds cover the CPUs with topology, as hwloc's PU set does.
    raw.core_kinds = crate::os::kinds::read(&fs, &topo)?;

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

fn read_cores_and_packages(fs: &Sysfs, topo: &CpuSet, info: &CpuInfo, raw: &mut Raw) -> Res<()> {
    // -1: not known yet whether SMT siblings carry their own core IDs (AMD
    // compute units, where hwloc makes one core per thread).
    let mut thread_with_core_id: i8 = if info.is_amd_with_cu { -1 } else { 0 };
    let mut cores_seen = false;
    for i in topo.iter() {
        let t = format!("{CPU_DIR}/cpu{i}/topology");
        let mut not_first_of_core = false;
        let coreset = match fs.cpumask(&format!("{t}/core_cpus"))? {
            Some(s) => Some(s),
            None => fs.cpumask(&format!("{t}/thread_siblings"))?,
        };
        if let Some(coreset) = coreset {
            cores_seen = true;
            let coreset = coreset.and(topo);
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
        let pkg = pkg.map(|p| p.and(topo));
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
    Ok(())
}

fn cores_from_cpuinfo(info: &CpuInfo, online: &CpuSet, raw: &mut Raw) {
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

fn read_caches(fs: &Sysfs, topo: &CpuSet, raw: &mut Raw) -> Res<()> {
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

fn read_numa(fs: &Sysfs, online: &CpuSet, raw: &mut Raw) -> Res<()> {
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

/// One `processor` entry of `/proc/cpuinfo`.
#[derive(Default)]
struct CpuInfoProc {
    processor: usize,
    physical_id: Option<i64>,
    core_id: Option<i64>,
}

#[derive(Default)]
struct CpuInfo {
    procs: Vec<CpuInfoProc>,
    is_amd_with_cu: bool,
}

impl CpuInfo {
    fn read(fs: &Sysfs) -> Res<CpuInfo> {
        // Lossy: firmware strings (model names, ARM `Hardware`) need not be
        // UTF-8, and only the numeric fields are read.
        let Some(text) = fs.text_lossy("proc/cpuinfo")? else {
            return Ok(CpuInfo::default());
        };
        let mut info = CpuInfo::default();
        let (mut vendor, mut family) = (None, None);
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                // Values are labels here: an unparsable one is skipped, as
                // hwloc does, because cpuinfo's format varies by arch.
                "processor" => {
                    if let Ok(p) = parse::parse_uint(v) {
                        if p as usize <= parse::MAX_CPU {
                            info.procs.push(CpuInfoProc {
                                processor: p as usize,
                                ..Default::default()
                            });
                        }
                    }
                }
                "physical id" => {
                    if let Some(p) = info.procs.last_mut() {
                        p.physical_id = parse::parse_int(v).ok();
                    }
                }
                "core id" => {
                    if let Some(p) = info.procs.last_mut() {
                        p.core_id = parse::parse_int(v).ok();
                    }
                }
                "vendor_id" if vendor.is_none() => vendor = Some(v.to_string()),
                "cpu family" if family.is_none() => family = Some(v.to_string()),
                _ => {}
            }
        }
        info.is_amd_with_cu = vendor.as_deref() == Some("AuthenticAMD")
            && matches!(family.as_deref(), Some("21") | Some("22"));
        Ok(info)
    }
}

/// The process's cgroups: where each hierarchy is mounted and the process's
/// path in it.
struct Cgroups {
    /// cgroup v2: mount point (relative to the root) and the process's path.
    v2: Option<(String, String)>,
    /// v1 cpu controller: mount point and path.
    cpu_v1: Option<(String, String)>,
    /// Where the cpuset is read: mount, path and file naming.
    cpuset: Option<(String, String, CpusetFlavor)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CpusetFlavor {
    /// cgroup v2: `cpuset.cpus.effective`.
    V2,
    /// cgroup v1: `cpuset.cpus`.
    V1,
    /// The cpuset filesystem or v1 `noprefix`: `cpus`.
    Legacy,
}

struct Mount {
    root: String,
    point: String,
    fstype: String,
    opts: String,
}

fn unescape_mount(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo. Only
    // triples up to \377 are bytes; anything else is kept as written.
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && b[i + 2..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Cgroups {
    fn mounts(fs: &Sysfs) -> Res<Vec<Mount>> {
        let mut v = Vec::new();
        if let Some(text) = fs.text_lossy("proc/self/mountinfo")? {
            for line in text.lines() {
                let Some((left, right)) = line.split_once(" - ") else {
                    continue;
                };
                let l: Vec<&str> = left.split_whitespace().collect();
                let r: Vec<&str> = right.split_whitespace().collect();
                if l.len() < 5 || r.is_empty() {
                    continue;
                }
                v.push(Mount {
                    root: unescape_mount(l[3]),
                    point: unescape_mount(l[4]),
                    fstype: r[0].to_string(),
                    opts: format!("{},{}", l.get(5).unwrap_or(&""), r.get(2).unwrap_or(&"")),
                });
            }
        }
        if v.is_empty() {
            if let Some(text) = fs.text_lossy("proc/mounts")? {
                for line in text.lines() {
                    let f: Vec<&str> = line.split_whitespace().collect();
                    if f.len() < 4 {
                        continue;
                    }
                    v.push(Mount {
                        root: "/".into(),
                        point: unescape_mount(f[1]),
                        fstype: f[2].to_string(),
                        opts: f[3].to_string(),
                    });
                }
            }
        }
        Ok(v)
    }

    fn read(fs: &Sysfs) -> Res<Cgroups> {
        let mounts = Self::mounts(fs)?;
        let has_opt = |m: &Mount, o: &str| m.opts.split(',').any(|x| x == o);
        // The process's paths: v2 (`0::/p`), v1 per controller.
        let mut v2_path = None;
        let mut first_cpuset_line: Option<String> = None;
        let mut cpu_path = None;
        if let Some(text) = fs.text("proc/self/cgroup")? {
            for line in text.lines() {
                let mut it = line.splitn(3, ':');
                let (Some(_), Some(ctrls), Some(path)) = (it.next(), it.next(), it.next()) else {
                    continue;
                };
                if ctrls.is_empty() {
                    v2_path = Some(path.to_string());
                }
                if first_cpuset_line.is_none()
                    && (ctrls.is_empty() || ctrls.split(',').any(|c| c == "cpuset"))
                {
                    first_cpuset_line = Some(path.to_string());
                }
                for c in ctrls.split(',') {
                    if c == "cpu" {
                        cpu_path = Some(path.to_string());
                    }
                }
            }
        }
        // The legacy cpuset interface names the path in /proc/self/cpuset.
        let legacy = fs
            .text("proc/self/cpuset")?
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let rel = |m: &Mount, p: &str| -> (String, String) {
            // Strip the mount's own root from the process's path (a
            // container sees its cgroup as `/`).
            let p = match p.strip_prefix(m.root.as_str()) {
                Some(rest) if m.root != "/" => rest.to_string(),
                _ => p.to_string(),
            };
            (m.point.clone(), p)
        };
        let mut cg = Cgroups {
            v2: None,
            cpu_v1: None,
            cpuset: None,
        };
        for m in &mounts {
            match m.fstype.as_str() {
                "cgroup2" if cg.v2.is_none() => {
                    if let Some(p) = &v2_path {
                        cg.v2 = Some(rel(m, p));
                    }
                }
                "cgroup" if has_opt(m, "cpu") && cg.cpu_v1.is_none() => {
                    if let Some(p) = &cpu_path {
                        cg.cpu_v1 = Some(rel(m, p));
                    }
                }
                _ => {}
            }
        }
        // The cpuset's path: the legacy file, else the first v1 cpuset or
        // v2 line (hwloc_read_linux_cgroup_name); its mount: the standard
        // places first, then the mount table.
        let Some(name) = legacy.or(first_cpuset_line) else {
            return Ok(cg);
        };
        let std_mounts = [
            (
                "sys/fs/cgroup/cpuset.cpus.effective",
                "/sys/fs/cgroup",
                CpusetFlavor::V2,
            ),
            (
                "sys/fs/cgroup/cpuset/cpuset.cpus",
                "/sys/fs/cgroup/cpuset",
                CpusetFlavor::V1,
            ),
            ("dev/cpuset/cpus", "/dev/cpuset", CpusetFlavor::Legacy),
        ];
        for (probe, mnt, flavor) in std_mounts {
            if fs.exists(probe) {
                cg.cpuset = Some((mnt.to_string(), name, flavor));
                return Ok(cg);
            }
        }
        for m in &mounts {
            let flavor = match m.fstype.as_str() {
                "cgroup2" => {
                    let ctrls = fs
                        .text(&format!("{}/cgroup.controllers", m.point))?
                        .unwrap_or_default();
                    if !ctrls.split_whitespace().any(|c| c == "cpuset") {
                        continue;
                    }
                    CpusetFlavor::V2
                }
                "cpuset" => CpusetFlavor::Legacy,
                "cgroup" if has_opt(m, "cpuset") && has_opt(m, "noprefix") => CpusetFlavor::Legacy,
                "cgroup" if has_opt(m, "cpuset") => CpusetFlavor::V1,
                _ => continue,
            };
            let (a, b) = rel(m, &name);
            cg.cpuset = Some((a, b, flavor));
            break;
        }
        Ok(cg)
    }

    /// `mount/path`, or the mount itself when the path is not there (a
    /// container whose namespace hides the outer path).
    fn dir(fs: &Sysfs, mount: &str, path: &str) -> String {
        let full = format!("{}/{}", mount.trim_end_matches('/'), path.trim_matches('/'));
        let full = full.trim_end_matches('/').to_string();
        if fs.exists(&full) {
            full
        } else {
            mount.to_string()
        }
    }

    /// The cgroup's CPUs (`cpus`) or memory nodes (`mems`), when a
    /// cpuset applies.
    fn cpuset(&self, fs: &Sysfs, attr: &str) -> Res<Option<CpuSet>> {
        let Some((m, p, flavor)) = &self.cpuset else {
            return Ok(None);
        };
        // cgroup v2 shows the file only where the parent enables the
        // controller; the nearest cgroup that has it sets the limit (its
        // effective set already folds in every ancestor's).
        for d in Self::ancestors(fs, m, p) {
            let file = match flavor {
                CpusetFlavor::V2 => format!("{d}/cpuset.{attr}.effective"),
                CpusetFlavor::V1 => format!("{d}/cpuset.{attr}"),
                CpusetFlavor::Legacy => format!("{d}/{attr}"),
            };
            if fs.exists(&file) {
                // An empty file means "not configured", not "nothing allowed".
                return fs.cpulist(&file);
            }
        }
        Ok(None)
    }

    /// The tightest quota along the path from the process's cgroup to the
    /// hierarchy's root.
    fn quota(&self, fs: &Sysfs) -> Res<Option<f64>> {
        let mut best: Option<f64> = None;
        let mut take = |q: Option<f64>| {
            if let Some(q) = q {
                best = Some(best.map_or(q, |b: f64| b.min(q)));
            }
        };
        if let Some((m, p)) = &self.v2 {
            for d in Self::ancestors(fs, m, p) {
                take(
                    fs.parsed(&format!("{d}/cpu.max"), parse::parse_cpu_max)?
                        .flatten(),
                );
            }
        }
        if let Some((m, p)) = &self.cpu_v1 {
            for d in Self::ancestors(fs, m, p) {
                // Blank is unknown, as for every other file (`parsed`).
                let read = |f: &str| -> Res<Option<String>> {
                    Ok(fs
                        .text(&format!("{d}/{f}"))?
                        .filter(|t| !t.trim().is_empty()))
                };
                let q = read("cpu.cfs_quota_us")?;
                let per = read("cpu.cfs_period_us")?;
                if let (Some(q), Some(per)) = (q, per) {
                    let v =
                        parse::parse_cfs_quota(&q, &per).map_err(|error| TopologyError::Parse {
                            // The error's `what` names the file at fault.
                            path: fs.shown(&format!("{d}/{}", error.what)),
                            error,
                        })?;
                    take(v);
                }
            }
        }
        Ok(best)
    }

    fn ancestors(fs: &Sysfs, mount: &str, path: &str) -> Vec<String> {
        let leaf = Self::dir(fs, mount, path);
        let mount = mount.trim_end_matches('/');
        let mut v = vec![leaf.clone()];
        let mut cur = leaf.as_str();
        while cur.len() > mount.len() {
            match cur.rfind('/') {
                Some(i) if i >= mount.len() => {
                    cur = &cur[..i];
                    v.push(cur.to_string());
                }
                _ => break,
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::unescape_mount;

    #[test]
    fn mount_escapes_decode_only_bytes() {
        assert_eq!(unescape_mount("/a\\040b\\134c"), "/a b\\c");
        // `\777` is no byte: kept as written rather than wrapped.
        assert_eq!(unescape_mount("/a\\777"), "/a\\777");
        assert_eq!(unescape_mount("/a\\04"), "/a\\04");
    }
}
