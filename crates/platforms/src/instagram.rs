//! `instagram`: single-JPEG posts through Instagram's content publishing API, per
//! docs/platforms.md#instagram.
//!
//! A post's path through the adapter:
//! 1. [`Platform::account`]: `GET /{version}/me?fields=user_id,username` (Instagram Login),
//!    or `GET /{version}/{user_id}?fields=id,username` when the channel names its
//!    Instagram user id (Facebook Login, host `graph.facebook.com`). The `username` is what
//!    the channel's `account` is compared with.
//! 2. [`Platform::prepare`] (repeatable): refuses a post without exactly one JPEG image URL
//!    before anything is created (Instagram takes JPEG only); reads the containers earlier
//!    attempts sent (one `PUBLISHED` proves the post is out; one that can still be
//!    published is published again instead of making a new one); reads
//!    `content_publishing_limit` and stops with a retry hint when the rolling 24 h quota is
//!    used up; creates a container when none can be reused (`POST /{version}/{user}/media`
//!    with `image_url`, `caption` and `alt_text`); polls its `status_code` until
//!    `FINISHED`. The container id becomes the intent's `platform_ref`.
//! 3. [`Platform::publish`] (irreversible, once): `POST /{version}/{user}/media_publish?creation_id=…`.
//! 4. [`Platform::verify`]: reads the media back with its permalink.
//! 5. [`Platform::reconcile`]: reads the container's `status_code`. `PUBLISHED` proves the
//!    post went out; `EXPIRED` or `ERROR` that it never can; `FINISHED` proves nothing (the
//!    request may still be processing). It never lists the account's media to guess which
//!    one is ours.
//!
//! The caption is the post's text with its link appended (Instagram shows no link cards).
//! The token travels only in the `Authorization: Bearer` header. Carousels, reels and
//! stories are not supported; tokens are not refreshed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::Value;

use airlock_core::policy::is_jpeg_url;
use airlock_core::{ChannelKind, ChannelName, Outcome, Span};

use crate::graph::{ContainerFields, Graph, PrepareSteps};
use crate::http::{check_base_url, id_string};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, PublishRequest, ReconcileRequest, SettingsError,
    StepError, Verification,
};

/// The Instagram API host for Instagram Login.
pub const DEFAULT_BASE_URL: &str = "https://graph.instagram.com";

/// The Graph API version used unless the channel names another. Versions expire about
/// two years after release, so it is a setting.
pub const DEFAULT_API_VERSION: &str = "v24.0";

const CONTAINER: ContainerFields = ContainerFields {
    query: "id,status_code,status",
    status: "status_code",
    detail: "status",
};

/// How an `instagram` channel reaches its account. Built from the channel's table
/// ([`InstagramConfig`]).
#[derive(Debug, Clone)]
pub struct InstagramSettings {
    /// The API host, without the version (default [`DEFAULT_BASE_URL`]; `https://graph.facebook.com`
    /// for Facebook Login); tests point it at a fake.
    pub base_url: String,
    /// The path version, `vNN.0` (default [`DEFAULT_API_VERSION`]).
    pub api_version: String,
    /// The Instagram professional account's user id. Required with Facebook Login, where
    /// `/me` is the Facebook user; with Instagram Login it is read from `/me` when unset.
    pub user_id: Option<String>,
    /// The access token (`instagram_business_basic` + `instagram_business_content_publish`,
    /// or the Facebook Login equivalents).
    pub token: SecretString,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
    /// Pause between two container status reads.
    pub poll_interval: StdDuration,
    /// How long a new container may stay `IN_PROGRESS` before the attempt is given up
    /// (transiently: nothing was published).
    pub poll_timeout: StdDuration,
}

impl InstagramSettings {
    /// Settings with the defaults: the real host and version, 30 s requests, a status read
    /// every 5 s for at most 5 minutes.
    pub fn new(token: SecretString) -> Self {
        InstagramSettings {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_version: DEFAULT_API_VERSION.to_owned(),
            user_id: None,
            token,
            request_timeout: StdDuration::from_secs(30),
            poll_interval: StdDuration::from_secs(5),
            poll_timeout: StdDuration::from_secs(300),
        }
    }
}

/// An `instagram` channel.
#[derive(Debug)]
pub struct Instagram {
    graph: Graph,
    configured_user_id: Option<String>,
    // The user id the publish paths use, once read from `/me`. A std Mutex: it is never
    // held across an await.
    user_id: Mutex<Option<String>>,
    poll_interval: StdDuration,
    poll_timeout: StdDuration,
}

/// Whether `version` looks like `v24.0`.
fn valid_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let mut parts = rest.split('.');
    let digits =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

