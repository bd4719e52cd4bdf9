//! A fake of Meta's Graph API as Threads and Instagram serve it for content publishing
//! (`docs/platforms.md`, "Threads" and "Instagram").
//!
//! - Token check on every call (`Authorization: Bearer` or `access_token`); an expired
//!   token answers the Graph envelope with code 190/463, a wrong one 190/467.
//! - Containers with ids like real ones (17 digits) and the state machine
//!   `IN_PROGRESS → FINISHED → PUBLISHED`, plus `ERROR` (with a message) and `EXPIRED`
//!   (24 h after creation on the fake clock); how many status reads stay `IN_PROGRESS`
//!   is configurable.
//! - Validation of container parameters (Threads: `media_type`, `text` ≤ 500 with emoji
//!   counted by their UTF-8 length, ≤ 5 links; Instagram: JPEG `image_url`, caption
//!   ≤ 2,200 / 30 `#` / 20 `@`).
//! - The publish call refuses a container that is not `FINISHED` — one already
//!   `PUBLISHED` included, so publishing the same container twice makes one post — with
//!   each platform's code; counts publishes in a rolling 24 h window, serves the
//!   publishing-limit endpoint from that counter and refuses beyond `quota_total`.
//! - Permalink reads; a status read on a media id fails like Threads does (code 100).
//! - [`PublishMode`] acts out answers that are lost or late: published then an error
//!   page that echoes the request's `Authorization` header, an error without publishing,
//!   published then an answer slower than the client waits, and a slow backend that only
//!   publishes *after* the client gave up (the container reads `FINISHED` meanwhile).
//! - Video containers (`VIDEO`, Instagram `REELS`) stay `IN_PROGRESS` for
//!   [`State::video_reads`] status reads, then are `FINISHED`, or `ERROR` with
//!   [`State::video_error`].
//! - Carousels: item containers (`is_carousel_item=true`) cannot be published themselves;
//!   a `CAROUSEL` parent refuses fewer than 2 or more than 20 (Threads) / 10 (Instagram)
//!   `children`, and any child that is unknown, not an item, or not `FINISHED`.
//!   Publishing the parent makes one media.
//! - Threads replies: `reply_to_id` must name a published media; a published reply counts
//!   against the reply quota (1,000) instead of the posts'. Lists: the account's threads
//!   (`GET me/threads`), the replies to a media (`GET {media-id}/replies`, with
//!   `is_reply_owned_by_me`), and replies by other accounts ([`State::add_remark`]).
//! - Instagram: the account's media (`GET {user}/media`); comments
//!   (`POST {media-id}/comments?message=`, acted out by [`State::comment_mode`], lost
//!   answers included; `GET {media-id}/comments`), other accounts' comments included.
//!
//! Every endpoint of a single post is its own mock with `.expect(n)`, so an extra call (a
//! second publish above all) fails the test when the server is dropped. The list and
//! comment endpoints take any number of calls (their counts are not in [`Expect`], which
//! other crates build whole); tests assert on [`State::remarks`] and
//! [`State::published`] instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use wiremock::matchers::{method, path_regex, query_param};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub use crate::fake::CreateMode;
use crate::fake::{Fake, refuse_the_rest};
use crate::{CANARY, params};

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
    /// A list of the account's media (`GET me/threads`, `GET {user}/media`).
    List,
    /// `GET {media-id}/replies` (Threads).
    Replies,
    /// `POST {media-id}/comments` (Instagram): irreversible.
    Comment,
    /// `GET {media-id}/comments` (Instagram).
    Comments,
}

/// How the publish endpoint behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishMode {
    /// Publish and answer the media id.
    Normal,
    /// Publish, then answer this status with an error page from a front end that dumps
    /// the request it failed on, `Authorization` header included.
    PublishThenStatus(u16),
    /// Answer this status and publish nothing.
    StatusWithoutPublishing(u16),
    /// Publish, then answer only after this long.
    PublishThenDelay(Duration),
    /// A slow backend: accept the request, and publish (and answer) only after this long,
    /// by which time the client has given up. Until then the container reads `FINISHED`.
    ProcessLate(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContainerState {
    InProgress,
    Finished,
    Published,
    Error,
    Expired,
}

impl ContainerState {
    fn name(self) -> &'static str {
        match self {
            ContainerState::InProgress => "IN_PROGRESS",
            ContainerState::Finished => "FINISHED",
            ContainerState::Published => "PUBLISHED",
            ContainerState::Error => "ERROR",
            ContainerState::Expired => "EXPIRED",
        }
    }

    fn parse(name: &str) -> ContainerState {
        match name {
            "IN_PROGRESS" => ContainerState::InProgress,
            "FINISHED" => ContainerState::Finished,
            "PUBLISHED" => ContainerState::Published,
            "ERROR" => ContainerState::Error,
            _ => ContainerState::Expired,
        }
    }
}

