//! A real SQLite store in a temp dir, a settable clock, outbox rows queued through the
//! `Store` API, and sink settings for the fakes.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use secrecy::SecretString;
use sqlx::Row;

use airlock_core::{ChannelName, NewPost, Post, PostContent, PostId};
use airlock_notify::{Deliverer, DeliverySettings, Sink, SinkKind, SinkSettings};
use airlock_store::{CreatePost, EventNote, NewNotification, Posts, Store};
use airlock_store_sqlite::SqliteStore;

pub use airlock_testkit::clock::TestClock;

/// One outbox row as stored.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub attempts: i64,
    pub next_attempt_at: String,
    pub delivered_at: Option<String>,
    pub abandoned_at: Option<String>,
    pub last_error: Option<String>,
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub clock: TestClock,
}

impl Harness {
    pub async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        Harness {
            dir,
            store: Arc::new(store),
            clock: TestClock::at_rfc3339("2026-06-01T09:00:00Z"),
        }
    }

    /// A second connection pool on the same database file (another process, in effect).
    pub async fn reopen(&self) -> Arc<SqliteStore> {
        Arc::new(
            SqliteStore::open(&self.dir.path().join("airlock.db"))
                .await
                .unwrap(),
        )
    }

    pub fn deliverer(&self, sinks: Vec<SinkSettings>) -> Deliverer {
        self.deliverer_with(
            self.store.clone(),
            "worker-a",
            sinks,
            DeliverySettings::default(),
        )
    }

    pub fn deliverer_with(
        &self,
        store: Arc<SqliteStore>,
        worker: &str,
        sinks: Vec<SinkSettings>,
        settings: DeliverySettings,
    ) -> Deliverer {
        let sinks = sinks.into_iter().map(|s| Sink::new(s).unwrap()).collect();
        let store: Arc<dyn Store> = store;
        Deliverer::new(store, sinks, worker, settings)
            .unwrap()
            .with_clock(self.clock.clock())
    }

    /// A draft post to hang events on.
    pub async fn post(&self) -> Post {
        self.store
            .create_post(CreatePost {
                new: NewPost {
                    content: PostContent {
                        channel: ChannelName::parse("threads-main").unwrap(),
                        title: None,
                        text: "The cats nap in the sun.".to_owned(),
                        media: Vec::new(),
                        more: vec![],
                        first_comment: None,
                        link: None,
                        source: None,
                    },
                    scheduled_at: self.clock.now(),
                    test: false,
                    slot: None,
                },
                actor: "cli".to_owned(),
                now: self.clock.now(),
                idempotency: None,
                duplicate_window: None,
                max_live_drafts: None,
            })
            .await
            .unwrap()
            .post
    }

    /// Queues one notification for `sink` with an event note on `post`, in one
    /// transaction as `airlock-app` does; returns the outbox row id.
    pub async fn queue(&self, post: &Post, sink: &str, event: &str, message: &str) -> i64 {
        self.store
            .add_event(
                post.id,
                EventNote {
                    kind: "note".to_owned(),
                    note: Some(format!("{event} for {sink}")),
                },
                "cli",
                self.clock.now(),
                vec![notification(
                    sink,
                    event,
                    Some(post.id),
                    message,
                    self.clock.now(),
                )],
            )
            .await
            .unwrap();
        self.last_outbox_id().await
    }

    pub async fn last_outbox_id(&self) -> i64 {
        sqlx::query("SELECT max(id) AS id FROM outbox")
            .fetch_one(self.store.pool())
            .await
            .unwrap()
            .get("id")
    }

    pub async fn row(&self, id: i64) -> OutboxRow {
        let row = sqlx::query(
            "SELECT attempts, next_attempt_at, delivered_at, abandoned_at, last_error \
             FROM outbox WHERE id = ?",
        )
        .bind(id)
        .fetch_one(self.store.pool())
        .await
        .unwrap();
        OutboxRow {
            attempts: row.get("attempts"),
            next_attempt_at: row.get("next_attempt_at"),
            delivered_at: row.get("delivered_at"),
            abandoned_at: row.get("abandoned_at"),
            last_error: row.get("last_error"),
        }
    }

    pub async fn last_errors(&self) -> Vec<String> {
        sqlx::query("SELECT last_error FROM outbox WHERE last_error IS NOT NULL ORDER BY id")
            .fetch_all(self.store.pool())
            .await
            .unwrap()
            .iter()
            .map(|row| row.get("last_error"))
            .collect()
    }
}

/// The payload shape `airlock-app` queues.
pub fn notification(
    sink: &str,
    event: &str,
    post_id: Option<PostId>,
    message: &str,
    at: DateTime<Utc>,
) -> NewNotification {
    NewNotification {
        sink: sink.to_owned(),
        event: event.to_owned(),
        post_id,
        payload: serde_json::json!({
            "event": event,
            "at": ts(at),
            "message": message,
            "post_id": post_id,
            "detail": {"channel": "threads-main"},
        }),
    }
}

/// A time as the store writes it.
pub fn ts(at: DateTime<Utc>) -> String {
    airlock_core::time::format_utc(at)
}

pub const TIMEOUT: StdDuration = StdDuration::from_secs(2);

pub fn slack_sink(name: &str, webhook_url: &str) -> SinkSettings {
    SinkSettings {
        name: name.to_owned(),
        kind: SinkKind::Slack {
            webhook_url: SecretString::from(webhook_url.to_owned()),
        },
        events: vec!["published".to_owned(), "failed".to_owned()],
        request_timeout: TIMEOUT,
    }
}

pub fn discord_sink(name: &str, base_url: &str, token: &str, channel_id: &str) -> SinkSettings {
    SinkSettings {
        name: name.to_owned(),
        kind: SinkKind::Discord {
            token: SecretString::from(token.to_owned()),
            channel_id: channel_id.to_owned(),
            base_url: base_url.to_owned(),
        },
        events: vec!["needs_review".to_owned()],
        request_timeout: TIMEOUT,
    }
}

pub fn webhook_sink(name: &str, url: &str, secret: Option<&str>) -> SinkSettings {
    SinkSettings {
        name: name.to_owned(),
        kind: SinkKind::Webhook {
            url: url.to_owned(),
            secret: secret.map(|s| SecretString::from(s.to_owned())),
            signature_v1: true,
        },
        events: vec!["published".to_owned()],
        request_timeout: TIMEOUT,
    }
}
