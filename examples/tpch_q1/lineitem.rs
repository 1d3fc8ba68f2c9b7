//! The columns of TPC-H `lineitem` that Q1 reads, generated with the rules
//! and random streams of the reference generator (dbgen 2.x), so that a
//! scale factor gives the same rows dbgen's `lineitem.tbl` holds: SF 1 is
//! 6,001,215 rows and Q1 over it gives the published answer.
//!
//! How dbgen makes a line (`mk_order`), per order `i = 1..=orders`:
//! * the order date `o = U(STARTDATE, STARTDATE + 2557 - 151 - 1)` (days
//!   from 1992-01-01 to 1998-08-02) and the line count `U(1, 7)`;
//! * per line: `l_quantity = U(1, 50)`, `l_discount = U(0, 10)` hundredths,
//!   `l_tax = U(0, 8)` hundredths, `l_partkey = U(1, 200,000 · SF)`;
//!   `l_extendedprice = quantity × retail price of the part`, the price in
//!   cents being `90,000 + (p / 10) mod 20,001 + 100 · (p mod 1,000)`;
//!   `l_shipdate = o + U(1, 121)`, `l_receiptdate = l_shipdate + U(1, 30)`;
//!   `l_returnflag` is `R` or `A` (even odds) if the receipt date is on or
//!   before the current date 1995-06-17, else `N`; `l_linestatus` is `F` if
//!   the ship date is on or before it, else `O`.
//!
//! `U(lo, hi)` is dbgen's `UnifInt`: the next value `s` of a Park-Miller
//! stream (`s · 16807 mod (2^31 - 1)`) scaled as `lo + ⌊s / (2^31 - 1) ·
//! (hi - lo + 1)⌋` in doubles. Every column has its own stream with its own
//! seed, and every order consumes a fixed budget of each stream (1 for the
//! order's, 7 for each line column's) whatever it used, so order `i` starts
//! at a known position of every stream: chunks of orders are generated in
//! parallel by jumping each stream there (`seed · 16807^k`).
//!
//! Scale factors follow dbgen: below 1, table sizes are the base sizes times
//! `⌊1000 · SF⌋ / 1000`; from 1 up, whole numbers only.
//!
//! Columns are stored narrow, as an engine that knows the schema's ranges
//! stores them (13 bytes a row): `l_quantity` as `u8` whole items (1..=50);
//! `l_discount` and `l_tax` as `u8` hundredths (0..=10, 0..=8);
//! `l_extendedprice` as `i32` cents (at most 50 · 209,900 = 10,495,000);
//! the two flags as `u8` codes into sorted dictionaries ([`RETURNFLAGS`],
//! [`LINESTATUSES`]; DuckDB's `ENUM`), so code order is string order;
//! `l_shipdate` as `i32` days since 1970-01-01 (Arrow's `Date32`, DuckDB's
//! `DATE`). The values are exactly the `DECIMAL(15,2)` ones of the schema,
//! in the units named.

use std::fmt;

/// The `l_returnflag` dictionary: code `c` stands for `RETURNFLAGS[c]`.
pub const RETURNFLAGS: [u8; 3] = [b'A', b'N', b'R'];
/// The `l_linestatus` dictionary: code `c` stands for `LINESTATUSES[c]`.
pub const LINESTATUSES: [u8; 2] = [b'F', b'O'];

/// Days from 1970-01-01 to the given date of the proleptic Gregorian
/// calendar (Howard Hinnant's `days_from_civil`).
pub const fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy as i32;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01 as `(year, month, day)`.
pub const fn civil_from_days(days: i32) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// 1992-01-01, dbgen's `STARTDATE`.
pub const START_DATE: i32 = days_from_civil(1992, 1, 1);
/// 1995-06-17, dbgen's `CURRENTDATE`: shipped and returned lines are
/// decided against it.
pub const CURRENT_DATE: i32 = days_from_civil(1995, 6, 17);

