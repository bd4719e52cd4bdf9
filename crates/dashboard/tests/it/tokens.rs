//! The tokens page and the audit export: tokens listed with their roles, last use and
//! live drafts; a token created with its secret shown once and never again; revoking
//! after a confirmation; who did what as CSV and JSON Lines.

use axum::http::StatusCode;

use airlock_app::posts::DraftOrigin;
use airlock_app::{Error, Principal};
use airlock_core::{Actor, PostStatus, Role, RoleSet};

use crate::support::*;

fn as_token(name: &str, roles: &[Role]) -> Principal {
    Principal {
        actor: Actor::Token(name.into()),
        roles: RoleSet::of(roles),
        sod_exempt: false,
    }
}

/// The `alk_` secret on a page, if any.
fn secret_in(body: &str) -> Option<String> {
    let start = body.find("alk_")?;
    Some(body[start..start + 68].to_owned())
}

#[tokio::test]
async fn the_tokens_page_lists_roles_last_use_and_live_drafts() {
    let h = Harness::new().await;
    let agent = as_token("agent", &[Role::Writer]);
    for text in ["First idea.", "Second idea."] {
        h.app
            .create_post(
                &agent,
                draft("cats", &format!("{text} {PACE}")),
                None,
                DraftOrigin::default(),
            )
            .await
            .unwrap();
    }
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let queue = browser.get("/").await;
    assert!(
        queue.body.contains("<a href=\"/tokens\""),
        "the nav links it"
    );
    let page = browser.get("/tokens").await;
    assert_eq!(page.status, StatusCode::OK);
    let row = |name: &str| {
        let start = page
            .body
            .find(&format!("id=\"token-{name}\""))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", page.body));
        let end = page.body[start..].find("</tr>").unwrap() + start;
        page.body[start..end].to_owned()
    };
    let ops = row("ops");
    assert!(ops.contains(">operator</td>"), "{ops}");
    assert!(ops.contains("badge-you"), "the signed-in token: {ops}");
    assert!(!ops.contains("never"), "signing in used it: {ops}");
    let agent_row = row("agent");
    assert!(agent_row.contains(">writer</td>"), "{agent_row}");
    assert!(
        agent_row.contains("</span>2</td>"),
        "two live drafts: {agent_row}"
    );
    assert!(agent_row.contains("never"), "{agent_row}");
    assert!(agent_row.contains("/tokens/agent/revoke"), "{agent_row}");
    assert!(secret_in(&page.body).is_none(), "no secret on the list");
}

/// The secret is in the answer to the create form and nowhere else: not in a cookie, a
/// flash message, a redirect, or any page after it.
#[tokio::test]
async fn a_created_tokens_secret_is_shown_once() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser
        .submit(
            "/tokens",
            "/tokens",
            &[("name", "newsbot"), ("role", "writer"), ("role", "critic")],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Token newsbot created"), "{}", page.body);
    assert!(page.body.contains("shown on this page only, this once"));
    let secret = secret_in(&page.body).expect("the secret is on the page");
    assert!(
        secret[4..].chars().all(|c| c.is_ascii_hexdigit()),
        "{secret}"
    );
    assert!(page.set_cookies().iter().all(|c| !c.contains(&secret)));
    assert_eq!(page.headers.get("cache-control").unwrap(), "no-store");
    let principal = h.app.authenticate(&secret).await.unwrap();
    assert_eq!(principal.actor, Actor::Token("newsbot".into()));
    assert!(principal.roles.grants(Role::Writer) && principal.roles.grants(Role::Critic));
    assert!(!principal.roles.grants(Role::Operator));

    for path in ["/tokens", "/", "/tokens/newsbot/revoke"] {
        let later = browser.get(path).await;
        assert!(
            !later.body.contains(&secret),
            "{path} shows the secret again"
        );
    }
    let listed = browser.get("/tokens").await;
    assert!(listed.body.contains("id=\"token-newsbot\""));
    assert!(
        listed.body.contains(">critic, writer</td>")
            || listed.body.contains(">writer, critic</td>")
    );

    // The same name again: refused, the form kept, no secret.
    let again = browser
        .submit(
            "/tokens",
            "/tokens",
            &[("name", "newsbot"), ("role", "writer")],
        )
        .await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert!(again.body.contains("Not created"), "{}", again.body);
    assert!(secret_in(&again.body).is_none());
    assert!(again.body.contains("value=\"newsbot\""));
}

