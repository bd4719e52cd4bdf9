//! `linkedin`: posts through LinkedIn's Posts API, per docs/platforms.md#linkedin.
//!
//! A post's path through the adapter:
//! 1. [`Platform::account`]: `GET /v2/userinfo` (OpenID Connect). The account name is the
//!    member's `sub`, the stable id LinkedIn issues per app; display names are neither
//!    unique nor stable, so the channel's `account` is the `sub` (shown by
//!    `airlock doctor --online`).
//! 2. [`Platform::prepare`]: learns the author (`urn:li:person:{sub}`, or the organization
//!    URN the channel names). A post's images are downloaded (each checked against its
//!    approved SHA-256, all before the first upload), then each uploaded through the
//!    Images API (`POST /rest/images?action=initializeUpload` owned by the author, then
//!    `PUT` of the bytes to the `uploadUrl` it answers) and, where the token may read it,
//!    its status read until `AVAILABLE`. The image URNs are the intent's handle
//!    (comma-separated). Every one of these steps is repeatable: a failure is a step error
//!    and no post is made; the next attempt uploads again.
//! 3. [`Platform::publish`] (irreversible, once): `POST /rest/posts` with `LinkedIn-Version`
//!    and `X-Restli-Protocol-Version: 2.0.0`, one image as `content.media` and several as
//!    `content.multiImage`, each with its alt text; the post's URN comes back in
//!    `x-restli-id` and its permalink is `https://www.linkedin.com/feed/update/{urn}/`. A
//!    422 `DUPLICATE_POST` naming an earlier URN means identical text by this author is
//!    already out. It counts as this post's publish only when that post reads back
//!    (`GET /rest/posts/{urn}`, which needs the restricted `r_member_social`) and no other
//!    post of the ledger has that URN (the guarded path checks); otherwise the post fails
//!    as duplicate content, with the URN in its error. A 429
//!    (LinkedIn's unpublished per-member and per-app daily limits) is "not sent", to be
//!    tried after `Retry-After` or, without one, after the limits reset at 00:00 UTC; a
//!    426 `NONEXISTENT_VERSION` is a rejection naming the version to replace.
//!    The post's first comment is its own part, after the post:
//!    `POST /rest/socialActions/{post URN}/comments` with `{actor, object, message}`;
//!    its URN (`$URN`, else `x-restli-id`) is the part's id.
//! 4. [`Platform::verify`]: unsupported. Reading posts back needs the restricted
//!    `r_member_social` scope.
//! 5. [`Platform::reconcile`]: a post has nothing to read, so a person decides. Reconcile
//!    never re-sends a post to provoke `DUPLICATE_POST`: the duplicate window is unknown,
//!    and a re-send outside it would publish twice. A first comment is looked for in the
//!    post's comments (`GET /rest/socialActions/{post URN}/comments`, which needs
//!    `r_member_social` or `r_organization_social`): one by the author with its text
//!    proves it; none, or no permission to read, proves nothing.
//!
//! The commentary is the post's text (with its link appended when the text does not carry
//! it) escaped for LinkedIn's "little" text format, so reserved characters appear as typed
//! instead of being read as markup (an unescaped one can silently cut the post short). A
//! comment's text is plain text, sent as typed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use airlock_core::{ChannelKind, ChannelName, Outcome, Published};

use crate::http::{
    Answer, MediaFile, Redactor, StatusTable, check_base_url, describe_transport, endpoint,
    fetch_media, id_string, retry_after, send, transport_failure,
};
use crate::kind::{Common, KindConfig, read_token};
use crate::{
    Account, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest, SettingsError,
    StepError, Verification,
};

/// The LinkedIn API host.
pub const DEFAULT_BASE_URL: &str = "https://api.linkedin.com";

/// The `LinkedIn-Version` used unless the channel names another. Versions stay active for
/// about a year, so it is a setting.
pub const DEFAULT_VERSION: &str = "202609";

/// The most images on one post: a multi-image post takes 2 to 20.
pub const MAX_IMAGES: usize = 20;

/// The largest image airlock downloads to upload. LinkedIn documents no byte limit of its
/// own; this bounds what is held in memory, and LinkedIn refuses what it will not take.
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// How many times an uploaded image's status is read while LinkedIn processes it.
pub const IMAGE_STATUS_READS: u32 = 2;

/// How long between two reads of an image's status.
pub const IMAGE_STATUS_INTERVAL: StdDuration = StdDuration::from_secs(1);

