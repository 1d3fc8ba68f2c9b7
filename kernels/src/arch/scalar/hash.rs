//! The hash function (the Moremur finalizer and its constants) and the
//! scalar twins of the hash kernels: the oracle every other level must
//! equal. `crate::hash` documents the function and re-exports [`mix`] and
//! [`hash_u64`].

/// Moremur's first multiplier.
pub(crate) const M1: u64 = 0x3C79_AC49_2BA7_B653;
/// Moremur's second multiplier.
pub(crate) const M2: u64 = 0x1C69_B3F7_4AC4_AE35;

/// The bijective 64-bit finalizer (Moremur) under every hash here.
///
/// ```
/// use keel_kernels::hash::mix;
/// assert_ne!(mix(1), mix(2));
/// assert_eq!(mix(0), 0); // a bijection that fixes zero; seeds move it
/// ```
#[inline]
pub const fn mix(mut x: u64) -> u64 {
    x ^= x >> 27;
    x = x.wrapping_mul(M1);
    x ^= x >> 33;
    x = x.wrapping_mul(M2);
    x ^= x >> 27;
    x
}

/// Hashes one `u64` key with `seed`: `mix(key ^ seed)`.
///
/// ```
/// use keel_kernels::hash::{hash_u64, DEFAULT_SEED};
/// let h = hash_u64(42, DEFAULT_SEED);
/// assert_eq!(h, hash_u64(42, DEFAULT_SEED)); // deterministic, no hidden state
/// assert_ne!(h, hash_u64(43, DEFAULT_SEED));
/// ```
#[inline]
pub const fn hash_u64(key: u64, seed: u64) -> u64 {
    mix(key ^ seed)
}

/// `out[i] = hash_u64(keys[i], seed)`. Lengths are checked by the caller.
pub(crate) fn hash_u64_column(keys: &[u64], seed: u64, out: &mut [u64]) {
    for (o, &k) in out.iter_mut().zip(keys) {
        *o = hash_u64(k, seed);
    }
}

/// `acc[i] = hash_u64(keys[i], acc[i])`: folds one more key column into
/// per-row hashes. Lengths are checked by the caller.
pub(crate) fn combine_u64_column(keys: &[u64], acc: &mut [u64]) {
    for (a, &k) in acc.iter_mut().zip(keys) {
        *a = mix(k ^ *a);
    }
}
