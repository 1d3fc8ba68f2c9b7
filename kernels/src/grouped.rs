//! Grouped aggregates over dense group codes: per group, a row count and,
//! per value column, the sum, min and max, in one pass over the rows.
//!
//! A [`GroupTable`] is a perfect-hash table in the manner of DuckDB's
//! perfect hash aggregate: its [`Groups`] layout says how keys map to
//! slots, so a key is its slot and no hashing or probing happens. Layouts:
//! one-byte codes (up to 256 groups), two-byte codes (up to 64 Ki), and a
//! pair of one-byte keys over a range of each (TPC-H Q1's two flags, say
//! `'A'..='R'` by `'F'..='O'`: 180 slots). Each hand of a parallel query
//! keeps its own table and the tables are merged at the end
//! ([`GroupTable::merge`]).
//!
//! [`GroupTable::add`] takes the key column(s), any number of value
//! columns of one type, and a [`Mask`]: a row counts when it is valid and
//! selected (for per-column nulls, give each such column its own table or
//! call). Keys outside the layout are an error before anything is added.
//!
//! * Integer sums wrap in `i64`/`u64`, as the column sums do.
//! * Float sums of a table with at most 256 slots keep, per slot and
//!   column, 8 lanes (`f64`) or 16 (`f32`): counted row `i` of a call adds
//!   to lane `i % lanes` in row order (a selection vector's row `r` to lane
//!   `r % lanes`, in the order listed), and the lanes fold pairwise when
//!   read. Larger tables keep one lane: rows add in order. Every level
//!   keeps this order, so sums are the same bits at every level.
//! * At the AVX-512 level, sums of `f64` and of integers of every width
//!   over one-byte keys run a leaf that keeps the busiest slots' sums in
//!   registers (see `arch/x86_64/avx512/grouped.rs`; a layout of at most 8
//!   slots keeps all of them there); at the AVX2 level, the same sums run
//!   a leaf of the same plan (`arch/x86_64/avx2/grouped.rs`) while a
//!   call's rows fall on at most eight slots, and a cold leaf otherwise
//!   (`arch/x86_64/cold.rs`: each row's value and a count of one added to
//!   its slot's sum-and-count pair in a scratch); sums by two-byte codes
//!   run that cold leaf whole at both levels, where over more than 256
//!   slots one to four unweighted columns with at least 16 rows a slot add
//!   into such pairs too (floats one pair a slot, in row order), as the
//!   AVX2 leaf's hand-off does; so do such calls by pairs of keys, and
//!   float sums by pairs over more than 256 slots; integer tables of at
//!   most 64 slots otherwise (and at NEON) keep partial sums; everything
//!   else runs the scalar twin.
//!
//! ```
//! use keel_kernels::grouped::{Aggs, GroupTable, Groups, Key, Keys};
//! // Two flag columns and two value columns, as a Q1-like query has them.
//! let flag = [b'A', b'N', b'A', b'R', b'N'];
//! let status = [b'F', b'O', b'F', b'F', b'F'];
//! let qty = [1.0, 2.0, 3.0, 4.0, 5.0];
//! let price = [10.0, 20.0, 30.0, 40.0, 50.0];
//! let groups = Groups::pair(b'A'..=b'R', b'F'..=b'O')?;
//! let mut t = GroupTable::<f64>::new(groups, 2, Aggs::SUM | Aggs::MAX)?;
//! t.add(Keys::Pair(&flag, &status), &[&qty, &price], None)?;
//! let af = groups.slot(Key::Pair(b'A', b'F')).unwrap();
//! assert_eq!(t.count(af), 2);
//! assert_eq!(t.sum(af, 0), 4.0);
//! assert_eq!(t.max(af, 1), Some(30.0));
//! let found: Vec<(Key, u64)> = t.iter().map(|(k, slot)| (k, t.count(slot))).collect();
//! assert_eq!(found.len(), 4);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use alloc::vec::Vec;
use core::ops::RangeInclusive;

use crate::arch::scalar::grouped::{self as sc, KeyCols, Table, Weights};
use crate::element::private::Token;
use crate::mask::{Mask, Resolved};
use crate::{Element, Error, Kernels};

