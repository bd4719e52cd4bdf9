//! LISTEN/NOTIFY wake-ups across processes: a dispatcher waiting in `wait_for_due` on
//! one pool returns when another pool approves a post or lifts a pause.
//!
//! The listener starts on the first wait, so the other side repeats its change until the
//! waiter has returned; the bound on repetitions keeps a broken wake-up from hanging the
//! test, it does not measure anything.

use std::time::Duration as StdDuration;

use airlock_store::{Admin, PauseScope, Store};
use airlock_store_postgres::PgStore;
use airlock_store_tests::fixture::*;

use crate::support::{TestDb, store};

const LONG_WAIT: StdDuration = StdDuration::from_secs(3600);

async fn woken_by<F, Fut>(waiter: PgStore, mut change: F)
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let seen = waiter.due_signals().await;
    let mut waiting = tokio::spawn(async move { waiter.wait_for_due(seen, LONG_WAIT).await });
    for round in 0..300 {
        change(round).await;
        if tokio::time::timeout(StdDuration::from_millis(100), &mut waiting)
            .await
            .is_ok()
        {
            return;
        }
    }
    panic!("wait_for_due never woke up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_in_another_process_wakes_a_waiting_dispatcher() {
    let db = TestDb::create();
    let waiter = store(&db).await;
    let other = store(&db).await;
    woken_by(waiter, |round| {
        let other = other.clone();
        async move {
            approved(&other, "alpha", &format!("approved {round}"), t0()).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lifted_pause_in_another_process_wakes_a_waiting_dispatcher() {
    let db = TestDb::create();
    let waiter = store(&db).await;
    let other = store(&db).await;
    let scope = PauseScope::Channel(ch("alpha"));
    woken_by(waiter, |round| {
        let other = other.clone();
        let scope = scope.clone();
        async move {
            let at = mins(i64::from(round));
            other
                .pause(&scope, "drill", "cli", at, Vec::new())
                .await
                .unwrap();
            other.resume(&scope, "cli", at, Vec::new()).await.unwrap();
        }
    })
    .await;
}

/// A dispatcher looks at the ledger, then waits; its first wait starts the listener. A
/// post approved once, right then, while that listener is still connecting, must not be
/// missed until the poll interval: the waiter returns to look again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_made_while_the_listener_starts_still_wakes_the_waiter() {
    let db = TestDb::create();
    let waiter = store(&db).await;
    let other = store(&db).await;
    let post = draft(&other, "alpha", "approved once", t0()).await;
    let seen = waiter.due_signals().await;
    let waiting = tokio::spawn(async move { waiter.wait_for_due(seen, LONG_WAIT).await });
    approve(&other, &post, t0()).await;
    tokio::time::timeout(StdDuration::from_secs(10), waiting)
        .await
        .expect("wait_for_due never woke up")
        .expect("the waiter ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_store_still_waits_out_its_timeout() {
    let db = TestDb::create();
    let store = store(&db).await;
    let seen = store.due_signals().await;
    let seen = store.wait_for_due(seen, StdDuration::from_millis(10)).await;
    store.close().await;
    store.wait_for_due(seen, StdDuration::from_millis(10)).await;
}

/// The dispatcher reads the counter, looks at the ledger, then waits. A post approved
/// between the look and the wait must wake it at once, not after the poll interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_between_the_look_and_the_wait_is_not_lost() {
    let db = TestDb::create();
    let waiter = store(&db).await;
    let other = store(&db).await;
    // Let the listener settle, as a running dispatcher's would be.
    let mut seen = waiter.due_signals().await;
    seen = waiter
        .wait_for_due(seen, StdDuration::from_millis(500))
        .await;
    let post = draft(&other, "alpha", "approved in the gap", t0()).await;
    approve(&other, &post, t0()).await;
    // Give the notification time to arrive before the wait starts.
    let start = tokio::time::Instant::now();
    while waiter.due_signals().await == seen && start.elapsed() < StdDuration::from_secs(10) {
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    tokio::time::timeout(
        StdDuration::from_secs(5),
        waiter.wait_for_due(seen, LONG_WAIT),
    )
    .await
    .expect("a signal that came before the wait was lost");
}
