#![no_main]
//! keel-heap: alloc/realloc/free/gc sequences against a model.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|ops: Vec<keel_fuzz::heap::Op>| {
    keel_fuzz::heap::run_ops(&ops);
});
