#![no_main]
//! keel-kernels HyperLogLog: batch add and merge at every level against the
//! scalar twin; invalid precisions, seeds and registers are errors.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|inp: keel_fuzz::kernels_hash::HllInput| {
    keel_fuzz::kernels_hash::hll_family(&inp);
});
