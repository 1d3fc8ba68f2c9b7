//! keel-pool: a fork-join pool that runs a batch of jobs under one lock and
//! one wake, spins a bounded window before parking, and sizes itself to
//! physical cores. Work in progress.
