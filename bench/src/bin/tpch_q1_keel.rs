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
        other => panic!("unknown contender {other:?} (keel)"),
    }
}
