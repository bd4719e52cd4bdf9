//! Sign-in, sessions, CSRF, headers and escaping, over HTTP with `oneshot`.

use axum::http::StatusCode;
use chrono::Duration;

use airlock_app::Principal;
use airlock_app::posts::DraftOrigin;
use airlock_core::{Media, PostStatus};
use airlock_dashboard::DashboardSettings;
use airlock_dashboard::guard::SECURITY_HEADERS;

use crate::support::{Browser, Harness, draft};

#[tokio::test]
async fn unauthenticated_pages_redirect_to_the_login_page() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    for path in [
        "/",
        "/review",
        "/live",
        &format!("/posts/{}", h.seeded.draft),
        "/calendar",
        "/compose",
    ] {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(page.location(), "/login", "{path}");
    }
}

#[tokio::test]
async fn the_login_page_has_a_token_field_and_a_pre_session_csrf_token() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    let page = browser.get("/login").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"name="token""#));
    assert!(!page.csrf().is_empty());
    let cookies = page.set_cookies();
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    assert!(cookies[0].starts_with("airlock_login="));
    assert!(cookies[0].contains("HttpOnly"));
    assert!(cookies[0].contains("SameSite=Strict"));
}

#[tokio::test]
async fn an_operator_token_signs_in_with_a_strict_http_only_session_cookie() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    let page = browser.login(&h.operator).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    assert_eq!(page.location(), "/");
    let session = page
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("airlock_session="))
        .expect("a session cookie");
    let id = session
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("airlock_session=");
    assert_eq!(id.len(), 64, "a 256-bit id in hex: {session}");
    assert!(session.contains("; HttpOnly"), "{session}");
    assert!(session.contains("; SameSite=Strict"), "{session}");
    assert!(session.contains("; Path=/"), "{session}");
    assert!(!session.contains("Secure"), "{session}");
    let queue = browser.get("/").await;
    assert_eq!(queue.status, StatusCode::OK);
    assert!(queue.body.contains("token:ops"));
}

#[tokio::test]
async fn secure_cookies_add_the_secure_flag_and_the_host_prefix() {
    let h = Harness::new().await;
    let settings = DashboardSettings {
        secure_cookies: true,
        ..DashboardSettings::default()
    };
    let mut browser = Browser::new(h.router_with(settings));
    let login = browser.get("/login").await;
    let nonce = &login.set_cookies()[0];
    assert!(nonce.starts_with("__Host-airlock_login="), "{nonce}");
    assert!(
        nonce.contains("; Path=/;") && nonce.ends_with("; Secure"),
        "{nonce}"
    );
    let page = browser.login(&h.operator).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    let session = page
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("__Host-airlock_session="))
        .unwrap();
    assert!(session.contains("; HttpOnly; SameSite=Strict; Path=/"));
    assert!(session.ends_with("; Secure"), "{session}");
    // The prefixed session works: the queue opens, and a form posts with it.
    assert_eq!(browser.get("/").await.status, StatusCode::OK);
    let logout = browser.submit("/", "/logout", &[]).await;
    assert_eq!(logout.status, StatusCode::SEE_OTHER, "{}", logout.body);
}

#[tokio::test]
async fn a_writer_token_cannot_sign_in() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    let page = browser.login(&h.writer).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(
        page.body
            .contains("only a token with the operator role may sign in"),
        "{}",
        page.body
    );
    assert!(page.body.contains("token:agent holds roles [writer]"));
    assert!(!browser.cookies.contains_key("airlock_session"));
    assert_eq!(browser.get("/").await.location(), "/login");
}

#[tokio::test]
async fn an_unknown_token_cannot_sign_in() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    let page = browser.login("alk_0000").await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED);
    assert!(page.body.contains("unknown or revoked"));
    assert!(!browser.cookies.contains_key("airlock_session"));
}

