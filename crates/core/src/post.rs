//! Posts: identifiers, content, the insert shape and the stored shape.
//!
//! [`Post`] serializes to the post JSON of docs/http-api.md that the CLI, the HTTP API and
//! MCP all return, so outside tools see one shape everywhere.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::hash::ContentHash;
use crate::status::PostStatus;

/// A post's id: a positive integer assigned by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostId(pub i64);

impl fmt::Display for PostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for PostId {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().parse::<i64>() {
            Ok(id) if id > 0 => Ok(PostId(id)),
            _ => Err(InvalidValue::new(
                "post id",
                s,
                "a post id is a positive number, as printed by `post add` or `post list`",
            )),
        }
    }
}

/// A value that failed to parse, with what was wrong and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: {expected}")]
pub struct InvalidValue {
    /// What was being parsed ("channel name").
    pub what: &'static str,
    /// The input (never a secret).
    pub value: String,
    /// What a valid value looks like.
    pub expected: &'static str,
}

impl InvalidValue {
    /// Builds the error.
    pub fn new(what: &'static str, value: &str, expected: &'static str) -> Self {
        InvalidValue {
            what,
            value: value.chars().take(80).collect(),
            expected,
        }
    }
}

/// A configured channel's name: `threads-main`. Lowercase ASCII letters, digits, `-`, `_`, `.`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelName(String);

impl ChannelName {
    /// Parses a channel name.
    pub fn parse(name: &str) -> Result<Self, InvalidValue> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')
            });
        if valid {
            Ok(ChannelName(name.to_owned()))
        } else {
            Err(InvalidValue::new(
                "channel name",
                name,
                "use 1-64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit",
            ))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChannelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ChannelName {
    type Error = InvalidValue;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        ChannelName::parse(&value)
    }
}

impl From<ChannelName> for String {
    fn from(value: ChannelName) -> Self {
        value.0
    }
}

/// An image or other media item attached to a post.
///
/// `url` and `alt` are what a writer gives. The facts after them are what airlock found
/// when it fetched the bytes at draft or edit (docs/media.md); the approval hash covers
/// `sha256`, so approval binds the bytes and not only their address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Media {
    /// Public URL the platform fetches.
    pub url: String,
    /// Alternative text, if any.
    #[serde(default)]
    pub alt: Option<String>,
    /// Lowercase hex SHA-256 of the bytes at `url` when they were checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Their media type, from the bytes (`image/jpeg`, `video/mp4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Their size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Width in pixels (images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Height in pixels (images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

impl Media {
    /// Parses the CLI form `URL` or `URL|ALT`.
    pub fn parse_cli(arg: &str) -> Result<Self, InvalidValue> {
        let (url, alt) = match arg.split_once('|') {
            Some((url, alt)) => (url.trim(), Some(alt.trim().to_owned())),
            None => (arg.trim(), None),
        };
        check_url("media url", url)?;
        Ok(Media::new(
            url.to_owned(),
            alt.filter(|alt| !alt.is_empty()),
        ))
    }

    /// A media item not yet checked: its URL and alt text.
    pub fn new(url: String, alt: Option<String>) -> Self {
        Media {
            url,
            alt,
            sha256: None,
            content_type: None,
            bytes: None,
            width: None,
            height: None,
        }
    }

    /// Whether the bytes are a video (by the type airlock found).
    pub fn is_video(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("video/"))
    }
}

/// One part of a post: one item of a thread (each a reply to the one before), with its
/// media (several make an album or carousel where the platform has one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Part {
    /// Its text.
    pub text: String,
    /// Its media.
    #[serde(default)]
    pub media: Vec<Media>,
}

/// Checks that a URL is absolute http(s) with a host.
pub fn check_url(what: &'static str, url: &str) -> Result<(), InvalidValue> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(rest)
            if !rest.is_empty() && !rest.starts_with('/') && !url.contains(char::is_whitespace) =>
        {
            Ok(())
        }
        _ => Err(InvalidValue::new(
            what,
            url,
            "expected an absolute http:// or https:// URL without spaces",
        )),
    }
}

/// The file a post was made from (docs/sites.md); part of the approval hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Source {
    /// The article's path, relative to its site's directory.
    pub path: String,
    /// Lowercase hex SHA-256 of the file's bytes when the post was made.
    pub sha256: String,
    /// The article's `updated` front matter value, if any.
    pub updated: Option<String>,
}

