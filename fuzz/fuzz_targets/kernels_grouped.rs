#![no_main]
//! keel-kernels: grouped aggregates at every level against the scalar twin.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: keel_fuzz::grouped::GroupedInput| keel_fuzz::grouped::grouped(&input));
