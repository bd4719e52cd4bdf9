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
//! - Images: `POST /rest/images?action=initializeUpload` (owner: the member or an allowed
//!   organization) answers `value.uploadUrl` (on the fake itself, `/dms-uploads/{n}`),
//!   `value.image` (`urn:li:image:…`) and `value.uploadUrlExpiresAt`; `PUT` of the bytes
//!   there (with the token) makes the image `AVAILABLE`, or `PROCESSING` for
//!   [`State::processing_reads`] status reads; [`State::expire_upload_urls`] makes the
//!   `PUT` fail as an expired URL does (403). `GET /rest/images/{urn}` answers the status
//!   of an organization's image and 403 for a member's (members may not read it).
//! - A post's `content.media` (one image) or `content.multiImage.images` (2 to 20) must
//!   name `AVAILABLE` images of its author (400 otherwise); the post keeps them.
//! - Comments: `POST /rest/socialActions/{post URN}/comments` with `{actor, object,
//!   message: {text}}` on a post it has answers 201 with the comment in the body
//!   (`$URN` = `urn:li:comment:(<post>,<n>)`) and its URN in `x-restli-id`;
//!   [`State::comment_mode`] acts out lost answers. `GET` of the same path lists the
//!   post's comments (oldest first, `start` and `count`) when the token may read them
//!   ([`State::can_read_comments`], 403 otherwise).

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
    /// Its images' URNs, in order.
    pub images: Vec<String>,
    /// Their alt texts, as sent.
    pub alt_texts: Vec<Option<String>>,
    /// Whether they went as `multiImage` (else `media`, when there are any).
    pub multi_image: bool,
}

/// An image of the Images API.
#[derive(Debug, Clone)]
pub struct Image {
    /// Its URN.
    pub urn: String,
    /// Its owner.
    pub owner: String,
    /// `WAITING_UPLOAD`, `PROCESSING` or `AVAILABLE`.
    pub status: String,
    /// The bytes uploaded.
    pub bytes: Vec<u8>,
    /// Its upload URL has expired.
    pub url_expired: bool,
    reads_left: u32,
}

/// A comment.
#[derive(Debug, Clone)]
pub struct Comment {
    /// Its URN.
    pub urn: String,
    /// The post it is on.
    pub post: String,
    /// Who wrote it.
    pub actor: String,
    /// Its text.
    pub text: String,
    /// When, on the fake clock (milliseconds).
    pub at_ms: i64,
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
    /// Images initialized.
    pub images: Vec<Image>,
    /// Upload URLs expire before their `PUT`.
    pub expire_upload_urls: bool,
    /// An uploaded image reads `PROCESSING` this many times before `AVAILABLE`.
    pub processing_reads: u32,
    /// Comments created.
    pub comments: Vec<Comment>,
    /// How the comment endpoint behaves.
    pub comment_mode: PublishMode,
    /// The token may read comments (`r_member_social` or `r_organization_social`).
    pub can_read_comments: bool,
    // The fake's own address, for upload URLs.
    origin: String,
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
            images: Vec::new(),
            expire_upload_urls: false,
            processing_reads: 0,
            comments: Vec::new(),
            comment_mode: PublishMode::Normal,
            can_read_comments: false,
            origin: String::new(),
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

impl State {
    fn may_author(&self, author: &str) -> bool {
        author == format!("urn:li:person:{}", self.sub)
            || self.organizations.iter().any(|o| o == author)
    }

