//! Fakes of the notification platforms, behaving as docs/platforms.md (Slack, Discord)
//! says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// A Slack incoming webhook: `ok`/200, plain-text error codes, a token bucket that
/// answers 429 + `Retry-After` when empty, and a record of received payloads.
#[derive(Clone)]
pub struct SlackFake {
    state: Arc<Mutex<SlackState>>,
}

struct SlackState {
    capacity: f64,
    per_second: f64,
    tokens: f64,
    refilled_at: Instant,
    removed: bool,
    echo_path: bool,
    received: Vec<Value>,
}

impl SlackFake {
    /// About one message per second, as Slack documents.
    pub fn new() -> Self {
        Self::with_bucket(2.0, 1.0)
    }

    /// A bucket of `capacity` messages refilled at `per_second`.
    pub fn with_bucket(capacity: f64, per_second: f64) -> Self {
        SlackFake {
            state: Arc::new(Mutex::new(SlackState {
                capacity,
                per_second,
                tokens: capacity,
                refilled_at: Instant::now(),
                removed: false,
                echo_path: false,
                received: Vec::new(),
            })),
        }
    }

    /// The webhook was removed or disabled: every post gets 404 `no_service`.
    pub fn remove(&self) {
        self.state.lock().unwrap().removed = true;
    }

    /// Error bodies quote the request path (the secret part of the URL), the worst
    /// case for redaction.
    pub fn echo_path_in_errors(&self) {
        self.state.lock().unwrap().echo_path = true;
    }

    /// Time passes at the fake: the bucket is full again.
    pub fn refill(&self) {
        let mut state = self.state.lock().unwrap();
        state.tokens = state.capacity;
        state.refilled_at = Instant::now();
    }

    /// Payloads of the messages it accepted.
    pub fn received(&self) -> Vec<Value> {
        self.state.lock().unwrap().received.clone()
    }
}

impl Respond for SlackFake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.state.lock().unwrap();
        let text_error = |status: u16, code: &str| {
            ResponseTemplate::new(status)
                .insert_header("content-type", "text/plain")
                .set_body_string(code.to_owned())
        };
        if state.removed {
            return if state.echo_path {
                text_error(404, &format!("no_service for {}", request.url.path()))
            } else {
                text_error(404, "no_service")
            };
        }
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return text_error(400, "invalid_payload");
        };
        match body.get("text").and_then(Value::as_str) {
            Some(text) if !text.trim().is_empty() => {}
            _ => return text_error(400, "no_text"),
        }
        let elapsed = state.refilled_at.elapsed().as_secs_f64();
        state.tokens = (state.tokens + elapsed * state.per_second).min(state.capacity);
        state.refilled_at = Instant::now();
        if state.tokens < 1.0 {
            let wait = ((1.0 - state.tokens) / state.per_second).ceil().max(1.0);
            return text_error(429, "rate_limited").insert_header("retry-after", format!("{wait}"));
        }
        state.tokens -= 1.0;
        state.received.push(body);
        text_error(200, "ok")
    }
}

/// The Discord create-message endpoint: `Bot` auth, known channels, content and
/// nonce limits, `enforce_nonce` per (author, nonce) within a window returning the
/// original message, rate-limit headers, 429 body, and the error shapes
/// 10003/50006/50035 and 401.
#[derive(Clone)]
pub struct DiscordFake {
    state: Arc<Mutex<DiscordState>>,
}

struct DiscordState {
    token: String,
    channels: Vec<String>,
    nonce_window: StdDuration,
    nonces: HashMap<(String, String), (Instant, Value)>,
    created: Vec<Value>,
    next_id: u64,
    lose_answers: u32,
    answer_delay: StdDuration,
    rate_limit_next: Option<f64>,
    echo_auth: bool,
}

impl DiscordFake {
    pub fn new(token: &str, channels: &[&str]) -> Self {
        DiscordFake {
            state: Arc::new(Mutex::new(DiscordState {
                token: token.to_owned(),
                channels: channels.iter().map(|c| (*c).to_owned()).collect(),
                nonce_window: StdDuration::from_secs(300),
                nonces: HashMap::new(),
                created: Vec::new(),
                next_id: 1_300_000_000_000_000_000,
                lose_answers: 0,
                answer_delay: StdDuration::ZERO,
                rate_limit_next: None,
                echo_auth: false,
            })),
        }
    }

