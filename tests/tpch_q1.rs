//! The TPC-H Q1 example, run as a user runs it, and its generator and plan
//! checked against dbgen's rows and the serial oracle at several widths.
#![cfg(all(
    feature = "std",
    feature = "topology",
    feature = "pool",
    feature = "heap",
    feature = "kernels"
))]

#[path = "../examples/tpch_q1/main.rs"]
mod example;

use example::lineitem::{self, Lineitem, Scale, civil_from_days};
use example::{plan, q1};
use keel_rt::Runtime;
use keel_rt::pool::Pool;
use keel_rt::topology::Topology;

fn runtime(width: usize) -> Runtime {
    let pool = Pool::builder().width(width).build().expect("pool");
    Runtime::from_parts(Topology::detect(), pool).expect("runtime")
}

/// SF 0.05: 75,000 orders, about 300,000 lines: several morsels.
fn sf005() -> Lineitem {
    lineitem::generate(Scale::new(0.05).unwrap(), 2)
}

#[test]
fn the_example_runs_and_agrees_with_the_oracle() {
    let args = ["tpch_q1", "--sf", "0.01", "--workers", "2", "--repeat", "1"];
    let r = example::run(args.iter().map(Into::into)).expect("the example runs");
    assert!(r.ok, "{}", r.text);
    assert!(r.text.contains("60175 rows"), "{}", r.text);
    assert_eq!(r.answer.rows.len(), 4, "{}", r.text);
}

#[test]
fn the_example_refuses_bad_arguments() {
    for args in [
        &["tpch_q1", "--sf", "0"][..],
        &["tpch_q1", "--sf", "1.5"],
        &["tpch_q1", "--sf", "nan"],
        &["tpch_q1", "--sf", "0.0001"],
        &["tpch_q1", "--workers", "0"],
        &["tpch_q1", "--bogus"],
    ] {
        let e = example::run(args.iter().map(Into::into)).err();
        assert!(e.is_some(), "{args:?} was accepted");
    }
}

#[test]
fn generator_matches_dbgen() {
    // dbgen's row counts: SF 0.01 has 60,175 lines.
    let l = lineitem::generate(Scale::new(0.01).unwrap(), 3);
    assert_eq!(l.len(), 60_175);
    assert!(l.validate().is_ok());
    // The first lines of lineitem.tbl (order 1): quantity, discount, tax,
    // ship date; prices depend on the part count, so on the scale.
    let want = [
        (17, 4, 2, (1996, 3, 13)),
        (36, 9, 6, (1996, 4, 12)),
        (8, 10, 2, (1996, 1, 29)),
        (28, 9, 6, (1996, 4, 21)),
        (24, 10, 4, (1996, 3, 30)),
        (32, 7, 2, (1996, 1, 30)),
    ];
    for (i, &(q, d, t, date)) in want.iter().enumerate() {
        assert_eq!(
            (l.quantity[i], l.discount[i], l.tax[i]),
            (q, d, t),
            "row {i}"
        );
        assert_eq!(civil_from_days(l.shipdate[i]), date, "row {i}");
        // Order 1's lines are all still open (N, O).
        assert_eq!((l.returnflag[i], l.linestatus[i]), (1, 1));
    }
    // The rows do not depend on how many threads made them.
    assert_eq!(lineitem::generate(Scale::new(0.01).unwrap(), 1), l);
}

#[test]
fn generator_follows_dbgens_rules() {
    let l = sf005();
    let cutoff = lineitem::CURRENT_DATE;
    for i in 0..l.len() {
        let (q, p) = (l.quantity[i], l.extendedprice[i]);
        assert!((1..=50).contains(&q), "row {i}");
        assert_eq!(
            p % i32::from(q),
            0,
            "row {i}: price is quantity times a retail price"
        );
        assert!((0..=10).contains(&l.discount[i]) && (0..=8).contains(&l.tax[i]));
        let ship = l.shipdate[i];
        assert!(
            (lineitem::days_from_civil(1992, 1, 2)..=lineitem::days_from_civil(1998, 12, 1))
                .contains(&ship)
        );
        assert_eq!(l.linestatus[i], u8::from(ship > cutoff), "row {i}");
        // Not yet received (N) only for lines shipped in the last 30 days
        // before the current date or later.
        if l.returnflag[i] != 1 {
            assert!(ship < cutoff, "row {i}");
        }
    }
}

