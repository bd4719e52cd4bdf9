//! `webhook`: a JSON POST of the outbox payload (docs/notifications.md).
//!
//! The body is the stored payload `{"event", "at", "message", "post_id", "detail"}`,
//! byte for byte the same on every retry. Headers:
//! - `X-Airlock-Event-Id: <outbox id>` and `Idempotency-Key: airlock-event-<outbox id>`,
//!   both stable per outbox row, so a receiver can drop repeats;
//! - `X-Airlock-Event: <event>`;
//! - `X-Airlock-Signature: sha256=<hex HMAC-SHA256 of the body>` and
//!   `X-Airlock-Signature-V2: t=<unix seconds>,sha256=<hex HMAC-SHA256 of "<t>.<body>">`
//!   when a secret is set (V1 unless the sink sets `signature_v1 = false`), the same
//!   signatures as webhook channels
//!   ([`airlock_platforms::webhook::signature`],
//!   [`airlock_platforms::webhook::timestamped_signature`]). Each attempt is signed at
//!   its own time, so a receiver may refuse a `t` older than a few minutes: a captured
//!   delivery cannot be replayed later, and a retry carries a fresh one.
//!
//! Any 2xx is delivered; everything else is a failure the deliverer retries.

use secrecy::SecretString;

use airlock_platforms::http::retry_after;
use airlock_platforms::webhook::{SIGNATURE_V2_HEADER, signature, timestamped_signature};

use crate::sink::{Outgoing, SendFailure};

#[derive(Debug)]
pub(crate) struct Webhook {
    url: String,
    secret: Option<SecretString>,
    signature_v1: bool,
}

impl Webhook {
    pub(crate) fn new(url: String, secret: Option<SecretString>, signature_v1: bool) -> Self {
        Webhook {
            url,
            secret,
            signature_v1,
        }
    }

    pub(crate) async fn send(&self, out: &Outgoing<'_>) -> Result<(), SendFailure> {
        let id = out.notification.id;
        let body = out.notification.payload.to_string();
        let mut request = out
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("x-airlock-event-id", id.to_string())
            .header("idempotency-key", idempotency_key(id))
            .header("x-airlock-event", &out.notification.event);
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
        let answer = out.exchange("webhook", request.body(body)).await?;
        if answer.is_success() {
            return Ok(());
        }
        let detail = answer.body.clone();
        Err(out.refused("webhook", &answer, &detail, retry_after(&answer.headers)))
    }
}

/// The `Idempotency-Key` of outbox row `id`: `airlock-event-<id>`.
pub fn idempotency_key(id: i64) -> String {
    format!("airlock-event-{id}")
}
