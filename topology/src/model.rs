//! The machine model: what detection fills in and every consumer reads.
//!
//! This is the crate's contract with keel-pool (width, binding), keel-heap
//! (NUMA placement) and the `keel topo` command. It is no_std + alloc.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// A set of OS CPU (or NUMA node) indexes, as a bitmap.
///
/// Displays in Linux cpulist syntax (`0-3,8,10-11`). Memory is one bit per
/// index up to the highest member, so the parsers cap indexes at
/// [`parse::MAX_CPU`](crate::parse::MAX_CPU); [`insert`](CpuSet::insert)
/// takes any index and allocates accordingly.
///
/// ```
/// use keel_topology::CpuSet;
/// let s: CpuSet = [0, 1, 2, 3, 8].into_iter().collect();
/// assert_eq!(s.len(), 5);
/// assert!(s.contains(8));
/// assert_eq!(s.to_string(), "0-3,8");
/// ```
///
/// `a & b`, `a | b` and `a - b` are [`and`](CpuSet::and),
/// [`or`](CpuSet::or) and [`and_not`](CpuSet::and_not), on sets or
/// references to them; the `…=` forms update in place.
///
/// ```
/// use keel_topology::CpuSet;
/// let a: CpuSet = (0..4).collect();
/// let b: CpuSet = (2..6).collect();
/// assert_eq!((&a & &b).to_string(), "2-3");
/// assert_eq!((&a | &b).to_string(), "0-5");
/// assert_eq!((&a - &b).to_string(), "0-1");
/// let mut c = a.clone();
/// c -= &b;
/// c.extend([9, 10]);
/// assert_eq!(c.to_string(), "0-1,9-10");
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let s = CpuSet::new();
    /// assert!(s.is_empty());
    /// assert_eq!(s.to_string(), "");
    /// ```
    pub const fn new() -> Self {
        CpuSet { words: Vec::new() }
    }

    /// Adds `cpu`, growing the bitmap to `cpu / 64 + 1` words.
    ///
    /// # Panics
    ///
    /// Like `Vec`, on capacity overflow (`cpu` near `usize::MAX`); an
    /// allocation failure for a huge `cpu` aborts. Indexes from the OS or
    /// the parsers stay below [`parse::MAX_CPU`](crate::parse::MAX_CPU).
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let mut s = CpuSet::new();
    /// s.insert(130);
    /// s.insert(2);
    /// assert_eq!(s.to_string(), "2,130");
    /// assert_eq!(s.words().len(), 3);
    /// ```
    pub fn insert(&mut self, cpu: usize) {
        let w = cpu / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (cpu % 64);
    }

    /// Removes `cpu`.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let mut s: CpuSet = [1, 2, 200].into_iter().collect();
    /// s.remove(200);
    /// s.remove(7); // not a member: no effect
    /// assert_eq!(s.to_string(), "1-2");
    /// assert_eq!(s.words(), &[0b110]);
    /// ```
    pub fn remove(&mut self, cpu: usize) {
        if let Some(w) = self.words.get_mut(cpu / 64) {
            *w &= !(1 << (cpu % 64));
        }
        self.trim();
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The lowest member.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let s: CpuSet = [9, 4, 70].into_iter().collect();
    /// assert_eq!(s.first(), Some(4));
    /// assert_eq!(CpuSet::new().first(), None);
    /// ```
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// Members in increasing order.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let s: CpuSet = [65, 3, 0, 64].into_iter().collect();
    /// assert_eq!(s.iter().collect::<Vec<_>>(), [0, 3, 64, 65]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            core::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(i * 64 + b)
            })
        })
    }

    /// The intersection of two sets.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let a: CpuSet = (0..8).collect();
    /// let b: CpuSet = [6, 7, 100].into_iter().collect();
    /// assert_eq!(a.and(&b).to_string(), "6-7");
    /// assert!(a.and(&CpuSet::new()).is_empty());
    /// ```
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let mut s = CpuSet {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
        };
        s.trim();
        s
    }

    /// The union of two sets.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let a: CpuSet = (0..4).collect();
    /// let b: CpuSet = [2, 100].into_iter().collect();
    /// assert_eq!(a.or(&b).to_string(), "0-3,100");
    /// ```
    pub fn or(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let get = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        CpuSet {
            words: (0..n)
                .map(|i| get(&self.words, i) | get(&other.words, i))
                .collect(),
        }
    }

    /// The members of `self` not in `other`.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let a: CpuSet = (0..8).collect();
    /// let b: CpuSet = (4..100).collect();
    /// assert_eq!(a.and_not(&b).to_string(), "0-3");
    /// assert!(b.and_not(&b).is_empty());
    /// ```
    pub fn and_not(&self, other: &CpuSet) -> CpuSet {
        let mut s = CpuSet {
            words: self
                .words
                .iter()
                .enumerate()
                .map(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0))
                .collect(),
        };
        s.trim();
        s
    }

    /// Whether every member of `self` is in `other`.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let small: CpuSet = [1, 2].into_iter().collect();
    /// let big: CpuSet = (0..4).collect();
    /// assert!(small.is_subset(&big));
    /// assert!(!big.is_subset(&small));
    /// assert!(CpuSet::new().is_subset(&small));
    /// ```
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.and_not(other).is_empty()
    }

    /// Whether the sets share a member.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let a: CpuSet = (0..4).collect();
    /// assert!(a.intersects(&[3, 90].into_iter().collect()));
    /// assert!(!a.intersects(&(4..8).collect()));
    /// ```
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// The raw bitmap words, lowest CPUs first (bit `i % 64` of word `i / 64`).
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let s: CpuSet = [0, 3, 64].into_iter().collect();
    /// assert_eq!(s.words(), &[0b1001, 0b1]);
    /// ```
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// A set from raw bitmap words.
    ///
    /// ```
    /// use keel_topology::CpuSet;
    /// let s = CpuSet::from_words(vec![0xf, 0x1, 0]);
    /// assert_eq!(s.to_string(), "0-3,64");
    /// assert_eq!(s.words(), &[0xf, 0x1]); // trailing zero words dropped
    /// ```
    pub fn from_words(words: Vec<u64>) -> Self {
        let mut s = CpuSet { words };
        s.trim();
        s
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl Extend<usize> for CpuSet {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, iter: I) {
        for c in iter {
            self.insert(c);
        }
    }
}

