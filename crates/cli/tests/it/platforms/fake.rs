//! Local fakes for the end-to-end platform tests: Meta's Graph API as Threads and
//! Instagram serve it (platform-apis.md §1 and §2, "What a faithful fake must do"), and a
//! receiver for webhook notifications.
//!
//! Trimmed from `crates/platforms/tests/it/fake/meta.rs` (test modules cannot be shared
//! across crates). Each fake is a wiremock server whose responders share one
//! `Arc<Mutex<State>>`: the token it accepts, the account it belongs to, containers with
//! the state machine `IN_PROGRESS → FINISHED → PUBLISHED`, and publishes counted against a
//! rolling 24 h quota. Every endpoint is its own mock with `.expect(n)`, so an extra call
//! (a second publish above all) fails the test when the server is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use wiremock::matchers::{any, method, path, path_regex, query_param};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Which platform the fake plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// graph.threads.net, `v1.0`.
    Threads,
    /// graph.instagram.com (Instagram Login), any `vNN.0`.
    Instagram,
}

/// The Threads user id.
pub const THREADS_USER_ID: &str = "25000000000000001";
/// The Instagram professional account id (`user_id` in `/me`).
pub const IG_USER_ID: &str = "17841400000000001";
/// The app-scoped id Instagram's `/me` also returns.
pub const IG_APP_SCOPED_ID: &str = "9100000000000001";

/// The endpoints, in the order a publish calls them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /me`.
    Identity,
    /// The publishing-limit read.
    Limit,
    /// Container creation.
    Create,
    /// Container status read.
    Status,
    /// The irreversible publish.
    Publish,
    /// The permalink read.
    MediaRead,
}

/// How the publish endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishMode {
    /// Publish and answer the media id.
    Normal,
    /// Publish, then answer this status with an error page that echoes the request's
    /// `Authorization` header (the answer is lost, and it carries the token back).
    PublishThenStatus(u16),
    /// Publish, then answer only after this long.
    PublishThenDelay(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContainerState {
    InProgress,
    Finished,
    Published,
}

impl ContainerState {
    fn name(self) -> &'static str {
        match self {
            ContainerState::InProgress => "IN_PROGRESS",
            ContainerState::Finished => "FINISHED",
            ContainerState::Published => "PUBLISHED",
        }
    }
}

#[derive(Debug)]
struct Container {
    state: ContainerState,
    reads_left: u32,
}

/// The fake's state, shared by its responders.
#[derive(Debug)]
pub struct State {
    flavour: Flavour,
    /// The only token it accepts.
    token: String,
    /// The account the token belongs to.
    pub username: String,
    /// The token expires when this endpoint is first called, and stays expired.
    pub expire_at: Option<Route>,
    expired: bool,
    /// Status reads that answer `IN_PROGRESS` before a container is `FINISHED`.
    pub in_progress_reads: u32,
    /// How the publish endpoint answers.
    pub publish_mode: PublishMode,
    /// Publishes allowed per rolling 24 h.
    pub quota_total: i64,
    /// Publish times (Unix seconds), this fake's and the account's other clients'.
    published_at: Vec<i64>,
    next_id: u64,
    containers: HashMap<String, Container>,
    /// Media id → container id.
    media: HashMap<String, String>,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

impl State {
    fn new(flavour: Flavour, token: &str) -> Self {
        State {
            flavour,
            token: token.to_owned(),
            username: "inn_cats".into(),
            expire_at: None,
            expired: false,
            in_progress_reads: 1,
            publish_mode: PublishMode::Normal,
            quota_total: match flavour {
                Flavour::Threads => 250,
                Flavour::Instagram => 100,
            },
            published_at: Vec::new(),
            next_id: 17_900_000_000_000_000,
            containers: HashMap::new(),
            media: HashMap::new(),
        }
    }

    fn new_id(&mut self) -> String {
        self.next_id += 7;
        self.next_id.to_string()
    }

    /// Publishes inside the rolling 24 h window.
    pub fn quota_usage(&self) -> i64 {
        let since = unix_now() - 86_400;
        self.published_at.iter().filter(|t| **t > since).count() as i64
    }

    /// Uses the whole quota up, as the account's other clients would.
    pub fn fill_quota(&mut self) {
        while self.quota_usage() < self.quota_total {
            self.published_at.push(unix_now());
        }
    }

    /// The state name of a container.
    pub fn container_state(&self, id: &str) -> Option<&'static str> {
        self.containers.get(id).map(|c| c.state.name())
    }

    /// Media published through this fake.
    pub fn published_media(&self) -> usize {
        self.media.len()
    }

