//! keel-topology: the pure parsers, and whole roots built from arbitrary
//! file contents. Neither may panic; what parses must round-trip.

use std::path::PathBuf;

use arbitrary::Arbitrary;
use keel_topology::{Topology, parse};

/// Every public parser on the same text; cpulists and cpumasks that parse
/// must print back to a cpulist that parses to the same set; the number
/// parsers agree with std (see [`numbers`]) and read back printed values.
pub fn parsers(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = parse::parse_cpulist(&text) {
        let again = parse::parse_cpulist(&s.to_string()).expect("printed cpulist parses");
        assert_eq!(again, s);
    }
    if let Ok(s) = parse::parse_cpumask(&text) {
        let again = parse::parse_cpulist(&s.to_string()).expect("printed cpumask parses");
        assert_eq!(again, s);
    }
    let _ = parse::parse_cache_size(&text);
    numbers(&text);
    if let Some(b) = data.get(..8) {
        round_trip(u64::from_le_bytes(b.try_into().unwrap()));
    }
    let _ = parse::parse_cpu_max(&text);
    let _ = parse::parse_meminfo_total(&text);
    let mid = (text.len() / 2..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let (a, b) = text.split_at(mid);
    let _ = parse::parse_cfs_quota(a, b);
}

/// `parse_int`, `parse_uint` and `parse_hex_u64` against std on the same
/// text, wherever the documented grammar is std's: decimal (optionally
/// negative, for `parse_int`) or hexadecimal with an optional `0x`/`0X`
/// (any number of leading zeros), surrounding whitespace ignored. std also
/// takes a leading `+`, which the parsers do not document: such text is
/// skipped.
fn numbers(text: &str) {
    let t = text.trim();
    let int = parse::parse_int(text).ok();
    let uint = parse::parse_uint(text).ok();
    let hex = parse::parse_hex_u64(text).ok();
    if !t.starts_with('+') && !t.starts_with("-+") {
        assert_eq!(int, t.parse::<i64>().ok(), "parse_int({text:?})");
        assert_eq!(uint, t.parse::<u64>().ok(), "parse_uint({text:?})");
    }
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if !digits.starts_with('+') {
        let std_hex = u64::from_str_radix(digits, 16).ok();
        assert_eq!(hex, std_hex, "parse_hex_u64({text:?})");
    }
    // What parses is what std reads, always.
    if let Some(v) = int {
        assert_eq!(t.parse::<i64>().ok(), Some(v), "parse_int({text:?})");
    }
    if let Some(v) = uint {
        assert_eq!(t.parse::<u64>().ok(), Some(v), "parse_uint({text:?})");
    }
    if let Some(v) = hex {
        assert_eq!(
            u64::from_str_radix(digits, 16).ok(),
            Some(v),
            "parse_hex_u64({text:?})"
        );
    }
}

/// Values printed as the kernel prints them parse back to themselves.
fn round_trip(x: u64) {
    let i = x as i64;
    assert_eq!(parse::parse_int(&format!(" {i}\n")), Ok(i));
    assert_eq!(parse::parse_uint(&format!("{x}\n")), Ok(x));
    assert_eq!(parse::parse_hex_u64(&format!("0x{x:016x}\n")), Ok(x));
    assert_eq!(parse::parse_hex_u64(&format!("{x:X}")), Ok(x));
    assert_eq!(parse::parse_hex_u64(&format!("0x{x:024x}")), Ok(x));
}

/// The files a root may hold, by index (`FileWrite::file % FILES.len()`).
pub const FILES: &[&str] = &[
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/present",
    "sys/devices/system/cpu/cpu0/online",
    "sys/devices/system/cpu/cpu0/topology/core_cpus",
    "sys/devices/system/cpu/cpu0/topology/thread_siblings",
    "sys/devices/system/cpu/cpu0/topology/core_id",
    "sys/devices/system/cpu/cpu0/topology/package_cpus",
    "sys/devices/system/cpu/cpu0/topology/physical_package_id",
    "sys/devices/system/cpu/cpu1/topology/core_cpus",
    "sys/devices/system/cpu/cpu1/topology/core_id",
    "sys/devices/system/cpu/cpu1/topology/package_cpus",
    "sys/devices/system/cpu/cpu0/cache/index0/level",
    "sys/devices/system/cpu/cpu0/cache/index0/type",
    "sys/devices/system/cpu/cpu0/cache/index0/size",
    "sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_map",
    "sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size",
    "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
    "sys/devices/system/cpu/cpu0/cpufreq/base_frequency",
    "sys/devices/system/cpu/cpu1/cpu_capacity",
    "sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
    "sys/devices/system/cpu/cpu1/regs/identification/midr_el1",
    "sys/devices/system/node/online",
    "sys/devices/system/node/node0/cpumap",
    "sys/devices/system/node/node0/meminfo",
    "sys/devices/system/node/node0/distance",
    "sys/devices/system/node/node1/cpumap",
    "sys/devices/system/node/node1/distance",
    "sys/devices/cpu_core/cpus",
    "proc/cpuinfo",
    "proc/meminfo",
    "proc/self/cgroup",
    "proc/self/cpuset",
    "proc/self/mountinfo",
    "proc/mounts",
    "sys/fs/cgroup/cpuset.cpus.effective",
    "sys/fs/cgroup/cpuset.mems.effective",
    "sys/fs/cgroup/cgroup.controllers",
    "sys/fs/cgroup/a/cpu.max",
    "sys/fs/cgroup/a/cpuset.cpus.effective",
    "dev/cpuset/cpus",
    "dev/cpuset/mems",
    "proc/driver/nvidia/gpus/0/numa_status",
    // Appended, so that existing inputs keep naming the same files.
    "sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq",
    "sys/devices/system/cpu/cpu1/topology/thread_siblings",
    "sys/devices/system/cpu/cpu1/topology/physical_package_id",
];

/// One file of a fuzzed root.
#[derive(Arbitrary, Debug)]
pub struct FileWrite {
    /// Which file (modulo [`FILES`]).
    pub file: u8,
    /// Its bytes.
    pub contents: Vec<u8>,
}

/// Writes the files under a fresh directory and loads it: any `Ok` answer
/// must be internally consistent, any failure must be an `Err`.
pub fn root(files: &[FileWrite]) {
    let dir: PathBuf = std::env::temp_dir().join(format!("keel-fuzz-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for f in files.iter().take(64) {
        let p = dir.join(FILES[f.file as usize % FILES.len()]);
        if let Some(parent) = p.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&p, &f.contents);
    }
    if let Ok(t) = Topology::from_root(&dir) {
        assert!(!t.usable_cpus().is_empty());
        assert!(t.usable_cpus().is_subset(t.online_cpus()));
        assert!(!t.offline_cpus().intersects(t.online_cpus()));
        for (i, c) in t.cores().iter().enumerate() {
            assert!(!c.cpus.is_empty() && c.cpus.is_subset(t.usable_cpus()));
            // A core's package holds all of it.
            if let Some(p) = c.package {
                assert!(c.cpus.is_subset(&t.packages()[p].cpus));
            }
            // Cores are disjoint: no CPU is on two cores.
            for d in &t.cores()[i + 1..] {
                assert!(!c.cpus.intersects(&d.cpus));
            }
        }
        for c in t.caches() {
            assert!(!c.cpus.is_empty() && c.cpus.is_subset(t.usable_cpus()));
        }
        for n in t.numa_nodes() {
            assert!(!n.cpus.is_empty() && n.cpus.is_subset(t.usable_cpus()));
        }
        let bandwidth = t.workers_for(keel_topology::Work::Bandwidth);
        assert!(bandwidth >= 1);
        // One worker per core never exceeds one per usable CPU.
        assert!(bandwidth <= t.workers_for(keel_topology::Work::Latency));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_do_not_panic() {
        super::parsers(b"0-3,8,10-11");
        super::parsers(b"ff,ffffffff");
        super::parsers("é".as_bytes());
        super::root(&[
            super::FileWrite {
                file: 0,
                contents: b"0-1\n".to_vec(),
            },
            super::FileWrite {
                file: 3,
                contents: b"3\n".to_vec(),
            },
        ]);
    }
}
