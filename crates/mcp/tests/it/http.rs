//! Streamable HTTP on a loopback port: the rmcp client with a token, and the guard's
//! answers to a missing or revoked token and to a foreign `Origin`.

use airlock_app::Principal;
use airlock_core::Role;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::*;

/// Stops the server when the test ends, however it ends.
struct Server {
    url: String,
    shutdown: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start(h: &Harness) -> Server {
    let shutdown = CancellationToken::new();
    let url = h.serve_http(&shutdown).await;
    Server { url, shutdown }
}

async fn http_client(url: &str, secret: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(secret);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the client connects with a valid token")
}

/// A raw `initialize` POST, to see the HTTP status and headers the guard answers with.
async fn initialize(url: &str, bearer: Option<&str>, origin: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "1"}
            }
        }));
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap()
}

async fn assert_unauthorized(response: reqwest::Response) {
    assert_eq!(response.status(), 401);
    assert_eq!(
        response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer"),
        "{body}"
    );
}

#[tokio::test]
async fn the_rmcp_client_lists_tools_and_drafts_over_http_with_a_token() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let secret = h.token("http-writer", &[Role::Writer]).await;
    let client = http_client(&server.url, &secret).await;

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, TOOLS);

    let post = ok_json(
        &call(
            &client,
            "draft_post",
            json!({"channel": "cats", "text": "over http"}),
        )
        .await,
    );
    assert_eq!(post["status"], "draft");
    let stored = h
        .app
        .get_post(
            &Principal::cli(),
            airlock_core::PostId(post["id"].as_i64().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(
        stored.post.created_by, "token:http-writer",
        "the tool ran as the request's token"
    );

    let refused = refusal(&call(&client, "approve_post", json!({"id": post["id"]})).await);
    assert!(refused.contains("critic"), "{refused}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_request_without_a_token_or_with_an_unknown_one_is_refused_with_401() {
    let h = Harness::new(3).await;
    let server = start(&h).await;

    assert_unauthorized(initialize(&server.url, None, None).await).await;
    assert_unauthorized(initialize(&server.url, Some("alk_not-a-token"), None).await).await;

    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    assert!(
        ().serve(transport).await.is_err(),
        "the rmcp client cannot connect without a token"
    );
}

#[tokio::test]
async fn a_revoked_token_stops_working_within_an_open_session() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let secret = h.token("short-lived", &[Role::Writer]).await;
    let client = http_client(&server.url, &secret).await;
    ok_json(&call(&client, "list_posts", json!({})).await);

    h.app
        .revoke_token(&Principal::cli(), "short-lived")
        .await
        .unwrap();

    let params = rmcp::model::CallToolRequestParams::new("draft_post").with_arguments(
        json!({"channel": "cats", "text": "after revocation"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let err = client
        .call_tool(params)
        .await
        .expect_err("a call with a revoked token must not run");
    assert!(
        format!("{err:?}").contains("AuthRequired"),
        "the server asked for a token again: {err:?}"
    );
    assert_unauthorized(initialize(&server.url, Some(&secret), None).await).await;
    let cli = Principal::cli();
    let posts = h
        .app
        .list_posts(&cli, &airlock_store::PostFilter::default())
        .await
        .unwrap();
    assert!(posts.is_empty(), "nothing was drafted after revocation");
}

#[tokio::test]
async fn a_foreign_origin_is_refused_with_403_and_the_servers_own_origin_passes() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let secret = h.token("browser", &[Role::Writer]).await;

    let response = initialize(&server.url, Some(&secret), Some("https://evil.example")).await;
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden_origin", "{body}");

    // Even without a token the foreign origin learns nothing more than 403.
    let response = initialize(&server.url, None, Some("https://evil.example")).await;
    assert_eq!(response.status(), 403);

    let port = server
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/mcp");
    for own in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let response = initialize(&server.url, Some(&secret), Some(&own)).await;
        assert_eq!(response.status(), 200, "{own} is the server's own origin");
    }
    let other_port = initialize(&server.url, Some(&secret), Some("http://127.0.0.1:1")).await;
    assert_eq!(
        other_port.status(),
        403,
        "another local port is another origin"
    );
}

/// A raw `tools/list` in a session, to see what the guard answers.
async fn list_in_session(url: &str, bearer: &str, session: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .bearer_auth(bearer)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_session_belongs_to_the_token_that_opened_it() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let alice = h.token("alice", &[Role::Writer]).await;
    let mallory = h.token("mallory", &[Role::Operator]).await;
    let opened = initialize(&server.url, Some(&alice), None).await;
    assert_eq!(opened.status(), 200);
    let session = opened
        .headers()
        .get("mcp-session-id")
        .expect("the server opened a session")
        .to_str()
        .unwrap()
        .to_owned();
    drop(opened);

    let stolen = list_in_session(&server.url, &mallory, &session).await;
    assert_eq!(stolen.status(), 403);
    let body: Value = stolen.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden_session", "{body}");

    // Its own token may still use it (rmcp answers; the guard does not refuse).
    let own = list_in_session(&server.url, &alice, &session).await;
    assert_ne!(own.status(), 403);
}

#[tokio::test]
async fn a_message_over_one_mebibyte_is_refused_before_the_tools_see_it() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let secret = h.token("big", &[Role::Writer]).await;
    let huge = "x".repeat(2 * 1024 * 1024);
    let response = reqwest::Client::new()
        .post(&server.url)
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(&secret)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"padding": huge}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_large", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1048576"),
        "{body}"
    );
}

