//! `mastodon`: statuses on a Mastodon instance, per docs/platforms.md#mastodon.
//!
//! A post's path through the adapter:
//! 1. [`Platform::account`]: `GET /api/v1/accounts/verify_credentials`; its `acct` is
//!    what the channel's `account` is compared with.
//! 2. [`Platform::prepare`] (repeatable): reads the instance's limits
//!    (`GET /api/v2/instance`: `max_characters`, `characters_reserved_per_url`) and
//!    refuses a text the instance would refuse; chooses the `Idempotency-Key` and records
//!    it with the intent (`platform_ref`); uploads images with their descriptions
//!    (`POST /api/v2/media`, waiting for one that is still processing).
//! 3. [`Platform::publish`] (irreversible, once): `POST /api/v1/statuses` with that
//!    `Idempotency-Key`. The key is derived from the post and its approved content, the
//!    same in every run; an earlier attempt's key is reused while the instance still
//!    keeps it, so a retry cannot make a second status.
//! 4. [`Platform::verify`]: `GET /api/v1/statuses/{id}`.
//! 5. [`Platform::reconcile`]: the instance keeps a key for one hour and answers a repeat
//!    with the status it made the first time, without looking at the body. So an unknown
//!    outcome is settled by sending the same status with the same key again, once no
//!    request with the key can still be processing ([`RESEND_AFTER`] after its *latest*
//!    send, earlier re-sends included) and while the key is surely still kept
//!    ([`KEY_TRUSTED_FOR`] after its *first* send): the answer is the original status if
//!    the first request made one, or the status made now if it did not — either way
//!    exactly one. After that window nothing proves anything, and the post waits for a
//!    person. Keys are per account, so the answered status must be the account the
//!    latest [`Platform::account`] read found; the guarded path reads it right before,
//!    checks the operator's pauses and claims the re-send
//!    ([`Platform::reconcile_sends`], `airlock_app`'s `claim_resend`).
//!
//! **Threads.** Each part of a post is its own status with its own key (the request's
//! key and `earlier` are that part's, so every fence above holds per part): a later part,
//! and the first comment after the last part, is sent with `in_reply_to_id` = the part
//! before it. Once no re-send is due, an unknown outcome of a later part is settled by a
//! read: a reply to the part before it, by the account airlock posts as, with the same
//! text (its source) and as many attachments, in that status's
//! `GET /api/v1/statuses/{id}/context` descendants, is this part; none proves nothing.
//!
//! Mastodon documents the key but not that a repeat racing the first request is
//! refused atomically (mastodon#21840): that is why nothing is re-sent sooner than
//! [`RESEND_AFTER`] after the first send. The token travels only in the
//! `Authorization: Bearer` header.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use airlock_core::policy::url_spans;
use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::http::{
    Answer, Redactor, StatusTable, Wait, check_base_url, describe_transport, endpoint, fetch_media,
    id_string, multipart, send, transport_failure,
};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, EarlierAttempt, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest,
    SettingsError, StepError, Verification,
};

/// How long an instance keeps an `Idempotency-Key` (Mastodon documents one hour).
pub const KEY_KEPT_FOR: Duration = Duration::hours(1);

/// How long after a key's first send airlock relies on the instance still keeping it:
/// the hour, less room for the re-send itself and for clocks that disagree.
pub const KEY_TRUSTED_FOR: Duration = Duration::minutes(50);

/// The least time after a send before its key may be sent again, whatever the timeouts:
/// room for an instance still processing it and for clocks that disagree. A send that may
/// run longer (slow media, a long `request_timeout`) holds its key longer
/// (`busy_until`).
pub const RESEND_AFTER: Duration = Duration::minutes(5);

/// The most images a status carries (Mastodon's default `max_media_attachments`).
pub const MAX_MEDIA: u32 = 4;

/// Requests a re-send makes per image before its status: the download, the upload and
/// the read of media still processing.
const REQUESTS_PER_IMAGE: u32 = 3;