    /// The token check every endpoint makes first: the Graph envelope with code 190.
    fn token_problem(&mut self, request: &Request, route: Route) -> Option<ResponseTemplate> {
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        let token = bearer.or_else(|| params(request).get("access_token").cloned());
        if token.as_deref() != Some(self.token.as_str()) {
            return Some(graph_error(
                400,
                190,
                Some(467),
                "Invalid OAuth access token - Cannot parse access token",
            ));
        }
        if self.expire_at == Some(route) {
            self.expired = true;
        }
        self.expired.then(|| {
            graph_error(
                400,
                190,
                Some(463),
                "Error validating access token: Session has expired on Thursday, 01-Oct-26 09:00:00 PDT.",
            )
        })
    }
}

/// Form pairs from a request's query string and `application/x-www-form-urlencoded` body
/// (Meta's samples use either).
pub fn params(request: &Request) -> HashMap<String, String> {
    let mut params: HashMap<String, String> = request
        .url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    params.extend(
        url::form_urlencoded::parse(&request.body).map(|(k, v)| (k.into_owned(), v.into_owned())),
    );
    params
}

/// A Graph error envelope.
fn graph_error(status: u16, code: i64, subcode: Option<i64>, message: &str) -> ResponseTemplate {
    let mut error = json!({
        "message": message,
        "type": if code == 190 { "OAuthException" } else { "THApiException" },
        "code": code,
        "fbtrace_id": "AbCdEf123",
    });
    if let Some(subcode) = subcode {
        error["error_subcode"] = json!(subcode);
    }
    ResponseTemplate::new(status).set_body_json(json!({ "error": error }))
}

fn last_segment(request: &Request) -> String {
    request
        .url
        .path()
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_owned()
}

type Shared = Arc<Mutex<State>>;

struct Endpoint(Shared, Route);

impl Respond for Endpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if let Some(problem) = state.token_problem(request, self.1) {
            return problem;
        }
        match self.1 {
            Route::Identity => identity(&state),
            Route::Limit => limit(&state),
            Route::Create => create(&mut state, request),
            Route::Status => status(&mut state, request),
            Route::Publish => publish(&mut state, request),
            Route::MediaRead => media_read(&state, request),
        }
    }
}

fn identity(state: &State) -> ResponseTemplate {
    match state.flavour {
        Flavour::Threads => ResponseTemplate::new(200).set_body_json(json!({
            "id": THREADS_USER_ID,
            "username": state.username,
        })),
        Flavour::Instagram => ResponseTemplate::new(200).set_body_json(json!({
            "user_id": IG_USER_ID,
            "id": IG_APP_SCOPED_ID,
            "username": state.username,
        })),
    }
}

fn limit(state: &State) -> ResponseTemplate {
    let entry = json!({
        "quota_usage": state.quota_usage(),
        "config": {"quota_total": state.quota_total, "quota_duration": 86_400},
    });
    ResponseTemplate::new(200).set_body_json(json!({ "data": [entry] }))
}

/// The refusal a container's parameters earn, if any.
fn invalid_container(flavour: Flavour, params: &HashMap<String, String>) -> Option<String> {
    match flavour {
        Flavour::Threads => {
            let text = params.get("text").map(String::as_str).unwrap_or("");
            match params.get("media_type").map(String::as_str) {
                Some("TEXT") if text.is_empty() => {
                    return Some("Param text is required for TEXT posts".into());
                }
                Some("IMAGE") if !params.contains_key("image_url") => {
                    return Some("Param image_url is required for IMAGE posts".into());
                }
                Some("TEXT" | "IMAGE") => {}
                _ => return Some("Param media_type must be one of {TEXT, IMAGE}".into()),
            }
            // Emoji count by their UTF-8 length.
            let length: usize = text
                .chars()
                .map(|c| {
                    if (c as u32) >= 0x1F000 {
                        c.len_utf8()
                    } else {
                        1
                    }
                })
                .sum();
            (length > 500).then(|| "Param text must be at most 500 characters long".into())
        }
        Flavour::Instagram => {
            let Some(image_url) = params.get("image_url") else {
                return Some("The parameter image_url is required".into());
            };
            let lower = image_url.split(['?', '#']).next().unwrap_or("");
            let lower = lower.to_ascii_lowercase();
            if !(lower.ends_with(".jpg") || lower.ends_with(".jpeg")) {
                return Some("Only JPEG images can be published".into());
            }
            let caption = params.get("caption").map(String::as_str).unwrap_or("");
            (caption.chars().count() > 2200).then(|| "The caption is too long".into())
        }
    }
}

fn create(state: &mut State, request: &Request) -> ResponseTemplate {
    let params = params(request);
    if params.get("auto_publish_text").map(String::as_str) == Some("true") {
        return graph_error(
            400,
            100,
            None,
            "airlock must not make creation irreversible",
        );
    }
    if let Some(problem) = invalid_container(state.flavour, &params) {
        return graph_error(400, 100, None, &problem);
    }
    let id = state.new_id();
    let reads_left = state.in_progress_reads;
    state.containers.insert(
        id.clone(),
        Container {
            state: ContainerState::InProgress,
            reads_left,
        },
    );
    ResponseTemplate::new(200).set_body_json(json!({ "id": id }))
}

