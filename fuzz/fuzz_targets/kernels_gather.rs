#![no_main]
//! keel-kernels: gather at every level against a naive loop.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: keel_fuzz::gather::GatherInput| keel_fuzz::gather::gather(&input));
