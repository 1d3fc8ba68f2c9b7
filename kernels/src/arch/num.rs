//! What the scalar twins need to know about an element type: its sum type,
//! the summation lanes, the min/max order and its extremes. Implemented for
//! the primitive column types only; [`crate::Element`] builds on it.

use core::fmt::Debug;

mod sealed {
    /// Only this crate implements [`super::Num`].
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for u64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
    impl Sealed for i16 {}
    impl Sealed for u16 {}
}

/// The type facts of a column element (`i64`, `u64`, `i32`, `u32`, `i16`,
/// `u16`, `i8`, `u8`, `f64`, `f32`): what its sum is, how a sum is laid out in lanes, and its min/max
/// order. Sealed: implemented here for the primitive types only.
///
/// Its constants: the sum type [`Num::Sum`], [`Num::NAME`], the lanes a
/// sum starts from ([`Num::SUM_ZERO`], [`Num::SUM_LANES`]), the sum of no
/// rows ([`Num::EMPTY_SUM`]) and the ends of the min/max order
/// ([`Num::LEAST`], [`Num::GREATEST`]):
///
/// ```
/// use keel_kernels::Num;
/// let s: <u8 as Num>::Sum = 255u8.widen(); // unsigned types sum into u64
/// assert_eq!(s, 255u64);
/// assert_eq!((i8::NAME, f64::NAME), ("i8", "f64"));
/// assert_eq!((i64::SUM_LANES, f64::SUM_LANES, f32::SUM_LANES), (1, 32, 64));
/// assert!(f64::SUM_ZERO.is_sign_negative() && f64::EMPTY_SUM.is_sign_positive());
/// assert_eq!((u16::SUM_ZERO, u16::EMPTY_SUM), (0u64, 0u64));
/// assert_eq!((i16::LEAST, i16::GREATEST), (i16::MIN, i16::MAX));
/// assert!(f64::LEAST.is_nan() && f64::GREATEST.is_nan());
/// ```
///
/// Its operations: [`Num::widen`], [`Num::sum_add`] and [`Num::sum_weigh`]
/// in the sum type, the min/max order [`Num::order_lt`], and the
/// bit-exact equality [`Num::same`] and [`Num::sum_same`]:
///
/// ```
/// use keel_kernels::Num;
/// assert_eq!(200u8.widen(), 200u64);
/// assert_eq!(<u8 as Num>::sum_add(u64::MAX, 2), 1); // wrapping
/// assert_eq!(<u16 as Num>::sum_weigh(3, 100), 300);
/// assert!((-0.0f64).order_lt(0.0) && f64::INFINITY.order_lt(f64::GREATEST));
/// assert!(!(-0.0f64).same(0.0) && f64::NAN.same(-f64::NAN));
/// assert!(f32::sum_same(f32::NAN, f32::NAN) && !f32::sum_same(0.0, -0.0));
/// ```
pub trait Num:
    sealed::Sealed + Copy + PartialOrd + Debug + Default + Send + Sync + 'static
{
    /// What a sum returns: `i64` for signed integers, `u64` for unsigned
    /// ones (both wrapping), `f64`/`f32` for floats.
    type Sum: Copy + Debug + PartialEq + Default + Send + Sync + 'static;
    /// The type's name, as in Rust.
    const NAME: &'static str;
    /// The value the sum's lanes start from: `0` for integers, `-0.0` for
    /// floats (the exact additive identity, so a sum of `-0.0`s stays
    /// `-0.0`).
    const SUM_ZERO: Self::Sum;
    /// The sum of no rows: `0`, or `+0.0` for floats.
    const EMPTY_SUM: Self::Sum;
    /// Accumulator lanes of each run of the documented float summation
    /// order (see [`crate::agg`]; a sum keeps two runs of them); 1 for
    /// integers, where order cannot matter.
    const SUM_LANES: usize;
    /// Smallest value in the min/max order (for floats: negative quiet NaN
    /// with full payload, i.e. the least value under `total_cmp`).
    const LEAST: Self;
    /// Largest value in the min/max order (for floats: positive NaN with full
    /// payload).
    const GREATEST: Self;

    /// Widens a value into the sum type.
    fn widen(self) -> Self::Sum;
    /// Adds in the sum type (wrapping for integers).
    fn sum_add(a: Self::Sum, b: Self::Sum) -> Self::Sum;
    /// `a · w` in the sum type (wrapping for integers): a weighted sum's
    /// term (see `grouped::GroupTable::add_weighted`).
    fn sum_weigh(a: Self::Sum, w: u16) -> Self::Sum;
    /// `self < other` in the min/max order (total order for floats).
    fn order_lt(self, other: Self) -> bool;
    /// Bit-exact equality for floats (any NaN equals any NaN), `==` for
    /// integers: what "equals its scalar twin" means in tests.
    fn same(self, other: Self) -> bool;
    /// [`Num::same`] for sums.
    fn sum_same(a: Self::Sum, b: Self::Sum) -> bool;
}

macro_rules! int_num {
    ($($t:ty => $sum:ty),* $(,)?) => {$(
        impl Num for $t {
            type Sum = $sum;
            const NAME: &'static str = stringify!($t);
            const SUM_ZERO: $sum = 0;
            const EMPTY_SUM: $sum = 0;
            const SUM_LANES: usize = 1;
            const LEAST: $t = <$t>::MIN;
            const GREATEST: $t = <$t>::MAX;
            #[inline(always)]
            fn widen(self) -> $sum {
                self as $sum
            }
            #[inline(always)]
            fn sum_add(a: $sum, b: $sum) -> $sum {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn sum_weigh(a: $sum, w: u16) -> $sum {
                a.wrapping_mul(w as $sum)
            }
            #[inline(always)]
            fn order_lt(self, other: $t) -> bool {
                self < other
            }
            #[inline(always)]
            fn same(self, other: $t) -> bool {
                self == other
            }
            #[inline(always)]
            fn sum_same(a: $sum, b: $sum) -> bool {
                a == b
            }
        }
    )*};
}

int_num!(
    i64 => i64,
    u64 => u64,
    i32 => i64,
    u32 => u64,
    i16 => i64,
    u16 => u64,
    i8 => i64,
    u8 => u64,
);

macro_rules! float_num {
    ($($t:ty => $lanes:expr),* $(,)?) => {$(
        impl Num for $t {
            type Sum = $t;
            const NAME: &'static str = stringify!($t);
            const SUM_ZERO: $t = -0.0;
            const EMPTY_SUM: $t = 0.0;
            const SUM_LANES: usize = $lanes;
            const LEAST: $t = <$t>::from_bits(!0);
            const GREATEST: $t = <$t>::from_bits(!0 >> 1);
            #[inline(always)]
            fn widen(self) -> $t {
                self
            }
            #[inline(always)]
            fn sum_add(a: $t, b: $t) -> $t {
                a + b
            }
            #[inline(always)]
            fn sum_weigh(a: $t, w: u16) -> $t {
                a * <$t>::from(w)
            }
            #[inline(always)]
            fn order_lt(self, other: $t) -> bool {
                self.total_cmp(&other).is_lt()
            }
            #[inline(always)]
            fn same(self, other: $t) -> bool {
                self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
            }
            #[inline(always)]
            fn sum_same(a: $t, b: $t) -> bool {
                a.same(b)
            }
        }
    )*};
}

float_num!(f64 => 32, f32 => 64);