/// The longest `request_timeout` a re-send can work with: the earliest re-send
/// ([`RESEND_AFTER`] after the first send) must have uploaded the most images a status
/// carries and sent its status within the time airlock trusts the instance to keep the
/// key ([`KEY_TRUSTED_FOR`]). Configuration refuses a longer one.
pub fn max_request_timeout() -> StdDuration {
    ((KEY_TRUSTED_FOR - RESEND_AFTER) / (REQUESTS_PER_IMAGE * MAX_MEDIA) as i32)
        .to_std()
        .expect("a positive bound")
}

/// The largest image uploaded (Mastodon's default limit is 16 MB).
pub const MAX_IMAGE_BYTES: usize = 16 * 1024 * 1024;

/// Who may see a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Everyone, in public timelines.
    #[default]
    Public,
    /// Everyone, but not in public timelines.
    Unlisted,
    /// Followers only.
    Private,
    /// Mentioned accounts only.
    Direct,
}

impl Visibility {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Unlisted => "unlisted",
            Visibility::Private => "private",
            Visibility::Direct => "direct",
        }
    }
}

/// How a `mastodon` channel reaches its account. Built from the channel's table
/// ([`MastodonConfig`]).
#[derive(Debug, Clone)]
pub struct MastodonSettings {
    /// The instance (`https://mastodon.social`).
    pub base_url: String,
    /// The access token (scopes `read:accounts write:statuses write:media`).
    pub token: SecretString,
    /// Who may see the statuses.
    pub visibility: Visibility,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
}

impl MastodonSettings {
    /// Settings with the defaults: public statuses, 30 s requests.
    pub fn new(base_url: String, token: SecretString) -> Self {
        MastodonSettings {
            base_url,
            token,
            visibility: Visibility::Public,
            request_timeout: StdDuration::from_secs(30),
        }
    }
}

/// A `mastodon` channel.
#[derive(Debug)]
pub struct Mastodon {
    base_url: String,
    token: SecretString,
    visibility: Visibility,
    client: reqwest::Client,
    timeout: StdDuration,
    redactor: Redactor,
    // Media ids prepare uploaded, by the key the status is sent with. Never held across
    // an await.
    staged: Mutex<HashMap<String, Vec<String>>>,
    // The `acct` the latest identity read found: a reconcile re-send's answer must name
    // it. Never held across an await.
    acct: Mutex<Option<String>>,
}

const CREDENTIAL_HINT: &str = "the access token was refused (revoked, or missing the read:accounts, write:statuses or write:media scope): write a new token to the token file, then resume the channel";

/// An instance answers by the outcome table, reading waits from its rate-limit headers.
const STATUSES: StatusTable = StatusTable {
    credential_hint: Some(CREDENTIAL_HINT),
    step_throttled: Some(THROTTLED),
    publish_throttled: Some(THROTTLED),
    unknown: Some(
        "whether the instance made the status is unknown; sending it again with the same Idempotency-Key within the hour settles it",
    ),
    wait: Wait::RateLimit,
};

const THROTTLED: &str = "the instance limits requests now; nothing was published";

/// The most replies to the part before reconcile reads the source of, looking for a
/// later part's status.
const MAX_REPLIES_READ: usize = 20;

/// Whether `id` can be a status id (it goes into a path).
fn is_status_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The text sent: the post's text, with its link appended when the text lacks it.
fn status_text(req: &PublishRequest) -> String {
    let mut text = req.text.trim_end().to_owned();
    if let Some(link) = req.link.as_deref().filter(|l| !l.trim().is_empty())
        && !text.contains(link)
    {
        text = format!("{text}\n\n{link}");
    }
    text
}

/// The length the instance counts: characters, each URL as `per_url`.
fn instance_length(text: &str, per_url: usize) -> usize {
    let spans = url_spans(text);
    let url_chars: usize = spans
        .iter()
        .map(|(s, e)| text[*s..*e].chars().count())
        .sum();
    text.chars().count() - url_chars + spans.len() * per_url
}

