//! `threads`: text, image, video and carousel posts on Threads (Meta), threads of several
//! parts and a first comment, per docs/platforms.md#threads.
//!
//! A part's path through the adapter (each part of a post is published on its own):
//! 1. [`Platform::account`]: `GET /v1.0/me?fields=id,username`; the `username` is what the
//!    channel's configured `account` is compared with.
//! 2. [`Platform::prepare`] (repeatable): reads the containers earlier attempts sent (one
//!    `PUBLISHED` proves the post is out; one that can still be published is published
//!    again instead of making a new one); reads `threads_publishing_limit` and stops with a
//!    retry hint when the rolling 24 h quota is used up; creates a container when none can
//!    be reused (`POST /v1.0/me/threads`: `TEXT` with an optional `link_attachment`,
//!    `IMAGE` with `image_url` and `alt_text`, `VIDEO` with `video_url`, or a `CAROUSEL`
//!    of 2–20 item containers made with `is_carousel_item=true` and polled until
//!    `FINISHED` first); polls it until `FINISHED`. A later part, and the first comment,
//!    carries `reply_to_id=<the part before's media id>` and counts against the reply
//!    quota. The container id (a carousel's parent's) becomes the intent's `platform_ref`.
//! 3. [`Platform::publish`] (irreversible, once): `POST /v1.0/me/threads_publish?creation_id=…`.
//! 4. [`Platform::verify`]: reads the media back with its permalink.
//! 5. [`Platform::reconcile`]: reads the container. `PUBLISHED` proves the part went out;
//!    `EXPIRED` or `ERROR` prove it never can; `FINISHED` proves nothing (the request may
//!    still be processing). When a later part replies to this one, the proof needs the
//!    media id, which the container read does not give: it is found among the account's
//!    threads (part 1) or the replies it owns under the part before, by the text sent.
//!
//! The token travels only in the `Authorization: Bearer` header. This adapter does not use
//! `auto_publish_text` (it would make container creation irreversible and leave nothing
//! to reconcile with), and it does not refresh tokens.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::Value;

use airlock_core::{ChannelKind, ChannelName, Outcome, Span};

use airlock_core::Media;

use crate::graph::{
    ContainerFields, Graph, MediaSearch, Owner, POST_LIMIT, PrepareSteps, REPLY_LIMIT, id_needed,
};
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

/// The most items a Threads carousel takes (and the fewest: 2).
pub const MAX_CAROUSEL_ITEMS: usize = 20;

/// The image types Threads takes.
const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png"];

/// The video types Threads takes (MP4, MOV).
const VIDEO_TYPES: &[&str] = &["video/mp4", "video/quicktime"];

/// A container's parameters.
type Form = Vec<(&'static str, String)>;

/// The containers a part needs: one, or a carousel's items and its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Containers {
    /// The container published (a carousel's parent, without `children`).
    form: Form,
    /// A carousel's items; empty otherwise.
    items: Vec<Form>,
}

impl Containers {
    /// The text the published container carries.
    fn text(&self) -> &str {
        self.form
            .iter()
            .find(|(k, _)| *k == "text")
            .map_or("", |(_, v)| v.as_str())
    }
}

fn rejected(reason: String) -> StepError {
    StepError::Rejected {
        reason,
        credential: false,
    }
}

/// The media id a later part replies to (the part before it); `None` for part 1.
fn reply_to(req: &PublishRequest) -> Result<Option<&str>, StepError> {
    if !req.part.is_later() {
        return Ok(None);
    }
    match req.part.parent() {
        Some(parent) if !parent.platform_post_id.is_empty() => {
            Ok(Some(parent.platform_post_id.as_str()))
        }
        _ => Err(rejected(format!(
            "threads: part {} replies to part {}, whose media id is not known; nothing was sent",
            req.part.number,
            req.part.number - 1
        ))),
    }
}

