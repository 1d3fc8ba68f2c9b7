//! The seeded multi-threaded stress program (`tests/c/stress.c`) under the
//! preload with keel-heap's checker on (`KEEL_HEAP_CHECK=1`), for a few
//! seeds. It calls `keel_malloc_gc` every thousand operations, so the GC
//! passes (and the checker at their entry) run while blocks cross threads.

mod common;

#[test]
fn seeded_stress_with_checker() {
    let exe = common::compile("stress.c");
    for seed in ["1", "2"] {
        let args = [seed, "4", "6000"];
        let system = common::run(&exe, &args, &common::Run::SYSTEM);
        common::assert_success(
            &format!("stress seed {seed} on the system allocator"),
            &system,
        );
        let keel = common::run(
            &exe,
            &args,
            &common::Run {
                preload: true,
                env: &[("KEEL_HEAP_CHECK", "1")],
                dir: None,
            },
        );
        common::assert_success(&format!("stress seed {seed} under the preload"), &keel);
        let stdout = String::from_utf8_lossy(&keel.stdout);
        common::assert_allocator_is_keel("stress", &stdout);
        assert!(
            stdout.contains("gc on"),
            "keel_malloc_gc not found: {stdout}"
        );
        let stderr = String::from_utf8_lossy(&keel.stderr);
        assert!(stderr.is_empty(), "the checker reported: {stderr}");
    }
}
