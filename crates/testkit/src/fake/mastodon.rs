//! A fake of a Mastodon instance, per docs/platforms.md#mastodon.
//!
//! - Bearer check: a wrong or revoked token answers 401 `{"error": "The access token is
//!   invalid"}`.
//! - `verify_credentials` names the account; `/api/v2/instance` its configurable
//!   `max_characters` and `characters_reserved_per_url`.
//! - `POST /api/v1/statuses` keeps every `Idempotency-Key` per account (the key space is
//!   `<account>:<key>`, as the server stores it: the same key sent with another
//!   account's token makes a new status on that account) for one hour on
//!   the fake's clock ([`State::now`], settable) and answers a repeat inside it with the
//!   status it made the first time, without looking at the body (as the server does);
//!   an empty or over-long status answers 422; past [`State::requests_left`] it answers
//!   429 with `X-RateLimit-*` headers. [`CreateMode`] acts out lost answers: the status is
//!   made (and its key kept) and the answer is a 5xx or comes too late.
//!   Like the server, it looks the key up before it creates the status and stores it only
//!   once the status is made: with [`State::key_stored_after`], two requests with one key
//!   in that window make two statuses.
//! - `POST /api/v2/media` takes a multipart file with its description; with
//!   [`State::media_processing`] it answers 202 and the media is ready on the next read;
//!   [`State::upload_delay`] makes each upload answer late (slow media).
//! - `GET /api/v1/statuses/{id}` reads a status back.
//! - Threads: `in_reply_to_id` makes a status a reply (an id it does not hold answers 404
//!   `Record not found`, as the server does); `GET /api/v1/statuses/{id}/context` answers
//!   its `ancestors` and `descendants` (each status with its `in_reply_to_id` and
//!   `account`, `content` as HTML), and `GET /api/v1/statuses/{id}/source` the plain
//!   text a status was made with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::CANARY;
use crate::fake::{ANY, Fake, Platform, mount_routes, spend};

/// The account's `acct`.
pub const ACCT: &str = "inn_cats";

/// How `POST /api/v1/statuses` behaves (`CreateThen…` makes the status and keeps its
/// key).
pub use crate::fake::CreateMode;

/// A running fake instance.
pub type MastodonFake = Fake<State>;

/// A status.
#[derive(Debug, Clone)]
pub struct Status {
    /// Its id.
    pub id: String,
    /// The account that made it (the token's account when it was made).
    pub acct: String,
    /// Its text as sent.
    pub text: String,
    /// Its visibility.
    pub visibility: String,
    /// Its media ids.
    pub media_ids: Vec<String>,
    /// The status it replies to.
    pub in_reply_to_id: Option<String>,
}

/// An uploaded media attachment.
#[derive(Debug, Clone)]
pub struct MediaAttachment {
    /// Its id.
    pub id: String,
    /// Its description (alt text).
    pub description: String,
    /// Its size in bytes.
    pub size: usize,
    /// Whether it is ready.
    pub ready: bool,
}

/// The fake's state.
#[derive(Debug)]
pub struct State {
    /// The token it accepts.
    pub token: String,
    /// The token was revoked.
    pub token_revoked: bool,
    /// The account's `acct`: the account the token belongs to now (set another to act out
    /// an operator who wrote another account's token into the token file).
    pub acct: String,
    /// The instance's `max_characters`.
    pub max_characters: usize,
    /// How the create endpoint behaves.
    pub create_mode: CreateMode,
    /// Requests left before 429 (`None`: no limit).
    pub requests_left: Option<u32>,
    /// New media answers 202 until read once.
    pub media_processing: bool,
    /// The fake's clock: `None` follows the real one.
    pub now: Option<DateTime<Utc>>,
    /// The statuses, in the order made.
    pub statuses: Vec<Status>,
    /// The media.
    pub media: Vec<MediaAttachment>,
    /// Each media upload answers this much later (real time).
    pub upload_delay: Option<std::time::Duration>,
    /// A status's key is stored this long (real time) after the request that made it
    /// arrived: a request with the same key meanwhile does not find it.
    pub key_stored_after: Option<std::time::Duration>,
    keys: HashMap<String, (String, DateTime<Utc>, std::time::Instant)>,
    next: u64,
}

impl Default for State {
    fn default() -> Self {
        State {
            token: CANARY.into(),
            token_revoked: false,
            acct: ACCT.into(),
            max_characters: 500,
            create_mode: CreateMode::Normal,
            requests_left: None,
            media_processing: false,
            now: None,
            statuses: Vec::new(),
            media: Vec::new(),
            upload_delay: None,
            key_stored_after: None,
            keys: HashMap::new(),
            next: 109_876_543_210_000_000,
        }
    }
}

