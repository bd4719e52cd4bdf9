//! The HTTP API through `router(app).oneshot(request)`: the full route × role matrix,
//! token checks, error shapes and status codes, idempotent creation, metrics, OpenAPI.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, AppSettings, ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, PostId, Role, RoleSet};
use airlock_platforms::Platform;
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

/// The secret of a freshly issued token, as `token create --json` prints it.
fn expose(token: &airlock_app::tokens::IssuedToken) -> String {
    serde_json::to_value(token).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

struct World {
    _dir: tempfile::TempDir,
    app: App,
    tokens: BTreeMap<&'static str, String>,
}

async fn world(window_limit: u32) -> World {
    world_with(window_limit, |_| {}).await
}

async fn world_with(window_limit: u32, adjust: impl FnOnce(&mut AppSettings)) -> World {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("a.db")).await.unwrap();
    let tz: chrono_tz::Tz = "Asia/Tokyo".parse().unwrap();
    let mut settings = AppSettings::new(tz);
    settings.window.limit = window_limit;
    let mut platforms: BTreeMap<ChannelName, Arc<dyn Platform>> = BTreeMap::new();
    for (name, simulate) in [
        ("cats", Simulate::Ok),
        ("drill", Simulate::Unknown),
        ("strict", Simulate::Reject),
    ] {
        let channel = ChannelName::parse(name).unwrap();
        settings = settings.with_channel(ChannelSettings::new(
            channel.clone(),
            ChannelKind::Sandbox,
            50,
            tz,
        ));
        platforms.insert(
            channel.clone(),
            Arc::new(Sandbox::new(
                channel,
                dir.path().join(format!("{name}.jsonl")),
                simulate,
            )),
        );
    }
    adjust(&mut settings);
    let app = App::new(
        Arc::new(store) as Arc<dyn Store>,
        settings,
        platforms,
        App::system_clock(),
    );
    let mut tokens = BTreeMap::new();
    for (name, role) in [
        ("writer", Role::Writer),
        ("critic", Role::Critic),
        ("publisher", Role::Publisher),
        ("operator", Role::Operator),
        ("revoked", Role::Operator),
    ] {
        let issued = app
            .create_token(&Principal::cli(), name, RoleSet::of(&[role]))
            .await
            .unwrap();
        tokens.insert(name, expose(&issued));
    }
    app.revoke_token(&Principal::cli(), "revoked")
        .await
        .unwrap();
    World {
        _dir: dir,
        app,
        tokens,
    }
}

impl World {
    async fn call(
        &self,
        token: Option<&str>,
        method: &str,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value, axum::http::HeaderMap) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = match body {
            Some(json) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        let response = airlock_api::router(self.app.clone())
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, json, headers)
    }

    async fn as_role(
        &self,
        role: &str,
        method: &str,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, json, _) = self.call(Some(&self.tokens[role]), method, uri, body).await;
        (status, json)
    }

    async fn post_in(&self, channel: &str, state: &str) -> PostId {
        // A draft of the writer token's own, which only it (or an operator) discards.
        let me = if state == "writer's draft" {
            Principal {
                actor: airlock_core::Actor::Token("writer".into()),
                roles: RoleSet::of(&[Role::Writer]),
                sod_exempt: false,
            }
        } else {
            Principal::cli()
        };
        let input = DraftInput {
            channel: channel.into(),
            text: format!("a post that is {state}"),
            ..DraftInput::default()
        };
        let id = self
            .app
            .create_post(&me, input, None, DraftOrigin::default())
            .await
            .unwrap()
            .post
            .id;
        if state == "draft" || state == "writer's draft" {
            return id;
        }
        if state == "quarantined" {
            let critic = Principal {
                actor: airlock_core::Actor::Token("another-critic".into()),
                roles: RoleSet::of(&[Role::Critic]),
                sod_exempt: false,
            };
            // One failed review counts per content: a revision between the two fails.
            for (reason, revised) in [
                ("tone: one", "a post that is quarantined, revised"),
                ("tone: two", ""),
            ] {
                self.app.reject(&critic, id, reason).await.unwrap();
                if !revised.is_empty() {
                    let edit = airlock_app::posts::EditInput {
                        text: Some(revised.into()),
                        ..airlock_app::posts::EditInput::default()
                    };
                    self.app.edit_post(&me, id, edit).await.unwrap();
                }
            }
            return id;
        }
        self.app.approve(&me, id).await.unwrap();
        if state != "approved" {
            let _ = self.app.publish_now(&me, id).await;
        }
        id
    }
}

/// A route, the state it acts on, the body it takes, and the roles allowed.
struct Case {
    method: &'static str,
    path: &'static str,
    setup: Option<(&'static str, &'static str)>,
    body: Option<Value>,
    allowed: &'static [&'static str],
    ok: StatusCode,
}

const ALL: &[&str] = &["writer", "critic", "publisher", "operator"];

