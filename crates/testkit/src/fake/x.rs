//! A fake of X's API v2 with OAuth 2.0 user tokens.
//!
//! - Bearer check: an unknown token answers 401; [`State::expire_token_at`] expires the
//!   access token when a route is first called (401 from then on, as X answers an
//!   expired token).
//! - `POST /2/oauth2/token` with `grant_type=refresh_token` renews the pair and rotates
//!   the refresh token: the old one is refused from then on (400 `invalid_request`).
//! - `GET /2/users/me` names the account; [`State::other_accounts`] holds tokens of other
//!   accounts it also accepts (a post made with one is that account's).
//! - `POST /2/tweets` answers 201 `{"data": {"id", "text"}}`; the same text as a post it
//!   already has answers 403 "duplicate content", naming no post; a spent budget answers
//!   429 with `x-rate-limit-*` headers. [`CreateMode`] acts out lost answers (the post
//!   kept, the answer a 5xx or too late). `reply.in_reply_to_tweet_id` must name a post
//!   it has (403 "deleted or not visible" otherwise); `media.media_ids` (at most 4) must
//!   name uploads that have not expired (400 "Your media IDs are invalid."). Each post
//!   keeps the post it replies to, its conversation (the root's id) and its media ids
//!   ([`State::attached`]).
//! - `POST /2/media/upload` takes a multipart `media` file (at most 5 MB) with
//!   `media_category=tweet_image` and answers `{"data": {"id", "media_key", "size",
//!   "expires_after_secs"}}`; [`State::fail_uploads_after`] fails an upload halfway
//!   through a part's images, and [`State::expire_media`] expires every upload so far.
//! - `GET /2/tweets/{id}` reads a post back, and `GET /2/users/{id}/tweets` reads an
//!   account's timeline, newest first, after `since_id`, at most `max_results` (5 to 100)
//!   a page, with `referenced_tweets`, `conversation_id` and `entities` when
//!   `tweet.fields` asks for them. Both show text as X does: `&`, `<`, `>` as HTML
//!   entities, each link as a `t.co` link listed in `entities.urls`, and a `t.co` link
//!   (with a `media_key`) appended for a post with images.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::CANARY;
use crate::fake::{ANY, Fake, Platform, spend};

/// The account's username.
pub const USERNAME: &str = "inn_cats";
/// The app's OAuth 2.0 client id.
pub const CLIENT_ID: &str = "aW5uLWNhdHMtYXBw";

/// How `POST /2/tweets` behaves.
pub use crate::fake::CreateMode;

/// A running fake.
pub type XFake = Fake<State>;

/// The routes the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /2/oauth2/token`.
    Token,
    /// `GET /2/users/me`.
    Identity,
    /// `POST /2/tweets`.
    Create,
    /// `GET /2/tweets/{id}`.
    Read,
    /// `POST /2/media/upload`.
    Upload,
    /// `GET /2/users/{id}/tweets`.
    Timeline,
}

/// The id of the account the fake's own token belongs to.
pub const USER_ID: &str = "1500000000000000000";

/// What a post carries beyond its text (a post a test puts in [`State::tweets`] without
/// an entry here is a post of its own, replying to none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attached {
    /// The post it replies to.
    pub in_reply_to: Option<String>,
    /// Its conversation: the id of the post its reply chain starts at.
    pub conversation_id: String,
    /// The media ids attached to it.
    pub media_ids: Vec<String>,
}

/// An upload.
#[derive(Debug, Clone)]
pub struct Upload {
    /// Its media id.
    pub id: String,
    /// The bytes uploaded.
    pub bytes: Vec<u8>,
    /// Its `media_category`.
    pub category: String,
    /// It has expired: a post naming it is refused.
    pub expired: bool,
}

/// A post.
#[derive(Debug, Clone)]
pub struct Tweet {
    /// Its id.
    pub id: String,
    /// The username of the account that made it.
    pub author: String,
    /// Its text.
    pub text: String,
}

