//! TPC-H Q1: its parameters, its answer, and the plain serial oracle every
//! plan is checked against.
//!
//! ```sql
//! select l_returnflag, l_linestatus,
//!        sum(l_quantity) as sum_qty,
//!        sum(l_extendedprice) as sum_base_price,
//!        sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
//!        sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
//!        avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price,
//!        avg(l_discount) as avg_disc, count(*) as count_order
//! from lineitem
//! where l_shipdate <= date '1998-12-01' - interval '90' day
//! group by l_returnflag, l_linestatus
//! order by l_returnflag, l_linestatus;
//! ```
//!
//! Decimal arithmetic is exact: price, discount and tax are hundredths
//! (quantity whole items), so `l_extendedprice * (1 - l_discount)` is
//! `price · (100 - discount)` in ten-thousandths and the charge
//! `· (100 + tax)` in millionths. Sums are
//! `i128` (a sum of charges passes `i64` near SF 60); a plan may sum a
//! morsel in `i64` and widen, as long as a morsel cannot overflow
//! ([`MORSEL_SUM_ROWS`]). Averages are the exact sums divided by the count
//! in `f64`, so two plans with equal sums give equal bits.

use super::lineitem::{LINESTATUSES, Lineitem, MAX_EXTENDEDPRICE, RETURNFLAGS, days_from_civil};
use std::fmt;

/// `date '1998-12-01' - interval '90' day`: 1998-09-02, as days since
/// 1970-01-01.
pub const SHIPDATE_MAX: i32 = days_from_civil(1998, 12, 1) - 90;

/// Groups: every (`l_returnflag`, `l_linestatus`) code pair, row-major in
/// (flag, status), so group order is the query's `order by`.
pub const GROUPS: usize = RETURNFLAGS.len() * LINESTATUSES.len();

/// The group of a row: `returnflag · 2 + linestatus`.
#[inline(always)]
pub fn group_of(returnflag: u8, linestatus: u8) -> usize {
    usize::from(returnflag) * LINESTATUSES.len() + usize::from(linestatus)
}

/// The largest charge of one row, in millionths.
pub const MAX_CHARGE: i64 = MAX_EXTENDEDPRICE as i64 * 100 * 108;
/// The largest discounted price of one row, in ten-thousandths: it fits
/// an `i32`, so a plan may compute it in 32-bit lanes.
pub const MAX_DISC_PRICE: i64 = MAX_EXTENDEDPRICE as i64 * 100;
const _: () = assert!(MAX_DISC_PRICE <= i32::MAX as i64);
/// Rows whose charges an `i64` holds whatever the data: a plan that sums a
/// morsel of at most this many rows in `i64` cannot overflow.
pub const MORSEL_SUM_ROWS: usize = (i64::MAX / MAX_CHARGE) as usize;

/// One group's running sums; the unit of every plan's partial state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    /// Rows.
    pub count: u64,
    /// Σ `l_quantity`, whole items.
    pub qty: i128,
    /// Σ `l_extendedprice`, cents.
    pub price: i128,
    /// Σ `l_discount`, hundredths.
    pub disc: i128,
    /// Σ `l_extendedprice · (1 - l_discount)`, ten-thousandths.
    pub disc_price: i128,
    /// Σ `l_extendedprice · (1 - l_discount) · (1 + l_tax)`, millionths.
    pub charge: i128,
}

impl Sums {
    /// A morsel's `i64` sums widened: count, quantity, price, discount,
    /// discounted price, charge.
    pub fn from_i64(t: &[i64; 6]) -> Sums {
        Sums {
            count: t[0] as u64,
            qty: t[1].into(),
            price: t[2].into(),
            disc: t[3].into(),
            disc_price: t[4].into(),
            charge: t[5].into(),
        }
    }

    /// Adds `other` in.
    #[inline]
    pub fn merge(&mut self, other: &Sums) {
        self.count += other.count;
        self.qty += other.qty;
        self.price += other.price;
        self.disc += other.disc;
        self.disc_price += other.disc_price;
        self.charge += other.charge;
    }
}