/// One media item's container parameters: `IMAGE` (JPEG or PNG) or `VIDEO` (by URL),
/// refused before any call when its checked type is one Threads does not take.
fn media_form(req: &PublishRequest, index: usize, media: &Media) -> Result<Form, StepError> {
    let part = req.part.number;
    let which = || {
        format!(
            "part {part}, media item {} ({})",
            index + 1,
            crate::http::truncate(&media.url, 120)
        )
    };
    let mut form = if media.is_video() {
        let found = media.content_type.as_deref().unwrap_or_default();
        if !VIDEO_TYPES.contains(&found) {
            return Err(rejected(format!(
                "threads: {} is {found}; Threads takes MP4 or MOV videos: attach one of those, then requeue",
                which()
            )));
        }
        vec![
            ("media_type", "VIDEO".to_owned()),
            ("video_url", media.url.clone()),
        ]
    } else {
        if let Some(found) = media.content_type.as_deref()
            && !IMAGE_TYPES.contains(&found)
        {
            return Err(rejected(format!(
                "threads: {} is {found}; Threads takes JPEG or PNG images: attach one of those, then requeue",
                which()
            )));
        }
        vec![
            ("media_type", "IMAGE".to_owned()),
            ("image_url", media.url.clone()),
        ]
    };
    if let Some(alt) = media.alt.as_deref().filter(|a| !a.is_empty()) {
        form.push(("alt_text", alt.to_owned()));
    }
    Ok(form)
}

/// The containers for a part: `TEXT` (with the link as a link card), `IMAGE` or `VIDEO`
/// (with the link appended to the text, since link cards are for text posts only), or a
/// `CAROUSEL` of 2 to 20 items. A later part (and the first comment) replies to the part
/// before it (`reply_to_id`).
fn containers(req: &PublishRequest) -> Result<Containers, StepError> {
    let link = req.link.as_deref().filter(|l| !l.is_empty());
    let with_link = || match link {
        Some(link) if !req.text.contains(link) => format!("{}\n{link}", req.text.trim_end()),
        _ => req.text.clone(),
    };
    let (mut form, items) = match req.media.as_slice() {
        [] => {
            let mut form = vec![
                ("media_type", "TEXT".to_owned()),
                ("text", req.text.clone()),
            ];
            if let Some(link) = link {
                form.push(("link_attachment", link.to_owned()));
            }
            (form, Vec::new())
        }
        [media] => {
            let mut form = media_form(req, 0, media)?;
            form.insert(2, ("text", with_link()));
            (form, Vec::new())
        }
        more if more.len() > MAX_CAROUSEL_ITEMS => {
            return Err(rejected(format!(
                "threads: part {} has {} media items; a Threads carousel takes at most {MAX_CAROUSEL_ITEMS}: split them over several parts, then requeue",
                req.part.number,
                more.len()
            )));
        }
        more => {
            let mut items = Vec::with_capacity(more.len());
            for (index, media) in more.iter().enumerate() {
                let mut item = media_form(req, index, media)?;
                item.push(("is_carousel_item", "true".to_owned()));
                items.push(item);
            }
            let mut form = vec![("media_type", "CAROUSEL".to_owned())];
            let text = with_link();
            if !text.is_empty() {
                form.push(("text", text));
            }
            (form, items)
        }
    };
    if let Some(parent) = reply_to(req)? {
        form.push(("reply_to_id", parent.to_owned()));
    }
    Ok(Containers { form, items })
}