impl State {
    fn clock(&self) -> DateTime<Utc> {
        self.now.unwrap_or_else(Utc::now)
    }

    /// Moves the fake's clock (starting it at the real time if it followed that).
    pub fn advance(&mut self, by: chrono::Duration) {
        self.now = Some(self.clock() + by);
    }

    /// The statuses made.
    pub fn posts(&self) -> usize {
        self.statuses.len()
    }

    /// Whether the instance still keeps `key` for the token's account (and has stored it).
    pub fn keeps_key(&self, key: &str) -> bool {
        self.keys
            .get(&self.scoped(key))
            .is_some_and(|(_, at, made)| {
                *at + chrono::Duration::hours(1) > self.clock()
                    && self
                        .key_stored_after
                        .is_none_or(|after| made.elapsed() >= after)
            })
    }

    /// The key as the server stores it: scoped to the token's account.
    fn scoped(&self, key: &str) -> String {
        format!("{}:{key}", self.acct)
    }

    /// The statuses the account `acct` made.
    pub fn posts_of(&self, acct: &str) -> usize {
        self.statuses.iter().filter(|s| s.acct == acct).count()
    }

    /// The status `id`, if any.
    pub fn status(&self, id: &str) -> Option<&Status> {
        self.statuses.iter().find(|s| s.id == id)
    }

    /// The statuses made by replies from `id` on, in the order made (every depth).
    fn descendants(&self, id: &str) -> Vec<&Status> {
        let mut below = vec![id.to_owned()];
        let mut found = Vec::new();
        for status in &self.statuses {
            if status
                .in_reply_to_id
                .as_ref()
                .is_some_and(|parent| below.contains(parent))
            {
                below.push(status.id.clone());
                found.push(status);
            }
        }
        found
    }

    fn status_json(&self, base: &str, status: &Status) -> Value {
        let in_reply_to_account = status
            .in_reply_to_id
            .as_deref()
            .and_then(|id| self.status(id))
            .map(|parent| account_id(&parent.acct));
        json!({
            "id": status.id,
            "in_reply_to_id": status.in_reply_to_id,
            "in_reply_to_account_id": in_reply_to_account,
            "created_at": "2026-12-01T00:00:00.000Z",
            "uri": format!("{base}/users/{}/statuses/{}", status.acct, status.id),
            "url": format!("{base}/@{}/{}", status.acct, status.id),
            "content": format!("<p>{}</p>", status.text),
            "visibility": status.visibility,
            "media_attachments": status.media_ids.iter().map(|id| json!({"id": id})).collect::<Vec<_>>(),
            "account": {"id": account_id(&status.acct), "username": status.acct, "acct": status.acct},
        })
    }
}

/// The account id of `acct` (the default account's is 14715).
fn account_id(acct: &str) -> String {
    if acct == ACCT {
        "14715".into()
    } else {
        format!("9{}", acct.len())
    }
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({ "error": message }))
}

/// The instance's length count: characters, each URL as 23.
fn length(text: &str) -> usize {
    text.split_inclusive(char::is_whitespace)
        .map(|word| {
            let bare = word.trim_end();
            if bare.starts_with("http://") || bare.starts_with("https://") {
                23 + (word.chars().count() - bare.chars().count())
            } else {
                word.chars().count()
            }
        })
        .sum()
}

/// The routes the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Identity,
    Instance,
    Upload,
    MediaRead,
    Create,
    Read,
    Context,
    Source,
}

impl Route {
    const ALL: [Route; 8] = [
        Route::Identity,
        Route::Instance,
        Route::Upload,
        Route::MediaRead,
        Route::Create,
        Route::Read,
        Route::Context,
        Route::Source,
    ];

    /// Whether `request` is this route's.
    fn serves(self, request: &Request) -> bool {
        let path = request.url.path();
        let get = request.method.as_str() == "GET";
        let status_id = |suffix: &str| {
            path.strip_prefix("/api/v1/statuses/")
                .and_then(|rest| rest.strip_suffix(suffix))
                .is_some_and(|id| !id.is_empty() && !id.contains('/'))
        };
        match self {
            Route::Identity => get && path == "/api/v1/accounts/verify_credentials",
            Route::Instance => get && path == "/api/v2/instance",
            Route::Upload => request.method.as_str() == "POST" && path == "/api/v2/media",
            Route::MediaRead => get && path.starts_with("/api/v1/media/"),
            Route::Create => request.method.as_str() == "POST" && path == "/api/v1/statuses",
            Route::Read => get && status_id(""),
            Route::Context => get && status_id("/context"),
            Route::Source => get && status_id("/source"),
        }
    }
}

