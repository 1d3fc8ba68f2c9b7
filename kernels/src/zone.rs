//! Zone maps: per-chunk min, max and valid-row count (so has-null and
//! all-null), chunks of `2^chunk_log2` rows (64 Ki by default, any power of
//! two from 64 to 2^31). From them: column min and max in O(chunks), each
//! chunk's class for a predicate (all pass / all fail / mixed), and a filter
//! that zeroes all-fail chunks and fills all-pass chunks without reading the
//! column, scanning only mixed chunks.
//!
//! Classification is conservative: `Mixed` is always a correct answer, and
//! `AllPass`/`AllFail` are only given when the chunk's `[min, max]` proves
//! them. Floats: a chunk whose min or max is `NaN` is mixed (under the
//! total order every `NaN` sits at an extreme, so a chunk with non-`NaN`
//! extremes holds no `NaN`).
//!
//! ```
//! use keel_kernels::filter::{CmpOp, Predicate};
//! use keel_kernels::zone::{Class, ZoneMap};
//! let v: Vec<i64> = (0..1024).collect();
//! let z = ZoneMap::with_chunk_log2(&v, None, 8)?; // 4 chunks of 256 rows
//! assert_eq!((z.min(), z.max()), (Some(0), Some(1023)));
//! let p = Predicate::Cmp(CmpOp::Lt, 300);
//! assert_eq!(z.classify(0, p), Class::AllPass);
//! assert_eq!(z.classify(1, p), Class::Mixed);
//! assert_eq!(z.classify(3, p), Class::AllFail);
//! let mut out = vec![0u64; 16];
//! let stats = z.filter(&v, None, p, &mut out)?;
//! assert_eq!((stats.all_pass, stats.all_fail, stats.mixed), (1, 2, 1));
//! assert_eq!(keel_kernels::bitmap::popcount(&out, 1024)?, 300);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::filter::{CmpOp, Predicate};
use crate::{Element, Error, Kernels, bitmap_words, check_bitmap};
use alloc::vec::Vec;

/// How a chunk's rows fare under a predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Every valid row passes (null rows never pass).
    AllPass,
    /// No row passes.
    AllFail,
    /// Unknown without reading the rows.
    Mixed,
}

/// What [`ZoneMap::filter`] did, chunk by chunk.
///
/// ```
/// use keel_kernels::{filter::Predicate, zone::{FilterStats, ZoneMap}};
/// let v: Vec<u8> = (0..=255).collect();
/// let z = ZoneMap::with_chunk_log2(&v, None, 6)?; // 4 chunks of 64 rows
/// let mut out = [0u64; 4];
/// let stats = z.filter(&v, None, Predicate::Between(50, 191), &mut out)?;
/// assert_eq!(stats, FilterStats { all_pass: 2, all_fail: 1, mixed: 1 });
/// assert_eq!(out, [!0 << 50, !0, !0, 0]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterStats {
    /// Chunks filled from the validity (or with ones) without reading values.
    pub all_pass: usize,
    /// Chunks zeroed without reading values.
    pub all_fail: usize,
    /// Chunks scanned with the filter kernel.
    pub mixed: usize,
}

/// Per-chunk min, max and valid-row counts of one column.
///
/// [`ZoneMap::new`] builds one with chunks of [`ZoneMap::chunk_rows`]
/// rows; [`ZoneMap::rows_in`], [`ZoneMap::valid_in`],
/// [`ZoneMap::has_null`] and [`ZoneMap::chunk_min_max`] read a chunk.
///
/// ```
/// use keel_kernels::zone::{ZoneMap, DEFAULT_CHUNK_LOG2};
/// let v: Vec<i32> = (0..100_000).collect();
/// let mut valid = vec![!0u64; v.len().div_ceil(64)];
/// valid[0] = !1; // row 0 is null
/// let z = ZoneMap::new(&v, Some(&valid))?;
/// assert_eq!((z.chunk_rows(), z.chunks()), (1 << DEFAULT_CHUNK_LOG2, 2));
/// assert_eq!((z.rows_in(1), z.rows_in(2)), (Some(100_000 - 65_536), None));
/// assert_eq!((z.valid_in(0), z.valid_in(1)), (Some(65_535), Some(100_000 - 65_536)));
/// assert_eq!((z.has_null(0), z.has_null(1)), (Some(true), Some(false)));
/// assert_eq!(z.chunk_min_max(0), Some((1, 65_535)));
/// assert_eq!(z.chunk_min_max(1), Some((65_536, 99_999)));
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneMap<T> {
    chunk_log2: u32,
    rows: usize,
    mins: Vec<T>,
    maxs: Vec<T>,
    valid: Vec<u32>,
}

/// 64 Ki rows a chunk.
///
/// ```
/// use keel_kernels::zone::{ZoneMap, DEFAULT_CHUNK_LOG2};
/// let z = ZoneMap::new(&[1.5f64; 3], None)?;
/// assert_eq!(z.chunk_rows(), 1 << DEFAULT_CHUNK_LOG2);
/// assert_eq!(z.chunk_rows(), 65_536);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub const DEFAULT_CHUNK_LOG2: u32 = 16;

