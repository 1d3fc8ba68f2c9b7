//! Where the pages of a large block live on a multi-node (NUMA) host.
//!
//! Interleaving measured at least as fast as node-local placement for every
//! access pattern and much faster for scattered gathers, so the
//! [`Placement::Auto`] default interleaves large buffers over the usable
//! nodes where there is more than one, and does nothing elsewhere.
//!
//! Two halves: [`decide`] is a pure function from the usable node numbers
//! and a [`Placement`] to a [`Decision`] (policy and node mask, or a no-op
//! with its reason), testable against recorded machines; [`place`] applies
//! it to a buffer with `mbind` and returns a [`PlacementOutcome`] that says
//! what happened. A failed `mbind` (no such node, a kernel without NUMA,
//! a sandbox that forbids it) falls back to leaving the pages alone, with
//! the reason recorded in the outcome: placement never fails a caller.
//!
//! The usable node numbers come from the caller (the facade passes
//! `keel_topology`'s NUMA nodes): keel-heap depends on nothing of ours.
//!
//! A policy steers the faults that come after it: place a buffer before
//! writing it. Only whole pages inside the buffer are affected.
//!
//! ```
//! use keel_heap::{place, Placement, PlacementOutcome, NoOpReason};
//! let buf = vec![0u8; 1 << 20];
//! // One usable node: Auto leaves the pages alone and says why.
//! let outcome = place(&buf, Placement::Auto, &[0]);
//! assert_eq!(outcome, PlacementOutcome::NoOp(NoOpReason::SingleNode));
//! println!("{outcome}");
//! ```

use core::fmt;

use crate::os::numa;

/// How the pages of a block should be spread over NUMA nodes.
///
/// ```
/// use keel_heap::{decide, Decision, NodeMask, Placement, Policy};
/// assert_eq!(Placement::default(), Placement::Auto);
/// // `Default` resets the range to the process's policy, whatever the nodes.
/// let reset = Decision::Apply { policy: Policy::Default, nodes: NodeMask::new() };
/// assert_eq!(decide(&[0, 1], Placement::Default), reset);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Interleave over the usable nodes when there is more than one; leave
    /// the pages alone on a single-node host.
    #[default]
    Auto,
    /// The process's default policy (normally: the node of the faulting
    /// CPU). Resets an earlier policy on the range.
    Default,
    /// Pages round-robin over every usable node (`MPOL_INTERLEAVE`).
    Interleave,
    /// Pages only from this node (`MPOL_BIND`), by OS node number.
    Node(u32),
}

/// A kernel memory policy.
///
/// ```
/// use keel_heap::{decide, Decision, Placement, Policy};
/// let Decision::Apply { policy, .. } = decide(&[0, 1], Placement::Node(1)) else { panic!() };
/// assert_eq!(policy, Policy::Bind);
/// assert_eq!(policy.name(), "MPOL_BIND");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `MPOL_DEFAULT`.
    Default,
    /// `MPOL_INTERLEAVE`.
    Interleave,
    /// `MPOL_BIND`.
    Bind,
}

impl Policy {
    fn mode(self) -> i32 {
        match self {
            Policy::Default => numa::MPOL_DEFAULT,
            Policy::Interleave => numa::MPOL_INTERLEAVE,
            Policy::Bind => numa::MPOL_BIND,
        }
    }

    /// The kernel's name for it.
    ///
    /// ```
    /// assert_eq!(keel_heap::Policy::Interleave.name(), "MPOL_INTERLEAVE");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Default => "MPOL_DEFAULT",
            Policy::Interleave => "MPOL_INTERLEAVE",
            Policy::Bind => "MPOL_BIND",
        }
    }
}

