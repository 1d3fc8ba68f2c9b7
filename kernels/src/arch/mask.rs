//! Which rows a leaf counts, as the leaves read it: up to two bitmaps (the
//! validity and a selection), each with a bit offset, and-ed together a
//! 64-row block at a time. The safe layer has checked that every bitmap
//! covers the rows; a leaf asks for block words and single bits only.

/// One bitmap as the leaves read it: row `i` is bit `offset + i`, in `u64`
/// words (bit `j % 64` of word `j / 64`) or in little-endian bytes (bit
/// `j % 8` of byte `j / 8`, arrow's layout).
#[derive(Clone, Copy, Debug)]
pub enum Bitmap<'a> {
    /// `u64` words and a bit offset.
    Words(&'a [u64], usize),
    /// Bytes and a bit offset.
    Bytes(&'a [u8], usize),
}

impl<'a> Bitmap<'a> {
    /// Bits this bitmap holds past its offset.
    pub(crate) fn bits(&self) -> usize {
        match *self {
            Bitmap::Words(w, o) => w.len().saturating_mul(64).saturating_sub(o),
            Bitmap::Bytes(b, o) => b.len().saturating_mul(8).saturating_sub(o),
        }
    }

    /// The 64 bits of rows `64 * blk ..`; bits past the bitmap's end are 0.
    #[inline(always)]
    pub(crate) fn word(&self, blk: usize) -> u64 {
        match *self {
            Bitmap::Words(w, o) => {
                let bit = o + blk * 64;
                let (k, s) = (bit / 64, bit % 64);
                let lo = w.get(k).copied().unwrap_or(0);
                if s == 0 {
                    lo
                } else {
                    (lo >> s) | (w.get(k + 1).copied().unwrap_or(0) << (64 - s))
                }
            }
            Bitmap::Bytes(b, o) => {
                let bit = o + blk * 64;
                let (k, s) = (bit / 8, bit % 8);
                let lo = le_u64(b, k);
                if s == 0 {
                    lo
                } else {
                    (lo >> s) | (u64::from(b.get(k + 8).copied().unwrap_or(0)) << (64 - s))
                }
            }
        }
    }

    /// Row `i`'s bit.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> bool {
        match *self {
            Bitmap::Words(w, o) => w[(o + i) / 64] >> ((o + i) % 64) & 1 == 1,
            Bitmap::Bytes(b, o) => b[(o + i) / 8] >> ((o + i) % 8) & 1 == 1,
        }
    }

    /// The same bitmap from row `rows` on.
    #[cfg_attr(
        not(any(
            all(target_arch = "x86_64", target_feature = "sse2"),
            target_arch = "aarch64"
        )),
        allow(dead_code) // the SIMD leaves' scalar tails use it
    )]
    #[inline(always)]
    pub(crate) fn skip(self, rows: usize) -> Bitmap<'a> {
        match self {
            Bitmap::Words(w, o) => Bitmap::Words(w, o + rows),
            Bitmap::Bytes(b, o) => Bitmap::Bytes(b, o + rows),
        }
    }
}

/// Eight little-endian bytes from `b[k..]`, zeros past its end.
#[inline(always)]
fn le_u64(b: &[u8], k: usize) -> u64 {
    match b.get(k..k + 8) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_le_bytes(a)
        }
        None => {
            let mut a = [0u8; 8];
            let tail = b.get(k..).unwrap_or(&[]);
            a[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(a)
        }
    }
}

/// The rows a leaf counts: those set in every bitmap present (none present:
/// every row).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowMask<'a> {
    a: Option<Bitmap<'a>>,
    b: Option<Bitmap<'a>>,
}

impl<'a> RowMask<'a> {
    /// Every row.
    pub(crate) const ALL: RowMask<'static> = RowMask { a: None, b: None };

    /// The rows set in `a` and in `b` (each optional).
    pub(crate) fn new(a: Option<Bitmap<'a>>, b: Option<Bitmap<'a>>) -> Self {
        match (a, b) {
            (None, b) => RowMask { a: b, b: None },
            (a, b) => RowMask { a, b },
        }
    }

    /// The bitmaps, the first present if any is.
    #[inline(always)]
    pub(crate) fn parts(&self) -> (Option<Bitmap<'a>>, Option<Bitmap<'a>>) {
        (self.a, self.b)
    }

    /// Whether every row counts.
    #[inline(always)]
    pub(crate) fn is_all(&self) -> bool {
        self.a.is_none()
    }

    /// The only bitmap's words from row 0 on, when there is one bitmap and
    /// it is `u64` words at a bit offset that is a multiple of 64 (row `i`
    /// is then bit `i % 64` of word `i / 64`); `None` otherwise.
    #[cfg_attr(
        not(all(target_arch = "x86_64", target_feature = "sse2")),
        allow(dead_code) // the AVX2 and AVX-512 counts use it
    )]
    #[inline(always)]
    pub(crate) fn aligned_words(&self) -> Option<&'a [u64]> {
        match (self.a, self.b) {
            (Some(Bitmap::Words(w, o)), None) if o % 64 == 0 => w.get(o / 64..),
            _ => None,
        }
    }

    /// The mask word of rows `64 * blk .. 64 * blk + 64` (all ones without
    /// bitmaps; bits past the rows are whatever the bitmaps hold there).
    #[inline(always)]
    pub(crate) fn word(&self, blk: usize) -> u64 {
        match (self.a, self.b) {
            (None, _) => !0,
            (Some(a), None) => a.word(blk),
            (Some(a), Some(b)) => a.word(blk) & b.word(blk),
        }
    }

    /// Whether row `i` counts.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.a.is_none_or(|a| a.get(i)) && self.b.is_none_or(|b| b.get(i))
    }

    /// The same mask from row `rows` on (a leaf's scalar tail).
    #[cfg_attr(
        not(any(
            all(target_arch = "x86_64", target_feature = "sse2"),
            target_arch = "aarch64"
        )),
        allow(dead_code) // the SIMD leaves' scalar tails use it
    )]
    #[inline(always)]
    pub(crate) fn skip(self, rows: usize) -> RowMask<'a> {
        RowMask {
            a: self.a.map(|a| a.skip(rows)),
            b: self.b.map(|b| b.skip(rows)),
        }
    }
}
