//! Many dispatchers at once over one SQLite file: every post is published exactly once,
//! and quotas are never exceeded. Each "dispatcher" has its own connection pool, as
//! separate processes would (the process-level version lives in the CLI tests).

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_app::publish::PublishResult;
use airlock_app::{App, Principal};
use airlock_core::{PostId, PostStatus};
use airlock_platforms::sandbox::Simulate;
use airlock_store::{PostFilter, Store};
use airlock_store_sqlite::SqliteStore;

use crate::support::*;

async fn dispatchers(h: &Harness, n: usize) -> Vec<App> {
    let mut apps = Vec::new();
    for _ in 0..n {
        let store = SqliteStore::open(&h.path("airlock.db")).await.unwrap();
        apps.push(App::new(
            Arc::new(store) as Arc<dyn Store>,
            h.settings.clone(),
            h.platforms.clone(),
            h.clock.clock(),
        ));
    }
    apps
}

/// Each of `apps` publishes `batch` due posts at a time until none is left.
async fn drain(apps: Vec<App>, batch: usize) -> Vec<(PostId, PublishResult)> {
    let mut tasks = tokio::task::JoinSet::new();
    for app in apps {
        tasks.spawn(async move {
            let mut done = Vec::new();
            loop {
                let runs = app.publish_batch(None, batch).await.unwrap();
                if runs.is_empty() {
                    break done;
                }
                assert!(runs.len() <= batch, "{runs:?}");
                done.extend(runs.into_iter().map(|run| {
                    let report = run.unwrap();
                    (report.post.id, report.result)
                }));
            }
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_dispatchers_publish_each_post_exactly_once() {
    let mut h = Harness::new(|dir| {
        vec![
            sandbox(dir, "cats", Simulate::Ok, 1000),
            sandbox(dir, "dogs", Simulate::Ok, 1000),
        ]
    })
    .await;
    h.settings.window.limit = 1000;
    let app = h.app();
    let mut ids = Vec::new();
    for n in 0..120 {
        let channel = if n % 2 == 0 { "cats" } else { "dogs" };
        ids.push(approved(&app, channel, &format!("post {n}")).await.id);
    }
    let results = drain(dispatchers(&h, 6).await, 1).await;
    assert_eq!(results.len(), ids.len());
    assert!(results.iter().all(|(_, r)| *r == PublishResult::Posted));
    let mut handled: BTreeMap<PostId, usize> = BTreeMap::new();
    for (id, _) in &results {
        *handled.entry(*id).or_default() += 1;
    }
    for (n, id) in ids.iter().enumerate() {
        let channel = if n % 2 == 0 { "cats" } else { "dogs" };
        assert_eq!(handled[id], 1, "post {id} handled once");
        assert_eq!(
            sandbox_lines(&h.path(&format!("{channel}.jsonl")), *id),
            1,
            "post {id} published once"
        );
        assert_eq!(status(&app, *id).await, PostStatus::Posted);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quotas_hold_under_concurrent_dispatchers() {
    let mut h = Harness::new(|dir| {
        vec![
            sandbox(dir, "cats", Simulate::Ok, 4),
            sandbox(dir, "dogs", Simulate::Ok, 100),
        ]
    })
    .await;
    h.settings.window.limit = 7;
    let app = h.app();
    for n in 0..40 {
        let channel = if n % 2 == 0 { "cats" } else { "dogs" };
        approved(&app, channel, &format!("post {n}")).await;
    }
    let results = drain(dispatchers(&h, 5).await, 1).await;
    let posted: Vec<_> = results
        .iter()
        .filter(|(_, r)| *r == PublishResult::Posted)
        .collect();
    assert_eq!(posted.len(), 7, "the window allows 7");
    let posts = app
        .list_posts(
            &Principal::cli(),
            &PostFilter {
                limit: Some(1000),
                ..PostFilter::default()
            },
        )
        .await
        .unwrap();
    let cats_posted = posts
        .iter()
        .filter(|p| p.status == PostStatus::Posted && p.content.channel.as_str() == "cats")
        .count();
    assert!(
        cats_posted <= 4,
        "cats' daily limit is 4, posted {cats_posted}"
    );
    let quota = app.quota_status(&Principal::cli()).await.unwrap();
    assert_eq!(quota.window.usage.used, 7);
    assert!(
        posts
            .iter()
            .all(|p| matches!(p.status, PostStatus::Posted | PostStatus::Approved))
    );
}

/// A worker looking for a post while the others are busy publishing starts at the most
/// overdue one: only workers looking at the same time spread over the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_looking_alone_takes_the_most_overdue_post() {
    let slow = DroppingServer::start(Some(std::time::Duration::from_secs(3))).await;
    let h = Harness::new(|dir| {
        vec![
            webhook("slow", &slow.url, std::time::Duration::from_secs(10), 10),
            sandbox(dir, "news", Simulate::Ok, 10),
        ]
    })
    .await;
    let app = h.app();
    let busy = approved(&app, "slow", "held at the platform").await;
    let mut backlog = Vec::new();
    for n in 1..=3 {
        backlog.push(approved(&app, "news", &format!("backlog {n}")).await.id);
    }
    // One worker is busy publishing, past its claim.
    let worker = app.clone();
    let slow_channel = [name("slow")];
    let held = tokio::spawn(async move { worker.publish_next(Some(&slow_channel)).await });
    assert!(
        eventually(std::time::Duration::from_secs(5), async || {
            status(&app, busy.id).await == PostStatus::Posting
        })
        .await
    );
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.id, backlog[0], "the most overdue post first");
    held.await.unwrap().unwrap();
}

/// Workers that each take a batch of due posts from one look and publish them at once:
/// every post goes out at most once, as its report says, and the window and the daily
/// limit hold exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_publish_each_post_once_within_every_limit() {
    let mut h = Harness::new(|dir| {
        vec![
            sandbox(dir, "cats", Simulate::Ok, 5),
            sandbox(dir, "dogs", Simulate::Ok, 100),
        ]
    })
    .await;
    h.settings.window.limit = 30;
    let app = h.app();
    let mut ids = Vec::new();
    for n in 0..60 {
        let channel = if n % 3 == 0 { "cats" } else { "dogs" };
        ids.push((
            channel,
            approved(&app, channel, &format!("post {n}")).await.id,
        ));
    }
    let results = drain(dispatchers(&h, 3).await, 4).await;
    let posted: Vec<PostId> = results
        .iter()
        .filter(|(_, r)| *r == PublishResult::Posted)
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(posted.len(), 30, "the window allows 30: {results:?}");
    let mut cats = 0;
    for (channel, id) in &ids {
        let lines = sandbox_lines(&h.path(&format!("{channel}.jsonl")), *id);
        let out = posted.iter().filter(|p| *p == id).count();
        assert_eq!(
            lines, out,
            "post {id} published {lines} times, reported {out}"
        );
        assert!(out <= 1, "post {id} published twice");
        match status(&app, *id).await {
            PostStatus::Posted => cats += usize::from(*channel == "cats"),
            PostStatus::Approved => assert_eq!(out, 0),
            other => panic!("post {id} is {other}"),
        }
    }
    assert_eq!(cats, 5, "cats' daily limit is 5");
}
