//! The crate's error type.

use alloc::string::String;
use core::fmt;

use crate::parse::ParseError;

/// Why a topology could not be read.
///
/// Missing files are not errors (they degrade the answer, and
/// [`Topology::fallback`](crate::Topology::fallback) says how); malformed
/// text is, and the error names the file and the text.
///
/// ```
/// use keel_topology::{Topology, TopologyError};
/// let root = std::env::temp_dir().join(format!("keel-no-root-{}", std::process::id()));
/// let err = Topology::from_root(&root).unwrap_err();
/// assert!(matches!(err, TopologyError::NotADirectory { exists: false, .. }));
/// assert!(err.to_string().ends_with("no such directory"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologyError {
    /// A file's text does not have the format its name promises.
    Parse {
        /// The file, as a path under the root.
        path: String,
        /// What was wrong with its text.
        error: ParseError,
    },
    /// A file exists but could not be read (other than being absent).
    Read {
        /// The file.
        path: String,
        /// The OS's reason.
        reason: String,
    },
    /// The root holds no CPU information at all (no `sys/devices/system/cpu`,
    /// no `proc/cpuinfo`): it is not a Linux sysfs root.
    NotASysfsRoot {
        /// The root that was read.
        root: String,
    },
    /// The root is not a directory: a file stands there, or nothing does.
    NotADirectory {
        /// The root that was given.
        root: String,
        /// Whether something other than a directory exists there.
        exists: bool,
    },
    /// `sys/devices/system/cpu` exists but lists no CPU (no `cpuN`
    /// directories, no `online` file), and there is no `proc/cpuinfo`.
    NoCpusListed {
        /// The CPU directory, as a path under the root.
        path: String,
    },
    /// The CPUs the process may use are all offline or hidden: online,
    /// affinity and cgroup cpuset do not intersect.
    NoUsableCpus {
        /// Online CPUs, as a cpulist.
        online: String,
        /// Affinity ∩ cgroup cpuset, as a cpulist.
        allowed: String,
    },
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Parse { path, error } => write!(f, "{path}: {error}"),
            TopologyError::Read { path, reason } => write!(f, "{path}: cannot read: {reason}"),
            TopologyError::NotASysfsRoot { root } => write!(
                f,
                "{root}: not a Linux sysfs root (no sys/devices/system/cpu and no proc/cpuinfo)"
            ),
            TopologyError::NotADirectory { root, exists: true } => write!(
                f,
                "{root}: not a directory (a root is a directory holding sys/ and proc/)"
            ),
            TopologyError::NotADirectory {
                root,
                exists: false,
            } => write!(f, "{root}: no such directory"),
            TopologyError::NoCpusListed { path } => write!(
                f,
                "{path}: lists no CPU (no cpuN directories, no online file), and there is no proc/cpuinfo"
            ),
            // No online CPU at all (an online list naming no CPU directory
            // the root has) is not a question of the allowed CPUs.
            TopologyError::NoUsableCpus { online, .. } if online.is_empty() => write!(
                f,
                "no usable CPU: no online CPU (none the online list names has its cpuN directory)"
            ),
            TopologyError::NoUsableCpus { online, allowed } => write!(
                f,
                "no usable CPU: online CPUs {online:?} and allowed CPUs {allowed:?} do not intersect"
            ),
        }
    }
}

// `core::error::Error` (Rust 1.81), so no_std users get it too.
impl core::error::Error for TopologyError {}