#[derive(Debug, Clone)]
struct Container {
    state: ContainerState,
    reads_left: u32,
    /// Where it goes after its `IN_PROGRESS` reads: `FINISHED`, or `ERROR` with `error`.
    error: Option<String>,
    created_at: i64,
    /// The parameters it was created with.
    params: HashMap<String, String>,
}

impl Container {
    fn is_item(&self) -> bool {
        self.params.get("is_carousel_item").map(String::as_str) == Some("true")
    }

    fn reply_to(&self) -> Option<&str> {
        self.params.get("reply_to_id").map(String::as_str)
    }

    fn children(&self) -> Vec<String> {
        self.params
            .get("children")
            .map(|c| c.split(',').map(|id| id.trim().to_owned()).collect())
            .unwrap_or_default()
    }
}

/// A reply (Threads) or comment (Instagram) on a media: the account's own comments, and
/// other accounts' replies and comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remark {
    /// Its id.
    pub id: String,
    /// The media it is on.
    pub on: String,
    /// Its text.
    pub text: String,
    /// Who wrote it.
    pub username: String,
    /// When (fake clock, Unix seconds).
    pub at: i64,
}

/// What a new container does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewContainers {
    /// Finishes after `State::in_progress_reads` status reads.
    Finish,
    /// Ends in `ERROR` with this message.
    Error(String),
    /// Is already `EXPIRED` when read.
    Expire,
    /// Never leaves `IN_PROGRESS`.
    Hang,
}

/// The fake's state, shared by its responders.
#[derive(Debug)]
pub struct State {
    flavour: Flavour,
    /// The only token it accepts.
    pub token: String,
    /// The account the token belongs to.
    pub username: String,
    /// Every call answers code 190/463.
    pub token_expired: bool,
    /// The token expires when this endpoint is first called, and stays expired.
    pub expire_at: Option<Route>,
    /// Status reads that answer `IN_PROGRESS` before a container is `FINISHED`.
    pub in_progress_reads: u32,
    /// What new containers do.
    pub new_containers: NewContainers,
    /// Status reads that answer `IN_PROGRESS` before a video container is done.
    pub video_reads: u32,
    /// New video containers end in `ERROR` with this message instead of `FINISHED`.
    pub video_error: Option<String>,
    /// How the comment endpoint (Instagram) behaves.
    pub comment_mode: CreateMode,
    /// Replies published in the reply window (Threads), by time.
    pub replies_at: Vec<i64>,
    /// Replies allowed per rolling window (Threads).
    pub reply_quota_total: i64,
    /// How the publish endpoint behaves.
    pub publish_mode: PublishMode,
    /// Publishes allowed per rolling window.
    pub quota_total: i64,
    /// The window, in seconds.
    pub quota_duration: i64,
    /// The fake clock in Unix seconds; `None` follows the real clock.
    pub fake_now: Option<i64>,
    /// Publish times, this fake's and the account's other clients'.
    pub published_at: Vec<i64>,
    next_id: u64,
    containers: HashMap<String, Container>,
    /// Media id → container id, for every post made.
    pub media: HashMap<String, String>,
    media_at: HashMap<String, i64>,
    remarks: Vec<Remark>,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

impl State {
    fn new(flavour: Flavour) -> Self {
        State {
            flavour,
            token: CANARY.to_owned(),
            username: "inn_cats".into(),
            token_expired: false,
            expire_at: None,
            in_progress_reads: 0,
            new_containers: NewContainers::Finish,
            video_reads: 2,
            video_error: None,
            comment_mode: CreateMode::Normal,
            replies_at: Vec::new(),
            reply_quota_total: 1000,
            publish_mode: PublishMode::Normal,
            quota_total: match flavour {
                Flavour::Threads => 250,
                Flavour::Instagram => 100,
            },
            quota_duration: 86_400,
            fake_now: None,
            published_at: Vec::new(),
            next_id: 17_900_000_000_000_000,
            containers: HashMap::new(),
            media: HashMap::new(),
            media_at: HashMap::new(),
            remarks: Vec::new(),
        }
    }

    /// The fake's time.
    pub fn now(&self) -> i64 {
        self.fake_now.unwrap_or_else(unix_now)
    }

    /// Moves the fake clock forward (starting from the real time if it followed it).
    pub fn advance(&mut self, seconds: i64) {
        self.fake_now = Some(self.now() + seconds);
    }

    fn new_id(&mut self) -> String {
        self.next_id += 7;
        self.next_id.to_string()
    }

    /// Publishes inside the rolling window.
    pub fn quota_usage(&self) -> i64 {
        let since = self.now() - self.quota_duration;
        self.published_at.iter().filter(|t| **t > since).count() as i64
    }

