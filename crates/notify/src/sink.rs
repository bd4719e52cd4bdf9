//! Sink configuration and one delivery attempt to one sink.
//!
//! [`SinkSettings`] is plain data: the CLI reads `[notify.NAME]`, reads the secret
//! files with `airlock_platforms::credential::read_secret`, and builds it. [`Sink::new`]
//! checks it (URLs `https` unless loopback, known event names, a numeric Discord
//! channel id) and builds the HTTP client. [`Sink::send`] makes one attempt and says
//! what went wrong in a redacted [`SendFailure`]; retrying is the deliverer's job.

use std::time::Duration as StdDuration;

use chrono::Duration;
use reqwest::header::HeaderMap;
use secrecy::{ExposeSecret, SecretString};

use airlock_platforms::http::{
    Redactor, check_base_url, check_webhook_url, client, describe_transport,
};
use airlock_store::Notification;

use crate::{discord, slack, webhook};

/// How long one request to a sink may take, unless configured otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: StdDuration = StdDuration::from_secs(10);

/// The Discord API base URL used unless a sink overrides it (for tests).
pub const DISCORD_API: &str = "https://discord.com/api/v10";

/// The notification events (docs/notifications.md).
pub use airlock_core::EVENTS;

/// One configured sink (`[notify.NAME]` in `airlock.toml`), as plain data.
#[derive(Debug, Clone)]
pub struct SinkSettings {
    /// The table name (`ops` for `[notify.ops]`); outbox rows name their sink by it.
    pub name: String,
    /// Where notifications go, with the sink's credentials.
    pub kind: SinkKind,
    /// The events this sink wants (values of [`EVENTS`]). The deliverer sends whatever
    /// was queued for the sink; this list is for the code that queues.
    pub events: Vec<String>,
    /// How long one request may take ([`DEFAULT_REQUEST_TIMEOUT`] is a good default).
    pub request_timeout: StdDuration,
}

/// The kind of a sink and what it needs to send.
#[derive(Debug, Clone)]
pub enum SinkKind {
    /// A Slack incoming webhook: `POST <webhook_url>` with `{"text": message}`.
    Slack {
        /// The incoming-webhook URL. It is the credential itself: read from
        /// `webhook_file`, never shown.
        webhook_url: SecretString,
    },
    /// A Discord bot message: `POST {base_url}/channels/{channel_id}/messages`.
    Discord {
        /// The bot token, read from `token_file`.
        token: SecretString,
        /// The channel's snowflake id (digits).
        channel_id: String,
        /// The API base, [`DISCORD_API`] unless overridden.
        base_url: String,
    },
    /// A JSON POST of the outbox payload to `url`.
    Webhook {
        /// Where to POST.
        url: String,
        /// Signs each body as `X-Airlock-Signature: sha256=<hex HMAC>` and
        /// `X-Airlock-Signature-V2` when set (read from `secret_file`).
        secret: Option<SecretString>,
        /// Whether to send `X-Airlock-Signature` (body only, replayable; docs/notifications.md
        /// promises it) beside V2. `false` once the receiver verifies V2 only.
        signature_v1: bool,
    },
}

impl SinkKind {
    /// The kind's name as written in `airlock.toml` (`slack`, `discord`, `webhook`).
    pub fn as_str(&self) -> &'static str {
        match self {
            SinkKind::Slack { .. } => "slack",
            SinkKind::Discord { .. } => "discord",
            SinkKind::Webhook { .. } => "webhook",
        }
    }
}

/// Why a sink's settings were refused. Messages never contain a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// The sink has no name.
    #[error("a notify sink needs a name: use [notify.NAME]")]
    EmptyName,
    /// A URL that would send a credential somewhere unsafe. For Slack the URL itself is
    /// secret, so the message names the key, never the value.
    #[error("notify sink {sink:?}: {key} {problem}")]
    InvalidUrl {
        /// The sink.
        sink: String,
        /// The setting (`webhook_file`, `base_url`, `url`).
        key: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A webhook `url` refused by the rule a webhook channel's `url` meets
    /// ([`airlock_platforms::http::check_webhook_url`]), with its message.
    #[error("notify sink {sink:?}: {error}")]
    Url {
        /// The sink.
        sink: String,
        /// What is wrong with the URL (naming the key, never a password it carried).
        error: airlock_platforms::http::BaseUrlError,
    },
    /// A Discord channel id that is not a snowflake.
    #[error("notify sink {sink:?}: channel_id {channel_id:?} must be the channel's numeric id")]
    InvalidChannelId {
        /// The sink.
        sink: String,
        /// The value given.
        channel_id: String,
    },
    /// An event name docs/notifications.md does not list.
    #[error("notify sink {sink:?}: unknown event {event:?}: use one of {}", EVENTS.join(", "))]
    UnknownEvent {
        /// The sink.
        sink: String,
        /// The unknown name.
        event: String,
    },
}

/// Why one delivery attempt failed: a redacted one-line reason, and the sink's
/// `Retry-After` hint when it gave one (429).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct SendFailure {
    /// What happened, prefixed with the sink kind (`slack: HTTP 404: no_service`), with
    /// every secret of the sink replaced by `[redacted]`.
    pub reason: String,
    /// Not before this much time, as the sink asked.
    pub retry_after: Option<Duration>,
}

/// A checked sink, ready to send. Built once at startup by [`Sink::new`].
#[derive(Debug)]
pub struct Sink {
    name: String,
    events: Vec<String>,
    request_timeout: StdDuration,
    target: Target,
    client: reqwest::Client,
    redactor: Redactor,
}

#[derive(Debug)]
enum Target {
    Slack(slack::Slack),
    Discord(discord::Discord),
    Webhook(webhook::Webhook),
}

