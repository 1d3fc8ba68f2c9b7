//! Optional binding of workers to CPUs (`Binding::Close`, `Binding::Spread`).
//!
//! Which CPUs each worker gets is a pure function of the topology's cores
//! ([`places`], [`plan`]), so recorded multi-node machines can check it;
//! applying it is one `sched_setaffinity` call that each worker makes on
//! itself when it starts (reading a mask back is
//! [`keel_topology::current_affinity`]). This module is the only one
//! touching the OS.

use keel_topology::{Core, CpuSet, Topology};

/// How workers are bound to CPUs.
///
/// Binding is off by default: measured on large hosts, binding made random
/// gathers 24-51% slower, because the scheduler balances better than a fixed
/// placement when some workers stall on memory.
///
/// ```
/// use keel_pool::{Binding, Pool, Source, settings::Settings};
///
/// assert_eq!(Binding::default(), Binding::None);
/// let pool = Pool::builder().width(2).settings(Settings::parse("KEEL_BIND=close")).build()?;
/// assert_eq!(pool.config().binding, Binding::Close);
/// assert_eq!(pool.config().binding_source, Source::File);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Binding {
    /// Workers run wherever the OS schedules them.
    #[default]
    None,
    /// Worker `i` on the `i`-th physical core in node, package and CPU order:
    /// workers pack onto the first node, sharing its caches.
    Close,
    /// Consecutive workers on different NUMA nodes (packages where the
    /// topology has no nodes), round-robin: all nodes' memory bandwidth is
    /// used from the second worker on.
    Spread,
}

/// The group a core belongs to for `Spread`: its NUMA node, else its package.
fn group(core: &Core) -> usize {
    core.numa_node.unwrap_or(core.package.unwrap_or(0))
}

/// The places (one per physical core: the core's usable CPUs) in the order
/// workers take them under `mode`; empty for `Binding::None` or no cores.
///
/// ```
/// use keel_pool::{Binding, places};
/// use keel_topology::Core;
///
/// let core = |cpus: [usize; 2], node| {
///     let cpus = cpus.into_iter().collect();
///     Core { cpus, package: Some(node), numa_node: Some(node), kind: None }
/// };
/// let cores = [core([0, 2], 0), core([1, 3], 0), core([4, 6], 1)];
/// let firsts = |mode| places(&cores, mode).iter().map(|p| p.first()).collect::<Vec<_>>();
/// assert_eq!(firsts(Binding::Close), [Some(0), Some(1), Some(4)]);
/// assert_eq!(firsts(Binding::Spread), [Some(0), Some(4), Some(1)]);
/// assert!(places(&cores, Binding::None).is_empty());
/// ```
pub fn places(cores: &[Core], mode: Binding) -> Vec<CpuSet> {
    let mut sorted: Vec<&Core> = cores.iter().filter(|c| !c.cpus.is_empty()).collect();
    sorted.sort_by_key(|c| (group(c), c.package.unwrap_or(0), c.cpus.first()));
    match mode {
        Binding::None => Vec::new(),
        Binding::Close => sorted.into_iter().map(|c| c.cpus.clone()).collect(),
        Binding::Spread => {
            // Split by group (sorted, so groups are contiguous), then take
            // one core from each group in turn.
            let mut groups: Vec<Vec<&Core>> = Vec::new();
            for c in sorted {
                match groups.last_mut() {
                    Some(g) if group(g[0]) == group(c) => g.push(c),
                    _ => groups.push(vec![c]),
                }
            }
            let mut out = Vec::new();
            let deepest = groups.iter().map(Vec::len).max().unwrap_or(0);
            for round in 0..deepest {
                for g in &groups {
                    if let Some(c) = g.get(round) {
                        out.push(c.cpus.clone());
                    }
                }
            }
            out
        }
    }
}

