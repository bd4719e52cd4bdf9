//! `discord`: a Discord bot message (docs/platforms.md#discord, "Create message").
//!
//! `POST {base}/channels/{channel_id}/messages` with `Authorization: Bot <token>` and
//! `{"content", "nonce", "enforce_nonce": true, "allowed_mentions": {"parse": []}}`.
//! The nonce is derived from the outbox row id ([`nonce`]), so a redelivery after a lost
//! answer returns the message Discord already created instead of posting it twice
//! (Discord remembers nonces for "a few minutes", longer than the deliverer's lease).
//! `allowed_mentions` with no parse targets keeps quoted text from pinging anyone.
//!
//! Errors are JSON `{"message", "code"}`; 429 carries `Retry-After` and a body
//! `retry_after` in seconds.

use reqwest::header::{AUTHORIZATION, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use airlock_platforms::http::{retry_after, truncate};

use crate::sink::{Outgoing, SendFailure};

/// Discord refuses `content` longer than this many characters.
pub const MAX_CONTENT_CHARS: usize = 2_000;

/// Discord refuses a `nonce` longer than this many characters.
pub const MAX_NONCE_CHARS: usize = 25;

#[derive(Debug)]
pub(crate) struct Discord {
    token: SecretString,
    channel_id: String,
    base_url: String,
}

impl Discord {
    pub(crate) fn new(token: SecretString, channel_id: String, base_url: String) -> Self {
        Discord {
            token,
            channel_id,
            base_url,
        }
    }

    pub(crate) async fn send(&self, out: &Outgoing<'_>) -> Result<(), SendFailure> {
        let body = json!({
            "content": content(&out.message()),
            "nonce": nonce(out.notification.id),
            "enforce_nonce": true,
            "allowed_mentions": { "parse": [] },
        });
        let mut auth = HeaderValue::from_str(&format!("Bot {}", self.token.expose_secret()))
            .map_err(|_| SendFailure {
                reason: "discord: the bot token contains characters a header cannot carry: check token_file".to_owned(),
                retry_after: None,
            })?;
        auth.set_sensitive(true);
        let url = format!("{}/channels/{}/messages", self.base_url, self.channel_id);
        let request = out.client.post(url).header(AUTHORIZATION, auth).json(&body);
        let answer = out.exchange("discord", request).await?;
        if answer.is_success() {
            return Ok(());
        }
        let error: Option<serde_json::Value> = serde_json::from_str(&answer.body).ok();
        let detail = match error.as_ref().and_then(|e| e.get("message")?.as_str()) {
            Some(message) => match error.as_ref().and_then(|e| e.get("code")?.as_i64()) {
                Some(code) => format!("{message} (code {code})"),
                None => message.to_owned(),
            },
            None => answer.body.clone(),
        };
        let hint = retry_after(&answer.headers).or_else(|| {
            let seconds = error.as_ref()?.get("retry_after")?.as_f64()?;
            (seconds.is_finite() && seconds >= 0.0)
                .then(|| chrono::Duration::milliseconds((seconds * 1000.0).ceil() as i64))
        });
        Err(out.refused("discord", &answer, &detail, hint))
    }
}

/// The message nonce for outbox row `id`: `airlock-<id>`, stable across retries and at
/// most [`MAX_NONCE_CHARS`] long (just the digits for ids too large for the prefix).
pub fn nonce(id: i64) -> String {
    let nonce = format!("airlock-{id}");
    if nonce.chars().count() <= MAX_NONCE_CHARS {
        nonce
    } else {
        id.to_string()
    }
}

/// `message` shortened to at most [`MAX_CONTENT_CHARS`] characters.
pub fn content(message: &str) -> String {
    if message.chars().count() <= MAX_CONTENT_CHARS {
        message.to_owned()
    } else {
        // `truncate` appends an ellipsis, which must fit inside the limit too.
        truncate(message, MAX_CONTENT_CHARS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_stable_and_never_longer_than_discord_allows() {
        assert_eq!(nonce(42), "airlock-42");
        assert_eq!(nonce(42), nonce(42));
        assert_ne!(nonce(42), nonce(43));
        for id in [1, 99_999_999_999_999_999, i64::MAX] {
            assert!(nonce(id).chars().count() <= MAX_NONCE_CHARS, "{id}");
        }
    }

    #[test]
    fn content_is_cut_to_two_thousand_characters() {
        assert_eq!(content("short"), "short");
        let exact = "é".repeat(MAX_CONTENT_CHARS);
        assert_eq!(content(&exact), exact);
        let long = content(&"é".repeat(5_000));
        assert_eq!(long.chars().count(), MAX_CONTENT_CHARS);
        assert!(long.ends_with('…'));
    }
}