#[test]
fn scale_factors_are_dbgens() {
    assert_eq!(Scale::new(1.0).unwrap().orders(), 1_500_000);
    assert_eq!(Scale::new(0.01).unwrap().orders(), 15_000);
    assert_eq!(Scale::new(0.01).unwrap().parts(), 2_000);
    assert_eq!(Scale::new(10.0).unwrap().parts(), 2_000_000);
    for bad in [0.0, -1.0, 0.0004, 2.5, f64::INFINITY, f64::NAN, 1e6] {
        assert!(Scale::new(bad).is_err(), "{bad}");
    }
}

#[test]
fn plan_equals_the_oracle_at_every_width() {
    let l = sf005();
    assert!(l.len() > 4 * plan::MORSEL);
    let want = q1::oracle(&l);
    assert_eq!(
        want.count(),
        l.shipdate
            .iter()
            .filter(|&&d| d <= q1::SHIPDATE_MAX)
            .count() as u64
    );
    for w in [1, 2, 3] {
        let (rt, checked) = (runtime(w), plan::Checked::new(&l).unwrap());
        assert_eq!(plan::q1(&rt, checked).unwrap(), want, "width {w}");
        assert_eq!(plan::q1_scalar(&rt, checked).unwrap(), want, "width {w}");
    }
}

#[test]
fn plan_handles_empty_and_unselected_input() {
    let rt = runtime(2);
    assert_eq!(
        plan::q1(&rt, plan::Checked::new(&Lineitem::default()).unwrap()).unwrap(),
        q1::Answer::default()
    );
    let mut l = lineitem::generate(Scale::new(0.001).unwrap(), 1);
    for d in &mut l.shipdate {
        *d = q1::SHIPDATE_MAX + 1;
    }
    assert_eq!(
        plan::q1(&rt, plan::Checked::new(&l).unwrap()).unwrap(),
        q1::Answer::default()
    );
    // One row on the cutoff date counts.
    l.shipdate[17] = q1::SHIPDATE_MAX;
    let a = plan::q1(&rt, plan::Checked::new(&l).unwrap()).unwrap();
    assert_eq!((a.count(), a.rows.len()), (1, 1));
    assert_eq!(a, q1::oracle(&l));
    assert_eq!(
        plan::q1_scalar(&rt, plan::Checked::new(&l).unwrap()).unwrap(),
        a
    );
}

#[test]
fn plan_refuses_bad_columns() {
    let mut l = lineitem::generate(Scale::new(0.001).unwrap(), 1);
    l.tax.pop();
    let e = plan::Checked::new(&l).unwrap_err();
    assert!(e.to_string().contains("l_tax"), "{e}");
    let mut l = lineitem::generate(Scale::new(0.001).unwrap(), 1);
    l.returnflag[5] = 3;
    let e = plan::Checked::new(&l).unwrap_err();
    assert!(e.to_string().contains("l_returnflag row 5"), "{e}");
    // Values outside the ranges the plans compute in.
    let good = lineitem::generate(Scale::new(0.001).unwrap(), 1);
    let mut l = good.clone();
    l.extendedprice[9] = lineitem::MAX_EXTENDEDPRICE + 1;
    let e = plan::Checked::new(&l).unwrap_err();
    assert!(e.to_string().contains("l_extendedprice row 9"), "{e}");
    let mut l = good.clone();
    l.discount[3] = 11;
    let e = plan::Checked::new(&l).unwrap_err();
    assert!(e.to_string().contains("l_discount row 3"), "{e}");
    let mut l = good.clone();
    l.quantity[4] = 0;
    let e = plan::Checked::new(&l).unwrap_err();
    assert!(e.to_string().contains("l_quantity row 4"), "{e}");
    let mut l = good;
    l.tax[2] = 9;
    let e = plan::Checked::new(&l).unwrap_err();
    assert!(e.to_string().contains("l_tax row 2"), "{e}");
}
