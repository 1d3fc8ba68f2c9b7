//! Core kinds on hybrid parts, as hwloc's Linux backend finds and ranks them.
//!
//! Each source (max frequency, base frequency, `cpu_capacity`, Intel PMU
//! sets, ARM MIDR) registers sets of CPUs; registering refines the current
//! partition, so the kinds are the classes of CPUs that agree on every
//! source. Kinds are then ranked: by capacity when every kind has a distinct
//! one, else by Intel core type then frequency; the result is ordered from
//! efficient to performant.

use std::format;
use std::string::String;
use std::vec::Vec;

use super::sysfs::{CPU_DIR, Res, Sysfs};
use crate::parse;
use crate::{CoreKind, CpuSet};

#[derive(Clone, Debug, Default)]
struct Kind {
    cpus: CpuSet,
    forced: Option<u64>,
    max_mhz: Option<u64>,
    base_mhz: Option<u64>,
    /// 1 low-power, 2 atom, 3 core (hwloc's scale).
    core_type: Option<u64>,
    midr: Option<u64>,
}

#[derive(Clone, Copy)]
enum Info {
    Max(u64),
    Base(u64),
    CoreType(u64),
    Midr(u64),
    None,
}

impl Kind {
    fn add(&mut self, info: Info) {
        match info {
            Info::Max(v) => self.max_mhz = Some(v),
            Info::Base(v) => self.base_mhz = Some(v),
            Info::CoreType(v) => self.core_type = Some(v),
            Info::Midr(v) => self.midr = Some(v),
            Info::None => {}
        }
    }

    fn label(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        match self.core_type {
            Some(1) => parts.push("intel_lowpower".into()),
            Some(2) => parts.push("intel_atom".into()),
            Some(3) => parts.push("intel_core".into()),
            _ => {}
        }
        if let Some(m) = self.midr {
            parts.push(format!("midr {m:#x}"));
        }
        if let Some(c) = self.forced {
            parts.push(format!("capacity {c}"));
        }
        if let Some(b) = self.base_mhz {
            parts.push(format!("base {b} MHz"));
        }
        if let Some(m) = self.max_mhz {
            parts.push(format!("max {m} MHz"));
        }
        if parts.is_empty() {
            parts.push("unknown".into());
        }
        parts.join(", ")
    }
}

/// The kinds found so far (a partition of the CPUs registered) and each
/// CPU's kind, so that a registration visits only the kinds its CPUs are
/// in: a root with thousands of single-CPU kinds (each CPU its own
/// capacity) registered each against every kind before, 2 s for 8192.
#[derive(Default)]
struct Partition {
    kinds: Vec<Kind>,
    /// The index in `kinds` of each CPU's kind, [`NO_KIND`] for none yet.
    owner: Vec<u32>,
}

const NO_KIND: u32 = u32::MAX;

impl Partition {
    /// Notes that the CPUs of `cpus` are now in kind `k`.
    fn own(&mut self, cpus: &CpuSet, k: usize) {
        for c in cpus.iter() {
            if c >= self.owner.len() {
                self.owner.resize(c + 1, NO_KIND);
            }
            self.owner[c] = k as u32;
        }
    }

    /// Refines the kinds with `set`, as hwloc registers a CPU kind: each
    /// kind `set` covers is annotated, each it meets in part is split, in
    /// the kinds' order, and what is left of `set` becomes a kind.
    fn register(&mut self, mut set: CpuSet, forced: Option<u64>, info: Info) {
        if set.is_empty() {
            return;
        }
        // The kinds `set` meets, in index order: those hwloc's walk over
        // every kind acts on, in its order.
        let mut met: Vec<usize> = set
            .iter()
            .filter_map(|c| self.owner.get(c).copied())
            .filter(|&k| k != NO_KIND)
            .map(|k| k as usize)
            .collect();
        met.sort_unstable();
        met.dedup();
        for i in met {
            // Not empty: `set` lost only CPUs of other kinds so far.
            let inter = set.and(&self.kinds[i].cpus);
            let kind = &mut self.kinds[i];
            if kind.cpus.is_subset(&set) {
                // The new set covers this kind: annotate it.
                kind.add(info);
                if kind.forced.is_none() {
                    kind.forced = forced;
                }
                set = set.and_not(&kind.cpus);
            } else {
                // Split off the intersection as a new kind.
                let mut k = kind.clone();
                k.cpus = inter.clone();
                k.forced = forced;
                k.add(info);
                kind.cpus = kind.cpus.and_not(&inter);
                set = set.and_not(&inter);
                self.kinds.push(k);
                self.own(&inter, self.kinds.len() - 1);
            }
            if set.is_empty() {
                break;
            }
        }
        if !set.is_empty() {
            let mut k = Kind {
                cpus: set,
                forced,
                ..Kind::default()
            };
            k.add(info);
            self.kinds.push(k);
            let new = self.kinds.len() - 1;
            let cpus = self.kinds[new].cpus.clone();
            self.own(&cpus, new);
        }
    }
}