bitflags::bitflags! {
    /// The aggregates a table keeps per group and value column, beside the
    /// row count it always keeps.
    ///
    /// A set of flags (the `bitflags` API): [`Aggs::from_name`] reads one by
    /// name, as a query's text spells it.
    ///
    /// ```
    /// use keel_kernels::grouped::Aggs;
    /// let a = Aggs::from_name("SUM").unwrap() | Aggs::MAX;
    /// assert!(a.contains(Aggs::SUM) && !a.contains(Aggs::MIN));
    /// assert_eq!(a.bits(), 5);
    /// assert_eq!(a.complement(), Aggs::MIN);
    /// assert_eq!(Aggs::from_name("MEAN"), None);
    /// let names: Vec<&str> = a.iter_names().map(|(name, _)| name).collect();
    /// assert_eq!(names, ["SUM", "MAX"]);
    /// ```
    ///
    /// The set operations:
    ///
    /// ```
    /// use keel_kernels::grouped::Aggs;
    /// let mut a = Aggs::empty();
    /// a.insert(Aggs::SUM);
    /// a.set(Aggs::MIN, true);
    /// a.toggle(Aggs::MAX);
    /// a.remove(Aggs::MIN);
    /// assert_eq!(a, Aggs::SUM.union(Aggs::MAX));
    /// assert!(a.intersects(Aggs::MAX) && !a.is_empty() && !a.is_all());
    /// assert_eq!(a.intersection(Aggs::all()).difference(Aggs::SUM), Aggs::MAX);
    /// assert_eq!(a.symmetric_difference(Aggs::all()), Aggs::MIN);
    /// assert_eq!((Aggs::from_bits(8), Aggs::from_bits(2)), (None, Some(Aggs::MIN)));
    /// assert_eq!((Aggs::from_bits_truncate(9), Aggs::from_bits_retain(9).bits()), (Aggs::SUM, 9));
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Aggs: u8 {
        /// Sums.
        const SUM = 1;
        /// Minimums (min/max order: floats by `total_cmp`).
        const MIN = 2;
        /// Maximums.
        const MAX = 4;
    }
}

/// How keys map to slots: a table's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Groups {
    kind: Kind,
    slots: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    U8,
    U16,
    Pair { a_lo: u8, b_lo: u8, b_span: usize },
}

/// A group's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A one-byte code.
    U8(u8),
    /// A two-byte code.
    U16(u16),
    /// A pair of one-byte keys.
    Pair(u8, u8),
}

