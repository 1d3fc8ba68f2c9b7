//! The hot-slot bookkeeping the x86-64 grouped leaves share (AVX2 and
//! AVX-512): which slots a leaf keeps in registers, and their keys as the
//! leaves' byte compares see them.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;
use crate::arch::scalar::grouped::{KeyCols, Table, Weights};

/// Slots kept in registers.
pub(crate) const HOT: usize = 8;

/// Rows of block `b` that exist in a column of `n` rows.
#[inline(always)]
pub(crate) fn lim(n: usize, b: usize) -> u64 {
    let rows = n - b * 64;
    if rows >= 64 { !0 } else { (1u64 << rows) - 1 }
}

/// A hot slot's key as the compares see it.
#[derive(Clone, Copy, Default)]
pub(crate) struct HotKey {
    pub(crate) slot: usize,
    pub(crate) a: u8,
    pub(crate) b: u8,
}

/// Key bytes of row `i`: the code (and 0), or the pair.
#[inline(always)]
pub(crate) fn key_bytes(keys: &KeyCols<'_>, i: usize) -> (u8, u8) {
    match *keys {
        KeyCols::Pair { a, b, .. } => (a[i], b[i]),
        KeyCols::U8(k) => (k[i], 0),
        // Not called for two-byte codes (the leaves' contract).
        KeyCols::U16(_) => (0, 0),
    }
}

/// Every slot of a layout of `slots` (at most [`HOT`]) slots, as hot keys.
pub(crate) fn every_slot(keys: &KeyCols<'_>, slots: usize) -> ([HotKey; HOT], usize) {
    let mut hot = [HotKey::default(); HOT];
    for (slot, h) in hot.iter_mut().enumerate().take(slots) {
        let (a, b) = match *keys {
            KeyCols::Pair {
                a_lo, b_lo, b_span, ..
            } => (
                a_lo.wrapping_add((slot / b_span) as u8),
                b_lo.wrapping_add((slot % b_span) as u8),
            ),
            _ => (slot as u8, 0),
        };
        *h = HotKey { slot, a, b };
    }
    (hot, slots.min(HOT))
}

/// The first distinct slots (up to [`HOT`]) among the first counted rows
/// (up to 256 of them), so that the first chunk already runs in registers.
pub(crate) fn seed_hot(keys: &KeyCols<'_>, m: RowMask<'_>, n: usize) -> ([HotKey; HOT], usize) {
    let mut hot = [HotKey::default(); HOT];
    let (mut n_hot, mut seen) = (0, 0);
    for b in 0..n.div_ceil(64) {
        let mut w = m.word(b) & lim(n, b);
        while w != 0 && seen < 256 && n_hot < HOT {
            let i = b * 64 + w.trailing_zeros() as usize;
            let slot = keys.slot(i);
            if !hot[..n_hot].iter().any(|h| h.slot == slot) {
                let (a, bk) = key_bytes(keys, i);
                hot[n_hot] = HotKey { slot, a, b: bk };
                n_hot += 1;
            }
            seen += 1;
            w &= w - 1;
        }
        if seen >= 256 || n_hot == HOT {
            break;
        }
    }
    (hot, n_hot)
}

/// Whether the first counted rows (up to 256) name a slot outside the
/// `n_hot` hot ones [`seed_hot`] found: a hot set that does not cover even
/// the call's start.
pub(crate) fn spreads(
    keys: &KeyCols<'_>,
    m: RowMask<'_>,
    n: usize,
    (hot, n_hot): (&[HotKey; HOT], usize),
) -> bool {
    let mut seen = 0;
    for b in 0..n.div_ceil(64) {
        let mut w = m.word(b) & lim(n, b);
        while w != 0 && seen < 256 {
            let slot = keys.slot(b * 64 + w.trailing_zeros() as usize);
            if !hot[..n_hot].iter().any(|h| h.slot == slot) {
                return true;
            }
            seen += 1;
            w &= w - 1;
        }
        if seen >= 256 {
            break;
        }
    }
    false
}

/// One chunk's pass A bookkeeping, shared by the leaves: the hot slots'
/// rows counted from their bits, the other rows added to the table one at
/// a time (the first slots seen among them named to join the hot set),
/// and which hot slots had rows.
pub(crate) struct ChunkA {
    others: usize,
    pending: [HotKey; HOT],
    n_pending: usize,
    seen: [u64; HOT],
}

impl ChunkA {
    pub(crate) fn new() -> ChunkA {
        ChunkA {
            others: 0,
            pending: [HotKey::default(); HOT],
            n_pending: 0,
            seen: [0; HOT],
        }
    }

    /// Block `b`, whose counted rows are `w` and whose first `n_hot` hot
    /// slots' rows (each within `w`) are `hm`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn block<T: Num>(
        &mut self,
        t: &mut Table<'_, T>,
        (keys, values, weights): (&KeyCols<'_>, &[&[T]], Weights<'_, '_>),
        (hot, n_hot): (&[HotKey; HOT], usize),
        b: usize,
        w: u64,
        hm: &[u64; HOT],
    ) {
        let mut covered = 0;
        for h in 0..n_hot {
            t.counts[hot[h].slot] += u64::from(hm[h].count_ones());
            covered |= hm[h];
            self.seen[h] |= hm[h];
        }
        let mut rest = w & !covered;
        while rest != 0 {
            let i = b * 64 + rest.trailing_zeros() as usize;
            let slot = keys.slot(i);
            t.add_row(slot, i, values, weights);
            self.others += 1;
            let pending = &self.pending[..self.n_pending];
            if n_hot + self.n_pending < HOT && !pending.iter().any(|p| p.slot == slot) {
                let (a, bk) = key_bytes(keys, i);
                self.pending[self.n_pending] = HotKey { slot, a, b: bk };
                self.n_pending += 1;
            }
            rest &= rest - 1;
        }
    }

    /// The hot slots (of the first `n_hot`) with rows in the chunk, and
    /// how many.
    pub(crate) fn active(&self, n_hot: usize) -> ([usize; HOT], usize) {
        let mut active = [0usize; HOT];
        let mut n_active = 0;
        for (h, &rows) in self.seen.iter().enumerate().take(n_hot) {
            if rows != 0 {
                active[n_active] = h;
                n_active += 1;
            }
        }
        (active, n_active)
    }

    /// Adds the named slots to the hot set; whether the set has stopped
    /// covering the rows: full, nothing named, and other slots holding
    /// more than an eighth of the chunk's `rows`.
    pub(crate) fn finish(self, hot: &mut [HotKey; HOT], n_hot: &mut usize, rows: usize) -> bool {
        hot[*n_hot..*n_hot + self.n_pending].copy_from_slice(&self.pending[..self.n_pending]);
        *n_hot += self.n_pending;
        *n_hot == HOT && self.n_pending == 0 && self.others > rows / 8
    }
}