/// One row of Q1's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// `l_returnflag`.
    pub returnflag: u8,
    /// `l_linestatus`.
    pub linestatus: u8,
    /// The group's sums (`count_order` is `sums.count`).
    pub sums: Sums,
}

impl Row {
    /// `avg(l_quantity)`.
    pub fn avg_qty(&self) -> f64 {
        self.sums.qty as f64 / self.sums.count as f64
    }
    /// `avg(l_extendedprice)`.
    pub fn avg_price(&self) -> f64 {
        self.sums.price as f64 / 100.0 / self.sums.count as f64
    }
    /// `avg(l_discount)`.
    pub fn avg_disc(&self) -> f64 {
        self.sums.disc as f64 / 100.0 / self.sums.count as f64
    }
}

/// Q1's answer: the non-empty groups in `order by` order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// The rows.
    pub rows: Vec<Row>,
}

impl Answer {
    /// The answer from per-group sums indexed by [`group_of`].
    pub fn from_groups(groups: &[Sums; GROUPS]) -> Answer {
        let rows = groups
            .iter()
            .enumerate()
            .filter(|(_, s)| s.count > 0)
            .map(|(g, s)| Row {
                returnflag: RETURNFLAGS[g / LINESTATUSES.len()],
                linestatus: LINESTATUSES[g % LINESTATUSES.len()],
                sums: *s,
            })
            .collect();
        Answer { rows }
    }

    /// Rows counted, over all groups.
    pub fn count(&self) -> u64 {
        self.rows.iter().map(|r| r.sums.count).sum()
    }
}

/// A fixed-point decimal with `scale` digits after the point, printed
/// exactly.
pub struct Decimal(pub i128, pub u32);

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Decimal(v, scale) = *self;
        let p = 10i128.pow(scale);
        let sign = if v < 0 { "-" } else { "" };
        let (int, frac) = (v.unsigned_abs() / p as u128, v.unsigned_abs() % p as u128);
        if scale == 0 {
            write!(f, "{sign}{int}")
        } else {
            write!(f, "{sign}{int}.{frac:0w$}", w = scale as usize)
        }
    }
}

impl fmt::Display for Answer {
    /// The answer as dbgen's answer files lay it out (sums to the cent,
    /// exactly; averages to the cent).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "l|l|sum_qty|sum_base_price|sum_disc_price|sum_charge|avg_qty|avg_price|avg_disc|count_order"
        )?;
        for r in &self.rows {
            let s = &r.sums;
            writeln!(
                f,
                "{}|{}|{}|{}|{}|{}|{:.2}|{:.2}|{:.2}|{}",
                r.returnflag as char,
                r.linestatus as char,
                Decimal(s.qty * 100, 2),
                Decimal(s.price, 2),
                Decimal(round_to(s.disc_price, 2), 2),
                Decimal(round_to(s.charge, 4), 2),
                r.avg_qty(),
                r.avg_price(),
                r.avg_disc(),
                s.count
            )?;
        }
        Ok(())
    }
}

/// `v / 10^digits`, rounded half away from zero.
pub fn round_to(v: i128, digits: u32) -> i128 {
    let p = 10i128.pow(digits);
    let half = p / 2;
    if v >= 0 {
        (v + half) / p
    } else {
        (v - half) / p
    }
}

/// Q1, one row at a time, in `i128`: the oracle.
pub fn oracle(l: &Lineitem) -> Answer {
    let mut groups = [Sums::default(); GROUPS];
    for i in 0..l.len() {
        if l.shipdate[i] > SHIPDATE_MAX {
            continue;
        }
        let g = &mut groups[group_of(l.returnflag[i], l.linestatus[i])];
        let price = i128::from(l.extendedprice[i]);
        let disc_price = price * (100 - i128::from(l.discount[i]));
        g.count += 1;
        g.qty += i128::from(l.quantity[i]);
        g.price += price;
        g.disc += i128::from(l.discount[i]);
        g.disc_price += disc_price;
        g.charge += disc_price * (100 + i128::from(l.tax[i]));
    }
    Answer::from_groups(&groups)
}