impl<T: Element> ZoneMap<T> {
    /// Builds the zone map with 64 Ki-row chunks at the current level.
    pub fn new(values: &[T], validity: Option<&[u64]>) -> Result<Self, Error> {
        Self::build(Kernels::current(), values, validity, DEFAULT_CHUNK_LOG2)
    }

    /// Builds the zone map with `2^chunk_log2`-row chunks (6..=31).
    pub fn with_chunk_log2(
        values: &[T],
        validity: Option<&[u64]>,
        chunk_log2: u32,
    ) -> Result<Self, Error> {
        Self::build(Kernels::current(), values, validity, chunk_log2)
    }

    /// Builds the zone map with the kernels `k`.
    ///
    /// ```
    /// use keel_kernels::{zone::ZoneMap, Kernels};
    /// let v: Vec<u64> = (0..1000).map(|i| i * i).collect();
    /// for k in Kernels::supported() {
    ///     let z = ZoneMap::build(k, &v, None, 8)?;
    ///     assert_eq!(z, ZoneMap::with_chunk_log2(&v, None, 8)?);
    ///     assert_eq!(z.chunk_min_max(3), Some((768 * 768, 999 * 999)));
    ///     assert!(ZoneMap::build(k, &v, None, 5).is_err()); // chunks under 64 rows
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn build(
        k: Kernels,
        values: &[T],
        validity: Option<&[u64]>,
        chunk_log2: u32,
    ) -> Result<Self, Error> {
        if !(6..=31).contains(&chunk_log2) {
            return Err(Error::InvalidArgument {
                what: "chunk_log2 must be in 6..=31 (chunks of 64 rows to 2 Gi rows)",
            });
        }
        check_bitmap("validity", values.len(), validity)?;
        let chunk = 1usize << chunk_log2;
        let n = values.len().div_ceil(chunk);
        let mut z = ZoneMap {
            chunk_log2,
            rows: values.len(),
            mins: Vec::with_capacity(n),
            maxs: Vec::with_capacity(n),
            valid: Vec::with_capacity(n),
        };
        for (i, c) in values.chunks(chunk).enumerate() {
            // Chunks are multiples of 64 rows, so each starts on a word.
            let val = validity.map(|b| &b[i * chunk / 64..]);
            let (mn, mx) = k.min_max_masked(c, val)?.unwrap_or((T::GREATEST, T::LEAST));
            z.mins.push(mn);
            z.maxs.push(mx);
            z.valid.push(k.count_masked(c, val)? as u32);
        }
        Ok(z)
    }

    /// Rows a chunk holds (the last chunk may hold fewer).
    pub fn chunk_rows(&self) -> usize {
        1 << self.chunk_log2
    }

    /// Rows of the column.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of chunks.
    pub fn chunks(&self) -> usize {
        self.mins.len()
    }

    /// Rows in chunk `i` (the last chunk may hold fewer), `None` past the
    /// last chunk.
    pub fn rows_in(&self, i: usize) -> Option<usize> {
        (i < self.chunks()).then(|| self.rows_of(i))
    }

    fn rows_of(&self, i: usize) -> usize {
        (self.rows - i * self.chunk_rows()).min(self.chunk_rows())
    }

    /// Valid rows in chunk `i`, `None` past the last chunk.
    pub fn valid_in(&self, i: usize) -> Option<usize> {
        self.valid.get(i).map(|&v| v as usize)
    }

    /// Whether chunk `i` has a null row, `None` past the last chunk.
    pub fn has_null(&self, i: usize) -> Option<bool> {
        Some(self.valid_in(i)? < self.rows_of(i))
    }

    /// `(min, max)` of chunk `i`'s valid rows; `None` if all are null or `i`
    /// is past the last chunk.
    pub fn chunk_min_max(&self, i: usize) -> Option<(T, T)> {
        (*self.valid.get(i)? > 0).then(|| (self.mins[i], self.maxs[i]))
    }

    /// Column minimum from the chunks: O(chunks).
    pub fn min(&self) -> Option<T> {
        (0..self.chunks())
            .filter_map(|i| self.chunk_min_max(i))
            .map(|m| m.0)
            .reduce(|a, b| if b.order_lt(a) { b } else { a })
    }

    /// Column maximum from the chunks: O(chunks).
    pub fn max(&self) -> Option<T> {
        (0..self.chunks())
            .filter_map(|i| self.chunk_min_max(i))
            .map(|m| m.1)
            .reduce(|a, b| if a.order_lt(b) { b } else { a })
    }

    /// Chunk `i`'s class under `pred` (`AllFail` past the last chunk: it
    /// has no rows).
    pub fn classify(&self, i: usize, pred: Predicate<T>) -> Class {
        match self.chunk_min_max(i) {
            None => Class::AllFail,
            Some((mn, mx)) => classify_range(mn, mx, pred),
        }
    }

