//! keel-topology: what the machine really is.
//!
//! Usable CPUs, physical cores, packages, NUMA nodes, caches, hybrid core
//! kinds and container CPU quotas, read from sysfs/procfs under a configurable
//! root so recorded machines replay exactly, the way hwloc replays one with
//! `HWLOC_FSROOT`.
//!
//! ```
//! use keel_topology::{Topology, Work};
//! // The live machine; never fails (it degrades to available_parallelism).
//! let t = Topology::detect();
//! assert!(!t.usable_cpus().is_empty());
//! assert!(t.workers_for(Work::Bandwidth) <= t.workers_for(Work::Latency));
//! ```
//!
//! The core (model, parsers, assembly) is `no_std` + `alloc`; the `std`
//! feature (default) adds reading the live system and recorded roots.
#![no_std]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// Only the std OS layers construct a `Raw` today; no_std keeps the code so
// the assembly logic stays testable (and Miri-checkable) without std.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
mod build;
mod error;
mod model;
#[cfg(feature = "std")]
mod os;
pub mod parse;

pub use error::TopologyError;
#[cfg(feature = "std")]
pub use load::Loader;
pub use model::{Cache, CacheKind, Core, CoreKind, CpuSet, NumaNode, Package, Work};
#[cfg(feature = "std")]
pub use os::current_affinity;

#[cfg(feature = "std")]
mod load;

// The README's examples run as doctests.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

use alloc::string::String;
use alloc::vec::Vec;

// A topology is read once and shared by every worker of a pool or heap:
// each public type must cross threads, and a change that stopped one
// from doing so fails to compile here.
static_assertions::assert_impl_all!(Topology: Send, Sync, Clone);
static_assertions::assert_impl_all!(CpuSet: Send, Sync, Clone);
static_assertions::assert_impl_all!(Core: Send, Sync, Clone);
static_assertions::assert_impl_all!(Package: Send, Sync, Clone);
static_assertions::assert_impl_all!(NumaNode: Send, Sync, Clone);
static_assertions::assert_impl_all!(Cache: Send, Sync, Clone);
static_assertions::assert_impl_all!(CacheKind: Send, Sync, Copy);
static_assertions::assert_impl_all!(CoreKind: Send, Sync, Clone);
static_assertions::assert_impl_all!(Work: Send, Sync, Copy);
static_assertions::assert_impl_all!(TopologyError: Send, Sync, core::error::Error);
static_assertions::assert_impl_all!(parse::ParseError: Send, Sync, core::error::Error);
#[cfg(feature = "std")]
static_assertions::assert_impl_all!(Loader: Send, Sync, Clone);

/// The machine as keel sees it: only usable CPUs appear in cores, packages,
/// NUMA nodes and caches.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub(crate) online: CpuSet,
    pub(crate) offline: CpuSet,
    pub(crate) usable: CpuSet,
    pub(crate) cores: Vec<Core>,
    pub(crate) packages: Vec<Package>,
    pub(crate) dies: Vec<CpuSet>,
    pub(crate) clusters: Vec<CpuSet>,
    pub(crate) numa_nodes: Vec<NumaNode>,
    pub(crate) caches: Vec<Cache>,
    pub(crate) core_kinds: Vec<CoreKind>,
    pub(crate) cpu_quota: Option<f64>,
    pub(crate) fallback: Option<String>,
}

impl Topology {
    /// Online logical CPUs.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// assert!(!t.online_cpus().is_empty());
    /// assert!(t.usable_cpus().is_subset(t.online_cpus()));
    /// ```
    pub fn online_cpus(&self) -> &CpuSet {
        &self.online
    }

    /// CPUs that exist but are offline.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// assert!(!t.offline_cpus().intersects(t.online_cpus()));
    /// assert!(!t.offline_cpus().intersects(t.usable_cpus()));
    /// ```
    pub fn offline_cpus(&self) -> &CpuSet {
        &self.offline
    }

    /// CPUs this process may run on: online ∩ affinity ∩ cgroup cpuset.
    ///
    /// On the live machine the affinity is the mask of the thread that
    /// called `Topology::detect` (Linux keeps one per thread): a
    /// thread pinned to fewer CPUs than the process has sees only those, so
    /// detect from an unpinned thread, or pass a mask with
    /// `Loader::affinity`.
    pub fn usable_cpus(&self) -> &CpuSet {
        &self.usable
    }

    /// Physical cores with at least one usable CPU.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// let mut seen = keel_topology::CpuSet::new();
    /// for core in t.cores() {
    ///     assert!(!core.cpus.intersects(&seen)); // no CPU is in two cores
    ///     seen = seen.or(&core.cpus);
    /// }
    /// assert!(seen.is_subset(t.usable_cpus()));
    /// ```
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// Packages with at least one usable CPU.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// for (i, p) in t.packages().iter().enumerate() {
    ///     assert!(p.cpus.is_subset(t.usable_cpus()));
    ///     let held = t.cores().iter().filter(|c| c.package == Some(i));
    ///     assert!(held.into_iter().all(|c| c.cpus.is_subset(&p.cpus)));
    /// }
    /// ```
    pub fn packages(&self) -> &[Package] {
        &self.packages
    }