/// The first send of `key` among a post's attempts (an attempt sent it when it recorded
/// it as its `platform_ref`; a reconcile re-send counts too): it bounds how long the
/// instance surely keeps the key. Every attempt counts, `not_sent` ones included (a send
/// that was refused may still have stored it).
fn first_send(attempts: &[EarlierAttempt], key: &str) -> Option<DateTime<Utc>> {
    attempts
        .iter()
        .filter(|a| a.platform_ref.as_deref() == Some(key))
        .map(|a| a.sent_at)
        .min()
}

/// How long after its stamp a send of a post with `media` images may still be processed:
/// its status request leaves at most its uploads later (an intent is recorded right
/// before the status request; a re-send before it downloads, uploads and reads back each
/// image, every request bounded by `timeout`), and the instance may still be working on
/// it [`RESEND_AFTER`] after it left, or for as long as the client waited if that is
/// longer.
fn busy_for(attempt: &EarlierAttempt, media: usize, timeout: StdDuration) -> Duration {
    let uploads = if attempt.resend {
        REQUESTS_PER_IMAGE.saturating_mul(media as u32)
    } else {
        0
    };
    let uploads = Duration::from_std(timeout.saturating_mul(uploads)).unwrap_or(Duration::MAX);
    let processing = Duration::from_std(timeout)
        .unwrap_or(Duration::MAX)
        .max(RESEND_AFTER);
    uploads.checked_add(&processing).unwrap_or(Duration::MAX)
}

/// Until when a send of `key` may still be processed ([`busy_for`]), over every send of
/// it, whatever outcome was recorded for it since.
fn busy_until(
    attempts: &[EarlierAttempt],
    key: &str,
    media: usize,
    timeout: StdDuration,
) -> Option<DateTime<Utc>> {
    attempts
        .iter()
        .filter(|a| a.platform_ref.as_deref() == Some(key))
        .map(|a| a.sent_at + busy_for(a, media, timeout))
        .max()
}

/// When `key` may be sent again at `now` by a send that first uploads `media` images:
/// `Ok(first send)` once no send of it may still be processed ([`busy_until`]) and with
/// time for this send's uploads before [`KEY_TRUSTED_FOR`] after its first —
/// `Err(Some(when))` when it is too soon, `Err(None)` when the key was never sent or may
/// be forgotten before this send's status leaves.
fn resend_window(
    attempts: &[EarlierAttempt],
    key: &str,
    now: DateTime<Utc>,
    media: usize,
    timeout: StdDuration,
) -> Result<DateTime<Utc>, Option<DateTime<Utc>>> {
    let first = first_send(attempts, key).ok_or(None)?;
    let uploads =
        Duration::from_std(timeout.saturating_mul(REQUESTS_PER_IMAGE.saturating_mul(media as u32)))
            .unwrap_or(Duration::MAX);
    if now + uploads >= first + KEY_TRUSTED_FOR {
        return Err(None);
    }
    match busy_until(attempts, key, media, timeout) {
        Some(free) if now < free => Err(Some(free)),
        _ => Ok(first),
    }
}

/// Refuses a `request_timeout` longer than [`max_request_timeout`], naming both.
pub fn check_request_timeout(timeout: StdDuration) -> Result<(), String> {
    let max = max_request_timeout();
    if timeout <= max {
        return Ok(());
    }
    Err(format!(
        "request_timeout = {}s is too long for Mastodon: a re-send with the same Idempotency-Key (up to {MAX_MEDIA} images, each downloaded, uploaded and read back, then the status) must leave within the {} minutes airlock trusts the instance to keep the key, so request_timeout may be at most {}s",
        timeout.as_secs(),
        KEY_TRUSTED_FOR.num_minutes(),
        max.as_secs()
    ))
}

/// The key reconcile would send again now, with its first send: `None` outside the
/// window.
fn resend_due(req: &ReconcileRequest, timeout: StdDuration) -> Option<(String, DateTime<Utc>)> {
    let publish = &req.publish;
    let key = req
        .platform_ref
        .clone()
        .unwrap_or_else(|| publish.idempotency_key.clone());
    let first = resend_window(
        &publish.earlier,
        &key,
        publish.now,
        publish.media.len(),
        timeout,
    )
    .ok()?;
    Some((key, first))
}