    /// Every chunk's class under `pred`.
    ///
    /// ```
    /// use keel_kernels::{filter::{CmpOp, Predicate}, zone::{Class, ZoneMap}};
    /// let v: Vec<i64> = (0..256).collect();
    /// let z = ZoneMap::with_chunk_log2(&v, None, 6)?;
    /// let classes = z.classify_all(Predicate::Cmp(CmpOp::Lt, 100));
    /// assert_eq!(classes, [Class::AllPass, Class::Mixed, Class::AllFail, Class::AllFail]);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn classify_all(&self, pred: Predicate<T>) -> Vec<Class> {
        (0..self.chunks()).map(|i| self.classify(i, pred)).collect()
    }

    /// Filter at the current level; see [`ZoneMap::filter_with`].
    pub fn filter(
        &self,
        values: &[T],
        validity: Option<&[u64]>,
        pred: Predicate<T>,
        out: &mut [u64],
    ) -> Result<FilterStats, Error> {
        self.filter_with(Kernels::current(), values, validity, pred, out)
    }

    /// Writes `pred(values[i]) && valid(i)` into bit `i` of `out` (as
    /// [`crate::filter::filter`]: the last word's bits past the rows zeroed,
    /// words after it untouched): all-fail chunks are zeroed and all-pass chunks
    /// copied from `validity` (or set) without reading `values`; mixed chunks
    /// run the filter kernel. `values` and `validity` must be the column
    /// this map was built from (same length checked; contents are trusted).
    ///
    /// ```
    /// use keel_kernels::{filter::{CmpOp, Predicate}, zone::ZoneMap, Kernels};
    /// let v: Vec<f32> = (0..128).map(|i| i as f32).collect();
    /// let z = ZoneMap::with_chunk_log2(&v, None, 6)?;
    /// for k in Kernels::supported() {
    ///     let mut out = [0u64; 2];
    ///     let stats = z.filter_with(k, &v, None, Predicate::Cmp(CmpOp::Ge, 32.0), &mut out)?;
    ///     assert_eq!(out, [!0 << 32, !0]);
    ///     assert_eq!((stats.all_pass, stats.mixed), (1, 1));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn filter_with(
        &self,
        k: Kernels,
        values: &[T],
        validity: Option<&[u64]>,
        pred: Predicate<T>,
        out: &mut [u64],
    ) -> Result<FilterStats, Error> {
        if values.len() != self.rows {
            return Err(Error::LengthMismatch {
                what: "values (zone map built over another column)",
                expected: self.rows,
                actual: values.len(),
            });
        }
        check_bitmap("validity", values.len(), validity)?;
        check_bitmap("output bitmap", values.len(), Some(out))?;
        let cw = self.chunk_rows() / 64;
        let mut stats = FilterStats::default();
        for i in 0..self.chunks() {
            let rows = self.rows_of(i);
            let words = bitmap_words(rows);
            let o = &mut out[i * cw..i * cw + words];
            let val = validity.map(|b| &b[i * cw..i * cw + words]);
            match self.classify(i, pred) {
                Class::AllFail => {
                    o.fill(0);
                    stats.all_fail += 1;
                }
                Class::AllPass => {
                    match val {
                        Some(v) => o.copy_from_slice(v),
                        None => o.fill(!0),
                    }
                    if !rows.is_multiple_of(64) {
                        o[words - 1] &= (1u64 << (rows % 64)) - 1;
                    }
                    stats.all_pass += 1;
                }
                Class::Mixed => {
                    let start = i * self.chunk_rows();
                    k.filter(&values[start..start + rows], pred, o)?;
                    if let Some(v) = val {
                        k.and(o, v)?;
                    }
                    stats.mixed += 1;
                }
            }
        }
        Ok(stats)
    }
}

/// Class of a non-empty chunk with valid-row extremes `mn`, `mx` (min/max
/// order). Non-NaN values ordered by `total_cmp` are ordered the same way by
/// IEEE comparison, so `mn <= x <= mx` holds for every row in IEEE terms.
// `x != x` is the generic NaN test, and `!(a < b)` differs from `a >= b`
// exactly on NaN, which is the point.
#[allow(clippy::eq_op, clippy::neg_cmp_op_on_partial_ord)]
fn classify_range<T: Element>(mn: T, mx: T, pred: Predicate<T>) -> Class {
    if mn != mn || mx != mx {
        return Class::Mixed;
    }
    let (pass, fail) = match pred {
        Predicate::Cmp(op, c) => match op {
            CmpOp::Lt => (mx < c, !(mn < c)),
            CmpOp::Le => (mx <= c, !(mn <= c)),
            CmpOp::Gt => (mn > c, !(mx > c)),
            CmpOp::Ge => (mn >= c, !(mx >= c)),
            CmpOp::Eq => (mn == c && mx == c, c < mn || c > mx || c != c),
            CmpOp::Ne => (c < mn || c > mx || c != c, mn == c && mx == c),
        },
        Predicate::Between(lo, hi) => (lo <= mn && mx <= hi, !(lo <= mx) || !(mn <= hi)),
    };
    if pass {
        Class::AllPass
    } else if fail {
        Class::AllFail
    } else {
        Class::Mixed
    }
}