/// The fake's state.
#[derive(Debug)]
pub struct State {
    /// The access token it accepts now.
    pub access_token: String,
    /// The refresh token it accepts now, if any.
    pub refresh_token: Option<String>,
    /// The account's username.
    pub username: String,
    /// Access tokens of other accounts it accepts, with their usernames (an operator who
    /// writes another account's token into the token file).
    pub other_accounts: Vec<(String, String)>,
    /// The access token expires when this route is first called.
    pub expire_token_at: Option<Route>,
    /// How the create endpoint behaves.
    pub create_mode: CreateMode,
    /// Posts left before 429 (`None`: no limit).
    pub posts_left: Option<u32>,
    /// The posts.
    pub tweets: Vec<Tweet>,
    /// Refreshes granted.
    pub refreshes: u32,
    /// Per post id: what it replies to and its media.
    pub attached: HashMap<String, Attached>,
    /// Uploaded media.
    pub uploads: Vec<Upload>,
    /// After this many more uploads succeed, each further one answers this status.
    pub fail_uploads_after: Option<(u32, u16)>,
    // The first access token: the tokens it hands out on refresh carry its text.
    issued_prefix: String,
    expired_once: bool,
    next: u64,
}

impl Default for State {
    fn default() -> Self {
        State {
            access_token: CANARY.into(),
            refresh_token: None,
            username: USERNAME.into(),
            other_accounts: Vec::new(),
            expire_token_at: None,
            create_mode: CreateMode::Normal,
            posts_left: None,
            tweets: Vec::new(),
            refreshes: 0,
            attached: HashMap::new(),
            uploads: Vec::new(),
            fail_uploads_after: None,
            issued_prefix: String::new(),
            expired_once: false,
            next: 1_866_000_000_000_000_000,
        }
    }
}

impl State {
    /// Posts made.
    pub fn posts(&self) -> usize {
        self.tweets.len()
    }

    /// What post `id` replies to.
    pub fn reply_to(&self, id: &str) -> Option<String> {
        self.attached.get(id).and_then(|a| a.in_reply_to.clone())
    }

    /// The media ids on post `id`.
    pub fn media_of(&self, id: &str) -> Vec<String> {
        self.attached
            .get(id)
            .map(|a| a.media_ids.clone())
            .unwrap_or_default()
    }

    /// Every upload so far expires, as X's do about a day after they are made.
    pub fn expire_media(&mut self) {
        for upload in &mut self.uploads {
            upload.expired = true;
        }
    }

    fn conversation(&self, id: &str) -> String {
        self.attached
            .get(id)
            .map(|a| a.conversation_id.clone())
            .unwrap_or_else(|| id.to_owned())
    }

    /// A post as X's reads show it, with the fields `fields` (`tweet.fields`) asks for.
    fn shown(&self, tweet: &Tweet, fields: &str) -> Value {
        let wants = |field: &str| fields.split(',').any(|f| f.trim() == field);
        let media = self.media_of(&tweet.id);
        let (text, urls) = render(&tweet.text, &tweet.id, !media.is_empty());
        let mut value = json!({"id": tweet.id, "text": text, "edit_history_tweet_ids": [tweet.id]});
        if wants("entities") && !urls.is_empty() {
            value["entities"] = json!({"urls": urls});
        }
        if wants("conversation_id") {
            value["conversation_id"] = json!(self.conversation(&tweet.id));
        }
        if wants("referenced_tweets")
            && let Some(parent) = self.reply_to(&tweet.id)
        {
            value["referenced_tweets"] = json!([{"type": "replied_to", "id": parent}]);
        }
        if wants("author_id") {
            value["author_id"] = json!(self.user_id_of(&tweet.author));
        }
        value
    }

    fn user_id_of(&self, username: &str) -> String {
        if username == self.username {
            USER_ID.to_owned()
        } else {
            format!("17{:017}", username.len())
        }
    }
}

/// Text as X shows it: `&`, `<`, `>` as entities, each `http(s)://` link as a `t.co`
/// link, and for a post with media a `t.co` link to it appended; with the `entities.urls`
/// that say what each stands for.
fn render(text: &str, id: &str, has_media: bool) -> (String, Vec<Value>) {
    let mut shown = String::new();
    let mut urls = Vec::new();
    let mut rest = text;
    let mut n = 0;
    let mut chars = 0;
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    loop {
        let next = ["https://", "http://"]
            .iter()
            .filter_map(|scheme| rest.find(scheme))
            .min();
        let Some(at) = next else {
            let tail = escape(rest);
            shown.push_str(&tail);
            chars += tail.chars().count();
            break;
        };
        let before = escape(&rest[..at]);
        chars += before.chars().count();
        shown.push_str(&before);
        let link_len = rest[at..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - at);
        let link = &rest[at..at + link_len];
        n += 1;
        let short = format!("https://t.co/{id}l{n}");
        urls.push(json!({
            "start": chars, "end": chars + short.chars().count(),
            "url": short, "expanded_url": link,
            "display_url": link.trim_start_matches("https://").trim_start_matches("http://"),
        }));
        chars += short.chars().count();
        shown.push_str(&short);
        rest = &rest[at + link_len..];
    }
    if has_media {
        let short = format!("https://t.co/{id}m");
        shown.push(' ');
        chars += 1;
        urls.push(json!({
            "start": chars, "end": chars + short.chars().count(),
            "url": short,
            "expanded_url": format!("https://x.com/{USERNAME}/status/{id}/photo/1"),
            "display_url": "pic.x.com/photo",
            "media_key": format!("3_{id}"),
        }));
        shown.push_str(&short);
    }
    (shown, urls)
}