impl Mastodon {
    /// An adapter with these settings; refuses a `base_url` that could leak the token.
    /// (Configuration refuses a `request_timeout` a re-send cannot cover:
    /// [`check_request_timeout`].)
    pub fn new(settings: MastodonSettings, client: reqwest::Client) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        Ok(Mastodon {
            base_url,
            redactor: Redactor::new([settings.token.clone()]),
            token: settings.token,
            visibility: settings.visibility,
            client,
            timeout: settings.request_timeout,
            staged: Mutex::new(HashMap::new()),
            acct: Mutex::new(None),
        })
    }

    fn url(&self, segments: &[&str]) -> String {
        let mut path = vec!["api"];
        path.extend_from_slice(segments);
        endpoint(&self.base_url, &path, &[])
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout)
    }

    fn summary(&self, what: &str, answer: &Answer) -> String {
        let body = answer.json().unwrap_or(Value::Null);
        let detail = match body["error"].as_str().map(str::trim) {
            Some(error) if !error.is_empty() => {
                format!(": {}", self.redactor.excerpt(error, 160))
            }
            _ => String::new(),
        };
        self.redactor
            .summary(&format!("mastodon: {what}: HTTP {}{detail}", answer.status))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redactor
            .summary(&format!("mastodon: {what}: {}", describe_transport(err)))
    }

    fn step_error(&self, what: &str, answer: &Answer) -> StepError {
        STATUSES.step_error(answer, self.summary(what, answer))
    }

    async fn get_json(&self, what: &str, segments: &[&str]) -> Result<Value, StepError> {
        let answer = send(self.authorized(self.client.get(self.url(segments))))
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            return Err(self.step_error(what, &answer));
        }
        answer.json().ok_or_else(|| {
            StepError::transient(format!(
                "mastodon: {what}: HTTP {} with an answer that is not JSON",
                answer.status
            ))
        })
    }

    /// Refuses a text longer than the instance allows.
    async fn check_length(&self, text: &str) -> Result<(), StepError> {
        let instance = self.get_json("instance read", &["v2", "instance"]).await?;
        let statuses = &instance["configuration"]["statuses"];
        let max = statuses["max_characters"].as_u64().unwrap_or(500) as usize;
        let per_url = statuses["characters_reserved_per_url"]
            .as_u64()
            .unwrap_or(23) as usize;
        let length = instance_length(text, per_url);
        if length > max {
            return Err(StepError::Rejected {
                reason: format!(
                    "mastodon: the status is {length} characters as the instance counts them (links as {per_url}); the instance allows {max}: shorten it (and set max_chars = {max} for this channel so drafts are checked)"
                ),
                credential: false,
            });
        }
        Ok(())
    }

    /// Uploads the post's images with their descriptions; their media ids.
    async fn upload_media(&self, req: &PublishRequest) -> Result<Vec<String>, StepError> {
        let mut ids = Vec::new();
        for media in &req.media {
            let file = fetch_media(&self.client, "mastodon", media, MAX_IMAGE_BYTES).await?;
            let description = media.alt.clone().unwrap_or_default();
            let (content_type, body) = multipart(&[("description", &description)], ("file", &file));
            let what = "media upload";
            let request = self
                .authorized(self.client.post(self.url(&["v2", "media"])))
                .header("content-type", content_type)
                .body(body);
            let answer = send(request)
                .await
                .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
            if !answer.is_success() {
                return Err(self.step_error(what, &answer));
            }
            let body = answer.json().unwrap_or(Value::Null);
            let id = id_string(body.get("id")).ok_or_else(|| {
                StepError::transient("mastodon: the media upload answered without an id")
            })?;
            // 202: still processing; one read later it must be ready, or the next
            // attempt uploads again (an unused upload is discarded by the instance).
            if answer.status == 202 || body["url"].is_null() {
                let read = self
                    .get_json("media processing read", &["v1", "media", &id])
                    .await?;
                if read["url"].is_null() {
                    return Err(StepError::Transient {
                        reason: format!(
                            "mastodon: media {id} is still being processed; nothing was published"
                        ),
                        retry_after: Some(Duration::seconds(60)),
                    });
                }
            }
            ids.push(id);
        }
        Ok(ids)
    }

    /// `POST /api/v1/statuses` with `key`; the answer.
    async fn send_status(
        &self,
        req: &PublishRequest,
        key: &str,
        media_ids: &[String],
    ) -> reqwest::Result<Answer> {
        let mut body = json!({
            "status": status_text(req),
            "visibility": self.visibility.as_str(),
        });
        if !media_ids.is_empty() {
            body["media_ids"] = json!(media_ids);
        }
        if let Some(parent) = req.part.parent() {
            body["in_reply_to_id"] = json!(parent.platform_post_id);
        }
        let request = self
            .authorized(self.client.post(self.url(&["v1", "statuses"])))
            .header("Idempotency-Key", key)
            .header("content-type", "application/json")
            .body(body.to_string());
        send(request).await
    }

    fn published(answer: &Answer) -> Published {
        let body = answer.json().unwrap_or(Value::Null);
        Published {
            platform_post_id: id_string(body.get("id")),
            permalink: body["url"]
                .as_str()
                .filter(|u| !u.is_empty())
                .map(str::to_owned),
            pause: None,
            existing: None,
        }
    }

    /// A later part's status, found by a read: a reply to the part before it by the
    /// account the token belongs to, with this part's text and as many attachments.
    async fn find_reply(&self, req: &PublishRequest) -> Result<Option<Proof>, StepError> {
        let Some(parent) = req.part.parent() else {
            return Ok(None);
        };
        let parent_id = parent.platform_post_id.as_str();
        if !is_status_id(parent_id) {
            return Ok(None);
        }
        let me = self
            .get_json("identity read", &["v1", "accounts", "verify_credentials"])
            .await?;
        let Some(my_id) = id_string(me.get("id")) else {
            return Ok(None);
        };
        let context = self
            .get_json("thread read", &["v1", "statuses", parent_id, "context"])
            .await?;
        let expected = status_text(req);
        let replies = context["descendants"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let candidates = replies.iter().filter(|status| {
            id_string(status.get("in_reply_to_id")).as_deref() == Some(parent_id)
                && id_string(status["account"].get("id")).as_deref() == Some(my_id.as_str())
                && status["media_attachments"].as_array().map_or(0, Vec::len) == req.media.len()
        });
        for status in candidates.take(MAX_REPLIES_READ) {
            let Some(id) = id_string(status.get("id")).filter(|id| is_status_id(id)) else {
                continue;
            };
            let source = self
                .get_json("status source read", &["v1", "statuses", &id, "source"])
                .await?;
            if source["text"].as_str().map(str::trim) != Some(expected.trim()) {
                continue;
            }
            let permalink = status["url"]
                .as_str()
                .filter(|u| !u.is_empty())
                .map(str::to_owned);
            return Ok(Some(Proof {
                note: format!(
                    "mastodon: status {id} replies to part {} (status {parent_id}) from this account with part {}'s text",
                    parent.number, req.part.number
                ),
                platform_post_id: Some(id),
                permalink,
                attempt: None,
            }));
        }
        Ok(None)
    }

    fn publish_failure(&self, answer: &Answer) -> Outcome {
        STATUSES.outcome(answer, self.summary("create status", answer))
    }
}