/// How to find the part's media id once its container reads `PUBLISHED`, when a later
/// part replies to it: part 1 among the account's threads, a later part among the
/// replies to the part before it that the account owns; matched by the text sent.
fn search(req: &PublishRequest, text: &str) -> Option<MediaSearch> {
    if !id_needed(req) {
        return None;
    }
    let since = MediaSearch::since(req);
    Some(match req.part.parent() {
        Some(parent) => MediaSearch {
            what: format!("the replies to part {}", parent.number),
            segments: vec![parent.platform_post_id.clone(), "replies".into()],
            fields: "id,text,timestamp,permalink,is_reply_owned_by_me",
            text_field: "text",
            text: text.to_owned(),
            owner: Owner::Flag("is_reply_owned_by_me"),
            since,
        },
        None => MediaSearch {
            what: "the account's threads".into(),
            segments: vec!["me".into(), "threads".into()],
            fields: "id,text,timestamp,permalink",
            text_field: "text",
            text: text.to_owned(),
            owner: Owner::Account,
            since,
        },
    })
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

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        let containers = containers(req)?;
        let form: Vec<(&str, &str)> = containers
            .form
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        let items: Vec<Vec<(&str, &str)>> = containers
            .items
            .iter()
            .map(|item| item.iter().map(|(k, v)| (*k, v.as_str())).collect())
            .collect();
        let search = search(req, containers.text());
        // Before the first part of a thread: room for every reply to follow, so the
        // thread is never stopped halfway by a quota airlock could have seen.
        if !req.part.is_later() && req.part.of > 1 {
            self.graph
                .check_publishing_limit(
                    &["me", "threads_publishing_limit"],
                    REPLY_LIMIT,
                    i64::from(req.part.of - 1),
                )
                .await?;
        }
        let steps = PrepareSteps {
            fields: CONTAINER,
            limit: &["me", "threads_publishing_limit"],
            // Later parts and the first comment are replies, with their own quota.
            limit_fields: if req.part.is_later() {
                REPLY_LIMIT
            } else {
                POST_LIMIT
            },
            create: &["me", "threads"],
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
        let Some(container) = prepared.platform_ref.as_deref() else {
            return Outcome::NotSent {
                reason: "threads: no container was prepared; nothing was sent".into(),
                retry_after: None,
            };
        };
        let search = containers(req).ok().and_then(|c| search(req, c.text()));
        self.graph
            .publish(
                &["me", "threads_publish"],
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
        let search = containers(&req.publish)
            .ok()
            .and_then(|c| search(&req.publish, c.text()));
        self.graph
            .container_evidence(req.platform_ref.as_deref(), CONTAINER, search.as_ref())
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

    fn form(containers: &Containers) -> Vec<(&'static str, String)> {
        containers.form.clone()
    }

    #[test]
    fn text_posts_carry_the_link_as_a_card_and_image_posts_in_the_caption() {
        let form = form(&containers(&request(vec![], Some("https://inn.example/a/"))).unwrap());
        assert!(form.contains(&("media_type", "TEXT".into())));
        assert!(form.contains(&("link_attachment", "https://inn.example/a/".into())));

        let image = Media::new("https://inn.example/cat.jpg".into(), Some("a cat".into()));
        let form = super::containers(&request(vec![image], Some("https://inn.example/a/")))
            .unwrap()
            .form;
        assert!(form.contains(&("media_type", "IMAGE".into())));
        assert!(form.contains(&("text", "Cats rest here.\nhttps://inn.example/a/".into())));
        assert!(form.contains(&("alt_text", "a cat".into())));
        assert!(!form.iter().any(|(k, _)| *k == "link_attachment"));
    }

    fn typed(url: &str, content_type: &str) -> Media {
        Media {
            content_type: Some(content_type.into()),
            ..Media::new(url.into(), None)
        }
    }

    #[test]
    fn videos_carousels_and_replies_make_their_containers() {
        let video = containers(&request(
            vec![typed("https://inn.example/cat.mp4", "video/mp4")],
            None,
        ))
        .unwrap();
        assert!(video.form.contains(&("media_type", "VIDEO".into())));
        assert!(
            video
                .form
                .contains(&("video_url", "https://inn.example/cat.mp4".into()))
        );

        let mut req = request(
            vec![
                typed("https://inn.example/a.png", "image/png"),
                typed("https://inn.example/b.mp4", "video/mp4"),
            ],
            None,
        );
        req.part = crate::PartRequest {
            number: 2,
            of: 3,
            comment: false,
            published: vec![crate::PublishedPart {
                number: 1,
                platform_post_id: "111".into(),
                permalink: None,
            }],
        };
        let carousel = containers(&req).unwrap();
        assert!(carousel.form.contains(&("media_type", "CAROUSEL".into())));
        assert!(carousel.form.contains(&("reply_to_id", "111".into())));
        assert_eq!(carousel.items.len(), 2);
        assert!(carousel.items[0].contains(&("media_type", "IMAGE".into())));
        assert!(carousel.items[1].contains(&("media_type", "VIDEO".into())));
        assert!(
            carousel
                .items
                .iter()
                .all(|i| i.contains(&("is_carousel_item", "true".into()))
                    && !i.iter().any(|(k, _)| *k == "reply_to_id"))
        );
        let search = search(&req, carousel.text()).unwrap();
        assert_eq!(search.segments, ["111", "replies"]);

        // Types Threads does not take, and too many items, are refused before any call.
        for media in [
            vec![typed("https://inn.example/cat.gif", "image/gif")],
            vec![typed("https://inn.example/cat.webm", "video/webm")],
            vec![Media::new("https://inn.example/cat.jpg".into(), None); 21],
        ] {
            let err = containers(&request(media, None)).unwrap_err();
            assert!(matches!(err, StepError::Rejected { .. }), "{err:?}");
        }
        // A later part whose parent is unknown cannot reply.
        req.part.published.clear();
        assert!(containers(&req).is_err());
    }
}
