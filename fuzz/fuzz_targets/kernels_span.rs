#![no_main]
//! keel-kernels: span scans with early abort at every level against the
//! scalar scan, and the scalar scan against a row-by-row oracle.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: keel_fuzz::kernels::SpanInput| keel_fuzz::kernels::span(&input));
