//! MCP over streamable HTTP at `/mcp`, behind a guard that runs on every request:
//!
//! 1. **Host and Origin**: the server's one policy ([`airlock_web::policy`], configured
//!    by [`HttpSettings::policy`]), checked again here so that the endpoint is guarded
//!    when served alone too: a foreign `Host` (DNS rebinding) or a foreign `Origin` (a
//!    web page the user visits driving the tools) gets 403 before the token is read.
//! 2. **Bearer token**: `Authorization: Bearer <token>` is checked with
//!    [`App::authenticate`] on every request, not only when a session starts, so a
//!    revoked token stops working at once. Missing, unknown or revoked: 401 with
//!    `WWW-Authenticate: Bearer`. The token's [`airlock_app::Principal`] goes into the
//!    request's extensions, where each tool reads it.
//! 3. **Size**: a message body is read up to [`airlock_core::limits::MAX_BODY_BYTES`];
//!    a larger one is refused with 413 before rmcp sees it.
//! 4. **Session binding**: a session (`Mcp-Session-Id`) belongs to the token that opened
//!    it; a request in that session with another token is refused with 403, so a session
//!    id that leaks (a log, a proxy) gives no other token its stream or its place. A
//!    session id with no binding is refused with 404 (the MCP answer that tells a client
//!    to initialize again) before rmcp sees it, so the check fails closed: a binding is
//!    only ever dropped together with its session. Bindings end when rmcp ends the
//!    session (a `DELETE`, the idle timeout, shutdown), and each token holds at most
//!    [`HttpSettings::max_sessions_per_token`] sessions (the server at most
//!    [`HttpSettings::max_sessions`]): past it, that token's oldest (the server's
//!    oldest) session is closed.
//! 5. **Closing**: a session's `DELETE` that rmcp accepted is answered `204 No Content`
//!    (rmcp says 202, which the official SDKs log as a failed close).
//! 6. **Headers**: every answer carries `Cache-Control: no-store` and
//!    `X-Content-Type-Options: nosniff`, like the HTTP API's.
//!
//! rmcp's own `Host` and `Origin` checks are configured with the policy's lists, as a
//! further line; this guard answers first, with airlock's JSON error shape
//! `{"error": {"code", "message"}}`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use airlock_app::{App, Error, ErrorBody};
use airlock_web::policy::{HostPolicy, PolicySettings};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::AirlockMcp;

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// The most sessions one token may hold open by default: enough for an agent that
/// reconnects, few enough that one token cannot crowd out the others.
pub const MAX_SESSIONS_PER_TOKEN: usize = 16;

/// The most sessions the server holds open by default; each is a task and buffers.
pub const MAX_SESSIONS: usize = 10_000;

/// How the HTTP transport is exposed.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Which `Host` names and `Origin`s the endpoint answers to: the settings of the
    /// server's one policy (`airlock serve` passes its own), with the listen address.
    pub policy: PolicySettings,
    /// Cancelled when the server shuts down: open MCP sessions and their streams end,
    /// so a graceful shutdown does not wait for clients to hang up.
    pub shutdown: CancellationToken,
    /// The most MCP sessions one token may hold open (default
    /// [`MAX_SESSIONS_PER_TOKEN`]); opening one more closes that token's oldest.
    pub max_sessions_per_token: usize,
    /// The most MCP sessions the server holds open (default [`MAX_SESSIONS`]); opening
    /// one more closes the oldest.
    pub max_sessions: usize,
}

impl HttpSettings {
    /// Settings for a server listening on `listen`, allowing only its own origins and
    /// loopback host names.
    pub fn new(listen: SocketAddr) -> Self {
        HttpSettings {
            policy: PolicySettings::new(listen),
            shutdown: CancellationToken::new(),
            max_sessions_per_token: MAX_SESSIONS_PER_TOKEN,
            max_sessions: MAX_SESSIONS,
        }
    }
}

