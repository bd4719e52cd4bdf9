//! A fake of the Telegram Bot API, per docs/platforms.md#telegram.
//!
//! - The token is in the path (`/bot<token>/<method>`): the fake's own token is served,
//!   another well-formed one (`<digits>:<secret>`) answers 401 "Unauthorized", a path
//!   without a token 404 "Not Found", as the Bot API does.
//! - `getMe` names the bot.
//! - `sendMessage` posts to a chat the bot is a member of ([`State::chats`], by id or
//!   `@username`); another chat answers 400 "chat not found", a group upgraded to a
//!   supergroup 400 with `parameters.migrate_to_chat_id`, a chat the bot was removed from
//!   403; an empty or over-long text 400. Past [`State::messages_left`] it answers 429
//!   with the wait only in `parameters.retry_after` (flood control). [`CreateMode`] acts
//!   out lost answers: the message is sent, then the answer is a 5xx (an HTML page, as
//!   Telegram's front end answers) or comes too late.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::CANARY;
use crate::fake::{ANY, Fake, Platform, mount_routes, spend};

/// The bot's username.
pub const BOT_USERNAME: &str = "inn_cats_bot";
/// The channel the bot posts to.
pub const CHAT_ID: i64 = -1001234567890;
/// That channel's public username.
pub const CHAT_USERNAME: &str = "inn_cats";
/// The longest text `sendMessage` takes.
pub const MAX_TEXT: usize = 4096;

/// The fake's bot token: well-formed, with the canary in its secret part.
pub fn token() -> String {
    format!("7000000001:{CANARY}")
}

/// How `sendMessage` behaves.
pub use crate::fake::CreateMode;

/// A running fake.
pub type TelegramFake = Fake<State>;

/// The routes the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /bot<token>/getMe`.
    GetMe,
    /// `POST /bot<token>/sendMessage`.
    SendMessage,
}

/// A chat the bot knows.
#[derive(Debug, Clone)]
pub struct Chat {
    /// Its id.
    pub id: i64,
    /// Its public username (without `@`), if any.
    pub username: Option<String>,
    /// Whether the bot may post there (a member, not removed).
    pub member: bool,
    /// The supergroup a group was upgraded to: the old id is refused, naming it.
    pub migrated_to: Option<i64>,
}

/// A message sent.
#[derive(Debug, Clone)]
pub struct Message {
    /// Its chat.
    pub chat_id: i64,
    /// Its id in the chat.
    pub message_id: i64,
    /// Its text.
    pub text: String,
}

/// The fake's state.
#[derive(Debug)]
pub struct State {
    /// The token it accepts.
    pub token: String,
    /// The bot's username.
    pub bot_username: String,
    /// The chats the bot knows.
    pub chats: Vec<Chat>,
    /// How `sendMessage` behaves.
    pub create_mode: CreateMode,
    /// Messages left before flood control answers 429 (`None`: no limit).
    pub messages_left: Option<u32>,
    /// The `retry_after` of a 429, in seconds.
    pub retry_after: u32,
    /// The messages sent.
    pub messages: Vec<Message>,
}

impl Default for State {
    fn default() -> Self {
        State {
            token: token(),
            bot_username: BOT_USERNAME.into(),
            chats: vec![Chat {
                id: CHAT_ID,
                username: Some(CHAT_USERNAME.into()),
                member: true,
                migrated_to: None,
            }],
            create_mode: CreateMode::Normal,
            messages_left: None,
            retry_after: 35,
            messages: Vec::new(),
        }
    }
}

impl State {
    /// Messages sent.
    pub fn posts(&self) -> usize {
        self.messages.len()
    }

    fn chat(&self, chat_id: &Value) -> Option<&Chat> {
        let wanted = match chat_id {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return None,
        };
        self.chats.iter().find(|chat| {
            wanted == chat.id.to_string()
                || chat
                    .username
                    .as_ref()
                    .is_some_and(|name| wanted == format!("@{name}"))
        })
    }
}

/// The Bot API's error envelope.
fn error(status: u16, description: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "ok": false, "error_code": status, "description": description,
    }))
}

/// What Telegram's front end answers when the Bot API behind it fails.
fn front_end_error(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "text/html")
        .set_body_string(format!(
            "<html><head><title>{status} Bad Gateway</title></head><body><center><h1>{status} Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
        ))
}