    /// Replies inside the rolling window (Threads).
    pub fn reply_quota_usage(&self) -> i64 {
        let since = self.now() - self.quota_duration;
        self.replies_at.iter().filter(|t| **t > since).count() as i64
    }

    /// Uses the whole quota up, as the account's other clients would.
    pub fn fill_quota(&mut self) {
        let now = self.now();
        while self.quota_usage() < self.quota_total {
            self.published_at.push(now);
        }
    }

    /// Posts made through this fake (the account's other clients' not counted).
    pub fn published(&self) -> usize {
        self.media.len()
    }

    /// The media made through this fake, oldest first.
    pub fn media_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.media.keys().cloned().collect();
        ids.sort_by_key(|id| id.parse::<u64>().unwrap_or_default());
        ids
    }

    /// The container a media was published from.
    pub fn media_container(&self, media_id: &str) -> Option<String> {
        self.media.get(media_id).cloned()
    }

    /// The media a published media replies to (Threads `reply_to_id`).
    pub fn replied_to(&self, media_id: &str) -> Option<String> {
        let container = self.media.get(media_id)?;
        self.containers
            .get(container)?
            .reply_to()
            .map(str::to_owned)
    }

    /// A carousel container's children, in order.
    pub fn children(&self, container_id: &str) -> Vec<String> {
        self.containers
            .get(container_id)
            .map(Container::children)
            .unwrap_or_default()
    }

    /// Replies by other accounts and comments (the account's and others'), oldest first.
    pub fn remarks(&self) -> Vec<Remark> {
        self.remarks.clone()
    }

    /// The account's own comments (Instagram).
    pub fn own_comments(&self) -> Vec<Remark> {
        self.remarks
            .iter()
            .filter(|r| r.username == self.username)
            .cloned()
            .collect()
    }

    /// A reply or comment on `media_id` by another account (or by the account, as its
    /// other clients would make it).
    pub fn add_remark(&mut self, media_id: &str, username: &str, text: &str) -> String {
        let id = self.new_id();
        let at = self.now();
        self.remarks.push(Remark {
            id: id.clone(),
            on: media_id.to_owned(),
            text: text.to_owned(),
            username: username.to_owned(),
            at,
        });
        id
    }

    /// The state name of a container, as a status read would give it now.
    pub fn container_state(&self, id: &str) -> Option<&'static str> {
        self.containers.get(id).map(|c| c.state.name())
    }

    /// The parameters a container was created with.
    pub fn container_params(&self, id: &str) -> HashMap<String, String> {
        self.containers
            .get(id)
            .map(|c| c.params.clone())
            .unwrap_or_default()
    }

    /// The ids of every container made, oldest first.
    pub fn containers(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.containers.keys().cloned().collect();
        ids.sort_by_key(|id| id.parse::<u64>().unwrap_or_default());
        ids
    }

    /// Makes a container as if an earlier attempt had (state given by name).
    pub fn add_container(&mut self, state: &str) -> String {
        let id = self.new_id();
        let created_at = self.now();
        self.containers.insert(
            id.clone(),
            Container {
                state: ContainerState::parse(state),
                // An added IN_PROGRESS container stays so.
                reads_left: u32::MAX,
                error: None,
                created_at,
                params: HashMap::new(),
            },
        );
        id
    }

    /// Sets a container's state by name.
    pub fn set_container_state(&mut self, id: &str, state: &str) {
        if let Some(container) = self.containers.get_mut(id) {
            container.state = ContainerState::parse(state);
        }
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
        match token {
            None => {
                return Some(graph_error(
                    400,
                    190,
                    None,
                    "An active access token must be used to query information about the current user.",
                ));
            }
            Some(token) if token != self.token => {
                return Some(graph_error(
                    400,
                    190,
                    Some(467),
                    "Invalid OAuth access token - Cannot parse access token",
                ));
            }
            Some(_) => {}
        }
        if self.expire_at == Some(route) {
            self.token_expired = true;
        }
        self.token_expired.then(|| {
            graph_error(
                400,
                190,
                Some(463),
                "Error validating access token: Session has expired on Thursday, 01-Oct-26 09:00:00 PDT.",
            )
        })
    }

    /// Publishes a `FINISHED` container now: a new media id, counted in the window (a
    /// reply in the replies'); a carousel's items are published with it.
    fn publish_container(&mut self, container_id: &str) -> Option<String> {
        let container = self.containers.get_mut(container_id)?;
        if container.state != ContainerState::Finished || container.is_item() {
            return None;
        }
        container.state = ContainerState::Published;
        let reply = container.reply_to().is_some();
        let children = container.children();
        for child in children {
            if let Some(child) = self.containers.get_mut(&child) {
                child.state = ContainerState::Published;
            }
        }
        let media_id = self.new_id();
        let now = self.now();
        if reply {
            self.replies_at.push(now);
        } else {
            self.published_at.push(now);
        }
        self.media.insert(media_id.clone(), container_id.to_owned());
        self.media_at.insert(media_id.clone(), now);
        Some(media_id)
    }

    /// Publishes a `FINISHED` container now, as a publish call would (without its quota
    /// check): the new media id.
    pub fn publish_now(&mut self, container_id: &str) -> Option<String> {
        self.publish_container(container_id)
    }

    fn permalink(&self, media_id: &str) -> String {
        match self.flavour {
            Flavour::Threads => format!(
                "https://www.threads.com/@{}/post/C{media_id}",
                self.username
            ),
            Flavour::Instagram => format!("https://www.instagram.com/p/C{media_id}/"),
        }
    }

    /// A published media as a list shows it.
    fn listed(&self, media_id: &str) -> serde_json::Value {
        let params = self
            .media
            .get(media_id)
            .and_then(|c| self.containers.get(c))
            .map(|c| c.params.clone())
            .unwrap_or_default();
        let text = params
            .get(match self.flavour {
                Flavour::Threads => "text",
                Flavour::Instagram => "caption",
            })
            .cloned()
            .unwrap_or_default();
        let at = self.media_at.get(media_id).copied().unwrap_or_default();
        let mut entry = json!({
            "id": media_id,
            "timestamp": timestamp(at),
            "permalink": self.permalink(media_id),
            "username": self.username,
        });
        match self.flavour {
            Flavour::Threads => {
                entry["text"] = json!(text);
                entry["is_reply"] = json!(params.contains_key("reply_to_id"));
            }
            Flavour::Instagram => entry["caption"] = json!(text),
        }
        entry
    }
}

