//! `webhook`: one JSON POST per publish (docs/channels.md#webhook).
//!
//! Body `{"id", "channel", "text", "media", "link", "scheduled_at"}` (`id` is the post
//! id), headers `Idempotency-Key` and, with a secret, two signatures:
//! - `X-Airlock-Signature: sha256=<hex HMAC-SHA256 of the body>`, and
//! - `X-Airlock-Signature-V2: t=<unix seconds>,sha256=<hex HMAC-SHA256 of "<t>.<body>">`
//!   ([`timestamped_signature`]): the time of sending is signed with the body, so a
//!   receiver that checks this one and refuses a `t` older than a few minutes cannot be
//!   fed a captured delivery again later (README, "Verifying webhook signatures").
//!
//! The first is sent by default (docs/channels.md#webhook); a channel with
//! `signature_v1 = false` sends only the second ([`Webhook::without_signature_v1`]), for
//! receivers that verify V2 only.
//!
//! A 2xx is success; an optional JSON answer `{"id", "permalink"}` is kept. Every other
//! answer is classified by the outcome table of docs/channels.md, and only its status, a
//! JSON `code` and a bounded, redacted JSON `message` (or `error`) are recorded: a body in
//! any other shape is recorded by its size alone, since a receiver may echo anything back.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;
use sha2::Sha256;

use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::http::{Redactor, StatusTable, describe_transport, transport_failure};
use crate::kind::{Common, KindConfig, read_token};
use crate::{Account, Platform, Prepared, PublishRequest, StepError};

/// A webhook channel.
#[derive(Debug)]
pub struct Webhook {
    url: String,
    secret: Option<SecretString>,
    client: reqwest::Client,
    redactor: Redactor,
    signature_v1: bool,
}

#[derive(Debug, Default, Deserialize)]
struct Answer {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    permalink: Option<String>,
}

impl Webhook {
    /// A webhook posting to `url`, refused unless [`crate::http::check_webhook_url`]
    /// passes (the rule a webhook notification sink's `url` meets too).
    pub fn new(
        url: &str,
        secret: Option<SecretString>,
        client: reqwest::Client,
    ) -> Result<Self, crate::http::BaseUrlError> {
        let url = crate::http::check_webhook_url(url)?;
        let redactor = Redactor::new(secret.clone());
        Ok(Webhook {
            url,
            secret,
            client,
            redactor,
            signature_v1: true,
        })
    }

    /// Stops sending `X-Airlock-Signature` (the body-only signature, which a captured
    /// request replays); `X-Airlock-Signature-V2` is still sent.
    pub fn without_signature_v1(mut self) -> Self {
        self.signature_v1 = false;
        self
    }
}

/// The recordable part of a non-2xx answer: a JSON `code` and a bounded `message` (or
/// `error`), redacted; any other body only by its size.
fn answer_detail(redactor: &Redactor, text: &str) -> String {
    let Ok(serde_json::Value::Object(body)) = serde_json::from_str::<serde_json::Value>(text)
    else {
        return crate::http::unkept_body(text);
    };
    let field = |name: &str| match body.get(name) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let code = field("code").map(|c| redactor.excerpt(&c, 60));
    let message = field("message")
        .or_else(|| field("error"))
        .map(|m| redactor.excerpt(&m, 160));
    match (code, message) {
        (Some(code), Some(message)) => format!(", {code}: {message}"),
        (Some(code), None) => format!(", {code}"),
        (None, Some(message)) => format!(": {message}"),
        (None, None) => " (a JSON body without code or message, not kept)".to_owned(),
    }
}