/// The token in a request's path, if it carries one that looks like a token.
fn path_token(request: &Request) -> Option<&str> {
    let rest = request.url.path().strip_prefix("/bot")?;
    let (token, _method) = rest.rsplit_once('/')?;
    let (bot, secret) = token.split_once(':')?;
    (!bot.is_empty() && bot.bytes().all(|b| b.is_ascii_digit()) && !secret.is_empty())
        .then_some(token)
}

type Shared = Arc<Mutex<State>>;

struct Api(Shared, Route);

impl Respond for Api {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.0.lock().unwrap();
        match path_token(request) {
            None => return error(404, "Not Found"),
            Some(token) if token != state.token => return error(401, "Unauthorized"),
            Some(_) => {}
        }
        match self.1 {
            Route::GetMe => ResponseTemplate::new(200).set_body_json(json!({
                "ok": true,
                "result": {
                    "id": 7000000001_i64, "is_bot": true, "first_name": "Inn Cats",
                    "username": state.bot_username, "can_join_groups": true,
                },
            })),
            Route::SendMessage => {
                let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                let Some(chat) = state.chat(&body["chat_id"]).cloned() else {
                    return error(400, "Bad Request: chat not found");
                };
                if let Some(to) = chat.migrated_to {
                    return ResponseTemplate::new(400).set_body_json(json!({
                        "ok": false, "error_code": 400,
                        "description": "Bad Request: group chat was upgraded to a supergroup chat",
                        "parameters": {"migrate_to_chat_id": to},
                    }));
                }
                if !chat.member {
                    return error(403, "Forbidden: bot is not a member of the channel chat");
                }
                if !spend(&mut state.messages_left) {
                    let wait = state.retry_after;
                    return ResponseTemplate::new(429).set_body_json(json!({
                        "ok": false, "error_code": 429,
                        "description": format!("Too Many Requests: retry after {wait}"),
                        "parameters": {"retry_after": wait},
                    }));
                }
                if let CreateMode::StatusWithoutCreating(code) = state.create_mode {
                    return front_end_error(code);
                }
                let text = body["text"].as_str().unwrap_or("").to_owned();
                if text.trim().is_empty() {
                    return error(400, "Bad Request: message text is empty");
                }
                if text.encode_utf16().count() > MAX_TEXT {
                    return error(400, "Bad Request: message is too long");
                }
                let message_id = state
                    .messages
                    .iter()
                    .filter(|m| m.chat_id == chat.id)
                    .count() as i64
                    + 1;
                state.messages.push(Message {
                    chat_id: chat.id,
                    message_id,
                    text: text.clone(),
                });
                let mut sent_chat = json!({"id": chat.id, "title": "Inn Cats", "type": "channel"});
                if let Some(name) = &chat.username {
                    sent_chat["username"] = json!(name);
                }
                let answer = ResponseTemplate::new(200).set_body_json(json!({
                    "ok": true,
                    "result": {
                        "message_id": message_id, "chat": sent_chat,
                        "date": chrono::Utc::now().timestamp(), "text": text,
                    },
                }));
                state.create_mode.answer(answer, front_end_error)
            }
        }
    }
}

/// How many calls each route must get in a test ([`ANY`]: any number).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expect {
    /// `getMe`.
    pub get_me: u64,
    /// `sendMessage` (irreversible).
    pub send: u64,
}

impl Expect {
    /// Any number of calls to every route.
    pub const ANY: Expect = Expect {
        get_me: ANY,
        send: ANY,
    };

    /// Nothing may be called.
    pub const NONE: Expect = Expect { get_me: 0, send: 0 };

    /// A post: the account, the message.
    pub const ONE_POST: Expect = Expect { get_me: 1, send: 1 };
}

impl Platform for State {
    type Expect = Expect;

    async fn mount(fake: &TelegramFake, expect: Expect) {
        let routes = [
            (Route::GetMe, "GET", "getMe", expect.get_me),
            (Route::SendMessage, "POST", "sendMessage", expect.send),
        ]
        .map(|(route, verb, method, times)| {
            // Whatever the token: a wrong one is answered by the route, as Telegram does.
            let matcher = move |request: &Request| {
                let path = request.url.path();
                request.method.as_str() == verb
                    && path.starts_with("/bot")
                    && path.rsplit_once('/').is_some_and(|(_, m)| m == method)
            };
            let respond = Api(fake.state.clone(), route);
            (format!("{route:?}"), matcher, respond, times)
        });
        mount_routes(&fake.server, routes, error(404, "Not Found")).await;
    }
}
