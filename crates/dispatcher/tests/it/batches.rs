//! `serve`'s workers publish their configured batch at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration as StdDuration;

use airlock_core::{ChannelKind, ChannelName, Outcome, PostStatus};
use airlock_dispatcher::{Dispatcher, DispatcherSettings};
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_platforms::{Account, Platform, Prepared, PublishRequest, StepError};

use crate::failures::with_failpoints;
use crate::support::Harness;

/// A sandbox whose requests each take a while, counting how many are out at once.
#[derive(Debug)]
struct Slow {
    inner: Sandbox,
    out: AtomicUsize,
    most: AtomicUsize,
}

#[async_trait::async_trait]
impl Platform for Slow {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Sandbox
    }

    fn prepares(&self) -> bool {
        false
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        Ok(None)
    }

    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let out = self.out.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(out, Ordering::SeqCst);
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        self.out.fetch_sub(1, Ordering::SeqCst);
        self.inner.publish(req, prepared).await
    }
}

/// One worker with a batch of `batch` over 8 due posts: the most requests it had out
/// at once.
async fn most_out_at_once(batch: usize) -> usize {
    let mut slow = None;
    let h = Harness::over(|dir| {
        let platform = Arc::new(Slow {
            inner: Sandbox::new(
                ChannelName::parse("cats").unwrap(),
                dir.join("cats.jsonl"),
                Simulate::Ok,
            ),
            out: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        });
        slow = Some(platform.clone());
        platform
    })
    .await;
    let slow = slow.unwrap();
    let mut posts = Vec::new();
    for n in 0..8 {
        posts.push(h.approved(&format!("post {n}")).await.id);
    }
    // Held like the failpoint tests, so that none of theirs fires in this one's runs.
    with_failpoints(&[], async || {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let dispatcher = Dispatcher::new(
            h.app.clone(),
            DispatcherSettings {
                workers: 1,
                batch,
                poll_interval: StdDuration::from_millis(50),
                reap_interval: StdDuration::from_secs(60),
            },
        );
        let running = tokio::spawn(dispatcher.run(shutdown.clone()));
        let deadline = std::time::Instant::now() + StdDuration::from_secs(20);
        for id in &posts {
            while h.app.store().get_post(*id).await.unwrap().status != PostStatus::Posted {
                assert!(
                    std::time::Instant::now() < deadline,
                    "post {id} never went out"
                );
                tokio::time::sleep(StdDuration::from_millis(20)).await;
            }
        }
        shutdown.cancel();
        running.await.unwrap();
    })
    .await;
    assert_eq!(h.published(), 8, "each post sent once");
    slow.most.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_has_its_batch_out_at_once_and_no_more() {
    assert_eq!(most_out_at_once(4).await, 4);
    assert_eq!(most_out_at_once(1).await, 1);
}