#[tokio::test]
async fn a_token_needs_a_valid_name_and_a_role() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser
        .submit("/tokens", "/tokens", &[("name", "bot")])
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(
        page.body.contains("tick at least one role"),
        "{}",
        page.body
    );
    let page = browser
        .submit(
            "/tokens",
            "/tokens",
            &[("name", "Bad Name<script>"), ("role", "writer")],
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("invalid token name"), "{}", page.body);
    assert!(!page.body.contains("<script>"), "escaped");
    let tokens = h.app.list_tokens(&Principal::cli()).await.unwrap();
    assert_eq!(tokens.len(), 2, "nothing created");
    // Without the form's CSRF token nothing happens.
    let forged = browser
        .post("/tokens", &[("name", "forged"), ("role", "operator")])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert_eq!(h.app.list_tokens(&Principal::cli()).await.unwrap().len(), 2);
}

/// Revoking asks first, then says what it changed: an approval that rested on the
/// revoked critic's pass is withdrawn.
#[tokio::test]
async fn revoking_asks_first_and_says_what_it_withdrew() {
    let h = Harness::new().await;
    let me = Principal::cli();
    h.app
        .create_token(&me, "judge", RoleSet::of(&[Role::Critic]))
        .await
        .unwrap();
    let id = create(&h.app, draft("cats", &format!("A fair post. {PACE}"))).await;
    let approved = h
        .app
        .approve(&as_token("judge", &[Role::Critic]), id)
        .await
        .unwrap();
    assert_eq!(approved.status, PostStatus::Approved);

    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let confirm = browser.get("/tokens/judge/revoke").await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains("Revoke token judge?"));
    assert!(confirm.body.contains("Its passes count for nobody"));
    assert!(confirm.body.contains("action=\"/tokens/judge/revoke\""));
    assert!(!confirm.body.contains("you will be signed out"));
    // Opening the confirmation changes nothing.
    assert!(
        h.app
            .list_tokens(&me)
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "judge" && t.revoked_at.is_none())
    );

    let done = browser
        .submit("/tokens/judge/revoke", "/tokens/judge/revoke", &[])
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    assert_eq!(done.location(), "/tokens");
    let page = browser.get("/tokens").await;
    assert!(page.body.contains("Revoked token judge"), "{}", page.body);
    assert!(
        page.body.contains(&format!("Post #{id} is a draft again")),
        "{}",
        page.body
    );
    assert_eq!(h.status(id).await, PostStatus::Draft);
    assert!(page.body.contains("badge-revoked"));
    assert!(
        !page.body.contains("/tokens/judge/revoke"),
        "no second revoke"
    );
    let gone = browser.get("/tokens/judge/revoke").await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

/// Revoking the token one is signed in with says so first, and signs one out.
#[tokio::test]
async fn revoking_ones_own_token_signs_one_out() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let confirm = browser.get("/tokens/ops/revoke").await;
    assert!(
        confirm.body.contains("you will be signed out"),
        "{}",
        confirm.body
    );
    // The last operator token is not revoked: nobody could make another.
    browser
        .submit("/tokens/ops/revoke", "/tokens/ops/revoke", &[])
        .await;
    let page = browser.get("/tokens").await;
    assert!(page.body.contains("last operator token"), "{}", page.body);
    h.app
        .create_token(
            &airlock_app::Principal::cli(),
            "ops2",
            airlock_core::RoleSet::of(&[airlock_core::Role::Operator]),
        )
        .await
        .unwrap();
    browser
        .submit("/tokens/ops/revoke", "/tokens/ops/revoke", &[])
        .await;
    let after = browser.get("/tokens").await;
    assert_eq!(after.status, StatusCode::SEE_OTHER);
    assert_eq!(after.location(), "/login?ended=revoked");
    assert!(matches!(
        h.app.authenticate(&h.operator).await,
        Err(Error::Unauthorized)
    ));
}

#[tokio::test]
async fn only_a_signed_in_operator_reaches_tokens_and_the_export() {
    let h = Harness::new().await;
    let mut anonymous = Browser::new(h.router());
    for path in [
        "/tokens",
        "/tokens/agent/revoke",
        "/audit.csv",
        "/audit.jsonl",
    ] {
        let page = anonymous.get(path).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(page.location(), "/login", "{path}");
    }
    let mut writer = Browser::new(h.router());
    let refused = writer.login(&h.writer).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(writer.get("/audit.csv").await.location(), "/login");
}