/// The CPU set each of `workers` workers binds to under `mode` (`None` for
/// unbound). With more workers than cores, places are reused in order.
///
/// ```
/// use keel_pool::{Binding, Topology, plan};
///
/// let topology = Topology::detect();
/// let cores = topology.cores().len();
/// let p = plan(&topology, Binding::Close, cores + 1);
/// assert_eq!(p.len(), cores + 1);
/// assert!(p[0].is_some());
/// assert_eq!(p[cores], p[0]);
/// assert_eq!(plan(&topology, Binding::None, 2), [None, None]);
/// ```
pub fn plan(topology: &Topology, mode: Binding, workers: usize) -> Vec<Option<CpuSet>> {
    let p = places(topology.cores(), mode);
    (0..workers)
        .map(|w| (!p.is_empty()).then(|| p[w % p.len()].clone()))
        .collect()
}

/// Why a worker could not be bound (it then runs unbound).
///
/// ```
/// use keel_pool::{BindError, Binding, Pool};
///
/// let pool = Pool::builder().width(3).binding(Binding::Close).build()?;
/// // Binding may be refused (in a container, say); those workers run unbound.
/// for (worker, why) in pool.binding_failures() {
///     assert!(worker < pool.workers());
///     assert!(matches!(why, BindError::Refused { .. } | BindError::Unsupported { .. }));
/// }
/// let e = BindError::Unsupported { cpus: [2, 3].into_iter().collect() };
/// assert_eq!(e.to_string(), "binding to 2-3 is only implemented on Linux");
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BindError {
    /// `sched_setaffinity` refused the set, typically because none of its
    /// CPUs exists or is allowed here (`EINVAL`).
    Refused {
        /// The CPUs asked for.
        cpus: CpuSet,
        /// The OS error number.
        errno: i32,
    },
    /// This OS has no per-thread binding that keel-pool uses.
    Unsupported {
        /// The CPUs asked for.
        cpus: CpuSet,
    },
}

impl BindError {
    /// The OS's error, where there was one.
    ///
    /// ```
    /// use keel_pool::BindError;
    ///
    /// let refused = BindError::Refused { cpus: [5].into_iter().collect(), errno: 22 };
    /// assert_eq!(refused.os_error().and_then(|e| e.raw_os_error()), Some(22));
    /// let unsupported = BindError::Unsupported { cpus: [5].into_iter().collect() };
    /// assert!(unsupported.os_error().is_none());
    /// ```
    pub fn os_error(&self) -> Option<std::io::Error> {
        match self {
            BindError::Refused { errno, .. } => Some(std::io::Error::from_raw_os_error(*errno)),
            BindError::Unsupported { .. } => None,
        }
    }
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindError::Refused { cpus, errno } => write!(
                f,
                "sched_setaffinity({cpus}) failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            BindError::Unsupported { cpus } => {
                write!(f, "binding to {cpus} is only implemented on Linux")
            }
        }
    }
}

impl std::error::Error for BindError {}

/// Binds the calling thread to `cpus`, whatever their numbers: the mask
/// passed is as long as the set's highest CPU needs (the kernel ignores
/// bits past its own CPU count), not a fixed 1024-CPU `cpu_set_t`.
#[cfg(target_os = "linux")]
pub(crate) fn bind_current(cpus: &CpuSet) -> Result<(), BindError> {
    let words = cpus.words();
    // The kernel reads whole `unsigned long`s; give it at least one.
    let zero = [0u64];
    let mask: &[u64] = if words.is_empty() { &zero } else { words };
    // SAFETY: `mask` is a live, readable buffer of exactly the length
    // passed; the kernel reads the mask as a bitmap of words, bit `i % 64`
    // of word `i / 64` for CPU `i`, the layout `CpuSet::words` has. pid 0
    // is the calling thread.
    let rc = unsafe {
        libc::sched_setaffinity(
            0,
            std::mem::size_of_val(mask),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(BindError::Refused {
            cpus: cpus.clone(),
            errno: std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL),
        })
    }
}