    /// The comments on post `urn`.
    pub fn comments_on(&self, urn: &str) -> Vec<Comment> {
        self.comments
            .iter()
            .filter(|c| c.post == urn)
            .cloned()
            .collect()
    }
}

/// A path segment's URN, percent-decoded.
fn decoded(segment: &str) -> String {
    url::form_urlencoded::parse(format!("u={segment}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The refusal of a request without the versioned API's headers, if it lacks them.
fn header_problem(request: &Request, state: &State) -> Option<ResponseTemplate> {
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
            return Some(ResponseTemplate::new(426).set_body_json(json!({
                "status": 426,
                "code": "NONEXISTENT_VERSION",
                "message": format!("Requested version {v}01 is not active"),
            })));
        }
        None => {
            return Some(error(
                400,
                None,
                "A version must be present. Please specify a version by adding the LinkedIn-Version header.",
            ));
        }
    }
    if header("x-restli-protocol-version").as_deref() != Some("2.0.0") {
        return Some(error(
            400,
            None,
            "X-Restli-Protocol-Version 2.0.0 is required",
        ));
    }
    None
}

type Shared = Arc<Mutex<State>>;

struct Userinfo(Shared);
struct CreatePost(Shared);
struct ReadPost(Shared);
struct InitializeUpload(Shared);
struct PutImage(Shared);
struct ReadImage(Shared);
struct CreateComment(Shared);
struct ListComments(Shared);

impl Respond for InitializeUpload {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if let Some(problem) =
            token_problem(request, &state).or_else(|| header_problem(request, &state))
        {
            return problem;
        }
        if !request
            .url
            .query_pairs()
            .any(|(k, v)| k == "action" && v == "initializeUpload")
        {
            return error(400, None, "Unknown action");
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let owner = body["initializeUploadRequest"]["owner"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if !state.may_author(&owner) {
            return error(
                403,
                Some(100),
                "Not enough permissions to upload for this owner",
            );
        }
        state.next += 1;
        let n = state.next;
        let urn = format!("urn:li:image:D4E10AQ{n}");
        let origin = state.origin.clone();
        let url_expired = state.expire_upload_urls;
        state.images.push(Image {
            urn: urn.clone(),
            owner,
            status: "WAITING_UPLOAD".into(),
            bytes: Vec::new(),
            url_expired,
            reads_left: 0,
        });
        ResponseTemplate::new(200).set_body_json(json!({"value": {
            "uploadUrlExpiresAt": (state.now + 3600) * 1000,
            "uploadUrl": format!("{origin}/dms-uploads/{n}?ca=vector_feedshare&cn=uploads&sync=0&v=beta"),
            "image": urn,
        }}))
    }
}

impl Respond for PutImage {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if let Some(problem) = token_problem(request, &state) {
            return problem;
        }
        let n = request
            .url
            .path()
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_owned();
        let processing = state.processing_reads;
        let Some(image) = state
            .images
            .iter_mut()
            .find(|i| i.urn.ends_with(&format!("AQ{n}")))
        else {
            return error(404, None, "No upload here");
        };
        if image.url_expired {
            return error(403, None, "The upload URL has expired");
        }
        image.bytes = request.body.clone();
        image.reads_left = processing;
        image.status = if processing > 0 {
            "PROCESSING"
        } else {
            "AVAILABLE"
        }
        .into();
        ResponseTemplate::new(201)
    }
}

impl Respond for ReadImage {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if let Some(problem) =
            token_problem(request, &state).or_else(|| header_problem(request, &state))
        {
            return problem;
        }
        let urn = decoded(request.url.path().trim_start_matches("/rest/images/"));
        let Some(image) = state.images.iter_mut().find(|i| i.urn == urn) else {
            return error(404, None, "Not Found");
        };
        if image.owner.starts_with("urn:li:person:") {
            return error(
                403,
                Some(100),
                "Not enough permissions to access: images.GET.20260901",
            );
        }
        let status = image.status.clone();
        if image.status == "PROCESSING" {
            image.reads_left = image.reads_left.saturating_sub(1);
            if image.reads_left == 0 {
                image.status = "AVAILABLE".into();
            }
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": image.urn, "owner": image.owner, "status": status,
        }))
    }
}

