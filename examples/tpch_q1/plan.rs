//! Q1 as an engine runs it on keel: a [`Runtime`] (a pool sized from the
//! topology, one heap per hand), a morsel-parallel fold with one partial
//! table per hand, and kernels inside the morsel loop.
//!
//! Per morsel, per block of [`BLOCK`] rows (so that the block's selection
//! and its columns stay in L1):
//! 1. the date predicate, `l_shipdate <= 1998-09-02`, is the kernels'
//!    `i32` compare into a selection bitmap;
//! 2. the group step adds the selected rows into the hand's `i64` table of
//!    the six (`l_returnflag`, `l_linestatus`) groups, computing
//!    `price · (100 - discount)` and `· (100 + tax)` on the way;
//! 3. at the end of the morsel the `i64` table is widened into the hand's
//!    `i128` sums (a morsel cannot overflow `i64`: [`MORSEL_SUM_ROWS`]).
//!
//! The hands' tables are added in hand order at the end; every sum is an
//! integer, so the answer does not depend on the width or on who took
//! which morsel.
//!
//! [`q1_grouped`] is the same plan with keel-kernels' grouped aggregate
//! (`GroupTable<i64>` over the flag pair, five value columns, the date
//! selection) as its group step; on the Zen 4 it measured slower than the
//! scalar group step above, so [`q1`] keeps the loop.

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
pub const BLOCK: usize = 2048;

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

/// Q1 over checked columns on `rt`.
pub fn q1(rt: &Runtime, l: Checked<'_>) -> Result<Answer, PlanError> {
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
            let dp = price[i] * (100 - disc[i]);
            t[0] += 1;
            t[1] += qty[i];
            t[2] += price[i];
            t[3] += disc[i];
            t[4] += dp;
            t[5] += dp * (100 + tax[i]);
        }
    }
}

/// One hand's state: the group table of the morsel at hand and the
/// block's computed columns (`price · (100 - discount)` and the charge).
struct GroupedHand {
    table: GroupTable<i64>,
    disc_price: Vec<i64>,
    charge: Vec<i64>,
    sel: Vec<u64>,
}

/// The six groups: `l_returnflag` codes 0..=2 by `l_linestatus` codes
/// 0..=1, slot `returnflag · 2 + linestatus` (`q1::group_of`).
fn groups() -> Result<Groups, PlanError> {
    Ok(Groups::pair(0..=2, 0..=1)?)
}

/// Q1 with the kernels' grouped aggregate as the group step: per block,
/// `price · (100 - discount)` and the charge computed into the hand's
/// scratch columns, then one `GroupTable<i64>::add` of the five value
/// columns over the flag pair with the date selection.
pub fn q1_grouped(rt: &Runtime, l: Checked<'_>) -> Result<Answer, PlanError> {
    let l = l.0;
    let layout = groups()?;
    let parts = rt.fold(
        l.len(),
        MORSEL,
        |_| None,
        |acc: &mut Option<([Sums; GROUPS], GroupedHand)>, rows, _| {
            let (sums, hand) = match acc {
                Some(a) => a,
                None => acc.insert((
                    [Sums::default(); GROUPS],
                    GroupedHand {
                        table: GroupTable::new(layout, 5, Aggs::SUM)?,
                        disc_price: vec![0; BLOCK],
                        charge: vec![0; BLOCK],
                        sel: vec![0; BLOCK / 64],
                    },
                )),
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
    hand: &mut GroupedHand,
    l: &Lineitem,
    rows: Range<usize>,
) -> Result<(), PlanError> {
    let GroupedHand {
        table,
        disc_price,
        charge,
        sel,
    } = hand;
    table.clear();
    let mut start = rows.start;
    while start < rows.end {
        let end = rows.end.min(start + BLOCK);
        let (r, n) = (start..end, end - start);
        let words = &mut sel[..n.div_ceil(64)];
        filter::compare(&l.shipdate[r.clone()], CmpOp::Le, SHIPDATE_MAX, words)?;
        let (price, disc, tax) = (
            &l.extendedprice[r.clone()],
            &l.discount[r.clone()],
            &l.tax[r.clone()],
        );
        let (dp, ch) = (&mut disc_price[..n], &mut charge[..n]);
        for i in 0..n {
            dp[i] = price[i] * (100 - disc[i]);
            ch[i] = dp[i] * (100 + tax[i]);
        }
        table.add(
            Keys::Pair(&l.returnflag[r.clone()], &l.linestatus[r.clone()]),
            &[&l.quantity[r], price, disc, dp, ch],
            Selection::Bitmap(Bits::new(words)),
        )?;
        start = end;
    }
    // A morsel's sums fit i64 (MORSEL <= MORSEL_SUM_ROWS): widen them.
    for (g, s) in acc.iter_mut().enumerate() {
        let t = &*table;
        s.merge(&Sums::from_i64(&[
            t.count(g) as i64,
            t.sum(g, 0),
            t.sum(g, 1),
            t.sum(g, 2),
            t.sum(g, 3),
            t.sum(g, 4),
        ]));
    }
    Ok(())
}
