#![no_main]
//! keel-topology's `from_root` on a tree of arbitrary file contents.
use keel_fuzz::topology::FileWrite;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|files: Vec<FileWrite>| keel_fuzz::topology::root(&files));
