//! Radix partitioning of rows by hash bits: a histogram pass, an exclusive
//! prefix sum into offsets, then a stable scatter.
//!
//! A [`Radix`] names `bits` consecutive hash bits starting at `shift`:
//! partition `j` of `2^bits` holds the rows whose hash has
//! `(hash >> shift) & (2^bits - 1) == j`. [`Radix::top`] takes the top bits.
//! When the partitions feed hash tables keyed by the same hash, pick bits
//! the table does not use (hashbrown takes the top 7 bits as the tag and the
//! low bits as the bucket: a middle range such as `shift = 32` keeps both
//! well spread inside a partition).
//!
//! The outputs are caller buffers, so nothing here allocates; with `alloc`,
//! [`partition_rows_vec`] returns owned [`Partitions`]. Row indices are
//! `u32` (half the traffic of `usize`); a column of more than 2^32 rows is an
//! error, to be split into morsels first.
//!
//! The histogram and scatter are scalar at every level: each row is one
//! shift-and-mask and one data-dependent store, which no vector instruction
//! on these CPUs does faster (scatters are microcoded). The key-taking form
//! [`Kernels::partition_rows_by_key`] hashes blocks of keys with the SIMD
//! hash kernels of its level, once for the histogram and once for the
//! scatter, instead of storing the hashes.

use crate::hash::as_u64;
use crate::{Error, Kernels};

/// Most hash bits a [`Radix`] may use: 65 536 partitions.
///
/// ```
/// use keel_kernels::partition::{Radix, MAX_BITS};
/// assert_eq!(Radix::top(MAX_BITS)?.partitions(), 65_536);
/// assert!(Radix::new(MAX_BITS + 1, 0).is_err());
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub const MAX_BITS: u8 = 16;

/// Which hash bits choose a partition.
///
/// ```
/// use keel_kernels::partition::Radix;
/// let r = Radix::top(4)?;
/// assert_eq!(r.partitions(), 16);
/// assert_eq!(r.of(0xF000_0000_0000_0000), 15);
/// assert!(Radix::new(8, 60).is_err()); // 8 bits from bit 60 overrun 64
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Radix {
    bits: u8,
    shift: u8,
}

impl Radix {
    /// `bits` hash bits (0..=16) starting at bit `shift`; `bits + shift`
    /// must not exceed 64. Zero bits is one partition.
    pub fn new(bits: u8, shift: u8) -> Result<Radix, Error> {
        if bits > MAX_BITS {
            return Err(Error::InvalidArgument {
                what: "radix bits must be in 0..=16",
            });
        }
        if u32::from(bits) + u32::from(shift) > 64 {
            return Err(Error::InvalidArgument {
                what: "radix bits + shift must not exceed 64",
            });
        }
        Ok(Radix { bits, shift })
    }

    /// The top `bits` hash bits (0..=16).
    pub fn top(bits: u8) -> Result<Radix, Error> {
        Radix::new(bits, 64u8.saturating_sub(bits))
    }

    /// Number of hash bits used.
    pub const fn bits(self) -> u8 {
        self.bits
    }

    /// The lowest hash bit used.
    ///
    /// ```
    /// use keel_kernels::partition::Radix;
    /// assert_eq!(Radix::new(8, 32)?.shift(), 32);
    /// let top = Radix::top(4)?;
    /// assert_eq!((top.bits(), top.shift()), (4, 60));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub const fn shift(self) -> u8 {
        self.shift
    }

    /// Number of partitions, `2^bits`.
    pub const fn partitions(self) -> usize {
        1 << self.bits
    }

    /// The partition of hash `h`.
    #[inline(always)]
    pub const fn of(self, h: u64) -> usize {
        // shift == 64 only with bits == 0, where the mask is zero anyway.
        ((h >> (self.shift & 63)) & ((1u64 << self.bits) - 1)) as usize
    }
}

fn check_counts(radix: Radix, counts: usize) -> Result<(), Error> {
    if counts < radix.partitions() {
        return Err(Error::OutputTooShort {
            what: "partition counts",
            needed: radix.partitions(),
            actual: counts,
        });
    }
    Ok(())
}

fn check_scatter(radix: Radix, rows: usize, offsets: usize, out: usize) -> Result<(), Error> {
    // In u64: on 32-bit targets `u32::MAX as usize + 1` overflows.
    if rows as u64 > u64::from(u32::MAX) + 1 {
        return Err(Error::InvalidArgument {
            what: "partitioning: more than 2^32 rows; split the column first",
        });
    }
    if offsets < radix.partitions() + 1 {
        return Err(Error::OutputTooShort {
            what: "partition offsets",
            needed: radix.partitions() + 1,
            actual: offsets,
        });
    }
    if out < rows {
        return Err(Error::OutputTooShort {
            what: "partitioned rows",
            needed: rows,
            actual: out,
        });
    }
    Ok(())
}