/// Everything the approval hash covers (docs/lifecycle.md#the-approval-hash).
///
/// `text` and `media` are the first part; `more` holds the parts after it, so a single
/// post is what it always was. In JSON a post of several parts also carries `parts`, the
/// whole list, and `first_comment` when it has one; a single post carries neither.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ContentJson", try_from = "ContentJson")]
pub struct PostContent {
    /// The channel it goes to.
    pub channel: ChannelName,
    /// Title, for article channels; `null` unless set.
    pub title: Option<String>,
    /// The text (Markdown for article channels) of the first part.
    pub text: String,
    /// The first part's media.
    pub media: Vec<Media>,
    /// The parts after the first, in order (a thread); empty for a single post.
    pub more: Vec<Part>,
    /// A comment published under the post once it is out (a reply on thread platforms).
    pub first_comment: Option<String>,
    /// A link to attach, if any.
    pub link: Option<String>,
    /// The article it was made from, if any.
    pub source: Option<Source>,
}

impl PostContent {
    /// The content hash of this content (docs/lifecycle.md#the-approval-hash).
    pub fn hash(&self) -> ContentHash {
        crate::hash::content_hash(self)
    }

    /// Single-part content.
    pub fn single(channel: ChannelName, text: impl Into<String>) -> Self {
        PostContent {
            channel,
            title: None,
            text: text.into(),
            media: Vec::new(),
            more: Vec::new(),
            first_comment: None,
            link: None,
            source: None,
        }
    }

    /// Every part in order, the first included.
    pub fn parts(&self) -> Vec<Part> {
        let first = Part {
            text: self.text.clone(),
            media: self.media.clone(),
        };
        std::iter::once(first)
            .chain(self.more.iter().cloned())
            .collect()
    }

    /// Replaces every part: the first becomes `text` and `media`. An empty list leaves
    /// one empty part, which the checks refuse.
    pub fn set_parts(&mut self, parts: Vec<Part>) {
        let mut parts = parts.into_iter();
        let first = parts.next().unwrap_or(Part {
            text: String::new(),
            media: Vec::new(),
        });
        self.text = first.text;
        self.media = first.media;
        self.more = parts.collect();
    }

    /// How many requests publishing it makes: one per part and one for the first comment.
    pub fn part_count(&self) -> usize {
        1 + self.more.len() + usize::from(self.first_comment.is_some())
    }

    /// Whether it is more than one plain post: several parts or a first comment.
    pub fn is_multipart(&self) -> bool {
        self.part_count() > 1
    }

    /// Every media item of every part.
    pub fn all_media(&self) -> impl Iterator<Item = &Media> {
        self.media
            .iter()
            .chain(self.more.iter().flat_map(|p| &p.media))
    }

    /// Every media item of every part, to fill in what was found about them.
    pub fn all_media_mut(&mut self) -> impl Iterator<Item = &mut Media> {
        self.media
            .iter_mut()
            .chain(self.more.iter_mut().flat_map(|p| &mut p.media))
    }
}

/// [`PostContent`] as JSON: `parts` (the whole list) only when there are several.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = PostContent))]
pub struct ContentJson {
    /// The channel it goes to.
    pub channel: ChannelName,
    /// Title, for article channels; `null` unless set.
    pub title: Option<String>,
    /// The text of the first part (the whole text of a single post).
    pub text: String,
    /// The first part's media.
    pub media: Vec<Media>,
    /// Every part in order, when there are several; absent for a single post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
    /// A comment published under the post once it is out; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_comment: Option<String>,
    /// A link to attach, if any.
    pub link: Option<String>,
    /// The article it was made from, if any.
    pub source: Option<Source>,
}

impl From<PostContent> for ContentJson {
    fn from(c: PostContent) -> Self {
        let parts = (!c.more.is_empty()).then(|| c.parts());
        ContentJson {
            channel: c.channel,
            title: c.title,
            text: c.text,
            media: c.media,
            parts,
            first_comment: c.first_comment,
            link: c.link,
            source: c.source,
        }
    }
}

impl TryFrom<ContentJson> for PostContent {
    type Error = InvalidValue;

