//! A reduction whose combine order depends only on the number of morsels:
//! a fixed pairwise tree over morsel indices, combined by the hands as its
//! subtrees complete.
//!
//! Leaf `i` is morsel `i`. Node `j` of level `l + 1` has children `2j` and
//! `2j + 1` of level `l` (the second only if it exists); it covers the
//! morsels of both, and its value is `combine(left, right)`. The hand that
//! completes a node's second child combines the two and carries on up; the
//! first to arrive leaves its value and stops. So every value is combined
//! with the same neighbour in the same order however many hands there are
//! and whoever finishes first: floats give the same bits at any width.
//!
//! A child's value is written by the one hand that completed the child,
//! before it arrives at the parent (`fetch_add`, AcqRel); it is read by the
//! one hand that arrives second, whose `fetch_add` acquired the first's
//! release.

use crate::sync::{AtomicUsize, Ordering, UnsafeCell};

/// One node: its value once complete (until its parent takes it), and how
/// many of its children have arrived.
struct Node<T> {
    value: UnsafeCell<Option<T>>,
    arrived: AtomicUsize,
}

/// The tree of one reduction over `n` morsels.
pub(crate) struct Tree<T> {
    /// `levels[0]` has `n` leaves; each next level half as many, rounded
    /// up, down to one root.
    levels: Vec<Box<[Node<T>]>>,
}

// SAFETY: a node's value is written by one hand and then read by one hand,
// ordered by the parent's `arrived` RMWs (module comment), so sharing the
// tree between hands needs only `T: Send`.
unsafe impl<T: Send> Sync for Tree<T> {}

impl<T> Tree<T> {
    /// A tree over `n >= 1` morsels.
    pub(crate) fn new(n: usize) -> Self {
        assert!(n >= 1);
        let mut levels = Vec::new();
        let mut width = n;
        loop {
            levels.push(
                (0..width)
                    .map(|_| Node {
                        value: UnsafeCell::new(None),
                        arrived: AtomicUsize::new(0),
                    })
                    .collect::<Box<[_]>>(),
            );
            if width == 1 {
                break;
            }
            width = width.div_ceil(2);
        }
        Tree { levels }
    }

    /// Hands in leaf `i`'s value and combines up the tree as far as this
    /// hand completes nodes. Each leaf is completed once.
    pub(crate) fn complete(&self, i: usize, mut value: T, combine: &impl Fn(T, T) -> T) {
        let (mut level, mut j) = (0, i);
        loop {
            let width = self.levels[level].len();
            if width == 1 {
                // The root.
                // SAFETY: the root is completed once, by this hand, and
                // read only after the batch.
                self.levels[level][0]
                    .value
                    .with_mut(|p| unsafe { *p = Some(value) });
                return;
            }
            let sibling = j ^ 1;
            if sibling >= width {
                // A lone left child: its parent's value is its own.
                level += 1;
                j /= 2;
                continue;
            }
            let node = &self.levels[level][j];
            // SAFETY: this hand completed node `j`; nobody reads its value
            // before arriving second at the parent, after the RMW below.
            node.value.with_mut(|p| unsafe { *p = Some(value) });
            let parent = &self.levels[level + 1][j / 2];
            // AcqRel: Release publishes our value to the second arrival;
            // Acquire (when we are second) sees the sibling's.
            if parent.arrived.fetch_add(1, Ordering::AcqRel) == 0 {
                return;
            }
            // SAFETY: both children have arrived; we are the only hand to
            // see the count go to 2, so we alone take their values.
            let mine = node.value.with_mut(|p| unsafe { (*p).take() });
            let sibling = &self.levels[level][sibling];
            // SAFETY: as above: the sibling's hand wrote it before its
            // arrival, which our `fetch_add` acquired.
            let theirs = sibling.value.with_mut(|p| unsafe { (*p).take() });
            let (Some(mine), Some(theirs)) = (mine, theirs) else {
                unreachable!("both children arrived with their values");
            };
            value = if j % 2 == 0 {
                combine(mine, theirs)
            } else {
                combine(theirs, mine)
            };
            level += 1;
            j /= 2;
        }
    }

    /// The root's value, once every leaf was completed (None otherwise: a
    /// morsel or a combine panicked, or the loop stopped early).
    pub(crate) fn into_root(self) -> Option<T> {
        let mut levels = self.levels;
        let root = levels.pop()?;
        root.into_vec().pop()?.value.into_inner()
    }
}

/// The same tree, serially: the order `Tree` combines in, for tests.
#[cfg(test)]
pub(crate) fn serial<T>(mut values: Vec<T>, combine: impl Fn(T, T) -> T) -> Option<T> {
    while values.len() > 1 {
        let mut next = Vec::with_capacity(values.len().div_ceil(2));
        let mut it = values.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => combine(a, b),
                None => a,
            });
        }
        values = next;
    }
    values.pop()
}

#[cfg(all(test, not(keel_loom)))]
mod tests {
    use super::*;

    /// Any completion order gives the serial tree's result.
    #[test]
    fn any_order_gives_the_serial_tree() {
        for n in 1..if cfg!(miri) { 12 } else { 40usize } {
            let want = serial((0..n).map(|i| vec![i]).collect(), |mut a, b| {
                a.push(usize::MAX);
                a.extend(b);
                a
            });
            for rot in [0, 1, n / 2, n - 1] {
                let t = Tree::new(n);
                for k in 0..n {
                    // Completions in a rotated, reversed order.
                    let i = (n - 1 - k + rot) % n;
                    t.complete(i, vec![i], &|mut a: Vec<usize>, b| {
                        a.push(usize::MAX);
                        a.extend(b);
                        a
                    });
                }
                assert_eq!(t.into_root(), want, "n {n} rot {rot}");
            }
        }
    }

    /// A tree missing a leaf has no root, and drops what it holds.
    #[test]
    fn incomplete_tree_has_no_root() {
        let t = Tree::new(5);
        for i in [0, 1, 3, 4] {
            t.complete(i, String::from("x"), &|a, b| a + &b);
        }
        assert_eq!(t.into_root(), None);
    }
}

#[cfg(all(test, keel_loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{Arc, thread};

    /// Two hands complete the leaves of a three-morsel tree in every
    /// interleaving: the root is the serial tree's, and each value was
    /// handed over once.
    #[test]
    fn loom_tree_two_hands() {
        loom::model(|| {
            let t = Arc::new(Tree::new(3));
            let t2 = t.clone();
            let cat = |a: String, b: String| a + &b;
            let h = thread::spawn(move || t2.complete(2, "c".to_string(), &cat));
            t.complete(0, "a".to_string(), &cat);
            t.complete(1, "b".to_string(), &cat);
            h.join().unwrap();
            let t = Arc::try_unwrap(t).ok().unwrap();
            assert_eq!(t.into_root().as_deref(), Some("abc"));
        });
    }
}
