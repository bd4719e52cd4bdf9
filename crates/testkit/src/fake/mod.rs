//! Stateful fakes of the platforms, each a wiremock server whose responders share one
//! `Arc<Mutex<State>>`, so they hold what canned answers cannot: container state
//! machines, counters, rolling-window quotas, duplicate detection, renamed slugs, and
//! work a slow backend finishes after the client gave up. Each endpoint is its own mock
//! with `.expect(n)`, so an extra publish (or any unexpected call) fails the test when the
//! server is dropped.
//!
//! - [`meta`]: Threads and Instagram (Graph API containers);
//! - [`wordpress`]: the WordPress REST API;
//! - [`linkedin`]: LinkedIn's `userinfo` and Posts API;
//! - [`bluesky`]: a Bluesky PDS (sessions, records at client-chosen keys, blobs);
//! - [`mastodon`]: a Mastodon instance (idempotency keys kept an hour on a fake clock);
//! - [`x`]: X's API v2 (OAuth 2.0 refresh with rotation, duplicate content);
//! - [`telegram`]: the Telegram Bot API (the token in the path, flood control);
//! - [`receiver`]: a receiver for `webhook` notifications.
//!
//! What they share lives here: [`Fake`], the server with its state that every fake is
//! (started the same way for every [`Platform`]), the [`ANY`] call count, how a create
//! call behaves ([`CreateMode`]), and the mounting of routes with their expected counts
//! behind a catch-all that fails the test on any call no route expects.

pub mod bluesky;
pub mod linkedin;
pub mod mastodon;
pub mod meta;
pub mod receiver;
pub mod telegram;
pub mod wordpress;
pub mod x;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wiremock::{Match, Mock, MockServer, Request, Respond, ResponseTemplate};

/// A count in a fake's `Expect` that allows any number of calls.
pub const ANY: u64 = u64::MAX;

/// A running fake: a wiremock server and the state its responders share. Each platform
/// module names its own (`x::XFake` is `Fake<x::State>`) and adds how to start it.
#[derive(Debug)]
pub struct Fake<S> {
    /// The server; dropping it checks every mock's expectation.
    pub server: MockServer,
    /// The shared state.
    pub state: Arc<Mutex<S>>,
}

/// A platform a [`Fake`] stands in for, implemented by its state: which routes the fake
/// serves.
/// Its `Default` is the state before a test's `configure` adjusts it.
pub trait Platform: Default {
    /// How many calls each route must get in a test.
    type Expect;

    /// Mounts the routes on a fake that has just started, the catch-all last.
    fn mount(fake: &Fake<Self>, expect: Self::Expect) -> impl Future<Output = ()>;
}

/// How a fake's irreversible call, the one that creates the post, behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Create and answer as the platform does.
    Normal,
    /// Create, then answer this status.
    CreateThenStatus(u16),
    /// Create, then answer only after this long.
    CreateThenDelay(Duration),
    /// Answer this status and create nothing.
    StatusWithoutCreating(u16),
}

impl CreateMode {
    /// The answer to a create that happened: `created` as it is or late, or the
    /// platform's `failure` with the status.
    pub fn answer(
        self,
        created: ResponseTemplate,
        failure: impl FnOnce(u16) -> ResponseTemplate,
    ) -> ResponseTemplate {
        match self {
            CreateMode::CreateThenStatus(code) => failure(code),
            CreateMode::CreateThenDelay(delay) => created.set_delay(delay),
            CreateMode::Normal | CreateMode::StatusWithoutCreating(_) => created,
        }
    }
}

impl<S: Platform> Fake<S> {
    /// Starts a fake expecting these calls, after `configure` adjusts its state.
    pub async fn start_with(expect: S::Expect, configure: impl FnOnce(&mut S)) -> Fake<S> {
        let mut state = S::default();
        configure(&mut state);
        let fake = Fake {
            server: MockServer::start().await,
            state: Arc::new(Mutex::new(state)),
        };
        S::mount(&fake, expect).await;
        fake
    }

    /// Starts a fake with the initial state.
    pub async fn start(expect: S::Expect) -> Fake<S> {
        Self::start_with(expect, |_| {}).await
    }
}

impl<S> Fake<S> {
    /// Mounts one mock per route `(route, method, path, expected calls)`, named after
    /// the route and answered by `respond(route)`; a path ending in `*` matches every
    /// path it starts. Then [`refuse_the_rest`] with `unexpected`.
    pub async fn mount_table<R, T>(
        &self,
        routes: impl IntoIterator<Item = (R, &'static str, &'static str, u64)>,
        respond: impl Fn(R) -> T,
        unexpected: ResponseTemplate,
    ) where
        R: std::fmt::Debug,
        T: Respond + 'static,
    {
        let routes = routes.into_iter().map(|(route, verb, pattern, times)| {
            let matcher = move |request: &Request| {
                let path = request.url.path();
                request.method.as_str() == verb
                    && match pattern.strip_suffix('*') {
                        Some(prefix) => path.starts_with(prefix),
                        None => path == pattern,
                    }
            };
            (format!("{route:?}"), matcher, respond(route), times)
        });
        mount_routes(&self.server, routes, unexpected).await;
    }

    /// The fake's address, for `base_url`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Runs `f` on the state.
    pub fn with<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    /// Every request received so far.
    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }
}

/// Spends one call of a fake's rate limit (`None`: no limit); `false` when none is
/// left, and the fake answers 429.
pub fn spend(left: &mut Option<u32>) -> bool {
    match left {
        Some(0) => false,
        Some(n) => {
            *n -= 1;
            true
        }
        None => true,
    }
}

/// A query parameter of a request.
pub fn query(request: &Request, key: &str) -> Option<String> {
    request
        .url
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// `mock` expecting `times` calls ([`ANY`]: any number).
pub fn expect(mock: Mock, times: u64) -> Mock {
    match times {
        ANY => mock.expect(0..),
        n => mock.expect(n),
    }
}

/// Mounts one mock per route `(name, matcher, responder, expected calls)`, then
/// [`refuse_the_rest`] with `unexpected`.
pub async fn mount_routes<M, R>(
    server: &MockServer,
    routes: impl IntoIterator<Item = (String, M, R, u64)>,
    unexpected: ResponseTemplate,
) where
    M: Match + 'static,
    R: Respond + 'static,
{
    for (name, matcher, responder, times) in routes {
        let mock = Mock::given(matcher).respond_with(responder).named(name);
        expect(mock, times).mount(server).await;
    }
    refuse_the_rest(server, unexpected).await;
}

/// Mounts the catch-all, last in priority: a call no other mock matches gets `answer`,
/// and, as the catch-all expects none, fails the test when the server is dropped.
pub async fn refuse_the_rest(server: &MockServer, answer: ResponseTemplate) {
    Mock::given(wiremock::matchers::any())
        .respond_with(answer)
        .with_priority(u8::MAX)
        .expect(0)
        .named("unexpected call")
        .mount(server)
        .await;
}