impl Instagram {
    /// An adapter with these settings; refuses a `base_url` that could leak the token and
    /// a malformed version or user id.
    pub fn new(
        settings: InstagramSettings,
        client: reqwest::Client,
    ) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        if !valid_version(&settings.api_version) {
            return Err(SettingsError::Invalid {
                setting: "api_version",
                value: settings.api_version,
                problem: "is not a Graph API version: write it like \"v24.0\"",
            });
        }
        if let Some(user_id) = &settings.user_id
            && (user_id.is_empty() || !user_id.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(SettingsError::Invalid {
                setting: "user_id",
                value: user_id.clone(),
                problem: "is not an Instagram user id: it is a number such as 17841400000000000",
            });
        }
        Ok(Instagram {
            graph: Graph::new(
                "instagram",
                base_url,
                settings.api_version,
                settings.token,
                client,
                settings.request_timeout,
            ),
            configured_user_id: settings.user_id.clone(),
            user_id: Mutex::new(settings.user_id),
            poll_interval: settings.poll_interval,
            poll_timeout: settings.poll_timeout,
        })
    }

    /// Reads who the token belongs to, remembering the user id for the publish paths.
    async fn identity(&self) -> Result<Account, StepError> {
        let me = match &self.configured_user_id {
            Some(user_id) => {
                self.graph
                    .get_json("identity read", &[user_id], &[("fields", "id,username")])
                    .await?
            }
            None => {
                self.graph
                    .get_json("identity read", &["me"], &[("fields", "user_id,username")])
                    .await?
            }
        };
        let username = me
            .get("username")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                StepError::transient("instagram: identity read answered without a username")
            })?;
        // Instagram Login answers both `user_id` (the professional account) and `id`; the
        // publish paths take the professional account's id, so `user_id` wins.
        let user_id = self
            .configured_user_id
            .clone()
            .or_else(|| id_string(me.get("user_id")))
            .or_else(|| id_string(me.get("id")))
            .ok_or_else(|| {
                StepError::transient("instagram: identity read answered without a user id")
            })?;
        *self.user_id.lock().expect("lock is never poisoned") = Some(user_id.clone());
        Ok(Account {
            username: username.to_owned(),
            id: Some(user_id),
        })
    }

    async fn user_id(&self) -> Result<String, StepError> {
        let known = self.user_id.lock().expect("lock is never poisoned").clone();
        match known {
            Some(user_id) => Ok(user_id),
            None => Ok(self.identity().await?.id.unwrap_or_default()),
        }
    }
}

/// The caption: the text, with the link appended when the text does not already carry it.
fn caption(req: &PublishRequest) -> String {
    match req.link.as_deref().filter(|l| !l.is_empty()) {
        Some(link) if !req.text.contains(link) => format!("{}\n\n{link}", req.text.trim_end()),
        _ => req.text.clone(),
    }
}

#[async_trait]
impl Platform for Instagram {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Instagram
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        self.identity().await.map(Some)
    }

    #[tracing::instrument(skip_all, fields(post_id = %req.post_id))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        let image = match req.media.as_slice() {
            [image] => image,
            media => {
                return Err(StepError::Rejected {
                    reason: format!(
                        "instagram: the post has {} media items; an Instagram post needs exactly one JPEG image",
                        media.len()
                    ),
                    credential: false,
                });
            }
        };
        // Instagram refuses other formats only after fetching them; refusing here costs no
        // container and says clearly what to change.
        if !is_jpeg_url(&image.url) {
            return Err(StepError::Rejected {
                reason: format!(
                    "instagram: media {:?} is not a JPEG (.jpg/.jpeg); Instagram publishes JPEG only: attach a JPEG, then requeue",
                    crate::http::truncate(&image.url, 120)
                ),
                credential: false,
            });
        }
        let user_id = self.user_id().await?;
        let caption = caption(req);
        let mut form = vec![
            ("image_url", image.url.as_str()),
            ("caption", caption.as_str()),
        ];
        if let Some(alt) = image.alt.as_deref().filter(|a| !a.is_empty()) {
            form.push(("alt_text", alt));
        }
        let steps = PrepareSteps {
            fields: CONTAINER,
            limit: &[&user_id, "content_publishing_limit"],
            create: &[&user_id, "media"],
            form: &form,
            poll_interval: self.poll_interval,
            poll_timeout: self.poll_timeout,
        };
        self.graph.prepare(req, steps).await
    }

    #[tracing::instrument(skip_all, fields(post_id = %req.post_id))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let Some(container) = prepared.platform_ref.as_deref() else {
            return Outcome::NotSent {
                reason: "instagram: no container was prepared; nothing was sent".into(),
                retry_after: None,
            };
        };
        // Known after `prepare`; read again only if this adapter was rebuilt in between.
        let user_id = match self.user_id().await {
            Ok(user_id) => user_id,
            Err(e) => {
                return Outcome::NotSent {
                    reason: format!("{e}; nothing was sent"),
                    retry_after: None,
                };
            }
        };
        self.graph
            .publish(&[&user_id, "media_publish"], container, CONTAINER)
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

/// `kind = "instagram"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstagramConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The account the token must belong to.
    pub account: String,
    /// API host override (`https://graph.facebook.com` for Facebook Login; tests: a fake).
    pub base_url: Option<String>,
    /// Pause between two container status reads.
    #[serde(default = "crate::graph::default_poll_interval")]
    pub poll_interval: Span,
    /// How long a container may take to be processed.
    #[serde(default = "crate::graph::default_poll_timeout")]
    pub poll_timeout: Span,
    /// Graph API version (`vNN.0`).
    pub api_version: Option<String>,
    /// The professional account's user id (Facebook Login).
    pub user_id: Option<String>,
}

impl KindConfig for InstagramConfig {
    crate::kind::token_keys!(base_url: optional);

    fn poll_timeout(&self) -> Option<Span> {
        Some(self.poll_timeout)
    }

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let defaults = InstagramSettings::new(read_token(&self.token_file)?);
        let settings = InstagramSettings {
            base_url: self.base_url.clone().unwrap_or(defaults.base_url.clone()),
            api_version: self
                .api_version
                .clone()
                .unwrap_or(defaults.api_version.clone()),
            user_id: self.user_id.clone(),
            request_timeout: timeout,
            poll_interval: self.poll_interval.as_std(),
            poll_timeout: self.poll_timeout.as_std(),
            ..defaults
        };
        let instagram = Instagram::new(settings, crate::http::client(timeout));
        Ok(Arc::new(instagram.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_look_like_v_major_dot_minor() {
        for good in ["v24.0", "v1.0", "v26.10"] {
            assert!(valid_version(good), "{good}");
        }
        for bad in ["24.0", "v24", "v24.0.1", "v.0", "v24.x", "", "v24.0/../x"] {
            assert!(!valid_version(bad), "{bad}");
        }
    }
}