/// Binds the calling thread to `cpus` (not supported on this OS).
#[cfg(not(target_os = "linux"))]
pub(crate) fn bind_current(cpus: &CpuSet) -> Result<(), BindError> {
    Err(BindError::Unsupported { cpus: cpus.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cpus: &[usize]) -> CpuSet {
        let mut s = CpuSet::default();
        for &c in cpus {
            s.insert(c);
        }
        s
    }

    /// Two nodes of two 2-thread cores, numbered the way Linux often does:
    /// node 0 has cores {0,4} {1,5}, node 1 has {2,6} {3,7}; listed out of
    /// order to check the sort.
    fn two_nodes() -> Vec<Core> {
        let core = |cpus: &[usize], node| Core {
            cpus: set(cpus),
            package: Some(node),
            numa_node: Some(node),
            kind: None,
        };
        vec![
            core(&[3, 7], 1),
            core(&[0, 4], 0),
            core(&[2, 6], 1),
            core(&[1, 5], 0),
        ]
    }

    #[test]
    fn close_packs_the_first_node() {
        let p = places(&two_nodes(), Binding::Close);
        assert_eq!(
            p,
            vec![set(&[0, 4]), set(&[1, 5]), set(&[2, 6]), set(&[3, 7])]
        );
    }

    #[test]
    fn spread_alternates_nodes() {
        let p = places(&two_nodes(), Binding::Spread);
        assert_eq!(
            p,
            vec![set(&[0, 4]), set(&[2, 6]), set(&[1, 5]), set(&[3, 7])]
        );
    }

    #[test]
    fn spread_uneven_nodes_keeps_every_core() {
        let mut cores = two_nodes();
        cores.push(Core {
            cpus: set(&[8]),
            package: Some(0),
            numa_node: Some(0),
            kind: None,
        });
        let p = places(&cores, Binding::Spread);
        assert_eq!(p.len(), 5);
        assert_eq!(p[0], set(&[0, 4]));
        assert_eq!(p[1], set(&[2, 6]));
        assert_eq!(p[4], set(&[8]));
    }

    #[test]
    fn spread_falls_back_to_packages() {
        let cores: Vec<Core> = [(0, 0), (1, 0), (2, 1), (3, 1)]
            .iter()
            .map(|&(cpu, pkg)| Core {
                cpus: set(&[cpu]),
                package: Some(pkg),
                numa_node: None,
                kind: None,
            })
            .collect();
        let p = places(&cores, Binding::Spread);
        assert_eq!(p, vec![set(&[0]), set(&[2]), set(&[1]), set(&[3])]);
    }

    #[test]
    fn none_binds_nothing() {
        assert!(places(&two_nodes(), Binding::None).is_empty());
    }

    /// A mask past the 1024 CPUs of a `cpu_set_t` is passed whole: the
    /// kernel drops the CPUs it does not have and binds to the rest, or
    /// refuses a set with none it has.
    #[test]
    #[cfg(target_os = "linux")]
    fn binds_beyond_1024_cpus() {
        if cfg!(miri) {
            println!("skipping under Miri: sched_setaffinity is a foreign call it cannot run");
            return;
        }
        std::thread::spawn(|| {
            let here = keel_topology::current_affinity().unwrap();
            let cpu = here.first().unwrap();
            // Well past any kernel's CPU count on this machine.
            let far = 1 << 19;
            assert_eq!(
                bind_current(&set(&[cpu, far])),
                Ok(()),
                "CPU {cpu} with CPU {far}"
            );
            assert_eq!(keel_topology::current_affinity().unwrap(), set(&[cpu]));
            let e = bind_current(&set(&[far])).unwrap_err();
            assert!(
                matches!(
                    e,
                    BindError::Refused {
                        errno: libc::EINVAL,
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("524288"), "{e}");
            assert!(bind_current(&CpuSet::default()).is_err());
        })
        .join()
        .unwrap();
    }
}
