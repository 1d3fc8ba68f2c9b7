//! A group-by count table keyed by `i64`, on hashbrown's `HashTable`.
//!
//! Keys are hashed with [`crate::hash::hash_i64`] under the table's seed, a
//! block at a time with the SIMD hash kernel of the level in force
//! ([`CountTable::add_column`]), and the block is then probed one key at a
//! time. The same well-mixed hash feeds hashbrown's tag (top 7 bits) and
//! bucket (low bits). For a radix group-by, partition the rows first with
//! [`crate::partition`] using middle hash bits (for example
//! `Radix::new(8, 32)`), so every partition's table stays small enough for
//! L2 and its hashes stay spread over the bits hashbrown reads.
//!
//! Needs the `alloc` feature. Nothing is cached between calls.

use alloc::vec::Vec;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::Kernels;
use crate::hash::{DEFAULT_SEED, as_u64, hash_i64};

/// Keys hashed per block by [`CountTable::add_column`].
const BLOCK: usize = 256;

/// Counts of each distinct `i64` key.
///
/// ```
/// use keel_kernels::groupby::CountTable;
/// let mut t = CountTable::new();
/// t.add_column(&[3, 1, 3, 3, -7]);
/// assert_eq!(t.get(3), 3);
/// assert_eq!(t.get(2), 0);
/// assert_eq!(t.len(), 3);
/// assert_eq!(t.into_sorted(), vec![(-7, 1), (1, 1), (3, 3)]);
/// ```
#[derive(Clone, Debug)]
pub struct CountTable {
    seed: u64,
    table: HashTable<(i64, u64)>,
}

impl Default for CountTable {
    fn default() -> Self {
        Self::new()
    }
}

impl CountTable {
    /// An empty table hashing with [`DEFAULT_SEED`].
    pub fn new() -> Self {
        Self::with_capacity_and_seed(0, DEFAULT_SEED)
    }

    /// An empty table with room for `groups` keys, hashing with `seed`.
    /// The room is a hint: room that cannot be had (more buckets than
    /// `usize` counts, or an allocation that fails) is not reserved, and
    /// the table grows as keys come.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut t = CountTable::with_capacity_and_seed(1000, 42);
    /// assert_eq!(t.seed(), 42);
    /// t.add_column(&[5, 5, 6]);
    /// assert_eq!((t.len(), t.get(5)), (2, 2));
    /// ```
    pub fn with_capacity_and_seed(groups: usize, seed: u64) -> Self {
        let mut table = HashTable::new();
        // Nothing is in the table yet, so the hasher is never called.
        let _ = table.try_reserve(groups, |e: &(i64, u64)| hash_i64(e.0, seed));
        CountTable { seed, table }
    }

    /// The hash seed.
    ///
    /// ```
    /// use keel_kernels::{groupby::CountTable, hash::DEFAULT_SEED};
    /// assert_eq!(CountTable::new().seed(), DEFAULT_SEED);
    /// assert_eq!(CountTable::with_capacity_and_seed(0, 7).seed(), 7);
    /// ```
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no key was counted.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut t = CountTable::new();
    /// assert!(t.is_empty());
    /// t.add(0);
    /// assert!(!t.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Sum of all counts (the rows counted), saturating at `u64::MAX`.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut t = CountTable::new();
    /// t.add_column(&[1, 1, 2, 1]);
    /// assert_eq!((t.len(), t.total()), (2, 4));
    /// ```
    pub fn total(&self) -> u64 {
        self.table.iter().fold(0u64, |t, e| t.saturating_add(e.1))
    }

    /// Removes every key, keeping the allocation.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut t = CountTable::new();
    /// t.add_column(&[1, 2, 3]);
    /// t.clear();
    /// assert!(t.is_empty());
    /// assert_eq!((t.get(1), t.total()), (0, 0));
    /// ```
    pub fn clear(&mut self) {
        self.table.clear();
    }

    /// Adds `n` to the count of `key` whose hash under this table's seed is
    /// `h`, saturating at `u64::MAX` (only merges can get there).
    #[inline]
    fn bump(&mut self, key: i64, h: u64, n: u64) {
        let seed = self.seed;
        match self.table.entry(h, |e| e.0 == key, |e| hash_i64(e.0, seed)) {
            Entry::Occupied(mut o) => {
                let c = &mut o.get_mut().1;
                *c = c.saturating_add(n);
            }
            Entry::Vacant(v) => {
                v.insert((key, n));
            }
        }
    }

    /// Counts one key.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut t = CountTable::new();
    /// t.add(-3);
    /// t.add(-3);
    /// assert_eq!(t.get(-3), 2);
    /// ```
    pub fn add(&mut self, key: i64) {
        self.bump(key, hash_i64(key, self.seed), 1);
    }

    /// Counts every key of a column, hashing at the level in force.
    pub fn add_column(&mut self, keys: &[i64]) {
        Kernels::current().count_add_column(self, keys);
    }

    /// The count of `key` (zero if never added).
    pub fn get(&self, key: i64) -> u64 {
        self.table
            .find(hash_i64(key, self.seed), |e| e.0 == key)
            .map_or(0, |e| e.1)
    }

    /// Adds every count of `other` into `self` (the two may have different
    /// seeds: keys are re-hashed); a count saturates at `u64::MAX`.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut a = CountTable::new();
    /// a.add_column(&[1, 2, 2]);
    /// let mut b = CountTable::with_capacity_and_seed(0, 99);
    /// b.add_column(&[2, 3]);
    /// a.merge(&b);
    /// assert_eq!(a.into_sorted(), vec![(1, 1), (2, 3), (3, 1)]);
    /// ```
    pub fn merge(&mut self, other: &CountTable) {
        self.table
            .reserve(other.len(), |e| hash_i64(e.0, self.seed));
        for &(k, n) in other.table.iter() {
            self.bump(k, hash_i64(k, self.seed), n);
        }
    }

    /// The `(key, count)` pairs, in no particular order.
    ///
    /// ```
    /// use keel_kernels::groupby::CountTable;
    /// let mut t = CountTable::new();
    /// t.add_column(&[9, 8, 9]);
    /// let mut pairs: Vec<(i64, u64)> = t.iter().collect();
    /// pairs.sort();
    /// assert_eq!(pairs, [(8, 1), (9, 2)]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.table.iter().copied()
    }

    /// The `(key, count)` pairs sorted by key.
    pub fn into_sorted(self) -> Vec<(i64, u64)> {
        let mut v: Vec<(i64, u64)> = self.table.into_iter().collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }
}

impl Kernels {
    /// [`CountTable::add_column`] at this handle's level: the level picks
    /// the hash kernel; the probes are the same at every level.
    ///
    /// ```
    /// use keel_kernels::{groupby::CountTable, Kernels};
    /// let keys: Vec<i64> = (0..1000).map(|i| i % 7 - 3).collect();
    /// for k in Kernels::supported() {
    ///     let mut t = CountTable::new();
    ///     k.count_add_column(&mut t, &keys);
    ///     assert_eq!((t.len(), t.get(-3), t.get(3)), (7, 143, 142));
    /// }
    /// ```
    pub fn count_add_column(self, table: &mut CountTable, keys: &[i64]) {
        let mut buf = [0u64; BLOCK];
        for chunk in keys.chunks(BLOCK) {
            let h = &mut buf[..chunk.len()];
            self.hash_block(as_u64(chunk), table.seed, h);
            for (&k, &hk) in chunk.iter().zip(h.iter()) {
                table.bump(k, hk, 1);
            }
        }
    }
}
