//! Restarts are invisible to people: a session and the forms already on screen keep
//! working when `serve` restarts or is upgraded (a new router, as a new process builds),
//! because the ledger keeps the session, hashed, and CSRF tokens come from the cookie.

use axum::http::StatusCode;
use sqlx::Row;

use airlock_core::PostStatus;
use airlock_dashboard::DashboardSettings;
use airlock_store_sqlite::SqliteStore;

use crate::support::*;

#[tokio::test]
async fn a_session_and_its_open_forms_survive_a_restart() {
    let h = Harness::new().await;
    let mut before = Browser::signed_in(h.router(), &h.operator).await;
    let session = before.cookies["airlock_session"].clone();
    // A form loaded before the restart...
    let csrf = before
        .get(&format!("/posts/{}", h.seeded.draft))
        .await
        .csrf();

    // ...submitted to the process that replaced it.
    let mut after = Browser::new(h.router_with(DashboardSettings::default()));
    after
        .cookies
        .insert("airlock_session".into(), session.clone());
    let page = after
        .post(
            &format!("/posts/{}/approve", h.seeded.draft),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    assert_eq!(h.status(h.seeded.draft).await, PostStatus::Approved);
    assert_eq!(after.get("/").await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_ledger_keeps_sessions_as_hashes_only() {
    let h = Harness::new().await;
    let browser = Browser::signed_in(h.router(), &h.operator).await;
    let session = browser.cookies["airlock_session"].clone();
    let store = SqliteStore::open(&h._dir.path().join("airlock.db"))
        .await
        .unwrap();
    let rows = sqlx::query("SELECT id_sha256, token_sha256 FROM dashboard_sessions")
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let id: String = rows[0].get("id_sha256");
    let token: String = rows[0].get("token_sha256");
    assert_eq!(id, airlock_core::hash::sha256_hex(session.as_bytes()));
    assert_eq!(token, airlock_core::hash::sha256_hex(h.operator.as_bytes()));
    let dump: Vec<String> = sqlx::query_scalar(
        "SELECT coalesce(group_concat(id_sha256 || token_sha256 || created_at || expires_at), '') \
         FROM dashboard_sessions",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(!dump[0].contains(&session) && !dump[0].contains(&h.operator));
}

#[tokio::test]
async fn signing_out_in_one_process_ends_the_session_in_the_other() {
    let h = Harness::new().await;
    let mut first = Browser::signed_in(h.router(), &h.operator).await;
    let session = first.cookies["airlock_session"].clone();
    let mut second = Browser::new(h.router());
    second.cookies.insert("airlock_session".into(), session);
    assert_eq!(second.get("/").await.status, StatusCode::OK);
    let csrf = first.get("/").await.csrf();
    first.post("/logout", &[("csrf", &csrf)]).await;
    assert_eq!(second.get("/").await.location(), "/login");
}
