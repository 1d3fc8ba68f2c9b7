//! Shared test support: a seeded generator, edge values per element type,
//! and the length x offset sweep every kernel runs.
#![allow(dead_code)]

use keel_kernels::{Element, Kernels};

/// Lengths 0..=MAX_LEN at offsets 0..=MAX_OFF. Miri, looking for undefined
/// behaviour, takes a few lengths around the word boundaries ([`lens`]) at
/// offsets 0 and 1 (at every level its build's target features give).
pub const MAX_LEN: usize = 300;
pub const MAX_OFF: usize = if cfg!(miri) { 1 } else { 63 };

/// The lengths a sweep runs: every one of 0..=MAX_LEN, or under Miri a few
/// around the 64-row word boundaries, up to three blocks with a partial one
/// (past the leaves' Miri-sized flush and streaming switches too).
pub fn lens() -> Vec<usize> {
    if cfg!(miri) {
        vec![0, 1, 2, 63, 64, 65, 129]
    } else {
        (0..=MAX_LEN).collect()
    }
}

/// xorshift64*: deterministic, seeded, good enough for test data.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Element types the tests can generate.
pub trait Gen: Element {
    /// Edge values: MIN, MAX, 0, and for floats NaN, -NaN, +-0, +-inf.
    const EDGES: &'static [Self];
    /// A value from the full bit range.
    fn any(r: &mut Rng) -> Self;
    /// A small value (sums that do not wrap, dense duplicates).
    fn small(r: &mut Rng) -> Self;
    fn is_nan(self) -> bool {
        false
    }
}

macro_rules! gen_int {
    ($t:ty) => {
        impl Gen for $t {
            const EDGES: &'static [$t] =
                &[<$t>::MIN, <$t>::MAX, 0, 1, <$t>::MIN + 1, <$t>::MAX - 1];
            fn any(r: &mut Rng) -> $t {
                r.next() as $t
            }
            fn small(r: &mut Rng) -> $t {
                (r.below(2001) as i64 - 1000) as $t
            }
        }
    };
}
gen_int!(i64);
gen_int!(u64);
gen_int!(i32);
gen_int!(u32);
gen_int!(i16);
gen_int!(u16);
gen_int!(i8);
gen_int!(u8);

macro_rules! gen_float {
    ($t:ty, $bits:ty) => {
        impl Gen for $t {
            const EDGES: &'static [$t] = &[
                <$t>::NAN,
                -<$t>::NAN,
                0.0,
                -0.0,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                <$t>::MIN,
                <$t>::MAX,
                <$t>::MIN_POSITIVE,
                <$t>::from_bits(1),
            ];
            fn any(r: &mut Rng) -> $t {
                <$t>::from_bits(r.next() as $bits)
            }
            fn small(r: &mut Rng) -> $t {
                (r.below(2_000_001) as i64 - 1_000_000) as $t / 64.0
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
gen_float!(f64, u64);
gen_float!(f32, u32);

/// The data patterns each sweep runs over.
#[derive(Clone, Copy, Debug)]
pub enum Pattern {
    /// Mostly edge values.
    Edges,
    /// Full-range random bits (floats include NaNs of every payload).
    Any,
    /// Small values.
    Small,
}
/// Every pattern natively; under Miri (looking for UB) the edge values only.
pub const PATTERNS: &[Pattern] = if cfg!(miri) {
    &[Pattern::Edges]
} else {
    &[Pattern::Edges, Pattern::Any, Pattern::Small]
};

pub fn column<T: Gen>(p: Pattern, n: usize, seed: u64) -> Vec<T> {
    let mut r = Rng(seed | 1);
    (0..n)
        .map(|_| match p {
            Pattern::Edges if r.below(3) != 0 => T::EDGES[r.below(T::EDGES.len() as u64) as usize],
            Pattern::Edges | Pattern::Any => T::any(&mut r),
            Pattern::Small => T::small(&mut r),
        })
        .collect()
}

/// Validity variants: none, random (about 70% valid), all null, all valid,
/// sparse (about 3% valid).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nulls {
    None,
    Random,
    AllNull,
    AllValid,
    Sparse,
}
/// Every validity variant natively; under Miri none, random and all-null.
pub const NULLS: &[Nulls] = if cfg!(miri) {
    &[Nulls::None, Nulls::Random, Nulls::AllNull]
} else {
    &[
        Nulls::None,
        Nulls::Random,
        Nulls::AllNull,
        Nulls::AllValid,
        Nulls::Sparse,
    ]
};

/// A validity bitmap for `n` rows. Bits past `n` in the last word are set
/// to garbage on purpose: kernels must ignore them.
pub fn validity(kind: Nulls, n: usize, seed: u64) -> Option<Vec<u64>> {
    let mut r = Rng(seed | 1);
    let words = n.div_ceil(64);
    let mut b: Vec<u64> = match kind {
        Nulls::None => return None,
        Nulls::Random => (0..words).map(|_| r.next() | r.next()).collect(),
        Nulls::AllNull => vec![0; words],
        Nulls::AllValid => vec![!0; words],
        Nulls::Sparse => (0..words)
            .map(|_| r.next() & r.next() & r.next() & r.next() & r.next())
            .collect(),
    };
    if !n.is_multiple_of(64) {
        let keep = (1u64 << (n % 64)) - 1;
        b[words - 1] = (b[words - 1] & keep) | (r.next() & !keep);
    }
    Some(b)
}

/// Offsets the secondary variants run at (every length each).
pub const FEW_OFFSETS: [usize; 4] = [0, 1, 5, 63];

/// Runs `f(values, validity, pattern, nulls)` over the sweep: every length
/// 0..=MAX_LEN at every start offset 0..=MAX_OFF on edge-value data without
/// and with a random validity bitmap (the full product), and every length
/// at offsets [`FEW_OFFSETS`] on the other data patterns and validity
/// variants (all null, all valid, sparse). Values come from one buffer per
/// pattern, sliced at the offset, so the kernels see every alignment.
pub fn sweep<T: Gen>(seed: u64, mut f: impl FnMut(&[T], Option<&[u64]>, Pattern, Nulls)) {
    for (pi, &p) in PATTERNS.iter().enumerate() {
        let buf: Vec<T> = column(p, MAX_LEN + MAX_OFF + 1, seed ^ (pi as u64 * 0x9E37));
        for &nulls in NULLS {
            // A validity bitmap per length: fresh bits for each (len, nulls).
            for len in lens() {
                let val = validity(nulls, len, seed ^ (len as u64) << 8 ^ nulls as u64);
                let full =
                    matches!(p, Pattern::Edges) && matches!(nulls, Nulls::None | Nulls::Random);
                if full {
                    for off in 0..=MAX_OFF {
                        f(&buf[off..off + len], val.as_deref(), p, nulls);
                    }
                } else {
                    for off in FEW_OFFSETS.into_iter().filter(|&o| o <= MAX_OFF) {
                        f(&buf[off..off + len], val.as_deref(), p, nulls);
                    }
                }
            }
        }
    }
}

/// The SIMD levels this CPU supports, printing the ones it skips.
pub fn simd_levels() -> Vec<Kernels> {
    let mut v = Vec::new();
    for l in keel_kernels::cpu::Level::ALL {
        if l == keel_kernels::cpu::Level::Scalar {
            continue;
        }
        match Kernels::at(l) {
            Some(k) => v.push(k),
            None => {
                eprintln!("note: level {l} not supported on this CPU; its leaves are not run here")
            }
        }
    }
    v
}
