//! keel-malloc: keel-heap behind the C allocation family, for `LD_PRELOAD`.
//! Work in progress.
