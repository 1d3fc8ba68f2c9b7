//! HyperLogLog: approximate distinct counts in a few KiB.
//!
//! A sketch of precision `p` (4..=18; default 14) holds `m = 2^p` one-byte
//! registers (16 KiB at p = 14, standard error about `1.04 / sqrt(m)` =
//! 0.81%). A key is hashed with [`crate::hash::hash_u64`] under the sketch's
//! seed; the top `p` bits pick a register and the register keeps the maximum
//! rank (one plus the leading zeros of the other `64 - p` bits) seen.
//!
//! * [`HyperLogLog::add_u64_column`] hashes and ranks a column with SIMD
//!   (eight keys per vector on AVX-512, four on AVX2) into a block of packed
//!   updates, then applies the block with a scalar max loop.
//! * [`HyperLogLog::merge`] is the element-wise max of the registers (SIMD):
//!   the sketch of a union, exactly.
//! * [`HyperLogLog::estimate`] is Otmar Ertl's improved raw estimator
//!   ("New cardinality estimation algorithms for HyperLogLog sketches", 2017,
//!   Algorithm 6). It uses the whole register histogram, including the
//!   counts of empty and saturated registers, so it needs neither the
//!   classic estimator's linear-counting switch nor an empirical bias table:
//!   there is no bias bump at the switch-over (near `2.5 m`) that the classic
//!   estimator shows.
//!
//! There is no sparse representation: a dense p = 14 sketch is 16 KiB, is
//! merged in well under a microsecond, and the estimator is already exact to
//! within rounding for small counts (a collision among 10 keys in 16 Ki
//! registers is rare), so a sparse list would only save memory for many tiny
//! sketches, at the price of a branchy insert path and a conversion. Callers
//! that need many small sketches can use a lower precision.
//!
//! Needs the `alloc` feature (the registers live in a `Vec`). Nothing is
//! cached: [`HyperLogLog::estimate`] reads the registers on every call.

use alloc::vec;
use alloc::vec::Vec;

use crate::arch::dispatch;
use crate::cpu::Level;
use crate::hash::{as_u64, hash_u64};
use crate::mask::{Mask, Resolved};
use crate::{Error, Kernels};
use core::mem::MaybeUninit;

/// Keys staged per hash of a masked add (the AVX2 level's bitmaps, and
/// selection vectors): 4096 keys, 32 KiB on the stack, sixteen of the
/// leaves' 256-key blocks. At the AVX2 level 0.88-0.91 of the time with
/// 1024 (`bench/results/2026-12-06-kernels-take-masked-zen4.md`).
const STAGE: usize = 4096;

/// Smallest supported precision.
///
/// ```
/// use keel_kernels::hll::{HyperLogLog, MIN_PRECISION};
/// assert_eq!(HyperLogLog::new(MIN_PRECISION)?.registers().len(), 16);
/// assert!(HyperLogLog::new(MIN_PRECISION - 1).is_err());
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub const MIN_PRECISION: u8 = 4;
/// Largest supported precision (256 KiB of registers).
///
/// ```
/// use keel_kernels::hll::{HyperLogLog, MAX_PRECISION};
/// assert_eq!(HyperLogLog::new(MAX_PRECISION)?.registers().len(), 256 << 10);
/// assert!(HyperLogLog::new(MAX_PRECISION + 1).is_err());
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub const MAX_PRECISION: u8 = 18;
/// The default precision: 16 Ki registers, 16 KiB, ~0.81% standard error.
///
/// ```
/// use keel_kernels::hll::{HyperLogLog, DEFAULT_PRECISION};
/// let h = HyperLogLog::default();
/// assert_eq!(h.precision(), DEFAULT_PRECISION);
/// assert_eq!(h.registers().len(), 1 << DEFAULT_PRECISION);
/// ```
pub const DEFAULT_PRECISION: u8 = 14;

/// A HyperLogLog sketch with one byte per register.
///
/// ```
/// use keel_kernels::hll::HyperLogLog;
///
/// let mut a = HyperLogLog::new(14)?;
/// let keys: Vec<u64> = (0..100_000).collect();
/// a.add_u64_column(&keys[..60_000]);
/// let mut b = HyperLogLog::new(14)?;
/// b.add_u64_column(&keys[40_000..]);
/// a.merge(&b)?; // the sketch of the union
/// let est = a.estimate();
/// assert!((est - 100_000.0).abs() < 0.05 * 100_000.0);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HyperLogLog {
    p: u8,
    seed: u64,
    registers: Vec<u8>,
}