/// The status id in a `/api/v1/statuses/{id}[/...]` path.
fn status_id_of(request: &Request) -> String {
    request
        .url
        .path()
        .strip_prefix("/api/v1/statuses/")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("")
        .to_owned()
}

type Shared = Arc<Mutex<State>>;

struct Instance(Shared, Route, String);

impl Respond for Instance {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        let base = &self.2;
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if bearer != Some(state.token.as_str()) || state.token_revoked {
            return error(401, "The access token is invalid");
        }
        if !spend(&mut state.requests_left) {
            let reset = (state.clock() + chrono::Duration::minutes(5))
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            return error(429, "Too many requests")
                .insert_header("x-ratelimit-limit", "300")
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", reset.as_str());
        }
        match self.1 {
            Route::Identity => ResponseTemplate::new(200).set_body_json(json!({
                "id": account_id(&state.acct), "username": state.acct, "acct": state.acct,
                "display_name": "Inn Cats", "url": format!("{base}/@{}", state.acct),
            })),
            Route::Instance => ResponseTemplate::new(200).set_body_json(json!({
                "domain": "cats.example",
                "configuration": {"statuses": {
                    "max_characters": state.max_characters,
                    "max_media_attachments": 4,
                    "characters_reserved_per_url": 23,
                }},
            })),
            Route::Upload => {
                let body = String::from_utf8_lossy(&request.body);
                let description = body
                    .split("name=\"description\"\r\n\r\n")
                    .nth(1)
                    .and_then(|rest| rest.split("\r\n--").next())
                    .unwrap_or("")
                    .to_owned();
                if !body.contains("name=\"file\"") {
                    return error(422, "Validation failed: File can't be blank");
                }
                state.next += 1;
                let id = state.next.to_string();
                let ready = !state.media_processing;
                state.media.push(MediaAttachment {
                    id: id.clone(),
                    description: description.clone(),
                    size: request.body.len(),
                    ready,
                });
                let url = ready.then(|| format!("{base}/media/{id}.jpg"));
                let answer =
                    ResponseTemplate::new(if ready { 200 } else { 202 }).set_body_json(json!({
                        "id": id, "type": "image", "url": url, "description": description,
                    }));
                match state.upload_delay {
                    Some(delay) => answer.set_delay(delay),
                    None => answer,
                }
            }
            Route::MediaRead => {
                let id = request
                    .url
                    .path()
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_owned();
                match state.media.iter_mut().find(|m| m.id == id) {
                    // Processing ends by the next read.
                    Some(media) => {
                        media.ready = true;
                        ResponseTemplate::new(200).set_body_json(
                            json!({"id": id, "type": "image", "url": format!("{base}/media/{id}.jpg")}),
                        )
                    }
                    None => error(404, "Record not found"),
                }
            }
            Route::Create => {
                let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                let key = request
                    .headers
                    .get("idempotency-key")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                // The key is looked up first, and the body is not compared.
                if let Some(key) = &key
                    && state.keeps_key(key)
                {
                    let id = state.keys[&state.scoped(key)].0.clone();
                    let status = state.statuses.iter().find(|s| s.id == id).cloned();
                    if let Some(status) = status {
                        return ResponseTemplate::new(200)
                            .set_body_json(state.status_json(base, &status));
                    }
                }
                let text = body["status"].as_str().unwrap_or("").to_owned();
                let media_ids: Vec<String> = body["media_ids"]
                    .as_array()
                    .map(|ids| {
                        ids.iter()
                            .filter_map(|i| i.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                if text.trim().is_empty() && media_ids.is_empty() {
                    return error(422, "Validation failed: Text can't be blank");
                }
                let in_reply_to_id = match &body["in_reply_to_id"] {
                    Value::String(id) => Some(id.clone()),
                    Value::Number(id) => Some(id.to_string()),
                    _ => None,
                };
                if let Some(parent) = &in_reply_to_id
                    && state.status(parent).is_none()
                {
                    return error(404, "Record not found");
                }
                if length(&text) > state.max_characters {
                    return error(
                        422,
                        &format!(
                            "Validation failed: Text character limit of {} exceeded",
                            state.max_characters
                        ),
                    );
                }
                if let CreateMode::StatusWithoutCreating(code) = state.create_mode {
                    return ResponseTemplate::new(code)
                        .set_body_string("<html>502 Bad Gateway</html>");
                }
                state.next += 1;
                let status = Status {
                    id: state.next.to_string(),
                    acct: state.acct.clone(),
                    text,
                    visibility: body["visibility"].as_str().unwrap_or("public").to_owned(),
                    media_ids,
                    in_reply_to_id,
                };
                if let Some(key) = key {
                    let now = state.clock();
                    let scoped = state.scoped(&key);
                    // A later status with the key (made while it was not stored yet) does
                    // not replace the first while that one is kept.
                    let kept = state
                        .keys
                        .get(&scoped)
                        .is_some_and(|(_, at, _)| *at + chrono::Duration::hours(1) > now);
                    if !kept {
                        state
                            .keys
                            .insert(scoped, (status.id.clone(), now, std::time::Instant::now()));
                    }
                }
                let answer =
                    ResponseTemplate::new(200).set_body_json(state.status_json(base, &status));
                state.statuses.push(status);
                state.create_mode.answer(answer, |code| {
                    ResponseTemplate::new(code).set_body_string("<html>502 Bad Gateway</html>")
                })
            }
            Route::Read => match state.status(&status_id_of(request)) {
                Some(status) => {
                    ResponseTemplate::new(200).set_body_json(state.status_json(base, status))
                }
                None => error(404, "Record not found"),
            },
            Route::Context => {
                let id = status_id_of(request);
                let Some(status) = state.status(&id) else {
                    return error(404, "Record not found");
                };
                let mut ancestors = Vec::new();
                let mut up = status.in_reply_to_id.clone();
                while let Some(parent) = up.as_deref().and_then(|id| state.status(id)) {
                    ancestors.insert(0, state.status_json(base, parent));
                    up = parent.in_reply_to_id.clone();
                }
                let descendants: Vec<Value> = state
                    .descendants(&id)
                    .into_iter()
                    .map(|s| state.status_json(base, s))
                    .collect();
                ResponseTemplate::new(200).set_body_json(json!({
                    "ancestors": ancestors, "descendants": descendants,
                }))
            }
            Route::Source => match state.status(&status_id_of(request)) {
                // Only the author reads a status's source.
                Some(status) if status.acct == state.acct => ResponseTemplate::new(200)
                    .set_body_json(json!({
                        "id": status.id, "text": status.text, "spoiler_text": "",
                    })),
                _ => error(404, "Record not found"),
            },
        }
    }
}

/// How many calls each route must get in a test ([`ANY`]: any number).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// `verify_credentials`.
    pub identity: u64,
    /// `/api/v2/instance`.
    pub instance: u64,
    /// `POST /api/v2/media`.
    pub upload: u64,
    /// `GET /api/v1/media/{id}`.
    pub media_read: u64,
    /// `POST /api/v1/statuses` (irreversible without a kept key).
    pub create: u64,
    /// `GET /api/v1/statuses/{id}`.
    pub read: u64,
    /// `GET /api/v1/statuses/{id}/context`.
    pub context: u64,
    /// `GET /api/v1/statuses/{id}/source`.
    pub source: u64,
}

impl Expect {
    /// Any number of calls to every route.
    pub const ANY: Expect = Expect {
        identity: ANY,
        instance: ANY,
        upload: ANY,
        media_read: ANY,
        create: ANY,
        read: ANY,
        context: ANY,
        source: ANY,
    };