/// The key column(s) of a call, matching the table's layout.
#[derive(Clone, Copy, Debug)]
pub enum Keys<'a> {
    /// One-byte codes ([`Groups::u8`]).
    U8(&'a [u8]),
    /// Two-byte codes ([`Groups::u16`]).
    U16(&'a [u16]),
    /// Two one-byte keys ([`Groups::pair`]).
    Pair(&'a [u8], &'a [u8]),
}

impl Groups {
    /// One-byte codes `0..groups` (1..=256).
    ///
    /// ```
    /// use keel_kernels::grouped::{Groups, Key};
    /// let g = Groups::u8(4)?;
    /// assert_eq!(g.len(), 4);
    /// assert_eq!((g.slot(Key::U8(3)), g.slot(Key::U8(4))), (Some(3), None));
    /// assert!(Groups::u8(0).is_err() && Groups::u8(257).is_err());
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn u8(groups: usize) -> Result<Groups, Error> {
        if !(1..=256).contains(&groups) {
            return Err(Error::InvalidArgument {
                what: "Groups::u8: groups must be in 1..=256",
            });
        }
        Ok(Groups {
            kind: Kind::U8,
            slots: groups,
        })
    }

    /// Two-byte codes `0..groups` (1..=65 536).
    ///
    /// ```
    /// use keel_kernels::grouped::{Groups, Key};
    /// let g = Groups::u16(1000)?;
    /// assert_eq!((g.slot(Key::U16(999)), g.slot(Key::U16(1000))), (Some(999), None));
    /// assert_eq!(g.slot(Key::U8(0)), None); // a key of another layout
    /// assert!(Groups::u16(65_537).is_err());
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn u16(groups: usize) -> Result<Groups, Error> {
        if !(1..=65_536).contains(&groups) {
            return Err(Error::InvalidArgument {
                what: "Groups::u16: groups must be in 1..=65536",
            });
        }
        Ok(Groups {
            kind: Kind::U16,
            slots: groups,
        })
    }

    /// Pairs of one-byte keys `(a, b)` with `a` in `a_range` and `b` in
    /// `b_range`: slot `(a - a_lo) * b_span + (b - b_lo)`.
    pub fn pair(a_range: RangeInclusive<u8>, b_range: RangeInclusive<u8>) -> Result<Groups, Error> {
        let (a_lo, a_hi, b_lo, b_hi) = (
            *a_range.start(),
            *a_range.end(),
            *b_range.start(),
            *b_range.end(),
        );
        if a_lo > a_hi || b_lo > b_hi {
            return Err(Error::InvalidArgument {
                what: "Groups::pair: each key range must be non-empty",
            });
        }
        let b_span = usize::from(b_hi - b_lo) + 1;
        Ok(Groups {
            kind: Kind::Pair { a_lo, b_lo, b_span },
            slots: (usize::from(a_hi - a_lo) + 1) * b_span,
        })
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots
    }

    /// Whether the layout has no slot (never: every layout has one).
    ///
    /// ```
    /// use keel_kernels::grouped::Groups;
    /// assert!(!Groups::u8(1)?.is_empty());
    /// assert!(!Groups::pair(b'a'..=b'a', b'z'..=b'z')?.is_empty());
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    /// The slot of `key`, `None` if it is outside the layout.
    pub fn slot(&self, key: Key) -> Option<usize> {
        let s = match (self.kind, key) {
            (Kind::U8, Key::U8(k)) => usize::from(k),
            (Kind::U16, Key::U16(k)) => usize::from(k),
            (Kind::Pair { a_lo, b_lo, b_span }, Key::Pair(a, b)) => {
                let (da, db) = (a.checked_sub(a_lo)?, b.checked_sub(b_lo)?);
                if usize::from(db) >= b_span {
                    return None;
                }
                usize::from(da) * b_span + usize::from(db)
            }
            _ => return None,
        };
        (s < self.slots).then_some(s)
    }

    /// The key of slot `slot`, `None` if it is outside the layout (the
    /// inverse of [`slot`](Self::slot)).
    ///
    /// ```
    /// use keel_kernels::grouped::{Groups, Key};
    /// let g = Groups::pair(b'A'..=b'R', b'F'..=b'O')?;
    /// assert_eq!(g.key(0), Some(Key::Pair(b'A', b'F')));
    /// assert_eq!(g.key(g.len() - 1), Some(Key::Pair(b'R', b'O')));
    /// assert_eq!(g.key(g.len()), None);
    /// let s = g.slot(Key::Pair(b'N', b'O')).unwrap();
    /// assert_eq!(g.key(s), Some(Key::Pair(b'N', b'O')));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn key(&self, slot: usize) -> Option<Key> {
        if slot >= self.slots {
            return None;
        }
        // In range: a pair's `slots` is `(a_hi - a_lo + 1) * b_span`, so
        // `a_lo + slot / b_span <= a_hi`.
        Some(match self.kind {
            Kind::U8 => Key::U8(slot as u8),
            Kind::U16 => Key::U16(slot as u16),
            Kind::Pair { a_lo, b_lo, b_span } => {
                Key::Pair(a_lo + (slot / b_span) as u8, b_lo + (slot % b_span) as u8)
            }
        })
    }

    /// Checks `keys` against the layout (their kind, their length `n`, each
    /// key in range) and gives the leaves' view of them.
    fn check<'a>(&self, keys: Keys<'a>, n: usize) -> Result<KeyCols<'a>, Error> {
        let len_err = |actual| Error::LengthMismatch {
            what: "group keys",
            expected: n,
            actual,
        };
        let out_of_range = |position: usize, index: u64| Error::OutOfRange {
            what: "group key",
            position,
            index,
            len: self.slots,
        };
        match (self.kind, keys) {
            (Kind::U8, Keys::U8(k)) => {
                if k.len() != n {
                    return Err(len_err(k.len()));
                }
                if crate::agg::max(k).is_some_and(|m| usize::from(m) >= self.slots) {
                    let p = k
                        .iter()
                        .position(|&x| usize::from(x) >= self.slots)
                        .unwrap_or(0);
                    return Err(out_of_range(p, u64::from(k[p])));
                }
                Ok(KeyCols::U8(k))
            }
            (Kind::U16, Keys::U16(k)) => {
                if k.len() != n {
                    return Err(len_err(k.len()));
                }
                if crate::agg::max(k).is_some_and(|m| usize::from(m) >= self.slots) {
                    let p = k
                        .iter()
                        .position(|&x| usize::from(x) >= self.slots)
                        .unwrap_or(0);
                    return Err(out_of_range(p, u64::from(k[p])));
                }
                Ok(KeyCols::U16(k))
            }
            (Kind::Pair { a_lo, b_lo, b_span }, Keys::Pair(a, b)) => {
                if a.len() != n {
                    return Err(len_err(a.len()));
                }
                if b.len() != n {
                    return Err(len_err(b.len()));
                }
                let a_span = self.slots / b_span;
                let bad_a = |x: u8| x < a_lo || usize::from(x - a_lo) >= a_span;
                let bad_b = |x: u8| x < b_lo || usize::from(x - b_lo) >= b_span;
                let (ma, mb) = (crate::agg::min_max(a), crate::agg::min_max(b));
                let bad = ma.is_some_and(|(lo, hi)| bad_a(lo) || bad_a(hi))
                    || mb.is_some_and(|(lo, hi)| bad_b(lo) || bad_b(hi));
                if bad {
                    let p = (0..n).find(|&i| bad_a(a[i]) || bad_b(b[i])).unwrap_or(0);
                    // The pair as one number: a * 256 + b.
                    return Err(out_of_range(p, u64::from(a[p]) << 8 | u64::from(b[p])));
                }
                Ok(KeyCols::Pair {
                    a,
                    b,
                    a_lo,
                    b_lo,
                    b_span,
                })
            }
            _ => Err(Error::InvalidArgument {
                what: "group keys: their kind differs from the table's layout",
            }),
        }
    }
}