impl Respond for CreateComment {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if let Some(problem) =
            token_problem(request, &state).or_else(|| header_problem(request, &state))
        {
            return problem;
        }
        let segment = request
            .url
            .path()
            .trim_start_matches("/rest/socialActions/")
            .trim_end_matches("/comments");
        let post = decoded(segment);
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return error(400, None, "Malformed JSON");
        };
        let actor = body["actor"].as_str().unwrap_or("").to_owned();
        if !state.may_author(&actor) {
            return error(
                403,
                Some(100),
                "Not enough permissions to comment as this actor",
            );
        }
        if body["object"].as_str() != Some(post.as_str()) {
            return error(400, None, "The object does not match the URN in the path");
        }
        if !state.posts.iter().any(|p| p.urn == post) {
            return error(404, None, "Not Found");
        }
        let text = body["message"]["text"].as_str().unwrap_or("").to_owned();
        if text.trim().is_empty() {
            return error(
                422,
                None,
                "ERROR :: /message/text :: field is required but not found",
            );
        }
        if let PublishMode::StatusWithoutCreating(status) = state.comment_mode {
            return ResponseTemplate::new(status);
        }
        state.next += 1;
        let id = state.next.to_string();
        let urn = format!("urn:li:comment:({post},{id})");
        let at_ms = state.now * 1000 + state.comments.len() as i64;
        state.comments.push(Comment {
            urn: urn.clone(),
            post: post.clone(),
            actor: actor.clone(),
            text: text.clone(),
            at_ms,
        });
        let encoded: String = url::form_urlencoded::byte_serialize(urn.as_bytes()).collect();
        let created = ResponseTemplate::new(201)
            .insert_header("x-restli-id", encoded.as_str())
            .set_body_json(json!({
                "$URN": urn, "id": id, "actor": actor, "object": post,
                "message": {"text": text},
                "created": {"actor": actor, "time": at_ms},
            }));
        state.comment_mode.answer(created, ResponseTemplate::new)
    }
}

impl Respond for ListComments {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let state = self.0.lock().unwrap();
        if let Some(problem) =
            token_problem(request, &state).or_else(|| header_problem(request, &state))
        {
            return problem;
        }
        if !state.can_read_comments {
            return error(
                403,
                Some(100),
                "Not enough permissions to access: socialActions.comments.GET.20260901",
            );
        }
        let segment = request
            .url
            .path()
            .trim_start_matches("/rest/socialActions/")
            .trim_end_matches("/comments");
        let post = decoded(segment);
        let query: std::collections::HashMap<String, String> =
            request.url.query_pairs().into_owned().collect();
        let start: usize = query.get("start").and_then(|s| s.parse().ok()).unwrap_or(0);
        let count: usize = query
            .get("count")
            .and_then(|s| s.parse().ok())
            .unwrap_or(10);
        let all = state.comments_on(&post);
        let elements: Vec<Value> = all
            .iter()
            .skip(start)
            .take(count)
            .map(|c| {
                json!({
                    "$URN": c.urn,
                    "id": c.urn.rsplit(',').next().unwrap_or("").trim_end_matches(')'),
                    "actor": c.actor, "object": c.post,
                    "message": {"text": c.text},
                    "created": {"actor": c.actor, "time": c.at_ms},
                })
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "elements": elements,
            "paging": {"start": start, "count": count, "total": all.len()},
        }))
    }
}

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
        if let Some(problem) = header_problem(request, &state) {
            return problem;
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
        let (images, alt_texts, multi_image) = {
            let content = &body["content"];
            let single = content.get("media").filter(|m| !m.is_null());
            let multi = content["multiImage"]["images"].as_array();
            let items: Vec<&Value> = match (single, multi) {
                (Some(_), Some(_)) => {
                    return error(400, None, "content may hold media or multiImage, not both");
                }
                (Some(one), None) => vec![one],
                (None, Some(several)) => {
                    if !(2..=20).contains(&several.len()) {
                        return error(
                            422,
                            None,
                            "ERROR :: /content/multiImage/images :: a multi-image post takes 2 to 20 images",
                        );
                    }
                    several.iter().collect()
                }
                (None, None) => Vec::new(),
            };
            let mut urns = Vec::new();
            let mut alts = Vec::new();
            for item in items {
                let urn = item["id"].as_str().unwrap_or("").to_owned();
                match state.images.iter().find(|i| i.urn == urn) {
                    Some(image) if image.owner != author => {
                        return error(403, Some(100), "The image belongs to another owner");
                    }
                    Some(image) if image.status == "AVAILABLE" => {}
                    Some(image) => {
                        return error(
                            400,
                            None,
                            &format!("Image {urn} is {}, not AVAILABLE", image.status),
                        );
                    }
                    None => return error(400, None, &format!("Image {urn} does not exist")),
                }
                urns.push(urn);
                alts.push(item["altText"].as_str().map(str::to_owned));
            }
            (urns, alts, multi.is_some())
        };
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
            images,
            alt_texts,
            multi_image,
        });
        let created = ResponseTemplate::new(201).insert_header("x-restli-id", urn.as_str());
        state.publish_mode.answer(created, ResponseTemplate::new)
    }
}