#[tokio::test]
async fn login_without_a_valid_csrf_token_is_refused_with_403() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    // No pre-session cookie at all.
    let page = browser
        .post("/login", &[("csrf", "00"), ("token", &h.operator)])
        .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    // A pre-session cookie, but a missing or forged token.
    let form = browser.get("/login").await;
    let good = form.csrf();
    for fields in [
        vec![("token", h.operator.as_str())],
        vec![("csrf", "deadbeef"), ("token", h.operator.as_str())],
        vec![
            ("csrf", &good[..good.len() - 2]),
            ("token", h.operator.as_str()),
        ],
    ] {
        let page = browser.post("/login", &fields).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{fields:?}");
        assert!(page.set_cookies().is_empty());
    }
    assert!(!browser.cookies.contains_key("airlock_session"));
    assert_eq!(browser.get("/").await.location(), "/login");
}

#[tokio::test]
async fn every_post_route_refuses_a_missing_or_wrong_csrf_token_and_changes_nothing() {
    let h = Harness::new().await;
    let s = h.seeded;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    h.app
        .pause(&Principal::cli(), Some("strict"), "for the resume route")
        .await
        .unwrap();
    let before_events = h.n_events().await;
    let before_pauses = h.pauses().await;
    let before_statuses = statuses(&h).await;

    let draft = s.draft.to_string();
    let approved = s.approved.to_string();
    let review = s.review[0].to_string();
    let failed = s.failed.to_string();
    let routes: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("/posts/{draft}/approve"), vec![]),
        (format!("/posts/{draft}/reject"), vec![("reason", "no")]),
        (format!("/posts/{approved}/unapprove"), vec![]),
        (format!("/posts/{draft}/edit"), vec![("text", "changed")]),
        (format!("/posts/{approved}/publish"), vec![]),
        (format!("/posts/{failed}/requeue"), vec![]),
        (
            format!("/posts/{review}/resolve"),
            vec![("outcome", "published")],
        ),
        (format!("/posts/{draft}/note"), vec![("note", "hi")]),
        (
            "/compose".to_owned(),
            vec![("channel", "cats"), ("p1_text", "hi"), ("intent", "save")],
        ),
        (
            "/compose/check".to_owned(),
            vec![("channel", "cats"), ("p1_text", "hi")],
        ),
        (
            format!("/posts/{draft}/move"),
            vec![("date", "2026-12-02"), ("time", "10:00")],
        ),
        (
            "/pause".to_owned(),
            vec![("channel", "cats"), ("reason", "x")],
        ),
        ("/resume".to_owned(), vec![("channel", "strict")]),
        ("/logout".to_owned(), vec![]),
        ("/login".to_owned(), vec![("token", h.operator.as_str())]),
    ];
    // Another session's valid token is still the wrong token here.
    let other = Browser::signed_in(h.router(), &h.operator).await;
    let mut other = other;
    let foreign = other.get("/").await.csrf();
    for (path, fields) in &routes {
        let mut with_wrong = fields.clone();
        with_wrong.push(("csrf", "0123abcd"));
        let mut with_foreign = fields.clone();
        with_foreign.push(("csrf", foreign.as_str()));
        let mut with_empty = fields.clone();
        with_empty.push(("csrf", ""));
        for attempt in [fields.clone(), with_wrong, with_foreign, with_empty] {
            let page = browser.post(path, &attempt).await;
            assert_eq!(page.status, StatusCode::FORBIDDEN, "{path} {attempt:?}");
        }
    }
    assert_eq!(h.n_events().await, before_events, "no event was written");
    assert_eq!(h.pauses().await, before_pauses);
    assert_eq!(statuses(&h).await, before_statuses);
    // The session survived the refused logout.
    assert_eq!(browser.get("/").await.status, StatusCode::OK);
}

async fn statuses(h: &Harness) -> Vec<PostStatus> {
    let s = h.seeded;
    let mut out = Vec::new();
    for id in [
        s.draft,
        s.approved,
        s.posted,
        s.review[0],
        s.review[1],
        s.failed,
    ] {
        out.push(h.status(id).await);
    }
    out
}