/// How many of a post's comments reconcile reads.
pub const COMMENTS_PAGE: u32 = 100;

/// How a `linkedin` channel reaches its member. Built from the channel's table
/// ([`LinkedinConfig`]).
#[derive(Debug, Clone)]
pub struct LinkedinSettings {
    /// The API host (default [`DEFAULT_BASE_URL`]); tests point it at a fake.
    pub base_url: String,
    /// The member access token (`openid profile w_member_social`, plus
    /// `w_organization_social` to post as an organization).
    pub token: SecretString,
    /// The `LinkedIn-Version` header, `YYYYMM` (default [`DEFAULT_VERSION`]).
    pub version: String,
    /// Post as this organization (`urn:li:organization:…`) instead of as the member.
    pub author: Option<String>,
    /// Bound on each request, the irreversible one included.
    pub request_timeout: StdDuration,
}

impl LinkedinSettings {
    /// Settings with the defaults: the real host, [`DEFAULT_VERSION`], the member as author,
    /// 30 s requests.
    pub fn new(token: SecretString) -> Self {
        LinkedinSettings {
            base_url: DEFAULT_BASE_URL.to_owned(),
            token,
            version: DEFAULT_VERSION.to_owned(),
            author: None,
            request_timeout: StdDuration::from_secs(30),
        }
    }
}

/// A `linkedin` channel.
#[derive(Debug)]
pub struct Linkedin {
    base_url: String,
    token: SecretString,
    version: String,
    author: Option<String>,
    client: reqwest::Client,
    timeout: StdDuration,
    redactor: Redactor,
    // The member's `sub`, once read. Never held across an await.
    sub: Mutex<Option<String>>,
    // LinkedIn refused to show an image's status (members may not read it): not asked
    // again in this process. Never held across an await.
    image_status_unreadable: Mutex<bool>,
}

const CREDENTIAL_HINT: &str = "the token was refused (invalid, expired, revoked or missing a scope): replace the token file, then resume the channel";

/// LinkedIn answers by the outcome table, with its credential hint; its 429 is its own
/// (a daily limit, reset at midnight UTC: [`throttle_retry`]).
const STATUSES: StatusTable = StatusTable {
    credential_hint: Some(CREDENTIAL_HINT),
    ..StatusTable::PLAIN
};

/// Escapes text for the "little" text format: each reserved character gets a backslash.
pub fn escape_little_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '|' | '{'
                | '}'
                | '@'
                | '['
                | ']'
                | '('
                | ')'
                | '<'
                | '>'
                | '#'
                | '\\'
                | '*'
                | '_'
                | '~'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The permalink of a post URN.
pub fn permalink(urn: &str) -> String {
    format!("https://www.linkedin.com/feed/update/{urn}/")
}

/// The permalink of a comment on the post `post`.
pub fn comment_permalink(post: &str, comment: &str) -> String {
    if !comment.starts_with("urn:li:comment:") {
        return permalink(post);
    }
    format!("{}?commentUrn={}", permalink(post), encoded(comment))
}

/// A URN percent-encoded for a path segment or query value (`:` `(` `,` `)` included).
fn encoded(urn: &str) -> String {
    url::form_urlencoded::byte_serialize(urn.as_bytes()).collect()
}

/// The image URNs a prepare recorded (`Prepared::platform_ref`).
fn image_urns(prepared: &Prepared) -> Vec<String> {
    prepared
        .platform_ref
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|urn| urn.starts_with("urn:li:image:"))
        .map(str::to_owned)
        .collect()
}

/// The `content` of a post with these images (URN and alt text): one is `media`,
/// several are `multiImage`.
fn image_content(images: &[(String, Option<String>)]) -> Value {
    let item = |(urn, alt): &(String, Option<String>)| {
        let mut item = json!({"id": urn});
        if let Some(alt) = alt.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            item["altText"] = json!(alt);
        }
        item
    };
    match images {
        [one] => json!({"media": item(one)}),
        several => json!({"multiImage": {"images": several.iter().map(item).collect::<Vec<_>>()}}),
    }
}