/// The parts of a `multipart/form-data` body: each part's name and bytes.
fn multipart_parts(request: &Request) -> Vec<(String, Vec<u8>)> {
    let boundary = request
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("boundary=").nth(1))
        .map(|b| b.trim_matches('"').to_owned());
    let Some(boundary) = boundary else {
        return Vec::new();
    };
    let delimiter = format!("--{boundary}");
    let body = &request.body;
    let find = |from: usize, needle: &[u8]| {
        body.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    let mut parts = Vec::new();
    let mut at = match find(0, delimiter.as_bytes()) {
        Some(at) => at + delimiter.len(),
        None => return parts,
    };
    while body.get(at..at + 2) == Some(&b"\r\n"[..]) {
        let Some(head_end) = find(at, b"\r\n\r\n") else {
            break;
        };
        let head = String::from_utf8_lossy(&body[at + 2..head_end]).into_owned();
        let content_start = head_end + 4;
        let Some(next) = find(content_start, format!("\r\n{delimiter}").as_bytes()) else {
            break;
        };
        let name = head
            .split("name=\"")
            .nth(1)
            .and_then(|n| n.split('"').next())
            .unwrap_or("")
            .to_owned();
        parts.push((name, body[content_start..next].to_vec()));
        at = next + 2 + delimiter.len();
    }
    parts
}

/// X's 400 naming the parameter it refused.
fn invalid(parameter: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({
        "errors": [{"parameters": {parameter: []}, "message": message}],
        "title": "Invalid Request",
        "detail": "One or more parameters to your request was invalid.",
        "type": "https://api.twitter.com/2/problems/invalid-request",
    }))
}

fn problem(status: u16, title: &str, detail: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "title": title, "detail": detail, "type": "about:blank", "status": status,
    }))
}

type Shared = Arc<Mutex<State>>;

struct Api(Shared, Route);