// The operators, each for sets and references to sets, and in place.
macro_rules! set_op {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident, $method:ident) => {
        impl core::ops::$Op<&CpuSet> for &CpuSet {
            type Output = CpuSet;
            fn $op(self, rhs: &CpuSet) -> CpuSet {
                self.$method(rhs)
            }
        }
        impl core::ops::$Op<CpuSet> for CpuSet {
            type Output = CpuSet;
            fn $op(self, rhs: CpuSet) -> CpuSet {
                self.$method(&rhs)
            }
        }
        impl core::ops::$Op<&CpuSet> for CpuSet {
            type Output = CpuSet;
            fn $op(self, rhs: &CpuSet) -> CpuSet {
                self.$method(rhs)
            }
        }
        impl core::ops::$OpAssign<&CpuSet> for CpuSet {
            fn $op_assign(&mut self, rhs: &CpuSet) {
                *self = self.$method(rhs);
            }
        }
        impl core::ops::$OpAssign<CpuSet> for CpuSet {
            fn $op_assign(&mut self, rhs: CpuSet) {
                *self = self.$method(&rhs);
            }
        }
    };
}
set_op!(BitAnd, bitand, BitAndAssign, bitand_assign, and);
set_op!(BitOr, bitor, BitOrAssign, bitor_assign, or);
set_op!(Sub, sub, SubAssign, sub_assign, and_not);

impl fmt::Display for CpuSet {
    /// Linux cpulist syntax; the empty set prints as an empty string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut it = self.iter().peekable();
        let mut first = true;
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().unwrap_or(end);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

/// A physical core: the usable logical CPUs (SMT threads) that share it.
///
/// ```
/// use keel_topology::Topology;
/// let t = Topology::detect();
/// for core in t.cores() {
///     assert!(!core.cpus.is_empty() && core.cpus.is_subset(t.usable_cpus()));
///     if let Some(p) = core.package {
///         assert!(core.cpus.is_subset(&t.packages()[p].cpus));
///     }
///     assert!(core.kind.is_none_or(|k| k < t.core_kinds().len()));
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// Usable logical CPUs on this core (never empty).
    pub cpus: CpuSet,
    /// Index into [`Topology::packages`](crate::Topology::packages) of the
    /// package holding this core; `None` when no package holds it: the OS
    /// reports no packages at all (as on the PS3, where `packages()` is
    /// empty), or the core's CPUs lie in none of the packages it reports
    /// (firmware whose package masks conflict, which hwloc also leaves
    /// package-less).
    pub package: Option<usize>,
    /// Index into [`Topology::numa_nodes`](crate::Topology::numa_nodes) of the
    /// node holding this core, if known.
    pub numa_node: Option<usize>,
    /// Index into [`Topology::core_kinds`](crate::Topology::core_kinds), if
    /// the machine reports kinds.
    pub kind: Option<usize>,
}

