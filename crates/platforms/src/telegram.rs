//! `telegram`: text messages to one chat through the Telegram Bot API.
//!
//! A post's path through the adapter:
//! 1. [`Platform::account`]: `getMe`; the bot's `username` is what the channel's `account`
//!    is compared with.
//! 2. No repeatable step: nothing is created before the one request, and nothing is
//!    recorded with the intent (the Bot API has no handle to find a message by).
//! 3. [`Platform::publish`] (irreversible, once): `sendMessage` with the channel's
//!    `chat_id` and the text (the link appended when the text lacks it), as plain text.
//! 4. [`Platform::verify`] and [`Platform::reconcile`]: nothing. A bot cannot read a
//!    message back by its id, and `sendMessage` takes no idempotency key, so, as on X,
//!    every unknown outcome waits for a person.
//!
//! Telegram answers `{"ok": false, "error_code", "description", "parameters"}`: a 429
//! carries its wait in `parameters.retry_after`; a chat that is gone, was upgraded to a
//! supergroup (`parameters.migrate_to_chat_id`) or does not let the bot post fails the
//! post and pauses the channel, since every later message would fail the same way.
//!
//! **The token travels in the URL path** (`/bot<TOKEN>/sendMessage`), the one place the
//! Bot API takes it: the exception to airlock's rule that a token travels in a header
//! only. Those URLs are built in one place (`Telegram::url`) and sent only to the
//! channel's own `base_url`, without redirects; no URL is ever put in a reason, a note
//! or a log line (transport errors are described without it), and every summary goes
//! through a [`Redactor`] that knows the token, so a server or proxy echoing the path
//! shows `[redacted]`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::Duration;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use airlock_core::policy::with_appended_link;
use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::http::{
    Answer, Redactor, StatusTable, Wait, check_base_url, describe_transport, endpoint, id_string,
    send, transport_failure, unkept_body,
};
use crate::kind::{Common, KindConfig, read_token};
use crate::{Account, Platform, Prepared, PublishRequest, SettingsError, StepError};

/// The Bot API host.
pub const DEFAULT_BASE_URL: &str = "https://api.telegram.org";

/// The longest wait a 429's `retry_after` is read as; the guarded path clamps it further.
const MAX_RETRY_AFTER: Duration = Duration::days(366);

const CREDENTIAL_HINT: &str = "the bot token was refused (revoked, or not a token @BotFather gave) or the bot may not post to the chat: write the bot's token to the token file and check that the bot is a member of the chat allowed to post, then resume the channel";

/// Telegram answers by the outcome table, with the wait of a 429 in its body. The Bot API
/// answers a path whose token it cannot read with a 404, so a 404 is the credential's too
/// ([`Telegram::refusal`]).
const STATUSES: StatusTable = StatusTable {
    credential_hint: Some(CREDENTIAL_HINT),
    step_throttled: Some("Telegram limits requests now; nothing was published"),
    publish_throttled: Some("Telegram limits messages now; nothing was published"),
    unknown: Some(
        "whether Telegram sent the message is unknown, and the Bot API has no key to find out: check the chat and settle the post",
    ),
    wait: Wait::Body(retry_after_in_body),
};

/// A 429's `parameters.retry_after`, in seconds.
fn retry_after_in_body(answer: &Answer) -> Option<Duration> {
    let seconds = answer.json()?["parameters"]["retry_after"].as_i64()?;
    let wait = Duration::try_seconds(seconds.max(0))?;
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The chat a channel posts to: its numeric id (`-1001234567890` for a channel or
/// supergroup) or the `@username` of a public one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatId {
    /// A numeric chat id.
    Id(i64),
    /// `@channelusername`.
    Username(String),
}

impl ChatId {
    /// Parses `-1001234567890` or `@channelusername`.
    pub fn parse(text: &str) -> Result<ChatId, String> {
        let text = text.trim();
        if let Ok(id) = text.parse::<i64>()
            && id != 0
        {
            return Ok(ChatId::Id(id));
        }
        let username = text.strip_prefix('@').unwrap_or("");
        if (5..=32).contains(&username.len())
            && username
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Ok(ChatId::Username(text.to_owned()));
        }
        Err(format!(
            "chat_id {text:?} is neither a numeric chat id (like -1001234567890) nor a public chat's @username"
        ))
    }

    fn to_json(&self) -> Value {
        match self {
            ChatId::Id(id) => json!(id),
            ChatId::Username(name) => json!(name),
        }
    }
}

impl std::fmt::Display for ChatId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChatId::Id(id) => write!(f, "{id}"),
            ChatId::Username(name) => f.write_str(name),
        }
    }
}

impl<'de> Deserialize<'de> for ChatId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A numeric id may be written as a number or as a string.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(i64),
            Text(String),
        }
        let text = match Written::deserialize(deserializer)? {
            Written::Number(id) => id.to_string(),
            Written::Text(text) => text,
        };
        ChatId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// How a `telegram` channel reaches its chat. Built from the channel's table