/// Per-group counts and per-group, per-column sums, mins and maxes over a
/// [`Groups`] layout. See the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupTable<T: Element> {
    groups: Groups,
    columns: usize,
    aggs: Aggs,
    lanes: usize,
    counts: Vec<u64>,
    sums: Vec<T::Sum>,
    mins: Vec<T>,
    maxs: Vec<T>,
}

impl<T: Element> GroupTable<T> {
    /// An empty table of `columns` value columns keeping `aggs` (and the
    /// counts). Errors if `columns` is 0, or the table's cells overflow
    /// `usize` or cannot be allocated.
    pub fn new(groups: Groups, columns: usize, aggs: Aggs) -> Result<Self, Error> {
        if columns == 0 {
            return Err(Error::InvalidArgument {
                what: "GroupTable: at least one value column",
            });
        }
        let slots = groups.len();
        let lanes = if T::SUM_LANES > 1 && slots <= 256 {
            64 / core::mem::size_of::<T::Sum>()
        } else {
            1
        };
        const TOO_LARGE: Error = Error::InvalidArgument {
            what: "GroupTable: too many cells (slots times columns) to allocate",
        };
        /// `n` copies of `v`, allocated without aborting.
        fn filled<V: Copy>(n: usize, v: V) -> Result<Vec<V>, Error> {
            let mut out = Vec::new();
            out.try_reserve_exact(n).map_err(|_| TOO_LARGE)?;
            out.resize(n, v);
            Ok(out)
        }
        let cells = slots.checked_mul(columns);
        let (Some(cells), Some(lane_cells)) = (cells, cells.and_then(|c| c.checked_mul(lanes)))
        else {
            return Err(TOO_LARGE);
        };
        let keep = |a: Aggs, n: usize| if aggs.contains(a) { n } else { 0 };
        Ok(GroupTable {
            groups,
            columns,
            aggs,
            lanes,
            counts: filled(slots, 0)?,
            sums: filled(keep(Aggs::SUM, lane_cells), T::SUM_ZERO)?,
            mins: filled(keep(Aggs::MIN, cells), T::GREATEST)?,
            maxs: filled(keep(Aggs::MAX, cells), T::LEAST)?,
        })
    }

