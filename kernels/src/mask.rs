//! Which rows a kernel reads: a validity bitmap and a selection, each
//! optional, as one argument ([`Mask`]).
//!
//! * [`Bits`] borrows a bitmap with a bit offset: row `i` is bit
//!   `offset + i`. It views `u64` words (bit `j % 64` of word `j / 64`) or
//!   bytes in arrow's layout (bit `j % 8` of byte `j / 8`), so a sliced
//!   arrow `NullBuffer` or `BooleanBuffer` is read where it lies.
//! * [`Selection`] names the rows an operation reads: all of them, those set
//!   in a bitmap (a filter's output), or a selection vector of row indices
//!   (as [`crate::bitmap::select_into`] writes them).
//! * [`Mask`] is validity and selection together: a row counts when it is
//!   valid and selected. Every `*_masked` kernel takes `impl Into<Mask>`:
//!   `None` or `Some(&words[..])` (a validity bitmap at offset 0, the form
//!   most callers hold), a [`Selection`], or a [`Mask`] built with
//!   [`Mask::valid`] and [`Mask::select`].
//!
//! A bitmap shorter than the rows it must cover, or a selection vector
//! naming a row past the end, is an [`Error`]; bits past the rows are
//! ignored. A selection vector may repeat rows and need not be sorted: each
//! entry counts once, in the order given.
//!
//! ```
//! use keel_kernels::{agg, mask::{Bits, Mask, Selection}};
//! let v = [1i64, 2, 3, 4, 5, 6, 7, 8];
//! let valid = [0b1111_1110u64]; // row 0 is null
//! let picked = [0b0000_0111u64]; // rows 0, 1, 2 pass a filter
//! assert_eq!(agg::sum_masked(&v, Some(&valid[..]))?, 35);
//! assert_eq!(agg::sum_masked(&v, Selection::Bitmap(Bits::new(&picked)))?, 6);
//! let m = Mask::valid(Bits::new(&valid)).select(Selection::Bitmap(Bits::new(&picked)));
//! assert_eq!(agg::sum_masked(&v, m)?, 5);
//! // A bitmap that starts at bit 3 of its words (a sliced column):
//! assert_eq!(agg::sum_masked(&v[..4], Mask::valid(Bits::with_offset(&valid, 3)))?, 10);
//! assert_eq!(agg::sum_masked(&v, Selection::Rows(&[7, 7, 0]))?, 17);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::Error;
use crate::arch::mask::{Bitmap, RowMask};

/// A borrowed bitmap with a bit offset: row `i` is bit `offset + i`.
#[derive(Clone, Copy, Debug)]
pub struct Bits<'a>(pub(crate) Bitmap<'a>);

impl<'a> Bits<'a> {
    /// `u64` words from bit 0.
    pub const fn new(words: &'a [u64]) -> Self {
        Bits(Bitmap::Words(words, 0))
    }

    /// `u64` words from bit `offset` (row 0 is bit `offset % 64` of word
    /// `offset / 64`).
    pub const fn with_offset(words: &'a [u64], offset: usize) -> Self {
        Bits(Bitmap::Words(words, offset))
    }

    /// Bytes in arrow's bit order (bit `j % 8` of byte `j / 8`) from bit
    /// `offset`: an arrow `BooleanBuffer` is `Bits::from_bytes(b.values(),
    /// b.offset())`.
    ///
    /// ```
    /// use keel_kernels::{agg, mask::{Bits, Mask}};
    /// let v: Vec<i32> = (1..=9).collect();
    /// let validity = [0b1111_1011u8, 0b1]; // row 2 is null
    /// let m = Mask::valid(Bits::from_bytes(&validity, 0));
    /// assert_eq!(agg::sum_masked(&v, m)?, 42);
    /// assert_eq!(Bits::from_bytes(&validity, 3).get(0), Some(true));
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub const fn from_bytes(bytes: &'a [u8], offset: usize) -> Self {
        Bits(Bitmap::Bytes(bytes, offset))
    }

    /// Row `i`'s bit, `None` past the bitmap's end.
    ///
    /// ```
    /// use keel_kernels::mask::Bits;
    /// let b = Bits::from_bytes(&[0b0000_0100], 1);
    /// assert_eq!((b.get(0), b.get(1), b.get(7)), (Some(false), Some(true), None));
    /// ```
    pub fn get(&self, i: usize) -> Option<bool> {
        (i < self.0.bits()).then(|| self.0.get(i))
    }