impl Sink {
    /// Checks `settings` and builds the sink: URLs must be `https` unless their host is
    /// loopback, events must be known, a Discord channel id must be numeric.
    pub fn new(settings: SinkSettings) -> Result<Self, SinkError> {
        let SinkSettings {
            name,
            kind,
            events,
            request_timeout,
        } = settings;
        if name.trim().is_empty() {
            return Err(SinkError::EmptyName);
        }
        if let Some(event) = events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
            return Err(SinkError::UnknownEvent {
                sink: name,
                event: event.clone(),
            });
        }
        let (target, secrets) = match kind {
            SinkKind::Slack { webhook_url } => {
                let url = check_base_url(webhook_url.expose_secret()).map_err(|e| {
                    SinkError::InvalidUrl {
                        sink: name.clone(),
                        key: "webhook_file",
                        // `BaseUrlError`'s own message quotes the URL: keep only the problem.
                        problem: format!("holds a URL that {}", e.problem),
                    }
                })?;
                let secrets = slack::secret_parts(webhook_url.expose_secret());
                let target = Target::Slack(slack::Slack::new(SecretString::from(url)));
                (target, secrets)
            }
            SinkKind::Discord {
                token,
                channel_id,
                base_url,
            } => {
                let base_url = check_base_url(&base_url).map_err(|e| SinkError::InvalidUrl {
                    sink: name.clone(),
                    key: "base_url",
                    problem: e.to_string(),
                })?;
                if channel_id.is_empty()
                    || channel_id.len() > 20
                    || !channel_id.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(SinkError::InvalidChannelId {
                        sink: name,
                        channel_id,
                    });
                }
                let secrets = vec![token.clone()];
                let target = Target::Discord(discord::Discord::new(token, channel_id, base_url));
                (target, secrets)
            }
            SinkKind::Webhook {
                url,
                secret,
                signature_v1,
            } => {
                // The rule and message of a webhook channel's url.
                let url = check_webhook_url(&url).map_err(|e| SinkError::Url {
                    sink: name.clone(),
                    error: e,
                })?;
                let secrets = secret.iter().cloned().collect();
                (
                    Target::Webhook(webhook::Webhook::new(url, secret, signature_v1)),
                    secrets,
                )
            }
        };
        Ok(Sink {
            name,
            events,
            request_timeout,
            target,
            client: client(request_timeout),
            redactor: Redactor::new(secrets),
        })
    }

    /// The sink's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind's name (`slack`, `discord`, `webhook`).
    pub fn kind(&self) -> &'static str {
        match self.target {
            Target::Slack(_) => "slack",
            Target::Discord(_) => "discord",
            Target::Webhook(_) => "webhook",
        }
    }

    /// The events this sink wants.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// Whether this sink wants `event`.
    pub fn wants(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }

    /// How long one request may take.
    pub fn request_timeout(&self) -> StdDuration {
        self.request_timeout
    }

    /// One attempt to deliver `notification`. `Ok` means the sink accepted it (2xx);
    /// every failure is summarized without secrets.
    #[tracing::instrument(skip_all, fields(sink = %self.name, notification = notification.id))]
    pub async fn send(&self, notification: &Notification) -> Result<(), SendFailure> {
        let out = Outgoing {
            client: &self.client,
            redactor: &self.redactor,
            notification,
        };
        match &self.target {
            Target::Slack(slack) => slack.send(&out).await,
            Target::Discord(discord) => discord.send(&out).await,
            Target::Webhook(webhook) => webhook.send(&out).await,
        }
    }
}

/// What a kind module needs to send one notification.
pub(crate) struct Outgoing<'a> {
    pub(crate) client: &'a reqwest::Client,
    pub(crate) redactor: &'a Redactor,
    pub(crate) notification: &'a Notification,
}

/// A sink's answer, read in full.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Outgoing<'_> {
    /// The human one-liner of the payload (`message`), or a plain fallback when a row
    /// carries none, so a sink never receives an empty message.
    pub(crate) fn message(&self) -> String {
        let n = self.notification;
        match n.payload.get("message").and_then(|m| m.as_str()) {
            Some(message) if !message.trim().is_empty() => message.to_owned(),
            _ => match n.post_id {
                Some(post_id) => format!("airlock: {} (post {post_id})", n.event),
                None => format!("airlock: {}", n.event),
            },
        }
    }

    /// Sends `request` and reads the answer. A transport error becomes a failure
    /// described without its URL; a body that breaks off after a 2xx still counts as
    /// accepted (the sink has the message).
    pub(crate) async fn exchange(
        &self,
        kind: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, SendFailure> {
        let response = request.send().await.map_err(|e| SendFailure {
            reason: self
                .redactor
                .summary(&format!("{kind}: {}", describe_transport(&e))),
            retry_after: None,
        })?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = match response.text().await {
            Ok(body) => body,
            Err(_) if (200..300).contains(&status) => String::new(),
            Err(e) => {
                return Err(SendFailure {
                    reason: self.redactor.summary(&format!(
                        "{kind}: HTTP {status} then {}",
                        describe_transport(&e)
                    )),
                    retry_after: airlock_platforms::http::retry_after(&headers),
                });
            }
        };
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A failure for a non-2xx answer: `kind: HTTP status: detail`, redacted.
    pub(crate) fn refused(
        &self,
        kind: &str,
        answer: &Answer,
        detail: &str,
        retry_after: Option<Duration>,
    ) -> SendFailure {
        SendFailure {
            reason: self.redactor.summary(&format!(
                "{kind}: HTTP {}: {}",
                answer.status,
                self.redactor.excerpt(detail.trim(), 160)
            )),
            retry_after,
        }
    }
}

impl Answer {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}