/// A Graph error envelope.
pub fn graph_error(
    status: u16,
    code: i64,
    subcode: Option<i64>,
    message: &str,
) -> ResponseTemplate {
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
    segment_from_end(request, 0)
}

/// The path segment `n` places before the last.
fn segment_from_end(request: &Request, n: usize) -> String {
    request
        .url
        .path()
        .rsplit('/')
        .nth(n)
        .unwrap_or("")
        .to_owned()
}

/// Graph's timestamp form, `2026-09-30T08:00:00+0000`.
fn timestamp(unix: i64) -> String {
    chrono::DateTime::from_timestamp(unix, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S+0000")
        .to_string()
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
            Route::Publish => publish(&mut state, &self.0, request),
            Route::MediaRead => media_read(&state, request),
            Route::List => list(&state),
            Route::Replies => replies(&state, request),
            Route::Comment => comment(&mut state, request),
            Route::Comments => comments(&state, request),
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
    let mut entry = json!({
        "quota_usage": state.quota_usage(),
        "config": {"quota_total": state.quota_total, "quota_duration": state.quota_duration},
    });
    if state.flavour == Flavour::Threads {
        entry["reply_quota_usage"] = json!(state.reply_quota_usage());
        entry["reply_config"] = json!({
            "quota_total": state.reply_quota_total,
            "quota_duration": state.quota_duration,
        });
    }
    ResponseTemplate::new(200).set_body_json(json!({ "data": [entry] }))
}

fn count_links(text: &str) -> usize {
    let mut links: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.starts_with("http://") || w.starts_with("https://"))
        .collect();
    links.sort_unstable();
    links.dedup();
    links.len()
}

/// Threads counts emoji by their UTF-8 length; other characters count one.
fn threads_length(text: &str) -> usize {
    text.chars()
        .map(|c| {
            if (c as u32) >= 0x1F000 {
                c.len_utf8()
            } else {
                1
            }
        })
        .sum()
}

/// Whether a URL's path ends in `.jpg`/`.jpeg`.
fn jpeg_url(url: &str) -> bool {
    let lower = url
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    lower.ends_with(".jpg") || lower.ends_with(".jpeg")
}