/// `sha256=<hex HMAC-SHA256 of body>`, the `X-Airlock-Signature` of webhook channels and sinks.
pub fn signature(secret: &SecretString, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The header of [`timestamped_signature`].
pub const SIGNATURE_V2_HEADER: &str = "x-airlock-signature-v2";

/// `t=<timestamp>,sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, the
/// `X-Airlock-Signature-V2` of webhook channels and sinks. `timestamp` is the time of
/// sending in Unix seconds; a receiver recomputes the HMAC over the same bytes and
/// refuses a timestamp too far from its own clock.
pub fn timestamped_signature(secret: &SecretString, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "t={timestamp},sha256={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

#[async_trait]
impl Platform for Webhook {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Webhook
    }

    fn prepares(&self) -> bool {
        false
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        Ok(None)
    }

    async fn publish(&self, req: &PublishRequest, _prepared: &Prepared) -> Outcome {
        let body = json!({
            "id": req.post_id.0,
            "channel": req.channel.as_str(),
            "text": req.text,
            "media": req.media,
            "link": req.link,
            "scheduled_at": airlock_core::time::format_utc(req.scheduled_at),
        })
        .to_string();
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("idempotency-key", &req.idempotency_key);
        if let Some(secret) = &self.secret {
            let now = chrono::Utc::now().timestamp();
            if self.signature_v1 {
                request = request.header("x-airlock-signature", signature(secret, body.as_bytes()));
            }
            request = request.header(
                SIGNATURE_V2_HEADER,
                timestamped_signature(secret, now, body.as_bytes()),
            );
        }
        let response = match request.body(body).send().await {
            Ok(response) => response,
            Err(e) => {
                let reason = self
                    .redactor
                    .summary(&format!("webhook: {}", describe_transport(&e)));
                return transport_failure(&e).outcome(reason);
            }
        };
        let status = response.status();
        let headers = response.headers().clone();
        let text = match response.text().await {
            Ok(text) => text,
            // The platform answered 2xx but the body broke off: it has the post.
            Err(_) if status.is_success() => String::new(),
            Err(e) => {
                let reason = self.redactor.summary(&format!(
                    "webhook: HTTP {} then {}",
                    status.as_u16(),
                    describe_transport(&e)
                ));
                let answer = crate::http::Answer {
                    status: status.as_u16(),
                    headers,
                    body: None,
                };
                return StatusTable::PLAIN.outcome(&answer, reason);
            }
        };
        if status.is_success() {
            let answer: Answer = serde_json::from_str(&text).unwrap_or_default();
            let id = answer.id.and_then(|id| match id {
                serde_json::Value::String(s) if !s.is_empty() => Some(s),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            });
            return Outcome::Published(Published {
                platform_post_id: id,
                permalink: answer.permalink.filter(|p| !p.is_empty()),
                pause: None,
                existing: None,
            });
        }
        let reason = self.redactor.summary(&format!(
            "webhook: HTTP {}{}",
            status.as_u16(),
            answer_detail(&self.redactor, &text)
        ));
        let answer = crate::http::Answer {
            status: status.as_u16(),
            headers,
            body: Some(text),
        };
        StatusTable::PLAIN.outcome(&answer, reason)
    }
}

/// `kind = "webhook"`: a JSON POST to `url`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where to POST.
    pub url: String,
    /// HMAC secret file (signs the body).
    pub secret_file: Option<PathBuf>,
    /// Whether to send `X-Airlock-Signature` (the body-only signature of
    /// docs/channels.md#webhook, which a captured request replays) beside
    /// `X-Airlock-Signature-V2`. Default `true`; set `false` once the receiver verifies V2
    /// only.
    #[serde(default = "yes")]
    pub signature_v1: bool,
}

fn yes() -> bool {
    true
}

impl KindConfig for WebhookConfig {
    fn secret_files(&self) -> Vec<&Path> {
        self.secret_file.iter().map(PathBuf::as_path).collect()
    }

    fn resolve_paths(&mut self, _: &str, resolve: &dyn Fn(&mut PathBuf)) {
        self.secret_file.iter_mut().for_each(resolve);
    }

    // One rule and message with a webhook notification sink's url
    // (`http::check_webhook_url`).
    fn urls(&self) -> Vec<(&'static str, &str)> {
        vec![("url", &self.url)]
    }

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let secret = self.secret_file.as_deref().map(read_token).transpose()?;
        let client = crate::http::client(common.request_timeout.as_std());
        let webhook = Webhook::new(&self.url, secret, client).map_err(|e| e.to_string())?;
        Ok(Arc::new(if self.signature_v1 {
            webhook
        } else {
            webhook.without_signature_v1()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        let secret = SecretString::from("Jefe".to_owned());
        assert_eq!(
            signature(&secret, b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_timestamped_signature_covers_the_time_and_the_body() {
        let secret = SecretString::from("Jefe".to_owned());
        let signed = timestamped_signature(&secret, 1_767_225_600, b"{}");
        let (t, mac) = signed.split_once(',').unwrap();
        assert_eq!(t, "t=1767225600");
        // The same bytes as `signature` over "<t>.<body>".
        assert_eq!(mac, signature(&secret, b"1767225600.{}"));
        // Another time or another body is another signature: an old capture cannot
        // be passed off with a fresh timestamp.
        assert_ne!(signed, timestamped_signature(&secret, 1_767_225_601, b"{}"));
        assert_ne!(
            signed,
            timestamped_signature(&secret, 1_767_225_600, b"{ }")
        );
    }
}