/// A note meant to run in a spreadsheet, with commas, quotes and a line break.
const NASTY: &str = "=HYPERLINK(\"https://evil.example\",\"click\"), then\n\"more\"";

/// Parses RFC 4180 CSV (quoted cells may hold commas, quotes and line breaks).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    assert!(
        cell.is_empty() && row.is_empty(),
        "the file ends with a line break"
    );
    rows
}

#[tokio::test]
async fn the_audit_export_says_who_did_what_as_csv_and_json_lines() {
    let h = Harness::new().await;
    let me = Principal::cli();
    let id = h.seeded.draft;
    h.app.add_note(&me, id, NASTY).await.unwrap();
    let total = h.n_events().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;

    let csv = browser.get("/audit.csv").await;
    assert_eq!(csv.status, StatusCode::OK, "{}", csv.body);
    assert_eq!(
        csv.headers.get("content-type").unwrap(),
        "text/csv; charset=utf-8"
    );
    let disposition = csv
        .headers
        .get("content-disposition")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(disposition.starts_with("attachment; filename=\"airlock-audit-"));
    assert!(
        csv.body
            .starts_with("event_id,at,post_id,kind,from,to,actor,note\r\n")
    );
    let rows = parse_csv(&csv.body);
    assert_eq!(rows.len(), total + 1, "a header and every event");
    assert!(rows.iter().all(|r| r.len() == 8), "{rows:?}");
    let note = rows
        .iter()
        .find(|r| r[3] == "note")
        .expect("the note's event");
    assert_eq!(note[2], id.to_string());
    assert_eq!(note[6], "cli");
    assert_eq!(note[7], format!("'{NASTY}"), "defused, whole");
    // A creation has no state before it: an empty cell.
    let created = rows
        .iter()
        .find(|r| r[2] == id.to_string() && r[4].is_empty())
        .unwrap();
    assert_eq!(created[5], "draft");

    let jsonl = browser.get("/audit.jsonl").await;
    assert_eq!(jsonl.status, StatusCode::OK);
    let lines: Vec<serde_json::Value> = jsonl
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), total);
    let note = lines.iter().find(|l| l["kind"] == "note").unwrap();
    assert_eq!(note["note"], NASTY, "as written");
    assert_eq!(note["actor"], "cli");
    assert_eq!(note["post_id"], id.0);
    let ids: Vec<i64> = lines.iter().map(|l| l["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first");
}

#[tokio::test]
async fn the_audit_export_takes_a_range_of_days() {
    let h = Harness::new().await;
    let me = Principal::cli();
    let before = h.n_events().await;
    // Two days later (in Tokyo, the configured zone), one more event.
    h.clock.advance(chrono::Duration::days(2));
    h.app
        .add_note(&me, h.seeded.draft, "two days later")
        .await
        .unwrap();
    let later = h.clock.now().with_timezone(&tokyo()).date_naive();
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let only_later = browser
        .get(&format!("/audit.jsonl?since={later}&until={later}"))
        .await;
    let lines: Vec<&str> = only_later.body.lines().collect();
    assert_eq!(lines.len(), 1, "{}", only_later.body);
    assert!(lines[0].contains("two days later"));
    let earlier = later - chrono::Duration::days(1);
    let before_it = browser.get(&format!("/audit.csv?until={earlier}")).await;
    assert_eq!(
        parse_csv(&before_it.body).len(),
        before + 1,
        "header and the seed's"
    );
    let empty = browser
        .get(&format!("/audit.csv?since={later}&until={earlier}"))
        .await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    assert!(empty.body.contains("the range is empty"), "{}", empty.body);
    let garbage = browser.get("/audit.csv?since=yesterday").await;
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
}

/// More events than one page of the export: every one, once, in order.
#[tokio::test]
async fn the_audit_export_pages_through_the_whole_ledger() {
    let h = Harness::new().await;
    let me = Principal::cli();
    for n in 0..airlock_dashboard::audit::AUDIT_PAGE {
        h.app
            .add_note(&me, h.seeded.draft, &format!("note {n}"))
            .await
            .unwrap();
    }
    let total = h.app.events_after(&me, 0, 1000).await.unwrap().len()
        + h.app.events_after(&me, 1000, 1000).await.unwrap().len();
    assert!(total > airlock_dashboard::audit::AUDIT_PAGE as usize);
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let jsonl = browser.get("/audit.jsonl").await;
    let ids: Vec<i64> = jsonl
        .body
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids.len(), total);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "each once, in order");
}