/// The refusal a container's parameters earn, if any (the carousel's children are
/// checked against the state in [`create`]).
fn validate(flavour: Flavour, params: &HashMap<String, String>) -> Option<ResponseTemplate> {
    let invalid = |message: &str| graph_error(400, 100, None, message);
    let item = params.get("is_carousel_item").map(String::as_str) == Some("true");
    let media_type = params.get("media_type").map(String::as_str);
    if item && params.contains_key("reply_to_id") {
        return Some(invalid(
            "reply_to_id goes on the carousel container, not on its items",
        ));
    }
    match flavour {
        Flavour::Threads => {
            let text = params.get("text").map(String::as_str).unwrap_or("");
            match media_type {
                Some("TEXT") if item => {
                    return Some(invalid("A carousel item must be an IMAGE or a VIDEO"));
                }
                Some("TEXT") if text.is_empty() => {
                    return Some(invalid("Param text is required for TEXT posts"));
                }
                Some("TEXT") => {}
                Some("IMAGE") if !params.contains_key("image_url") => {
                    return Some(invalid("Param image_url is required for IMAGE posts"));
                }
                Some("IMAGE") => {
                    if params.contains_key("link_attachment") {
                        return Some(invalid("link_attachment is only supported on text posts"));
                    }
                }
                Some("VIDEO") if !params.contains_key("video_url") => {
                    return Some(invalid("Param video_url is required for VIDEO posts"));
                }
                Some("VIDEO") => {}
                Some("CAROUSEL") if item => {
                    return Some(invalid("A carousel cannot be an item of a carousel"));
                }
                Some("CAROUSEL") if !params.contains_key("children") => {
                    return Some(invalid("Param children is required for CAROUSEL posts"));
                }
                Some("CAROUSEL") => {}
                _ => {
                    return Some(invalid(
                        "Param media_type must be one of {TEXT, IMAGE, VIDEO, CAROUSEL}",
                    ));
                }
            }
            if threads_length(text) > 500 {
                return Some(invalid("Param text must be at most 500 characters long"));
            }
            if count_links(text) > 5 {
                return Some(graph_error(
                    400,
                    100,
                    Some(4279021),
                    "THREADS_API__LINK_LIMIT_EXCEEDED",
                ));
            }
        }
        Flavour::Instagram => {
            match media_type {
                // Since 2023 a single video is a Reel; VIDEO is left for carousel items.
                Some("VIDEO") if !item => {
                    return Some(graph_error(
                        400,
                        100,
                        Some(2207023),
                        "The VIDEO media type is no longer supported; use REELS",
                    ));
                }
                Some("REELS") if item => {
                    return Some(invalid("A Reel cannot be a carousel item"));
                }
                Some("VIDEO" | "REELS") if !params.contains_key("video_url") => {
                    return Some(invalid("The parameter video_url is required"));
                }
                Some("VIDEO" | "REELS") => {}
                Some("CAROUSEL") if item || !params.contains_key("children") => {
                    return Some(invalid("The parameter children is required"));
                }
                Some("CAROUSEL") => {}
                Some(other) if other != "IMAGE" => {
                    return Some(graph_error(400, 100, Some(2207023), "Unknown media type"));
                }
                _ => {
                    let Some(image_url) = params.get("image_url") else {
                        return Some(invalid("The parameter image_url is required"));
                    };
                    if !jpeg_url(image_url) {
                        return Some(graph_error(
                            400,
                            9004,
                            Some(2207052),
                            "Only photo or video can be accepted as media type.",
                        ));
                    }
                }
            }
            let caption = params.get("caption").map(String::as_str).unwrap_or("");
            let words = |sigil: char| {
                caption
                    .split_whitespace()
                    .filter(|w| w.starts_with(sigil))
                    .count()
            };
            if caption.chars().count() > 2200 || words('#') > 30 || words('@') > 20 {
                return Some(invalid(
                    "The caption is too long or has too many hashtags or mentions",
                ));
            }
        }
    }
    None
}

/// The refusal a carousel's `children` earn: too few or too many, or one that is unknown,
/// not an item, or not `FINISHED`.
fn check_children(state: &mut State, params: &HashMap<String, String>) -> Option<ResponseTemplate> {
    let flavour = state.flavour;
    let refuse = |message: String| match flavour {
        Flavour::Threads => graph_error(400, 100, None, &message),
        Flavour::Instagram => graph_error(400, 100, Some(2207028), &message),
    };
    let limit = match flavour {
        Flavour::Threads => 20,
        Flavour::Instagram => 10,
    };
    let children: Vec<String> = params
        .get("children")
        .map(|c| c.split(',').map(|id| id.trim().to_owned()).collect())
        .unwrap_or_default();
    if children.len() < 2 || children.len() > limit {
        return Some(refuse(format!(
            "A carousel takes 2 to {limit} children; {} given",
            children.len()
        )));
    }
    let now = state.now();
    for child in &children {
        let Some(container) = state.containers.get_mut(child) else {
            return Some(refuse(format!("Carousel child {child} does not exist")));
        };
        expire_if_old(container, now);
        if !container.is_item() {
            return Some(refuse(format!(
                "Carousel child {child} was not created with is_carousel_item=true"
            )));
        }
        if container.state != ContainerState::Finished {
            return Some(refuse(format!(
                "Carousel child {child} is {}, not FINISHED",
                container.state.name()
            )));
        }
    }
    None
}

/// A container unpublished 24 h after it was made expires.
fn expire_if_old(container: &mut Container, now: i64) {
    if matches!(
        container.state,
        ContainerState::InProgress | ContainerState::Finished
    ) && now - container.created_at > 86_400
    {
        container.state = ContainerState::Expired;
    }
}

