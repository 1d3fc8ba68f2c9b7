#![no_main]
//! keel-kernels: Aggregates at every level against the scalar twin.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: keel_fuzz::kernels::Column| keel_fuzz::kernels::agg(&input));