fn status(state: &mut State, request: &Request) -> ResponseTemplate {
    let id = last_segment(request);
    let flavour = state.flavour;
    let Some(container) = state.containers.get_mut(&id) else {
        // A media id has no status field.
        return graph_error(
            400,
            100,
            None,
            "Tried accessing nonexisting field (status) on node type (ThreadsMedia)",
        );
    };
    if container.state == ContainerState::InProgress {
        if container.reads_left == 0 {
            container.state = ContainerState::Finished;
        } else {
            container.reads_left -= 1;
        }
    }
    let name = container.state.name();
    let body = match flavour {
        Flavour::Threads => json!({ "id": id, "status": name }),
        Flavour::Instagram => json!({ "id": id, "status_code": name, "status": name }),
    };
    ResponseTemplate::new(200).set_body_json(body)
}

fn publish(state: &mut State, request: &Request) -> ResponseTemplate {
    let flavour = state.flavour;
    let Some(container_id) = params(request).get("creation_id").cloned() else {
        return graph_error(400, 100, None, "The parameter creation_id is required");
    };
    let ready = state
        .containers
        .get(&container_id)
        .is_some_and(|c| c.state == ContainerState::Finished);
    if !ready {
        return match flavour {
            Flavour::Threads => graph_error(
                400,
                24,
                Some(4279009),
                "The requested resource does not exist",
            ),
            Flavour::Instagram => {
                graph_error(400, 9007, Some(2207027), "Media ID is not available")
            }
        };
    }
    if state.quota_usage() >= state.quota_total {
        return match flavour {
            Flavour::Instagram => graph_error(
                400,
                9,
                Some(2207042),
                "You reached maximum number of posts that is allowed to be published by Content Publishing API.",
            ),
            // The Threads code for an exhausted quota is unconfirmed; Graph's "user request
            // limit reached" stands in for it.
            Flavour::Threads => graph_error(400, 17, None, "User request limit reached"),
        };
    }
    let media_id = state.new_id();
    state.published_at.push(unix_now());
    state.media.insert(media_id.clone(), container_id.clone());
    if let Some(container) = state.containers.get_mut(&container_id) {
        container.state = ContainerState::Published;
    }
    let answer = ResponseTemplate::new(200).set_body_json(json!({ "id": media_id }));
    match state.publish_mode {
        PublishMode::Normal => answer,
        PublishMode::PublishThenStatus(status) => {
            ResponseTemplate::new(status).set_body_string(error_page(status, &state.token))
        }
        PublishMode::PublishThenDelay(delay) => answer.set_delay(delay),
    }
}

/// An error page from a front end that dumps the request it failed on, as debug pages of
/// some proxies do: the token comes back in the body, near where a summary is cut short.
fn error_page(status: u16, token: &str) -> String {
    format!(
        "<html><body><h1>{status} Internal Server Error</h1><pre>The request was:\nauthorization: Bearer {token}\nuser-agent: ...</pre></body></html>"
    )
}

fn media_read(state: &State, request: &Request) -> ResponseTemplate {
    let id = last_segment(request);
    if !state.media.contains_key(&id) {
        return graph_error(
            400,
            100,
            Some(33),
            "Unsupported get request. Object does not exist or cannot be loaded",
        );
    }
    let permalink = match state.flavour {
        Flavour::Threads => format!("https://www.threads.com/@{}/post/C{id}", state.username),
        Flavour::Instagram => format!("https://www.instagram.com/p/C{id}/"),
    };
    ResponseTemplate::new(200).set_body_json(json!({ "id": id, "permalink": permalink }))
}

/// How many calls each endpoint must get.
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    /// `GET me`.
    pub identity: u64,
    /// The publishing-limit read.
    pub limit: u64,
    /// Container creation.
    pub create: u64,
    /// Container status reads (at least this many; exactly zero when zero).
    pub status_at_least: u64,
    /// The irreversible publish.
    pub publish: u64,
    /// Permalink reads.
    pub media_read: u64,
}

impl Expect {
    /// Nothing may be called.
    pub const NONE: Expect = Expect {
        identity: 0,
        limit: 0,
        create: 0,
        status_at_least: 0,
        publish: 0,
        media_read: 0,
    };

    /// A whole publish: identity, limit, one container polled until ready, one publish,
    /// one permalink read.
    pub const ONE_POST: Expect = Expect {
        identity: 1,
        limit: 1,
        create: 1,
        status_at_least: 2,
        publish: 1,
        media_read: 1,
    };
}

