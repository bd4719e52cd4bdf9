//! A fake of LinkedIn's `userinfo` and Posts API.
//!
//! - Bearer check; a bad or expired token answers 401 with `serviceErrorCode` 65600.
//! - `POST /rest/posts` requires `LinkedIn-Version` from a configurable set of active
//!   versions (else 426 `NONEXISTENT_VERSION`) and `X-Restli-Protocol-Version: 2.0.0`;
//!   checks that `author` is the token's member (or an allowed organization) and the enum
//!   values; refuses commentary over 3,000 characters; answers identical commentary by the
//!   same author inside a configurable window with 422 `DUPLICATE_POST` naming the
//!   earlier URN; answers 429 with the throttle body once a daily counter is spent.
//! - Success is 201, an empty body and `x-restli-id: urn:li:share:<19 digits>`.
//! - `GET /rest/posts/{urn}` reads a post back only when the token may read posts
//!   (`r_member_social` is restricted, so by default it answers 403).
//! - [`PublishMode`] acts out lost answers.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::CANARY;
use crate::fake::{Fake, refuse_the_rest};

/// How the create endpoint behaves.
pub use crate::fake::CreateMode as PublishMode;

/// The member id `userinfo` answers.
pub const SUB: &str = "vaz8tJ1Aah";

/// One created post.
#[derive(Debug, Clone)]
pub struct Post {
    /// Its URN.
    pub urn: String,
    /// Its author.
    pub author: String,
    /// The commentary as received (escaped).
    pub commentary: String,
    /// When, on the fake clock (seconds).
    pub at: i64,
}

/// The fake's state.
#[derive(Debug)]
pub struct State {
    /// The member `userinfo` names.
    pub sub: String,
    /// The token has expired.
    pub token_expired: bool,
    /// Versions the fake accepts.
    pub active_versions: Vec<String>,
    /// Organizations the member may post for.
    pub organizations: Vec<String>,
    /// Identical commentary inside this many seconds is a duplicate.
    pub duplicate_window: i64,
    /// Creates allowed per day before 429.
    pub daily_limit: usize,
    /// How the create endpoint behaves.
    pub publish_mode: PublishMode,
    /// The token may read posts back (`r_member_social`).
    pub can_read_posts: bool,
    /// The fake clock.
    pub now: i64,
    /// Posts created.
    pub posts: Vec<Post>,
    next: u64,
}

impl Default for State {
    fn default() -> Self {
        State {
            sub: SUB.into(),
            token_expired: false,
            active_versions: vec!["202607".into(), "202608".into(), "202609".into()],
            organizations: vec!["urn:li:organization:5515715".into()],
            duplicate_window: 86_400,
            daily_limit: 150,
            publish_mode: PublishMode::Normal,
            can_read_posts: false,
            now: 1_800_000_000,
            posts: Vec::new(),
            next: 7_123_456_789_012_345_678,
        }
    }
}

fn error(status: u16, service_code: Option<i64>, message: &str) -> ResponseTemplate {
    let mut body = json!({ "status": status, "message": message });
    if let Some(code) = service_code {
        body["serviceErrorCode"] = json!(code);
    }
    ResponseTemplate::new(status).set_body_json(body)
}

fn token_problem(request: &Request, state: &State) -> Option<ResponseTemplate> {
    let bearer = request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match bearer {
        Some(CANARY) if !state.token_expired => None,
        Some(CANARY) => Some(error(
            401,
            Some(65601),
            "The token used in the request has expired",
        )),
        _ => Some(error(401, Some(65600), "Invalid access token")),
    }
}

type Shared = Arc<Mutex<State>>;

struct Userinfo(Shared);
struct CreatePost(Shared);
struct ReadPost(Shared);

impl Respond for ReadPost {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let state = self.0.lock().unwrap();
        if let Some(problem) = token_problem(request, &state) {
            return problem;
        }
        if !state.can_read_posts {
            return error(
                403,
                Some(100),
                "Not enough permissions to access: partnerApiPostsExternal.GET.20260901",
            );
        }
        let encoded = request.url.path().trim_start_matches("/rest/posts/");
        let urn = url::form_urlencoded::parse(format!("u={encoded}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        match state.posts.iter().find(|p| p.urn == urn) {
            Some(post) => ResponseTemplate::new(200).set_body_json(json!({
                "id": post.urn,
                "author": post.author,
                "commentary": post.commentary,
                "visibility": "PUBLIC",
                "lifecycleState": "PUBLISHED",
            })),
            None => error(404, None, "Not Found"),
        }
    }
}

impl Respond for Userinfo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let state = self.0.lock().unwrap();
        if let Some(problem) = token_problem(request, &state) {
            return problem;
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "sub": state.sub,
            "name": "Inn Keeper",
            "given_name": "Inn",
            "family_name": "Keeper",
            "locale": {"country": "JP", "language": "ja"},
            "email_verified": true,
        }))
    }
}