    fn try_from(j: ContentJson) -> Result<Self, Self::Error> {
        let mut content = PostContent {
            channel: j.channel,
            title: j.title,
            text: j.text,
            media: j.media,
            more: Vec::new(),
            first_comment: j.first_comment,
            link: j.link,
            source: j.source,
        };
        if let Some(parts) = j.parts {
            let first = parts.first();
            if first.is_some_and(|p| p.text != content.text || p.media != content.media) {
                return Err(InvalidValue::new(
                    "parts",
                    &content.text,
                    "the first of `parts` must be the post's `text` and `media`",
                ));
            }
            content.set_parts(parts);
        }
        Ok(content)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for PostContent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <ContentJson as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for PostContent {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("PostContent")
    }

    /// The schemas it refers to (media, parts, a source) are those of [`ContentJson`].
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <ContentJson as utoipa::ToSchema>::schemas(schemas);
    }
}

/// What creating a post needs (the insert shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPost {
    /// The content.
    pub content: PostContent,
    /// When it may go out.
    pub scheduled_at: DateTime<Utc>,
    /// A test post: due only on sandbox channels, never counted against quotas.
    pub test: bool,
    /// The compose slot it fills (`2026-12-01T08:00+09:00`), unique per channel.
    pub slot: Option<String>,
}

/// A change to a draft's content or schedule. `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostEdit {
    /// New text.
    pub text: Option<String>,
    /// New title (`Some(None)` clears it).
    pub title: Option<Option<String>>,
    /// New media list (of the first part).
    pub media: Option<Vec<Media>>,
    /// Every part anew (replaces `text` and `media` too).
    pub parts: Option<Vec<Part>>,
    /// New first comment (`Some(None)` removes it).
    pub first_comment: Option<Option<String>>,
    /// New link (`Some(None)` clears it).
    pub link: Option<Option<String>>,
    /// New schedule.
    pub scheduled_at: Option<DateTime<Utc>>,
}

impl PostEdit {
    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == PostEdit::default()
    }

    /// The names of the fields this edit sets, for the audit note.
    pub fn field_names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.text.is_some() {
            names.push("text");
        }
        if self.title.is_some() {
            names.push("title");
        }
        if self.media.is_some() {
            names.push("media");
        }
        if self.parts.is_some() {
            names.push("parts");
        }
        if self.first_comment.is_some() {
            names.push("first_comment");
        }
        if self.link.is_some() {
            names.push("link");
        }
        if self.scheduled_at.is_some() {
            names.push("scheduled_at");
        }
        names
    }

    /// Applies the content part of the edit.
    pub fn apply_to(&self, content: &PostContent) -> PostContent {
        let mut next = content.clone();
        if let Some(text) = &self.text {
            next.text = text.clone();
        }
        if let Some(title) = &self.title {
            next.title = title.clone();
        }
        if let Some(media) = &self.media {
            next.media = media.clone();
        }
        if let Some(parts) = &self.parts {
            next.set_parts(parts.clone());
        }
        if let Some(first_comment) = &self.first_comment {
            next.first_comment = first_comment.clone();
        }
        if let Some(link) = &self.link {
            next.link = link.clone();
        }
        next
    }
}