/// Lines of TPC-H `lineitem`, the columns Q1 reads.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Lineitem {
    /// `l_quantity`, whole items (1..=50).
    pub quantity: Vec<u8>,
    /// `l_extendedprice`, cents (at most [`MAX_EXTENDEDPRICE`]).
    pub extendedprice: Vec<i32>,
    /// `l_discount`, hundredths (0..=10).
    pub discount: Vec<u8>,
    /// `l_tax`, hundredths (0..=8).
    pub tax: Vec<u8>,
    /// `l_returnflag`, a code into [`RETURNFLAGS`].
    pub returnflag: Vec<u8>,
    /// `l_linestatus`, a code into [`LINESTATUSES`].
    pub linestatus: Vec<u8>,
    /// `l_shipdate`, days since 1970-01-01.
    pub shipdate: Vec<i32>,
}

impl fmt::Debug for Lineitem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lineitem({} rows)", self.len())
    }
}

impl Lineitem {
    /// Rows.
    pub fn len(&self) -> usize {
        self.shipdate.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.shipdate.is_empty()
    }

    /// Bytes of column data.
    pub fn bytes(&self) -> usize {
        self.len() * (1 + 4 + 1 + 1 + 1 + 1 + 4)
    }

    /// Checks that every column has the same length, every code is in its
    /// dictionary and every value in the range dbgen gives it, so a plan can
    /// index by code and compute in fixed widths without a check.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.len();
        let lens = [
            ("l_quantity", self.quantity.len()),
            ("l_extendedprice", self.extendedprice.len()),
            ("l_discount", self.discount.len()),
            ("l_tax", self.tax.len()),
            ("l_returnflag", self.returnflag.len()),
            ("l_linestatus", self.linestatus.len()),
        ];
        for (name, len) in lens {
            if len != n {
                return Err(format!("{name} has {len} rows, l_shipdate has {n}"));
            }
        }
        if let Some(i) = self
            .returnflag
            .iter()
            .position(|&c| usize::from(c) >= RETURNFLAGS.len())
        {
            return Err(format!(
                "l_returnflag row {i}: code {} is not in the dictionary of {}",
                self.returnflag[i],
                RETURNFLAGS.len()
            ));
        }
        if let Some(i) = self
            .linestatus
            .iter()
            .position(|&c| usize::from(c) >= LINESTATUSES.len())
        {
            return Err(format!(
                "l_linestatus row {i}: code {} is not in the dictionary of {}",
                self.linestatus[i],
                LINESTATUSES.len()
            ));
        }
        // The ranges the plans' fixed-width arithmetic relies on (and
        // dbgen's): a row's discounted price fits `i32`, its charge is at
        // most `q1::MAX_CHARGE`.
        let range = |name: &str, at: Option<usize>, what: &str| match at {
            Some(i) => Err(format!("{name} row {i}: {what}")),
            None => Ok(()),
        };
        range(
            "l_quantity",
            self.quantity.iter().position(|&q| !(1..=50).contains(&q)),
            "not in 1..=50",
        )?;
        range(
            "l_extendedprice",
            self.extendedprice
                .iter()
                .position(|&p| !(0..=MAX_EXTENDEDPRICE).contains(&p)),
            "not in 0..=MAX_EXTENDEDPRICE cents",
        )?;
        range(
            "l_discount",
            self.discount.iter().position(|&d| d > 10),
            "above 0.10",
        )?;
        range("l_tax", self.tax.iter().position(|&t| t > 8), "above 0.08")?;
        Ok(())
    }

    fn with_capacity(rows: usize) -> Lineitem {
        Lineitem {
            quantity: Vec::with_capacity(rows),
            extendedprice: Vec::with_capacity(rows),
            discount: Vec::with_capacity(rows),
            tax: Vec::with_capacity(rows),
            returnflag: Vec::with_capacity(rows),
            linestatus: Vec::with_capacity(rows),
            shipdate: Vec::with_capacity(rows),
        }
    }

    fn append(&mut self, mut other: Lineitem) {
        self.quantity.append(&mut other.quantity);
        self.extendedprice.append(&mut other.extendedprice);
        self.discount.append(&mut other.discount);
        self.tax.append(&mut other.tax);
        self.returnflag.append(&mut other.returnflag);
        self.linestatus.append(&mut other.linestatus);
        self.shipdate.append(&mut other.shipdate);
    }
}

/// A scale factor dbgen accepts, and the table sizes it gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    sf: f64,
    orders: u64,
    parts: u64,
}

/// Why a scale factor was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleError(String);

impl fmt::Display for ScaleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScaleError {}