fn check_precision(p: u8) -> Result<(), Error> {
    if (MIN_PRECISION..=MAX_PRECISION).contains(&p) {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what: "HyperLogLog precision must be in 4..=18",
        })
    }
}

impl Default for HyperLogLog {
    fn default() -> Self {
        HyperLogLog {
            p: DEFAULT_PRECISION,
            seed: crate::hash::DEFAULT_SEED,
            registers: vec![0; 1 << DEFAULT_PRECISION],
        }
    }
}

impl HyperLogLog {
    /// An empty sketch of precision `p` (4..=18) hashing with
    /// [`crate::hash::DEFAULT_SEED`].
    pub fn new(p: u8) -> Result<Self, Error> {
        Self::with_seed(p, crate::hash::DEFAULT_SEED)
    }

    /// An empty sketch of precision `p` whose keys are hashed with `seed`.
    /// Only sketches with the same precision and seed can be merged.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// assert!(HyperLogLog::with_seed(3, 7).is_err());
    /// assert!(HyperLogLog::with_seed(19, 7).is_err());
    /// assert_eq!(HyperLogLog::with_seed(4, 7)?.registers().len(), 16);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn with_seed(p: u8, seed: u64) -> Result<Self, Error> {
        check_precision(p)?;
        Ok(HyperLogLog {
            p,
            seed,
            registers: vec![0; 1 << p],
        })
    }

    /// Rebuilds a sketch from its registers (for example after
    /// serialization). Fails if `registers.len() != 2^p` or a register holds
    /// a rank above `65 - p`, the most any hash can produce.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let mut a = HyperLogLog::with_seed(10, 3)?;
    /// a.add_u64_column(&[1, 2, 3]);
    /// let b = HyperLogLog::from_registers(a.precision(), a.seed(), a.registers())?;
    /// assert_eq!(a, b);
    /// assert!(HyperLogLog::from_registers(10, 3, &[0; 1000]).is_err()); // not 2^10
    /// assert!(HyperLogLog::from_registers(4, 3, &[62; 16]).is_err()); // above 65 - 4
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn from_registers(p: u8, seed: u64, registers: &[u8]) -> Result<Self, Error> {
        check_precision(p)?;
        if registers.len() != 1 << p {
            return Err(Error::LengthMismatch {
                what: "HyperLogLog registers",
                expected: 1 << p,
                actual: registers.len(),
            });
        }
        if registers.iter().any(|&r| r > 65 - p) {
            return Err(Error::InvalidArgument {
                what: "HyperLogLog register above 65 - precision",
            });
        }
        Ok(HyperLogLog {
            p,
            seed,
            registers: registers.to_vec(),
        })
    }

    /// The precision `p`.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// assert_eq!(HyperLogLog::new(12)?.precision(), 12);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn precision(&self) -> u8 {
        self.p
    }

    /// The hash seed.
    ///
    /// ```
    /// use keel_kernels::{hash::DEFAULT_SEED, hll::HyperLogLog};
    /// assert_eq!(HyperLogLog::new(12)?.seed(), DEFAULT_SEED);
    /// assert_eq!(HyperLogLog::with_seed(12, 5)?.seed(), 5);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The `2^p` registers.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let mut h = HyperLogLog::new(8)?;
    /// assert_eq!(h.registers(), &[0; 256][..]);
    /// h.add_u64(7);
    /// assert_eq!(h.registers().iter().filter(|&&r| r > 0).count(), 1);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn registers(&self) -> &[u8] {
        &self.registers
    }

    /// Empties the sketch, keeping precision and seed.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let mut h = HyperLogLog::with_seed(10, 1)?;
    /// h.add_u64_column(&[1, 2, 3]);
    /// h.clear();
    /// assert_eq!(h, HyperLogLog::with_seed(10, 1)?);
    /// assert_eq!(h.count(), 0);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.registers.fill(0);
    }

    /// Adds one key.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let (mut a, mut b) = (HyperLogLog::new(14)?, HyperLogLog::new(14)?);
    /// for key in [3, 1, 4, 1, 5] {
    ///     a.add_u64(key);
    /// }
    /// b.add_u64_column(&[3, 1, 4, 1, 5]);
    /// assert_eq!(a, b);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    #[inline]
    pub fn add_u64(&mut self, key: u64) {
        self.add_hash(hash_u64(key, self.seed));
    }

    /// Adds one `i64` key (its two's-complement bits, as
    /// [`HyperLogLog::add_u64`]).
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let (mut a, mut b) = (HyperLogLog::new(14)?, HyperLogLog::new(14)?);
    /// a.add_i64(-1);
    /// b.add_u64(u64::MAX);
    /// assert_eq!(a, b);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    #[inline]
    pub fn add_i64(&mut self, key: i64) {
        self.add_u64(key as u64);
    }

    /// Adds one byte string, hashed with [`crate::hash::hash_bytes`].
    ///
    /// ```
    /// use keel_kernels::{hash::hash_bytes, hll::HyperLogLog};
    /// let (mut a, mut b) = (HyperLogLog::new(14)?, HyperLogLog::new(14)?);
    /// for s in ["ant", "bee", "ant"] {
    ///     a.add_bytes(s.as_bytes());
    ///     b.add_hash(hash_bytes(s.as_bytes(), b.seed()));
    /// }
    /// assert_eq!(a, b);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn add_bytes(&mut self, key: &[u8]) {
        self.add_hash(crate::hash::hash_bytes(key, self.seed));
    }

    /// Adds a key already hashed by the caller. Equal keys must give equal
    /// hashes, and every bit must be well mixed.
    ///
    /// ```
    /// use keel_kernels::{hash::hash_u64, hll::HyperLogLog};
    /// let (mut a, mut b) = (HyperLogLog::with_seed(12, 8)?, HyperLogLog::with_seed(12, 8)?);
    /// a.add_hash(hash_u64(99, 8)); // the key hashed under the sketch's seed
    /// b.add_u64(99);
    /// assert_eq!(a, b);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    #[inline]
    pub fn add_hash(&mut self, h: u64) {
        let (i, r) = crate::arch::scalar::hll::index_rank(h, u32::from(self.p));
        let slot = &mut self.registers[i];
        *slot = (*slot).max(r);
    }

    /// Adds every key of a column, at the level in force.
    pub fn add_u64_column(&mut self, keys: &[u64]) {
        Kernels::current().hll_add_u64_column(self, keys);
    }

    /// Adds every key of an `i64` column, at the level in force.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let keys: Vec<i64> = (-5000..5000).collect();
    /// let mut a = HyperLogLog::new(14)?;
    /// a.add_i64_column(&keys);
    /// let mut b = HyperLogLog::new(14)?;
    /// b.add_u64_column(&keys.iter().map(|&k| k as u64).collect::<Vec<_>>());
    /// assert_eq!(a, b);
    /// assert!((9_500..=10_500).contains(&a.count()));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn add_i64_column(&mut self, keys: &[i64]) {
        Kernels::current().hll_add_i64_column(self, keys);
    }

    /// Adds the keys of the rows `mask` counts (valid and selected), at
    /// the level in force: the selected keys are gathered a block at a time
    /// into a small buffer the vector leaf hashes, with no selection vector
    /// or gathered column in memory. Errors as the masked aggregates do.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// use keel_kernels::mask::{Bits, Selection};
    /// let keys: Vec<u64> = (0..1000).map(|i| i % 100).collect();
    /// let evens: Vec<u64> = vec![0x5555_5555_5555_5555; 16];
    /// let mut h = HyperLogLog::new(14)?;
    /// h.add_u64_column_masked(&keys, Selection::Bitmap(Bits::new(&evens)))?;
    /// assert_eq!(h.count(), 50);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn add_u64_column_masked<'a>(
        &mut self,
        keys: &[u64],
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        Kernels::current().hll_add_u64_column_masked(self, keys, mask)
    }

    /// [`HyperLogLog::add_u64_column_masked`] for `i64` keys.
    ///
    /// ```
    /// use keel_kernels::{hll::HyperLogLog, mask::Selection};
    /// let keys = [-7i64, 8, -7, 9];
    /// let mut a = HyperLogLog::new(14)?;
    /// a.add_i64_column_masked(&keys, Selection::Rows(&[0, 2, 3]))?;
    /// let mut b = HyperLogLog::new(14)?;
    /// b.add_i64_column(&[-7, 9]);
    /// assert_eq!(a, b);
    /// assert!(a.add_i64_column_masked(&keys, Selection::Rows(&[4])).is_err());
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn add_i64_column_masked<'a>(
        &mut self,
        keys: &[i64],
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        Kernels::current().hll_add_u64_column_masked(self, as_u64(keys), mask)
    }

    /// Adds a column of caller-computed hashes, at the level in force.
    ///
    /// ```
    /// use keel_kernels::{hash::hash_u64_column, hll::HyperLogLog};
    /// let keys: Vec<u64> = (0..500).collect();
    /// let mut a = HyperLogLog::new(14)?;
    /// let mut hashes = vec![0u64; keys.len()];
    /// hash_u64_column(&keys, a.seed(), &mut hashes)?;
    /// a.add_hashes(&hashes);
    /// let mut b = HyperLogLog::new(14)?;
    /// b.add_u64_column(&keys);
    /// assert_eq!(a, b);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn add_hashes(&mut self, hashes: &[u64]) {
        Kernels::current().hll_add_hashes(self, hashes);
    }

    /// Merges `other` into `self` (element-wise max of the registers), at
    /// the level in force. Afterwards `self` is exactly the sketch of the
    /// union of both inputs.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let mut a = HyperLogLog::new(12)?;
    /// let b = HyperLogLog::new(14)?;
    /// assert!(a.merge(&b).is_err()); // different precisions
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn merge(&mut self, other: &HyperLogLog) -> Result<(), Error> {
        Kernels::current().hll_merge(self, other)
    }

    /// The count of each register value `0..=65 - p` (Ertl's `C` vector).
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let mut h = HyperLogLog::new(10)?;
    /// assert_eq!(h.histogram()[0], 1024);
    /// h.add_u64(1);
    /// let c = h.histogram();
    /// assert_eq!((c[0], c[1..].iter().sum::<u32>()), (1023, 1));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn histogram(&self) -> [u32; 66] {
        // Four interleaved tables so consecutive equal values do not chain
        // through one counter's store-to-load latency.
        let mut c = [[0u32; 66]; 4];
        let mut quads = self.registers.chunks_exact(4);
        for q in &mut quads {
            c[0][usize::from(q[0])] += 1;
            c[1][usize::from(q[1])] += 1;
            c[2][usize::from(q[2])] += 1;
            c[3][usize::from(q[3])] += 1;
        }
        for &r in quads.remainder() {
            c[0][usize::from(r)] += 1;
        }
        let mut out = [0u32; 66];
        for (k, o) in out.iter_mut().enumerate() {
            *o = c[0][k] + c[1][k] + c[2][k] + c[3][k];
        }
        out
    }

    /// The estimated number of distinct keys added (Ertl's improved raw
    /// estimator; see the module docs). Zero for an empty sketch; infinite
    /// only if every register is saturated (on the order of 2^64 keys).
    pub fn estimate(&self) -> f64 {
        // A sketch's own histogram is valid for its precision by construction.
        estimate_valid(&self.histogram(), self.p)
    }

    /// [`HyperLogLog::estimate`] rounded to the nearest integer.
    ///
    /// ```
    /// use keel_kernels::hll::HyperLogLog;
    /// let mut h = HyperLogLog::new(14)?;
    /// assert_eq!(h.count(), 0);
    /// h.add_u64_column(&(0..20_000).collect::<Vec<u64>>());
    /// assert!((19_000..=21_000).contains(&h.count()));
    /// assert_eq!(h.count(), (h.estimate() + 0.5) as u64);
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn count(&self) -> u64 {
        // The estimate is finite and at most ~m·2^(64-p); the cast saturates.
        (self.estimate() + 0.5) as u64
    }
}