#[async_trait]
impl Platform for Mastodon {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Mastodon
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let me = self
            .get_json("identity read", &["v1", "accounts", "verify_credentials"])
            .await?;
        let acct = me["acct"]
            .as_str()
            .or_else(|| me["username"].as_str())
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                StepError::transient("mastodon: verify_credentials answered without an acct")
            })?;
        *self.acct.lock().expect("lock is never poisoned") = Some(acct.to_owned());
        Ok(Some(Account {
            username: acct.to_owned(),
            id: id_string(me.get("id")),
        }))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        if req.part.is_later()
            && !req
                .part
                .parent()
                .is_some_and(|parent| is_status_id(&parent.platform_post_id))
        {
            return Err(StepError::Rejected {
                reason: format!(
                    "mastodon: part {} names no status id of the part before it to reply to; nothing was sent",
                    req.part.number
                ),
                credential: false,
            });
        }
        self.check_length(&status_text(req)).await?;
        // The key: an earlier attempt's, while the instance surely keeps it (a repeat then
        // answers that attempt's status, if it made one), else this content's own.
        let mut key = req.idempotency_key.clone();
        let mut keys: Vec<&str> = Vec::new();
        for attempt in req.earlier.iter().filter(|a| !a.definitely_unpublished) {
            if let Some(k) = attempt.platform_ref.as_deref()
                && !keys.contains(&k)
            {
                keys.push(k);
            }
        }
        for earlier in keys {
            match resend_window(
                &req.earlier,
                earlier,
                req.now,
                req.media.len(),
                self.timeout,
            ) {
                Err(None) => continue,
                Err(Some(from)) => {
                    return Err(StepError::Transient {
                        reason: format!(
                            "mastodon: an earlier attempt sent Idempotency-Key {earlier}; it is sent again at {}, once every request with it can no longer be running",
                            airlock_core::time::format_utc(from)
                        ),
                        retry_after: Some(from - req.now),
                    });
                }
                Ok(_) => {
                    key = earlier.to_owned();
                    break;
                }
            }
        }
        // Whichever key goes, no earlier request with it may still be processed, not even
        // one a person since settled as not published.
        if let Some(free) = busy_until(&req.earlier, &key, req.media.len(), self.timeout)
            && req.now < free
        {
            return Err(StepError::Transient {
                reason: format!(
                    "mastodon: an earlier request with Idempotency-Key {key} may still be processed; it is sent at {}",
                    airlock_core::time::format_utc(free)
                ),
                retry_after: Some(free - req.now),
            });
        }
        let media = self.upload_media(req).await?;
        self.staged
            .lock()
            .expect("lock is never poisoned")
            .insert(key.clone(), media);
        Ok(Prepared::with_ref(key))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let Some(key) = prepared.platform_ref.as_deref().filter(|k| !k.is_empty()) else {
            return Outcome::NotSent {
                reason: "mastodon: no Idempotency-Key was prepared; nothing was sent".into(),
                retry_after: None,
            };
        };
        let media = self
            .staged
            .lock()
            .expect("lock is never poisoned")
            .remove(key)
            .unwrap_or_default();
        match self.send_status(req, key, &media).await {
            Ok(answer) if answer.is_success() => Outcome::Published(Self::published(&answer)),
            Ok(answer) => self.publish_failure(&answer),
            Err(e) => transport_failure(&e).outcome(self.transport_summary("create status", &e)),
        }
    }

    async fn verify(&self, platform_post_id: &str) -> Verification {
        if !is_status_id(platform_post_id) {
            return Verification::Failed {
                reason: format!("mastodon: {platform_post_id:?} is not a status id"),
            };
        }
        match self
            .get_json("read back", &["v1", "statuses", platform_post_id])
            .await
        {
            Ok(status) if id_string(status.get("id")).as_deref() == Some(platform_post_id) => {
                Verification::Verified {
                    permalink: status["url"].as_str().map(str::to_owned),
                }
            }
            Ok(_) => Verification::Failed {
                reason: format!(
                    "mastodon: reading status {platform_post_id} back returned another id"
                ),
            },
            Err(e) => Verification::Failed {
                reason: e.to_string(),
            },
        }
    }

    fn reconcile_sends(&self, req: &ReconcileRequest) -> bool {
        resend_due(req, self.timeout).is_some()
    }

    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        let publish = &req.publish;
        let Some((key, first)) = resend_due(req, self.timeout) else {
            // No re-send now: a later part may still be found among the replies to the
            // part before it.
            return match self.find_reply(publish).await {
                Ok(Some(proof)) => Evidence::Published(proof),
                Ok(None) => Evidence::NoProof,
                Err(e) => {
                    tracing::warn!(reason = %e, "reconcile: mastodon reply search failed");
                    Evidence::NoProof
                }
            };
        };
        let started = std::time::Instant::now();
        let media = match self.upload_media(publish).await {
            Ok(media) => media,
            Err(e) => {
                tracing::warn!(reason = %e, "reconcile: mastodon media upload failed");
                return Evidence::NoProof;
            }
        };
        // The uploads took longer than planned: past the key's trusted hour the instance
        // may have forgotten it, and the status would be a second one.
        let now = publish.now + Duration::from_std(started.elapsed()).unwrap_or(Duration::MAX);
        if now >= first + KEY_TRUSTED_FOR {
            tracing::warn!(%key, "reconcile: the media uploads ran past the hour the instance keeps the key; nothing sent, the post waits for a person");
            return Evidence::NoProof;
        }
        match self.send_status(publish, &key, &media).await {
            Ok(answer) if answer.is_success() => {
                // The status must be the checked account's: a token that belongs to
                // another account makes a status there, which proves nothing about this
                // post (the key is scoped per account).
                let made_by = answer.json().and_then(|b| {
                    b["account"]["acct"]
                        .as_str()
                        .map(|a| a.trim_start_matches('@').to_owned())
                });
                let checked = self.acct.lock().expect("lock is never poisoned").clone();
                if checked.is_none() || made_by.is_none() || made_by != checked {
                    tracing::error!(
                        status_account = ?made_by,
                        checked_account = ?checked,
                        "reconcile: mastodon re-send answered a status of another account than the one checked; the post waits for a person"
                    );
                    return Evidence::Unsettled {
                        note: format!(
                            "mastodon: the re-send with Idempotency-Key {key} was answered by status {} of account {}, not of the checked account {}: it proves nothing about this post; check both accounts",
                            id_string(answer.json().and_then(|b| b.get("id").cloned()).as_ref())
                                .unwrap_or_else(|| "(no id)".into()),
                            made_by.as_deref().unwrap_or("(none named)"),
                            checked.as_deref().unwrap_or("(none checked)")
                        ),
                    };
                }
                let published = Self::published(&answer);
                Evidence::Published(Proof {
                    note: format!(
                        "mastodon: sent again with Idempotency-Key {key} (first sent {}, within the hour the instance keeps keys): it answered status {} — the original when the first request made one",
                        airlock_core::time::format_utc(first),
                        published
                            .platform_post_id
                            .as_deref()
                            .unwrap_or("without an id")
                    ),
                    platform_post_id: published.platform_post_id,
                    permalink: published.permalink,
                    attempt: None,
                })
            }
            Ok(answer) => {
                tracing::warn!(reason = %self.summary("re-send with the same key", &answer), "reconcile: mastodon re-send refused");
                Evidence::NoProof
            }
            Err(e) => {
                tracing::warn!(reason = %self.transport_summary("re-send with the same key", &e), "reconcile: mastodon re-send failed");
                Evidence::NoProof
            }
        }
    }
}

