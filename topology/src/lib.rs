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
    pub fn online_cpus(&self) -> &CpuSet {
        &self.online
    }

    /// CPUs that exist but are offline.
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
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// Packages with at least one usable CPU.
    pub fn packages(&self) -> &[Package] {
        &self.packages
    }

    /// Dies (the usable CPUs of each) where sysfs reports multi-CPU dies;
    /// empty otherwise.
    pub fn dies(&self) -> &[CpuSet] {
        &self.dies
    }

    /// Clusters (the usable CPUs of each; on ARM, cores sharing an L2 or a
    /// scheduler domain) where sysfs reports them and they differ from
    /// dies and packages; empty otherwise.
    pub fn clusters(&self) -> &[CpuSet] {
        &self.clusters
    }

    /// NUMA nodes with at least one usable CPU.
    pub fn numa_nodes(&self) -> &[NumaNode] {
        &self.numa_nodes
    }

    /// Every cache instance with at least one usable CPU.
    pub fn caches(&self) -> &[Cache] {
        &self.caches
    }

    /// Core kinds, from efficient to performant; empty when the machine
    /// reports nothing to tell kinds apart.
    pub fn core_kinds(&self) -> &[CoreKind] {
        &self.core_kinds
    }

    /// The container CPU quota as a number of CPUs (`1.5` = 150 ms per 100 ms).
    pub fn cpu_quota(&self) -> Option<f64> {
        self.cpu_quota
    }

    /// Why the answer is degraded (a fallback source, a missing file), if it is.
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
