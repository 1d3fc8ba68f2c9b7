//! keel-kernels: raw SIMD column kernels with runtime CPU dispatch, each with
//! a scalar twin that is its oracle.
//!
//! # How a kernel is called
//!
//! Every family (aggregates, filters, bitmaps, zone maps, span scans, hashing,
//! partitioning, gathers, sketches) follows one pattern:
//!
//! * A **safe free function** at the family's module (`agg::sum`,
//!   `filter::compare`, ...) validates its arguments (lengths, bitmap sizes),
//!   returns [`Error`] for bad input, and runs at the level [`cpu::level`]
//!   chooses (detected once and cached; capped by [`cpu::set_max_level`] or
//!   the `KEEL_KERNELS` environment variable).
//! * The **same kernel as a method of [`Kernels`]**, a `Copy` handle for one
//!   dispatch level. [`Kernels::at`] returns `None` unless the running CPU
//!   supports the level, so holding a `Kernels` proves the instructions exist
//!   (as memchr's `One::new() -> Option`). Tests and benchmarks call
//!   `Kernels::at(level)` to compare every level in one process; the free
//!   function is `Kernels::current().method(..)`.
//! * The method matches on the level and calls an `unsafe` leaf in
//!   `arch::{scalar, x86_64::{avx2, avx512}, aarch64::neon}::<family>`. Only
//!   those leaves carry `#[target_feature]`; their safety contract is "the CPU
//!   supports this level and the caller checked the lengths", which the
//!   `Kernels` value and the safe layer establish.
//! * x86-64 dispatch arms and `use crate::arch::x86_64::..` lines are gated
//!   `#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]`, the
//!   cfg of the `arch::x86_64` module: soft-float targets such as
//!   `x86_64-unknown-none` have no SSE, cannot compile vector code, and run
//!   the scalar level. The `element::dispatch!` macro already does this.
//! * Every SIMD leaf has a scalar twin in `arch::scalar` that is the oracle in
//!   `tests/` (every length 0..=300 at every start offset 0..=63) and in the
//!   fuzz targets.
//!
//! ```
//! use keel_kernels::{agg, cpu::Level, Kernels};
//!
//! let v: Vec<i64> = (1..=1000).collect();
//! assert_eq!(agg::sum(&v), 500_500);
//! // The same kernel pinned to the scalar level, always available:
//! let k = Kernels::at(Level::Scalar).unwrap();
//! assert_eq!(k.sum(&v), 500_500);
//! # Ok::<(), keel_kernels::Error>(())
//! ```
//!
//! On aarch64, [`cpu::Level::Neon`] is detected and has NEON leaves for the
//! aggregates, the filters, bitmap and/or/and-not/popcount and the
//! HyperLogLog merge (so zone maps and span scans use NEON too); selection
//! vectors, gathers, hashing, partitioning and HyperLogLog add run their
//! scalar twin there.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod cpu;

pub(crate) mod arch;

pub mod agg;
#[cfg(feature = "arrow")]
pub mod arrow;
pub mod bitmap;
mod element;
pub mod filter;
pub mod gather;
#[cfg(feature = "alloc")]
pub mod groupby;
#[cfg(feature = "alloc")]
pub mod grouped;
pub mod hash;
#[cfg(feature = "alloc")]
pub mod hll;
pub mod mask;
pub mod partition;
pub mod span;
#[cfg(feature = "alloc")]
pub mod zone;

pub use element::{Element, Num};