/// A comment's URN in LinkedIn's answer to its creation: the body's `$URN`, else the
/// `x-restli-id` header, else the body's `id`.
fn comment_urn(answer: &Answer) -> Option<String> {
    let body = answer.json().unwrap_or(Value::Null);
    body["$URN"]
        .as_str()
        .map(str::trim)
        .filter(|u| u.starts_with("urn:li:"))
        .map(str::to_owned)
        .or_else(|| {
            answer
                .headers
                .get("x-restli-id")
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .map(|id| {
                    // Rest.li may answer the key URL-encoded.
                    url::form_urlencoded::parse(format!("k={id}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_else(|| id.to_owned())
                })
        })
        .or_else(|| id_string(body.get("id")))
}

/// The first `urn:li:<type>:<id>` in a message (the earlier post a `DUPLICATE_POST` names).
fn find_urn(message: &str) -> Option<String> {
    let start = message.find("urn:li:")?;
    let urn: String = message[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '-'))
        .collect();
    let mut parts = urn.splitn(4, ':');
    let (_, _, kind, id) = (parts.next(), parts.next(), parts.next()?, parts.next()?);
    (!kind.is_empty() && !id.is_empty()).then_some(urn)
}

/// When to try again after a 429: `Retry-After` if given, else the next 00:00 UTC, when
/// LinkedIn's per-member and per-app daily limits reset.
fn throttle_retry(answer: &Answer, now: DateTime<Utc>) -> Option<Duration> {
    retry_after(&answer.headers).or_else(|| {
        let midnight = (now.date_naive() + Duration::days(1)).and_hms_opt(0, 0, 0)?;
        Some(midnight.and_utc() - now)
    })
}

/// Whether an answer is LinkedIn's duplicate-content refusal.
fn is_duplicate(body: &Value) -> bool {
    let input_errors = body["errorDetails"]["inputErrors"].as_array();
    input_errors.is_some_and(|errors| {
        errors
            .iter()
            .any(|e| e["code"].as_str() == Some("DUPLICATE_POST"))
    }) || body["code"].as_str() == Some("DUPLICATE_POST")
}

impl Linkedin {
    /// An adapter with these settings; refuses a `base_url` that could leak the token, a
    /// malformed version and an author that is not a person or organization URN.
    pub fn new(settings: LinkedinSettings, client: reqwest::Client) -> Result<Self, SettingsError> {
        let base_url = check_base_url(&settings.base_url)?;
        let version = settings.version.trim().to_owned();
        if version.len() < 6 || !version.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(SettingsError::Invalid {
                setting: "version",
                value: version,
                problem: "is not a LinkedIn-Version: write it as YYYYMM, e.g. \"202609\"",
            });
        }
        if let Some(author) = &settings.author
            && !(author.starts_with("urn:li:organization:") || author.starts_with("urn:li:person:"))
        {
            return Err(SettingsError::Invalid {
                setting: "author",
                value: author.clone(),
                problem: "is not a LinkedIn author URN: write urn:li:organization:<id> (or leave it out to post as the member)",
            });
        }
        Ok(Linkedin {
            base_url,
            redactor: Redactor::new([settings.token.clone()]),
            token: settings.token,
            version,
            author: settings.author,
            client,
            timeout: settings.request_timeout,
            sub: Mutex::new(None),
            image_status_unreadable: Mutex::new(false),
        })
    }

    fn summary(&self, what: &str, answer: &Answer) -> String {
        let body = answer.json().unwrap_or(Value::Null);
        let code = body["code"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| body["serviceErrorCode"].as_i64().map(|c| c.to_string()));
        let message = body["message"].as_str().map(str::trim).unwrap_or("");
        let detail = match (code, message) {
            (Some(code), "") => format!(", {code}"),
            (Some(code), message) => format!(", {code}: {}", self.redactor.excerpt(message, 160)),
            (None, "") => String::new(),
            (None, message) => format!(": {}", self.redactor.excerpt(message, 160)),
        };
        self.redactor
            .summary(&format!("linkedin: {what}: HTTP {}{detail}", answer.status))
    }

    fn transport_summary(&self, what: &str, err: &reqwest::Error) -> String {
        self.redactor
            .summary(&format!("linkedin: {what}: {}", describe_transport(err)))
    }

    /// Who the token belongs to; remembers the `sub` for the author URN.
    async fn userinfo(&self) -> Result<String, StepError> {
        let what = "identity read";
        let request = self
            .client
            .get(endpoint(&self.base_url, &["v2", "userinfo"], &[]))
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout);
        let answer = send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))?;
        if !answer.is_success() {
            let reason = self.summary(what, &answer);
            return Err(match answer.status {
                429 => StepError::Transient {
                    reason,
                    retry_after: throttle_retry(&answer, Utc::now()),
                },
                _ => STATUSES.step_error(&answer, reason),
            });
        }
        let sub = answer
            .json()
            .and_then(|v| v["sub"].as_str().map(str::trim).map(str::to_owned))
            .filter(|s| !s.is_empty())
            .ok_or_else(|| StepError::transient("linkedin: userinfo answered without a sub"))?;
        *self.sub.lock().expect("lock is never poisoned") = Some(sub.clone());
        Ok(sub)
    }

    async fn author(&self) -> Result<String, StepError> {
        if let Some(author) = &self.author {
            return Ok(author.clone());
        }
        let known = self.sub.lock().expect("lock is never poisoned").clone();
        let sub = match known {
            Some(sub) => sub,
            None => self.userinfo().await?,
        };
        Ok(format!("urn:li:person:{sub}"))
    }

    /// LinkedIn refused the text as a duplicate of an earlier post by this author. That
    /// post is this one's publish only if it reads back as the member's; otherwise nothing
    /// proves it is ours (it may be another post with the same text), and the post fails.
    async fn duplicate(&self, answer: &Answer) -> Outcome {
        let reason = self.summary("create post", answer);
        let urn = answer
            .json()
            .and_then(|body| body["message"].as_str().and_then(find_urn));
        let Some(urn) = urn else {
            return Outcome::Rejected {
                reason: format!(
                    "{reason}: LinkedIn refused the text as a duplicate without naming the earlier post; nothing new was published"
                ),
                credential: false,
            };
        };
        match self.read_post(&urn).await {
            Ok(()) => {
                tracing::warn!(
                    urn,
                    "linkedin: DUPLICATE_POST naming a post that reads back"
                );
                Outcome::Published(Published {
                    permalink: Some(permalink(&urn)),
                    pause: None,
                    existing: Some(format!(
                        "linkedin: the text duplicates {urn}, which reads back as this member's post"
                    )),
                    platform_post_id: Some(urn),
                })
            }
            Err(why) => Outcome::Rejected {
                reason: format!(
                    "linkedin: duplicate content: LinkedIn refused the text as a duplicate of {urn} ({}), which cannot be read back ({why}) to show it is this post; nothing new was published; check it and settle the post by hand",
                    permalink(&urn)
                ),
                credential: false,
            },
        }
    }

    /// Reads a post back by URN (`GET /rest/posts/{urn}`) and checks it is this channel's
    /// author's; why not, when it cannot.
    async fn read_post(&self, urn: &str) -> Result<(), String> {
        let author = self.author().await.map_err(|e| e.to_string())?;
        let encoded: String = url::form_urlencoded::byte_serialize(urn.as_bytes()).collect();
        let request = self
            .client
            .get(format!("{}/rest/posts/{encoded}", self.base_url))
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout)
            .header("LinkedIn-Version", &self.version)
            .header("X-Restli-Protocol-Version", "2.0.0");
        match send(request).await {
            Ok(answer) if answer.is_success() => {
                let found = answer
                    .json()
                    .and_then(|post| post["author"].as_str().map(str::to_owned));
                match found {
                    Some(found) if found == author => Ok(()),
                    Some(found) => Err(format!("it was posted by {found}, not {author}")),
                    None => Err("the read names no author".to_owned()),
                }
            }
            Ok(answer) => Err(format!("HTTP {}", answer.status)),
            Err(e) => Err(describe_transport(&e)),
        }
    }

    /// A request to LinkedIn's versioned API: the token, the timeout and both headers.
    fn rest(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout)
            .header("LinkedIn-Version", &self.version)
            .header("X-Restli-Protocol-Version", "2.0.0")
    }

    /// The step error of a non-2xx answer to a repeatable step.
    fn step_failure(&self, what: &str, answer: &Answer) -> StepError {
        let reason = self.summary(what, answer);
        match answer.status {
            429 => StepError::Transient {
                reason: format!(
                    "{reason}: LinkedIn's daily limit is reached; nothing was published"
                ),
                retry_after: throttle_retry(answer, Utc::now()),
            },
            426 => StepError::Rejected {
                reason: format!(
                    "{reason}: LinkedIn-Version {} is no longer active; set a current version (YYYYMM) in the channel",
                    self.version
                ),
                credential: false,
            },
            _ => STATUSES.step_error(answer, reason),
        }
    }

    /// A repeatable request; its answer, or a transient error when none came.
    async fn step(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, StepError> {
        send(request)
            .await
            .map_err(|e| StepError::transient(self.transport_summary(what, &e)))
    }

    /// Whether the token may be sent to an upload URL LinkedIn answered: an address on
    /// the API's own host or under `linkedin.com`, by https (or http to a loopback host,
    /// for tests).
    fn trusted_upload_url(&self, url: &reqwest::Url) -> bool {
        let Ok(base) = reqwest::Url::parse(&self.base_url) else {
            return false;
        };
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let same = url.origin() == base.origin();
        let linkedin =
            url.scheme() == "https" && (host == "linkedin.com" || host.ends_with(".linkedin.com"));
        (same || linkedin) && url.username().is_empty() && url.password().is_none()
    }

    /// Downloads the post's images (each checked against its approved SHA-256, all before
    /// the first upload), uploads each through the Images API, and waits for LinkedIn to
    /// process them where it lets the token see. Their URNs, in order.
    async fn upload_images(
        &self,
        req: &PublishRequest,
        author: &str,
    ) -> Result<Vec<String>, StepError> {
        let mut files: Vec<MediaFile> = Vec::with_capacity(req.media.len());
        for media in &req.media {
            files.push(fetch_media(&self.client, "linkedin", media, MAX_IMAGE_BYTES).await?);
        }
        let mut urns = Vec::with_capacity(files.len());
        for (n, file) in files.iter().enumerate() {
            let of = format!("({} of {})", n + 1, files.len());
            let what = format!("image upload start {of}");
            let request = self
                .rest(self.client.post(endpoint(
                    &self.base_url,
                    &["rest", "images"],
                    &[("action", "initializeUpload")],
                )))
                .header("content-type", "application/json")
                .body(json!({"initializeUploadRequest": {"owner": author}}).to_string());
            let answer = self.step(&what, request).await?;
            if !answer.is_success() {
                return Err(self.step_failure(&what, &answer));
            }
            let value = answer.json().unwrap_or(Value::Null)["value"].clone();
            let (Some(upload_url), Some(urn)) = (
                value["uploadUrl"].as_str(),
                value["image"]
                    .as_str()
                    .filter(|urn| urn.starts_with("urn:li:image:")),
            ) else {
                return Err(StepError::transient(format!(
                    "linkedin: {what}: HTTP {} without an uploadUrl and image URN; nothing was published",
                    answer.status
                )));
            };
            let Ok(upload_url) = reqwest::Url::parse(upload_url) else {
                return Err(StepError::transient(format!(
                    "linkedin: {what}: the uploadUrl is not a URL; nothing was published"
                )));
            };
            let what = format!("image upload {of}");
            let mut put = self
                .client
                .put(upload_url.clone())
                .timeout(self.timeout)
                .header("content-type", &file.mime)
                .body(file.bytes.clone());
            if self.trusted_upload_url(&upload_url) {
                put = put.bearer_auth(self.token.expose_secret());
            } else if !crate::http::is_fetchable(&upload_url) {
                return Err(StepError::transient(format!(
                    "linkedin: {what}: the uploadUrl is not https; nothing was published"
                )));
            }
            let answer = self.step(&what, put).await?;
            if answer.status == 401 {
                return Err(self.step_failure(&what, &answer));
            }
            if !answer.is_success() {
                // A new upload gets a new URL: this one may have expired.
                return Err(StepError::transient(format!(
                    "{}: the upload URL refused the bytes (it may have expired); nothing was published; the next attempt uploads again",
                    self.summary(&what, &answer)
                )));
            }
            urns.push(urn.to_owned());
        }
        for urn in &urns {
            self.wait_for_image(urn).await?;
        }
        Ok(urns)
    }

    /// Reads an uploaded image's status until LinkedIn says it is `AVAILABLE`, at most
    /// [`IMAGE_STATUS_READS`] times. A token that may not read it (a member's) proceeds:
    /// LinkedIn processes images in moments.
    async fn wait_for_image(&self, urn: &str) -> Result<(), StepError> {
        for read in 1..=IMAGE_STATUS_READS {
            if *self
                .image_status_unreadable
                .lock()
                .expect("lock is never poisoned")
            {
                return Ok(());
            }
            let what = "image status read";
            let request = self.rest(self.client.get(format!(
                "{}/rest/images/{}",
                self.base_url,
                encoded(urn)
            )));
            let answer = self.step(what, request).await?;
            if matches!(answer.status, 403 | 404) {
                *self
                    .image_status_unreadable
                    .lock()
                    .expect("lock is never poisoned") = true;
                return Ok(());
            }
            if !answer.is_success() {
                return Err(self.step_failure(what, &answer));
            }
            let body = answer.json().unwrap_or(Value::Null);
            match body["status"].as_str().unwrap_or("") {
                "AVAILABLE" => return Ok(()),
                "PROCESSING_FAILED" => {
                    return Err(StepError::Rejected {
                        reason: format!(
                            "linkedin: image {urn} could not be processed by LinkedIn ({}); nothing was published; use another image",
                            body["processingFailureReason"]
                                .as_str()
                                .unwrap_or("no reason given")
                        ),
                        credential: false,
                    });
                }
                _ if read < IMAGE_STATUS_READS => tokio::time::sleep(IMAGE_STATUS_INTERVAL).await,
                status => {
                    return Err(StepError::Transient {
                        reason: format!(
                            "linkedin: image {urn} is still {status:?} after {IMAGE_STATUS_READS} reads; nothing was published"
                        ),
                        retry_after: Some(Duration::seconds(60)),
                    });
                }
            }
        }
        Ok(())
    }

    /// The author's comment on the post with this part's text, in one read of the post's
    /// comments. `None` when the page shows none, or the token may not read comments.
    async fn find_comment(&self, req: &PublishRequest) -> Result<Option<Proof>, StepError> {
        let Some(post) = req.part.parent() else {
            return Ok(None);
        };
        let author = self.author().await?;
        let what = "comments read";
        let page = COMMENTS_PAGE.to_string();
        let url = endpoint(
            &format!(
                "{}/rest/socialActions/{}/comments",
                self.base_url,
                encoded(&post.platform_post_id)
            ),
            &[],
            &[("start", "0"), ("count", &page)],
        );
        let answer = self.step(what, self.rest(self.client.get(url))).await?;
        if answer.status == 403 {
            tracing::info!(
                "linkedin: the token may not read comments (r_member_social or r_organization_social): nothing proves the comment either way"
            );
            return Ok(None);
        }
        if !answer.is_success() {
            return Err(self.step_failure(what, &answer));
        }
        let wanted = req.text.trim();
        let body = answer.json().unwrap_or(Value::Null);
        let found = body["elements"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["actor"].as_str() == Some(author.as_str()))
            .filter(|c| c["message"]["text"].as_str().map(str::trim) == Some(wanted))
            .min_by_key(|c| c["created"]["time"].as_i64().unwrap_or(i64::MAX));
        Ok(found.and_then(|comment| {
            let urn = comment["$URN"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| id_string(comment.get("id")))?;
            Some(Proof {
                permalink: Some(comment_permalink(&post.platform_post_id, &urn)),
                note: format!(
                    "linkedin: {author}'s comment {urn} on {} has the first comment's text",
                    post.platform_post_id
                ),
                platform_post_id: Some(urn),
                attempt: None,
            })
        }))
    }

    /// The post's first comment: `POST /rest/socialActions/{post}/comments`.
    async fn publish_comment(&self, req: &PublishRequest) -> Outcome {
        let author = match self.author().await {
            Ok(author) => author,
            Err(e) => {
                return Outcome::NotSent {
                    reason: format!("{e}; nothing was sent"),
                    retry_after: None,
                };
            }
        };
        let Some(post) = req.part.parent() else {
            return Outcome::NotSent {
                reason:
                    "linkedin: the first comment has no published post to go on; nothing was sent"
                        .into(),
                retry_after: None,
            };
        };
        let post = post.platform_post_id.as_str();
        let body = json!({
            "actor": author,
            "object": post,
            "message": {"text": req.text.trim_end()},
        });
        let request = self
            .rest(self.client.post(format!(
                "{}/rest/socialActions/{}/comments",
                self.base_url,
                encoded(post)
            )))
            .header("content-type", "application/json")
            .body(body.to_string());
        let what = "create comment";
        let answer = match send(request).await {
            Ok(answer) => answer,
            Err(e) => {
                return transport_failure(&e).outcome(self.transport_summary(what, &e));
            }
        };
        if answer.is_success() {
            let urn = comment_urn(&answer);
            return Outcome::Published(Published {
                permalink: Some(
                    urn.as_deref()
                        .map(|urn| comment_permalink(post, urn))
                        .unwrap_or_else(|| permalink(post)),
                ),
                platform_post_id: urn,
                pause: None,
                existing: None,
            });
        }
        let reason = self.summary(what, &answer);
        match answer.status {
            429 => Outcome::NotSent {
                reason: format!(
                    "{reason}: LinkedIn's daily limit is reached; nothing was published"
                ),
                retry_after: throttle_retry(&answer, Utc::now()),
            },
            _ => STATUSES.outcome(&answer, reason),
        }
    }

    /// A non-2xx answer to the create call.
    fn publish_failure(&self, answer: &Answer) -> Outcome {
        let reason = self.summary("create post", answer);
        match answer.status {
            426 => Outcome::Rejected {
                reason: format!(
                    "{reason}: LinkedIn-Version {} is no longer active; set a current version (YYYYMM) in the channel",
                    self.version
                ),
                credential: false,
            },
            429 => Outcome::NotSent {
                reason: format!(
                    "{reason}: LinkedIn's daily limit is reached; nothing was published"
                ),
                retry_after: throttle_retry(answer, Utc::now()),
            },
            _ => STATUSES.outcome(answer, reason),
        }
    }
}