/// `kind = "mastodon"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MastodonConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The `acct` the token must belong to.
    pub account: String,
    /// The instance.
    pub base_url: String,
    /// `public` (default), `unlisted`, `private` or `direct`.
    pub visibility: Option<String>,
}

impl MastodonConfig {
    /// Who may see the statuses; a value Mastodon does not know is refused naming the key.
    pub fn visibility(&self, table: &str) -> Result<Visibility, String> {
        Ok(match self.visibility.as_deref() {
            None | Some("public") => Visibility::Public,
            Some("unlisted") => Visibility::Unlisted,
            Some("private") => Visibility::Private,
            Some("direct") => Visibility::Direct,
            Some(other) => {
                return Err(format!(
                    "{table}.visibility = {other:?} is not a Mastodon visibility: write \"public\", \"unlisted\", \"private\" or \"direct\""
                ));
            }
        })
    }
}

impl KindConfig for MastodonConfig {
    crate::kind::token_keys!(base_url: required);

    fn check(&self, table: &str, common: &Common) -> Result<(), String> {
        self.visibility(table)?;
        check_request_timeout(common.request_timeout.as_std()).map_err(|e| format!("{table}.{e}"))
    }

    fn build(&self, channel: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let settings = MastodonSettings {
            visibility: self.visibility(&format!("channels.{channel}"))?,
            request_timeout: timeout,
            ..MastodonSettings::new(self.base_url.clone(), read_token(&self.token_file)?)
        };
        let mastodon = Mastodon::new(settings, crate::http::client(timeout));
        Ok(Arc::new(mastodon.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instance_counts_links_as_its_reserved_width() {
        let text = format!("Mochi naps https://inn.example/{}", "a".repeat(80));
        assert_eq!(instance_length(&text, 23), 11 + 23);
        assert_eq!(instance_length("猫の宿", 23), 3);
    }

    #[test]
    fn a_key_is_sent_again_after_its_latest_send_and_within_its_first_sends_hour() {
        let at = |m: i64| DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(m);
        let attempt = |generation, key: &str, m| EarlierAttempt {
            generation,
            idempotency_key: "derived".into(),
            platform_ref: Some(key.into()),
            sent_at: at(m),
            definitely_unpublished: false,
            resend: false,
        };
        let attempts = [
            attempt(1, "k1", 10),
            attempt(2, "k2", 20),
            attempt(3, "k1", 30),
        ];
        let short = StdDuration::from_secs(30);
        let window = |key, m| resend_window(&attempts, key, at(m), 0, short);
        assert_eq!(first_send(&attempts, "k1"), Some(at(10)));
        assert_eq!(first_send(&attempts, "k3"), None);
        assert_eq!(window("k1", 32), Err(Some(at(35))));
        assert_eq!(window("k1", 35), Ok(at(10)));
        assert_eq!(window("k1", 60), Err(None));
        assert_eq!(window("k3", 35), Err(None));
    }

    /// A re-send claimed before slow uploads holds its key until its status could have
    /// left and ended, not only five minutes; one whose own uploads could run past the
    /// key's trusted hour is not made.
    #[test]
    fn a_resend_holds_its_key_until_its_uploads_and_status_can_have_ended() {
        let at = |m: i64| DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(m);
        let timeout = StdDuration::from_secs(180);
        let send = |m, resend| EarlierAttempt {
            generation: 1,
            idempotency_key: "k".into(),
            platform_ref: Some("k".into()),
            sent_at: at(m),
            definitely_unpublished: false,
            resend,
        };
        // The intent at 0, a re-send claimed at 10 with one image: three upload requests
        // of 3 min, then its status, which the instance may process for 5 min after.
        let attempts = [send(0, false), send(10, true)];
        assert_eq!(
            resend_window(&attempts, "k", at(16), 1, timeout),
            Err(Some(at(24)))
        );
        assert_eq!(resend_window(&attempts, "k", at(24), 1, timeout), Ok(at(0)));
        // At 42, this send's own uploads (9 min) would end past the trusted 50 minutes.
        assert_eq!(resend_window(&attempts, "k", at(42), 1, timeout), Err(None));
        // The intent's own request: three minutes, and five for the instance after it left.
        assert_eq!(
            resend_window(&[send(0, false)], "k", at(4), 0, timeout),
            Err(Some(at(5)))
        );
    }

    #[test]
    fn a_request_timeout_a_resend_cannot_cover_is_refused_naming_both() {
        assert_eq!(max_request_timeout(), StdDuration::from_secs(225));
        assert!(check_request_timeout(StdDuration::from_secs(225)).is_ok());
        let refused = check_request_timeout(StdDuration::from_secs(360)).unwrap_err();
        assert!(
            refused.contains("360s") && refused.contains("225s"),
            "{refused}"
        );
    }
}
