//! TPC-H Q1's keel contender: the example's plan (`examples/tpch_q1`) on a
//! `keel_rt::Runtime` of `--threads` hands, keel-heap as the global
//! allocator. One process runs it; `bench/q1/run.sh` interleaves it with
//! the rayon contenders and DuckDB, a fresh process each.
//!
//! ```sh
//! cargo run --release --manifest-path bench/Cargo.toml --bin tpch_q1_keel -- \
//!     --dir bench/target/q1/sf1 --contender keel --threads 2 --reps 5
//! ```

#[path = "../../q1/common.rs"]
mod common;

// The example's plan, compiled here as it is there (it names its
// siblings `super::lineitem` and `super::q1`).
use common::{lineitem, q1};
#[path = "../../../examples/tpch_q1/plan.rs"]
mod plan;

#[global_allocator]
static GLOBAL: keel_heap::KeelAlloc = keel_heap::KeelAlloc;

/// Sums of every column Q1 reads, morsel-parallel.
fn read_all(rt: &keel_rt::Runtime, l: &lineitem::Lineitem) -> (u64, i64, u64) {
    use keel_rt::kernels::agg::sum;
    let parts = rt
        .fold(
            l.len(),
            plan::MORSEL,
            |_| (0u64, 0i64, 0u64),
            |acc, r, _| {
                acc.0 = acc.0.wrapping_add(sum(&l.quantity[r.clone()]));
                acc.1 = acc.1.wrapping_add(sum(&l.extendedprice[r.clone()]));
                let d = sum(&l.discount[r.clone()]);
                let t = sum(&l.tax[r.clone()]);
                let f = sum(&l.returnflag[r.clone()]) ^ sum(&l.linestatus[r.clone()]);
                let s = sum(&l.shipdate[r]);
                acc.2 = acc.2.wrapping_add(d ^ t ^ f ^ s as u64);
                Ok::<(), keel_rt::RuntimeError>(())
            },
        )
        .expect("read-all");
    parts.iter().fold((0, 0, 0), |a, p| {
        (a.0.wrapping_add(p.0), a.1.wrapping_add(p.1), a.2 ^ p.2)
    })
}

fn main() {
    let args = common::args();
    if let Some(sf) = args.gen_sf {
        common::generate(sf, &args.dir);
        return;
    }
    let pool = keel_rt::pool::Pool::builder()
        .width(args.threads)
        .build()
        .expect("pool");
    let rt =
        keel_rt::Runtime::from_parts(keel_rt::topology::Topology::detect(), pool).expect("runtime");
    let l = common::load(&args.dir);
    match args.contender.as_str() {
        "keel" => {
            let checked = plan::Checked::new(&l).expect("valid columns");
            common::measure(&args, || plan::q1(&rt, checked).expect("plan"))
        }
        // The yardstick: the same hands streaming the same bytes, every
        // column summed with the SIMD sum kernel and nothing else.
        "read-all" => {
            let want = (
                l.quantity.iter().map(|&q| u64::from(q)).sum::<u64>(),
                l.extendedprice.iter().map(|&p| i64::from(p)).sum::<i64>(),
            );
            common::measure_with(&args, &mut || read_all(&rt, &l), |got| {
                assert_eq!((got.0, got.1), want, "read-all: wrong sums")
            })
        }
        // The same plan with a scalar group step (a fused loop's).
        "keel-scalar" => {
            let checked = plan::Checked::new(&l).expect("valid columns");
            common::measure(&args, || plan::q1_scalar(&rt, checked).expect("plan"))
        }
        other => panic!("unknown contender {other:?} (keel, keel-scalar, read-all)"),
    }
}