/// The `/mcp` endpoint as a router to merge into `airlock serve`'s router. Every request
/// passes the guard described in the module docs; tools run as the request's token.
pub fn router(app: App, settings: HttpSettings) -> Router {
    let policy = HostPolicy::new(&settings.policy);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(policy.hosts().iter().cloned())
        .with_allowed_origins(policy.origins().iter().cloned())
        .enforce_origin_validation()
        .with_cancellation_token(settings.shutdown.child_token());
    let factory_app = app.clone();
    let sessions = Arc::new(Mutex::new(Sessions {
        max_per_token: settings.max_sessions_per_token.max(1),
        max: settings.max_sessions.max(1),
        ..Sessions::default()
    }));
    let manager = Arc::new(BoundSessionManager {
        inner: LocalSessionManager::default(),
        sessions: sessions.clone(),
    });
    let service = StreamableHttpService::new(
        move || Ok(AirlockMcp::per_request(factory_app.clone())),
        manager.clone(),
        config,
    );
    let guard = Guard {
        app,
        policy,
        sessions,
        manager,
    };
    Router::new()
        .route_service(PATH, service)
        .layer(middleware::from_fn_with_state(guard, check_request))
}

/// Serves [`router`] on `listener` until `settings.shutdown` is cancelled. `serve`
/// mounts the router into its own server instead; this runs it alone (tests, tools).
pub async fn serve(
    app: App,
    listener: tokio::net::TcpListener,
    mut settings: HttpSettings,
) -> std::io::Result<()> {
    settings.policy.listen = listener.local_addr()?;
    let shutdown = settings.shutdown.clone();
    axum::serve(listener, router(app, settings))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

#[derive(Clone)]
struct Guard {
    app: App,
    policy: HostPolicy,
    sessions: Arc<Mutex<Sessions>>,
    manager: Arc<BoundSessionManager>,
}

/// The header rmcp names sessions by.
const SESSION_HEADER: &str = "mcp-session-id";

/// Which token opened each session: the SHA-256 of its secret, and when (a counter).
#[derive(Default)]
struct Sessions {
    owners: HashMap<String, (String, u64)>,
    opened: u64,
    max_per_token: usize,
    max: usize,
}

impl Sessions {
    /// Binds a new session to its token; returns the sessions to close to stay within
    /// the caps (their bindings are already gone, so they answer no one from now on).
    fn bind(&mut self, session: String, token_sha256: String) -> Vec<String> {
        self.opened += 1;
        self.owners
            .insert(session, (token_sha256.clone(), self.opened));
        let mut evicted = Vec::new();
        loop {
            let of_token = self
                .owners
                .iter()
                .filter(|(_, (owner, _))| *owner == token_sha256);
            let over_token = of_token.clone().count() > self.max_per_token;
            let oldest = if over_token {
                of_token.min_by_key(|(_, (_, at))| *at)
            } else if self.owners.len() > self.max {
                self.owners.iter().min_by_key(|(_, (_, at))| *at)
            } else {
                break;
            };
            let Some(oldest) = oldest.map(|(id, _)| id.clone()) else {
                break;
            };
            self.owners.remove(&oldest);
            evicted.push(oldest);
        }
        evicted
    }

    /// The token hash that opened `session`, if it is bound.
    fn owner(&self, session: &str) -> Option<&str> {
        self.owners.get(session).map(|(owner, _)| owner.as_str())
    }
}

/// rmcp's in-memory session manager, reporting every session's end to [`Sessions`] so
/// that a binding never outlives its session (rmcp calls `close_session` when a session
/// ends for any reason: a `DELETE`, its idle timeout, shutdown).
struct BoundSessionManager {
    inner: LocalSessionManager,
    sessions: Arc<Mutex<Sessions>>,
}

impl SessionManager for BoundSessionManager {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.sessions).owners.remove(id.as_ref());
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}

