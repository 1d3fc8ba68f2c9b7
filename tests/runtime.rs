//! The facade's Runtime against single-threaded oracles, at several widths.
#![cfg(all(
    feature = "std",
    feature = "topology",
    feature = "pool",
    feature = "heap",
    feature = "kernels"
))]

use keel_rt::kernels::filter::{CmpOp, Predicate};
use keel_rt::pool::Pool;
use keel_rt::topology::Topology;
use keel_rt::{MORSEL_ROWS, Runtime};

fn runtimes() -> Vec<Runtime> {
    [1, 2, 3]
        .into_iter()
        .map(|w| {
            let pool = Pool::builder().width(w).build().expect("pool");
            Runtime::from_parts(Topology::detect(), pool).expect("runtime")
        })
        .collect()
}

/// A deterministic pseudo-random column (splitmix64).
fn column(n: usize, seed: u64) -> Vec<i64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as i64
        })
        .collect()
}

#[test]
fn sum_matches_a_serial_wrapping_sum_at_every_width() {
    let col = column(5 * MORSEL_ROWS + 123, 7);
    let want = col.iter().fold(0i64, |a, &b| a.wrapping_add(b));
    for rt in runtimes() {
        assert_eq!(rt.sum(&col).unwrap(), want, "width {}", rt.pool().width());
        assert_eq!(rt.sum::<i64>(&[]).unwrap(), 0);
    }
}

#[test]
fn float_sum_does_not_depend_on_width() {
    let col: Vec<f64> = column(4 * MORSEL_ROWS + 5, 3)
        .iter()
        .map(|&x| (x % 1_000_003) as f64 * 1e-3)
        .collect();
    let sums: Vec<u64> = runtimes()
        .iter()
        .map(|rt| rt.sum(&col).unwrap().to_bits())
        .collect();
    assert!(sums.windows(2).all(|w| w[0] == w[1]), "{sums:?}");
}

#[test]
fn filter_count_matches_a_serial_count() {
    let col: Vec<i32> = column(3 * MORSEL_ROWS + 77, 11)
        .iter()
        .map(|&x| (x % 1000) as i32)
        .collect();
    for rt in runtimes() {
        for (op, c) in [(CmpOp::Lt, 0), (CmpOp::Ge, 500), (CmpOp::Eq, 7)] {
            let p = Predicate::Cmp(op, c);
            let want = col.iter().filter(|&&x| p.eval(x)).count();
            assert_eq!(rt.filter_count(&col, p).unwrap(), want);
        }
        assert_eq!(
            rt.filter_count(&col, Predicate::Between(-10, 10)).unwrap(),
            col.iter().filter(|&&x| (-10..=10).contains(&x)).count()
        );
    }
}

#[test]
fn count_distinct_is_within_a_few_standard_errors() {
    for distinct in [1_000u64, 200_000] {
        let col: Vec<i64> = (0..400_000u64).map(|i| (i % distinct) as i64).collect();
        for rt in runtimes() {
            let n = rt.count_distinct_i64(&col).unwrap() as f64;
            let err = (n - distinct as f64).abs() / distinct as f64;
            // p = 14: standard error 0.81%; 4 sigma.
            assert!(
                err < 0.033,
                "distinct {distinct}: estimate {n}, width {}",
                rt.pool().width()
            );
        }
        for rt in runtimes() {
            assert_eq!(rt.count_distinct_i64(&[]).unwrap(), 0);
        }
    }
}

#[test]
fn span_within_budget_returns_min_and_max() {
    let col: Vec<i64> = (0..3 * MORSEL_ROWS as i64)
        .map(|i| 1_000 + i % 500)
        .collect();
    for rt in runtimes() {
        assert_eq!(rt.span_within(&col, 499).unwrap(), Some((1_000, 1_499)));
        assert_eq!(rt.span_within(&col, 498).unwrap(), None);
        assert_eq!(rt.span_within::<i64>(&[], 0).unwrap(), None);
    }
}

#[test]
fn span_exceeded_only_across_morsels_is_caught() {
    // Each morsel alone is within budget; together they are not.
    let mut col = vec![0i64; 2 * MORSEL_ROWS];
    for v in &mut col[MORSEL_ROWS..] {
        *v = 10_000;
    }
    for rt in runtimes() {
        assert_eq!(
            rt.span_within(&col, 100).unwrap(),
            None,
            "width {}",
            rt.pool().width()
        );
        assert_eq!(rt.span_within(&col, 10_000).unwrap(), Some((0, 10_000)));
    }
}