fn session_of(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("mcp-session-id")
        .expect("the server opened a session")
        .to_str()
        .unwrap()
        .to_owned()
}

async fn start_with(h: &Harness, adjust: impl FnOnce(&mut airlock_mcp::HttpSettings)) -> Server {
    let shutdown = CancellationToken::new();
    let url = h.serve_http_with(&shutdown, adjust).await;
    Server { url, shutdown }
}

#[tokio::test]
async fn a_session_whose_binding_was_dropped_answers_no_one() {
    // One session for the whole server: a second one pushes the first out.
    let h = Harness::new(3).await;
    let server = start_with(&h, |s| s.max_sessions = 1).await;
    let alice = h.token("alice", &[Role::Writer]).await;
    let mallory = h.token("mallory", &[Role::Operator]).await;
    let first = initialize(&server.url, Some(&alice), None).await;
    assert_eq!(first.status(), 200);
    let first = session_of(&first);
    let second = initialize(&server.url, Some(&mallory), None).await;
    assert_eq!(second.status(), 200);
    let second = session_of(&second);

    // Alice's session lost its binding: nobody, not even another token, gets in.
    for token in [&mallory, &alice] {
        let answer = list_in_session(&server.url, token, &first).await;
        assert_eq!(
            answer.status(),
            404,
            "a session without a binding was served"
        );
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unknown_session", "{body}");
    }
    // The newer session still works for its own token.
    let own = list_in_session(&server.url, &mallory, &second).await;
    assert_eq!(own.status(), 200);
}

#[tokio::test]
async fn a_token_holds_a_bounded_number_of_sessions_and_the_oldest_is_closed() {
    let h = Harness::new(3).await;
    let server = start_with(&h, |s| s.max_sessions_per_token = 2).await;
    let alice = h.token("alice", &[Role::Writer]).await;
    let bob = h.token("bob", &[Role::Writer]).await;
    let bobs = session_of(&initialize(&server.url, Some(&bob), None).await);
    let mut alices = Vec::new();
    for _ in 0..3 {
        let opened = initialize(&server.url, Some(&alice), None).await;
        assert_eq!(opened.status(), 200);
        alices.push(session_of(&opened));
    }
    assert_eq!(
        list_in_session(&server.url, &alice, &alices[0])
            .await
            .status(),
        404,
        "the oldest of alice's three sessions should have been closed"
    );
    for session in &alices[1..] {
        assert_eq!(
            list_in_session(&server.url, &alice, session).await.status(),
            200
        );
    }
    // Another token's session is not touched by alice's limit.
    assert_eq!(
        list_in_session(&server.url, &bob, &bobs).await.status(),
        200
    );
}

#[tokio::test]
async fn mcp_answers_are_not_cached_or_sniffed() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let alice = h.token("alice", &[Role::Writer]).await;
    for response in [
        initialize(&server.url, Some(&alice), None).await,
        initialize(&server.url, None, None).await,
    ] {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        assert_eq!(
            header("cache-control").as_deref(),
            Some("no-store"),
            "{}",
            response.status()
        );
        assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    }
}

/// A client closing its session (`DELETE`) is answered 204, as the official SDK expects
/// (it warns on anything but 200 or 204); the session is gone afterwards.
#[tokio::test]
async fn closing_a_session_answers_204_and_ends_it() {
    let h = Harness::new(3).await;
    let server = start(&h).await;
    let secret = h.token("closer", &[Role::Writer]).await;
    let opened = initialize(&server.url, Some(&secret), None).await;
    assert_eq!(opened.status(), 200);
    let session = opened
        .headers()
        .get("mcp-session-id")
        .expect("a session")
        .to_str()
        .unwrap()
        .to_owned();
    let closed = reqwest::Client::new()
        .delete(&server.url)
        .bearer_auth(&secret)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    assert_eq!(
        closed
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    let again = reqwest::Client::new()
        .delete(&server.url)
        .bearer_auth(&secret)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404, "the session has ended");
}
