//! `instagram`: JPEG, Reels and carousel posts through Instagram's content publishing API,
//! with a first comment, per docs/platforms.md#instagram.
//!
//! A post's path through the adapter (its first comment is part 2, published on its own):
//! 1. [`Platform::account`]: `GET /{version}/me?fields=user_id,username` (Instagram Login),
//!    or `GET /{version}/{user_id}?fields=id,username` when the channel names its
//!    Instagram user id (Facebook Login, host `graph.facebook.com`). The `username` is what
//!    the channel's `account` is compared with.
//! 2. [`Platform::prepare`] (repeatable): refuses a post without media, with more than 10
//!    items, or with an image that is not a JPEG or a video that is not MP4/MOV, before
//!    anything is created; reads the containers earlier
//!    attempts sent (one `PUBLISHED` proves the post is out; one that can still be
//!    published is published again instead of making a new one); reads
//!    `content_publishing_limit` and stops with a retry hint when the rolling 24 h quota is
//!    used up; creates a container when none can be reused (`POST /{version}/{user}/media`
//!    with `image_url`, `caption` and `alt_text`; `media_type=REELS` with `video_url` for
//!    one video; or a `CAROUSEL` parent with `children`, after 2–10 item containers made
//!    with `is_carousel_item=true` and polled until `FINISHED`); polls its `status_code`
//!    until `FINISHED`. The container id (a carousel's parent's) becomes the intent's
//!    `platform_ref`.
//! 3. [`Platform::publish`] (irreversible, once): `POST /{version}/{user}/media_publish?creation_id=…`.
//! 4. [`Platform::verify`]: reads the media back with its permalink.
//! 5. [`Platform::reconcile`]: reads the container's `status_code`. `PUBLISHED` proves the
//!    post went out; `EXPIRED` or `ERROR` that it never can; `FINISHED` proves nothing (the
//!    request may still be processing). Only when a first comment follows does it list the
//!    account's media, to find the published media id the comment goes under (the
//!    container read does not give it), matched by caption and time.
//!
//! The first comment: `POST /{version}/{media-id}/comments?message=…` on part 1's media
//! id, once (there is no container); its answer's `id` is the part's. Its reconcile (and a
//! retry's prepare) lists `GET /{media-id}/comments` and takes the account's comment with
//! the text sent as proof; nothing else proves anything.
//!
//! The caption is the post's text with its link appended (Instagram shows no link cards).
//! The token travels only in the `Authorization: Bearer` header. Stories are not
//! supported; tokens are not refreshed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::Value;

use airlock_core::policy::is_jpeg_url;
use airlock_core::{ChannelKind, ChannelName, Outcome, Span};

use airlock_core::Media;