// Types an engine hands between worker threads (a `Kernels` per hand,
// sketches and tables merged at the end, errors sent back) must stay
// `Send + Sync`; a field that breaks it fails the build here.
static_assertions::assert_impl_all!(Kernels: Send, Sync, Copy);
static_assertions::assert_impl_all!(Error: Send, Sync, Copy);
static_assertions::assert_impl_all!(cpu::Level: Send, Sync, Copy);
static_assertions::assert_impl_all!(cpu::Config: Send, Sync);
static_assertions::assert_impl_all!(filter::Predicate<f64>: Send, Sync, Copy);
static_assertions::assert_impl_all!(mask::Mask<'static>: Send, Sync, Copy);
static_assertions::assert_impl_all!(gather::Column<'static>: Send, Sync);
static_assertions::assert_impl_all!(gather::ColumnMut<'static>: Send, Sync);
static_assertions::assert_impl_all!(partition::Radix: Send, Sync, Copy);
static_assertions::assert_impl_all!(span::SpanScan<i64>: Send, Sync);
static_assertions::assert_impl_all!(span::Outcome: Send, Sync);
#[cfg(feature = "alloc")]
static_assertions::assert_impl_all!(hll::HyperLogLog: Send, Sync);
#[cfg(feature = "alloc")]
static_assertions::assert_impl_all!(groupby::CountTable: Send, Sync);
#[cfg(feature = "alloc")]
static_assertions::assert_impl_all!(zone::ZoneMap<f64>: Send, Sync);
#[cfg(feature = "alloc")]
static_assertions::assert_impl_all!(partition::Partitions: Send, Sync);
#[cfg(feature = "alloc")]
static_assertions::assert_impl_all!(grouped::GroupTable<f64>: Send, Sync);
static_assertions::assert_impl_all!(mask::Selection<'static>: Send, Sync, Copy);

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

use cpu::Level;

/// A handle for one dispatch level that the running CPU supports.
///
/// Its existence is the proof that the level's instructions are available:
/// the only constructors are [`Kernels::at`] (checks support),
/// [`Kernels::current`] (the cached level, always supported) and
/// [`Kernels::scalar`]. Every kernel is a method on it.
///
/// ```
/// use keel_kernels::{cpu::{self, Level}, Kernels};
/// let k = Kernels::current();
/// assert_eq!(k.level(), cpu::level());
/// for k in Kernels::supported() {
///     assert!(cpu::supported(k.level()));
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernels {
    level: Level,
}

impl Kernels {
    /// The kernels at `level`, or `None` if this CPU does not support it.
    pub fn at(level: Level) -> Option<Kernels> {
        cpu::supported(level).then_some(Kernels { level })
    }

    /// The kernels at [`cpu::level`], the level the free functions use.
    #[inline]
    pub fn current() -> Kernels {
        // cpu::level() is clamped to detected support by construction.
        Kernels {
            level: cpu::level(),
        }
    }

    /// The portable scalar kernels: the oracle, available everywhere.
    pub const fn scalar() -> Kernels {
        Kernels {
            level: Level::Scalar,
        }
    }

    /// Which level these kernels run.
    pub const fn level(self) -> Level {
        self.level
    }

    /// The kernels at every level this CPU supports, lowest first.
    pub fn supported() -> impl Iterator<Item = Kernels> {
        Level::ALL.into_iter().filter_map(Kernels::at)
    }
}

/// Why a kernel refused its arguments. Kernels never panic on bad input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Two slices that must have the same length do not.
    LengthMismatch {
        /// Which argument is off.
        what: &'static str,
        /// The length it needed.
        expected: usize,
        /// The length it had.
        actual: usize,
    },
    /// A bitmap (validity or output) has fewer `u64` words than its rows need.
    BitmapTooShort {
        /// Which bitmap.
        what: &'static str,
        /// Words needed: `rows.div_ceil(64)`.
        needed: usize,
        /// Words given.
        actual: usize,
    },
    /// An output slice is too short for what the kernel must write.
    OutputTooShort {
        /// Which output.
        what: &'static str,
        /// Elements needed.
        needed: usize,
        /// Elements given.
        actual: usize,
    },
    /// A parameter is outside its documented range.
    InvalidArgument {
        /// Which parameter and what it must be.
        what: &'static str,
    },
    /// An index (a gather index, a selection-vector row, a group key) is
    /// not below the length it indexes.
    OutOfRange {
        /// What the index is.
        what: &'static str,
        /// Its position in its slice.
        position: usize,
        /// The index.
        index: u64,
        /// The length it had to be below.
        len: usize,
    },
    /// An output column's length differs from the number of rows to write
    /// (a gather: one per index).
    OutputLength {
        /// The output column (0 for a single column).
        column: usize,
        /// Rows to write.
        expected: usize,
        /// Its length.
        actual: usize,
    },
    /// The input columns of a frame do not all have the same length.
    ColumnLength {
        /// The first column whose length differs from column 0's.
        column: usize,
        /// Its length.
        len: usize,
        /// Column 0's length.
        expected: usize,
    },
    /// A frame has a different number of input and output columns.
    ColumnCount {
        /// Input columns.
        columns: usize,
        /// Output columns.
        outs: usize,
    },
    /// A frame's output column has a different element type from its input.
    ColumnType {
        /// The column whose types differ.
        column: usize,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Error::LengthMismatch {
                what,
                expected,
                actual,
            } => write!(f, "{what}: length {actual}, expected {expected}"),
            Error::BitmapTooShort {
                what,
                needed,
                actual,
            } => write!(f, "{what}: {actual} words, need at least {needed}"),
            Error::OutputTooShort {
                what,
                needed,
                actual,
            } => write!(f, "{what}: room for {actual}, need {needed}"),
            Error::InvalidArgument { what } => write!(f, "invalid argument: {what}"),
            Error::OutOfRange {
                what,
                position,
                index,
                len,
            } => write!(
                f,
                "{what} {index} at position {position} is out of range for length {len}"
            ),
            Error::OutputLength {
                column,
                expected,
                actual,
            } => write!(
                f,
                "output column {column} has length {actual}, expected {expected} (one per row written)"
            ),
            Error::ColumnLength {
                column,
                len,
                expected,
            } => write!(
                f,
                "frame column {column} has length {len}, column 0 has {expected}"
            ),
            Error::ColumnCount { columns, outs } => write!(
                f,
                "frame has {columns} input columns but {outs} output columns"
            ),
            Error::ColumnType { column } => write!(
                f,
                "frame column {column}: output element type differs from the input's"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// Words a bitmap of `rows` bits needs.
///
/// ```
/// use keel_kernels::{bitmap_words, filter::{self, CmpOp}};
/// assert_eq!((bitmap_words(0), bitmap_words(64), bitmap_words(65)), (0, 1, 2));
/// let v: Vec<u32> = (0..100).collect();
/// let mut bits = vec![0u64; bitmap_words(v.len())];
/// filter::compare(&v, CmpOp::Lt, 70, &mut bits)?;
/// assert_eq!(bits, [!0, 0b11_1111]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[inline]
pub const fn bitmap_words(rows: usize) -> usize {
    rows.div_ceil(64)
}

/// Checks that an optional bitmap covers `rows` bits.
#[inline]
pub(crate) fn check_bitmap(
    what: &'static str,
    rows: usize,
    b: Option<&[u64]>,
) -> Result<(), Error> {
    match b {
        Some(b) if b.len() < bitmap_words(rows) => Err(Error::BitmapTooShort {
            what,
            needed: bitmap_words(rows),
            actual: b.len(),
        }),
        _ => Ok(()),
    }
}