#[test]
fn fold_gives_one_accumulator_per_hand_covering_every_row_once() {
    let col = column(7 * MORSEL_ROWS / 3 + 11, 5);
    for rt in runtimes() {
        let parts = rt
            .fold(
                col.len(),
                1000,
                |cx| (cx.index(), Vec::new()),
                |(index, rows), r, cx| {
                    assert_eq!(*index, cx.index(), "a hand sees only its accumulator");
                    assert!(cx.index() < cx.width());
                    rows.push(r);
                    Ok::<(), keel_rt::RuntimeError>(())
                },
            )
            .unwrap();
        assert!(parts.len() <= rt.pool().width());
        let mut all: Vec<_> = parts.into_iter().flat_map(|(_, r)| r).collect();
        all.sort_by_key(|r| r.start);
        let mut next = 0;
        for r in all {
            assert_eq!(r.start, next);
            next = r.end;
        }
        assert_eq!(next, col.len());
    }
}

#[test]
fn fold_scratch_comes_from_the_hands_heap() {
    for rt in runtimes() {
        let parts = rt
            .fold(
                100_000,
                4096,
                |_| 0u64,
                |acc, r, cx| {
                    let p = cx.heap().alloc(r.len() * 8, 8);
                    assert!(!p.is_null());
                    // SAFETY: `p` holds r.len() * 8 writable bytes.
                    unsafe { p.write_bytes(1, r.len() * 8) };
                    *acc += r.len() as u64;
                    // SAFETY: `p` came from this heap and is freed once.
                    unsafe { cx.heap().free(p) };
                    Ok::<(), keel_rt::RuntimeError>(())
                },
            )
            .unwrap();
        assert_eq!(parts.iter().sum::<u64>(), 100_000);
    }
}

#[test]
fn fold_returns_the_first_error_and_stops_claiming() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for rt in runtimes() {
        let ran = AtomicUsize::new(0);
        let r = rt.fold(
            1_000_000,
            100,
            |_| (),
            |_, r, _| {
                ran.fetch_add(1, Ordering::Relaxed);
                if r.start >= 500 {
                    Err(keel_rt::RuntimeError::Heap)
                } else {
                    Ok(())
                }
            },
        );
        assert!(matches!(r, Err(keel_rt::RuntimeError::Heap)));
        // Morsel 5 fails; each hand starts at most one more after that.
        let ran = ran.into_inner();
        assert!(ran <= 6 + rt.pool().width(), "{ran} morsels ran");
    }
}

#[test]
fn each_hand_is_lent_the_same_heap_every_fold() {
    for rt in runtimes() {
        let heaps = || {
            let mut v = rt
                .fold(
                    64 * MORSEL_ROWS,
                    MORSEL_ROWS,
                    |cx| (cx.index(), cx.heap().id()),
                    |_, _, _| Ok::<(), keel_rt::RuntimeError>(()),
                )
                .unwrap();
            v.sort();
            v
        };
        let (first, second) = (heaps(), heaps());
        // Hands of one fold have heaps of their own.
        let mut ids: Vec<usize> = first.iter().map(|&(_, id)| id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), first.len(), "{first:?}");
        // A hand index gets the runtime's heap for it, fold after fold.
        for (h, id) in &second {
            if let Some((_, was)) = first.iter().find(|(g, _)| g == h) {
                assert_eq!(id, was, "hand {h}");
            }
        }
    }
}

#[test]
fn a_nested_fold_works_in_heaps_of_its_own() {
    let rt = &runtimes()[0]; // one hand: the nesting is deterministic
    let parts = rt
        .fold(
            2,
            1,
            |cx| cx.heap().id(),
            |outer, _, _| {
                let inner = rt.fold(
                    10,
                    1,
                    |cx| cx.heap().id(),
                    |_, _, _| Ok::<(), keel_rt::RuntimeError>(()),
                )?;
                assert!(inner.iter().all(|id| id != outer), "{inner:?} {outer}");
                Ok::<(), keel_rt::RuntimeError>(())
            },
        )
        .unwrap();
    assert_eq!(parts.len(), 1);
    // The outer hand's heap, not the nested fold's spare, is the runtime's
    // heap for hand 0 afterwards.
    let after = rt
        .fold(
            1,
            1,
            |cx| cx.heap().id(),
            |_, _, _| Ok::<(), keel_rt::RuntimeError>(()),
        )
        .unwrap();
    assert_eq!(after, parts);
}

