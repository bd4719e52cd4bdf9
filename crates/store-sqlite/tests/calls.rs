//! How many calls to its connection's thread a group commit makes (issue 28). Each call
//! is two thread switches while the writer turn is held. sqlx reports its calls on that
//! thread, so they are counted by a global subscriber: this binary holds this test alone.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use airlock_core::PostStatus;
use airlock_store::{PostClaimed, Posts, Publishing, Store};
use airlock_store_sqlite::SqliteStore;
use airlock_store_tests::fixture::*;
use sqlx::Connection;
use tracing_subscriber::layer::SubscriberExt;

/// Counts the store's calls: every `sqlx::query` event but the lock holder's own two
/// statements (the store's `BEGIN` and `COMMIT` go through sqlx's own commands, which
/// it does not report).
#[derive(Clone, Default)]
struct Calls(Arc<AtomicU64>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Calls {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Summary(String);
        impl tracing::field::Visit for Summary {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "summary" {
                    self.0 = value.to_owned();
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        let mut summary = Summary(String::new());
        event.record(&mut summary);
        if !matches!(summary.0.as_str(), "BEGIN IMMEDIATE" | "COMMIT") {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Three claims and an outcome queued while another connection holds the write lock go
/// in one group: two calls a write (a claim's read and write, a change's read and
/// write), each write's savepoint in its first; and the `BEGIN` and the `COMMIT` around
/// them, one call each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_takes_two_calls_a_write_and_two_more() {
    let calls = Calls::default();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(tracing_subscriber::Layer::with_filter(
            calls.clone(),
            tracing_subscriber::filter::Targets::new()
                .with_target("sqlx::query", tracing::Level::TRACE),
        )),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap(),
    );
    let s = store.as_ref() as &dyn Store;
    let mut due = Vec::new();
    for n in 0..3 {
        due.push(approved(s, "alpha", &format!("due {n}"), mins(-30)).await);
    }
    let out = claimed(s, "beta", "out", t0()).await;
    let before = store.commits();

    let mut holder = store.pool().acquire().await.unwrap().detach();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    // sqlx reports a call just after answering it: let the setup's last reports land.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    calls.0.store(0, Ordering::SeqCst);
    let claims: Vec<_> = due
        .iter()
        .map(|post| {
            let (store, claim) = (store.clone(), post_claim(post, t0(), ROOMY));
            tokio::spawn(async move { store.claim_post(&claim).await })
        })
        .collect();
    let change = {
        let (store, change) = (store.clone(), outcome(&out, PostStatus::Posted, mins(1)));
        tokio::spawn(async move { store.change_post(change).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let holding = calls.0.swap(0, Ordering::SeqCst);
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    holder.close().await.unwrap();
    for claim in claims {
        let claimed = claim.await.unwrap();
        assert!(
            matches!(claimed, Ok(PostClaimed::Claimed { .. })),
            "{claimed:?}"
        );
    }
    assert_eq!(change.await.unwrap().unwrap().status, PostStatus::Posted);
    let made = calls.0.load(Ordering::SeqCst);

    assert_eq!(store.commits() - before, 1);
    assert_eq!(holding, 0, "nothing runs while the lock is held elsewhere");
    assert_eq!(made, 2 * 4, "four writes in one group took {made} calls");
}