const ORDERS_BASE: u64 = 1_500_000;
const PARTS_BASE: u64 = 200_000;
/// The largest scale factor this generator takes: 6 billion lines, far more
/// than fits in memory, and below dbgen's switch to 64-bit part keys.
pub const MAX_SF: f64 = 1000.0;

impl Scale {
    /// dbgen's sizes for scale factor `sf`: below 1, base sizes times
    /// `⌊1000 · sf⌋ / 1000` (at least one row each); from 1 up, a whole
    /// number times the base sizes.
    pub fn new(sf: f64) -> Result<Scale, ScaleError> {
        if !sf.is_finite() || sf <= 0.0 {
            return Err(ScaleError(format!(
                "scale factor {sf} is not a positive number"
            )));
        }
        if sf > MAX_SF {
            return Err(ScaleError(format!(
                "scale factor {sf} is above the largest supported, {MAX_SF}"
            )));
        }
        if sf < 1.0 {
            let milli = (1000.0 * sf) as u64;
            if milli == 0 {
                return Err(ScaleError(format!(
                    "scale factor {sf} is below 0.001, the smallest dbgen makes"
                )));
            }
            return Ok(Scale {
                sf,
                orders: (milli * ORDERS_BASE / 1000).max(1),
                parts: (milli * PARTS_BASE / 1000).max(1),
            });
        }
        if sf.fract() != 0.0 {
            return Err(ScaleError(format!(
                "scale factor {sf}: from 1 up dbgen takes whole numbers only"
            )));
        }
        let whole = sf as u64;
        Ok(Scale {
            sf,
            orders: whole * ORDERS_BASE,
            parts: whole * PARTS_BASE,
        })
    }

    /// The scale factor as given.
    pub fn sf(&self) -> f64 {
        self.sf
    }

    /// Orders (each has 1 to 7 lines).
    pub fn orders(&self) -> u64 {
        self.orders
    }

    /// Parts (the range of `l_partkey`).
    pub fn parts(&self) -> u64 {
        self.parts
    }
}

const MODULUS: u64 = 2_147_483_647;
const MULTIPLIER: u64 = 16_807;

/// One of dbgen's Park-Miller streams.
#[derive(Clone, Copy, Debug)]
struct Stream {
    value: u64,
    /// Values each order consumes, used or not.
    budget: u64,
    /// Values taken in the current order.
    used: u64,
}

impl Stream {
    /// The stream with dbgen's seed, placed at the start of order `first`
    /// (1-based).
    fn at_order(seed: u64, budget: u64, first: u64) -> Stream {
        let skip = (first - 1) * budget;
        Stream {
            value: seed * pow_mod(MULTIPLIER, skip) % MODULUS,
            budget,
            used: 0,
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.value = self.value * MULTIPLIER % MODULUS;
        self.used += 1;
        self.value
    }

    /// dbgen's `UnifInt(lo, hi)`, in doubles as dbgen computes it.
    #[inline]
    fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        let range = (hi - lo + 1) as f64;
        let v = self.next() as f64;
        lo + (v / MODULUS as f64 * range) as i64
    }

    /// dbgen's `row_stop`: skip what this order did not use of its budget.
    #[inline]
    fn end_order(&mut self) {
        while self.used < self.budget {
            self.next();
        }
        self.used = 0;
    }
}

/// `base^exp mod (2^31 - 1)`.
fn pow_mod(mut base: u64, mut exp: u64) -> u64 {
    let mut acc = 1u64;
    base %= MODULUS;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc * base % MODULUS;
        }
        base = base * base % MODULUS;
        exp >>= 1;
    }
    acc
}

// dbgen's seeds (`rnd.h`) for the streams Q1's columns come from.
const O_ODATE_SEED: u64 = 1_066_728_069;
const O_LCNT_SEED: u64 = 1_434_868_289;
const L_QTY_SEED: u64 = 209_208_115;
const L_DCNT_SEED: u64 = 554_590_007;
const L_TAX_SEED: u64 = 721_958_466;
const L_PKEY_SEED: u64 = 1_808_217_256;
const L_SDTE_SEED: u64 = 1_769_349_045;
const L_RDTE_SEED: u64 = 373_135_028;
const L_RFLG_SEED: u64 = 717_419_739;
const LINES_MAX: u64 = 7;