#[async_trait]
impl Platform for Linkedin {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Linkedin
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        let sub = self.userinfo().await?;
        Ok(Some(Account {
            username: sub.clone(),
            id: Some(format!("urn:li:person:{sub}")),
        }))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn prepare(&self, req: &PublishRequest) -> Result<Prepared, StepError> {
        let refuse = |reason: String| {
            Err(StepError::Rejected {
                reason,
                credential: false,
            })
        };
        if req.part.comment {
            if !req.media.is_empty() {
                return refuse(
                    "linkedin: a first comment carries text only; move its media to the post"
                        .into(),
                );
            }
            if req.part.parent().is_none() {
                return refuse(
                    "linkedin: the first comment goes on the post, and no published post is recorded; nothing was sent".into(),
                );
            }
            self.author().await?;
            // An earlier attempt of this comment may have gone out: the post's comments
            // show it if so (and if the token may read them), and then nothing is sent.
            if req.earlier.iter().any(|a| !a.definitely_unpublished)
                && let Some(proof) = self.find_comment(req).await?
            {
                return Ok(Prepared {
                    platform_ref: None,
                    already_published: Some(Proof {
                        attempt: crate::latest_attempt(&req.earlier, |a| !a.definitely_unpublished),
                        ..proof
                    }),
                });
            }
            return Ok(Prepared::default());
        }
        if req.part.is_later() {
            return refuse(format!(
                "linkedin: a post is one part (and a first comment); part {} cannot be published",
                req.part.number
            ));
        }
        if req.media.len() > MAX_IMAGES {
            return refuse(format!(
                "linkedin: a post takes at most {MAX_IMAGES} images and this one has {}",
                req.media.len()
            ));
        }
        if let Some(other) = req.media.iter().find(|m| {
            m.content_type
                .as_deref()
                .is_some_and(|t| !t.starts_with("image/"))
        }) {
            return refuse(format!(
                "linkedin: this channel posts images only, and {} is {}; remove it",
                crate::http::without_secrets(&other.url),
                other.content_type.as_deref().unwrap_or("not an image")
            ));
        }
        let author = self.author().await?;
        if req.media.is_empty() {
            return Ok(Prepared::default());
        }
        let urns = self.upload_images(req, &author).await?;
        Ok(Prepared::with_ref(urns.join(",")))
    }