#[tokio::test]
async fn every_response_sends_the_security_headers() {
    let h = Harness::new().await;
    let mut anonymous = Browser::new(h.router());
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let mut pages = vec![
        anonymous.get("/login").await,
        anonymous.get("/").await,
        anonymous.post("/login", &[]).await,
        anonymous.get("/static/dashboard.css").await,
    ];
    for path in [
        "/".to_owned(),
        "/?status=draft&channel=cats".to_owned(),
        "/review".to_owned(),
        "/live".to_owned(),
        format!("/posts/{}", h.seeded.posted),
        "/posts/999".to_owned(),
        "/static/dashboard.js".to_owned(),
    ] {
        pages.push(browser.get(&path).await);
    }
    pages.push(
        browser
            .submit("/", "/pause", &[("channel", "cats"), ("reason", "r")])
            .await,
    );
    for page in pages {
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(
                page.headers.get(name).and_then(|v| v.to_str().ok()),
                Some(value),
                "{name} on a {} response",
                page.status
            );
        }
    }
    let csp = SECURITY_HEADERS[1].1;
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ] {
        assert!(csp.contains(directive), "{directive}");
    }
}

#[tokio::test]
async fn pages_use_no_inline_script_or_style() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    for path in [
        "/".to_owned(),
        "/review".to_owned(),
        format!("/posts/{}", h.seeded.review[0]),
        "/calendar".to_owned(),
        "/calendar?view=month".to_owned(),
        "/compose".to_owned(),
    ] {
        let page = browser.get(&path).await;
        assert!(!page.body.contains("style="), "{path}");
        assert!(!page.body.contains("<style"), "{path}");
        assert_eq!(
            page.body.matches("<script").count(),
            1,
            "only the one external script on {path}"
        );
        assert!(
            page.body
                .contains(r#"<script src="/static/dashboard.js" defer></script>"#)
        );
    }
}

#[tokio::test]
async fn logout_ends_the_session() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let old_cookie = browser.cookies["airlock_session"].clone();
    let csrf = browser.get("/").await.csrf();
    let page = browser.post("/logout", &[("csrf", &csrf)]).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.location(), "/login?ended=signed_out");
    assert!(
        page.set_cookies()
            .iter()
            .any(|c| c.starts_with("airlock_session=;") && c.contains("Max-Age=0"))
    );
    // Replaying the old cookie gets nowhere, and its forms are refused.
    browser
        .cookies
        .insert("airlock_session".into(), old_cookie.clone());
    let refused = browser
        .post(
            &format!("/posts/{}/approve", h.seeded.draft),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(h.status(h.seeded.draft).await, PostStatus::Draft);
    assert_eq!(browser.get("/").await.location(), "/login");
    let login = Browser::new(h.router())
        .get("/login?ended=signed_out")
        .await;
    assert!(login.body.contains("You are signed out."));
}

#[tokio::test]
async fn a_revoked_tokens_session_stops_working() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let session = browser.cookies["airlock_session"].clone();
    let csrf = browser.get("/").await.csrf();
    h.app.revoke_token(&Principal::cli(), "ops").await.unwrap();
    let page = browser.get("/").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.location(), "/login?ended=revoked");
    browser.cookies.insert("airlock_session".into(), session);
    // The session is gone: its forms are refused and change nothing.
    let refused = browser
        .post(
            &format!("/posts/{}/approve", h.seeded.draft),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(h.status(h.seeded.draft).await, PostStatus::Draft);
    let login = browser.get("/login?ended=revoked").await;
    assert!(login.body.contains("its token was revoked"));
}

#[tokio::test]
async fn a_session_ends_when_its_time_is_up() {
    let h = Harness::new().await;
    let settings = DashboardSettings {
        session_ttl: std::time::Duration::from_secs(3600),
        ..DashboardSettings::default()
    };
    let mut browser = Browser::signed_in(h.router_with(settings), &h.operator).await;
    h.clock.advance(Duration::minutes(59));
    assert_eq!(browser.get("/").await.status, StatusCode::OK);
    h.clock.advance(Duration::minutes(2));
    assert_eq!(browser.get("/").await.location(), "/login?ended=expired");
}

const XSS: &str = "<script>alert(1)</script>";
/// askama escapes `<` and `>` as numeric entities.
const ESCAPED: &str = "&#60;script&#62;alert(1)&#60;/script&#62;";