    /// The layout.
    pub fn groups(&self) -> Groups {
        self.groups
    }

    /// Value columns per row.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The aggregates kept.
    ///
    /// ```
    /// use keel_kernels::grouped::{Aggs, GroupTable, Groups};
    /// let t = GroupTable::<i64>::new(Groups::u8(2)?, 3, Aggs::MIN | Aggs::MAX)?;
    /// assert_eq!(t.aggs(), Aggs::MIN | Aggs::MAX);
    /// assert_eq!((t.groups(), t.columns()), (Groups::u8(2)?, 3));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn aggs(&self) -> Aggs {
        self.aggs
    }

    /// Adds the rows `mask` counts, at the current level.
    pub fn add<'a>(
        &mut self,
        keys: Keys<'_>,
        values: &[&[T]],
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        Kernels::current().group_add(self, keys, values, mask)
    }

    /// Adds the rows `mask` counts, each column's value times its weight
    /// where `weights` gives that column one (`None`: unweighted), at the
    /// current level: a weighted column's sums are `Σ value · weight`, in
    /// the sum type (integers wrap; floats round each product once). The
    /// weights are `u16`: a narrow multiplier such as a quantity or a
    /// decimal factor (`100 - discount`). Only sums can be weighted: an
    /// error if the table keeps mins or maxes, if `weights` has other than
    /// one entry per column, or if a weight column's length differs from
    /// the values'.
    ///
    /// ```
    /// use keel_kernels::grouped::{Aggs, GroupTable, Groups, Keys};
    /// let flag = [0u8, 1, 0, 1];
    /// let price = [1000i32, 2000, 3000, 4000];
    /// let factor = [90u16, 95, 100, 100]; // 100 - discount
    /// let mut t = GroupTable::<i32>::new(Groups::u8(2)?, 2, Aggs::SUM)?;
    /// t.add_weighted(Keys::U8(&flag), &[&price, &price], &[None, Some(&factor)], None)?;
    /// assert_eq!((t.sum(0, 0), t.sum(0, 1)), (4000, 1000 * 90 + 3000 * 100));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn add_weighted<'a>(
        &mut self,
        keys: Keys<'_>,
        values: &[&[T]],
        weights: Weights<'_, '_>,
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        Kernels::current().group_add_weighted(self, keys, values, weights, mask)
    }

    /// Rows counted in `slot` (0 past the last slot).
    pub fn count(&self, slot: usize) -> u64 {
        self.counts.get(slot).copied().unwrap_or(0)
    }

    /// The sum of `column` in `slot`: the lanes folded pairwise; `+0.0` (or
    /// 0) for a slot without rows, for a slot or column past the end, and
    /// when sums are not kept.
    pub fn sum(&self, slot: usize, column: usize) -> T::Sum {
        if slot >= self.groups.len() || column >= self.columns || self.sums.is_empty() {
            return T::EMPTY_SUM;
        }
        if self.counts[slot] == 0 {
            return T::EMPTY_SUM;
        }
        let at = (slot * self.columns + column) * self.lanes;
        let mut lanes = [T::SUM_ZERO; 16];
        lanes[..self.lanes].copy_from_slice(&self.sums[at..at + self.lanes]);
        let mut w = self.lanes;
        while w > 1 {
            w /= 2;
            for j in 0..w {
                lanes[j] = T::sum_add(lanes[j], lanes[j + w]);
            }
        }
        lanes[0]
    }

    /// The minimum of `column` in `slot`; `None` for a slot without rows,
    /// past the end, or when minimums are not kept.
    ///
    /// ```
    /// use keel_kernels::grouped::{Aggs, GroupTable, Groups, Keys};
    /// let mut t = GroupTable::<f32>::new(Groups::u8(3)?, 1, Aggs::MIN)?;
    /// t.add(Keys::U8(&[0, 1, 0]), &[&[2.5, -1.0, 0.5]], None)?;
    /// assert_eq!((t.min(0, 0), t.min(1, 0)), (Some(0.5), Some(-1.0)));
    /// assert_eq!(t.min(2, 0), None); // no rows in slot 2
    /// assert_eq!(t.max(0, 0), None); // maximums not kept
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn min(&self, slot: usize, column: usize) -> Option<T> {
        self.extreme(&self.mins, slot, column)
    }

    /// The maximum of `column` in `slot`, as [`GroupTable::min`].
    pub fn max(&self, slot: usize, column: usize) -> Option<T> {
        self.extreme(&self.maxs, slot, column)
    }

    fn extreme(&self, v: &[T], slot: usize, column: usize) -> Option<T> {
        if v.is_empty() || column >= self.columns || self.count(slot) == 0 {
            return None;
        }
        Some(v[slot * self.columns + column])
    }

    /// The non-empty groups, as `(key, slot)`, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (Key, usize)> + '_ {
        (0..self.groups.len())
            .filter(|&s| self.counts[s] > 0)
            .filter_map(|s| Some((self.groups.key(s)?, s)))
    }

    /// Empties the table, keeping its layout and allocation.
    ///
    /// ```
    /// use keel_kernels::grouped::{Aggs, GroupTable, Groups, Keys};
    /// let mut t = GroupTable::<u32>::new(Groups::u8(2)?, 1, Aggs::SUM)?;
    /// t.add(Keys::U8(&[1, 1]), &[&[5, 6]], None)?;
    /// assert_eq!((t.count(1), t.sum(1, 0)), (2, 11));
    /// t.clear();
    /// assert_eq!((t.count(1), t.sum(1, 0), t.iter().count()), (0, 0, 0));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.sums.fill(T::SUM_ZERO);
        self.mins.fill(T::GREATEST);
        self.maxs.fill(T::LEAST);
    }

    /// Adds `other`'s groups into this table (another hand's partial
    /// table): counts and sum lanes add, mins and maxes fold. Errors,
    /// changing nothing, unless both have the same layout, columns and
    /// aggregates, or if a group's count would pass `i64::MAX` (only
    /// merges get there, no table of real rows does; below it no later
    /// add can overflow a count).
    ///
    /// ```
    /// use keel_kernels::grouped::{Aggs, GroupTable, Groups, Keys};
    /// let g = Groups::u8(2)?;
    /// let mut a = GroupTable::<i64>::new(g, 1, Aggs::all())?;
    /// let mut b = a.clone();
    /// a.add(Keys::U8(&[0, 1]), &[&[10, 20]], None)?;
    /// b.add(Keys::U8(&[0, 0]), &[&[-5, 7]], None)?;
    /// a.merge(&b)?;
    /// assert_eq!((a.count(0), a.sum(0, 0)), (3, 12));
    /// assert_eq!((a.min(0, 0), a.max(0, 0)), (Some(-5), Some(10)));
    /// assert!(a.merge(&GroupTable::new(g, 1, Aggs::SUM)?).is_err()); // other aggregates
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn merge(&mut self, other: &GroupTable<T>) -> Result<(), Error> {
        if self.groups != other.groups || self.columns != other.columns || self.aggs != other.aggs {
            return Err(Error::InvalidArgument {
                what: "GroupTable::merge: tables differ in layout, columns or aggregates",
            });
        }
        let past = |(&a, &b): (&u64, &u64)| a.checked_add(b).is_none_or(|c| c > i64::MAX as u64);
        if self.counts.iter().zip(&other.counts).any(past) {
            return Err(Error::InvalidArgument {
                what: "GroupTable::merge: a group's count would pass i64::MAX",
            });
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        for (a, &b) in self.sums.iter_mut().zip(&other.sums) {
            *a = T::sum_add(*a, b);
        }
        for (a, &b) in self.mins.iter_mut().zip(&other.mins) {
            if b.order_lt(*a) {
                *a = b;
            }
        }
        for (a, &b) in self.maxs.iter_mut().zip(&other.maxs) {
            if a.order_lt(b) {
                *a = b;
            }
        }
        Ok(())
    }

    fn view(&mut self) -> Table<'_, T> {
        Table {
            counts: &mut self.counts,
            sums: &mut self.sums,
            mins: &mut self.mins,
            maxs: &mut self.maxs,
            columns: self.columns,
            lanes: self.lanes,
        }
    }
}

