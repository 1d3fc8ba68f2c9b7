//! Width and spin settings: builder, environment, defaults, bad input.
#![cfg(not(keel_loom))]

use keel_pool::{
    BuildError, DEFAULT_SPIN, ENV_MAX_SPIN, ENV_SPIN_US, ENV_WIDTH_PER_CPU, ENV_WORKERS, MAX_WIDTH,
    Pool, Source, settings::Settings,
};
use std::time::Duration;

/// The CPUs the pool counts as usable (the topology's, else
/// `available_parallelism`).
fn usable_cpus() -> usize {
    #[cfg(feature = "topology")]
    {
        let n = keel_topology::Topology::detect().usable_cpus().len();
        if n > 0 {
            return n;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn settings_sources_and_errors() {
    if cfg!(miri) {
        println!("skipping under Miri: topology detection reads sysfs, which isolation forbids");
        return;
    }
    assert!(matches!(
        Pool::builder().width(0).build(),
        Err(BuildError::ZeroWidth)
    ));

    // An absurd width is an error, not a capacity-overflow panic or an
    // allocation-failure abort while sizing the per-worker tables.
    for width in [MAX_WIDTH + 1, usize::MAX / 2 + 1, usize::MAX] {
        let r = std::panic::catch_unwind(|| Pool::builder().width(width).build().err());
        match r {
            Ok(Some(BuildError::TooWide { width: w, max })) => {
                assert_eq!((w, max), (width, MAX_WIDTH));
            }
            Ok(other) => panic!("width {width}: {other:?}"),
            Err(_) => panic!("width {width}: build panicked"),
        }
    }

    let p = Pool::builder()
        .width(2)
        .spin_window(Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!((p.width(), p.config().width_source), (2, Source::Builder));
    assert_eq!(
        (p.config().spin, p.config().spin_source),
        (Duration::ZERO, Source::Builder)
    );
    drop(p);

    // The only test in this binary touches the environment, so nothing
    // else reads it concurrently.
    // SAFETY: no other thread of this process reads or writes the environment now.
    unsafe {
        std::env::set_var(ENV_WORKERS, "3");
        std::env::set_var(ENV_SPIN_US, "250");
    }
    let p = Pool::new().unwrap();
    assert_eq!((p.width(), p.config().width_source), (3, Source::Env));
    assert_eq!(p.config().spin, Duration::from_micros(250));
    assert_eq!(p.config().spin_source, Source::Env);
    drop(p);
    // The builder wins over the environment.
    let p = Pool::builder().width(2).build().unwrap();
    assert_eq!(p.width(), 2);
    drop(p);

    // A width from the environment is capped at ENV_WIDTH_PER_CPU hands per
    // usable CPU, with a note: KEEL_WORKERS=65536 once started ~16,000
    // threads before std aborted the process.
    let cap = (ENV_WIDTH_PER_CPU * usable_cpus()).min(MAX_WIDTH);
    for asked in [cap + 1, 65_536, MAX_WIDTH + 1, usize::MAX] {
        // SAFETY: as above.
        unsafe { std::env::set_var(ENV_WORKERS, asked.to_string()) };
        let p = Pool::new().unwrap();
        assert_eq!((p.width(), p.config().width_source), (cap, Source::Env));
        assert!(
            p.config()
                .notes
                .iter()
                .any(|n| n.contains(&format!("{ENV_WORKERS}={asked} capped at {cap}"))),
            "{:?}",
            p.config().notes
        );
        drop(p);
    }
    // At the cap itself: taken as given, no note.
    // SAFETY: as above.
    unsafe { std::env::set_var(ENV_WORKERS, cap.to_string()) };
    let p = Pool::new().unwrap();
    assert_eq!(p.width(), cap);
    assert!(p.config().notes.is_empty(), "{:?}", p.config().notes);
    drop(p);

    // SAFETY: as above.
    unsafe {
        std::env::set_var(ENV_WORKERS, "many");
        std::env::set_var(ENV_SPIN_US, "-1");
    }
    let p = Pool::new().unwrap();
    assert_ne!(p.config().width_source, Source::Env);
    assert_eq!(p.config().spin_source, Source::Default);
    assert_eq!(p.config().notes.len(), 2, "{:?}", p.config().notes);
    assert!(p.config().notes[0].contains("KEEL_WORKERS=\"many\""));
    assert!(p.width() >= 1);
    // SAFETY: as above.
    unsafe {
        std::env::remove_var(ENV_WORKERS);
        std::env::remove_var(ENV_SPIN_US);
    }
    // Default width: the topology's physical cores (bandwidth work).
    let p = Pool::new().unwrap();
    #[cfg(feature = "topology")]
    {
        let t = keel_topology::Topology::detect();
        if t.cores().is_empty() {
            assert_eq!(p.config().width_source, Source::AvailableParallelism);
        } else {
            assert_eq!(p.config().width_source, Source::Topology);
            assert_eq!(p.width(), t.workers_for(keel_topology::Work::Bandwidth));
        }
    }
    #[cfg(not(feature = "topology"))]
    assert_eq!(p.config().width_source, Source::AvailableParallelism);
    assert_eq!(p.config().spin, DEFAULT_SPIN);
    assert_eq!(p.config().spin_source, Source::Default);
}

#[test]
fn thread_name_with_nul_is_an_error() {
    // Settings given, so this test reads no environment (the other test in
    // this binary writes it).
    let r = std::panic::catch_unwind(|| {
        Pool::builder()
            .settings(Settings::new())
            .width(2)
            .spin_window(Duration::ZERO)
            .thread_name("scan\0pool")
            .build()
            .err()
    });
    match r {
        Ok(Some(BuildError::ThreadName { prefix })) => assert_eq!(prefix, "scan\0pool"),
        Ok(other) => panic!("{other:?}"),
        Err(_) => panic!("build panicked on a thread name with a NUL byte"),
    }
    // A plain prefix still names the workers.
    let p = Pool::builder()
        .settings(Settings::new())
        .width(2)
        .spin_window(Duration::ZERO)
        .thread_name("scan")
        .build()
        .unwrap();
    let name = std::sync::Mutex::new(None);
    p.broadcast(|_| {
        *name.lock().unwrap() = std::thread::current().name().map(str::to_string);
    });
    assert_eq!(name.into_inner().unwrap().as_deref(), Some("scan-0"));
}

/// A spin window from the settings is capped, with a note (an idle pool
/// must park); the builder's own is taken as asked.
#[test]
fn a_huge_spin_from_the_settings_is_capped() {
    let p = Pool::builder()
        .settings(Settings::parse("KEEL_SPIN_US=18446744073709551615\n"))
        .width(2)
        .build()
        .unwrap();
    let c = p.config();
    assert_eq!((c.spin, c.spin_source), (ENV_MAX_SPIN, Source::File));
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("KEEL_SPIN_US=18446744073709551615 capped at 10000")),
        "{:?}",
        c.notes
    );
    drop(p);
    let p = Pool::builder()
        .settings(Settings::new())
        .width(1)
        .spin_window(Duration::from_secs(1))
        .build()
        .unwrap();
    assert_eq!(p.config().spin, Duration::from_secs(1));
    assert!(p.config().notes.is_empty(), "{:?}", p.config().notes);
}
