//! TPC-H Q1's rayon contenders, mimalloc as the global allocator: one
//! process runs one contender (see `bench/q1/run.sh`, which interleaves
//! them with keel and DuckDB, a fresh process each).
//!
//! * `rayon-fused`: the loop a competent engineer writes with rayon: chunks
//!   of rows folded in parallel, each chunk one pass that tests the date and
//!   adds the row into a local `i64` table of the six groups, widened into
//!   `i128` per chunk, tables reduced at the end.
//! * `rayon-arrow`: rayon over record batches, each batch computed with
//!   arrow-rs compute kernels: `lt_eq` on the date, the expressions with
//!   `sub`/`mul`/`add` (wrapping: no row can overflow), and per group a
//!   mask (`eq` on each flag, `and` with the date mask) that becomes the
//!   validity of zero-copy views of the columns, summed with `sum`.
//!
//! Both read the same columns as keel (`i64` hundredths and cents, `u8`
//! dictionary codes, `i32` days).
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin tpch_q1_rayon -- \
//!     --dir bench/target/q1/sf1 --contender rayon-fused --threads 2 --reps 5
//! ```

#[path = "../../q1/common.rs"]
mod common;

use arrow_arith::{aggregate, boolean, numeric};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, Scalar, UInt8Array};
use arrow_buffer::NullBuffer;
use arrow_ord::cmp;
use common::lineitem::{LINESTATUSES, Lineitem, RETURNFLAGS};
use common::q1::{Answer, GROUPS, SHIPDATE_MAX, Sums, group_of};
use rayon::prelude::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rows per rayon task of the fused loop.
const FUSED_CHUNK: usize = 16 * 1024;
/// Rows per arrow record batch (DataFusion's default batch size).
const ARROW_BATCH: usize = 8 * 1024;

fn fused(l: &Lineitem) -> Answer {
    let n = l.len();
    let zero = || [Sums::default(); GROUPS];
    let groups = (0..n.div_ceil(FUSED_CHUNK))
        .into_par_iter()
        .fold(zero, |mut acc, c| {
            let r = c * FUSED_CHUNK..n.min((c + 1) * FUSED_CHUNK);
            let mut t = [[0i64; 6]; GROUPS];
            let rows = l.shipdate[r.clone()]
                .iter()
                .zip(&l.returnflag[r.clone()])
                .zip(&l.linestatus[r.clone()])
                .zip(&l.quantity[r.clone()])
                .zip(&l.extendedprice[r.clone()])
                .zip(&l.discount[r.clone()])
                .zip(&l.tax[r]);
            for ((((((&d, &f), &s), &q), &p), &disc), &tax) in rows {
                if d <= SHIPDATE_MAX {
                    let g = &mut t[group_of(f, s)];
                    let (p, disc) = (i64::from(p), i64::from(disc));
                    let dp = p * (100 - disc);
                    g[0] += 1;
                    g[1] += i64::from(q);
                    g[2] += p;
                    g[3] += disc;
                    g[4] += dp;
                    g[5] += dp * (100 + i64::from(tax));
                }
            }
            for (a, t) in acc.iter_mut().zip(&t) {
                a.merge(&Sums::from_i64(t));
            }
            acc
        })
        .reduce(zero, |mut a, b| {
            for (x, y) in a.iter_mut().zip(&b) {
                x.merge(y);
            }
            a
        });
    Answer::from_groups(&groups)
}

/// The columns as arrow arrays (built once, outside the timing).
struct ArrowLineitem {
    quantity: UInt8Array,
    extendedprice: Int32Array,
    discount: UInt8Array,
    tax: UInt8Array,
    returnflag: UInt8Array,
    linestatus: UInt8Array,
    shipdate: Int32Array,
}

impl ArrowLineitem {
    fn new(l: Lineitem) -> Self {
        ArrowLineitem {
            quantity: UInt8Array::from(l.quantity),
            extendedprice: Int32Array::from(l.extendedprice),
            discount: UInt8Array::from(l.discount),
            tax: UInt8Array::from(l.tax),
            returnflag: UInt8Array::from(l.returnflag),
            linestatus: UInt8Array::from(l.linestatus),
            shipdate: Int32Array::from(l.shipdate),
        }
    }
}