use crate::graph::{
    ContainerFields, Graph, MediaSearch, Owner, POST_LIMIT, PrepareSteps, id_needed,
};
use crate::http::{check_base_url, id_string};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest, SettingsError,
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
    // The account's username once read, which marks its own comments.
    username: Mutex<Option<String>>,
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
            username: Mutex::new(None),
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
        *self.username.lock().expect("lock is never poisoned") = Some(username.to_owned());
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

    async fn username(&self) -> Result<String, StepError> {
        let known = self
            .username
            .lock()
            .expect("lock is never poisoned")
            .clone();
        match known {
            Some(username) => Ok(username),
            None => Ok(self.identity().await?.username),
        }
    }

    /// How to find the post's media id when a first comment goes under it and no answer
    /// named it: among the account's media, by caption.
    async fn media_search(
        &self,
        req: &PublishRequest,
        caption: &str,
    ) -> Result<Option<MediaSearch>, StepError> {
        if !id_needed(req) {
            return Ok(None);
        }
        Ok(Some(MediaSearch {
            what: "the account's media".into(),
            segments: vec![self.user_id().await?, "media".into()],
            fields: "id,caption,timestamp,permalink",
            text_field: "caption",
            text: caption.to_owned(),
            owner: Owner::Account,
            since: MediaSearch::since(req),
        }))
    }

    /// How to find the first comment: among the comments on part 1's media, the account's
    /// with the text sent.
    async fn comment_search(&self, req: &PublishRequest) -> Result<MediaSearch, StepError> {
        let media_id = commented_media(req)?;
        Ok(MediaSearch {
            what: format!("the comments on media {media_id}"),
            segments: vec![media_id.to_owned(), "comments".into()],
            fields: "id,text,username,timestamp",
            text_field: "text",
            text: req.text.clone(),
            owner: Owner::Username(self.username().await?),
            since: MediaSearch::since(req),
        })
    }

    /// The first comment's repeatable step: when an earlier attempt's comment may have
    /// landed, the account's comment with this text on the media proves it did; while that
    /// attempt's request may still be processing, nothing is sent.
    async fn prepare_comment(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        commented_media(req)?;
        let sent: Vec<_> = req
            .earlier
            .iter()
            .filter(|a| !a.definitely_unpublished)
            .collect();
        let Some(latest) = sent.iter().map(|a| a.sent_at).max() else {
            return Ok(Prepared::default());
        };
        let search = self.comment_search(req).await?;
        if let Some(found) = self.graph.find_media(&search).await? {
            return Ok(Prepared {
                platform_ref: None,
                already_published: Some(Proof {
                    platform_post_id: Some(found.id),
                    permalink: found.permalink,
                    note: found.note,
                    attempt: crate::latest_attempt(&req.earlier, |a| !a.definitely_unpublished),
                }),
            });
        }
        let settled_at = latest + crate::graph::reuse_after();
        if req.now < settled_at {
            return Err(StepError::Transient {
                reason: format!(
                    "instagram: the first comment sent at {} is not among {} yet, and its request may still be processing; it is looked for again before anything is sent",
                    airlock_core::time::format_utc(latest),
                    search.what
                ),
                retry_after: Some(settled_at - req.now),
            });
        }
        Ok(Prepared::default())
    }
}

/// The most items an Instagram carousel takes (and the fewest: 2).
pub const MAX_CAROUSEL_ITEMS: usize = 10;

/// The video types Instagram takes (MP4, MOV).
const VIDEO_TYPES: &[&str] = &["video/mp4", "video/quicktime"];

fn rejected(reason: String) -> StepError {
    StepError::Rejected {
        reason,
        credential: false,
    }
}

/// The media id the first comment goes under: part 1's.
fn commented_media(req: &PublishRequest) -> Result<&str, StepError> {
    match req.part.parent() {
        Some(parent) if !parent.platform_post_id.is_empty() => Ok(&parent.platform_post_id),
        _ => Err(rejected(
            "instagram: the first comment goes under the post, whose media id is not known; nothing was sent".into(),
        )),
    }
}

