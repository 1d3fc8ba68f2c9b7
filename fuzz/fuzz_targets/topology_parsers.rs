#![no_main]
//! keel-topology's text parsers on arbitrary bytes.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| keel_fuzz::topology::parsers(data));
