//! An app over a real SQLite file in a temp dir with one sandbox channel.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, AppSettings, ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, Post};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;
use airlock_testkit::clock::TestClock;

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: TestClock,
    pub app: App,
}

impl Harness {
    /// Over a sandbox channel `cats` writing to `cats.jsonl`.
    pub async fn new() -> Harness {
        Harness::over(|dir| {
            Arc::new(Sandbox::new(
                ChannelName::parse("cats").unwrap(),
                dir.join("cats.jsonl"),
                Simulate::Ok,
            ))
        })
        .await
    }

    /// Over the sandbox channel `cats` that `platform` makes (given the harness's directory).
    pub async fn over(platform: impl FnOnce(&std::path::Path) -> Arc<dyn Platform>) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let tz = "Asia/Tokyo".parse().unwrap();
        let name = ChannelName::parse("cats").unwrap();
        let mut settings = AppSettings::new(tz).with_channel(ChannelSettings::new(
            name.clone(),
            ChannelKind::Sandbox,
            10,
            tz,
        ));
        settings.window.limit = 100;
        let sandbox = platform(dir.path());
        let clock = TestClock::new();
        let app = App::new(
            Arc::new(store) as Arc<dyn Store>,
            settings,
            BTreeMap::from([(name, sandbox)]),
            clock.clock(),
        );
        Harness { dir, clock, app }
    }

    /// Creates and approves a post as the CLI would.
    pub async fn approved(&self, text: &str) -> Post {
        let me = Principal::cli();
        let input = DraftInput {
            channel: "cats".into(),
            text: text.into(),
            ..DraftInput::default()
        };
        let post = self
            .app
            .create_post(&me, input, None, DraftOrigin::default())
            .await
            .unwrap()
            .post;
        self.app.approve(&me, post.id).await.unwrap()
    }

    /// Lines the sandbox wrote (one per publish).
    pub fn published(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("cats.jsonl"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}