/// A container's parameters.
type Form = Vec<(&'static str, String)>;

/// One media item's container parameters, refused before any call when Instagram does
/// not take its type: a JPEG (by its checked type, or its URL when unchecked) or an
/// MP4/MOV video (a Reel alone, a `VIDEO` item in a carousel).
fn media_form(media: &Media, index: usize, item: bool) -> Result<Form, StepError> {
    let url = crate::http::truncate(&media.url, 120);
    if media.is_video() {
        let found = media.content_type.as_deref().unwrap_or_default();
        if !VIDEO_TYPES.contains(&found) {
            return Err(rejected(format!(
                "instagram: media item {} ({url:?}) is {found}; Instagram takes MP4 or MOV videos: attach one of those, then requeue",
                index + 1
            )));
        }
        let kind = if item { "VIDEO" } else { "REELS" };
        return Ok(vec![
            ("media_type", kind.to_owned()),
            ("video_url", media.url.clone()),
        ]);
    }
    // Instagram refuses other formats only after fetching them; refusing here costs no
    // container and says clearly what to change.
    let jpeg = match media.content_type.as_deref() {
        Some(found) => found == "image/jpeg",
        None => is_jpeg_url(&media.url),
    };
    if !jpeg {
        return Err(rejected(format!(
            "instagram: media {url:?} is not a JPEG (.jpg/.jpeg); Instagram publishes JPEG only: attach a JPEG, then requeue"
        )));
    }
    let mut form = vec![("image_url", media.url.clone())];
    if let Some(alt) = media.alt.as_deref().filter(|a| !a.is_empty()) {
        form.push(("alt_text", alt.to_owned()));
    }
    Ok(form)
}

/// The containers for the post: one image or Reel with the caption, or a carousel's items
/// and its `CAROUSEL` parent with the caption.
fn containers(req: &PublishRequest) -> Result<(Form, Vec<Form>), StepError> {
    if req.part.is_later() {
        return Err(rejected(format!(
            "instagram: part {} is not a first comment, and an Instagram post has one part; nothing was sent",
            req.part.number
        )));
    }
    let caption = caption(req);
    match req.media.as_slice() {
        [] => Err(rejected(
            "instagram: the post has no media; an Instagram post needs a JPEG image, a video, or a carousel of 2 to 10".into(),
        )),
        [media] => {
            let mut form = media_form(media, 0, false)?;
            form.insert(1, ("caption", caption));
            Ok((form, Vec::new()))
        }
        more if more.len() > MAX_CAROUSEL_ITEMS => Err(rejected(format!(
            "instagram: the post has {} media items; an Instagram carousel takes at most {MAX_CAROUSEL_ITEMS}: remove some, then requeue",
            more.len()
        ))),
        more => {
            let mut items = Vec::with_capacity(more.len());
            for (index, media) in more.iter().enumerate() {
                let mut item = media_form(media, index, true)?;
                item.push(("is_carousel_item", "true".to_owned()));
                items.push(item);
            }
            let form = vec![
                ("media_type", "CAROUSEL".to_owned()),
                ("caption", caption),
            ];
            Ok((form, items))
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

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        if req.part.comment {
            return self.prepare_comment(req).await;
        }
        let (form, items) = containers(req)?;
        let user_id = self.user_id().await?;
        let search = self.media_search(req, &caption(req)).await?;
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let items: Vec<Vec<(&str, &str)>> = items
            .iter()
            .map(|item| item.iter().map(|(k, v)| (*k, v.as_str())).collect())
            .collect();
        let steps = PrepareSteps {
            fields: CONTAINER,
            limit: &[&user_id, "content_publishing_limit"],
            limit_fields: POST_LIMIT,
            create: &[&user_id, "media"],
            form: &form,
            items: &items,
            find: search.as_ref(),
            poll_interval: self.poll_interval,
            poll_timeout: self.poll_timeout,
        };
        self.graph.prepare(req, steps).await
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        if req.part.comment {
            return match commented_media(req) {
                Ok(media_id) => self.graph.comment(&[media_id, "comments"], &req.text).await,
                Err(e) => Outcome::NotSent {
                    reason: e.to_string(),
                    retry_after: None,
                },
            };
        }
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
        // Known too: the user id is.
        let search = self.media_search(req, &caption(req)).await.ok().flatten();
        self.graph
            .publish(
                &[&user_id, "media_publish"],
                container,
                CONTAINER,
                search.as_ref(),
            )
            .await
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        self.graph.verify(platform_post_id).await
    }

    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        let publish = &req.publish;
        if publish.part.comment {
            return match self.comment_search(publish).await {
                Ok(search) => self.graph.listed_evidence(&search).await,
                Err(e) => {
                    tracing::warn!(reason = %e, "reconcile: the comment cannot be looked for");
                    Evidence::NoProof
                }
            };
        }
        let search = match self.media_search(publish, &caption(publish)).await {
            Ok(search) => search,
            Err(e) => {
                tracing::warn!(reason = %e, "reconcile: the account cannot be read");
                return Evidence::NoProof;
            }
        };
        self.graph
            .container_evidence(req.platform_ref.as_deref(), CONTAINER, search.as_ref())
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
