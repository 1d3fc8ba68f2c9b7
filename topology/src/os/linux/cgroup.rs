//! The process's cgroups: the cpuset that hides CPUs and memory nodes, and
//! the CPU quota.

use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use super::sysfs::{Res, Sysfs};
use crate::parse;
use crate::{CpuSet, TopologyError};

/// The process's cgroups: where each hierarchy is mounted and the process's
/// path in it.
pub(crate) struct Cgroups {
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

    pub(crate) fn read(fs: &Sysfs) -> Res<Cgroups> {
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
        // v2 line, as hwloc reads it; its mount: the standard
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
    pub(crate) fn cpuset(&self, fs: &Sysfs, attr: &str) -> Res<Option<CpuSet>> {
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
    pub(crate) fn quota(&self, fs: &Sysfs) -> Res<Option<f64>> {
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