    /// The next `n` answers arrive after `delay` (the message is created at once).
    pub fn lose_answers(&self, n: u32, delay: StdDuration) {
        let mut state = self.state.lock().unwrap();
        state.lose_answers = n;
        state.answer_delay = delay;
    }

    /// The next request is rate limited for `seconds`.
    pub fn rate_limit_next(&self, seconds: f64) {
        self.state.lock().unwrap().rate_limit_next = Some(seconds);
    }

    /// A 401 quotes the Authorization header it got, the worst case for redaction.
    pub fn echo_auth_in_errors(&self) {
        self.state.lock().unwrap().echo_auth = true;
    }

    /// Messages it created.
    pub fn created(&self) -> Vec<Value> {
        self.state.lock().unwrap().created.clone()
    }
}

fn discord_error(status: u16, code: i64, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"message": message, "code": code}))
}

fn invalid_form(field: &str, code: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({
        "message": "Invalid Form Body",
        "code": 50035,
        "errors": { field: { "_errors": [{ "code": code, "message": message }] } },
    }))
}

impl Respond for DiscordFake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.state.lock().unwrap();
        let auth = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if auth != format!("Bot {}", state.token) {
            let message = if state.echo_auth {
                format!("401: Unauthorized ({auth})")
            } else {
                "401: Unauthorized".to_owned()
            };
            return discord_error(401, 0, &message);
        }
        if let Some(seconds) = state.rate_limit_next.take() {
            return ResponseTemplate::new(429)
                .insert_header("retry-after", format!("{}", seconds.ceil()))
                .insert_header("x-ratelimit-scope", "user")
                .insert_header("x-ratelimit-global", "false")
                .set_body_json(json!({
                    "message": "You are being rate limited.",
                    "retry_after": seconds,
                    "global": false,
                }));
        }
        let channel_id = request
            .url
            .path()
            .trim_start_matches("/channels/")
            .trim_end_matches("/messages")
            .to_owned();
        if !state.channels.contains(&channel_id) {
            return discord_error(404, 10003, "Unknown Channel");
        }
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return invalid_form("_root", "BASE_TYPE_INVALID", "Invalid JSON");
        };
        let content = body.get("content").and_then(Value::as_str).unwrap_or("");
        if content.is_empty() {
            return discord_error(400, 50006, "Cannot send an empty message");
        }
        if content.chars().count() > 2000 {
            return invalid_form(
                "content",
                "BASE_TYPE_MAX_LENGTH",
                "Must be 2000 or fewer in length.",
            );
        }
        let nonce = match body.get("nonce") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        if nonce.as_ref().is_some_and(|n| n.chars().count() > 25) {
            return invalid_form(
                "nonce",
                "BASE_TYPE_MAX_LENGTH",
                "Must be 25 or fewer in length.",
            );
        }
        let enforce = body.get("enforce_nonce").and_then(Value::as_bool) == Some(true);
        let key = nonce.clone().map(|n| (state.token.clone(), n));
        let window = state.nonce_window;
        let existing = match (&key, enforce) {
            (Some(key), true) => state
                .nonces
                .get(key)
                .filter(|(at, _)| at.elapsed() < window)
                .map(|(_, message)| message.clone()),
            _ => None,
        };
        let message = match existing {
            Some(message) => message,
            None => {
                state.next_id += 1;
                let message = json!({
                    "id": state.next_id.to_string(),
                    "channel_id": channel_id,
                    "author": {"id": "1000", "username": "airlock-bot", "bot": true},
                    "content": content,
                    "timestamp": "2026-06-01T09:00:00.000000+00:00",
                    "nonce": nonce,
                });
                state.created.push(message.clone());
                if let Some(key) = key {
                    state.nonces.insert(key, (Instant::now(), message.clone()));
                }
                message
            }
        };
        let mut template = ResponseTemplate::new(200)
            .insert_header("x-ratelimit-limit", "5")
            .insert_header("x-ratelimit-remaining", "4")
            .insert_header("x-ratelimit-reset-after", "1.0")
            .insert_header("x-ratelimit-bucket", "fake-bucket")
            .set_body_json(message);
        if state.lose_answers > 0 {
            state.lose_answers -= 1;
            template = template.set_delay(state.answer_delay);
        }
        template
    }
}