/// Ertl's improved raw estimator from a register histogram `c` (`c[k]` is
/// the number of registers holding `k`) at precision `p`, as
/// [`HyperLogLog::histogram`] returns it.
///
/// A histogram no sketch of precision `p` can have is an error: `p`
/// outside 4..=18, a count above `65 - p`, or counts that do not sum to
/// `2^p`.
///
/// ```
/// use keel_kernels::hll::estimate_from_histogram;
/// let mut c = [0u32; 66];
/// c[0] = 1 << 14; // all registers empty
/// assert_eq!(estimate_from_histogram(&c, 14)?, 0.0);
/// assert!(estimate_from_histogram(&c, 13).is_err()); // 2^14 registers
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn estimate_from_histogram(c: &[u32; 66], p: u8) -> Result<f64, Error> {
    check_precision(p)?;
    let q = 64 - usize::from(p);
    if c[q + 2..].iter().any(|&n| n != 0) {
        return Err(Error::InvalidArgument {
            what: "HyperLogLog histogram has registers above 65 - precision",
        });
    }
    if c.iter().map(|&n| u64::from(n)).sum::<u64>() != 1u64 << p {
        return Err(Error::InvalidArgument {
            what: "HyperLogLog histogram counts must sum to 2^precision",
        });
    }
    Ok(estimate_valid(c, p))
}