impl Kernels {
    /// [`GroupTable::add`] at this level.
    ///
    /// ```
    /// use keel_kernels::{grouped::{Aggs, GroupTable, Groups, Keys}, Kernels};
    /// let keys: Vec<u8> = (0..100).map(|i| i % 3).collect();
    /// let vals: Vec<i64> = (0..100).collect();
    /// for k in Kernels::supported() {
    ///     let mut t = GroupTable::<i64>::new(Groups::u8(3)?, 1, Aggs::SUM)?;
    ///     k.group_add(&mut t, Keys::U8(&keys), &[&vals], None)?;
    ///     assert_eq!((t.count(0), t.sum(0, 0), t.sum(2, 0)), (34, 1683, 1650));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn group_add<'a, T: Element>(
        self,
        table: &mut GroupTable<T>,
        keys: Keys<'_>,
        values: &[&[T]],
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        self.group_add_inner(table, keys, values, &[], mask.into())
    }

    /// [`GroupTable::add_weighted`] at this level.
    ///
    /// ```
    /// use keel_kernels::{grouped::{Aggs, GroupTable, Groups, Keys}, Kernels};
    /// let (keys, price, qty) = ([0u8, 1, 0], [100i64, 200, 300], [2u16, 3, 4]);
    /// for k in Kernels::supported() {
    ///     let mut t = GroupTable::<i64>::new(Groups::u8(2)?, 1, Aggs::SUM)?;
    ///     k.group_add_weighted(&mut t, Keys::U8(&keys), &[&price], &[Some(&qty)], None)?;
    ///     assert_eq!((t.sum(0, 0), t.sum(1, 0)), (100 * 2 + 300 * 4, 200 * 3));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn group_add_weighted<'a, T: Element>(
        self,
        table: &mut GroupTable<T>,
        keys: Keys<'_>,
        values: &[&[T]],
        weights: Weights<'_, '_>,
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        if table.aggs != Aggs::SUM {
            return Err(Error::InvalidArgument {
                what: "GroupTable::add_weighted: only a sums-only table takes weights",
            });
        }
        if weights.len() != values.len() {
            return Err(Error::LengthMismatch {
                what: "weight entries",
                expected: values.len(),
                actual: weights.len(),
            });
        }
        let n = values.first().map_or(0, |c| c.len());
        for (c, w) in weights.iter().enumerate() {
            if let Some(w) = w
                && w.len() != n
            {
                return Err(Error::ColumnLength {
                    column: c,
                    len: w.len(),
                    expected: n,
                });
            }
        }
        self.group_add_inner(table, keys, values, weights, mask.into())
    }

    fn group_add_inner<T: Element>(
        self,
        table: &mut GroupTable<T>,
        keys: Keys<'_>,
        values: &[&[T]],
        weights: Weights<'_, '_>,
        mask: Mask<'_>,
    ) -> Result<(), Error> {
        if values.len() != table.columns {
            return Err(Error::LengthMismatch {
                what: "value columns",
                expected: table.columns,
                actual: values.len(),
            });
        }
        let n = values[0].len();
        if let Some(c) = values.iter().position(|c| c.len() != n) {
            return Err(Error::ColumnLength {
                column: c,
                len: values[c].len(),
                expected: n,
            });
        }
        let k = table.groups.check(keys, n)?;
        let resolved = mask.resolve(n)?;
        // Float tables of one lane (past 256 slots) go to the x86 levels'
        // cold leaf (one pair a slot, in row order), which may leave them to
        // the twin; the other levels' leaves decline them.
        let simd = table.aggs == Aggs::SUM;
        let mut t = table.view();
        match resolved {
            Resolved::Bits(m) => {
                if !(simd && T::k_group_sum(Token(()), self, &mut t, k, values, weights, m)) {
                    sc::add(&mut t, k, (values, weights), None, m, n);
                }
            }
            Resolved::Rows(rows, m) => sc::add(&mut t, k, (values, weights), Some(rows), m, n),
        }
        Ok(())
    }
}