    /// Dies (the usable CPUs of each) where sysfs reports multi-CPU dies;
    /// empty otherwise.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// for die in t.dies() {
    ///     assert!(!die.is_empty() && die.is_subset(t.usable_cpus()));
    /// }
    /// ```
    pub fn dies(&self) -> &[CpuSet] {
        &self.dies
    }

    /// Clusters (the usable CPUs of each; on ARM, cores sharing an L2 or a
    /// scheduler domain) where sysfs reports them and they differ from
    /// dies and packages; empty otherwise.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// for cluster in t.clusters() {
    ///     assert!(!cluster.is_empty() && cluster.is_subset(t.usable_cpus()));
    /// }
    /// ```
    pub fn clusters(&self) -> &[CpuSet] {
        &self.clusters
    }

    /// NUMA nodes with at least one usable CPU.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// for node in t.numa_nodes() {
    ///     assert!(!node.cpus.is_empty() && node.cpus.is_subset(t.usable_cpus()));
    /// }
    /// assert!(t.cores().iter().all(|c| c.numa_node.is_none_or(|n| n < t.numa_nodes().len())));
    /// ```
    pub fn numa_nodes(&self) -> &[NumaNode] {
        &self.numa_nodes
    }

    /// Every cache instance with at least one usable CPU.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// for c in t.caches() {
    ///     assert!(c.level >= 1 && c.cpus.is_subset(t.usable_cpus()));
    /// }
    /// // Deepest levels first.
    /// assert!(t.caches().windows(2).all(|w| w[0].level >= w[1].level));
    /// ```
    pub fn caches(&self) -> &[Cache] {
        &self.caches
    }

    /// Core kinds, from efficient to performant; empty when the machine
    /// reports nothing to tell kinds apart.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// for kind in t.core_kinds() {
    ///     assert!(!kind.cpus.is_empty() && kind.cpus.is_subset(t.usable_cpus()));
    /// }
    /// assert!(t.cores().iter().all(|c| c.kind.is_none_or(|k| k < t.core_kinds().len())));
    /// ```
    pub fn core_kinds(&self) -> &[CoreKind] {
        &self.core_kinds
    }

    /// The container CPU quota as a number of CPUs (`1.5` = 150 ms per 100 ms).
    ///
    /// ```
    /// use keel_topology::{Topology, Work};
    /// let t = Topology::detect();
    /// if let Some(q) = t.cpu_quota() {
    ///     assert!(q > 0.0);
    ///     assert!(t.workers_for(Work::Latency) as f64 <= q.ceil().max(1.0));
    /// }
    /// ```
    pub fn cpu_quota(&self) -> Option<f64> {
        self.cpu_quota
    }

    /// Why the answer is degraded (a fallback source, a missing file), if it is.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("keel-fallback-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("sys/devices/system/cpu/cpu0"))?;
    /// std::fs::write(dir.join("sys/devices/system/cpu/online"), "0\n")?;
    /// let t = keel_topology::Topology::from_root(&dir)?;
    /// assert!(t.fallback().is_some_and(|why| why.contains("no sysfs CPU topology")));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// How many workers to run for `work`: physical cores (bandwidth) or
    /// usable logical CPUs (latency), capped by the CPU quota rounded up, and
    /// never less than 1.
    ///
    /// ```
    /// use keel_topology::{Topology, Work};
    /// let t = Topology::default();
    /// assert_eq!(t.workers_for(Work::Bandwidth), 1);
    /// ```
    pub fn workers_for(&self, work: Work) -> usize {
        let n = match work {
            // With no core information at all, every usable CPU counts.
            Work::Bandwidth if self.cores.is_empty() => self.usable.len(),
            Work::Bandwidth => self.cores.len(),
            Work::Latency => self.usable.len(),
        };
        let n = match self.cpu_quota {
            Some(q) if q > 0.0 => n.min(ceil_usize(q)),
            _ => n,
        };
        n.max(1)
    }
}

fn ceil_usize(q: f64) -> usize {
    // `as` saturates at usize::MAX; so must the rounding up, or a quota
    // above usize::MAX CPUs (reachable through cpu.max on 32-bit targets)
    // would wrap to 0 and cap the workers at 1.
    let t = q as usize;
    if (t as f64) < q {
        t.saturating_add(1)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_beyond_usize_does_not_overflow() {
        // cpu.max allows quotas far above any CPU count (on 32-bit targets,
        // above usize::MAX CPUs): the cap must saturate, not wrap to 0.
        let t = Topology {
            usable: (0..4).collect(),
            cpu_quota: Some(1e30),
            ..Topology::default()
        };
        assert_eq!(t.workers_for(Work::Latency), 4);
        assert_eq!(ceil_usize(1e30), usize::MAX);
        assert_eq!(ceil_usize(1.5), 2);
        assert_eq!(ceil_usize(2.0), 2);
    }
}