impl Respond for Api {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        if self.1 == Route::Token {
            let form: std::collections::HashMap<String, String> =
                url::form_urlencoded::parse(&request.body)
                    .into_owned()
                    .collect();
            let valid = form.get("grant_type").map(String::as_str) == Some("refresh_token")
                && form.get("client_id").map(String::as_str) == Some(CLIENT_ID)
                && state.refresh_token.is_some()
                && form.get("refresh_token") == state.refresh_token.as_ref();
            if !valid {
                return ResponseTemplate::new(400).set_body_json(json!({
                    "error": "invalid_request",
                    "error_description": "Value passed for the token was invalid.",
                }));
            }
            // New tokens carry the first one's text, so a leak of them is found too.
            state.refreshes += 1;
            let n = state.refreshes;
            state.access_token = format!("{}-access-{n}", state.issued_prefix);
            state.refresh_token = Some(format!("{}-refresh-{n}", state.issued_prefix));
            state.expired_once = true;
            return ResponseTemplate::new(200).set_body_json(json!({
                "token_type": "bearer",
                "expires_in": 7200,
                "access_token": state.access_token,
                "refresh_token": state.refresh_token,
                "scope": "tweet.read tweet.write users.read offline.access",
            }));
        }
        if state.expire_token_at == Some(self.1) && !state.expired_once {
            state.expired_once = true;
            state.access_token = format!("{}-expired", state.access_token);
        }
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let (user_id, username) = if bearer == Some(state.access_token.as_str()) {
            (USER_ID.to_owned(), state.username.clone())
        } else if let Some((_, name)) = state
            .other_accounts
            .iter()
            .find(|(token, _)| Some(token.as_str()) == bearer)
        {
            (format!("17{:017}", name.len()), name.clone())
        } else {
            return problem(401, "Unauthorized", "Unauthorized");
        };
        match self.1 {
            Route::Token => unreachable!("answered above"),
            Route::Identity => ResponseTemplate::new(200).set_body_json(json!({
                "data": {"id": user_id, "name": "Inn Cats", "username": username},
            })),
            Route::Create => {
                if !spend(&mut state.posts_left) {
                    let reset = chrono::Utc::now().timestamp() + 900;
                    return problem(429, "Too Many Requests", "Too Many Requests")
                        .insert_header("x-rate-limit-limit", "100")
                        .insert_header("x-rate-limit-remaining", "0")
                        .insert_header("x-rate-limit-reset", reset.to_string().as_str());
                }
                if let CreateMode::StatusWithoutCreating(code) = state.create_mode {
                    return problem(code, "Service Unavailable", "Service Unavailable");
                }
                let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                let text = body["text"].as_str().unwrap_or("").to_owned();
                let media_ids: Vec<String> = body["media"]["media_ids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|id| id.as_str().unwrap_or("").to_owned())
                    .collect();
                if text.trim().is_empty() && media_ids.is_empty() {
                    return problem(
                        400,
                        "Invalid Request",
                        "One or more parameters to your request was invalid.",
                    );
                }
                if media_ids.len() > 4 {
                    return invalid("media.media_ids", "Your media IDs are invalid.");
                }
                if media_ids.iter().any(|id| {
                    !state
                        .uploads
                        .iter()
                        .any(|u| &u.id == id && !u.expired && u.category == "tweet_image")
                }) {
                    return invalid("media.media_ids", "Your media IDs are invalid.");
                }
                let parent = body["reply"]["in_reply_to_tweet_id"]
                    .as_str()
                    .map(str::to_owned);
                if let Some(parent) = &parent
                    && !state.tweets.iter().any(|t| &t.id == parent)
                {
                    return problem(
                        403,
                        "Forbidden",
                        "You attempted to reply to a Tweet that is deleted or not visible to you.",
                    );
                }
                if state.tweets.iter().any(|t| t.text == text) {
                    return problem(
                        403,
                        "Forbidden",
                        "You are not allowed to create a Tweet with duplicate content.",
                    );
                }
                state.next += 1;
                let tweet = Tweet {
                    id: state.next.to_string(),
                    text: text.clone(),
                    author: username,
                };
                let conversation_id = match &parent {
                    Some(parent) => state.conversation(parent),
                    None => tweet.id.clone(),
                };
                state.attached.insert(
                    tweet.id.clone(),
                    Attached {
                        in_reply_to: parent,
                        conversation_id,
                        media_ids,
                    },
                );
                let answer = ResponseTemplate::new(201)
                    .set_body_json(json!({"data": {"id": tweet.id, "text": text, "edit_history_tweet_ids": [tweet.id]}}));
                state.tweets.push(tweet);
                state.create_mode.answer(answer, |code| {
                    problem(code, "Service Unavailable", "Service Unavailable")
                })
            }
            Route::Upload => {
                if let Some((left, status)) = &mut state.fail_uploads_after {
                    if *left == 0 {
                        let status = *status;
                        return problem(status, "Service Unavailable", "Service Unavailable");
                    }
                    *left -= 1;
                }
                let parts = multipart_parts(request);
                let field = |name: &str| {
                    parts
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, bytes)| bytes.clone())
                };
                let Some(bytes) = field("media").filter(|b| !b.is_empty()) else {
                    return invalid("media", "The media field is required.");
                };
                let category = field("media_category")
                    .map(|c| String::from_utf8_lossy(&c).into_owned())
                    .unwrap_or_else(|| "tweet_image".into());
                if !matches!(
                    category.as_str(),
                    "tweet_image" | "tweet_gif" | "tweet_video" | "dm_image"
                ) {
                    return invalid("media_category", "The media_category is invalid.");
                }
                if bytes.len() > 5 * 1024 * 1024 {
                    return invalid("media", "File size exceeds 5242880 bytes.");
                }
                state.next += 1;
                let id = state.next.to_string();
                let size = bytes.len();
                state.uploads.push(Upload {
                    id: id.clone(),
                    bytes,
                    category,
                    expired: false,
                });
                ResponseTemplate::new(200).set_body_json(json!({"data": {
                    "id": id, "media_key": format!("3_{id}"), "size": size,
                    "expires_after_secs": 86_400,
                    "image": {"image_type": "image/jpeg", "w": 1, "h": 1},
                }}))
            }
            Route::Timeline => {
                let user = request
                    .url
                    .path()
                    .trim_start_matches("/2/users/")
                    .trim_end_matches("/tweets")
                    .to_owned();
                let query: HashMap<String, String> =
                    request.url.query_pairs().into_owned().collect();
                let max = match query.get("max_results").map(|m| m.parse::<usize>()) {
                    None => 10,
                    Some(Ok(n)) if (5..=100).contains(&n) => n,
                    Some(_) => {
                        return invalid(
                            "max_results",
                            "The `max_results` query parameter value is not between 5 and 100",
                        );
                    }
                };
                let since: u64 = query
                    .get("since_id")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let fields = query.get("tweet.fields").cloned().unwrap_or_default();
                let mut mine: Vec<&Tweet> = state
                    .tweets
                    .iter()
                    .filter(|t| state.user_id_of(&t.author) == user)
                    .filter(|t| t.id.parse::<u64>().is_ok_and(|id| id > since))
                    .collect();
                mine.sort_by_key(|t| std::cmp::Reverse(t.id.parse::<u64>().unwrap_or(0)));
                let more = mine.len() > max;
                let data: Vec<Value> = mine
                    .iter()
                    .take(max)
                    .map(|t| state.shown(t, &fields))
                    .collect();
                let mut meta = json!({"result_count": data.len()});
                if let (Some(first), Some(last)) = (data.first(), data.last()) {
                    meta["newest_id"] = first["id"].clone();
                    meta["oldest_id"] = last["id"].clone();
                }
                if more {
                    meta["next_token"] = json!("7140dibdnow9c7btw4");
                }
                let mut answer = json!({"meta": meta});
                if !data.is_empty() {
                    answer["data"] = json!(data);
                }
                ResponseTemplate::new(200).set_body_json(answer)
            }
            Route::Read => {
                let id = request.url.path().rsplit('/').next().unwrap_or("");
                let fields = request
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "tweet.fields")
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                match state.tweets.iter().find(|t| t.id == id) {
                    Some(tweet) => ResponseTemplate::new(200)
                        .set_body_json(json!({"data": state.shown(tweet, &fields)})),
                    None => problem(404, "Not Found Error", "Could not find tweet"),
                }
            }
        }
    }
}

