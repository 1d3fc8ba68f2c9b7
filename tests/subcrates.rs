//! The facade's re-exports resolve to the subcrates.

#[test]
fn reexports_resolve() {
    // Each path must name the subcrate's root module; a missing or renamed
    // re-export fails to compile.
    #[cfg(feature = "topology")]
    {
        use keel_rt::topology as _;
    }
    #[cfg(feature = "pool")]
    {
        use keel_rt::pool as _;
    }
    #[cfg(feature = "heap")]
    {
        use keel_rt::heap as _;
    }
    #[cfg(feature = "kernels")]
    {
        use keel_rt::kernels as _;
    }
}
