//! Broadcast runs once on every worker, with its own index.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::collections::HashMap;
use std::sync::Mutex;

#[test]
fn once_per_worker_on_that_worker() {
    let pool = Pool::builder().width(4).thread_name("bc").build().unwrap();
    for _ in 0..20 {
        let seen = Mutex::new(HashMap::new());
        pool.broadcast(|w| {
            let name = std::thread::current().name().map(str::to_string);
            assert_eq!(pool.current_worker(), Some(w));
            assert!(
                seen.lock().unwrap().insert(w, name).is_none(),
                "worker {w} twice"
            );
        });
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 3);
        for (w, name) in seen {
            assert_eq!(name, Some(format!("bc-{w}")));
        }
    }
    assert_eq!(pool.current_worker(), None);
}