fn create(state: &mut State, request: &Request) -> ResponseTemplate {
    let params = params(request);
    if params.get("auto_publish_text").map(String::as_str) == Some("true") {
        // airlock must never make container creation irreversible.
        return graph_error(
            400,
            100,
            None,
            "the fake refuses auto_publish_text: airlock must not use it",
        );
    }
    if let Some(refusal) = validate(state.flavour, &params) {
        return refusal;
    }
    if params.get("media_type").map(String::as_str) == Some("CAROUSEL")
        && let Some(refusal) = check_children(state, &params)
    {
        return refusal;
    }
    if let Some(parent) = params.get("reply_to_id")
        && !state.media.contains_key(parent)
    {
        return graph_error(
            400,
            100,
            Some(4279024),
            "Param reply_to_id must be the id of a published media",
        );
    }
    let video = matches!(
        params.get("media_type").map(String::as_str),
        Some("VIDEO" | "REELS")
    );
    let id = state.new_id();
    let (container_state, reads_left, error) = match &state.new_containers {
        NewContainers::Finish if video => (
            ContainerState::InProgress,
            state.video_reads,
            state.video_error.clone(),
        ),
        NewContainers::Finish => (ContainerState::InProgress, state.in_progress_reads, None),
        NewContainers::Error(message) => (ContainerState::Error, 0, Some(message.clone())),
        NewContainers::Expire => (ContainerState::Expired, 0, None),
        NewContainers::Hang => (ContainerState::InProgress, u32::MAX, None),
    };
    let created_at = state.now();
    state.containers.insert(
        id.clone(),
        Container {
            state: container_state,
            reads_left,
            error,
            created_at,
            params,
        },
    );
    ResponseTemplate::new(200).set_body_json(json!({ "id": id }))
}

fn status(state: &mut State, request: &Request) -> ResponseTemplate {
    let id = last_segment(request);
    let now = state.now();
    let flavour = state.flavour;
    let Some(container) = state.containers.get_mut(&id) else {
        // A media id (or anything else) has no status field.
        return graph_error(
            400,
            100,
            None,
            "Tried accessing nonexisting field (status) on node type (ThreadsMedia)",
        );
    };
    if container.state == ContainerState::InProgress {
        if container.reads_left == 0 {
            container.state = match container.error {
                Some(_) => ContainerState::Error,
                None => ContainerState::Finished,
            };
        } else if container.reads_left != u32::MAX {
            container.reads_left -= 1;
        }
    }
    expire_if_old(container, now);
    let error_message = container.error.clone().unwrap_or_else(|| "UNKNOWN".into());
    let name = container.state.name();
    let body = match flavour {
        Flavour::Threads => {
            let mut body = json!({ "id": id, "status": name });
            if container.state == ContainerState::Error {
                body["error_message"] = json!(error_message);
            }
            body
        }
        Flavour::Instagram => {
            let detail = match container.state {
                ContainerState::Error => format!("Error: {error_message} (2207003)"),
                ContainerState::InProgress => "In Progress: Media is still being processed.".into(),
                _ => name.to_owned(),
            };
            json!({ "id": id, "status_code": name, "status": detail })
        }
    };
    ResponseTemplate::new(200).set_body_json(body)
}

fn publish(state: &mut State, shared: &Shared, request: &Request) -> ResponseTemplate {
    let mode = state.publish_mode;
    if let PublishMode::StatusWithoutPublishing(status) = mode {
        let answer = ResponseTemplate::new(status).set_body_string("upstream failure");
        return if status == 429 {
            answer.insert_header("retry-after", "120")
        } else {
            answer
        };
    }
    let flavour = state.flavour;
    let Some(container_id) = params(request).get("creation_id").cloned() else {
        return graph_error(400, 100, None, "The parameter creation_id is required");
    };
    let not_ready = || match flavour {
        Flavour::Threads => graph_error(
            400,
            24,
            Some(4279009),
            "The requested resource does not exist",
        ),
        Flavour::Instagram => graph_error(400, 9007, Some(2207027), "Media ID is not available"),
    };
    let now = state.now();
    let (container_state, item, reply) = match state.containers.get_mut(&container_id) {
        Some(container) => {
            if container.state == ContainerState::Finished && now - container.created_at > 86_400 {
                container.state = ContainerState::Expired;
            }
            (
                container.state,
                container.is_item(),
                container.reply_to().is_some(),
            )
        }
        None => return not_ready(),
    };
    match container_state {
        // A carousel's item is published only with its carousel.
        ContainerState::Finished if item => return not_ready(),
        ContainerState::Finished => {}
        ContainerState::Expired if flavour == Flavour::Instagram => {
            return graph_error(400, -2, Some(2207020), "The media container has expired");
        }
        // Not ready, expired, failed, or already published: one container makes one post.
        _ => return not_ready(),
    }
    let exhausted = if reply {
        state.reply_quota_usage() >= state.reply_quota_total
    } else {
        state.quota_usage() >= state.quota_total
    };
    if exhausted {
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
    if let PublishMode::ProcessLate(delay) = mode {
        // The backend takes the request and acts on it after the client has given up.
        let shared = shared.clone();
        let late = container_id.clone();
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            shared.lock().unwrap().publish_container(&late);
        });
        return ResponseTemplate::new(200)
            .set_body_json(json!({ "id": "answer-never-read" }))
            .set_delay(delay + Duration::from_millis(200));
    }
    let media_id = state
        .publish_container(&container_id)
        .expect("the container was checked FINISHED under the same lock");
    let answer = ResponseTemplate::new(200).set_body_json(json!({ "id": media_id }));
    match mode {
        PublishMode::PublishThenStatus(status) => {
            ResponseTemplate::new(status).set_body_string(error_page(status, request))
        }
        PublishMode::PublishThenDelay(delay) => answer.set_delay(delay),
        _ => answer,
    }
}