    #[tracing::instrument(skip_all, fields(post_id = req.post_id.0, part = req.part.number))]
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        if req.part.comment {
            return self.publish_comment(req).await;
        }
        if req.part.is_later() {
            return Outcome::Rejected {
                reason: format!(
                    "linkedin: a post is one part (and a first comment); part {} was not sent",
                    req.part.number
                ),
                credential: false,
            };
        }
        let images = image_urns(prepared);
        if images.len() != req.media.len() {
            return Outcome::NotSent {
                reason: format!(
                    "linkedin: {} of the post's {} images are uploaded; nothing was sent; the next attempt uploads them",
                    images.len(),
                    req.media.len()
                ),
                retry_after: None,
            };
        }
        let author = match self.author().await {
            Ok(author) => author,
            Err(e) => {
                return Outcome::NotSent {
                    reason: format!("{e}; nothing was sent"),
                    retry_after: None,
                };
            }
        };
        let mut text = req.text.trim_end().to_owned();
        if let Some(link) = req.link.as_deref().filter(|l| !l.is_empty())
            && !text.contains(link)
        {
            text = format!("{text}\n\n{link}");
        }
        let mut body = json!({
            "author": author,
            "commentary": escape_little_text(&text),
            "visibility": "PUBLIC",
            "distribution": {
                "feedDistribution": "MAIN_FEED",
                "targetEntities": [],
                "thirdPartyDistributionChannels": [],
            },
            "lifecycleState": "PUBLISHED",
            "isReshareDisabledByAuthor": false,
        });
        if !images.is_empty() {
            let with_alt: Vec<(String, Option<String>)> = images
                .into_iter()
                .zip(req.media.iter().map(|m| m.alt.clone()))
                .collect();
            body["content"] = image_content(&with_alt);
        }
        let request = self
            .client
            .post(endpoint(&self.base_url, &["rest", "posts"], &[]))
            .bearer_auth(self.token.expose_secret())
            .timeout(self.timeout)
            .header("LinkedIn-Version", &self.version)
            .header("X-Restli-Protocol-Version", "2.0.0")
            .header("content-type", "application/json")
            .body(body.to_string());
        let answer = match send(request).await {
            Ok(answer) => answer,
            Err(e) => {
                return transport_failure(&e).outcome(self.transport_summary("create post", &e));
            }
        };
        if answer.is_success() {
            let urn = answer
                .headers
                .get("x-restli-id")
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|urn| urn.starts_with("urn:li:"))
                .map(str::to_owned);
            return Outcome::Published(Published {
                permalink: urn.as_deref().map(permalink),
                platform_post_id: urn,
                pause: None,
                existing: None,
            });
        }
        if answer.status == 422 && answer.json().is_some_and(|body| is_duplicate(&body)) {
            return self.duplicate(&answer).await;
        }
        self.publish_failure(&answer)
    }

    async fn verify(&self, _platform_post_id: &str) -> Verification {
        Verification::Unsupported
    }

    /// A post: nothing to read, so a person decides. A first comment: the author's
    /// comment on the post with its text, in one read of the post's comments.
    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        if !req.publish.part.comment {
            return Evidence::NoProof;
        }
        match self.find_comment(&req.publish).await {
            Ok(Some(proof)) => Evidence::Published(proof),
            Ok(None) => Evidence::NoProof,
            Err(e) => {
                tracing::warn!(error = %e, "linkedin: the comments could not be read for proof");
                Evidence::NoProof
            }
        }
    }
}

