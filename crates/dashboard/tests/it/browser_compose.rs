//! Compose and the calendar in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/compose.mjs`) against the router served in-process on 127.0.0.1, with
//! the script that checks a draft as it is typed.
//!
//! Needs what `browser.rs` needs. Screenshots land in `target/screenshots/`; the ones
//! `docs/dashboard.md` shows are copies of them in `docs/screenshots/`.

use std::process::Stdio;

use airlock_app::Principal;
use airlock_core::PostStatus;
use chrono::{DateTime, Utc};

use crate::browser::{browser_dir, require_browser_tools, screenshot_dir};
use crate::compose::with_rules;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_composes_checks_saves_and_moves_a_post_in_headless_chromium() {
    require_browser_tools();
    let h = with_rules().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let router = h.router();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let shots = screenshot_dir();
    std::fs::create_dir_all(&shots).unwrap();

    let output = tokio::process::Command::new("node")
        .arg(browser_dir().join("compose.mjs"))
        .arg(&base_url)
        .arg(&h.operator)
        .arg(&shots)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("node runs");
    server.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the browser script failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("compose steps passed"), "{stdout}");

    // What the browser did is in the ledger: one draft, by the operator, moved to
    // 10:15 on 4 December in New York (15:15 UTC).
    let posts = h
        .app
        .list_posts(
            &Principal::cli(),
            &airlock_app::PostFilter {
                channel: Some(airlock_core::ChannelName::parse("inn").unwrap()),
                ..airlock_app::PostFilter::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(posts.len(), 1, "one draft, whatever was clicked twice");
    let post = &posts[0];
    assert_eq!(post.status, PostStatus::Draft);
    assert_eq!(post.created_by, "token:ops");
    assert_eq!(
        post.content.text,
        "Breakfast is served from seven, with fresh bread. #inn"
    );
    assert_eq!(
        post.content.media[0].alt.as_deref(),
        Some("Fresh bread on the counter")
    );
    let moved: DateTime<Utc> = "2026-12-04T15:15:00Z".parse().unwrap();
    assert_eq!(post.scheduled_at, moved);
    for name in [
        "compose-desktop",
        "compose-phone",
        "calendar-week-desktop",
        "calendar-week-phone",
        "calendar-month-desktop",
        "calendar-month-phone",
    ] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}.png");
    }
}