/// The largest `l_extendedprice` dbgen makes, in cents: 50 items at the
/// highest retail price (90,000 + 20,000 + 99,900 cents).
pub const MAX_EXTENDEDPRICE: i32 = 50 * 209_900;

/// dbgen's retail price of part `p`, in cents.
pub fn retail_price(p: i64) -> i64 {
    90_000 + (p / 10) % 20_001 + (p % 1_000) * 100
}

/// Orders `first..first + count` (1-based).
fn generate_orders(scale: Scale, first: u64, count: u64) -> Lineitem {
    let at = |seed, budget| Stream::at_order(seed, budget, first);
    let mut odate = at(O_ODATE_SEED, 1);
    let mut lcnt = at(O_LCNT_SEED, 1);
    let mut qty = at(L_QTY_SEED, LINES_MAX);
    let mut dcnt = at(L_DCNT_SEED, LINES_MAX);
    let mut tax = at(L_TAX_SEED, LINES_MAX);
    let mut pkey = at(L_PKEY_SEED, LINES_MAX);
    let mut sdte = at(L_SDTE_SEED, LINES_MAX);
    let mut rdte = at(L_RDTE_SEED, LINES_MAX);
    let mut rflg = at(L_RFLG_SEED, LINES_MAX);
    let mut out = Lineitem::with_capacity((count * LINES_MAX) as usize);
    // Order dates run from STARTDATE to ENDDATE less the longest ship and
    // receipt delays (121 + 30 days) less one.
    let last_odate = i64::from(START_DATE) + 2557 - (121 + 30) - 1;
    let parts = scale.parts as i64;
    for _ in 0..count {
        let o = odate.uniform(i64::from(START_DATE), last_odate);
        let lines = lcnt.uniform(1, LINES_MAX as i64);
        for _ in 0..lines {
            let q = qty.uniform(1, 50);
            let d = dcnt.uniform(0, 10);
            let t = tax.uniform(0, 8);
            let p = pkey.uniform(1, parts);
            let ship = o + sdte.uniform(1, 121);
            let receipt = ship + rdte.uniform(1, 30);
            let flag = if receipt <= i64::from(CURRENT_DATE) {
                // pick_str over the distribution {R: 1, A: 1}.
                if rflg.uniform(1, 2) == 1 { 2 } else { 0 }
            } else {
                1
            };
            let status = u8::from(ship > i64::from(CURRENT_DATE));
            // In range by construction: q <= 50, d <= 10, t <= 8, and the
            // price at most MAX_EXTENDEDPRICE.
            out.quantity.push(q as u8);
            out.extendedprice.push((q * retail_price(p)) as i32);
            out.discount.push(d as u8);
            out.tax.push(t as u8);
            out.returnflag.push(flag);
            out.linestatus.push(status);
            out.shipdate.push(ship as i32);
        }
        for s in [
            &mut odate, &mut lcnt, &mut qty, &mut dcnt, &mut tax, &mut pkey, &mut sdte, &mut rdte,
            &mut rflg,
        ] {
            s.end_order();
        }
    }
    out
}

/// `lineitem` at `scale`, generated on up to `threads` threads in chunks of
/// orders; the rows do not depend on `threads`.
pub fn generate(scale: Scale, threads: usize) -> Lineitem {
    const CHUNK_ORDERS: u64 = 1 << 16;
    let chunks = scale.orders.div_ceil(CHUNK_ORDERS);
    let threads = threads.clamp(1, chunks.max(1) as usize);
    let next = std::sync::atomic::AtomicU64::new(0);
    let mut parts: Vec<(u64, Lineitem)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if c >= chunks {
                            return mine;
                        }
                        let first = 1 + c * CHUNK_ORDERS;
                        let count = CHUNK_ORDERS.min(scale.orders - c * CHUNK_ORDERS);
                        mine.push((c, generate_orders(scale, first, count)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a generator thread panicked"))
            .collect()
    });
    parts.sort_by_key(|(c, _)| *c);
    let rows: usize = parts.iter().map(|(_, l)| l.len()).sum();
    let mut all = Lineitem::with_capacity(rows);
    for (_, l) in parts {
        all.append(l);
    }
    all
}