fn cases() -> Vec<Case> {
    let case = |method, path, setup, body, allowed, ok| Case {
        method,
        path,
        setup,
        body,
        allowed,
        ok,
    };
    vec![
        case(
            "POST",
            "/api/v1/posts",
            None,
            Some(json!({"channel": "cats", "text": "hi"})),
            &["writer", "operator"],
            StatusCode::CREATED,
        ),
        case(
            "POST",
            "/api/v1/posts/check",
            None,
            Some(json!({"channel": "cats", "text": "hi"})),
            &["writer", "operator"],
            StatusCode::OK,
        ),
        case("GET", "/api/v1/posts", None, None, ALL, StatusCode::OK),
        case(
            "GET",
            "/api/v1/posts/{id}",
            Some(("cats", "draft")),
            None,
            ALL,
            StatusCode::OK,
        ),
        case(
            "PATCH",
            "/api/v1/posts/{id}",
            Some(("cats", "draft")),
            Some(json!({"text": "new"})),
            &["writer", "operator"],
            StatusCode::OK,
        ),
        case(
            "DELETE",
            "/api/v1/posts/{id}",
            Some(("cats", "writer's draft")),
            None,
            &["writer", "operator"],
            StatusCode::NO_CONTENT,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/approve",
            Some(("cats", "draft")),
            None,
            &["critic", "operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/reject",
            Some(("cats", "draft")),
            Some(json!({"reason": "no"})),
            &["critic", "operator"],
            StatusCode::OK,
        ),
        case(
            "GET",
            "/api/v1/posts/{id}/review",
            Some(("cats", "draft")),
            None,
            ALL,
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/release",
            Some(("cats", "quarantined")),
            None,
            &["operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/unapprove",
            Some(("cats", "approved")),
            None,
            &["critic", "operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/publish",
            Some(("cats", "approved")),
            None,
            &["publisher", "operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/resolve",
            Some(("drill", "published")),
            Some(json!({"published": false})),
            &["operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/posts/{id}/requeue",
            Some(("strict", "published")),
            None,
            &["operator"],
            StatusCode::OK,
        ),
        case("GET", "/api/v1/quota", None, None, ALL, StatusCode::OK),
        case("GET", "/api/v1/channels", None, None, ALL, StatusCode::OK),
        case(
            "POST",
            "/api/v1/channels/cats/pause",
            None,
            Some(json!({"reason": "r"})),
            &["operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/channels/cats/resume",
            None,
            None,
            &["operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/pause",
            None,
            Some(json!({"reason": "r"})),
            &["operator"],
            StatusCode::OK,
        ),
        case(
            "POST",
            "/api/v1/resume",
            None,
            None,
            &["operator"],
            StatusCode::OK,
        ),
        case(
            "GET",
            "/api/v1/events?after=0",
            None,
            None,
            ALL,
            StatusCode::OK,
        ),
    ]
}

#[tokio::test]
async fn every_route_checks_every_role() {
    for case in cases() {
        for role in ALL {
            let world = world(100).await;
            let path = match case.setup {
                Some((channel, state)) => {
                    let id = world.post_in(channel, state).await;
                    case.path.replace("{id}", &id.to_string())
                }
                None => case.path.to_owned(),
            };
            let (status, body) = world
                .as_role(role, case.method, &path, case.body.clone())
                .await;
            let label = format!("{} {} as {role}", case.method, case.path);
            if case.allowed.contains(role) {
                assert_eq!(status, case.ok, "{label}: {body}");
            } else {
                assert_eq!(status, StatusCode::FORBIDDEN, "{label}: {body}");
                assert_eq!(body["error"]["code"], "forbidden", "{label}");
                assert!(
                    body["error"]["message"].as_str().unwrap().contains("role"),
                    "{label}: {body}"
                );
            }
        }
    }
}

#[tokio::test]
async fn missing_unknown_and_revoked_tokens_are_401_with_a_bearer_challenge() {
    let world = world(100).await;
    for token in [
        None,
        Some("alk_not-a-token"),
        Some(world.tokens["revoked"].as_str()),
    ] {
        for case in cases() {
            let path = case.path.replace("{id}", "1");
            let (status, body, headers) = world
                .call(token, case.method, &path, case.body.clone())
                .await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{} {path}", case.method);
            assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
            assert_eq!(body["error"]["code"], "unauthorized");
        }
    }
}

#[tokio::test]
async fn refusals_have_their_status_codes() {
    let world = world(1).await;
    // 400: bad JSON, unknown field, unknown channel, policy.
    let (status, body) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("text"),
        "{body}"
    );
    let (status, _) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": "x", "colour": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "dogs", "text": "x"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid"))
    );
    // 404.
    let (status, _) = world
        .as_role("writer", "GET", "/api/v1/posts/9999", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // 409: approving a published post.
    let published = world.post_in("cats", "published").await;
    let (status, body) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{published}/approve"),
            None,
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("illegal_transition"))
    );
    // 429 with Retry-After: the window of 1 is used.
    let approved = world.post_in("cats", "approved").await;
    let (status, body, headers) = world
        .call(
            Some(&world.tokens["publisher"]),
            "POST",
            &format!("/api/v1/posts/{approved}/publish"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let retry: i64 = headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 3000 && retry <= 3600, "{retry}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("next slot frees at")
    );
    // 423 paused.
    world
        .as_role(
            "operator",
            "POST",
            "/api/v1/channels/cats/pause",
            Some(json!({"reason": "holiday"})),
        )
        .await;
    let (status, body) = world
        .as_role(
            "publisher",
            "POST",
            &format!("/api/v1/posts/{approved}/publish"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::LOCKED);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("holiday")
    );
    // 502: publishes that failed or whose outcome is unknown.
    let world = world_with_room().await;
    for (channel, code) in [("drill", "outcome_unknown"), ("strict", "publish_failed")] {
        let id = world.post_in(channel, "approved").await;
        let (status, body) = world
            .as_role(
                "publisher",
                "POST",
                &format!("/api/v1/posts/{id}/publish"),
                None,
            )
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::BAD_GATEWAY, Some(code)),
            "{body}"
        );
    }
}

async fn world_with_room() -> World {
    world(100).await
}

#[tokio::test]
async fn separation_of_duties_holds_over_http() {
    let world = world(100).await;
    let both = world
        .app
        .create_token(
            &Principal::cli(),
            "both",
            RoleSet::of(&[Role::Writer, Role::Critic]),
        )
        .await
        .unwrap();
    let both = expose(&both);
    let (status, post, _) = world
        .call(
            Some(&both),
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": "mine"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body, _) = world
        .call(
            Some(&both),
            "POST",
            &format!("/api/v1/posts/{}/approve", post["id"]),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{}/approve", post["id"]),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn concurrent_identical_creates_with_one_idempotency_key_make_one_post() {
    let world = world(100).await;
    let body = json!({"channel": "cats", "text": "exactly one"});
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let app = world.app.clone();
        let token = world.tokens["writer"].clone();
        let body = body.clone();
        tasks.spawn(async move {
            let request = Request::post("/api/v1/posts")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .header("idempotency-key", "draft-42")
                .body(Body::from(body.to_string()))
                .unwrap();
            let response = airlock_api::router(app).oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            let post: Value = serde_json::from_slice(&bytes).unwrap();
            (status, post["id"].as_i64().unwrap())
        });
    }
    let mut results = Vec::new();
    while let Some(result) = tasks.join_next().await {
        results.push(result.unwrap());
    }
    let ids: std::collections::BTreeSet<i64> = results.iter().map(|r| r.1).collect();
    assert_eq!(ids.len(), 1, "{results:?}");
    assert_eq!(
        results
            .iter()
            .filter(|r| r.0 == StatusCode::CREATED)
            .count(),
        1
    );
    // The same key with a different body is a conflict.
    let (status, body, _) = world
        .call(Some(&world.tokens["writer"]), "POST", "/api/v1/posts", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let request = Request::post("/api/v1/posts")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", world.tokens["writer"]),
        )
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", "draft-42")
        .body(Body::from(
            json!({"channel": "cats", "text": "something else"}).to_string(),
        ))
        .unwrap();
    let response = airlock_api::router(world.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
}

#[tokio::test]
async fn actions_answer_with_the_post_as_it_stands() {
    let world = world(100).await;
    let (status, post) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": "hi", "scheduled_at": "now"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = post["id"].as_i64().unwrap();
    let (_, approved) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{id}/approve"),
            None,
        )
        .await;
    assert_eq!(approved["status"], "approved");
    let (status, published) = world
        .as_role(
            "publisher",
            "POST",
            &format!("/api/v1/posts/{id}/publish"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(published["status"], "posted");
    assert!(
        published["permalink"]
            .as_str()
            .unwrap()
            .starts_with("sandbox://cats/")
    );
    let (_, detail) = world
        .as_role("writer", "GET", &format!("/api/v1/posts/{id}"), None)
        .await;
    assert!(detail["events"].as_array().unwrap().len() >= 4);
    assert_eq!(detail["reservations"][0]["state"], "committed");
    let (_, events) = world
        .as_role("writer", "GET", "/api/v1/events?after=0&limit=2", None)
        .await;
    assert_eq!(events.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn metrics_and_openapi_and_health_are_served() {
    let world = world(100).await;
    let drill = world.post_in("drill", "published").await;
    world
        .as_role(
            "writer",
            "POST",
            &format!("/api/v1/posts/{drill}/approve"),
            None,
        )
        .await;
    let response = airlock_api::router(world.app.clone())
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let text = String::from_utf8(
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    for needle in [
        "airlock_posts{status=\"needs_review\"} 1",
        "airlock_needs_review 1",
        "airlock_outbox_backlog 0",
        "airlock_paused{scope=\"drill\"} 1",
        "airlock_publishes_total{channel=\"drill\",result=\"needs_review\"} 1",
        "airlock_refusals_total{reason=\"forbidden\"} 1",
        // The post in doubt keeps its slot in the window and in its channel's day.
        "airlock_quota_window_used 1",
        "airlock_quota_window_limit 100",
        "airlock_quota_daily_used{channel=\"drill\"} 1",
        "airlock_quota_daily_used{channel=\"cats\"} 0",
        "airlock_quota_daily_limit{channel=\"cats\"} 50",
        "airlock_quarantined_drafts 0",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    let (status, doc, _) = world.call(None, "GET", "/api/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"].as_str().unwrap().chars().next(), Some('3'));
    for path in [
        "/api/v1/posts",
        "/api/v1/posts/{id}/publish",
        "/api/v1/quota",
        "/api/v1/events",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    assert!(doc["components"]["schemas"].get("Post").is_some());
    let (status, health, _) = world.call(None, "GET", "/healthz", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], "ok");
}

/// A channel with a money budget shows what it spent and has left this month.
#[tokio::test]
async fn metrics_show_each_budgets_money_spent_and_left() {
    let world = world_with(100, |settings| {
        let cats = ChannelName::parse("cats").unwrap();
        settings.channels.get_mut(&cats).unwrap().budget = Some(airlock_core::budget::Budget {
            monthly: 5_000_000,
            costs: airlock_core::budget::Costs::X_DEFAULT,
        });
    })
    .await;
    let text = airlock_api::render_metrics(&world.app).await.unwrap();
    for needle in [
        "airlock_budget_spent_usd{channel=\"cats\"} 0",
        "airlock_budget_left_usd{channel=\"cats\"} 5",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    assert!(
        !text.contains("airlock_budget_left_usd{channel=\"drill\"}"),
        "{text}"
    );
}

/// The request a test sends, with its body bytes and headers, through `router`.
async fn raw(
    router: axum::Router,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let response = router.oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_one_megabyte_draft_is_refused_with_400_naming_the_limit_and_nothing_is_stored() {
    let world = world(100).await;
    let text = "x".repeat(1_000_000);
    let (status, body) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": text})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "invalid");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1000000") && message.contains("100000"),
        "{message}"
    );

    // A body over the request limit never reaches the app, and says so in JSON.
    let text = "x".repeat(2 * 1024 * 1024);
    let (status, body) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": text})),
        )
        .await;
    assert!(status.is_client_error(), "{status}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("1048576"), "{message}");

    let (status, listed) = world.as_role("writer", "GET", "/api/v1/posts", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed, json!([]), "nothing was stored");
}

#[tokio::test]
async fn every_error_has_the_json_shape_query_strings_unknown_routes_and_methods_too() {
    let world = world(100).await;
    for (method, uri, expected) in [
        ("GET", "/api/v1/posts?limit=many", StatusCode::BAD_REQUEST),
        ("GET", "/api/v1/posts?colour=blue", StatusCode::BAD_REQUEST),
        ("GET", "/api/v1/events?after=x", StatusCode::BAD_REQUEST),
        ("GET", "/api/v1/nothing-here", StatusCode::NOT_FOUND),
        ("PUT", "/api/v1/posts", StatusCode::METHOD_NOT_ALLOWED),
    ] {
        let (status, body, headers) = world
            .call(Some(&world.tokens["operator"]), method, uri, None)
            .await;
        assert_eq!(status, expected, "{method} {uri}: {body}");
        assert!(
            body["error"]["code"].is_string() && body["error"]["message"].is_string(),
            "{method} {uri}: {body}"
        );
        assert_eq!(
            headers[header::CONTENT_TYPE],
            "application/json",
            "{method} {uri}"
        );
    }
}

#[tokio::test]
async fn api_answers_are_neither_cached_nor_sniffed() {
    let world = world(100).await;
    for (token, uri) in [
        (Some(world.tokens["writer"].as_str()), "/api/v1/posts"),
        (None, "/api/v1/posts"),
        (None, "/healthz"),
        (None, "/metrics"),
        (None, "/api/openapi.json"),
    ] {
        let (_, _, headers) = world.call(token, "GET", uri, None).await;
        assert_eq!(headers[header::CACHE_CONTROL], "no-store", "{uri}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{uri}");
    }
}

#[tokio::test]
async fn health_says_only_ok_without_a_token() {
    let world = world(100).await;
    world
        .app
        .pause(&Principal::cli(), Some("drill"), "drill paused")
        .await
        .unwrap();
    let (status, health, _) = world.call(None, "GET", "/healthz", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health, json!({"status": "ok"}));
    let (status, health, _) = world
        .call(Some(&world.tokens["writer"]), "GET", "/healthz", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["paused"], json!(["drill"]));
}

#[tokio::test]
async fn times_outside_the_ledgers_years_are_400_not_503() {
    let world = world(100).await;
    for at in ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+09:00"] {
        let (status, body) = world
            .as_role(
                "writer",
                "POST",
                "/api/v1/posts",
                Some(json!({"channel": "cats", "text": "hi", "scheduled_at": at})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{at}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("1970 and 9999"),
            "{body}"
        );
    }
}

/// A typo in the year is 400 naming how far back it is, not a post due at once; a body
/// that asks for a past time gets it.
#[tokio::test]
async fn a_past_schedule_is_400_unless_the_body_allows_it() {
    let world = world(100).await;
    let body = json!({"channel": "cats", "text": "hi", "scheduled_at": "2020-01-01T09:00:00Z"});
    let (status, refused) = world
        .as_role("writer", "POST", "/api/v1/posts", Some(body.clone()))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("in the past"), "{refused}");
    let mut allowed = body;
    allowed["allow_past"] = json!(true);
    let (status, post) = world
        .as_role("writer", "POST", "/api/v1/posts", Some(allowed))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{post}");
}

#[tokio::test]
async fn a_foreign_host_or_origin_gets_no_answer_from_any_route() {
    use airlock_web::policy::{HostPolicy, PolicySettings};
    let world = world(100).await;
    let mut settings = PolicySettings::new("127.0.0.1:8080".parse().unwrap());
    settings.public_url = Some(url::Url::parse("https://airlock.example").unwrap());
    let router = || {
        airlock_web::guarded(
            airlock_api::router(world.app.clone()),
            HostPolicy::new(&settings),
        )
    };
    let token = world.tokens["operator"].clone();
    for path in [
        "/healthz",
        "/metrics",
        "/api/openapi.json",
        "/api/v1/posts",
        "/api/v1/quota",
    ] {
        for (host, origin, allowed) in [
            ("127.0.0.1:8080", None, true),
            ("localhost:8080", Some("http://localhost:8080"), true),
            ("airlock.example", Some("https://airlock.example"), true),
            ("evil.example", None, false),
            ("evil.example:8080", None, false),
            ("127.0.0.1:8080", Some("https://evil.example"), false),
            ("127.0.0.1:8080", Some("null"), false),
        ] {
            let mut request = Request::get(path)
                .header(header::HOST, host)
                .header(header::AUTHORIZATION, format!("Bearer {token}"));
            if let Some(origin) = origin {
                request = request.header(header::ORIGIN, origin);
            }
            let (status, _, body) = raw(router(), request.body(Body::empty()).unwrap()).await;
            if allowed {
                assert_eq!(status, StatusCode::OK, "{path} {host} {origin:?}: {body}");
            } else {
                assert_eq!(status, StatusCode::FORBIDDEN, "{path} {host} {origin:?}");
                let code = body["error"]["code"].as_str().unwrap();
                assert!(code.starts_with("forbidden_"), "{body}");
            }
        }
    }
}

/// A client that hangs up in the middle of `POST /posts/{id}/publish` (here: the request
/// future is dropped, as axum does when the connection closes) changes nothing: the
/// publish runs to its end, and the post is `posted`, not stranded in `posting`.
#[tokio::test]
async fn a_client_that_hangs_up_during_a_publish_does_not_strand_the_post() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let platform = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_millis(500)))
        .expect(1)
        .mount(&platform)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("a.db")).await.unwrap();
    let tz: chrono_tz::Tz = "Asia/Tokyo".parse().unwrap();
    let name = ChannelName::parse("hook").unwrap();
    let settings = AppSettings::new(tz).with_channel(ChannelSettings::new(
        name.clone(),
        ChannelKind::Webhook,
        10,
        tz,
    ));
    let hook = airlock_platforms::webhook::Webhook::new(
        &format!("{}/hook", platform.uri()),
        None,
        airlock_platforms::http::client(std::time::Duration::from_secs(5)),
    )
    .unwrap();
    let platforms: BTreeMap<ChannelName, Arc<dyn Platform>> =
        BTreeMap::from([(name, Arc::new(hook) as Arc<dyn Platform>)]);
    let app = App::new(
        Arc::new(store) as Arc<dyn Store>,
        settings,
        platforms,
        App::system_clock(),
    );
    let me = Principal::cli();
    let input = DraftInput {
        channel: "hook".into(),
        text: "hello".into(),
        ..DraftInput::default()
    };
    let id = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post
        .id;
    app.approve(&me, id).await.unwrap();
    let token = expose(
        &app.create_token(&me, "pub", RoleSet::of(&[Role::Publisher]))
            .await
            .unwrap(),
    );
    let request = Request::post(format!("/api/v1/posts/{id}/publish"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let hung_up = tokio::time::timeout(
        std::time::Duration::from_millis(100),
        airlock_api::router(app.clone()).oneshot(request),
    )
    .await;
    assert!(hung_up.is_err(), "the client left before the answer");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let post = app.store().get_post(id).await.unwrap();
        if post.status == airlock_core::PostStatus::Posted {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "stranded: {post:?}");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(app.store().pauses().await.unwrap().is_empty());
}

/// The critic's routes: the review packet (with the content hash as `ETag`), verdicts
/// bound to the hashes read, approve and reject bound by body or `If-Match`, release,
/// the quarantine filter, duplicates refused with 409 `duplicate`.
#[tokio::test]
async fn verdicts_are_bound_to_the_content_and_rubric_the_critic_read() {
    let world = world(100).await;
    let id = world.post_in("cats", "draft").await;
    let (status, packet, headers) = world
        .call(
            Some(&world.tokens["critic"]),
            "GET",
            &format!("/api/v1/posts/{id}/review"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{packet}");
    let hash = packet["content_hash"].as_str().unwrap().to_owned();
    assert_eq!(
        headers[header::ETAG].to_str().unwrap(),
        format!("\"{hash}\"")
    );
    assert_eq!(packet["rubric"]["origin"], "built-in default rubric");
    let rubric = packet["rubric"]["hash"].clone();

    // The writer edits after the critic read the packet.
    let (status, _) = world
        .as_role(
            "writer",
            "PATCH",
            &format!("/api/v1/posts/{id}"),
            Some(json!({"text": "not what the critic read"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let verdict = json!({"verdict": "pass", "content_hash": hash, "rubric_hash": rubric});
    let (status, body) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{id}/verdict"),
            Some(verdict),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("changed since it was reviewed")
    );
    // If-Match with the stale hash: 409 too; nothing approved.
    let approve = Request::builder()
        .method("POST")
        .uri(format!("/api/v1/posts/{id}/approve"))
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", world.tokens["critic"]),
        )
        .header(header::IF_MATCH, format!("\"{hash}\""))
        .body(Body::empty())
        .unwrap();
    let response = airlock_api::router(world.app.clone())
        .oneshot(approve)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let (status, _) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{id}/approve"),
            Some(json!({"content_hash": hash})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, body) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{id}/reject"),
            Some(json!({"reason": "tone: no", "content_hash": hash})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // On what it says now: a fail names rubric items, a pass approves.
    let (_, packet) = world
        .as_role("critic", "GET", &format!("/api/v1/posts/{id}/review"), None)
        .await;
    let now = packet["content_hash"].clone();
    let (status, body) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{id}/verdict"),
            Some(json!({"verdict": "fail", "reasons": ["too flat"], "content_hash": now, "rubric_hash": rubric})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("names no rubric item")
    );
    let (status, body) = world
        .as_role(
            "critic",
            "POST",
            &format!("/api/v1/posts/{id}/verdict"),
            Some(json!({"verdict": "pass", "content_hash": now, "rubric_hash": rubric})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["effect"], "approved");
    assert_eq!(body["post"]["status"], "approved");
    let (_, detail) = world
        .as_role("writer", "GET", &format!("/api/v1/posts/{id}"), None)
        .await;
    assert_eq!(detail["verdicts"][0]["verdict"], "pass");
    assert_eq!(detail["verdicts"][0]["actor"], "token:critic");
}

#[tokio::test]
async fn quarantined_posts_are_listed_released_and_duplicates_refused() {
    let world = world(100).await;
    let id = world.post_in("cats", "quarantined").await;
    let (status, listed) = world
        .as_role("writer", "GET", "/api/v1/posts?quarantined=true", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], id.0);
    let (status, body) = world
        .as_role(
            "writer",
            "PATCH",
            &format!("/api/v1/posts/{id}"),
            Some(json!({"text": "a third try"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "quarantined");
    let (status, body) = world
        .as_role(
            "operator",
            "POST",
            &format!("/api/v1/posts/{id}/release"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["quarantined_at"], Value::Null);

    world.post_in("cats", "approved").await;
    let again = json!({"channel": "cats", "text": "A post that is APPROVED"});
    let (status, body) = world
        .as_role("writer", "POST", "/api/v1/posts", Some(again.clone()))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "duplicate");
    let (status, _) = world
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts?allow_duplicate=true",
            Some(again.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = world
        .as_role(
            "operator",
            "POST",
            "/api/v1/posts?allow_duplicate=true",
            Some(again),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn an_edit_into_a_queued_text_is_refused_as_a_duplicate_unless_an_operator_allows_it() {
    let world = world(100).await;
    let queued = world.post_in("cats", "approved").await;
    let id = world.post_in("cats", "draft").await;
    let into = json!({"text": "A post that is APPROVED"});
    let (status, body) = world
        .as_role(
            "writer",
            "PATCH",
            &format!("/api/v1/posts/{id}"),
            Some(into.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "duplicate");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("post {queued}")), "{message}");
    let (status, _) = world
        .as_role(
            "writer",
            "PATCH",
            &format!("/api/v1/posts/{id}?allow_duplicate=true"),
            Some(into.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = world
        .as_role(
            "operator",
            "PATCH",
            &format!("/api/v1/posts/{id}?allow_duplicate=true"),
            Some(into),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "A post that is APPROVED");
}

#[tokio::test]
async fn a_list_carries_each_text_cut_to_an_excerpt_with_every_post_field() {
    let w = world(10).await;
    let long = "猫".repeat(100_000);
    let (status, created) = w
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": long})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, _) = w
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": "short"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, listed) = w.as_role("critic", "GET", "/api/v1/posts", None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["text"], "short");
    assert_eq!(listed[0]["text_truncated"], false);
    assert_eq!(listed[1]["text"].as_str().unwrap().chars().count(), 500);
    assert_eq!(listed[1]["text_truncated"], true);
    for field in [
        "id",
        "channel",
        "status",
        "title",
        "text",
        "media",
        "link",
        "scheduled_at",
        "content_hash",
        "approved_hash",
        "generation",
        "attempts",
        "platform_post_id",
        "permalink",
        "posted_at",
        "verified_at",
        "error",
        "test",
        "created_at",
        "updated_at",
    ] {
        assert!(
            listed[1].get(field).is_some(),
            "{field} missing from a listed post"
        );
    }
    assert_eq!(listed[1]["content_hash"], created["content_hash"]);
    // The whole text is one GET away.
    let id = created["id"].as_i64().unwrap();
    let (_, detail) = w
        .as_role("critic", "GET", &format!("/api/v1/posts/{id}"), None)
        .await;
    assert_eq!(detail["text"].as_str().unwrap().chars().count(), 100_000);
}

#[tokio::test]
async fn a_token_holding_its_most_live_drafts_is_refused_naming_the_limit() {
    let w = world_with(10, |s| s.max_drafts_per_token = 2).await;
    let draft = json!({"channel": "cats", "text": "hi"});
    for _ in 0..2 {
        let (status, body) = w
            .as_role("writer", "POST", "/api/v1/posts", Some(draft.clone()))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = w
        .as_role("writer", "POST", "/api/v1/posts", Some(draft.clone()))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("max_drafts_per_token") && message.contains('2'),
        "{message}"
    );
    // Another token has its own allowance; a discarded draft frees a place.
    let (status, _) = w
        .as_role("operator", "POST", "/api/v1/posts", Some(draft.clone()))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, listed) = w
        .as_role("writer", "GET", "/api/v1/posts?status=draft", None)
        .await;
    let mine = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["created_by"] == "token:writer")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let (status, _) = w
        .as_role("writer", "DELETE", &format!("/api/v1/posts/{mine}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = w
        .as_role("writer", "POST", "/api/v1/posts", Some(draft))
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn metrics_and_the_openapi_document_can_require_a_token() {
    let w = world(10).await;
    let get = |settings: airlock_api::ApiSettings, uri: &'static str, token: Option<String>| {
        let app = w.app.clone();
        async move {
            let mut request = Request::builder().method("GET").uri(uri);
            if let Some(token) = token {
                request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
            }
            airlock_api::router_with(app, settings)
                .oneshot(request.body(Body::empty()).unwrap())
                .await
                .unwrap()
                .status()
        }
    };
    let open = airlock_api::ApiSettings::default();
    let closed = airlock_api::ApiSettings {
        metrics_token_required: true,
    };
    for uri in ["/metrics", "/api/openapi.json"] {
        assert_eq!(get(open, uri, None).await, StatusCode::OK, "{uri}");
        assert_eq!(
            get(closed, uri, None).await,
            StatusCode::UNAUTHORIZED,
            "{uri}"
        );
        assert_eq!(
            get(closed, uri, Some(w.tokens["revoked"].clone())).await,
            StatusCode::UNAUTHORIZED,
            "{uri}"
        );
        assert_eq!(
            get(closed, uri, Some(w.tokens["writer"].clone())).await,
            StatusCode::OK,
            "{uri}"
        );
    }
    assert_eq!(get(closed, "/healthz", None).await, StatusCode::OK);
}

#[tokio::test]
async fn metrics_give_due_posts_per_configured_channel_and_the_oldest_notifications_age() {
    let w = world(10).await;
    w.post_in("cats", "approved").await;
    let response = airlock_api::router(w.app.clone())
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let text = String::from_utf8(
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    for line in [
        "airlock_channel_due_posts{channel=\"cats\"} 1",
        "airlock_channel_due_posts{channel=\"drill\"} 0",
        "airlock_outbox_oldest_age_seconds 0",
        "airlock_verify_failures_recent 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("airlock_channel_oldest_due_age_seconds{channel=\"cats\"} ")),
        "{text}"
    );
}

/// `cats` requires a disclosure.
async fn world_with_rules() -> World {
    world_with(100, |s| {
        let cats = s
            .channels
            .get_mut(&ChannelName::parse("cats").unwrap())
            .unwrap();
        cats.policy.required = vec!["#ad".into()];
        cats.policy.max_chars = Some(50);
    })
    .await
}

#[tokio::test]
async fn a_writer_checks_a_draft_and_the_create_answer_carries_its_violations() {
    let w = world_with_rules().await;
    let draft = json!({"channel": "cats", "text": "A cat on every lap"});
    let (status, check) = w
        .as_role("writer", "POST", "/api/v1/posts/check", Some(draft.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{check}");
    assert_eq!(check["accepted"], true);
    assert_eq!(check["approvable"], false);
    assert_eq!(check["violations"][0]["kind"], "missing_required_phrase");
    assert_eq!(check["violations"][0]["blocks"], "approval");
    assert_eq!(check["lengths"][0]["length"], 18);
    assert_eq!(check["lengths"][0]["max_chars"], 50);
    assert!(check["quota"]["next_slot_at"].is_null(), "{check}");
    let (_, listed) = w.as_role("writer", "GET", "/api/v1/posts", None).await;
    assert_eq!(listed, json!([]), "a check drafts nothing");
    let (status, body) = w
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts/check",
            Some(json!({"channel": "birds", "text": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = w
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts/check",
            Some(json!({"channel": "cats", "body": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown fields: {body}");

    let (status, created) = w
        .as_role("writer", "POST", "/api/v1/posts", Some(draft))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["status"], "draft");
    assert_eq!(created["violations"][0]["kind"], "missing_required_phrase");
    let (status, ok) = w
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": "A cat. #ad"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(ok["violations"], json!([]));
}

#[tokio::test]
async fn a_writer_lists_only_its_own_posts_page_by_page() {
    let w = world(100).await;
    let mut mine = Vec::new();
    for n in 0..5 {
        let role = if n % 2 == 0 { "writer" } else { "operator" };
        let (_, post) = w
            .as_role(
                role,
                "POST",
                "/api/v1/posts",
                Some(json!({"channel": "cats", "text": format!("cat {n}")})),
            )
            .await;
        if n % 2 == 0 {
            mine.push(post["id"].as_i64().unwrap());
        }
    }
    mine.reverse();
    let mut uri = "/api/v1/posts?mine=true&limit=2".to_owned();
    let mut seen = Vec::new();
    for page in 0.. {
        assert!(page < 5, "the pages end");
        let (status, posts, headers) = w.call(Some(&w.tokens["writer"]), "GET", &uri, None).await;
        assert_eq!(status, StatusCode::OK, "{posts}");
        seen.extend(
            posts
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["id"].as_i64().unwrap()),
        );
        let Some(link) = headers.get(header::LINK) else {
            break;
        };
        let link = link.to_str().unwrap();
        let next = link
            .strip_prefix('<')
            .and_then(|l| l.split_once(">; rel=\"next\""))
            .map(|(u, _)| u.to_owned())
            .unwrap_or_else(|| panic!("a next link: {link}"));
        assert!(
            next.contains("mine=true") && next.contains("limit=2"),
            "{next}"
        );
        uri = next;
    }
    assert_eq!(seen, mine);
}

#[tokio::test]
async fn a_retried_verdict_pass_answers_the_same_and_channels_carry_their_rules() {
    let w = world_with_rules().await;
    let (_, post) = w
        .as_role(
            "writer",
            "POST",
            "/api/v1/posts",
            Some(json!({"channel": "cats", "text": "A cat. #ad"})),
        )
        .await;
    let id = post["id"].as_i64().unwrap();
    let (_, packet) = w
        .as_role("critic", "GET", &format!("/api/v1/posts/{id}/review"), None)
        .await;
    let verdict = json!({"verdict": "pass", "content_hash": packet["content_hash"], "rubric_hash": packet["rubric"]["hash"]});
    let uri = format!("/api/v1/posts/{id}/verdict");
    let (status, first) = w
        .as_role("critic", "POST", &uri, Some(verdict.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, again) = w.as_role("critic", "POST", &uri, Some(verdict)).await;
    assert_eq!(status, StatusCode::OK, "a retry is not a conflict: {again}");
    assert_eq!(again["effect"], "approved");
    assert_eq!(again["verdict"], first["verdict"]);

    let (status, channels) = w.as_role("writer", "GET", "/api/v1/channels", None).await;
    assert_eq!(status, StatusCode::OK);
    let cats = channels
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cats")
        .unwrap();
    assert_eq!(cats["policy"]["required"], json!(["#ad"]));
    assert_eq!(cats["policy"]["max_chars"], 50);
    assert_eq!(cats["review"]["approvals_required"], 1);
    assert_eq!(cats["review"]["rubric_origin"], "built-in default rubric");
    assert!(cats["media"]["image_types"].is_array(), "{cats}");

    let document = serde_json::to_value(airlock_api::openapi_document()).unwrap();
    assert!(document["paths"]["/api/v1/posts/check"]["post"].is_object());
    for schema in ["DraftCheck", "Drafted", "ChannelPolicy", "CheckViolation"] {
        assert!(
            document["components"]["schemas"][schema].is_object(),
            "{schema} is in the OpenAPI document"
        );
    }
}