/// Counts the rows of each partition: `counts[j]` for `j < 2^bits` (the
/// rest of `counts` is left alone).
///
/// ```
/// use keel_kernels::partition::{histogram, Radix};
/// let mut counts = [0usize; 2];
/// histogram(&[0, u64::MAX, 1], Radix::top(1)?, &mut counts)?;
/// assert_eq!(counts, [2, 1]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn histogram(hashes: &[u64], radix: Radix, counts: &mut [usize]) -> Result<(), Error> {
    check_counts(radix, counts.len())?;
    let counts = &mut counts[..radix.partitions()];
    counts.fill(0);
    for &h in hashes {
        counts[radix.of(h)] += 1;
    }
    Ok(())
}

/// Turns per-partition counts held in `offsets[1..]` into start offsets held
/// in `offsets[1..]` (so `offsets[j + 1]` is partition `j`'s scatter cursor),
/// with `offsets[0] = 0`. After the scatter each cursor sits at its
/// partition's end, the next one's start: `offsets` is then final.
fn counts_to_cursors(offsets: &mut [usize]) {
    offsets[0] = 0;
    let mut acc = 0;
    for o in offsets.iter_mut() {
        let c = *o;
        *o = acc;
        acc += c;
    }
}

/// Partitions the row indices `0..hashes.len()` by their hash: afterwards the
/// rows of partition `j` are `rows[offsets[j]..offsets[j + 1]]`, in
/// increasing order (the scatter is stable). `offsets` needs `2^bits + 1`
/// entries, `rows` at least `hashes.len()`.
///
/// ```
/// use keel_kernels::partition::{partition_rows, Radix};
/// let hashes = [u64::MAX, 0, 1 << 63, 5];
/// let (mut offsets, mut rows) = ([0usize; 3], [0u32; 4]);
/// partition_rows(&hashes, Radix::top(1)?, &mut offsets, &mut rows)?;
/// assert_eq!(offsets, [0, 2, 4]);
/// assert_eq!(rows, [1, 3, 0, 2]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn partition_rows(
    hashes: &[u64],
    radix: Radix,
    offsets: &mut [usize],
    rows: &mut [u32],
) -> Result<(), Error> {
    check_scatter(radix, hashes.len(), offsets.len(), rows.len())?;
    let parts = radix.partitions();
    let offsets = &mut offsets[..=parts];
    histogram(hashes, radix, &mut offsets[1..])?;
    counts_to_cursors(offsets);
    let cursors = &mut offsets[1..];
    for (i, &h) in hashes.iter().enumerate() {
        let c = &mut cursors[radix.of(h)];
        rows[*c] = i as u32;
        *c += 1;
    }
    Ok(())
}

/// Partitions key/value pairs by the key hashes: afterwards the pairs of
/// partition `j` are `keys_out[offsets[j]..offsets[j + 1]]` (and the same
/// range of `values_out`), in input order.
///
/// ```
/// use keel_kernels::partition::{partition_pairs, Radix};
/// let hashes = [u64::MAX, 0];
/// let (mut offsets, mut k, mut v) = ([0usize; 3], [0i64; 2], [0.0f64; 2]);
/// partition_pairs(&hashes, &[10, 20], &[1.5, 2.5], Radix::top(1)?, &mut offsets, &mut k, &mut v)?;
/// assert_eq!((k, v), ([20, 10], [2.5, 1.5]));
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn partition_pairs<K: Copy, V: Copy>(
    hashes: &[u64],
    keys: &[K],
    values: &[V],
    radix: Radix,
    offsets: &mut [usize],
    keys_out: &mut [K],
    values_out: &mut [V],
) -> Result<(), Error> {
    let n = hashes.len();
    for (what, len) in [
        ("partition keys", keys.len()),
        ("partition values", values.len()),
    ] {
        if len != n {
            return Err(Error::LengthMismatch {
                what,
                expected: n,
                actual: len,
            });
        }
    }
    check_scatter(radix, n, offsets.len(), keys_out.len())?;
    check_scatter(radix, n, offsets.len(), values_out.len())?;
    let parts = radix.partitions();
    let offsets = &mut offsets[..=parts];
    histogram(hashes, radix, &mut offsets[1..])?;
    counts_to_cursors(offsets);
    let cursors = &mut offsets[1..];
    for i in 0..n {
        let c = &mut cursors[radix.of(hashes[i])];
        keys_out[*c] = keys[i];
        values_out[*c] = values[i];
        *c += 1;
    }
    Ok(())
}

/// Rows in one hashing block of [`Kernels::partition_rows_by_key`].
const BLOCK: usize = 256;