/// ([`TelegramConfig`]).
#[derive(Debug, Clone)]
pub struct TelegramSettings {
    /// The Bot API host (default [`DEFAULT_BASE_URL`]); tests point it at a fake.
    pub base_url: String,
    /// The bot token.
    pub token: SecretString,
    /// The chat messages go to.
    pub chat_id: ChatId,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
}

/// A `telegram` channel.
#[derive(Debug)]
pub struct Telegram {
    base_url: String,
    token: SecretString,
    chat_id: ChatId,
    client: reqwest::Client,
    timeout: StdDuration,
    redactor: Redactor,
}

impl Telegram {
    /// An adapter with these settings; refuses a `base_url` that could leak the token.
    pub fn new(settings: TelegramSettings, client: reqwest::Client) -> Result<Self, SettingsError> {
        let mut redactor = Redactor::new([settings.token.clone()]);
        // The secret after the bot id, on its own too: an echo of the path may split it.
        if let Some((_, secret)) = settings.token.expose_secret().split_once(':') {
            redactor.add(secret);
        }
        Ok(Telegram {
            base_url: check_base_url(&settings.base_url)?,
            redactor,
            token: settings.token,
            chat_id: settings.chat_id,
            client,
            timeout: settings.request_timeout,
        })
    }

    /// The URL of a Bot API method. It carries the token (the Bot API takes it nowhere
    /// else), so it is only ever sent, never shown or logged.
    fn url(&self, method: &str) -> String {
        let bot = format!("bot{}", self.token.expose_secret());
        endpoint(&self.base_url, &[&bot, method], &[])
    }

    fn summary(&self, what: &str, answer: &Answer) -> String {
        let description = answer
            .json()
            .and_then(|body| body["description"].as_str().map(str::to_owned));
        let detail = match description {
            // Redacted before it is cut: a cut through a secret would leave a piece of it.
            Some(text) => format!(": {}", self.redactor.excerpt(text.trim(), 160)),
            None => unkept_body(answer.text()),
        };
        self.redactor
            .summary(&format!("telegram: {what}: HTTP {}{detail}", answer.status))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redactor
            .summary(&format!("telegram: {what}: {}", describe_transport(err)))
    }

    /// What only Telegram means by an answer, before the outcome table: a 404 names no
    /// bot (the token is in the path), and a chat the bot cannot post to fails every
    /// message alike, so both are the channel's problem, not the post's.
    fn refusal(&self, answer: &Answer, reason: &str) -> Option<String> {
        if answer.status == 404 {
            return Some(format!("{reason}: {CREDENTIAL_HINT}"));
        }
        if answer.status != 400 {
            return None;
        }
        let body = answer.json()?;
        if let Some(id) = body["parameters"]["migrate_to_chat_id"].as_i64() {
            return Some(format!(
                "{reason}: the group became supergroup {id}: set the channel's chat_id = {id}, then resume the channel"
            ));
        }
        let description = body["description"].as_str()?.to_ascii_lowercase();
        ["chat not found", "not enough rights", "chat_write_forbidden"]
            .iter()
            .any(|known| description.contains(known))
            .then(|| {
                format!(
                    "{reason}: the bot cannot post to chat {}: check the channel's chat_id and that the bot is a member allowed to post, then resume the channel",
                    self.chat_id
                )
            })
    }

    fn step_error(&self, what: &str, answer: &Answer) -> StepError {
        let reason = self.summary(what, answer);
        match self.refusal(answer, &reason) {
            Some(reason) => StepError::Rejected {
                reason,
                credential: true,
            },
            None => STATUSES.step_error(answer, reason),
        }
    }

    fn publish_failure(&self, answer: &Answer) -> Outcome {
        let reason = self.summary("send message", answer);
        match self.refusal(answer, &reason) {
            Some(reason) => Outcome::Rejected {
                reason,
                credential: true,
            },
            None => STATUSES.outcome(answer, reason),
        }
    }
}

/// The link to a message: `t.me/<username>/<id>` in a public chat, `t.me/c/<id>/<id>` (for
/// members) in a private channel or supergroup, none in other chats.
pub fn permalink(chat: &Value, message_id: &str) -> Option<String> {
    if let Some(username) = chat["username"].as_str().filter(|u| !u.is_empty()) {
        return Some(format!("https://t.me/{username}/{message_id}"));
    }
    let id = chat["id"].as_i64()?.to_string();
    let internal = id.strip_prefix("-100")?;
    Some(format!("https://t.me/c/{internal}/{message_id}"))
}

