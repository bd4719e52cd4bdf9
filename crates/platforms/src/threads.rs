//! `threads`: text and single-image posts on Threads (Meta), per docs/platforms.md#threads.
//!
//! A post's path through the adapter:
//! 1. [`Platform::account`]: `GET /v1.0/me?fields=id,username`; the `username` is what the
//!    channel's configured `account` is compared with.
//! 2. [`Platform::prepare`] (repeatable): reads the containers earlier attempts sent (one
//!    `PUBLISHED` proves the post is out; one that can still be published is published
//!    again instead of making a new one); reads `threads_publishing_limit` and stops with a
//!    retry hint when the rolling 24 h quota is used up; creates a container when none can
//!    be reused (`POST /v1.0/me/threads`: `TEXT` with an optional `link_attachment`, or
//!    `IMAGE` with `image_url` and `alt_text`); polls it until `FINISHED`. The container id
//!    becomes the intent's `platform_ref`.
//! 3. [`Platform::publish`] (irreversible, once): `POST /v1.0/me/threads_publish?creation_id=…`.
//! 4. [`Platform::verify`]: reads the media back with its permalink.
//! 5. [`Platform::reconcile`]: reads the container. `PUBLISHED` proves the post went out;
//!    `EXPIRED` or `ERROR` prove it never can; `FINISHED` proves nothing (the request may
//!    still be processing).
//!
//! The token travels only in the `Authorization: Bearer` header. This adapter does not use
//! `auto_publish_text` (it would make container creation irreversible and leave nothing
//! to reconcile with), carousels, videos or replies, and it does not refresh tokens.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::Value;

use airlock_core::{ChannelKind, ChannelName, Outcome, Span};

use crate::graph::{ContainerFields, Graph, PrepareSteps};
use crate::http::check_base_url;
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, PublishRequest, ReconcileRequest, SettingsError,
    StepError, Verification,
};

/// The Threads API host.
pub const DEFAULT_BASE_URL: &str = "https://graph.threads.net";

/// The only Threads API version.
const VERSION: &str = "v1.0";

const CONTAINER: ContainerFields = ContainerFields {
    query: "id,status,error_message",
    status: "status",
    detail: "error_message",
};

/// How a `threads` channel reaches its profile. Built from the channel's table
/// ([`ThreadsConfig`]).
#[derive(Debug, Clone)]
pub struct ThreadsSettings {
    /// The API host, without the version (default [`DEFAULT_BASE_URL`]); tests point it at a fake.
    pub base_url: String,
    /// The Threads user access token (`threads_basic`, `threads_content_publish`).
    pub token: SecretString,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
    /// Pause between two container status reads.
    pub poll_interval: StdDuration,
    /// How long a new container may stay `IN_PROGRESS` before the attempt is given up
    /// (transiently: nothing was published).
    pub poll_timeout: StdDuration,
}

impl ThreadsSettings {
    /// Settings with the defaults: the real host, 30 s requests, a status read every 5 s
    /// for at most 5 minutes (Meta's advice for the slowest containers).
    pub fn new(token: SecretString) -> Self {
        ThreadsSettings {
            base_url: DEFAULT_BASE_URL.to_owned(),
            token,
            request_timeout: StdDuration::from_secs(30),
            poll_interval: StdDuration::from_secs(5),
            poll_timeout: StdDuration::from_secs(300),
        }
    }
}

/// A `threads` channel.
#[derive(Debug)]
pub struct Threads {
    graph: Graph,
    poll_interval: StdDuration,
    poll_timeout: StdDuration,
}

impl Threads {
    /// An adapter with these settings; refuses a `base_url` that could leak the token.
    pub fn new(settings: ThreadsSettings, client: reqwest::Client) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        Ok(Threads {
            graph: Graph::new(
                "threads",
                base_url,
                VERSION.to_owned(),
                settings.token,
                client,
                settings.request_timeout,
            ),
            poll_interval: settings.poll_interval,
            poll_timeout: settings.poll_timeout,
        })
    }
}