impl Respond for CreatePost {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if let Some(problem) = token_problem(request, &state) {
            return problem;
        }
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        match header("linkedin-version") {
            Some(v) if state.active_versions.contains(&v) => {}
            Some(v) => {
                return ResponseTemplate::new(426).set_body_json(json!({
                    "status": 426,
                    "code": "NONEXISTENT_VERSION",
                    "message": format!("Requested version {v}01 is not active"),
                }));
            }
            None => {
                return error(
                    400,
                    None,
                    "A version must be present. Please specify a version by adding the LinkedIn-Version header.",
                );
            }
        }
        if header("x-restli-protocol-version").as_deref() != Some("2.0.0") {
            return error(400, None, "X-Restli-Protocol-Version 2.0.0 is required");
        }
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return error(400, None, "Malformed JSON");
        };
        let author = body["author"].as_str().unwrap_or("").to_owned();
        if author != format!("urn:li:person:{}", state.sub)
            && !state.organizations.contains(&author)
        {
            return error(
                403,
                Some(100),
                "Not enough permissions to post as this author",
            );
        }
        let valid = matches!(
            body["visibility"].as_str(),
            Some("PUBLIC" | "CONNECTIONS" | "LOGGED_IN" | "CONTAINER")
        ) && matches!(
            body["distribution"]["feedDistribution"].as_str(),
            Some("MAIN_FEED" | "NONE")
        ) && matches!(body["lifecycleState"].as_str(), Some("PUBLISHED" | "DRAFT"));
        if !valid {
            return error(422, None, "Invalid enum value");
        }
        let commentary = body["commentary"].as_str().unwrap_or("").to_owned();
        let length = commentary.chars().count();
        if length > 3000 {
            return ResponseTemplate::new(400).set_body_json(json!({
                "status": 400,
                "message": format!("ShareCommentary text length ({length} characters) exceeded the maximum allowed (3000 characters)"),
                "errorDetails": {"inputErrors": [{"code": "FIELD_ARRAY_SIZE_TOO_HIGH"}]},
            }));
        }
        let now = state.now;
        let window = state.duplicate_window;
        if let Some(earlier) = state
            .posts
            .iter()
            .find(|p| p.author == author && p.commentary == commentary && now - p.at < window)
        {
            return ResponseTemplate::new(422).set_body_json(json!({
                "errorDetailType": "com.linkedin.common.error.BadRequest",
                "message": format!("ERROR :: /commentary :: Content is a duplicate of {}", earlier.urn),
                "errorDetails": {"inputErrors": [{
                    "description": "Duplicate post is detected",
                    "input": {},
                    "code": "DUPLICATE_POST",
                }]},
                "status": 422,
            }));
        }
        let today = state.posts.iter().filter(|p| now - p.at < 86_400).count();
        if today >= state.daily_limit {
            return ResponseTemplate::new(429).set_body_json(json!({
                "serviceErrorCode": 101,
                "message": "Resource level throttle limit for calls to this resource is reached.",
                "status": 429,
            }));
        }
        if let PublishMode::StatusWithoutCreating(status) = state.publish_mode {
            return ResponseTemplate::new(status);
        }
        state.next += 1;
        let urn = format!("urn:li:share:{}", state.next);
        state.posts.push(Post {
            urn: urn.clone(),
            author,
            commentary,
            at: now,
        });
        let created = ResponseTemplate::new(201).insert_header("x-restli-id", urn.as_str());
        state.publish_mode.answer(created, ResponseTemplate::new)
    }
}

/// A running fake.
pub type LinkedinFake = Fake<State>;

impl LinkedinFake {
    /// Starts a fake expecting this many `userinfo` and create calls, and no reads.
    pub async fn start(userinfo: u64, create: u64) -> LinkedinFake {
        Self::start_expecting(userinfo, create, 0).await
    }

    /// Starts a fake expecting this many `userinfo`, create and read-back calls.
    pub async fn start_expecting(userinfo: u64, create: u64, read: u64) -> LinkedinFake {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State::default()));
        Mock::given(method("GET"))
            .and(path("/v2/userinfo"))
            .respond_with(Userinfo(state.clone()))
            .expect(userinfo)
            .named("userinfo")
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/rest/posts"))
            .respond_with(CreatePost(state.clone()))
            .expect(create)
            .named("create post (irreversible)")
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path_regex(r"^/rest/posts/.+$"))
            .respond_with(ReadPost(state.clone()))
            .expect(read)
            .named("read post")
            .mount(&server)
            .await;
        refuse_the_rest(&server, error(404, None, "No route")).await;
        LinkedinFake { server, state }
    }
}