/// A post as stored. Serializes to the post JSON of docs/http-api.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Post {
    /// Its id.
    pub id: PostId,
    /// Its state.
    pub status: PostStatus,
    /// What it says and where it goes.
    #[serde(flatten)]
    pub content: PostContent,
    /// When it may go out.
    pub scheduled_at: DateTime<Utc>,
    /// Hash of the current content.
    pub content_hash: ContentHash,
    /// Hash recorded at approval; `null` unless approved.
    pub approved_hash: Option<ContentHash>,
    /// Who approved it.
    pub approved_by: Option<String>,
    /// Who created it.
    pub created_by: String,
    /// Who last changed its content (a change of schedule alone is not a change of content).
    pub edited_by: String,
    /// Every principal that changed the content since the last approval (`draft ->
    /// approved`), recorded by the store; with `created_by` and `edited_by`, none of them
    /// may approve it (separation of duties).
    pub authors: Vec<String>,
    /// Fencing generation, incremented by every claim.
    pub generation: i64,
    /// Attempts that ended before the irreversible step.
    pub attempts: i64,
    /// Times in a row the platform answered "not now" (a rate limit, a publishing
    /// limit): not attempts, until there are too many.
    pub waits: i64,
    /// The worker holding the lease while `posting`.
    pub lease_owner: Option<String>,
    /// When the lease ends.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// Not claimed before this time (quota deferral, retry backoff).
    pub not_before: Option<DateTime<Utc>>,
    /// The platform's id for the published post.
    pub platform_post_id: Option<String>,
    /// Public link to the published post.
    pub permalink: Option<String>,
    /// When it was published.
    pub posted_at: Option<DateTime<Utc>>,
    /// When a read-back found it on the platform.
    pub verified_at: Option<DateTime<Utc>>,
    /// Short redacted summary of the last error or rejection.
    pub error: Option<String>,
    /// A test post.
    pub test: bool,
    /// The compose slot it fills.
    pub slot: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// Optimistic-concurrency version, bumped by every write.
    pub version: i64,
    /// The review round: the store starts a new one whenever the content changes or an
    /// approval is withdrawn, which voids every earlier pass ([`crate::review`]).
    pub review_round: i64,
    /// Fail verdicts since the post was drafted or last released from quarantine.
    pub revisions: i64,
    /// When it was quarantined, after `max_revisions` fail verdicts; `null` unless it
    /// is. A quarantined post is a draft that nobody may edit, approve or publish until
    /// an operator releases it (back to a plain draft) or discards it.
    pub quarantined_at: Option<DateTime<Utc>>,
    /// When the quota slot it waits for frees (it was over quota; `not_before` holds the
    /// same time); `null` unless it waits on quota. Each dispatcher pass decides it again.
    pub deferred_until: Option<DateTime<Utc>>,
}

impl Post {
    /// Whether `actor` wrote any of this post's content: it created the post, last edited
    /// its content, or changed its content since the last approval. Such an actor may not
    /// approve it (docs/lifecycle.md#separation-of-duties).
    pub fn is_authored_by(&self, actor: &str) -> bool {
        self.created_by == actor
            || self.edited_by == actor
            || self.authors.iter().any(|a| a == actor)
    }

    /// Whether the post is quarantined (see [`Post::quarantined_at`]).
    pub fn is_quarantined(&self) -> bool {
        self.quarantined_at.is_some()
    }

    /// When the post becomes due: its schedule, or `not_before` when that is later (a
    /// retry's backoff, a quota deferral). The queue is taken in this order.
    pub fn due_at(&self) -> DateTime<Utc> {
        self.not_before
            .map_or(self.scheduled_at, |t| t.max(self.scheduled_at))
    }

    /// Whether the post is due at `now` (docs/lifecycle.md#when-a-post-is-due), given
    /// whether test posts may go out on its channel.
    pub fn is_due(&self, now: DateTime<Utc>, test_allowed: bool) -> bool {
        self.status == PostStatus::Approved
            && self.scheduled_at <= now
            && self.posted_at.is_none()
            && self.not_before.is_none_or(|t| t <= now)
            && (!self.test || test_allowed)
    }
}

/// A post as lists show it: its facts and the start of its text, never the whole text,
/// so a page of the largest posts costs what it shows (the store cuts the text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PostSummary {
    /// Its id.
    pub id: PostId,
    /// Its state.
    pub status: PostStatus,
    /// The channel it goes to.
    pub channel: ChannelName,
    /// Its title, if any.
    pub title: Option<String>,
    /// The start of its text: at most the number of characters asked for, plus one when
    /// the text is longer (so a caller can tell it was cut).
    pub excerpt: String,
    /// When it may go out.
    pub scheduled_at: DateTime<Utc>,
    /// Not claimed before this time.
    pub not_before: Option<DateTime<Utc>>,
    /// When it was published.
    pub posted_at: Option<DateTime<Utc>>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// A test post.
    pub test: bool,
    /// When it was quarantined, if it is (see [`Post::quarantined_at`]).
    pub quarantined_at: Option<DateTime<Utc>>,
}