#[tokio::test]
async fn agent_written_markup_is_escaped_wherever_it_shows() {
    let h = Harness::new().await;
    let mut input = draft("cats", &format!("Hello {XSS} cats"));
    input.title = Some(format!("Title {XSS}"));
    input.media = vec![Media::new(
        "https://inn.example/a.jpg?q=\"><script>alert(1)</script>".into(),
        Some(format!("Alt {XSS}")),
    )];
    input.link = Some("https://inn.example/?x=<script>alert(1)</script>".into());
    let id = h
        .app
        .create_post(&Principal::cli(), input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post
        .id;
    // The same markup in a needs_review post's text, so the inbox shows it too.
    let review = h.seeded.review[0];
    h.app
        .add_note(&Principal::cli(), review, &format!("note {XSS}"))
        .await
        .unwrap();

    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let post_path = format!("/posts/{id}");
    let page = browser
        .submit(
            &post_path,
            &format!("{post_path}/reject"),
            &[("reason", &format!("reason {XSS}"))],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let page = browser
        .submit(
            &post_path,
            &format!("{post_path}/note"),
            &[("note", &format!("note {XSS}"))],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let page = browser
        .submit(
            "/",
            "/pause",
            &[("channel", "cats"), ("reason", &format!("pause {XSS}"))],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);

    let post_page = browser.get(&post_path).await;
    for needle in [
        format!("Hello {ESCAPED} cats"),
        format!("Title {ESCAPED}"),
        format!("Alt {ESCAPED}"),
        format!("reason {ESCAPED}"),
        format!("note {ESCAPED}"),
    ] {
        assert!(
            post_page.body.contains(&needle),
            "{needle} on the post page"
        );
    }
    let queue = browser.get("/").await;
    assert!(
        queue.body.contains(&format!("pause {ESCAPED}")),
        "pause banner"
    );
    assert!(
        queue.body.contains(&format!("Hello {ESCAPED} cats")),
        "queue"
    );
    let inbox = browser.get("/review").await;
    assert!(
        inbox.body.contains(&format!("note {ESCAPED}")),
        "inbox timeline"
    );
    let live = browser.get("/live").await;
    for page in [&post_page, &queue, &inbox, &live] {
        assert!(!page.body.contains(XSS));
        assert!(!page.body.contains("<script>"));
        assert!(!page.body.contains("\"><script"));
    }
}

#[tokio::test]
async fn redirects_after_actions_stay_on_this_site() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let id = h.seeded.draft;
    for back in ["https://evil.example/", "//evil.example", "/\\evil.example"] {
        let page = browser
            .submit(
                "/",
                &format!("/posts/{id}/note"),
                &[("note", "n"), ("back", back)],
            )
            .await;
        assert_eq!(page.status, StatusCode::SEE_OTHER);
        assert_eq!(page.location(), format!("/posts/{id}"), "{back}");
    }
}

#[tokio::test]
async fn a_login_token_made_from_a_nonce_an_attacker_chose_is_refused() {
    use hmac::{Hmac, Mac};
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    // Someone who can set a cookie for the dashboard's site picks the nonce, and makes
    // the token as a MAC keyed by that nonce alone.
    let nonce = "a".repeat(64);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(nonce.as_bytes()).unwrap();
    mac.update(b"airlock dashboard csrf:login");
    let forged = hex::encode(mac.finalize().into_bytes());
    browser
        .cookies
        .insert("airlock_login".to_owned(), nonce.clone());
    let page = browser
        .post("/login", &[("csrf", &forged), ("token", &h.operator)])
        .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
    assert!(!browser.cookies.contains_key("airlock_session"));
}

#[tokio::test]
async fn a_login_form_still_submits_after_a_restart() {
    let h = Harness::new().await;
    let mut browser = Browser::new(h.router());
    let form = browser.get("/login").await;
    let csrf = form.csrf();
    // A new server over the same ledger (a restart or another host).
    browser.router = h.router();
    let page = browser
        .post("/login", &[("csrf", &csrf), ("token", &h.operator)])
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
}
