#![no_main]
//! keel-kernels: Zone maps: build, classes and the skipping filter against the scalar filter.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: keel_fuzz::kernels::ZoneInput| keel_fuzz::kernels::zone(&input));