async fn check_request(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let mut response = guarded(guard, request, next).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

async fn guarded(guard: Guard, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Err(refusal) = guard.policy.check(headers, request.uri()) {
        return refusal.into_response();
    }
    let token_sha256 = bearer(headers).map(|t| airlock_core::hash::sha256_hex(t.as_bytes()));
    let principal = match bearer(headers) {
        Some(token) => guard.app.authenticate(token).await,
        None => Err(Error::Unauthorized),
    };
    match principal {
        Ok(principal) => {
            let token_sha256 = token_sha256.expect("an authenticated request has a token");
            let session = headers
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(session) = &session {
                let owner = lock(&guard.sessions).owner(session).map(str::to_owned);
                match owner {
                    // Fail closed: a session with no binding is answered by no one, even
                    // if rmcp still knew it.
                    None => {
                        return error_response(
                            StatusCode::NOT_FOUND,
                            "unknown_session",
                            "this MCP session has ended or never existed: open a new one (initialize without Mcp-Session-Id)",
                        );
                    }
                    Some(owner) if owner != token_sha256 => {
                        tracing::warn!(actor = %principal.actor, "refused a request in an MCP session another token opened");
                        return error_response(
                            StatusCode::FORBIDDEN,
                            "forbidden_session",
                            "this MCP session was opened with another token: open a session of your own (initialize without Mcp-Session-Id)",
                        );
                    }
                    Some(_) => {}
                }
            }
            let closing = request.method() == axum::http::Method::DELETE;
            let actor = principal.actor.to_string();
            request.extensions_mut().insert(principal);
            // rmcp reads a message body whole, with no limit of its own: bound it here.
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, airlock_core::limits::MAX_BODY_BYTES).await
            else {
                return error_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    &format!(
                        "an MCP message is at most {} bytes (1 MiB): a post's text is at most {} characters",
                        airlock_core::limits::MAX_BODY_BYTES,
                        airlock_core::limits::MAX_TEXT_CHARS
                    ),
                );
            };
            let request = Request::from_parts(parts, axum::body::Body::from(bytes));
            let response = next.run(request).await;
            match (&session, response.headers().get(SESSION_HEADER)) {
                (None, Some(opened)) => {
                    if let Ok(opened) = opened.to_str() {
                        let evicted = lock(&guard.sessions).bind(opened.to_owned(), token_sha256);
                        for old in evicted {
                            tracing::info!(actor = %actor, "closed the oldest MCP session to stay within the session limit");
                            let _ = guard.manager.close_session(&SessionId::from(old)).await;
                        }
                    }
                }
                (Some(session), _) if closing && response.status().is_success() => {
                    lock(&guard.sessions).owners.remove(session);
                    // rmcp answers 202; the official SDKs expect 200 or 204 and warn on
                    // every close otherwise. The session has ended: say so plainly.
                    if response.status() == StatusCode::ACCEPTED {
                        return StatusCode::NO_CONTENT.into_response();
                    }
                }
                _ => {}
            }
            response
        }
        Err(Error::Unauthorized) => {
            let mut response = error_response(
                StatusCode::UNAUTHORIZED,
                Error::Unauthorized.code(),
                &Error::Unauthorized.to_string(),
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
        Err(other) => {
            tracing::error!(code = other.code(), "token check failed: {other}");
            error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                other.code(),
                &format!("cannot check the token now: {other}"),
            )
        }
    }
}

fn lock(sessions: &Mutex<Sessions>) -> std::sync::MutexGuard<'_, Sessions> {
    // Plain data: a panic elsewhere while holding the lock leaves it usable.
    sessions
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The secret of an `Authorization: Bearer <token>` header (the scheme is
/// case-insensitive).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (status, axum::Json(ErrorBody::new(code, message))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_binding_ends_when_rmcp_ends_its_session() {
        let sessions = Arc::new(Mutex::new(Sessions {
            max_per_token: 16,
            max: 100,
            ..Sessions::default()
        }));
        let manager = BoundSessionManager {
            inner: LocalSessionManager::default(),
            sessions: sessions.clone(),
        };
        assert!(lock(&sessions).bind("s1".into(), "alice".into()).is_empty());
        assert!(lock(&sessions).bind("s2".into(), "alice".into()).is_empty());
        // What rmcp calls when a session's worker stops (DELETE, idle timeout, shutdown).
        manager.close_session(&SessionId::from("s1")).await.unwrap();
        assert_eq!(lock(&sessions).owner("s1"), None);
        assert_eq!(lock(&sessions).owner("s2"), Some("alice"));
    }

    #[test]
    fn binding_past_the_caps_evicts_the_oldest_of_the_token_then_of_the_server() {
        let mut sessions = Sessions {
            max_per_token: 2,
            max: 3,
            ..Sessions::default()
        };
        assert!(sessions.bind("a1".into(), "alice".into()).is_empty());
        assert!(sessions.bind("b1".into(), "bob".into()).is_empty());
        assert!(sessions.bind("a2".into(), "alice".into()).is_empty());
        assert_eq!(sessions.bind("a3".into(), "alice".into()), ["a1"]);
        assert_eq!(sessions.bind("c1".into(), "carol".into()), ["b1"]);
        assert_eq!(sessions.owners.len(), 3);
    }

    #[test]
    fn only_a_non_empty_bearer_token_is_taken() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            bearer(&headers).map(str::to_owned)
        };
        assert_eq!(with("Bearer alk_1").as_deref(), Some("alk_1"));
        assert_eq!(with("bearer  alk_1 ").as_deref(), Some("alk_1"));
        assert_eq!(with("Basic abc"), None);
        assert_eq!(with("Bearer "), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