/// The estimator for a histogram known to be valid for `p`.
fn estimate_valid(c: &[u32; 66], p: u8) -> f64 {
    let m = f64::from(1u32 << p);
    let q = 64 - usize::from(p);
    let mut z = m * tau(1.0 - f64::from(c[q + 1]) / m);
    for k in (1..=q).rev() {
        z = 0.5 * (z + f64::from(c[k]));
    }
    z += m * sigma(f64::from(c[0]) / m);
    if z.is_infinite() {
        return 0.0; // every register empty
    }
    // alpha_inf = 1 / (2 ln 2)
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    ALPHA_INF * m * m / z
}

/// Ertl's `sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1)`, infinite at 1.
fn sigma(mut x: f64) -> f64 {
    if x >= 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    // Converges in < 64 steps for x < 1 in f64; the cap only guards NaN.
    for _ in 0..1100 {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if z == prev {
            break;
        }
    }
    z
}

/// Ertl's `tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3`.
fn tau(mut x: f64) -> f64 {
    if x <= 0.0 || x >= 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    for _ in 0..1100 {
        x = sqrt(x);
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if z == prev {
            break;
        }
    }
    z / 3.0
}

/// Square root by Newton's method for `0 < x <= 1`, so the estimator is the
/// same with and without `std` (core has no `f64::sqrt`).
pub(crate) fn sqrt(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    // Halving the exponent gives a start within a factor of ~1.5.
    let mut y = f64::from_bits((x.to_bits() >> 1) + (0x3FF_u64 << 51));
    for _ in 0..6 {
        y = 0.5 * (y + x / y);
    }
    y
}