/// A set of NUMA node numbers below 1024 (Linux's largest `MAX_NUMNODES`),
/// in the layout `mbind` reads.
///
/// ```
/// use keel_heap::NodeMask;
/// let mut m = NodeMask::new();
/// assert!(m.is_empty());
/// assert!(m.insert(3) && m.insert(0) && m.insert(1) && m.insert(3));
/// assert!(!m.insert(NodeMask::CAPACITY)); // no such node on Linux
/// assert!(m.contains(1) && !m.contains(2));
/// assert_eq!((m.len(), m.iter().collect::<Vec<_>>()), (3, vec![0, 1, 3]));
/// assert_eq!(m.to_string(), "0-1,3");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeMask {
    words: [u64; numa::MASK_WORDS],
}

impl NodeMask {
    /// Node numbers a mask can hold: `0..CAPACITY`.
    pub const CAPACITY: u32 = (numa::MASK_WORDS * 64) as u32;

    /// The empty mask.
    pub const fn new() -> NodeMask {
        NodeMask {
            words: [0; numa::MASK_WORDS],
        }
    }

    /// Adds `node`; returns false (and changes nothing) if it is not below
    /// [`NodeMask::CAPACITY`].
    pub fn insert(&mut self, node: u32) -> bool {
        if node >= Self::CAPACITY {
            return false;
        }
        self.words[node as usize / 64] |= 1 << (node % 64);
        true
    }

    /// Whether `node` is in the mask.
    pub fn contains(&self, node: u32) -> bool {
        node < Self::CAPACITY && self.words[node as usize / 64] & (1 << (node % 64)) != 0
    }

    /// Number of nodes in the mask.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the mask is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The nodes in the mask, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..Self::CAPACITY).filter(|&n| self.contains(n))
    }

    fn from_words(words: [u64; numa::MASK_WORDS]) -> NodeMask {
        NodeMask { words }
    }
}

impl fmt::Display for NodeMask {
    /// A node list as the kernel prints one: `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut nodes = self.iter().peekable();
        while let Some(start) = nodes.next() {
            let mut end = start;
            while nodes.peek() == Some(&(end + 1)) {
                end = nodes.next().unwrap_or(end);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for NodeMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeMask({self})")
    }
}

/// Why a placement leaves the pages alone without asking the kernel.
///
/// ```
/// use keel_heap::{decide, place, Decision, NoOpReason, Placement, PlacementOutcome};
/// assert_eq!(decide(&[], Placement::Interleave), Decision::NoOp(NoOpReason::NoNodes));
/// assert_eq!(decide(&[0], Placement::Node(2)), Decision::NoOp(NoOpReason::NoSuchNode(2)));
/// let small = [0u8; 64]; // less than a page
/// let outcome = place(&small, Placement::Interleave, &[0]);
/// assert_eq!(outcome, PlacementOutcome::NoOp(NoOpReason::NoWholePage));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoOpReason {
    /// `Auto` on a host with one usable node: there is nothing to spread over.
    SingleNode,
    /// No usable node was given.
    NoNodes,
    /// `Node(n)` names a node that is not among the usable ones.
    NoSuchNode(u32),
    /// The buffer holds no whole page, and a policy applies to whole pages.
    NoWholePage,
}

impl fmt::Display for NoOpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoOpReason::SingleNode => f.write_str("single NUMA node: nothing to interleave over"),
            NoOpReason::NoNodes => f.write_str("no usable NUMA node given"),
            NoOpReason::NoSuchNode(n) => write!(f, "node {n} is not a usable NUMA node"),
            NoOpReason::NoWholePage => f.write_str("the buffer holds no whole page"),
        }
    }
}

/// Why the kernel refused a policy; the pages keep the default policy.
///
/// ```
/// use keel_heap::{place, FallbackReason, Placement, PlacementOutcome};
/// let buf = vec![0u8; 1 << 20];
/// match place(&buf, Placement::Node(0), &[0]) {
///     // A kernel without NUMA, a sandbox, or node 0 outside the cpuset.
///     PlacementOutcome::Fallback { reason, .. } => println!("left to the default: {reason}"),
///     outcome => assert!(outcome.is_applied()),
/// }
/// assert_eq!(FallbackReason::NotPermitted.to_string(), "mbind not permitted here (EPERM)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FallbackReason {
    /// `ENOSYS`: the kernel has no NUMA support (or this OS has no `mbind`).
    NoNumaSupport,
    /// `EPERM`: not permitted (a sandbox or seccomp filter forbids `mbind`).
    NotPermitted,
    /// `EINVAL`: the kernel rejected the node mask (no such node, or not in
    /// the process's allowed memory nodes).
    NoSuchNode,
    /// Any other errno.
    Os(i32),
}