/// The container parameters for a post: `TEXT` (with the link as a link card) or `IMAGE`
/// (with the link appended to the caption, since link cards are for text posts only).
fn container_form(req: &PublishRequest) -> Result<Vec<(&'static str, String)>, StepError> {
    match req.media.as_slice() {
        [] => {
            let mut form = vec![
                ("media_type", "TEXT".to_owned()),
                ("text", req.text.clone()),
            ];
            if let Some(link) = req.link.as_deref().filter(|l| !l.is_empty()) {
                form.push(("link_attachment", link.to_owned()));
            }
            Ok(form)
        }
        [image] => {
            let mut text = req.text.clone();
            if let Some(link) = req.link.as_deref().filter(|l| !l.is_empty())
                && !text.contains(link)
            {
                text = format!("{}\n{link}", text.trim_end());
            }
            let mut form = vec![
                ("media_type", "IMAGE".to_owned()),
                ("image_url", image.url.clone()),
                ("text", text),
            ];
            if let Some(alt) = image.alt.as_deref().filter(|a| !a.is_empty()) {
                form.push(("alt_text", alt.to_owned()));
            }
            Ok(form)
        }
        more => Err(StepError::Rejected {
            reason: format!(
                "threads: the post has {} media items; this channel publishes at most one image per post",
                more.len()
            ),
            credential: false,
        }),
    }
}

#[async_trait]
impl Platform for Threads {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Threads
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let me = self
            .graph
            .get_json("identity read", &["me"], &[("fields", "id,username")])
            .await?;
        let username = me
            .get("username")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                StepError::transient("threads: identity read answered without a username")
            })?;
        Ok(Some(Account {
            username: username.to_owned(),
            id: crate::http::id_string(me.get("id")),
        }))
    }

    #[tracing::instrument(skip_all, fields(post_id = %req.post_id))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        let form = container_form(req)?;
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let steps = PrepareSteps {
            fields: CONTAINER,
            limit: &["me", "threads_publishing_limit"],
            create: &["me", "threads"],
            form: &pairs,
            poll_interval: self.poll_interval,
            poll_timeout: self.poll_timeout,
        };
        self.graph.prepare(req, steps).await
    }

    #[tracing::instrument(skip_all, fields(post_id = %req.post_id))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let Some(container) = prepared.platform_ref.as_deref() else {
            return Outcome::NotSent {
                reason: "threads: no container was prepared; nothing was sent".into(),
                retry_after: None,
            };
        };
        self.graph
            .publish(&["me", "threads_publish"], container, CONTAINER)
            .await
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        self.graph.verify(platform_post_id).await
    }

    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        self.graph
            .container_evidence(req.platform_ref.as_deref(), CONTAINER)
            .await
    }
}

/// `kind = "threads"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadsConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The account the token must belong to.
    pub account: String,
    /// API host override (tests point it at a fake).
    pub base_url: Option<String>,
    /// Pause between two container status reads.
    #[serde(default = "crate::graph::default_poll_interval")]
    pub poll_interval: Span,
    /// How long a container may take to be processed.
    #[serde(default = "crate::graph::default_poll_timeout")]
    pub poll_timeout: Span,
}

impl KindConfig for ThreadsConfig {
    crate::kind::token_keys!(base_url: optional);

    fn poll_timeout(&self) -> Option<Span> {
        Some(self.poll_timeout)
    }

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let defaults = ThreadsSettings::new(read_token(&self.token_file)?);
        let settings = ThreadsSettings {
            base_url: self.base_url.clone().unwrap_or(defaults.base_url.clone()),
            request_timeout: timeout,
            poll_interval: self.poll_interval.as_std(),
            poll_timeout: self.poll_timeout.as_std(),
            ..defaults
        };
        let threads = Threads::new(settings, crate::http::client(timeout));
        Ok(Arc::new(threads.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::{ChannelName, Media, PostId};

    fn request(media: Vec<Media>, link: Option<&str>) -> PublishRequest {
        PublishRequest {
            post_id: PostId(1),
            channel: ChannelName::parse("threads-main").unwrap(),
            title: None,
            text: "Cats rest here.".into(),
            media,
            link: link.map(str::to_owned),
            scheduled_at: chrono::Utc::now(),
            idempotency_key: "k".into(),
            now: chrono::Utc::now(),
            earlier: Vec::new(),
            part: crate::PartRequest::SINGLE,
        }
    }

    #[test]
    fn text_posts_carry_the_link_as_a_card_and_image_posts_in_the_caption() {
        let form = container_form(&request(vec![], Some("https://inn.example/a/"))).unwrap();
        assert!(form.contains(&("media_type", "TEXT".into())));
        assert!(form.contains(&("link_attachment", "https://inn.example/a/".into())));

        let image = Media::new("https://inn.example/cat.jpg".into(), Some("a cat".into()));
        let form = container_form(&request(vec![image], Some("https://inn.example/a/"))).unwrap();
        assert!(form.contains(&("media_type", "IMAGE".into())));
        assert!(form.contains(&("text", "Cats rest here.\nhttps://inn.example/a/".into())));
        assert!(form.contains(&("alt_text", "a cat".into())));
        assert!(!form.iter().any(|(k, _)| *k == "link_attachment"));
    }
}
