//! Assembling a [`Topology`] from what an OS layer found.
//!
//! The OS layers describe the machine over its online CPUs ([`Raw`]); this
//! module, which is pure and `no_std`, narrows everything to the usable CPUs,
//! drops what has none left and links cores to their package, node and kind.

use alloc::string::String;
use alloc::vec::Vec;

use crate::{Cache, Core, CoreKind, CpuSet, NumaNode, Package, Topology, TopologyError};

/// The machine over its online CPUs, before narrowing to the usable ones.
#[derive(Clone, Debug, Default)]
pub struct Raw {
    /// Online CPUs.
    pub online: CpuSet,
    /// CPUs that exist but are offline.
    pub offline: CpuSet,
    /// Affinity ∩ cgroup cpuset, when known (`None` = no restriction).
    pub allowed: Option<CpuSet>,
    /// Physical cores (each a set of online CPUs).
    pub cores: Vec<CpuSet>,
    /// Packages: OS index (if usable) and online CPUs.
    pub packages: Vec<(Option<u32>, CpuSet)>,
    /// Dies (CPU sets) where sysfs has them.
    pub dies: Vec<CpuSet>,
    /// Clusters (CPU sets sharing e.g. an L2 on ARM) where sysfs has them.
    pub clusters: Vec<CpuSet>,
    /// NUMA nodes over online CPUs.
    pub numa_nodes: Vec<NumaNode>,
    /// Cache instances over online CPUs.
    pub caches: Vec<Cache>,
    /// Core kinds, efficient first, over online CPUs.
    pub core_kinds: Vec<CoreKind>,
    /// CPU quota in CPUs.
    pub cpu_quota: Option<f64>,
    /// Why the answer is degraded, one reason per entry.
    pub notes: Vec<String>,
}

impl Raw {
    /// Narrows to usable CPUs and builds the [`Topology`].
    ///
    /// Fails only when no online CPU is allowed.
    pub fn finish(self) -> Result<Topology, TopologyError> {
        let usable = match &self.allowed {
            Some(a) => self.online.and(a),
            None => self.online.clone(),
        };
        if usable.is_empty() {
            return Err(TopologyError::NoUsableCpus {
                online: alloc::format!("{}", self.online),
                allowed: self
                    .allowed
                    .as_ref()
                    .map(|a| alloc::format!("{a}"))
                    .unwrap_or_default(),
            });
        }
        let mut packages: Vec<Package> = self
            .packages
            .into_iter()
            .filter_map(|(os_index, cpus)| {
                let cpus = cpus.and(&usable);
                (!cpus.is_empty()).then_some(Package { os_index, cpus })
            })
            .collect();
        packages.sort_by_key(|p| p.cpus.first());
        let numa_nodes: Vec<NumaNode> = self
            .numa_nodes
            .into_iter()
            .filter_map(|n| {
                let cpus = n.cpus.and(&usable);
                (!cpus.is_empty()).then_some(NumaNode { cpus, ..n })
            })
            .collect();
        let mut caches: Vec<Cache> = self
            .caches
            .into_iter()
            .filter_map(|c| {
                let cpus = c.cpus.and(&usable);
                (!cpus.is_empty()).then_some(Cache { cpus, ..c })
            })
            .collect();
        // Deepest levels first, then by first CPU: the tree order.
        caches.sort_by_key(|c| (core::cmp::Reverse(c.level), c.kind as u8, c.cpus.first()));
        let core_kinds: Vec<CoreKind> = self
            .core_kinds
            .into_iter()
            .filter_map(|k| {
                let cpus = k.cpus.and(&usable);
                (!cpus.is_empty()).then_some(CoreKind { cpus, ..k })
            })
            .collect();
        fn find<'a>(mut sets: impl Iterator<Item = &'a CpuSet>, cpu: usize) -> Option<usize> {
            sets.position(|s| s.contains(cpu))
        }
        // Cores are disjoint: sibling masks that disagree (a buggy or
        // hostile sysfs) must not count one CPU in two cores, so a CPU stays
        // with the first core that claims it. (A usable CPU that no mask
        // names, or one without a topology directory, is in no core, as
        // hwloc leaves it.)
        let mut claimed = CpuSet::new();
        let mut cores: Vec<Core> = self
            .cores
            .into_iter()
            .filter_map(|cpus| {
                let cpus = cpus.and(&usable).and_not(&claimed);
                cpus.iter().for_each(|c| claimed.insert(c));
                let first = cpus.first()?;
                Some(Core {
                    // The package holding the whole core: sibling masks
                    // that conflict can split a core over two packages,
                    // and then none holds it.
                    package: packages.iter().position(|p| cpus.is_subset(&p.cpus)),
                    numa_node: find(numa_nodes.iter().map(|n| &n.cpus), first),
                    kind: find(core_kinds.iter().map(|k| &k.cpus), first),
                    cpus,
                })
            })
            .collect();
        cores.sort_by_key(|c| c.cpus.first());
        let narrow = |v: Vec<CpuSet>| -> Vec<CpuSet> {
            let mut v: Vec<CpuSet> = v
                .into_iter()
                .map(|s| s.and(&usable))
                .filter(|s| !s.is_empty())
                .collect();
            v.sort_by_key(|s| s.first());
            v
        };
        let dies = narrow(self.dies);
        let clusters = narrow(self.clusters);
        let fallback = if self.notes.is_empty() {
            None
        } else {
            Some(self.notes.join("; "))
        };
        Ok(Topology {
            online: self.online,
            offline: self.offline,
            usable,
            cores,
            packages,
            dies,
            clusters,
            numa_nodes,
            caches,
            core_kinds,
            cpu_quota: self.cpu_quota,
            fallback,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CacheKind;
    use alloc::string::ToString;

    fn set(s: &str) -> CpuSet {
        crate::parse::parse_cpulist(s).unwrap()
    }

    #[test]
    fn narrows_to_usable_and_links_cores() {
        let raw = Raw {
            online: set("0-7"),
            allowed: Some(set("2-5")),
            cores: ["0-1", "2-3", "4-5", "6-7"]
                .iter()
                .map(|s| set(s))
                .collect(),
            packages: alloc::vec![(Some(0), set("0-3")), (Some(1), set("4-7"))],
            numa_nodes: alloc::vec![
                NumaNode {
                    os_index: 0,
                    cpus: set("0-1"),
                    memory_bytes: 1
                },
                NumaNode {
                    os_index: 1,
                    cpus: set("2-7"),
                    memory_bytes: 2
                },
            ],
            caches: alloc::vec![Cache {
                level: 3,
                kind: CacheKind::Unified,
                size_bytes: 8,
                line_bytes: 64,
                cpus: set("0-1"),
            }],
            ..Raw::default()
        };
        let t = raw.finish().unwrap();
        assert_eq!(t.usable_cpus().to_string(), "2-5");
        assert_eq!(t.cores().len(), 2);
        assert_eq!(t.cores()[1].package, Some(1));
        assert_eq!(t.cores()[0].numa_node, Some(0));
        assert_eq!(t.numa_nodes().len(), 1);
        assert_eq!(t.numa_nodes()[0].os_index, 1);
        assert!(t.caches().is_empty());
        assert_eq!(t.fallback(), None);
    }

    #[test]
    fn nothing_usable_is_an_error() {
        let raw = Raw {
            online: set("0-1"),
            allowed: Some(set("4")),
            ..Raw::default()
        };
        assert!(matches!(
            raw.finish(),
            Err(TopologyError::NoUsableCpus { .. })
        ));
    }
}
