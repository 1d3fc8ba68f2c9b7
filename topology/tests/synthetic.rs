//! Trees written by the tests: cgroups, affinity, offline CPUs, missing and
//! empty files, and garbage in every file the reader parses.

use std::path::{Path, PathBuf};

use keel_topology::{CpuSet, Loader, Topology, TopologyError, Work};

struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Tree {
    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn remove(&self, rel: &str) {
        let p = self.0.join(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }

    fn load(&self) -> Result<Topology, TopologyError> {
        Topology::from_root(&self.0)
    }
}

fn set(s: &str) -> CpuSet {
    keel_topology::parse::parse_cpulist(s).unwrap()
}

/// A one-package machine of `n` CPUs (n <= 32), SMT-2, with L1d/L2 per core,
/// one L3, one NUMA node, frequencies and capacities.
fn machine(tag: &str, n: usize) -> Tree {
    let root = std::env::temp_dir().join(format!("keel-synth-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let t = Tree(root);
    let all = (1u64 << n) - 1;
    t.write("sys/devices/system/cpu/online", &format!("0-{}\n", n - 1));
    t.write("sys/devices/system/cpu/present", &format!("0-{}\n", n - 1));
    for c in 0..n {
        let d = format!("sys/devices/system/cpu/cpu{c}");
        let core = 3u64 << (c & !1);
        t.write(
            &format!("{d}/topology/thread_siblings"),
            &format!("{core:x}\n"),
        );
        t.write(
            &format!("{d}/topology/core_siblings"),
            &format!("{all:x}\n"),
        );
        t.write(&format!("{d}/topology/core_id"), &format!("{}\n", c / 2));
        t.write(&format!("{d}/topology/physical_package_id"), "0\n");
        for (i, (level, ty, size, map)) in [
            (1, "Data", "32K", core),
            (2, "Unified", "1024K", core),
            (3, "Unified", "8192K", all),
        ]
        .into_iter()
        .enumerate()
        {
            let c = format!("{d}/cache/index{i}");
            t.write(&format!("{c}/level"), &format!("{level}\n"));
            t.write(&format!("{c}/type"), &format!("{ty}\n"));
            t.write(&format!("{c}/size"), &format!("{size}\n"));
            t.write(&format!("{c}/shared_cpu_map"), &format!("{map:x}\n"));
            t.write(&format!("{c}/coherency_line_size"), "64\n");
        }
        t.write(&format!("{d}/cpufreq/cpuinfo_max_freq"), "3000000\n");
        t.write(&format!("{d}/cpu_capacity"), "1024\n");
    }
    t.write("sys/devices/system/node/online", "0\n");
    t.write(
        "sys/devices/system/node/node0/cpumap",
        &format!("{all:x}\n"),
    );
    t.write(
        "sys/devices/system/node/node0/meminfo",
        "Node 0 MemTotal:  1048576 kB\n",
    );
    t.write("sys/devices/system/node/node0/distance", "10\n");
    t.write(
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n",
    );
    t
}

#[test]
fn the_base_machine_reads_whole() {
    let t = machine("base", 8).load().unwrap();
    assert_eq!(t.usable_cpus(), &set("0-7"));
    assert_eq!(t.cores().len(), 4);
    assert_eq!(t.packages().len(), 1);
    assert_eq!(t.numa_nodes()[0].memory_bytes, 1 << 30);
    assert_eq!(t.caches().iter().filter(|c| c.level == 3).count(), 1);
    assert_eq!(t.caches().iter().filter(|c| c.level == 1).count(), 4);
    assert_eq!(t.core_kinds().len(), 1);
    assert_eq!(t.cpu_quota(), None);
    assert_eq!(t.fallback(), None);
}

#[test]
fn cgroup_v2_cpuset_and_quota_along_the_path() {
    let m = machine("v2", 8);
    m.write("proc/self/cgroup", "0::/app/job\n");
    m.write(
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    );
    m.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory\n");
    m.write("sys/fs/cgroup/app/job/cpuset.cpus.effective", "2-5\n");
    m.write("sys/fs/cgroup/app/job/cpu.max", "max 100000\n");
    m.write("sys/fs/cgroup/app/cpu.max", "150000 100000\n");
    m.write("sys/fs/cgroup/cpu.max", "400000 100000\n");
    let t = m.load().unwrap();
    assert_eq!(t.usable_cpus(), &set("2-5"));
    assert_eq!(t.cores().len(), 2);
    assert_eq!(
        t.cpu_quota(),
        Some(1.5),
        "the tightest quota on the path wins"
    );
    assert_eq!(
        t.workers_for(Work::Latency),
        2,
        "4 CPUs capped by ceil(1.5)"
    );
    assert_eq!(t.workers_for(Work::Bandwidth), 2);
}

#[test]
fn cgroup_v1_cpuset_and_cfs_quota() {
    let m = machine("v1", 8);
    m.write(
        "proc/self/cgroup",
        "5:cpuset:/grp\n4:cpu,cpuacct:/grp/sub\n",
    );
    m.write(
        "proc/mounts",
        "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\ncgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n",
    );
    m.write("sys/fs/cgroup/cpuset/grp/cpuset.cpus", "0-1,6-7\n");
    m.write("sys/fs/cgroup/cpuset/grp/cpuset.mems", "0\n");
    m.write(
        "sys/fs/cgroup/cpu,cpuacct/grp/sub/cpu.cfs_quota_us",
        "250000\n",
    );
    m.write(
        "sys/fs/cgroup/cpu,cpuacct/grp/sub/cpu.cfs_period_us",
        "100000\n",
    );
    m.write("sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_quota_us", "-1\n");
    m.write(
        "sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_period_us",
        "100000\n",
    );
    let t = m.load().unwrap();
    assert_eq!(t.usable_cpus(), &set("0-1,6-7"));
    assert_eq!(t.cpu_quota(), Some(2.5));
    assert_eq!(t.workers_for(Work::Latency), 3);
    assert_eq!(t.numa_nodes().len(), 1);
}

#[test]
fn affinity_narrower_than_online() {
    let m = machine("aff", 8);
    let t = Loader::new(&m.0).affinity(set("1,3,4")).load().unwrap();
    assert_eq!(t.usable_cpus(), &set("1,3-4"));
    assert_eq!(t.online_cpus(), &set("0-7"));
    let cores: Vec<String> = t.cores().iter().map(|c| c.cpus.to_string()).collect();
    assert_eq!(cores, ["1", "3", "4"]);
    assert_eq!(
        t.caches().iter().find(|c| c.level == 3).unwrap().cpus,
        set("1,3-4")
    );
    // Affinity outside the online CPUs leaves nothing: an error, not a panic.
    let e = Loader::new(&m.0).affinity(set("9")).load().unwrap_err();
    assert!(matches!(e, TopologyError::NoUsableCpus { .. }));
}

#[test]
fn offline_cpu0() {
    let m = machine("off0", 4);
    m.write("sys/devices/system/cpu/online", "1-3\n");
    let t = m.load().unwrap();
    assert_eq!(t.offline_cpus(), &set("0"));
    assert_eq!(t.usable_cpus(), &set("1-3"));
    assert_eq!(t.cores().len(), 2);
    assert_eq!(t.cores()[0].cpus, set("1"));
    // Without the global list, each CPU's own `online` file decides.
    m.remove("sys/devices/system/cpu/online");
    m.write("sys/devices/system/cpu/cpu0/online", "0\n");
    let t = m.load().unwrap();
    assert_eq!(t.usable_cpus(), &set("1-3"));
}

#[test]
fn missing_topology_directories() {
    let m = machine("notopo", 4);
    for c in 0..4 {
        m.remove(&format!("sys/devices/system/cpu/cpu{c}/topology"));
    }
    m.write(
        "proc/cpuinfo",
        "processor\t: 0\nphysical id\t: 0\ncore id\t: 0\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t: 0\n\n\
         processor\t: 2\nphysical id\t: 0\ncore id\t: 1\n\nprocessor\t: 3\nphysical id\t: 0\ncore id\t: 1\n",
    );
    let t = m.load().unwrap();
    assert_eq!(t.cores().len(), 2, "cores from proc/cpuinfo");
    assert!(t.fallback().unwrap().contains("cpuinfo"));
    // Nothing to tell cores apart: every usable CPU is a bandwidth worker.
    m.write("proc/cpuinfo", "");
    let t = m.load().unwrap();
    assert!(t.cores().is_empty());
    assert_eq!(t.workers_for(Work::Bandwidth), 4);
    // And the fallback says so, rather than crediting proc/cpuinfo.
    let why = t.fallback().unwrap();
    assert!(why.contains("no core"), "{why}");
    assert!(!why.contains("from proc/cpuinfo"), "{why}");
    // No NUMA directory: one node with proc/meminfo's memory.
    m.remove("sys/devices/system/node");
    m.write("proc/meminfo", "MemTotal:  2048 kB\n");
    let t = m.load().unwrap();
    assert_eq!(t.numa_nodes().len(), 1);
    assert_eq!(t.numa_nodes()[0].memory_bytes, 2 << 20);
}

#[test]
fn empty_files_degrade_without_error() {
    let m = machine("empty", 4);
    for c in 0..4 {
        let d = format!("sys/devices/system/cpu/cpu{c}");
        m.write(&format!("{d}/topology/thread_siblings"), "");
        m.write(&format!("{d}/topology/physical_package_id"), "");
        m.write(&format!("{d}/cache/index0/size"), "");
        m.write(&format!("{d}/cpu_capacity"), "");
    }
    m.write("sys/devices/system/cpu/online", "");
    m.write("sys/devices/system/node/node0/meminfo", "");
    let t = m.load().unwrap();
    assert_eq!(
        t.usable_cpus(),
        &set("0-3"),
        "per-CPU directories stand in for online"
    );
    assert!(t.cores().is_empty());
    assert_eq!(t.packages()[0].os_index, None);
    assert_eq!(t.numa_nodes()[0].memory_bytes, 0);
}

/// Every file the reader parses, written with garbage one at a time in an
/// otherwise valid tree: the load fails, naming the file and the text.
#[test]
fn garbage_in_every_parsed_file_is_an_error() {
    let files = [
        "sys/devices/system/cpu/online",
        "sys/devices/system/cpu/present",
        "sys/devices/system/cpu/cpu1/topology/thread_siblings",
        "sys/devices/system/cpu/cpu1/topology/core_cpus",
        "sys/devices/system/cpu/cpu0/topology/core_siblings",
        "sys/devices/system/cpu/cpu0/topology/package_cpus",
        "sys/devices/system/cpu/cpu0/topology/physical_package_id",
        "sys/devices/system/cpu/cpu2/cache/index0/shared_cpu_map",
        "sys/devices/system/cpu/cpu2/cache/index0/level",
        "sys/devices/system/cpu/cpu2/cache/index1/size",
        "sys/devices/system/cpu/cpu0/cache/index2/coherency_line_size",
        "sys/devices/system/cpu/cpu3/cpufreq/cpuinfo_max_freq",
        "sys/devices/system/cpu/cpu3/cpufreq/base_frequency",
        "sys/devices/system/cpu/cpu3/cpu_capacity",
        "sys/devices/system/node/online",
        "sys/devices/system/node/node0/cpumap",
        "sys/devices/system/node/node0/meminfo",
        "sys/devices/cpu_atom/cpus",
        "sys/fs/cgroup/app/cpuset.cpus.effective",
        "sys/fs/cgroup/app/cpuset.mems.effective",
        "sys/fs/cgroup/app/cpu.max",
    ];
    // One tree, each file spoiled in turn and then put back (building a
    // tree per case made this the slowest test of the crate).
    let m = machine("garbage", 4);
    m.write("proc/self/cgroup", "0::/app\n");
    m.write("proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
    m.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
    m.write("sys/fs/cgroup/app/cpu.max", "max 100000\n");
    assert!(m.load().is_ok(), "the tree before any garbage");
    for f in files {
        let original = std::fs::read(m.0.join(f)).ok();
        for garbage in ["zz\u{7}", "\u{FFFD}9"] {
            m.write(f, garbage);
            let err = match m.load() {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{f} with {garbage:?} was accepted"),
            };
            let name = Path::new(f).file_name().unwrap().to_str().unwrap();
            assert!(err.contains(name), "{err} names {name}");
            assert!(
                err.contains(&garbage.chars().take(2).collect::<String>()),
                "{err} quotes the text"
            );
        }
        match original {
            Some(bytes) => std::fs::write(m.0.join(f), bytes).unwrap(),
            None => m.remove(f),
        }
    }
    assert!(m.load().is_ok(), "the tree with every file put back");
    // Not UTF-8 at all.
    let m = machine("garbage-bytes", 2);
    std::fs::write(
        m.0.join("sys/devices/system/cpu/online"),
        [0xff, 0xfe, b'1'],
    )
    .unwrap();
    assert!(m.load().unwrap_err().to_string().contains("UTF-8"));
}

#[test]
fn intel_hybrid_kinds_put_atom_cores_first() {
    let m = machine("hybrid", 8);
    // P-cores 0-3 (SMT pairs), E-cores 4-7, as the PMU devices list them.
    m.write("sys/devices/cpu_core/cpus", "0-3\n");
    m.write("sys/devices/cpu_atom/cpus", "4-7\n");
    for c in 0..8 {
        let max = if c < 4 { "5000000\n" } else { "3800000\n" };
        m.write(
            &format!("sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq"),
            max,
        );
        m.remove(&format!("sys/devices/system/cpu/cpu{c}/cpu_capacity"));
    }
    let t = m.load().unwrap();
    let kinds: Vec<(String, String)> = t
        .core_kinds()
        .iter()
        .map(|k| (k.cpus.to_string(), k.label.clone()))
        .collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert_eq!(kinds[0].0, "4-7");
    assert!(kinds[0].1.contains("intel_atom"), "{kinds:?}");
    assert_eq!(kinds[1].0, "0-3");
    let core0 = &t.cores()[0];
    assert_eq!(core0.kind, Some(1), "core 0 is a performance core");
}

#[test]
fn arm_capacity_kinds_rank_by_capacity() {
    let m = machine("biglittle", 8);
    for c in 0..8 {
        let cap = if c < 6 { "446\n" } else { "1024\n" };
        m.write(&format!("sys/devices/system/cpu/cpu{c}/cpu_capacity"), cap);
    }
    let t = m.load().unwrap();
    let kinds: Vec<String> = t.core_kinds().iter().map(|k| k.cpus.to_string()).collect();
    assert_eq!(kinds, ["0-5", "6-7"]);
}

/// mountinfo escapes with octal `\ooo`; a digit triple above `\377` is not
/// a byte, and must not overflow while being decoded.
#[test]
fn mountinfo_escape_above_a_byte_is_no_panic() {
    let m = machine("mnt-escape", 4);
    m.write("proc/self/cgroup", "0::/\n");
    m.write(
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n\
         31 1 0:27 / /mnt/\\777x rw - ext4 /dev/sda1 rw\n",
    );
    let t = m.load().unwrap();
    assert_eq!(t.usable_cpus(), &set("0-3"));
}

/// A mount point need not be UTF-8 (Linux paths are bytes, and mountinfo
/// escapes only space, tab, newline and backslash): an unrelated mount with
/// such a name must not cost the whole topology.
#[test]
fn non_utf8_mount_point_does_not_fail_the_load() {
    let m = machine("mnt-bytes", 4);
    m.write("proc/self/cgroup", "0::/app\n");
    m.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
    m.write("sys/fs/cgroup/app/cpu.max", "150000 100000\n");
    let mut info = b"30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n".to_vec();
    info.extend_from_slice(b"31 1 8:1 / /media/caf\xe9 rw - vfat /dev/sdb1 rw\n");
    std::fs::write(m.0.join("proc/self/mountinfo"), info).unwrap();
    let t = m.load().unwrap();
    assert_eq!(t.cpu_quota(), Some(1.5), "the cgroup mount is still found");
}

/// Frequencies are the kernel's numbers, but a recorded root can hold any:
/// a huge max frequency must not overflow the turbo-spread arithmetic.
#[test]
fn huge_max_frequency_is_no_panic() {
    let m = machine("huge-freq", 4);
    for c in 0..4 {
        let d = format!("sys/devices/system/cpu/cpu{c}/cpufreq");
        let max = if c == 0 {
            "18446744073709551615\n"
        } else {
            "3000000\n"
        };
        m.write(&format!("{d}/cpuinfo_max_freq"), max);
        m.write(&format!("{d}/base_frequency"), "2000000\n");
    }
    let t = m.load().unwrap();
    assert_eq!(t.core_kinds().len(), 2);
}

/// An empty cgroup v1 quota file is "unknown", as an empty cgroup v2
/// `cpu.max` and every other empty file are: the load degrades, not fails.
#[test]
fn empty_cfs_quota_files_are_absence() {
    let m = machine("cfs-empty", 4);
    m.write("proc/self/cgroup", "4:cpu,cpuacct:/grp\n");
    m.write(
        "proc/mounts",
        "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n",
    );
    m.write("sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_quota_us", "\n");
    m.write(
        "sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_period_us",
        "100000\n",
    );
    m.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "200000\n");
    m.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "");
    let t = m.load().unwrap();
    assert_eq!(t.cpu_quota(), None);
    // Garbage is still an error.
    m.write("sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_quota_us", "lots\n");
    assert!(m.load().unwrap_err().to_string().contains("lots"));
}

/// A bad cgroup v1 period is reported against the period file.
#[test]
fn bad_cfs_period_names_the_period_file() {
    let m = machine("cfs-period", 4);
    m.write("proc/self/cgroup", "4:cpu,cpuacct:/grp\n");
    m.write(
        "proc/mounts",
        "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n",
    );
    m.write("sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_quota_us", "50000\n");
    m.write("sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_period_us", "0\n");
    let err = m.load().unwrap_err().to_string();
    assert!(err.contains("grp/cpu.cfs_period_us:"), "{err}");
}

/// The kernel names entries `cpu3`, `index0`, `node1`: a name with a
/// leading zero (`index00`) is not the same entry, and must not make the
/// reader, which rebuilds names from numbers, read `index0` twice.
#[test]
fn leading_zero_entry_names_are_not_duplicates() {
    let m = machine("lead0", 4);
    let want = m.load().unwrap();
    for c in 0..4 {
        let d = format!("sys/devices/system/cpu/cpu{c}/cache");
        m.write(&format!("{d}/index00/level"), "1\n");
        m.write(&format!("{d}/index00/type"), "Instruction\n");
        m.write(&format!("{d}/index00/size"), "32K\n");
        m.write(&format!("{d}/index00/shared_cpu_map"), "f\n");
    }
    m.write("sys/devices/system/node/node00/cpumap", "f\n");
    m.remove("sys/devices/system/node/online");
    let t = m.load().unwrap();
    assert_eq!(t.caches(), want.caches());
    assert_eq!(t.numa_nodes(), want.numa_nodes());
}

/// A sysfs-sized (4 KiB) cpulist of 400 full-width ranges: parsing costs
/// words, not bits. Bit by bit this took about 9 s in a debug build.
#[test]
fn wide_cpulist_ranges_parse_quickly() {
    let text = "0-1048575,".repeat(400) + "0";
    let t0 = std::time::Instant::now();
    let s = keel_topology::parse::parse_cpulist(&text).unwrap();
    let took = t0.elapsed();
    assert_eq!(s.len(), keel_topology::parse::MAX_CPU + 1);
    assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
}

/// proc/cpuinfo carries firmware strings (model names, ARM `Hardware`
/// lines) that need not be UTF-8; keel reads only its numeric fields, so
/// such a line must not fail the load.
#[test]
fn non_utf8_cpuinfo_text_does_not_fail_the_load() {
    let m = machine("cpuinfo-bytes", 4);
    std::fs::write(
        m.0.join("proc/cpuinfo"),
        b"processor\t: 0\nmodel name\t: Caf\xe9 CPU\nphysical id\t: 0\n",
    )
    .unwrap();
    let t = m.load().unwrap();
    assert_eq!(t.usable_cpus(), &set("0-3"));
}

/// cgroup v2 shows a controller's files only where the parent enables it:
/// a job cgroup under a cpuset-limited parent that does not delegate the
/// controller has no `cpuset.cpus.effective` of its own, yet the parent's
/// limit applies to it.
#[test]
fn cgroup_v2_cpuset_of_the_nearest_ancestor_applies() {
    let m = machine("v2-nested", 8);
    m.write("proc/self/cgroup", "0::/app/job\n");
    m.write(
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    );
    m.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
    m.write("sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
    m.write("sys/fs/cgroup/cpuset.mems.effective", "0\n");
    m.write("sys/fs/cgroup/app/cpuset.cpus.effective", "2-5\n");
    m.write("sys/fs/cgroup/app/cpuset.mems.effective", "0\n");
    m.write("sys/fs/cgroup/app/job/cgroup.controllers", "");
    let t = m.load().unwrap();
    assert_eq!(t.usable_cpus(), &set("2-5"));
}

/// arm64 removes `regs/identification` when a CPU goes offline: with CPU 0
/// offline, the other CPUs' MIDRs must still tell big from little cores.
#[test]
fn midr_kinds_survive_an_offline_cpu0() {
    let m = machine("midr-off0", 8);
    m.write("sys/devices/system/cpu/online", "1-7\n");
    for c in 0..8 {
        let d = format!("sys/devices/system/cpu/cpu{c}");
        m.remove(&format!("{d}/cpu_capacity"));
        m.remove(&format!("{d}/cpufreq"));
        if c > 0 {
            let midr = if c < 4 {
                "0x00000000410fd050\n"
            } else {
                "0x00000000410fd0b0\n"
            };
            m.write(&format!("{d}/regs/identification/midr_el1"), midr);
        }
    }
    let t = m.load().unwrap();
    let kinds: Vec<String> = t.core_kinds().iter().map(|k| k.cpus.to_string()).collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert!(kinds.contains(&"1-3".to_string()) && kinds.contains(&"4-7".to_string()));
}

/// A CPU listed twice in proc/cpuinfo (with different core IDs) is still
/// one CPU on one core: bandwidth workers never outnumber latency ones.
#[test]
fn duplicate_cpuinfo_processors_make_no_extra_cores() {
    let m = machine("cpuinfo-dup", 2);
    for c in 0..2 {
        m.remove(&format!("sys/devices/system/cpu/cpu{c}/topology"));
    }
    m.write(
        "proc/cpuinfo",
        "processor\t: 0\nphysical id\t: 0\ncore id\t: 0\n\n\
         processor\t: 1\nphysical id\t: 0\ncore id\t: 0\n\n\
         processor\t: 1\nphysical id\t: 0\ncore id\t: 1\n\n\
         processor\t: 0\nphysical id\t: 1\ncore id\t: 7\n",
    );
    let t = m.load().unwrap();
    let cores: Vec<String> = t.cores().iter().map(|c| c.cpus.to_string()).collect();
    assert_eq!(cores, ["0-1"]);
    assert_eq!(t.packages().len(), 1);
    assert!(t.workers_for(Work::Bandwidth) <= t.workers_for(Work::Latency));
}

/// Sibling masks that disagree (cpu0 says it shares a core with cpu1, cpu1
/// says it is alone) must not put one usable CPU in two cores.
#[test]
fn conflicting_sibling_masks_make_no_extra_cores() {
    let m = machine("sib-conflict", 2);
    m.write(
        "sys/devices/system/cpu/cpu0/topology/thread_siblings",
        "3\n",
    );
    m.write(
        "sys/devices/system/cpu/cpu1/topology/thread_siblings",
        "2\n",
    );
    let t = Loader::new(&m.0).affinity(set("1")).load().unwrap();
    assert_eq!(t.cores().len(), 1, "{:?}", t.cores());
    assert!(t.workers_for(Work::Bandwidth) <= t.workers_for(Work::Latency));
}

/// `node/online` naming a million nodes that have no directories costs one
/// directory listing, not a million failed opens (about 6 s before).
#[test]
fn huge_node_online_list_is_cheap() {
    let m = machine("node-online", 2);
    m.write("sys/devices/system/node/online", "0-1048575\n");
    let t0 = std::time::Instant::now();
    let t = m.load().unwrap();
    let took = t0.elapsed();
    assert_eq!(t.numa_nodes().len(), 1);
    assert_eq!(t.numa_nodes()[0].memory_bytes, 1 << 30);
    assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
}

/// A PMU CPU list naming a CPU that is offline (or has no topology) must
/// not add a phantom kind that makes the real kinds' ranking ambiguous.
#[test]
fn pmu_list_with_an_offline_cpu_keeps_kinds_ranked() {
    let m = machine("pmu-offline", 8);
    m.write("sys/devices/system/cpu/online", "0-6\n");
    m.write("sys/devices/cpu_core/cpus", "0-3\n");
    m.write("sys/devices/cpu_atom/cpus", "4-7\n");
    for c in 0..8 {
        let d = format!("sys/devices/system/cpu/cpu{c}");
        let cap = if c < 4 { "1024\n" } else { "512\n" };
        m.write(&format!("{d}/cpu_capacity"), cap);
        m.remove(&format!("{d}/cpufreq"));
    }
    let t = m.load().unwrap();
    let kinds: Vec<(String, String)> = t
        .core_kinds()
        .iter()
        .map(|k| (k.cpus.to_string(), k.label.clone()))
        .collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert_eq!(kinds[0].0, "4-6", "{kinds:?}");
    assert!(kinds.iter().all(|k| !k.1.contains("unranked")), "{kinds:?}");
}

/// A root that is a file, a root that does not exist and a CPU folder that
/// lists nothing are each named for what they are.
#[test]
fn roots_that_are_not_machines_say_why() {
    let root = std::env::temp_dir().join(format!("keel-synth-notmachines-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let t = Tree(root);
    t.write("file", "x");
    let err = Topology::from_root(t.0.join("file")).unwrap_err();
    assert!(
        matches!(err, TopologyError::NotADirectory { exists: true, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .ends_with("not a directory (a root is a directory holding sys/ and proc/)"),
        "{err}"
    );
    let err = Topology::from_root(t.0.join("absent")).unwrap_err();
    assert!(
        matches!(err, TopologyError::NotADirectory { exists: false, .. }),
        "{err}"
    );
    assert!(
        err.to_string().ends_with("absent: no such directory"),
        "{err}"
    );
    std::fs::create_dir_all(t.0.join("empty/sys/devices/system/cpu")).unwrap();
    let err = Topology::from_root(t.0.join("empty")).unwrap_err();
    assert!(matches!(err, TopologyError::NoCpusListed { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("sys/devices/system/cpu: lists no CPU"),
        "{err}"
    );
    std::fs::create_dir_all(t.0.join("bare/proc")).unwrap();
    let err = Topology::from_root(t.0.join("bare")).unwrap_err();
    assert!(matches!(err, TopologyError::NotASysfsRoot { .. }), "{err}");
}

/// Sibling masks that conflict can split a core over packages: then no
/// package holds the core, and `Core::package` says so instead of naming
/// the package of its first CPU.
#[test]
fn a_core_split_over_packages_has_none() {
    let root = std::env::temp_dir().join(format!("keel-synth-splitcore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let t = Tree(root);
    t.write("sys/devices/system/cpu/online", "0-1\n");
    for (cpu, pkg) in [(0, "1"), (1, "2")] {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        t.write(&format!("{d}/thread_siblings"), "3\n");
        t.write(&format!("{d}/core_siblings"), &format!("{pkg}\n"));
    }
    let topo = t.load().unwrap();
    assert_eq!(topo.cores().len(), 1);
    assert_eq!(topo.cores()[0].cpus, set("0-1"));
    assert!(
        topo.packages()
            .iter()
            .all(|p| !topo.cores()[0].cpus.is_subset(&p.cpus))
    );
    assert_eq!(topo.cores()[0].package, None);
}

/// A hostile root costs little and stays inside itself: a cpulist that
/// repeats one wide range is merged before it is filled; an attribute
/// past 1 MiB is an error, not a long parse; a `cpuN` entry that is no
/// directory (a link in a loop) is no CPU; a cgroup path that climbs out
/// with `..` is not followed (the mount's own files apply); a zero quota
/// (which the kernel refuses) is an error naming its file.
#[test]
fn hostile_lists_links_paths_and_quotas() {
    let text = "1-1048575,".repeat(100_000) + "0";
    let t0 = std::time::Instant::now();
    let s = keel_topology::parse::parse_cpulist(&text).unwrap();
    assert_eq!(s.len(), keel_topology::parse::MAX_CPU + 1);
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");

    let m = machine("hostile", 8);
    m.write(
        "sys/devices/system/cpu/online",
        &("0-7,".repeat(300_000) + "0"),
    );
    let err = m.load().unwrap_err().to_string();
    assert!(
        err.contains("online") && err.contains("larger than 1 MiB"),
        "{err}"
    );
    m.write("sys/devices/system/cpu/online", "0-7\n");

    #[cfg(unix)]
    {
        let d = m.0.join("sys/devices/system/cpu");
        std::os::unix::fs::symlink(d.join("cpu9"), d.join("cpu8")).unwrap();
        std::os::unix::fs::symlink(d.join("cpu8"), d.join("cpu9")).unwrap();
        m.remove("sys/devices/system/cpu/online");
        assert_eq!(m.load().unwrap().usable_cpus(), &set("0-7"));
        m.write("sys/devices/system/cpu/online", "0-7\n");
    }

    m.write("proc/self/cgroup", "0::/../../x\n");
    m.write(
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
    );
    m.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
    m.write("sys/x/cpu.max", "50000 100000\n");
    assert_eq!(m.load().unwrap().cpu_quota(), None, "read sys/x through ..");
    m.write("sys/fs/cgroup/cpu.max", "0 100000\n");
    let err = m.load().unwrap_err().to_string();
    assert!(
        err.contains("sys/fs/cgroup/cpu.max") && err.contains("zero"),
        "{err}"
    );
}

/// A CPU whose own sibling list is broken (naming only an absent CPU, or
/// none) still has its core and its package: the lists name their own
/// CPU, and a sibling whose list names it joins that core.
#[test]
fn a_broken_sibling_list_loses_no_core_or_package() {
    for mask in ["100\n", "0\n"] {
        let m = machine("sib-broken", 8);
        m.write("sys/devices/system/cpu/cpu0/topology/thread_siblings", mask);
        let t = m.load().unwrap();
        let cores: Vec<String> = t.cores().iter().map(|c| c.cpus.to_string()).collect();
        assert_eq!(cores, ["0-1", "2-3", "4-5", "6-7"], "mask {mask:?}");
        assert_eq!(t.packages().len(), 1, "mask {mask:?}");
        assert_eq!(t.packages()[0].cpus, set("0-7"), "mask {mask:?}");
        assert_eq!(t.workers_for(Work::Bandwidth), 4, "mask {mask:?}");
    }
}

/// An online list naming only CPUs the root has no directory for says so,
/// rather than blaming the allowed CPUs.
#[test]
fn an_online_list_of_absent_cpus_says_so() {
    let m = machine("online-absent", 4);
    m.write("sys/devices/system/cpu/online", "1000000\n");
    let err = m.load().unwrap_err().to_string();
    assert!(
        err.contains("no online CPU") && !err.contains("intersect"),
        "{err}"
    );
}

/// A root with thousands of CPUs of distinct capacities (a kind each):
/// the kinds are found and ranked in time near linear in the CPUs, and
/// ordered by capacity.
#[test]
fn thousands_of_distinct_kinds_load_quickly() {
    let n = 8192;
    let root = std::env::temp_dir().join(format!("keel-synth-kinds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let t = Tree(root);
    t.write("sys/devices/system/cpu/online", &format!("0-{}\n", n - 1));
    for c in 0..n {
        let d = format!("sys/devices/system/cpu/cpu{c}");
        t.write(&format!("{d}/cpu_capacity"), &format!("{}\n", 1 + c));
        t.write(&format!("{d}/topology/core_id"), &format!("{c}\n"));
    }
    let t0 = std::time::Instant::now();
    let topo = t.load().unwrap();
    let took = t0.elapsed();
    println!("{n} kinds in {took:?}");
    // 43 s in a debug build when each registration walked every kind.
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    assert_eq!(topo.core_kinds().len(), n);
    assert_eq!(topo.core_kinds()[0].cpus, set("0"));
    assert_eq!(topo.core_kinds()[n - 1].cpus, set(&format!("{}", n - 1)));
}
