//! What a page costs, whatever the ledger holds: the queue and its live fragment (which
//! browsers fetch every 15 seconds) load counts and excerpts, never whole texts, and the
//! review inbox loads one page of whole posts. Measured with a store that delegates to
//! the real SQLite ledger and counts the post text it hands back.
//!
//! The bound, from `pages`: one render of `/` or `/live` loads no whole text and at most
//! `INBOX_LIMIT + 3 × SCHEDULE_LIMIT + TABLE_LIMIT` excerpts of `EXCERPT_CHARS + 1`
//! characters; `/review` loads at most `REVIEW_PAGE` whole posts.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::StatusCode;

use airlock_app::posts::DraftOrigin;
use airlock_app::{App, AppSettings, ChannelSettings, Principal};
use airlock_core::limits::MAX_TEXT_CHARS;
use airlock_core::{ChannelKind, ChannelName, Role, RoleSet};
use airlock_dashboard::pages::{
    EXCERPT_CHARS, INBOX_LIMIT, REVIEW_PAGE, SCHEDULE_LIMIT, TABLE_LIMIT,
};
use airlock_dashboard::{DashboardSettings, router};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;
use airlock_store_tests::metered::Metered;
use secrecy::ExposeSecret;

use crate::support::{Browser, TestClock, draft, tokyo};

#[tokio::test]
async fn pages_over_many_maximum_size_drafts_load_excerpts_not_texts() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let metered = Arc::new(Metered::new(Arc::new(sqlite)));
    let cats = ChannelName::parse("cats").unwrap();
    let settings = AppSettings::new(tokyo()).with_channel(ChannelSettings::new(
        cats.clone(),
        ChannelKind::Sandbox,
        5,
        tokyo(),
    ));
    let mut platforms: BTreeMap<ChannelName, Arc<dyn Platform>> = BTreeMap::new();
    platforms.insert(
        cats.clone(),
        Arc::new(Sandbox::new(
            cats,
            dir.path().join("cats.jsonl"),
            Simulate::Ok,
        )),
    );
    let app = App::new(
        metered.clone() as Arc<dyn Store>,
        settings,
        platforms,
        TestClock::new().clock(),
    );
    let me = Principal::cli();
    // 60 drafts and 30 approved posts, each as large as a post may be: 9 MB of text.
    let text = "猫".repeat(MAX_TEXT_CHARS);
    // The same text each time, on purpose: the operator overrides the duplicate check.
    let on_purpose = DraftOrigin {
        allow_duplicate: true,
        ..DraftOrigin::default()
    };
    for i in 0..90 {
        let post = app
            .create_post(&me, draft("cats", &text), None, on_purpose.clone())
            .await
            .unwrap()
            .post;
        if i % 3 == 0 {
            app.approve(&me, post.id).await.unwrap();
        }
    }
    let stored_bytes = 90 * text.len();
    let operator = app
        .create_token(&me, "ops", RoleSet::of(&[Role::Operator]))
        .await
        .unwrap()
        .token;
    let mut browser = Browser::signed_in(
        router(app.clone(), DashboardSettings::default()),
        operator.expose_secret(),
    )
    .await;

    let most_excerpts = (INBOX_LIMIT + 3 * SCHEDULE_LIMIT + TABLE_LIMIT) as usize;
    let excerpt_bound = most_excerpts * (EXCERPT_CHARS as usize + 1) * 4;
    for path in ["/", "/live", "/?status=draft", "/live?status=approved"] {
        metered.take();
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}: {}", page.body);
        let loaded = metered.take();
        assert_eq!(
            loaded.whole_texts, 0,
            "{path} loaded whole texts: {loaded:?}"
        );
        assert!(
            loaded.excerpt_bytes <= excerpt_bound,
            "{path} loaded {} bytes of excerpts, over the bound of {excerpt_bound}",
            loaded.excerpt_bytes
        );
        // Here: at most 90 table rows and 30 schedule rows of 121 characters.
        assert!(loaded.excerpt_bytes <= 120 * 121 * 3, "{path}: {loaded:?}");
        assert!(
            page.body.len() < stored_bytes / 50,
            "{path} rendered {} bytes",
            page.body.len()
        );
    }
    // The counts are counts of everything, not of what was listed.
    let page = browser.get("/").await;
    for (n, label) in [(60, "draft"), (30, "approved")] {
        let count =
            format!(r#"<span class="count-n">{n}</span><span class="count-label">{label}</span>"#);
        assert!(page.body.contains(&count), "{count} not on the page");
    }

    metered.take();
    let page = browser.get("/review").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(metered.take().whole_texts <= REVIEW_PAGE as usize);
}