#[async_trait]
impl Platform for Telegram {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Telegram
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let what = "identity read";
        let request = self.client.get(self.url("getMe")).timeout(self.timeout);
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            return Err(self.step_error(what, &answer));
        }
        let me = answer.json().unwrap_or(Value::Null);
        let username = me["result"]["username"]
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| StepError::transient("telegram: getMe answered without a username"))?;
        Ok(Some(Account {
            username: username.to_owned(),
            id: id_string(me["result"].get("id")),
        }))
    }

    fn prepares(&self) -> bool {
        false
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn publish(&self, req: &PublishRequest, _prepared: &Prepared) -> Outcome {
        if !req.media.is_empty() {
            return Outcome::Rejected {
                reason: "telegram: this channel sends text messages only; remove the media; nothing was sent".into(),
                credential: false,
            };
        }
        // As the length policy counts it (`appends_link`): the link on a line of its own
        // when the text lacks it.
        let text = with_appended_link(req.text.trim_end(), req.link.as_deref());
        let body = json!({"chat_id": self.chat_id.to_json(), "text": text});
        let request = self
            .client
            .post(self.url("sendMessage"))
            .timeout(self.timeout)
            .header("content-type", "application/json")
            .body(body.to_string());
        let answer = match send(request).await {
            Ok(answer) => answer,
            Err(e) => {
                return transport_failure(&e).outcome(self.transport_summary("send message", &e));
            }
        };
        if !answer.is_success() {
            return self.publish_failure(&answer);
        }
        // A 2xx without a readable message is still a message sent: published, with no id.
        let message = answer
            .json()
            .filter(|body| body["ok"] == json!(true))
            .map(|body| body["result"].clone())
            .unwrap_or(Value::Null);
        let message_id = id_string(message.get("message_id"));
        let chat_id = id_string(message["chat"].get("id"));
        Outcome::Published(Published {
            permalink: message_id
                .as_deref()
                .and_then(|id| permalink(&message["chat"], id)),
            platform_post_id: chat_id
                .zip(message_id)
                .map(|(chat, id)| format!("{chat}/{id}")),
            pause: None,
            existing: None,
        })
    }
}

/// `kind = "telegram"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// The bot token's file (0600), as @BotFather gave it.
    pub token_file: PathBuf,
    /// The bot's username, as `getMe` names it.
    pub account: String,
    /// The chat messages go to.
    pub chat_id: ChatId,
    /// The Bot API host (default [`DEFAULT_BASE_URL`]; a local Bot API server; tests: a
    /// fake).
    pub base_url: Option<String>,
}

impl KindConfig for TelegramConfig {
    crate::kind::token_keys!(base_url: optional);

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let settings = TelegramSettings {
            base_url: self
                .base_url
                .clone()
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            token: read_token(&self.token_file)?,
            chat_id: self.chat_id.clone(),
            request_timeout: timeout,
        };
        let telegram = Telegram::new(settings, crate::http::client(timeout));
        Ok(Arc::new(telegram.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_is_a_numeric_id_or_a_public_username() {
        assert_eq!(
            ChatId::parse("-1001234567890"),
            Ok(ChatId::Id(-1001234567890))
        );
        assert_eq!(
            ChatId::parse("@inn_cats"),
            Ok(ChatId::Username("@inn_cats".into()))
        );
        for bad in [
            "",
            "0",
            "inn_cats",
            "@cat",
            "@inn-cats",
            "https://t.me/inn_cats",
        ] {
            let err = ChatId::parse(bad).unwrap_err();
            assert!(err.contains("chat_id"), "{bad}: {err}");
        }
        let read = |text: &str| serde_json::from_str::<ChatId>(text);
        assert_eq!(read("-100123").unwrap(), ChatId::Id(-100123));
        assert_eq!(read("\"-100123\"").unwrap(), ChatId::Id(-100123));
        assert!(read("\"nope\"").is_err());
    }

    #[test]
    fn permalinks_follow_the_chat() {
        let public = json!({"id": -1001234567890_i64, "username": "inn_cats"});
        assert_eq!(
            permalink(&public, "42").as_deref(),
            Some("https://t.me/inn_cats/42")
        );
        let private = json!({"id": -1001234567890_i64});
        assert_eq!(
            permalink(&private, "42").as_deref(),
            Some("https://t.me/c/1234567890/42")
        );
        assert_eq!(permalink(&json!({"id": 777}), "42"), None);
    }

    #[test]
    fn the_token_is_never_shown() {
        let token = "123456:AAH-canary-token-value";
        let telegram = Telegram::new(
            TelegramSettings {
                base_url: DEFAULT_BASE_URL.into(),
                token: SecretString::from(token.to_owned()),
                chat_id: ChatId::Id(-100),
                request_timeout: StdDuration::from_secs(5),
            },
            crate::http::client(StdDuration::from_secs(5)),
        )
        .unwrap();
        assert_eq!(
            telegram.url("getMe"),
            format!("{DEFAULT_BASE_URL}/bot{token}/getMe")
        );
        assert!(!format!("{telegram:?}").contains("canary"));
        let echo = Answer {
            status: 400,
            headers: Default::default(),
            body: Some(
                json!({"ok": false, "error_code": 400,
                    "description": format!("Bad Request: no such path /bot{token}/sendMessage")})
                .to_string(),
            ),
        };
        let outcome = telegram.publish_failure(&echo);
        assert!(!format!("{outcome:?}").contains("canary"), "{outcome:?}");
        // The secret half alone, as a server that splits the path at `:` would echo it.
        let half = Answer {
            body: Some(
                json!({"ok": false, "error_code": 400,
                    "description": "Bad Request: unknown bot secret AAH-canary-token-value"})
                .to_string(),
            ),
            ..echo
        };
        let outcome = telegram.publish_failure(&half);
        assert!(!format!("{outcome:?}").contains("canary"), "{outcome:?}");
    }
}