impl Kernels {
    /// [`HyperLogLog::add_i64_column`] at this handle's level.
    ///
    /// ```
    /// use keel_kernels::{hll::HyperLogLog, Kernels};
    /// let keys: Vec<i64> = (-1000..1000).collect();
    /// let mut want = HyperLogLog::new(12)?;
    /// keys.iter().for_each(|&k| want.add_i64(k));
    /// for k in Kernels::supported() {
    ///     let mut h = HyperLogLog::new(12)?;
    ///     k.hll_add_i64_column(&mut h, &keys);
    ///     assert_eq!(h, want);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn hll_add_i64_column(self, sketch: &mut HyperLogLog, keys: &[i64]) {
        self.hll_add_u64_column(sketch, as_u64(keys))
    }

    /// [`HyperLogLog::add_i64_column_masked`] at this handle's level.
    ///
    /// ```
    /// use keel_kernels::{hll::HyperLogLog, mask::{Bits, Selection}, Kernels};
    /// let keys: Vec<i64> = (0..128).map(|i| -i).collect();
    /// let mut want = HyperLogLog::new(12)?;
    /// keys.iter().step_by(2).for_each(|&k| want.add_i64(k));
    /// for k in Kernels::supported() {
    ///     let mut h = HyperLogLog::new(12)?;
    ///     let evens = Selection::Bitmap(Bits::new(&[0x5555_5555_5555_5555; 2]));
    ///     k.hll_add_i64_column_masked(&mut h, &keys, evens)?;
    ///     assert_eq!(h, want);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn hll_add_i64_column_masked<'a>(
        self,
        sketch: &mut HyperLogLog,
        keys: &[i64],
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        self.hll_add_u64_column_masked(sketch, as_u64(keys), mask)
    }

    /// [`HyperLogLog::add_u64_column_masked`] at this handle's level.
    ///
    /// ```
    /// use keel_kernels::{hll::HyperLogLog, mask::Selection, Kernels};
    /// let keys: Vec<u64> = (0..1000).collect();
    /// let rows: Vec<u32> = (0..1000).filter(|r| r % 3 == 0).collect();
    /// let mut want = HyperLogLog::new(12)?;
    /// rows.iter().for_each(|&r| want.add_u64(keys[r as usize]));
    /// for k in Kernels::supported() {
    ///     let mut h = HyperLogLog::new(12)?;
    ///     k.hll_add_u64_column_masked(&mut h, &keys, Selection::Rows(&rows))?;
    ///     assert_eq!(h, want);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn hll_add_u64_column_masked<'a>(
        self,
        sketch: &mut HyperLogLog,
        keys: &[u64],
        mask: impl Into<Mask<'a>>,
    ) -> Result<(), Error> {
        let n = keys.len();
        // Selected keys are staged here and hashed a block at a time, by
        // the arms that stage (32 KiB: cleared only where used).
        let mut buf: [u64; STAGE];
        let mut fill = 0;
        let flush = |k: &[u64], sketch: &mut HyperLogLog| self.hll_add_u64_column(sketch, k);
        match mask.into().resolve(n)? {
            Resolved::Bits(m) if m.is_all() => self.hll_add_u64_column(sketch, keys),
            // AVX-512 compresses the counted rows' positions (a byte
            // compress a word where the CPU has VBMI2) and gathers their
            // keys for its vector hash; the scalar level walks the set
            // bits; AVX2 (no compress) stages the keys for its hash.
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            Resolved::Bits(m) if self.level() == Level::Avx512 => {
                use crate::arch::x86_64::avx512::hll as a5;
                let (p, seed) = (u32::from(sketch.p), sketch.seed);
                let leaf = if crate::cpu::vbmi2() {
                    a5::add_u64_masked_vbmi2
                } else {
                    a5::add_u64_masked
                };
                // SAFETY: this handle's level is AVX-512, so the CPU has it,
                // and VBMI2 where `cpu::vbmi2` says so; a sketch has
                // 4 <= p <= 18 and 2^p registers; `resolve` checked that
                // the mask covers the n rows.
                unsafe { leaf(&mut sketch.registers, p, seed, keys, m) };
            }
            Resolved::Bits(m) if self.level() != Level::Avx2 => {
                let (p, seed) = (u32::from(sketch.p), sketch.seed);
                crate::arch::scalar::hll::add_u64_masked(&mut sketch.registers, p, seed, keys, m);
            }
            Resolved::Bits(m) => {
                // Each STAGE rows' counted keys packed onto the stage as
                // `gather_masked` packs them (at this level a permute a few
                // rows over a mask counting one row in three or more, else
                // a `tzcnt` loop), the stage hashed when the next would
                // not fit.
                buf = [0; STAGE];
                for c in (0..n).step_by(STAGE) {
                    let len = (n - c).min(STAGE);
                    let sub = m.skip(c);
                    let cnt = self.count_bits(sub, len);
                    if fill + cnt > STAGE {
                        flush(&buf[..fill], sketch);
                        fill = 0;
                    }
                    let dst = &mut buf[fill..fill + cnt];
                    // SAFETY: `compact_bits` writes only keys (no
                    // uninitialised bytes) into the view.
                    let view = unsafe { &mut *(dst as *mut [u64] as *mut [MaybeUninit<u64>]) };
                    let k = self.compact_bits(&keys[c..c + len], sub, view);
                    debug_assert_eq!(k, cnt);
                    fill += cnt;
                }
                flush(&buf[..fill], sketch);
            }
            Resolved::Rows(rows, m) => {
                buf = [0; STAGE];
                for &r in rows {
                    if m.get(r as usize) {
                        if fill == STAGE {
                            flush(&buf, sketch);
                            fill = 0;
                        }
                        buf[fill] = keys[r as usize];
                        fill += 1;
                    }
                }
                flush(&buf[..fill], sketch);
            }
        }
        Ok(())
    }

    /// [`HyperLogLog::add_u64_column`] at this handle's level.
    ///
    /// ```
    /// use keel_kernels::{hll::HyperLogLog, Kernels};
    /// let keys: Vec<u64> = (0..1000).map(|i| i * 7919).collect();
    /// let mut want = HyperLogLog::new(12)?;
    /// keys.iter().for_each(|&k| want.add_u64(k));
    /// for k in Kernels::supported() {
    ///     let mut h = HyperLogLog::new(12)?;
    ///     k.hll_add_u64_column(&mut h, &keys);
    ///     assert_eq!(h, want);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn hll_add_u64_column(self, sketch: &mut HyperLogLog, keys: &[u64]) {
        let (p, seed) = (u32::from(sketch.p), sketch.seed);
        let regs = &mut sketch.registers[..];
        use crate::arch::scalar::hll as sc;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::hll as a2, avx512::hll as a5};
        // A HyperLogLog always has 4 <= p <= 18 and 2^p registers.
        dispatch!(
            self.level(),
            sc::add_u64,
            a2::add_u64,
            a5::add_u64,
            (regs, p, seed, keys)
        )
    }

    /// [`HyperLogLog::add_hashes`] at this handle's level.
    ///
    /// ```
    /// use keel_kernels::{hash::hash_u64, hll::HyperLogLog, Kernels};
    /// let hashes: Vec<u64> = (0..1000).map(|k| hash_u64(k, 1)).collect();
    /// let mut want = HyperLogLog::new(12)?;
    /// hashes.iter().for_each(|&h| want.add_hash(h));
    /// for k in Kernels::supported() {
    ///     let mut h = HyperLogLog::new(12)?;
    ///     k.hll_add_hashes(&mut h, &hashes);
    ///     assert_eq!(h, want);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn hll_add_hashes(self, sketch: &mut HyperLogLog, hashes: &[u64]) {
        let p = u32::from(sketch.p);
        let regs = &mut sketch.registers[..];
        use crate::arch::scalar::hll as sc;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::hll as a2, avx512::hll as a5};
        // As in hll_add_u64.
        dispatch!(
            self.level(),
            sc::add_hashes,
            a2::add_hashes,
            a5::add_hashes,
            (regs, p, hashes)
        )
    }

    /// [`HyperLogLog::merge`] at this handle's level.
    ///
    /// ```
    /// use keel_kernels::{hll::HyperLogLog, Kernels};
    /// let mut a = HyperLogLog::new(12)?;
    /// let (mut b, mut union) = (a.clone(), a.clone());
    /// a.add_u64_column(&[1, 2, 3]);
    /// b.add_u64_column(&[3, 4]);
    /// union.add_u64_column(&[1, 2, 3, 4]);
    /// for k in Kernels::supported() {
    ///     let mut m = a.clone();
    ///     k.hll_merge(&mut m, &b)?;
    ///     assert_eq!(m, union);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn hll_merge(self, dst: &mut HyperLogLog, src: &HyperLogLog) -> Result<(), Error> {
        if dst.p != src.p {
            return Err(Error::InvalidArgument {
                what: "HyperLogLog merge: sketches have different precisions",
            });
        }
        if dst.seed != src.seed {
            return Err(Error::InvalidArgument {
                what: "HyperLogLog merge: sketches have different hash seeds",
            });
        }
        let (d, s) = (&mut dst.registers[..], &src.registers[..]);
        #[cfg(target_arch = "aarch64")]
        use crate::arch::aarch64::neon::hll as ne;
        use crate::arch::scalar::hll as sc;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::hll as a2, avx512::hll as a5};
        // Equal precisions mean equal register counts.
        dispatch!(
            self.level(),
            sc::merge,
            a2::merge,
            a5::merge,
            ne::merge,
            (d, s)
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both AVX-512 walks of the masked add (four 16-row compresses or a
    /// `tzcnt` loop a word; one byte compress a word with VBMI2) against
    /// the scalar twin, on masks the walk takes (under one row in six, not
    /// all word-aligned) whose words count every number of rows 0..=64, so
    /// that each of `positions64`'s four stores is taken; at every
    /// precision's extremes. A leaf this CPU lacks is said so, not run.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[test]
    fn masked_walks_equal_the_scalar_twin() {
        extern crate std;
        use crate::arch::x86_64::avx512::hll as a5;
        use crate::mask::Bits;
        type Leaf = unsafe fn(&mut [u8], u32, u64, &[u64], crate::arch::mask::RowMask<'_>);
        let mut leaves: Vec<(&str, Leaf)> = Vec::new();
        if crate::cpu::detected() == Level::Avx512 {
            leaves.push(("avx512", a5::add_u64_masked));
            if crate::cpu::vbmi2() {
                leaves.push(("avx512 vbmi2", a5::add_u64_masked_vbmi2));
            } else {
                std::println!("no AVX-512 VBMI2 here: its masked walk is not run");
            }
        } else {
            std::println!("no AVX-512 here: the masked walks are not run");
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Every fifth word counts rows, the counts running through 0..=64
        // (under Miri through a few, one for each of `positions64`'s
        // stores): about 1 in 10 rows, between the sparse leaf's 1 in 16
        // and the dense leaf's 1 in 6, so both masks take the walk. Then
        // every 40th word: about 1 in 80, so the word-aligned mask takes
        // the sparse leaf (the other the walk); and every 200th word, where
        // so few words count rows that the sparse leaf skips the empty
        // ones. Under Miri, which checks the leaves' loads and stores
        // (the sparser masks take the same walk over more rows), every
        // fifth word only.
        let counts: Vec<u32> = if cfg!(miri) {
            vec![0, 3, 16, 17, 33, 49, 64]
        } else {
            (0..=64).collect()
        };
        let everies: &[usize] = if cfg!(miri) { &[5] } else { &[5, 40, 200] };
        for &every in everies {
            let words = every * counts.len();
            let bits: Vec<u64> = (0..words + 1)
                .map(|b| {
                    let mut w = 0u64;
                    if b % every == 0 {
                        while w.count_ones() < counts[b / every % counts.len()] {
                            w |= 1 << (next() % 64);
                        }
                    }
                    w
                })
                .collect();
            let n = words * 64 - 27;
            // Distinct keys: a key lost or taken twice changes a register
            // (at 2^14 registers and more nearly every key has its own).
            let keys: Vec<u64> = (0..n).map(|_| next()).collect();
            for off in [0, 5] {
                let counted = (0..n).filter(|i| bits[(i + off) / 64] >> ((i + off) % 64) & 1 == 1);
                let counted = counted.count();
                if every == 5 {
                    assert!(counted * 16 >= n && counted * 6 < n, "{counted} of {n}");
                } else {
                    assert!(counted * 16 < n, "{counted} of {n}");
                }
                let sel = Mask::valid(Bits::with_offset(&bits, off));
                let Ok(Resolved::Bits(m)) = sel.resolve(n) else {
                    panic!("a bitmap mask resolves to bits")
                };
                let precisions: &[u32] = if cfg!(miri) { &[4, 14] } else { &[4, 14, 18] };
                for &p in precisions {
                    let mut want = vec![0u8; 1 << p];
                    crate::arch::scalar::hll::add_u64_masked(&mut want, p, 7, &keys, m);
                    for &(name, leaf) in &leaves {
                        let mut got = vec![0u8; 1 << p];
                        // SAFETY: the CPU has the leaf's features (checked
                        // above); 4 <= p <= 18 and 2^p registers; the mask
                        // covers the n rows.
                        unsafe { leaf(&mut got, p, 7, &keys, m) };
                        assert!(got == want, "{name} p {p} offset {off} every {every}");
                    }
                }
            }
        }
    }

    #[test]
    fn sqrt_matches_std_on_the_unit_interval() {
        extern crate std;
        let mut x = 1e-300_f64;
        while x <= 1.0 {
            let (a, b) = (sqrt(x), std::primitive::f64::sqrt(x));
            assert!((a - b).abs() <= 2.0 * f64::EPSILON * b, "{x}: {a} vs {b}");
            x *= 1.37;
        }
        assert_eq!(sqrt(1.0), 1.0);
    }
}