impl FallbackReason {
    fn from_errno(e: i32) -> FallbackReason {
        match e {
            libc::ENOSYS => FallbackReason::NoNumaSupport,
            libc::EPERM => FallbackReason::NotPermitted,
            libc::EINVAL => FallbackReason::NoSuchNode,
            e => FallbackReason::Os(e),
        }
    }
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FallbackReason::NoNumaSupport => f.write_str("kernel without NUMA support (ENOSYS)"),
            FallbackReason::NotPermitted => f.write_str("mbind not permitted here (EPERM)"),
            FallbackReason::NoSuchNode => f.write_str("kernel rejected the node mask (EINVAL)"),
            FallbackReason::Os(e) => write!(f, "mbind failed with errno {e}"),
        }
    }
}

/// What [`decide`] says to do.
///
/// ```
/// use keel_heap::{decide, Decision, Placement, Policy};
/// match decide(&[0, 2], Placement::Node(2)) {
///     Decision::Apply { policy, nodes } => {
///         assert_eq!((policy, nodes.to_string().as_str()), (Policy::Bind, "2"));
///     }
///     Decision::NoOp(reason) => panic!("{reason}"),
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Apply `policy` over `nodes` (empty for [`Policy::Default`]).
    Apply {
        /// The kernel policy.
        policy: Policy,
        /// The nodes it names.
        nodes: NodeMask,
    },
    /// Leave the pages alone.
    NoOp(NoOpReason),
}

/// What applying a placement did.
///
/// ```
/// use keel_heap::{place, NoOpReason, Placement, PlacementOutcome, Policy};
/// let buf = vec![0u8; 1 << 20];
/// match place(&buf, Placement::Default, &[0]) {
///     PlacementOutcome::Applied { policy, nodes } => {
///         assert!(policy == Policy::Default && nodes.is_empty());
///     }
///     PlacementOutcome::Fallback { reason, .. } => println!("refused: {reason}"),
///     PlacementOutcome::NoOp(reason) => panic!("1 MiB holds whole pages: {reason}"),
/// }
/// assert!(!PlacementOutcome::NoOp(NoOpReason::SingleNode).is_applied());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlacementOutcome {
    /// The kernel accepted the policy for the buffer's whole pages.
    Applied {
        /// The policy now in force on the range.
        policy: Policy,
        /// The nodes it names.
        nodes: NodeMask,
    },
    /// Nothing was asked of the kernel.
    NoOp(NoOpReason),
    /// The kernel refused; the pages keep their previous policy.
    Fallback {
        /// The policy that was asked for.
        policy: Policy,
        /// The nodes it named.
        nodes: NodeMask,
        /// Why it was refused.
        reason: FallbackReason,
    },
}

impl PlacementOutcome {
    /// Whether the requested policy is in force.
    ///
    /// ```
    /// use keel_heap::{place, Placement, PlacementOutcome};
    /// let buf = vec![0u8; 1 << 20];
    /// let outcome = place(&buf, Placement::Interleave, &[0]);
    /// assert_eq!(outcome.is_applied(), matches!(outcome, PlacementOutcome::Applied { .. }));
    /// assert!(!place(&buf, Placement::Auto, &[0]).is_applied()); // one node: a no-op
    /// ```
    pub fn is_applied(&self) -> bool {
        matches!(self, PlacementOutcome::Applied { .. })
    }
}

impl fmt::Display for PlacementOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementOutcome::Applied { policy, nodes } => {
                write!(f, "applied {} over nodes {{{nodes}}}", policy.name())
            }
            PlacementOutcome::NoOp(r) => write!(f, "left alone: {r}"),
            PlacementOutcome::Fallback {
                policy,
                nodes,
                reason,
            } => write!(
                f,
                "fell back to the default policy ({} over nodes {{{nodes}}} refused: {reason})",
                policy.name()
            ),
        }
    }
}

