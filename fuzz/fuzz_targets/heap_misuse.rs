#![no_main]
//! keel-heap: valid operations mixed with double, interior and foreign
//! frees; every wrong free is refused, no live block changes or overlaps.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|ops: Vec<keel_fuzz::heap::Misuse>| {
    keel_fuzz::heap::run_misuse(&ops);
});
