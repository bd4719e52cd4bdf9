//! The dashboard in a real browser: headless Chromium driven by Playwright
//! (`tests/browser/run.mjs`) against the router served in-process on 127.0.0.1.
//!
//! Needs Node.js, `/usr/bin/chromium` and `tests/browser/node_modules/playwright-core`;
//! `scripts/test.sh` installs them. When they are missing this test fails and says so.
//! Screenshots of every step land in `target/screenshots/`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::Harness;

const CHROMIUM: &str = "/usr/bin/chromium";

pub(crate) fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

pub(crate) fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("screenshots")
}

/// Refuses to go on without the browser tools, naming what is missing and the fix.
pub(crate) fn require_browser_tools() {
    let mut missing = Vec::new();
    if !Path::new(CHROMIUM).exists() {
        missing.push(format!("{CHROMIUM} (Debian package chromium)"));
    }
    if !browser_dir().join("node_modules/playwright-core").exists() {
        missing.push(format!(
            "{}/node_modules/playwright-core (npm ci)",
            browser_dir().display()
        ));
    }
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        missing.push("node (Node.js)".to_owned());
    }
    assert!(
        missing.is_empty(),
        "the browser test needs {}: run scripts/test.sh, which installs them",
        missing.join(", ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_works_the_queue_in_headless_chromium() {
    require_browser_tools();
    let h = Harness::new().await;
    // A second draft, for the critic's steps.
    let critique = crate::support::create(
        &h.app,
        crate::support::draft(
            "cats",
            &format!(
                "Every guest is promised a cat on the lap! {}",
                crate::support::PACE
            ),
        ),
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    // Live refresh every second, so the script can watch an open queue update itself.
    let router = h.router_with(airlock_dashboard::DashboardSettings {
        refresh_seconds: 1,
        ..airlock_dashboard::DashboardSettings::default()
    });
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let shots = screenshot_dir();
    std::fs::create_dir_all(&shots).unwrap();

    let output = tokio::process::Command::new("node")
        .arg(browser_dir().join("run.mjs"))
        .arg(&base_url)
        .arg(&h.operator)
        .arg(&shots)
        .env("AIRLOCK_POSTS", posts_json(&h, critique))
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
    assert!(stdout.contains("browser steps passed"), "{stdout}");

    // What the browser did is in the ledger.
    use airlock_core::PostStatus;
    let s = h.seeded;
    assert_eq!(
        h.status(s.draft).await,
        PostStatus::Posted,
        "approved, then published now"
    );
    assert_eq!(h.status(s.review[0]).await, PostStatus::Posted);
    assert_eq!(h.status(s.review[1]).await, PostStatus::Failed);
    assert!(h.pauses().await.is_empty(), "paused, then resumed");
    // The draft the script wrote, failed twice, quarantined, then released.
    let drafts = h
        .app
        .store()
        .list_posts(&airlock_store::PostFilter {
            status: Some(PostStatus::Draft),
            ..airlock_store::PostFilter::default()
        })
        .await
        .unwrap();
    let critiqued = drafts
        .iter()
        .find(|p| p.id == critique)
        .expect("the critiqued post is a draft again");
    assert_eq!((critiqued.quarantined_at, critiqued.revisions), (None, 0));
    assert_eq!(
        h.app.store().verdicts(critiqued.id).await.unwrap().len(),
        2,
        "two fail verdicts"
    );
    for step in [
        "01-login",
        "02-queue",
        "03-approved",
        "04-review",
        "05-resolved",
        "06-paused",
        "07-resumed",
        "08-published",
        "09-gauge",
        "10-quarantined",
        "11-released",
    ] {
        assert!(shots.join(format!("{step}.png")).exists(), "{step}.png");
    }
}

/// The seeded post ids, for the script to find its way.
fn posts_json(h: &Harness, critique: airlock_core::PostId) -> String {
    let s = h.seeded;
    format!(
        r#"{{"draft":{},"approved":{},"posted":{},"review":[{},{}],"failed":{},"critique":{}}}"#,
        s.draft, s.approved, s.posted, s.review[0], s.review[1], s.failed, critique
    )
}
