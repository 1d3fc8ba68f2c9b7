//! keel-topology: what the machine really is.
//!
//! Usable CPUs, physical cores, packages, NUMA nodes, caches, hybrid core
//! kinds and container CPU quotas, read from sysfs/procfs under a configurable
//! root so recorded machines replay exactly. Work in progress.
#![no_std]