/// [`Kernels::partition_rows_by_key`] at the level in force.
///
/// ```
/// use keel_kernels::{hash::hash_i64, partition::{partition_rows_by_key, Radix}};
/// let keys = [5i64, -1, 7, 5];
/// let r = Radix::top(2)?;
/// let (mut offsets, mut rows) = ([0usize; 5], [0u32; 4]);
/// partition_rows_by_key(&keys, 9, r, &mut offsets, &mut rows)?;
/// let j = r.of(hash_i64(5, 9)); // key 5's partition holds rows 0 and 3, in order
/// let part = &rows[offsets[j]..offsets[j + 1]];
/// assert!(part.starts_with(&[0]) && part.ends_with(&[3]));
/// assert_eq!(offsets[4], 4);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn partition_rows_by_key(
    keys: &[i64],
    seed: u64,
    radix: Radix,
    offsets: &mut [usize],
    rows: &mut [u32],
) -> Result<(), Error> {
    Kernels::current().partition_rows_by_key(keys, seed, radix, offsets, rows)
}

impl Kernels {
    /// [`partition_rows`] of `i64` keys hashed with
    /// [`crate::hash::hash_i64`] under `seed`, hashing a block at a time with
    /// this level's hash kernel (twice: once to count, once to scatter)
    /// rather than storing every hash.
    ///
    /// ```
    /// use keel_kernels::{hash, partition::{partition_rows, Radix}, Kernels};
    /// let keys = [5i64, -1, 7, 5];
    /// let r = Radix::top(2)?;
    /// let (mut o1, mut r1) = ([0usize; 5], [0u32; 4]);
    /// Kernels::current().partition_rows_by_key(&keys, 9, r, &mut o1, &mut r1)?;
    /// let hashes: Vec<u64> = keys.iter().map(|&k| hash::hash_i64(k, 9)).collect();
    /// let (mut o2, mut r2) = ([0usize; 5], [0u32; 4]);
    /// partition_rows(&hashes, r, &mut o2, &mut r2)?;
    /// assert_eq!((o1, r1), (o2, r2));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn partition_rows_by_key(
        self,
        keys: &[i64],
        seed: u64,
        radix: Radix,
        offsets: &mut [usize],
        rows: &mut [u32],
    ) -> Result<(), Error> {
        check_scatter(radix, keys.len(), offsets.len(), rows.len())?;
        let keys = as_u64(keys);
        let parts = radix.partitions();
        let offsets = &mut offsets[..=parts];
        let mut buf = [0u64; BLOCK];
        offsets.fill(0);
        for chunk in keys.chunks(BLOCK) {
            let h = &mut buf[..chunk.len()];
            self.hash_block(chunk, seed, h);
            for &x in h.iter() {
                offsets[1 + radix.of(x)] += 1;
            }
        }
        counts_to_cursors(offsets);
        let cursors = &mut offsets[1..];
        for (b, chunk) in keys.chunks(BLOCK).enumerate() {
            let h = &mut buf[..chunk.len()];
            self.hash_block(chunk, seed, h);
            for (j, &x) in h.iter().enumerate() {
                let c = &mut cursors[radix.of(x)];
                rows[*c] = (b * BLOCK + j) as u32;
                *c += 1;
            }
        }
        Ok(())
    }
}

/// Owned output of [`partition_rows_vec`]; [`Partitions::rows_of`] gives
/// one partition's rows.
///
/// ```
/// use keel_kernels::partition::{partition_rows_vec, Partitions, Radix};
/// let p: Partitions = partition_rows_vec(&[1 << 63, 3, u64::MAX], Radix::top(1)?)?;
/// assert_eq!((p.offsets.as_slice(), p.rows.as_slice()), (&[0, 1, 3][..], &[1, 0, 2][..]));
/// assert_eq!(p.rows_of(1), &[0, 2]);
/// assert!(p.rows_of(2).is_empty()); // no partition 2
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partitions {
    /// `2^bits + 1` offsets into `rows`.
    pub offsets: alloc::vec::Vec<usize>,
    /// Row indices grouped by partition.
    pub rows: alloc::vec::Vec<u32>,
}

#[cfg(feature = "alloc")]
impl Partitions {
    /// The rows of partition `j`: empty if `j` is out of range, or if the
    /// (public, so editable) offsets do not delimit a range of `rows`.
    pub fn rows_of(&self, j: usize) -> &[u32] {
        let end = j.checked_add(1).and_then(|k| self.offsets.get(k));
        match (self.offsets.get(j), end) {
            (Some(&a), Some(&b)) => self.rows.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// [`partition_rows`] into freshly allocated buffers.
///
/// ```
/// use keel_kernels::partition::{partition_rows_vec, Radix};
/// let p = partition_rows_vec(&[3, 1 << 63], Radix::top(1)?)?;
/// assert_eq!(p.rows_of(1), &[1]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[cfg(feature = "alloc")]
pub fn partition_rows_vec(hashes: &[u64], radix: Radix) -> Result<Partitions, Error> {
    let mut p = Partitions {
        offsets: alloc::vec![0; radix.partitions() + 1],
        rows: alloc::vec![0; hashes.len()],
    };
    partition_rows(hashes, radix, &mut p.offsets, &mut p.rows)?;
    Ok(p)
}
