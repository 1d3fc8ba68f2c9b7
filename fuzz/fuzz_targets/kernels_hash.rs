#![no_main]
//! keel-kernels hashing, partitioning and the count table: every level
//! against the scalar twin.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|inp: keel_fuzz::kernels_hash::HashInput| {
    keel_fuzz::kernels_hash::hash_family(&inp);
});