fn arrow_batch(a: &ArrowLineitem, off: usize, len: usize) -> [Sums; GROUPS] {
    let date = a.shipdate.slice(off, len);
    let wide8 = |v: &UInt8Array| v.slice(off, len).unary::<_, Int64Type>(i64::from);
    let qty = wide8(&a.quantity);
    let price = (a.extendedprice.slice(off, len)).unary::<_, Int64Type>(i64::from);
    let (disc, tax) = (wide8(&a.discount), wide8(&a.tax));
    let (rf, ls) = (a.returnflag.slice(off, len), a.linestatus.slice(off, len));
    let in_range = cmp::lt_eq(&date, &Int32Array::new_scalar(SHIPDATE_MAX)).expect("lt_eq");
    let hundred = Int64Array::new_scalar(100);
    let one_minus = numeric::sub_wrapping(&hundred, &disc).expect("sub");
    let disc_price = numeric::mul_wrapping(&price, &one_minus).expect("mul");
    let one_plus = numeric::add_wrapping(&tax, &hundred).expect("add");
    let charge = numeric::mul_wrapping(&disc_price, &one_plus).expect("mul");
    let values: [ArrayRef; 5] = [
        std::sync::Arc::new(qty),
        std::sync::Arc::new(price),
        std::sync::Arc::new(disc),
        disc_price,
        charge,
    ];
    let mut out = [Sums::default(); GROUPS];
    for (f, _) in RETURNFLAGS.iter().enumerate() {
        let is_f = cmp::eq(&rf, &Scalar::new(UInt8Array::from(vec![f as u8]))).expect("eq");
        let f_mask = boolean::and(&in_range, &is_f).expect("and");
        for (s, _) in LINESTATUSES.iter().enumerate() {
            let is_s = cmp::eq(&ls, &Scalar::new(UInt8Array::from(vec![s as u8]))).expect("eq");
            let mask: BooleanArray = boolean::and(&f_mask, &is_s).expect("and");
            let count = mask.true_count();
            if count == 0 {
                continue;
            }
            let nulls = NullBuffer::new(mask.values().clone());
            let sum = |v: &ArrayRef| -> i128 {
                let v = v.as_primitive::<Int64Type>();
                let masked = Int64Array::new(v.values().clone(), Some(nulls.clone()));
                aggregate::sum(&masked).unwrap_or(0).into()
            };
            out[group_of(f as u8, s as u8)] = Sums {
                count: count as u64,
                qty: sum(&values[0]),
                price: sum(&values[1]),
                disc: sum(&values[2]),
                disc_price: sum(&values[3]),
                charge: sum(&values[4]),
            };
        }
    }
    out
}

fn arrow(a: &ArrowLineitem) -> Answer {
    let n = a.shipdate.len();
    let zero = || [Sums::default(); GROUPS];
    let groups = (0..n.div_ceil(ARROW_BATCH))
        .into_par_iter()
        .map(|b| arrow_batch(a, b * ARROW_BATCH, ARROW_BATCH.min(n - b * ARROW_BATCH)))
        .reduce(zero, |mut a, b| {
            for (x, y) in a.iter_mut().zip(&b) {
                x.merge(y);
            }
            a
        });
    Answer::from_groups(&groups)
}

fn main() {
    let args = common::args();
    if let Some(sf) = args.gen_sf {
        common::generate(sf, &args.dir);
        return;
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build_global()
        .expect("rayon pool");
    let l = common::load(&args.dir);
    match args.contender.as_str() {
        "rayon-fused" => common::measure(&args, || fused(&l)),
        "rayon-arrow" => {
            let a = ArrowLineitem::new(l);
            common::measure(&args, || arrow(&a))
        }
        other => panic!("unknown contender {other:?} (rayon-fused, rayon-arrow)"),
    }
}