/// A package (socket) with at least one usable CPU.
///
/// ```
/// use keel_topology::Topology;
/// let t = Topology::detect();
/// for p in t.packages() {
///     assert!(!p.cpus.is_empty() && p.cpus.is_subset(t.usable_cpus()));
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    /// The OS's package ID, when the OS gives a usable one.
    pub os_index: Option<u32>,
    /// Usable logical CPUs in this package.
    pub cpus: CpuSet,
}

/// A NUMA node with at least one usable CPU.
///
/// ```
/// use keel_topology::Topology;
/// let t = Topology::detect();
/// for node in t.numa_nodes() {
///     assert!(!node.cpus.is_empty() && node.cpus.is_subset(t.usable_cpus()));
/// }
/// for core in t.cores() {
///     if let Some(n) = core.numa_node {
///         let first = core.cpus.first();
///         assert!(first.is_some_and(|c| t.numa_nodes()[n].cpus.contains(c)));
///     }
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    /// The OS's node number (as `mbind` and `/sys/devices/system/node/nodeN` use it).
    pub os_index: u32,
    /// Usable logical CPUs local to this node.
    pub cpus: CpuSet,
    /// Local memory in bytes (0 when unknown).
    pub memory_bytes: u64,
}

/// What a cache holds.
///
/// ```
/// use keel_topology::CacheKind;
/// assert_eq!(CacheKind::Data.name(), "data");
/// assert_eq!(CacheKind::Instruction.name(), "instruction");
/// assert_eq!(CacheKind::Unified.name(), "unified");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKind {
    /// Data only.
    Data,
    /// Instructions only.
    Instruction,
    /// Data and instructions.
    Unified,
}

impl CacheKind {
    /// The name `keel topo --json` uses: `data`, `instruction` or `unified`.
    pub const fn name(self) -> &'static str {
        match self {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        }
    }
}

/// One cache instance, shared by the usable CPUs in `cpus`.
///
/// ```
/// use keel_topology::{CacheKind, Topology};
/// let t = Topology::detect();
/// for c in t.caches() {
///     assert!((1..=5).contains(&c.level));
///     assert!(c.kind != CacheKind::Instruction || c.level <= 3);
///     assert!(!c.cpus.is_empty() && c.cpus.is_subset(t.usable_cpus()));
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    /// Level, 1 for L1.
    pub level: u8,
    /// Data, instruction or unified.
    pub kind: CacheKind,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Line size in bytes (0 when unknown).
    pub line_bytes: u32,
    /// Usable CPUs sharing this instance (never empty).
    pub cpus: CpuSet,
}

/// A kind of core on a hybrid part; kinds are ordered efficient to performant.
///
/// ```
/// use keel_topology::Topology;
/// let t = Topology::detect();
/// for kind in t.core_kinds() {
///     assert!(!kind.cpus.is_empty() && kind.cpus.is_subset(t.usable_cpus()));
///     assert!(!kind.label.is_empty());
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreKind {
    /// Usable CPUs of this kind.
    pub cpus: CpuSet,
    /// A human-readable label (`intel_atom`, `intel_core`, `capacity 512`,
    /// `max 2400 MHz`, ...).
    pub label: String,
}

/// What kind of work a worker count is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// Memory-bandwidth-bound scans and aggregations: one worker per physical
    /// core (SMT siblings share the bandwidth and burn cycles for nothing).
    Bandwidth,
    /// Latency-bound work (pointer chasing over large string heaps) that
    /// gains from SMT: one worker per usable logical CPU.
    Latency,
}
