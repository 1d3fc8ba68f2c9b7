//! The last resort: `std::thread::available_parallelism`, with every CPU
//! counted as its own core and the answer marked as a fallback.

use std::string::String;

use crate::CpuSet;
use crate::build::Raw;

/// A topology of `available_parallelism` CPUs, each its own core, in one
/// package, with `reason` recorded as the fallback.
pub(crate) fn raw(reason: String) -> Raw {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus: CpuSet = (0..n).collect();
    Raw {
        online: cpus.clone(),
        cores: (0..n).map(|c| core::iter::once(c).collect()).collect(),
        packages: std::vec![(None, cpus)],
        notes: std::vec![reason],
        ..Raw::default()
    }
}