#[test]
fn fold_nested_in_a_fold_works() {
    for rt in runtimes() {
        let parts = rt
            .fold(
                8,
                1,
                |_| 0u64,
                |acc, _, _| {
                    let inner = rt.fold(
                        1000,
                        10,
                        |_| 0u64,
                        |a, r, _| {
                            *a += r.len() as u64;
                            Ok::<(), keel_rt::RuntimeError>(())
                        },
                    )?;
                    *acc += inner.iter().sum::<u64>();
                    Ok::<(), keel_rt::RuntimeError>(())
                },
            )
            .unwrap();
        assert_eq!(parts.iter().sum::<u64>(), 8000);
    }
}

#[test]
fn runtime_reads_placement_and_widths_from_settings() {
    use keel_rt::heap::Placement;
    use keel_rt::pool::settings::Settings;
    use keel_rt::{RuntimeConfig, WorkKind};

    let s = Settings::parse("KEEL_WORKERS=3\nKEEL_PLACEMENT=interleave\nKEEL_WIDTH_SCAN=2\n");
    let rt = Runtime::with_settings(Topology::detect(), s).unwrap();
    assert_eq!(rt.pool().width(), 3);
    assert_eq!(rt.config().placement, Placement::Interleave);
    assert_eq!(rt.width_for(WorkKind::Scan), 2);
    assert_eq!(rt.width_for(WorkKind::Gather), 3);
    // A fold is a scan: two hands (a hand that found no morsel left has
    // no accumulator).
    let parts = rt
        .fold(
            1 << 20,
            1024,
            |cx| cx.width(),
            |_, _, _| Ok::<(), keel_rt::RuntimeError>(()),
        )
        .unwrap();
    assert!(
        parts.iter().all(|&w| w == 2) && (1..=2).contains(&parts.len()),
        "{parts:?}"
    );
    // Placement never fails a caller, and asks for what the settings say:
    // interleaving over the machine's nodes (applied, or refused by the
    // kernel, as in a container without the right), never nothing.
    let col = vec![1u64; 1 << 16];
    let out = rt.place(&col);
    let nodes: Vec<u32> = rt
        .topology()
        .numa_nodes()
        .iter()
        .map(|n| n.os_index)
        .collect();
    match out {
        keel_rt::heap::PlacementOutcome::Applied { policy, nodes: m }
        | keel_rt::heap::PlacementOutcome::Fallback {
            policy, nodes: m, ..
        } => {
            assert_eq!(policy, keel_rt::heap::Policy::Interleave, "{out}");
            assert_eq!(m.iter().collect::<Vec<_>>(), nodes, "{out}");
        }
        keel_rt::heap::PlacementOutcome::NoOp(r) => {
            assert!(
                nodes.is_empty(),
                "interleave over {nodes:?} did nothing: {r}"
            );
        }
    }

    // Each placement the parser accepts maps to the heap's.
    for (v, want) in [
        ("auto", Placement::Auto),
        ("default", Placement::Default),
        ("node:3", Placement::Node(3)),
    ] {
        let c = RuntimeConfig::from_settings(&Settings::parse(&format!("KEEL_PLACEMENT={v}")), 4);
        assert_eq!(c.placement, want, "{v}");
        assert!(c.notes.is_empty());
    }
    // A bad value is the parser's note, and the default applies.
    let s = Settings::parse("KEEL_PLACEMENT=node:x\nKEEL_WIDTH_COMPUTE=0\n");
    assert_eq!(s.notes().len(), 2, "{:?}", s.notes());
    let c = RuntimeConfig::from_settings(&s, 4);
    assert_eq!(
        (c.placement, c.width(WorkKind::Compute)),
        (Placement::Auto, 4)
    );
    // A width above the pool's is capped, with a note.
    let c = RuntimeConfig::from_settings(&Settings::parse("KEEL_WIDTH_SCAN=64"), 4);
    assert_eq!(c.width(WorkKind::Scan), 4);
    assert_eq!(c.notes.len(), 1);
}

#[test]
fn a_panicking_morsel_resumes_in_the_caller_and_the_heaps_come_back() {
    for rt in runtimes() {
        let ids = |rt: &Runtime| {
            let mut v = rt
                .fold(
                    1,
                    1,
                    |cx| cx.heap().id(),
                    |_, _, _| Ok::<(), keel_rt::RuntimeError>(()),
                )
                .unwrap();
            v.sort();
            v
        };
        let before = ids(&rt);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.fold(
                100,
                1,
                |_| (),
                |_, r, _| {
                    assert!(r.start != 50, "morsel 50 fails");
                    Ok::<(), keel_rt::RuntimeError>(())
                },
            )
        }));
        assert!(r.is_err(), "the panic resumed in the caller");
        assert_eq!(ids(&rt), before, "width {}", rt.pool().width());
    }
}
