//! Reading the live system or a recorded root (the `std` feature).

use std::path::{Path, PathBuf};
use std::string::ToString;

use crate::os::{self, linux::AffinitySource};
use crate::{CpuSet, Topology, TopologyError};

/// Reads a topology from a root directory, with the affinity source chosen.
///
/// [`Topology::from_root`] covers the usual cases; a `Loader` lets a test
/// or a tool say which affinity mask applies.
///
/// ```no_run
/// use keel_topology::{CpuSet, Loader};
/// let t = Loader::new("/recorded/machine")
///     .affinity([0, 1].into_iter().collect::<CpuSet>())
///     .load()
///     .unwrap();
/// assert!(t.usable_cpus().len() <= 2);
/// ```
///
/// ```
/// use keel_topology::{CpuSet, Loader};
/// let dir = std::env::temp_dir().join(format!("keel-loader-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("sys/devices/system/cpu"))?;
/// std::fs::write(dir.join("sys/devices/system/cpu/online"), "0-3\n")?;
/// let loader = Loader::new(&dir);
/// assert_eq!(loader.load()?.usable_cpus().to_string(), "0-3");
/// let pinned = loader.affinity([1, 2].into_iter().collect::<CpuSet>());
/// assert_eq!(pinned.load()?.usable_cpus().to_string(), "1-2");
/// assert_eq!(pinned.no_affinity().load()?.usable_cpus().to_string(), "0-3");
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Loader {
    root: PathBuf,
    affinity: Affinity,
}

#[derive(Clone, Debug)]
enum Affinity {
    /// The live mask when the root is `/`, none otherwise.
    Auto,
    None,
    Set(CpuSet),
}

impl Loader {
    /// A loader for the sysfs/procfs tree under `root` (`/` for this machine).
    pub fn new(root: impl AsRef<Path>) -> Self {
        Loader {
            root: root.as_ref().to_path_buf(),
            affinity: Affinity::Auto,
        }
    }

    /// Uses `cpus` as the process affinity mask instead of asking the OS.
    pub fn affinity(mut self, cpus: CpuSet) -> Self {
        self.affinity = Affinity::Set(cpus);
        self
    }

    /// Applies no affinity mask (only online CPUs and the cgroup cpuset).
    pub fn no_affinity(mut self) -> Self {
        self.affinity = Affinity::None;
        self
    }

    /// Reads the tree.
    pub fn load(&self) -> Result<Topology, TopologyError> {
        let live = self.root.canonicalize().is_ok_and(|p| p == Path::new("/"));
        let source = match &self.affinity {
            Affinity::Set(s) => AffinitySource::Set(s.clone()),
            Affinity::None => AffinitySource::None,
            Affinity::Auto if live => {
                os::live_affinity().map_or(AffinitySource::None, AffinitySource::Set)
            }
            Affinity::Auto => AffinitySource::None,
        };
        os::linux::read_root(&self.root, source)?.finish()
    }
}

impl Topology {
    /// The live machine. Never fails: where sysfs is unavailable or
    /// unreadable it falls back to `available_parallelism`, and
    /// [`fallback`](Topology::fallback) says why.
    ///
    /// ```
    /// let t = keel_topology::Topology::detect();
    /// assert!(t.cores().len() >= 1 || t.fallback().is_some());
    /// ```
    pub fn detect() -> Topology {
        let reason = match os::native().map(|raw| raw.finish()) {
            Ok(Ok(t)) => return t,
            Ok(Err(e)) => e.to_string(),
            Err(why) => why,
        };
        let reason = std::format!("{reason}; using available_parallelism");
        // available_parallelism gives at least one CPU, so finish cannot
        // fail; the default keeps the never-fails promise anyway.
        os::fallback::raw(reason).finish().unwrap_or_default()
    }

    /// The machine recorded under `root` (a directory holding `sys/` and
    /// `proc/`, as hwloc's `HWLOC_FSROOT`). `/` reads this machine, with
    /// its affinity mask.
    ///
    /// Missing files degrade the answer (see [`fallback`](Topology::fallback));
    /// malformed ones are errors naming the file and its text.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("keel-topo-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("sys/devices/system/cpu/cpu0/topology")).unwrap();
    /// std::fs::write(dir.join("sys/devices/system/cpu/online"), "0\n").unwrap();
    /// let t = keel_topology::Topology::from_root(&dir).unwrap();
    /// assert_eq!(t.usable_cpus().to_string(), "0");
    /// std::fs::write(dir.join("sys/devices/system/cpu/online"), "zero\n").unwrap();
    /// let err = keel_topology::Topology::from_root(&dir).unwrap_err();
    /// assert!(err.to_string().contains("zero"));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn from_root(root: impl AsRef<Path>) -> Result<Topology, TopologyError> {
        Loader::new(root).load()
    }
}