    /// Bits it holds from its offset on: the most rows it can cover.
    ///
    /// ```
    /// use keel_kernels::mask::Bits;
    /// assert_eq!(Bits::new(&[0u64, 0]).len(), 128);
    /// assert_eq!(Bits::with_offset(&[0u64, 0], 100).len(), 28);
    /// assert_eq!(Bits::from_bytes(&[0u8; 3], 4).len(), 20);
    /// ```
    pub fn len(&self) -> usize {
        self.0.bits()
    }

    /// Whether it covers no row.
    ///
    /// ```
    /// use keel_kernels::mask::Bits;
    /// assert!(Bits::new(&[]).is_empty());
    /// assert!(Bits::with_offset(&[!0u64], 64).is_empty());
    /// assert!(!Bits::from_bytes(&[0u8], 7).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn check(&self, what: &'static str, rows: usize) -> Result<(), Error> {
        if self.0.bits() >= rows {
            return Ok(());
        }
        let (needed, actual) = match self.0 {
            // Saturating: an absurd offset is an error, not an overflow.
            Bitmap::Words(w, o) => (o.saturating_add(rows).div_ceil(64), w.len()),
            Bitmap::Bytes(b, o) => (o.saturating_add(rows).div_ceil(8), b.len()),
        };
        Err(Error::BitmapTooShort {
            what,
            needed,
            actual,
        })
    }
}

impl<'a> From<&'a [u64]> for Bits<'a> {
    fn from(words: &'a [u64]) -> Self {
        Bits::new(words)
    }
}

impl<'a, const N: usize> From<&'a [u64; N]> for Bits<'a> {
    fn from(words: &'a [u64; N]) -> Self {
        Bits::new(words)
    }
}

#[cfg(feature = "alloc")]
impl<'a> From<&'a alloc::vec::Vec<u64>> for Bits<'a> {
    fn from(words: &'a alloc::vec::Vec<u64>) -> Self {
        Bits::new(words)
    }
}

/// The rows an operation reads.
#[derive(Clone, Copy, Debug, Default)]
pub enum Selection<'a> {
    /// Every row.
    #[default]
    All,
    /// The rows whose bit is set.
    Bitmap(Bits<'a>),
    /// The rows listed, in the order listed (repeats count again).
    Rows(&'a [u32]),
}

/// Validity and selection: a row counts when it is valid (or there is no
/// validity) and selected.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mask<'a> {
    /// Valid rows (`None`: every row is valid).
    pub validity: Option<Bits<'a>>,
    /// Selected rows.
    pub selection: Selection<'a>,
}

impl<'a> Mask<'a> {
    /// Every row.
    pub const ALL: Mask<'static> = Mask {
        validity: None,
        selection: Selection::All,
    };

    /// Rows valid under `validity`, all selected.
    pub fn valid(validity: impl Into<Bits<'a>>) -> Self {
        Mask {
            validity: Some(validity.into()),
            selection: Selection::All,
        }
    }

    /// This mask with `selection` as its selection.
    pub fn select(self, selection: Selection<'a>) -> Self {
        Mask { selection, ..self }
    }

    /// Checks the mask against `rows` and splits it into the bitmap part
    /// the leaves read and the selection vector, if any.
    pub(crate) fn resolve(self, rows: usize) -> Result<Resolved<'a>, Error> {
        if let Some(v) = self.validity {
            v.check("validity", rows)?;
        }
        let validity = self.validity.map(|b| b.0);
        match self.selection {
            Selection::All => Ok(Resolved::Bits(RowMask::new(validity, None))),
            Selection::Bitmap(s) => {
                s.check("selection bitmap", rows)?;
                Ok(Resolved::Bits(RowMask::new(validity, Some(s.0))))
            }
            Selection::Rows(r) => {
                if let Some(position) = r.iter().position(|&i| i as usize >= rows) {
                    return Err(Error::OutOfRange {
                        what: "selection vector row",
                        position,
                        index: u64::from(r[position]),
                        len: rows,
                    });
                }
                Ok(Resolved::Rows(r, RowMask::new(validity, None)))
            }
        }
    }
}

/// A mask checked against its rows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Resolved<'a> {
    /// Rows set in the bitmaps (every row without any).
    Bits(RowMask<'a>),
    /// The listed rows, each in range, that are set in the bitmaps.
    Rows(&'a [u32], RowMask<'a>),
}

/// A validity bitmap at offset 0 (`None`: every row valid).
impl<'a> From<Option<&'a [u64]>> for Mask<'a> {
    fn from(validity: Option<&'a [u64]>) -> Self {
        Mask {
            validity: validity.map(Bits::new),
            selection: Selection::All,
        }
    }
}

impl<'a> From<Selection<'a>> for Mask<'a> {
    fn from(selection: Selection<'a>) -> Self {
        Mask {
            validity: None,
            selection,
        }
    }
}