/// Decides which policy and node mask `placement` means, given the usable
/// NUMA node numbers (duplicates are ignored; numbers of 1024 and above
/// cannot exist on Linux and are ignored too).
///
/// ```
/// use keel_heap::{decide, Decision, NoOpReason, Placement, Policy};
/// assert_eq!(decide(&[0], Placement::Auto), Decision::NoOp(NoOpReason::SingleNode));
/// match decide(&[0, 1, 2, 3], Placement::Auto) {
///     Decision::Apply { policy, nodes } => {
///         assert_eq!(policy, Policy::Interleave);
///         assert_eq!(nodes.to_string(), "0-3");
///     }
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(decide(&[0, 1], Placement::Node(5)), Decision::NoOp(NoOpReason::NoSuchNode(5)));
/// ```
pub fn decide(nodes: &[u32], placement: Placement) -> Decision {
    let mut usable = NodeMask::new();
    for &n in nodes {
        usable.insert(n);
    }
    match placement {
        Placement::Default => Decision::Apply {
            policy: Policy::Default,
            nodes: NodeMask::new(),
        },
        Placement::Auto | Placement::Interleave if usable.is_empty() => {
            Decision::NoOp(NoOpReason::NoNodes)
        }
        Placement::Auto if usable.len() == 1 => Decision::NoOp(NoOpReason::SingleNode),
        Placement::Auto | Placement::Interleave => Decision::Apply {
            policy: Policy::Interleave,
            nodes: usable,
        },
        Placement::Node(n) if usable.contains(n) => {
            let mut one = NodeMask::new();
            one.insert(n);
            Decision::Apply {
                policy: Policy::Bind,
                nodes: one,
            }
        }
        Placement::Node(n) => Decision::NoOp(NoOpReason::NoSuchNode(n)),
    }
}

/// Applies `placement` to the whole pages of `[ptr, ptr + len)`.
///
/// Safe: a memory policy never changes the contents of a page, only where
/// its future faults are served from. The caller should own the range, since
/// the policy applies to every user of those pages.
pub(crate) fn apply(
    ptr: *const u8,
    len: usize,
    placement: &Placement,
    nodes: &[u32],
) -> PlacementOutcome {
    let (policy, mask) = match decide(nodes, *placement) {
        Decision::NoOp(r) => return PlacementOutcome::NoOp(r),
        Decision::Apply { policy, nodes } => (policy, nodes),
    };
    let page = numa::page_size();
    let start = (ptr as usize).div_ceil(page) * page;
    let end = (ptr as usize).saturating_add(len) / page * page;
    if end <= start {
        return PlacementOutcome::NoOp(NoOpReason::NoWholePage);
    }
    match numa::mbind(start, end - start, policy.mode(), &mask.words) {
        Ok(()) => PlacementOutcome::Applied {
            policy,
            nodes: mask,
        },
        Err(e) => PlacementOutcome::Fallback {
            policy,
            nodes: mask,
            reason: FallbackReason::from_errno(e),
        },
    }
}

/// Applies `placement` to the whole pages of `buf`, given the usable NUMA
/// node numbers, and says what happened. Never fails: a refused policy is a
/// [`PlacementOutcome::Fallback`] with its reason.
///
/// Place a buffer before writing it: the policy steers later page faults.
///
/// ```
/// use keel_heap::{place, Placement, PlacementOutcome};
/// let buf = vec![0u64; 1 << 18];
/// match place(&buf, Placement::Interleave, &[0]) {
///     PlacementOutcome::Applied { .. } => {}
///     other => println!("placement: {other}"), // e.g. mbind not permitted here
/// }
/// ```
pub fn place<T>(buf: &[T], placement: Placement, nodes: &[u32]) -> PlacementOutcome {
    apply(
        buf.as_ptr().cast::<u8>(),
        core::mem::size_of_val(buf),
        &placement,
        nodes,
    )
}

