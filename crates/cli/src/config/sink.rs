//! `[notify.NAME]`: the keys every sink has (`kind`, `events`, `request_timeout`), then
//! one type per sink kind carrying only that kind's keys, read with
//! `deny_unknown_fields` so a key of another kind is refused by its own name.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use airlock_app::EVENTS;
use airlock_core::Span;

/// One notification sink.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// Name.
    pub name: String,
    /// Events it wants.
    pub events: Vec<String>,
    /// Per-request timeout.
    pub request_timeout: Span,
    /// Where it delivers.
    pub target: SinkTarget,
}

/// Where a sink delivers: one variant per kind, each with only that kind's keys.
#[derive(Debug, Clone)]
pub enum SinkTarget {
    /// `kind = "slack"`: an incoming webhook.
    Slack(SlackConfig),
    /// `kind = "discord"`: a bot message.
    Discord(DiscordConfig),
    /// `kind = "webhook"`: a JSON POST.
    Webhook(WebhookSinkConfig),
}

/// `slack`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// The file holding the incoming-webhook URL (itself a secret).
    pub webhook_file: PathBuf,
}

/// `discord`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// The bot token's file.
    pub token_file: PathBuf,
    /// The channel messages go to.
    pub channel_id: String,
    /// API base override (tests point it at a fake).
    pub base_url: Option<String>,
}

/// `webhook`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSinkConfig {
    /// Where to POST.
    pub url: String,
    /// HMAC secret file.
    pub secret_file: Option<PathBuf>,
    /// Whether to send `X-Airlock-Signature` (body only, replayable) beside
    /// `X-Airlock-Signature-V2`. Default `true` (docs/notifications.md); `false` once the
    /// receiver verifies V2 only.
    #[serde(default = "yes")]
    pub signature_v1: bool,
}

fn yes() -> bool {
    true
}

impl SinkTarget {
    /// The secret files it reads, for `doctor`.
    pub fn credential_files(&self) -> Vec<&Path> {
        match self {
            SinkTarget::Slack(c) => vec![&c.webhook_file],
            SinkTarget::Discord(c) => vec![&c.token_file],
            SinkTarget::Webhook(c) => c.secret_file.iter().map(PathBuf::as_path).collect(),
        }
    }
}

/// The keys every sink has; the kind's own keys are left in `rest`.
#[derive(Debug, Deserialize)]
pub(super) struct RawSink {
    kind: String,
    events: Vec<String>,
    request_timeout: Option<Span>,
    #[serde(flatten)]
    rest: toml::Table,
}

impl SinkConfig {
    /// Checks one `[notify.NAME]` table, resolving paths against `dir`.
    pub(super) fn read(name: &str, raw: RawSink, dir: &Path) -> Result<Self, String> {
        let key = |k: &str| format!("notify.{name}.{k}");
        fn read<T: DeserializeOwned>(
            name: &str,
            kind: &str,
            rest: toml::Table,
        ) -> Result<T, String> {
            T::deserialize(toml::Value::Table(rest)).map_err(|e| {
                super::channel::field_error(&format!("notify.{name}"), &format!("{kind} sink"), &e)
            })
        }
        let resolve = |p: PathBuf| if p.is_relative() { dir.join(p) } else { p };
        let target = match raw.kind.as_str() {
            "slack" => {
                let c: SlackConfig = read(name, "slack", raw.rest)?;
                SinkTarget::Slack(SlackConfig {
                    webhook_file: resolve(c.webhook_file),
                })
            }
            "discord" => {
                let c: DiscordConfig = read(name, "discord", raw.rest)?;
                SinkTarget::Discord(DiscordConfig {
                    token_file: resolve(c.token_file),
                    ..c
                })
            }
            "webhook" => {
                let c: WebhookSinkConfig = read(name, "webhook", raw.rest)?;
                SinkTarget::Webhook(WebhookSinkConfig {
                    secret_file: c.secret_file.map(resolve),
                    ..c
                })
            }
            other => {
                return Err(format!(
                    "{} = {other:?}: expected \"slack\", \"discord\" or \"webhook\"",
                    key("kind")
                ));
            }
        };
        for event in &raw.events {
            if !EVENTS.contains(&event.as_str()) {
                return Err(format!(
                    "{}: unknown event {event:?}; events are {}",
                    key("events"),
                    EVENTS.join(", ")
                ));
            }
        }
        match &target {
            SinkTarget::Discord(c) => {
                if let Some(url) = &c.base_url {
                    airlock_platforms::http::check_base_url(url)
                        .map_err(|e| format!("{}: {e}", key("base_url")))?;
                }
            }
            // One rule and message with a webhook channel's url.
            SinkTarget::Webhook(c) => airlock_platforms::http::check_webhook_url(&c.url)
                .map_err(|e| format!("{}: {e}", key("url")))
                .map(drop)?,
            SinkTarget::Slack(_) => {}
        }
        Ok(SinkConfig {
            name: name.to_owned(),
            events: raw.events,
            request_timeout: raw.request_timeout.unwrap_or(Span::seconds(10)),
            target,
        })
    }
}