    /// Nothing may be called.
    pub const NONE: Expect = Expect {
        identity: 0,
        instance: 0,
        upload: 0,
        media_read: 0,
        create: 0,
        read: 0,
        context: 0,
        source: 0,
    };

    /// A text post: account, instance, create, read-back.
    pub const ONE_POST: Expect = Expect {
        identity: 1,
        instance: 1,
        upload: 0,
        media_read: 0,
        create: 1,
        read: 1,
        context: 0,
        source: 0,
    };
}

impl Expect {
    fn times(&self, route: Route) -> u64 {
        match route {
            Route::Identity => self.identity,
            Route::Instance => self.instance,
            Route::Upload => self.upload,
            Route::MediaRead => self.media_read,
            Route::Create => self.create,
            Route::Read => self.read,
            Route::Context => self.context,
            Route::Source => self.source,
        }
    }
}

impl Platform for State {
    type Expect = Expect;

    async fn mount(fake: &MastodonFake, expect: Expect) {
        let routes = Route::ALL.map(|route| {
            (
                format!("{route:?}"),
                move |request: &Request| route.serves(request),
                Instance(fake.state.clone(), route, fake.uri()),
                expect.times(route),
            )
        });
        mount_routes(&fake.server, routes, error(404, "Record not found")).await;
    }
}