/// An error page from a front end that dumps the request it failed on, as debug pages of
/// some proxies do: the `Authorization` header comes back in the body.
pub fn error_page(status: u16, request: &Request) -> String {
    let authorization = request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    format!(
        "<html><body><h1>{status} Internal Server Error</h1><pre>The request was:\nauthorization: {authorization}\nuser-agent: ...</pre></body></html>"
    )
}

fn no_object() -> ResponseTemplate {
    graph_error(
        400,
        100,
        Some(33),
        "Unsupported get request. Object does not exist or cannot be loaded",
    )
}

fn media_read(state: &State, request: &Request) -> ResponseTemplate {
    let id = last_segment(request);
    if !state.media.contains_key(&id) {
        return no_object();
    }
    ResponseTemplate::new(200).set_body_json(json!({ "id": id, "permalink": state.permalink(&id) }))
}

/// The account's media, newest first: Threads lists its top-level threads (not replies),
/// Instagram all its media.
fn list(state: &State) -> ResponseTemplate {
    let mut ids = state.media_ids();
    ids.reverse();
    let data: Vec<serde_json::Value> = ids
        .iter()
        .filter(|id| state.flavour == Flavour::Instagram || state.replied_to(id).is_none())
        .map(|id| state.listed(id))
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({ "data": data }))
}

/// The top-level replies to a media, newest first: the account's own (published through
/// this fake) and other accounts'.
fn replies(state: &State, request: &Request) -> ResponseTemplate {
    let on = segment_from_end(request, 1);
    if !state.media.contains_key(&on) {
        return no_object();
    }
    let mut entries: Vec<(i64, serde_json::Value)> = state
        .media_ids()
        .iter()
        .filter(|id| state.replied_to(id).as_deref() == Some(on.as_str()))
        .map(|id| {
            let mut entry = state.listed(id);
            entry["is_reply_owned_by_me"] = json!(true);
            (state.media_at.get(id).copied().unwrap_or_default(), entry)
        })
        .collect();
    entries.extend(state.remarks.iter().filter(|r| r.on == on).map(|r| {
        (
            r.at,
            json!({
                "id": r.id,
                "text": r.text,
                "username": r.username,
                "timestamp": timestamp(r.at),
                "is_reply": true,
                "is_reply_owned_by_me": r.username == state.username,
            }),
        )
    }));
    entries.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let data: Vec<serde_json::Value> = entries.into_iter().map(|(_, e)| e).collect();
    ResponseTemplate::new(200).set_body_json(json!({ "data": data }))
}

/// `POST {media-id}/comments?message=`: a comment by the account, acted out by
/// [`State::comment_mode`].
fn comment(state: &mut State, request: &Request) -> ResponseTemplate {
    let on = segment_from_end(request, 1);
    if !state.media.contains_key(&on) {
        return no_object();
    }
    let Some(message) = params(request).get("message").cloned() else {
        return graph_error(400, 100, None, "The parameter message is required");
    };
    if message.trim().is_empty() || message.chars().count() > 2200 {
        return graph_error(400, 100, None, "The comment is empty or too long");
    }
    let mode = state.comment_mode;
    if let CreateMode::StatusWithoutCreating(status) = mode {
        return ResponseTemplate::new(status).set_body_string("upstream failure");
    }
    let username = state.username.clone();
    let id = state.add_remark(&on, &username, &message);
    let created = ResponseTemplate::new(200).set_body_json(json!({ "id": id }));
    mode.answer(created, |status| {
        ResponseTemplate::new(status).set_body_string(error_page(status, request))
    })
}