/// How many calls each route must get in a test ([`ANY`]: any number).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// `POST /2/oauth2/token`.
    pub refresh: u64,
    /// `GET /2/users/me`.
    pub identity: u64,
    /// `POST /2/tweets` (irreversible).
    pub create: u64,
    /// `GET /2/tweets/{id}`.
    pub read: u64,
    /// `POST /2/media/upload`.
    pub upload: u64,
    /// `GET /2/users/{id}/tweets`.
    pub timeline: u64,
}

impl Platform for State {
    type Expect = Expect;

    async fn mount(fake: &XFake, expect: Expect) {
        fake.with(|state| state.issued_prefix = state.access_token.clone());
        let routes = [
            (Route::Token, "POST", "/2/oauth2/token", expect.refresh),
            (Route::Identity, "GET", "/2/users/me", expect.identity),
            (Route::Create, "POST", "/2/tweets", expect.create),
            (Route::Read, "GET", "/2/tweets/*", expect.read),
            (Route::Upload, "POST", "/2/media/upload", expect.upload),
            // After the identity route, which `/2/users/me` matches first.
            (Route::Timeline, "GET", "/2/users/*", expect.timeline),
        ];
        let unexpected = problem(404, "Not Found Error", "Not Found");
        let respond = |route| Api(fake.state.clone(), route);
        fake.mount_table(routes, respond, unexpected).await;
    }
}

impl Expect {
    /// Any number of calls to every route.
    pub const ANY: Expect = Expect {
        refresh: ANY,
        identity: ANY,
        create: ANY,
        read: ANY,
        upload: ANY,
        timeline: ANY,
    };

    /// Nothing may be called.
    pub const NONE: Expect = Expect {
        refresh: 0,
        identity: 0,
        create: 0,
        read: 0,
        upload: 0,
        timeline: 0,
    };

    /// A post: the account, the create, the read-back.
    pub const ONE_POST: Expect = Expect {
        refresh: 0,
        identity: 1,
        create: 1,
        read: 1,
        upload: 0,
        timeline: 0,
    };
}
