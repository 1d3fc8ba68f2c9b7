//! Scalar twins of the hash kernels: the oracle every other level must equal.

use crate::hash::{hash_u64, mix};

/// `out[i] = hash_u64(keys[i], seed)`. Lengths are checked by the caller.
pub fn hash_u64_column(keys: &[u64], seed: u64, out: &mut [u64]) {
    for (o, &k) in out.iter_mut().zip(keys) {
        *o = hash_u64(k, seed);
    }
}

/// `acc[i] = hash_u64(keys[i], acc[i])`: folds one more key column into
/// per-row hashes. Lengths are checked by the caller.
pub fn combine_u64_column(keys: &[u64], acc: &mut [u64]) {
    for (a, &k) in acc.iter_mut().zip(keys) {
        *a = mix(k ^ *a);
    }
}