/// `GET {media-id}/comments`: every comment on the media, newest first.
fn comments(state: &State, request: &Request) -> ResponseTemplate {
    let on = segment_from_end(request, 1);
    if !state.media.contains_key(&on) {
        return no_object();
    }
    let mut remarks: Vec<&Remark> = state.remarks.iter().filter(|r| r.on == on).collect();
    remarks.sort_by_key(|r| std::cmp::Reverse(r.at));
    let data: Vec<serde_json::Value> = remarks
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "text": r.text,
                "username": r.username,
                "timestamp": timestamp(r.at),
            })
        })
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({ "data": data }))
}

/// How many calls each endpoint must get in a test.
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

/// A count in [`Expect`] that allows any number of calls.
pub use crate::fake::ANY;

impl Expect {
    /// Any number of calls to every endpoint (for drills, which assert on the fake's
    /// state instead).
    pub const ANY: Expect = Expect {
        identity: ANY,
        limit: ANY,
        create: ANY,
        status_at_least: ANY,
        publish: ANY,
        media_read: ANY,
    };

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
    /// one permalink read (with `in_progress_reads = 1`).
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
pub type GraphFake = Fake<State>;

impl GraphFake {
    /// Starts a fake with the default state (token [`CANARY`]).
    pub async fn start(flavour: Flavour, expect: Expect) -> GraphFake {
        Self::start_with(flavour, expect, |_| {}).await
    }

    /// Starts a fake whose state `configure` adjusts before any call.
    pub async fn start_with(
        flavour: Flavour,
        expect: Expect,
        configure: impl FnOnce(&mut State),
    ) -> GraphFake {
        let server = MockServer::start().await;
        let mut state = State::new(flavour);
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
        let list_path = format!(r"^/{v}/{user}/{create}$");
        let identity = match flavour {
            Flavour::Threads => r"^/v1\.0/me$".to_owned(),
            Flavour::Instagram => format!(r"^/{v}/(me|{IG_USER_ID})$"),
        };
        let endpoint = |route| Endpoint(self.state.clone(), route);
        let identity = Mock::given(method("GET"))
            .and(path_regex(identity))
            .and(wiremock::matchers::query_param_contains(
                "fields", "username",
            ))
            .respond_with(endpoint(Route::Identity))
            .named("identity");
        super::expect(identity, expect.identity)
            .mount(&self.server)
            .await;
        let limit = Mock::given(method("GET"))
            .and(path_regex(format!(r"^/{v}/{user}/{limit}$")))
            .respond_with(endpoint(Route::Limit))
            .named("publishing limit");
        super::expect(limit, expect.limit).mount(&self.server).await;
        let create = Mock::given(method("POST"))
            .and(path_regex(format!(r"^/{v}/{user}/{create}$")))
            .respond_with(endpoint(Route::Create))
            .named("container creation");
        super::expect(create, expect.create)
            .mount(&self.server)
            .await;
        let status = Mock::given(method("GET"))
            .and(path_regex(format!(r"^/{v}/\d+$")))
            .and(query_param("fields", status_fields))
            .respond_with(endpoint(Route::Status))
            .named("container status");
        let status = match expect.status_at_least {
            0 => status.expect(0),
            ANY => status.expect(0..),
            n => status.expect(n..),
        };
        status.mount(&self.server).await;
        let publish = Mock::given(method("POST"))
            .and(path_regex(format!(r"^/{v}/{user}/{publish}$")))
            .respond_with(endpoint(Route::Publish))
            .named("publish (irreversible)");
        super::expect(publish, expect.publish)
            .mount(&self.server)
            .await;
        let media_read = Mock::given(method("GET"))
            .and(path_regex(format!(r"^/{v}/\d+$")))
            .and(query_param("fields", "id,permalink"))
            .respond_with(endpoint(Route::MediaRead))
            .named("media read");
        super::expect(media_read, expect.media_read)
            .mount(&self.server)
            .await;
        // Reads and comments, any number of times (see the module's doc).
        let mut more = vec![(Route::List, "GET", list_path, "media list")];
        match flavour {
            Flavour::Threads => more.push((
                Route::Replies,
                "GET",
                format!(r"^/{v}/\d+/replies$"),
                "replies",
            )),
            Flavour::Instagram => {
                more.push((
                    Route::Comment,
                    "POST",
                    format!(r"^/{v}/\d+/comments$"),
                    "comment (irreversible)",
                ));
                more.push((
                    Route::Comments,
                    "GET",
                    format!(r"^/{v}/\d+/comments$"),
                    "comments",
                ));
            }
        }
        for (route, verb, path, name) in more {
            Mock::given(method(verb))
                .and(path_regex(path))
                .respond_with(endpoint(route))
                .named(name)
                .expect(0..)
                .mount(&self.server)
                .await;
        }
        // Anything else is a bug in the adapter: answer like Graph does for unknown paths.
        let unexpected = graph_error(400, 100, None, "Unknown path components");
        refuse_the_rest(&self.server, unexpected).await;
    }
}