/// `kind = "linkedin"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkedinConfig {
    /// The access token's file (0600).
    pub token_file: PathBuf,
    /// The member (`sub`) the token must belong to.
    pub account: String,
    /// API host override.
    pub base_url: Option<String>,
    /// `LinkedIn-Version` (`YYYYMM`).
    pub version: Option<String>,
    /// Author URN, to post as an organization.
    pub author: Option<String>,
}

impl KindConfig for LinkedinConfig {
    crate::kind::token_keys!(base_url: optional);

    fn build(&self, _: &ChannelName, common: &Common) -> Result<Arc<dyn Platform>, String> {
        let timeout = common.request_timeout.as_std();
        let defaults = LinkedinSettings::new(read_token(&self.token_file)?);
        let settings = LinkedinSettings {
            base_url: self.base_url.clone().unwrap_or(defaults.base_url.clone()),
            version: self.version.clone().unwrap_or(defaults.version.clone()),
            author: self.author.clone(),
            request_timeout: timeout,
            ..defaults
        };
        let linkedin = Linkedin::new(settings, crate::http::client(timeout));
        Ok(Arc::new(linkedin.map_err(|e| e.to_string())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_characters_are_escaped() {
        assert_eq!(
            escape_little_text(r"Cats (and #dogs) @inn [1] <b> *x* _y_ ~z~ a|b {c} \ ok"),
            r"Cats \(and \#dogs\) \@inn \[1\] \<b\> \*x\* \_y\_ \~z\~ a\|b \{c\} \\ ok"
        );
        assert_eq!(escape_little_text("plain text."), "plain text.");
    }

    #[test]
    fn a_throttle_without_retry_after_waits_for_midnight_utc() {
        let answer = Answer {
            status: 429,
            headers: reqwest::header::HeaderMap::new(),
            body: None,
        };
        let now = DateTime::parse_from_rfc3339("2026-09-01T22:30:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(throttle_retry(&answer, now), Some(Duration::minutes(90)));
    }

    #[test]
    fn the_earlier_urn_is_found_in_a_duplicate_message() {
        assert_eq!(
            find_urn("Content is a duplicate of urn:li:share:7123456789012345678."),
            Some("urn:li:share:7123456789012345678".into())
        );
        assert_eq!(
            find_urn("duplicate of urn:li:ugcPost:42, see"),
            Some("urn:li:ugcPost:42".into())
        );
        assert_eq!(find_urn("no urn here"), None);
        assert_eq!(find_urn("urn:li:share:"), None);
    }
}
