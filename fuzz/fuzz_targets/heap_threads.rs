#![no_main]
//! keel-heap: operation sequences split over two threads that pass blocks.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|ops: Vec<keel_fuzz::heap::Op>| {
    keel_fuzz::heap::run_threads(&ops);
});
