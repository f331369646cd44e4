//! `Store::blocking`: store work from the daemon, off the scheduler thread.

use super::*;

/// Store work from the daemon runs on the blocking pool, not on the scheduler thread that
/// carries a one-CPU sidecar's proxy traffic; what it returns (or fails with) comes back.
#[tokio::test(flavor = "current_thread")]
async fn blocking_work_runs_off_the_scheduler_thread_and_returns_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let here = std::thread::current().id();
    let there = store
        .blocking(|_| Ok(std::thread::current().id()))
        .await
        .unwrap();
    assert_ne!(here, there);
    let refused = store
        .blocking(|s| Err::<(), _>(StoreError::Closed(s.path().to_path_buf())))
        .await;
    assert!(matches!(refused, Err(StoreError::Closed(p)) if p == store.path()));
}