/// Groups `(cpu, value)` pairs with a nonzero value by value, ascending
/// (sorted, not searched: a value a CPU is linear, not quadratic).
fn by_value(pairs: impl Iterator<Item = (usize, u64)>) -> Vec<(u64, CpuSet)> {
    let mut pairs: Vec<(u64, usize)> = pairs
        .filter(|&(_, v)| v != 0)
        .map(|(c, v)| (v, c))
        .collect();
    pairs.sort_unstable();
    let mut groups: Vec<(u64, CpuSet)> = Vec::new();
    for (v, cpu) in pairs {
        match groups.last_mut() {
            Some((g, s)) if *g == v => s.insert(cpu),
            _ => groups.push((v, core::iter::once(cpu).collect())),
        }
    }
    groups
}

#[derive(Clone, Copy, Default)]
struct PerCpu {
    cpu: usize,
    max_khz: u64,
    base_khz: u64,
    capacity: u64,
    midr: u64,
}

fn parse_hex(text: &str) -> Result<u64, parse::ParseError> {
    parse::parse_hex_u64(text)
}

/// Reads and ranks the core kinds of the CPUs in `cpus`.
pub(crate) fn read(fs: &Sysfs, cpus: &CpuSet) -> Res<Vec<CoreKind>> {
    let mut per: Vec<PerCpu> = Vec::with_capacity(cpus.len());
    // The first CPU of the set, not cpu0: arm64 removes `regs/` from
    // offline CPUs, and cpu0 may be one.
    let use_midr = cpus
        .first()
        .is_some_and(|c| fs.exists(&format!("{CPU_DIR}/cpu{c}/regs/identification/midr_el1")));
    // -1: not decided; 1: use ACPI CPPC nominal frequency; 0: do not.
    let mut use_cppc: i8 = -1;
    let mut max_without_base = false;
    for cpu in cpus.iter() {
        let d = format!("{CPU_DIR}/cpu{cpu}");
        let mut p = PerCpu {
            cpu,
            ..PerCpu::default()
        };
        p.capacity = fs.uint(&format!("{d}/cpu_capacity"))?.unwrap_or(0);
        if use_midr {
            p.midr = fs
                .parsed(&format!("{d}/regs/identification/midr_el1"), parse_hex)?
                .unwrap_or(0);
        } else {
            p.max_khz = fs
                .uint(&format!("{d}/cpufreq/cpuinfo_max_freq"))?
                .unwrap_or(0);
            if use_cppc != 1 {
                if let Some(b) = fs.uint(&format!("{d}/cpufreq/base_frequency"))? {
                    p.base_khz = b;
                    use_cppc = 0;
                }
            }
            if use_cppc != 0 {
                match fs.uint(&format!("{d}/acpi_cppc/nominal_freq"))? {
                    Some(n) if n > 0 => {
                        p.base_khz = n.saturating_mul(1000);
                        use_cppc = 1;
                    }
                    _ => use_cppc = 0,
                }
            }
            if p.max_khz != 0 && p.base_khz == 0 {
                max_without_base = true;
            }
        }
        per.push(p);
    }

    let mut kinds = Partition::default();
    if use_midr {
        let groups = by_value(per.iter().map(|p| (p.cpu, p.midr)));
        // One MIDR for all CPUs says nothing about kinds.
        if groups.len() > 1 {
            // The least capacity of each MIDR's CPUs, in the groups' order.
            let mut caps: Vec<(u64, u64)> = per.iter().map(|p| (p.midr, p.capacity)).collect();
            caps.sort_unstable();
            caps.dedup_by_key(|&mut (midr, _)| midr);
            for (midr, set) in groups {
                let cap = caps
                    .binary_search_by_key(&midr, |&(m, _)| m)
                    .map_or(0, |i| caps[i].1);
                kinds.register(set, Some(cap), Info::Midr(midr));
            }
        }
    } else {
        if !max_without_base {
            adjust_max_freqs(&mut per, 10);
        }
        for (v, set) in by_value(per.iter().map(|p| (p.cpu, p.max_khz / 1000))) {
            kinds.register(set, None, Info::Max(v));
        }
        for (v, set) in by_value(per.iter().map(|p| (p.cpu, p.base_khz / 1000))) {
            kinds.register(set, None, Info::Base(v));
        }
        for (v, set) in by_value(per.iter().map(|p| (p.cpu, p.capacity))) {
            kinds.register(set, Some(v), Info::None);
        }
        // Intel hybrid PMUs (only x86 kernels have these devices).
        for (dev, ty) in [("cpu_atom", 2), ("cpu_core", 3), ("cpu_lowpower", 1)] {
            if let Some(set) = fs.cpulist(&format!("sys/devices/{dev}/cpus"))? {
                // Only the CPUs being ranked: an offline CPU in the list
                // would be a phantom kind, with no frequency or capacity,
                // that makes the real kinds' ranking ambiguous.
                kinds.register(set.and(cpus), None, Info::CoreType(ty));
            }
        }
    }
    let mut kinds = kinds.kinds;
    let ranked = rank(&mut kinds);
    Ok(kinds
        .into_iter()
        .map(|k| {
            let mut label = k.label();
            if !ranked {
                // No source orders these kinds: they are listed in the
                // order they were found, not by efficiency.
                label.push_str(" (unranked)");
            }
            CoreKind {
                label,
                cpus: k.cpus,
            }
        })
        .collect())
}