/// A running Graph fake.
pub struct GraphFake {
    /// The server; dropping it checks every mock's expectation.
    pub server: MockServer,
    state: Shared,
}

impl GraphFake {
    /// Starts a fake that accepts only `token`; `configure` adjusts its state before use.
    pub async fn start(
        flavour: Flavour,
        token: &str,
        expect: Expect,
        configure: impl FnOnce(&mut State),
    ) -> GraphFake {
        let server = MockServer::start().await;
        let mut state = State::new(flavour, token);
        configure(&mut state);
        let fake = GraphFake {
            server,
            state: Arc::new(Mutex::new(state)),
        };
        fake.mount(flavour, expect).await;
        fake
    }

    async fn mount(&self, flavour: Flavour, expect: Expect) {
        let (v, user, create, publish, limit, status_fields) = match flavour {
            Flavour::Threads => (
                r"v1\.0",
                format!("(me|{THREADS_USER_ID})"),
                "threads",
                "threads_publish",
                "threads_publishing_limit",
                "id,status,error_message",
            ),
            Flavour::Instagram => (
                r"v\d+\.\d+",
                format!("(me|{IG_USER_ID}|{IG_APP_SCOPED_ID})"),
                "media",
                "media_publish",
                "content_publishing_limit",
                "id,status_code,status",
            ),
        };
        let identity = match flavour {
            Flavour::Threads => r"^/v1\.0/me$".to_owned(),
            Flavour::Instagram => format!(r"^/{v}/(me|{IG_USER_ID})$"),
        };
        let endpoint = |route| Endpoint(self.state.clone(), route);
        Mock::given(method("GET"))
            .and(path_regex(identity))
            .and(wiremock::matchers::query_param_contains(
                "fields", "username",
            ))
            .respond_with(endpoint(Route::Identity))
            .expect(expect.identity)
            .named("identity")
            .mount(&self.server)
            .await;
        Mock::given(method("GET"))
            .and(path_regex(format!(r"^/{v}/{user}/{limit}$")))
            .respond_with(endpoint(Route::Limit))
            .expect(expect.limit)
            .named("publishing limit")
            .mount(&self.server)
            .await;
        Mock::given(method("POST"))
            .and(path_regex(format!(r"^/{v}/{user}/{create}$")))
            .respond_with(endpoint(Route::Create))
            .expect(expect.create)
            .named("container creation")
            .mount(&self.server)
            .await;
        let status = Mock::given(method("GET"))
            .and(path_regex(format!(r"^/{v}/\d+$")))
            .and(query_param("fields", status_fields))
            .respond_with(endpoint(Route::Status))
            .named("container status");
        let status = if expect.status_at_least == 0 {
            status.expect(0)
        } else {
            status.expect(expect.status_at_least..)
        };
        status.mount(&self.server).await;
        Mock::given(method("POST"))
            .and(path_regex(format!(r"^/{v}/{user}/{publish}$")))
            .respond_with(endpoint(Route::Publish))
            .expect(expect.publish)
            .named("publish (irreversible)")
            .mount(&self.server)
            .await;
        Mock::given(method("GET"))
            .and(path_regex(format!(r"^/{v}/\d+$")))
            .and(query_param("fields", "id,permalink"))
            .respond_with(endpoint(Route::MediaRead))
            .expect(expect.media_read)
            .named("media read")
            .mount(&self.server)
            .await;
        // Anything else is a bug in the adapter: answer like Graph does for unknown paths.
        Mock::given(any())
            .respond_with(graph_error(400, 100, None, "Unknown path components"))
            .with_priority(u8::MAX)
            .expect(0)
            .named("unexpected call")
            .mount(&self.server)
            .await;
    }

    /// The fake's address, for `base_url`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Runs `f` on the state.
    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    /// Every request received so far.
    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }
}

/// A receiver for `webhook` notifications: answers 200 and keeps what it got.
pub struct Receiver {
    /// The server.
    pub server: MockServer,
}

impl Receiver {
    /// Starts a receiver at `/notify`.
    pub async fn start() -> Receiver {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/notify"))
            .respond_with(ResponseTemplate::new(200))
            .named("notification receiver")
            .mount(&server)
            .await;
        Receiver { server }
    }

    /// The sink's `url`.
    pub fn url(&self) -> String {
        format!("{}/notify", self.server.uri())
    }

    /// Every notification received so far.
    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }

    /// The `X-Airlock-Event` of each notification received, sorted (rows written in one
    /// transaction have no order a receiver may rely on).
    pub async fn events(&self) -> Vec<String> {
        let mut events: Vec<String> = self
            .requests()
            .await
            .iter()
            .filter_map(|r| r.headers.get("x-airlock-event"))
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect();
        events.sort();
        events
    }
}
