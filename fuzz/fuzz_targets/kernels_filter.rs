#![no_main]
//! keel-kernels: Filters and bitmap kernels at every level against the scalar twin.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: keel_fuzz::kernels::FilterInput| keel_fuzz::kernels::filter(&input));