/// One audit event on a post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostEvent {
    /// Sequence number, increasing over the whole ledger (for `GET /events?after=`).
    pub id: i64,
    /// The post.
    pub post_id: PostId,
    /// When.
    pub at: DateTime<Utc>,
    /// What kind of event: `status` for a state change, else `created`, `edited`,
    /// `rejected`, `verdict`, `quarantined`, `released`, `note`, `quota_deferred`,
    /// `verified`, `verify_failed`, `stale_outcome`, `changed` (fields the status change
    /// does not explain, each before and after, written by the store itself).
    pub kind: String,
    /// State before (`null` on creation).
    pub from: Option<PostStatus>,
    /// State after.
    pub to: PostStatus,
    /// Who.
    pub actor: String,
    /// Why, or what was found.
    pub note: Option<String>,
}

/// The record made immediately before an irreversible request
/// (docs/guarded-path.md#intents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Intent {
    /// The post.
    pub post_id: PostId,
    /// The claim generation that made it.
    pub generation: i64,
    /// Derived from post id and approved hash; sent to platforms that accept one.
    pub idempotency_key: String,
    /// `sending` until the outcome is written, then `succeeded`, `rejected`, `not_sent` or `unknown`.
    pub phase: String,
    /// Platform-side handle that can prove what happened (a container id), if any.
    pub platform_ref: Option<String>,
    /// When the request was about to be sent.
    pub created_at: DateTime<Utc>,
    /// When the outcome was written.
    pub settled_at: Option<DateTime<Utc>>,
    /// Which part of the post its request sends, from 1 (a single post has only part 1;
    /// the first comment is the part after the last).
    pub part: u32,
    /// The part's id on the platform, once it is known to be out.
    pub platform_post_id: Option<String>,
    /// Where people see the part, when known.
    pub permalink: Option<String>,
}

/// A quota reservation (docs/quotas.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Reservation {
    /// Unique id.
    pub id: i64,
    /// The post.
    pub post_id: PostId,
    /// The claim generation it was made under.
    pub generation: i64,
    /// The channel.
    pub channel: ChannelName,
    /// `reserved`, `committed` or `released`.
    pub state: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// When its request was sent (its intent's time), if it was.
    pub sent_at: Option<DateTime<Utc>>,
    /// When it was committed or released.
    pub settled_at: Option<DateTime<Utc>>,
}

/// A post with its timeline, intents and reservations (`post show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostDetail {
    /// The post.
    #[serde(flatten)]
    pub post: Post,
    /// Its events, oldest first.
    pub events: Vec<PostEvent>,
    /// Its intents, oldest first.
    pub intents: Vec<Intent>,
    /// Its reservations, oldest first.
    pub reservations: Vec<Reservation>,
    /// Its verdicts, oldest first.
    pub verdicts: Vec<crate::review::Verdict>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_are_checked() {
        assert!(ChannelName::parse("threads-main").is_ok());
        assert!(ChannelName::parse("blog.v2_x").is_ok());
        for bad in ["", "Threads", "-x", "a b", "x/y", &"a".repeat(65)] {
            assert!(ChannelName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn post_ids_are_positive_numbers() {
        assert_eq!("42".parse::<PostId>().unwrap(), PostId(42));
        assert!("0".parse::<PostId>().is_err());
        assert!("abc".parse::<PostId>().is_err());
    }

    #[test]
    fn media_parses_url_and_alt() {
        let media = Media::parse_cli("https://x.example/a.jpg|A cat asleep").unwrap();
        assert_eq!(media.url, "https://x.example/a.jpg");
        assert_eq!(media.alt.as_deref(), Some("A cat asleep"));
        assert_eq!(
            Media::parse_cli("https://x.example/a.jpg").unwrap().alt,
            None
        );
        assert!(Media::parse_cli("ftp://x/a.jpg").is_err());
        assert!(Media::parse_cli("https:///a.jpg").is_err());
    }

    #[test]
    fn edits_apply_only_what_they_set() {
        let content = PostContent {
            channel: ChannelName::parse("c").unwrap(),
            title: Some("t".into()),
            text: "old".into(),
            media: vec![],
            more: vec![],
            first_comment: None,
            link: None,
            source: None,
        };
        let edit = PostEdit {
            text: Some("new".into()),
            title: Some(None),
            ..PostEdit::default()
        };
        let next = edit.apply_to(&content);
        assert_eq!(next.text, "new");
        assert_eq!(next.title, None);
        assert_eq!(edit.field_names(), ["text", "title"]);
        assert!(PostEdit::default().is_empty());
    }
}