/// Turbo Boost Max 3.0 gives some cores of one kind a slightly higher max
/// frequency; within a base frequency, spreads under `percent` are flattened
/// to the minimum, as hwloc does.
fn adjust_max_freqs(per: &mut [PerCpu], percent: u64) {
    let mut bases: Vec<u64> = per.iter().map(|p| p.base_khz).collect();
    bases.sort_unstable();
    bases.dedup();
    for base in bases {
        let group = per.iter().filter(|p| p.base_khz == base);
        let min_max = group.clone().map(|p| p.max_khz).min().unwrap_or(0);
        let max_max = group.clone().map(|p| p.max_khz).max().unwrap_or(0);
        let min_cap = group.map(|p| p.capacity).min().unwrap_or(0);
        if min_max == max_max || min_max == 0 {
            continue;
        }
        // In u128: a recorded root can hold any u64, and the products
        // of two such values overflow u64.
        if u128::from(max_max - min_max) * 100 < u128::from(percent) * u128::from(min_max) {
            for p in per.iter_mut().filter(|p| p.base_khz == base) {
                p.max_khz = min_max;
                p.capacity = min_cap;
            }
        }
    }
}

/// Orders kinds from efficient to performant, as hwloc ranks them;
/// leaves the registration order, and returns false, when no ranking is
/// unambiguous.
fn rank(kinds: &mut [Kind]) -> bool {
    if kinds.len() <= 1 {
        return true;
    }
    let unique = |v: &[u64]| {
        let mut s = v.to_vec();
        s.sort_unstable();
        s.windows(2).all(|w| w[0] != w[1])
    };
    if kinds.iter().all(|k| k.forced.is_some()) {
        let v: Vec<u64> = kinds.iter().map(|k| k.forced.unwrap_or(0)).collect();
        if unique(&v) {
            kinds.sort_by_key(|k| k.forced);
            return true;
        }
    }
    let have_base = kinds.iter().all(|k| k.base_mhz.is_some());
    let have_max = kinds.iter().all(|k| k.max_mhz.is_some());
    let have_type = kinds.iter().all(|k| k.core_type.is_some());
    if !have_type && !have_base && !have_max {
        return false;
    }
    let value = |k: &Kind| {
        let f = if have_base { k.base_mhz } else { k.max_mhz };
        (k.core_type.unwrap_or(0) << 20) + f.unwrap_or(0)
    };
    let v: Vec<u64> = kinds.iter().map(value).collect();
    if unique(&v) {
        kinds.sort_by_key(value);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        parse::parse_cpulist(s).unwrap()
    }

    #[test]
    fn registering_refines_the_partition() {
        let mut p = Partition::default();
        p.register(set("0-7"), None, Info::Max(3000));
        p.register(set("4-7"), None, Info::Base(1000));
        p.register(set("0-3"), None, Info::Base(2000));
        let mut k = p.kinds;
        assert_eq!(k.len(), 2);
        assert!(rank(&mut k));
        assert_eq!(k[0].cpus, set("4-7"));
        assert_eq!(k[1].cpus, set("0-3"));
        assert_eq!(k[1].label(), "base 2000 MHz, max 3000 MHz");
    }

    #[test]
    fn capacity_ranks_before_core_type() {
        let mut p = Partition::default();
        p.register(set("0-1"), Some(1024), Info::None);
        p.register(set("2-3"), Some(512), Info::None);
        p.register(set("0-1"), None, Info::CoreType(3));
        let mut k = p.kinds;
        assert!(rank(&mut k));
        assert_eq!(k[0].cpus, set("2-3"));
        assert_eq!(k[0].forced, Some(512));
    }

    #[test]
    fn ambiguous_kinds_stay_unranked() {
        let mut p = Partition::default();
        p.register(set("0-1"), Some(100), Info::None);
        p.register(set("2-3"), Some(100), Info::Midr(7));
        let mut k = p.kinds;
        assert!(!rank(&mut k));
    }

    #[test]
    fn small_turbo_spread_is_flattened() {
        let mut per = [
            PerCpu {
                cpu: 0,
                max_khz: 4_000_000,
                base_khz: 2_000_000,
                ..PerCpu::default()
            },
            PerCpu {
                cpu: 1,
                max_khz: 4_200_000,
                base_khz: 2_000_000,
                ..PerCpu::default()
            },
            PerCpu {
                cpu: 2,
                max_khz: 3_000_000,
                base_khz: 1_000_000,
                ..PerCpu::default()
            },
        ];
        adjust_max_freqs(&mut per, 10);
        assert_eq!(per[1].max_khz, 4_000_000);
        assert_eq!(per[2].max_khz, 3_000_000);
    }
}
