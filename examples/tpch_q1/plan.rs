//! Q1 as an engine runs it on keel: a [`Runtime`] (a pool sized from the
//! topology, one heap per hand), a morsel-parallel fold with one partial
//! state per hand, and kernels inside the morsel loop.
//!
//! [`q1`], per morsel, per block of [`BLOCK`] rows:
//! 1. the date predicate, `l_shipdate <= 1998-09-02`, is the kernels'
//!    `i32` compare into a selection bitmap;
//! 2. the block's two decimal factors go into the hand's scratch as `u16`
//!    columns (a plain loop the compiler vectorises in 16-bit lanes):
//!    `100 - discount` and `(100 - discount) · (100 + tax)` (at most
//!    10,800);
//! 3. the group step is keel-kernels' grouped sums over the flag pair with
//!    the date selection, one call per value type: `GroupTable<u8>` for
//!    quantity and discount, and a weighted `GroupTable<i32>` for the
//!    price three times, unweighted, weighted by the first factor (the
//!    discounted price) and by the second (the charge): the products are
//!    formed in the kernel's 64-bit lanes, never stored. Six groups, so
//!    the AVX-512 leaf keeps every group's sums in registers;
//! 4. at the end of the morsel the tables are widened into the hand's
//!    `i128` sums (a morsel cannot overflow `i64`: [`MORSEL_SUM_ROWS`]).
//!
//! [`q1_scalar`] is the same plan with a scalar group step: one pass over
//! the selected rows adding each into a six-row `i64` table, as a fused
//! loop does; it is here to measure what the kernel's group step is worth.
//!
//! The hands' states are added in hand order at the end; every sum is an
//! integer, so the answer does not depend on the width or on who took
//! which morsel.

use super::lineitem::Lineitem;
use super::q1::{Answer, GROUPS, MORSEL_SUM_ROWS, SHIPDATE_MAX, Sums, group_of};
use keel_rt::kernels::filter::{self, CmpOp};
use keel_rt::kernels::grouped::{Aggs, GroupTable, Groups, Keys};
use keel_rt::kernels::mask::{Bits, Selection};
use keel_rt::{Runtime, RuntimeError};
use std::fmt;
use std::ops::Range;

/// Rows a hand claims at a time.
pub const MORSEL: usize = 64 * 1024;
/// Rows the kernels see at a time inside a morsel.
pub const BLOCK: usize = 4096;

// Morsels hold whole blocks and blocks whole bitmap words.
const _: () = assert!(MORSEL <= MORSEL_SUM_ROWS && MORSEL / BLOCK * BLOCK == MORSEL);
const _: () = assert!(BLOCK / 64 * 64 == BLOCK);

/// Why the plan did not run.
#[derive(Debug)]
pub enum PlanError {
    /// The columns are not a valid `lineitem` (lengths differ, a code is
    /// outside its dictionary).
    Input(String),
    /// The runtime or a kernel failed.
    Runtime(RuntimeError),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Input(e) => write!(f, "bad lineitem columns: {e}"),
            PlanError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PlanError {}

impl From<RuntimeError> for PlanError {
    fn from(e: RuntimeError) -> Self {
        PlanError::Runtime(e)
    }
}

impl From<keel_rt::kernels::Error> for PlanError {
    fn from(e: keel_rt::kernels::Error) -> Self {
        PlanError::Runtime(RuntimeError::Kernel(e))
    }
}

/// One morsel's sums in `i64`: count, quantity, price, discount,
/// discounted price, charge, per group.
type Table = [[i64; 6]; GROUPS];

/// Columns checked once, when they are loaded, as an engine checks data on
/// the way in: every column has the same length and every code is in its
/// dictionary.
#[derive(Clone, Copy, Debug)]
pub struct Checked<'a>(&'a Lineitem);

impl<'a> Checked<'a> {
    /// Checks `l`.
    pub fn new(l: &'a Lineitem) -> Result<Checked<'a>, PlanError> {
        l.validate().map_err(PlanError::Input)?;
        Ok(Checked(l))
    }
}

/// Q1 over checked columns on `rt`, with the scalar group step.
pub fn q1_scalar(rt: &Runtime, l: Checked<'_>) -> Result<Answer, PlanError> {
    let l = l.0;
    let parts = rt.fold(
        l.len(),
        MORSEL,
        |_| [Sums::default(); GROUPS],
        |acc, rows, _| morsel(acc, l, rows),
    )?;
    let mut groups = [Sums::default(); GROUPS];
    for p in &parts {
        for (g, s) in groups.iter_mut().zip(p) {
            g.merge(s);
        }
    }
    Ok(Answer::from_groups(&groups))
}

fn morsel(acc: &mut [Sums; GROUPS], l: &Lineitem, rows: Range<usize>) -> Result<(), PlanError> {
    let mut table: Table = [[0; 6]; GROUPS];
    let mut sel = [0u64; BLOCK / 64];
    let mut start = rows.start;
    while start < rows.end {
        let end = rows.end.min(start + BLOCK);
        let n = end - start;
        let words = &mut sel[..n.div_ceil(64)];
        filter::compare(&l.shipdate[start..end], CmpOp::Le, SHIPDATE_MAX, words)?;
        group_step(&mut table, l, start..end, words);
        start = end;
    }
    for (s, t) in acc.iter_mut().zip(&table) {
        s.merge(&Sums::from_i64(t));
    }
    Ok(())
}

/// Adds the selected rows of `rows` into `table`.
fn group_step(table: &mut Table, l: &Lineitem, rows: Range<usize>, sel: &[u64]) {
    let (rf, ls) = (&l.returnflag[rows.clone()], &l.linestatus[rows.clone()]);
    let (qty, price) = (&l.quantity[rows.clone()], &l.extendedprice[rows.clone()]);
    let (disc, tax) = (&l.discount[rows.clone()], &l.tax[rows]);
    for (w, &word) in sel.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let t = &mut table[group_of(rf[i], ls[i])];
            let (p, d) = (i64::from(price[i]), i64::from(disc[i]));
            let dp = p * (100 - d);
            t[0] += 1;
            t[1] += i64::from(qty[i]);
            t[2] += p;
            t[3] += d;
            t[4] += dp;
            t[5] += dp * (100 + i64::from(tax[i]));
        }
    }
}