/// A running fake.
pub type LinkedinFake = Fake<State>;

/// How many calls each route must get in a test ([`crate::fake::ANY`]: any number).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// `GET /v2/userinfo`.
    pub userinfo: u64,
    /// `POST /rest/posts` (irreversible).
    pub create: u64,
    /// `GET /rest/posts/{urn}`.
    pub read: u64,
    /// `POST /rest/images?action=initializeUpload`.
    pub image_init: u64,
    /// `PUT` to an upload URL.
    pub image_put: u64,
    /// `GET /rest/images/{urn}`.
    pub image_read: u64,
    /// `POST /rest/socialActions/{urn}/comments` (irreversible).
    pub comment: u64,
    /// `GET /rest/socialActions/{urn}/comments`.
    pub comments_read: u64,
}

impl Expect {
    /// Nothing may be called.
    pub const NONE: Expect = Expect {
        userinfo: 0,
        create: 0,
        read: 0,
        image_init: 0,
        image_put: 0,
        image_read: 0,
        comment: 0,
        comments_read: 0,
    };
}

impl LinkedinFake {
    /// Starts a fake expecting this many `userinfo` and create calls, and no reads.
    pub async fn start(userinfo: u64, create: u64) -> LinkedinFake {
        Self::start_expecting(userinfo, create, 0).await
    }

    /// Starts a fake expecting this many `userinfo`, create and read-back calls.
    pub async fn start_expecting(userinfo: u64, create: u64, read: u64) -> LinkedinFake {
        Self::start_counting(Expect {
            userinfo,
            create,
            read,
            ..Expect::NONE
        })
        .await
    }

    /// Starts a fake expecting these calls.
    pub async fn start_counting(expect: Expect) -> LinkedinFake {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            origin: server.uri(),
            ..State::default()
        }));
        let times = |mock: Mock, n: u64| {
            if n == crate::fake::ANY {
                mock
            } else {
                mock.expect(n)
            }
        };
        times(
            Mock::given(method("GET"))
                .and(path("/v2/userinfo"))
                .respond_with(Userinfo(state.clone()))
                .named("userinfo"),
            expect.userinfo,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("POST"))
                .and(path("/rest/posts"))
                .respond_with(CreatePost(state.clone()))
                .named("create post (irreversible)"),
            expect.create,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("GET"))
                .and(path_regex(r"^/rest/posts/.+$"))
                .respond_with(ReadPost(state.clone()))
                .named("read post"),
            expect.read,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("POST"))
                .and(path("/rest/images"))
                .respond_with(InitializeUpload(state.clone()))
                .named("image initializeUpload"),
            expect.image_init,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("PUT"))
                .and(path_regex(r"^/dms-uploads/\d+$"))
                .respond_with(PutImage(state.clone()))
                .named("image bytes"),
            expect.image_put,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("GET"))
                .and(path_regex(r"^/rest/images/.+$"))
                .respond_with(ReadImage(state.clone()))
                .named("image status"),
            expect.image_read,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("POST"))
                .and(path_regex(r"^/rest/socialActions/[^/]+/comments$"))
                .respond_with(CreateComment(state.clone()))
                .named("create comment (irreversible)"),
            expect.comment,
        )
        .mount(&server)
        .await;
        times(
            Mock::given(method("GET"))
                .and(path_regex(r"^/rest/socialActions/[^/]+/comments$"))
                .respond_with(ListComments(state.clone()))
                .named("list comments"),
            expect.comments_read,
        )
        .mount(&server)
        .await;
        refuse_the_rest(&server, error(404, None, "No route")).await;
        LinkedinFake { server, state }
    }
}
