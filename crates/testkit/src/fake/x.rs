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
//!   429 with `x-rate-limit-*` headers. [`CreateMode`] acts out lost answers.
//! - `GET /2/tweets/{id}` reads a post back.

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
            ("1500000000000000000".to_owned(), state.username.clone())
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
                if text.trim().is_empty() {
                    return problem(
                        400,
                        "Invalid Request",
                        "One or more parameters to your request was invalid.",
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
                let answer = ResponseTemplate::new(201)
                    .set_body_json(json!({"data": {"id": tweet.id, "text": text, "edit_history_tweet_ids": [tweet.id]}}));
                state.tweets.push(tweet);
                state.create_mode.answer(answer, |code| {
                    problem(code, "Service Unavailable", "Service Unavailable")
                })
            }
            Route::Read => {
                let id = request.url.path().rsplit('/').next().unwrap_or("");
                match state.tweets.iter().find(|t| t.id == id) {
                    Some(tweet) => ResponseTemplate::new(200)
                        .set_body_json(json!({"data": {"id": tweet.id, "text": tweet.text}})),
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
    };

    /// Nothing may be called.
    pub const NONE: Expect = Expect {
        refresh: 0,
        identity: 0,
        create: 0,
        read: 0,
    };

    /// A post: the account, the create, the read-back.
    pub const ONE_POST: Expect = Expect {
        refresh: 0,
        identity: 1,
        create: 1,
        read: 1,
    };
}