/// One hand's state: the morsel's group tables (one per value type) and
/// the block's decimal factors.
struct Hand {
    narrow: GroupTable<u8>,
    price: GroupTable<i32>,
    disc: Vec<u16>,
    disc_tax: Vec<u16>,
    sel: Vec<u64>,
}

impl Hand {
    fn new() -> Result<Hand, PlanError> {
        // The six groups: `l_returnflag` codes 0..=2 by `l_linestatus`
        // codes 0..=1, slot `returnflag · 2 + linestatus` (`q1::group_of`).
        let groups = Groups::pair(0..=2, 0..=1)?;
        Ok(Hand {
            narrow: GroupTable::new(groups, 2, Aggs::SUM)?,
            price: GroupTable::new(groups, 3, Aggs::SUM)?,
            disc: vec![0; BLOCK],
            disc_tax: vec![0; BLOCK],
            sel: vec![0; BLOCK / 64],
        })
    }
}

/// Q1 over checked columns on `rt`, with keel-kernels' grouped sums as the
/// group step (see the module docs).
pub fn q1(rt: &Runtime, l: Checked<'_>) -> Result<Answer, PlanError> {
    let l = l.0;
    let parts = rt.fold(
        l.len(),
        MORSEL,
        |_| None,
        |acc: &mut Option<([Sums; GROUPS], Hand)>, rows, _| {
            let (sums, hand) = match acc {
                Some(a) => a,
                None => acc.insert(([Sums::default(); GROUPS], Hand::new()?)),
            };
            grouped_morsel(sums, hand, l, rows)
        },
    )?;
    let mut total = [Sums::default(); GROUPS];
    for (sums, _) in parts.iter().flatten() {
        for (g, s) in total.iter_mut().zip(sums) {
            g.merge(s);
        }
    }
    Ok(Answer::from_groups(&total))
}

fn grouped_morsel(
    acc: &mut [Sums; GROUPS],
    hand: &mut Hand,
    l: &Lineitem,
    rows: Range<usize>,
) -> Result<(), PlanError> {
    let Hand {
        narrow,
        price,
        disc,
        disc_tax,
        sel,
    } = hand;
    narrow.clear();
    price.clear();
    let mut start = rows.start;
    while start < rows.end {
        let end = rows.end.min(start + BLOCK);
        let (r, n) = (start..end, end - start);
        let words = &mut sel[..n.div_ceil(64)];
        filter::compare(&l.shipdate[r.clone()], CmpOp::Le, SHIPDATE_MAX, words)?;
        let (f1, f2) = (&mut disc[..n], &mut disc_tax[..n]);
        let (d, t) = (&l.discount[r.clone()], &l.tax[r.clone()]);
        for (((f1, f2), &d), &t) in f1.iter_mut().zip(f2.iter_mut()).zip(d).zip(t) {
            // Checked columns: d <= 10 and t <= 8, so no u16 overflows.
            *f1 = 100 - u16::from(d);
            *f2 = *f1 * (100 + u16::from(t));
        }
        let keys = Keys::Pair(&l.returnflag[r.clone()], &l.linestatus[r.clone()]);
        let selected = || Selection::Bitmap(Bits::new(words));
        narrow.add(keys, &[&l.quantity[r.clone()], d], selected())?;
        let p = &l.extendedprice[r];
        price.add_weighted(keys, &[p, p, p], &[None, Some(f1), Some(f2)], selected())?;
        start = end;
    }
    // A morsel's sums fit i64 (MORSEL <= MORSEL_SUM_ROWS): widen them.
    for (g, s) in acc.iter_mut().enumerate() {
        s.merge(&Sums::from_i64(&[
            narrow.count(g) as i64,
            narrow.sum(g, 0) as i64,
            price.sum(g, 0),
            narrow.sum(g, 1) as i64,
            price.sum(g, 1),
            price.sum(g, 2),
        ]));
    }
    Ok(())
}