/// The policy and node mask the kernel reports for the page holding the
/// first byte of `buf` (`get_mempolicy(MPOL_F_ADDR)`): `Ok(None)` for a mode
/// this crate does not set (preferred, local), `Err` with the reason where
/// the kernel will not say.
///
/// ```
/// use keel_heap::{current_policy, place, Placement, Policy};
/// let buf = vec![0u8; 1 << 20];
/// if place(&buf[4096..], Placement::Interleave, &[0]).is_applied() {
///     let (policy, nodes) = current_policy(&buf[8192..]).unwrap().unwrap();
///     assert_eq!((policy, nodes.to_string().as_str()), (Policy::Interleave, "0"));
/// }
/// ```
pub fn current_policy<T>(buf: &[T]) -> Result<Option<(Policy, NodeMask)>, FallbackReason> {
    policy_at(buf.as_ptr().cast()).map_err(FallbackReason::from_errno)
}

fn policy_at(addr: *const u8) -> Result<Option<(Policy, NodeMask)>, i32> {
    let (mode, words) = numa::get_mempolicy(addr as usize)?;
    let policy = match mode {
        numa::MPOL_DEFAULT => Policy::Default,
        numa::MPOL_INTERLEAVE => Policy::Interleave,
        numa::MPOL_BIND => Policy::Bind,
        _ => return Ok(None),
    };
    Ok(Some((policy, NodeMask::from_words(words))))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::println;
    use std::string::ToString;
    use std::vec::Vec;

    fn mask(nodes: &[u32]) -> NodeMask {
        let mut m = NodeMask::new();
        for &n in nodes {
            assert!(m.insert(n));
        }
        m
    }

    #[test]
    fn decisions() {
        use Decision::*;
        assert_eq!(decide(&[], Placement::Auto), NoOp(NoOpReason::NoNodes));
        assert_eq!(decide(&[3], Placement::Auto), NoOp(NoOpReason::SingleNode));
        assert_eq!(
            decide(&[3, 3], Placement::Auto),
            NoOp(NoOpReason::SingleNode)
        );
        assert_eq!(
            decide(&[1, 0], Placement::Auto),
            Apply {
                policy: Policy::Interleave,
                nodes: mask(&[0, 1])
            }
        );
        assert_eq!(
            decide(&[], Placement::Interleave),
            NoOp(NoOpReason::NoNodes)
        );
        // Asked for explicitly, interleave over one node is applied.
        assert_eq!(
            decide(&[0], Placement::Interleave),
            Apply {
                policy: Policy::Interleave,
                nodes: mask(&[0])
            }
        );
        assert_eq!(
            decide(&[0, 2], Placement::Node(2)),
            Apply {
                policy: Policy::Bind,
                nodes: mask(&[2])
            }
        );
        assert_eq!(
            decide(&[0, 2], Placement::Node(1)),
            NoOp(NoOpReason::NoSuchNode(1))
        );
        assert_eq!(
            decide(&[0, 5000], Placement::Node(5000)),
            NoOp(NoOpReason::NoSuchNode(5000))
        );
        // Unrepresentable numbers are ignored, not counted as a second node.
        assert_eq!(
            decide(&[0, 5000], Placement::Auto),
            NoOp(NoOpReason::SingleNode)
        );
        assert_eq!(
            decide(&[], Placement::Default),
            Apply {
                policy: Policy::Default,
                nodes: NodeMask::new()
            }
        );
        assert_eq!(Placement::default(), Placement::Auto);
    }

    #[test]
    fn node_mask_layout_and_text() {
        let m = mask(&[0, 1, 2, 3, 8, 63, 64, 1023]);
        assert_eq!(m.words[0], 0b1_0000_1111 | (1 << 63));
        assert_eq!(m.words[1], 1);
        assert_eq!(m.words[15], 1 << 63);
        assert_eq!(m.len(), 8);
        assert_eq!(m.to_string(), "0-3,8,63-64,1023");
        let mut m = NodeMask::new();
        assert!(!m.insert(1024));
        assert!(m.is_empty());
        assert_eq!(m.to_string(), "");
    }

    /// Recorded multi-node machines: which nodes `Auto`, `Interleave` and
    /// `Node(n)` pick, from the node numbers keel-topology reads.
    #[cfg(not(miri))]
    #[test]
    fn decisions_on_recorded_machines() {
        // (fixture, the NUMA nodes with usable CPUs hwloc reports for it)
        let cases: &[(&str, &[u32])] = &[
            ("16amd64-8n2c", &[0, 1, 2, 3, 4, 5, 6, 7]),
            ("8ia64-2n2s2c", &[0, 1]),
            ("nvidiagpunumanodes", &[0, 8]),
            ("fakeheteromemtiers", &[0, 1, 2, 4, 6, 8, 9]),
            ("16em64t-4s2c2t", &[0]),
        ];
        let big: Vec<u32> = (0..64).collect();
        let mut cases: Vec<(&str, &[u32])> = cases.to_vec();
        cases.push(("256ia64-64n2s2c", &big));
        let base = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/topology"
        );
        let mut ran = 0;
        for (name, expected) in cases {
            let root = std::format!("{base}/{name}/root");
            if !std::path::Path::new(&root).is_dir() {
                // A user's clone may lack the recorded machines; CI
                // (`CI` set, as CI services set it) must check them.
                let ci =
                    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
                assert!(
                    !ci,
                    "fixture {root} is absent, and CI is set: the check must run"
                );
                println!("skipping {name}: fixture {root} is absent");
                continue;
            }
            let topo =
                keel_topology::Topology::from_root(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
            let nodes: Vec<u32> = topo.numa_nodes().iter().map(|n| n.os_index).collect();
            assert_eq!(nodes, expected, "{name}: usable nodes");
            let all = mask(expected);
            let auto = decide(&nodes, Placement::Auto);
            if expected.len() > 1 {
                assert_eq!(
                    auto,
                    Decision::Apply {
                        policy: Policy::Interleave,
                        nodes: all
                    },
                    "{name}"
                );
            } else {
                assert_eq!(auto, Decision::NoOp(NoOpReason::SingleNode), "{name}");
            }
            assert_eq!(
                decide(&nodes, Placement::Interleave),
                Decision::Apply {
                    policy: Policy::Interleave,
                    nodes: all
                },
                "{name}"
            );
            for n in 0..=*expected.last().unwrap_or(&0) + 1 {
                let want = if expected.contains(&n) {
                    Decision::Apply {
                        policy: Policy::Bind,
                        nodes: mask(&[n]),
                    }
                } else {
                    Decision::NoOp(NoOpReason::NoSuchNode(n))
                };
                assert_eq!(decide(&nodes, Placement::Node(n)), want, "{name} node {n}");
            }
            ran += 1;
        }
        println!("{ran} recorded machines checked");
    }

    /// A fresh anonymous mapping, unmapped on drop.
    #[cfg(not(miri))]
    struct Mapping {
        ptr: *mut u8,
        len: usize,
    }

    #[cfg(not(miri))]
    impl Mapping {
        fn new(pages: usize) -> Mapping {
            let len = pages * numa::page_size();
            // SAFETY: an anonymous private mapping with no address hint.
            let ptr = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED);
            Mapping {
                ptr: ptr.cast(),
                len,
            }
        }

        fn bytes(&self) -> &[u8] {
            // SAFETY: the mapping is readable, zero-filled and lives as long as self.
            unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
        }
    }

    #[cfg(not(miri))]
    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly the mapping created in `new`.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }

    /// This machine's memory nodes, read the way keel-topology reads them.
    #[cfg(not(miri))]
    fn live_nodes() -> Vec<u32> {
        keel_topology::Topology::detect()
            .numa_nodes()
            .iter()
            .map(|n| n.os_index)
            .collect()
    }

    /// Reads the policy back where the kernel lets us, and checks it.
    #[cfg(not(miri))]
    fn read_back(m: &Mapping, policy: Policy, nodes: NodeMask) {
        match policy_at(m.ptr) {
            Ok(Some((p, got))) => {
                assert_eq!(p, policy);
                if policy != Policy::Default {
                    assert_eq!(got, nodes);
                }
            }
            Ok(None) => panic!("kernel reports a mode this crate did not set"),
            Err(e) => println!("get_mempolicy refused here (errno {e}): policy not read back"),
        }
    }

    #[cfg(not(miri))]
    #[test]
    fn auto_on_this_machine() {
        let nodes = live_nodes();
        let m = Mapping::new(4);
        let out = place(m.bytes(), Placement::Auto, &nodes);
        println!("Auto over nodes {nodes:?}: {out}");
        if nodes.len() == 1 {
            assert_eq!(out, PlacementOutcome::NoOp(NoOpReason::SingleNode));
            assert!(out.to_string().contains("single NUMA node"));
        } else {
            assert!(!matches!(out, PlacementOutcome::NoOp(_)), "{out}");
        }
    }

    #[cfg(not(miri))]
    #[test]
    fn interleave_bind_default_apply_or_fall_back() {
        let nodes = live_nodes();
        let all = match decide(&nodes, Placement::Interleave) {
            Decision::Apply { nodes, .. } => nodes,
            Decision::NoOp(r) => {
                println!("skipping: no usable node detected ({r})");
                return;
            }
        };
        let m = Mapping::new(8);
        let first = nodes[0];
        for (placement, policy, want) in [
            (Placement::Interleave, Policy::Interleave, all),
            (Placement::Node(first), Policy::Bind, mask(&[first])),
            (Placement::Default, Policy::Default, NodeMask::new()),
        ] {
            let out = place(m.bytes(), placement, &nodes);
            println!("{placement:?}: {out}");
            match out {
                PlacementOutcome::Applied {
                    policy: p,
                    nodes: n,
                } => {
                    assert_eq!((p, n), (policy, want));
                    read_back(&m, policy, want);
                    // Touching the pages under the policy must work.
                    // SAFETY: the mapping is writable and owned by this test.
                    unsafe { m.ptr.write_bytes(1, m.len) };
                }
                PlacementOutcome::Fallback {
                    policy: p, reason, ..
                } => {
                    assert_eq!(p, policy);
                    assert!(
                        matches!(
                            reason,
                            FallbackReason::NotPermitted | FallbackReason::NoNumaSupport
                        ),
                        "unexpected refusal: {reason}"
                    );
                }
                PlacementOutcome::NoOp(r) => panic!("{placement:?} should reach the kernel: {r}"),
            }
        }
    }

    /// A node the caller believes in but the kernel does not have: a
    /// fallback with a reason, never an error.
    #[cfg(not(miri))]
    #[test]
    fn missing_node_falls_back() {
        let m = Mapping::new(2);
        let ghost = NodeMask::CAPACITY - 1;
        if live_nodes().contains(&ghost) {
            println!("skipping: this machine really has node {ghost}");
            return;
        }
        let out = place(m.bytes(), Placement::Node(ghost), &[0, ghost]);
        println!("Node({ghost}): {out}");
        match out {
            PlacementOutcome::Fallback { policy, reason, .. } => {
                assert_eq!(policy, Policy::Bind);
                assert!(
                    matches!(
                        reason,
                        FallbackReason::NoSuchNode
                            | FallbackReason::NotPermitted
                            | FallbackReason::NoNumaSupport
                    ),
                    "{reason}"
                );
                assert!(out.to_string().contains("refused"));
            }
            other => panic!("expected a fallback, got {other}"),
        }
    }

    #[test]
    fn buffers_without_a_whole_page_are_left_alone() {
        let small = [0u8; 100];
        assert_eq!(
            place(&small, Placement::Interleave, &[0]),
            PlacementOutcome::NoOp(NoOpReason::NoWholePage)
        );
        let empty: [u64; 0] = [];
        assert_eq!(
            place(&empty, Placement::Default, &[0]),
            PlacementOutcome::NoOp(NoOpReason::NoWholePage)
        );
    }
}
