//! Drafting and review: create, edit, approve, reject, unapprove, discard, read, note.

use airlock_core::hash::{canonical_json, sha256_hex};
use airlock_core::limits::{self, MAX_IDEMPOTENCY_KEY_CHARS, MAX_NOTE_CHARS, MAX_REASON_CHARS};
use airlock_core::post::check_url;
use airlock_core::time::parse_time;
use airlock_core::{
    Action, Media, NewPost, Post, PostContent, PostDetail, PostEdit, PostEvent, PostId, PostStatus,
    PostSummary, Source,
};
use airlock_store::{CreateKey, Created, EventNote, PostFields, PostFilter};
use serde::{Deserialize, Serialize};

use crate::{App, Error, Principal, Result};

/// A draft as agents and people submit it (the field names of the post JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DraftInput {
    /// Configured channel.
    pub channel: String,
    /// Text (Markdown for article channels).
    pub text: String,
    /// Title (articles).
    #[serde(default)]
    pub title: Option<String>,
    /// Media `[{url, alt}]`.
    #[serde(default)]
    pub media: Vec<Media>,
    /// Link.
    #[serde(default)]
    pub link: Option<String>,
    /// RFC 3339 or `now` (default `now`).
    #[serde(default)]
    pub scheduled_at: Option<String>,
    /// A test post: published only by sandbox channels, never counted.
    #[serde(default)]
    pub test: bool,
}

/// A change to a draft as submitted (`None` leaves a field alone; an empty title or
/// link clears it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EditInput {
    /// New text.
    #[serde(default)]
    pub text: Option<String>,
    /// New title.
    #[serde(default)]
    pub title: Option<String>,
    /// New media.
    #[serde(default)]
    pub media: Option<Vec<Media>>,
    /// New link.
    #[serde(default)]
    pub link: Option<String>,
    /// New schedule (RFC 3339 or `now`).
    #[serde(default)]
    pub scheduled_at: Option<String>,
}

/// Extra inputs of machine-made drafts (docs/sites.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftOrigin {
    /// The article it was made from.
    pub source: Option<Source>,
    /// The slot it fills.
    pub slot: Option<String>,
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

impl App {
    /// Creates a draft (writer). With an idempotency key, a retry returns the first post.
    pub async fn create_post(
        &self,
        who: &Principal,
        input: DraftInput,
        idempotency_key: Option<String>,
        origin: DraftOrigin,
    ) -> Result<Created> {
        who.require(Action::Create)?;
        let now = self.now();
        let channel = self.channel(&input.channel)?;
        if input.test && !channel.kind.publishes_test_posts() {
            // Allowed, but say so: test posts only ever publish on sandboxes.
            tracing::info!(channel = %channel.name, "test post on a non-sandbox channel will never be due");
        }
        let request_hash = sha256_hex(
            canonical_json(&serde_json::to_value(&input).expect("input serializes")).as_bytes(),
        );
        let content = PostContent {
            channel: channel.name.clone(),
            title: non_empty(input.title),
            text: input.text,
            media: input.media,
            link: non_empty(input.link),
            source: origin.source,
        };
        check_content(&content, channel)?;
        let scheduled_at = match input.scheduled_at.as_deref() {
            Some(at) => parse_time(at, now).map_err(|e| Error::Invalid(e.to_string()))?,
            None => now,
        };
        let idempotency = match idempotency_key {
            Some(key) => {
                let key = key.trim().to_owned();
                if key.is_empty() || key.chars().count() > MAX_IDEMPOTENCY_KEY_CHARS {
                    return Err(Error::Invalid(format!(
                        "idempotency key must be 1-{MAX_IDEMPOTENCY_KEY_CHARS} characters"
                    )));
                }
                Some(CreateKey {
                    scope: who.actor.to_string(),
                    key,
                    request_hash,
                    ttl: self.settings().create_key_ttl,
                })
            }
            None => None,
        };
        let created = self
            .store()
            .create_post(airlock_store::CreatePost {
                new: NewPost {
                    content,
                    scheduled_at,
                    test: input.test,
                    slot: origin.slot,
                },
                actor: who.actor.to_string(),
                now,
                idempotency,
            })
            .await?;
        Ok(created)
    }

    /// Edits a draft (writer). An approved post first returns to draft, withdrawing the approval.
    pub async fn edit_post(&self, who: &Principal, id: PostId, input: EditInput) -> Result<Post> {
        who.require(Action::Edit)?;
        let now = self.now();
        let edit = PostEdit {
            text: input.text,
            title: input.title.map(|t| non_empty(Some(t))),
            media: input.media,
            link: input.link.map(|l| non_empty(Some(l))),
            scheduled_at: input
                .scheduled_at
                .as_deref()
                .map(|at| parse_time(at, now))
                .transpose()
                .map_err(|e| Error::Invalid(e.to_string()))?,
        };
        if edit.is_empty() {
            return Err(Error::Invalid(
                "nothing to change: give at least one of text, title, media, link, scheduled_at"
                    .into(),
            ));
        }
        let post = self
            .post_in(
                id,
                &[PostStatus::Draft, PostStatus::Approved],
                "only drafts and approved posts can be edited",
            )
            .await?;
        let content = edit.apply_to(&post.content);
        check_content(&content, self.channel(post.content.channel.as_str())?)?;
        let hash = content.hash();
        // Only a change of content makes the editor an author (the store records it in
        // `authors`); moving the schedule changes no authorship.
        let content_changed = hash != post.content_hash;
        let mut update = self.change_by(who, &post);
        update.set = PostFields {
            content: content_changed.then_some((content, hash)),
            scheduled_at: edit.scheduled_at,
            edited_by: content_changed.then(|| who.actor.to_string()),
            error: Some(None),
            ..PostFields::default()
        };
        let fields = edit.field_names().join(", ");
        if post.status == PostStatus::Approved {
            update.to = Some(PostStatus::Draft);
            update.note = Some(format!("edited ({fields}): approval withdrawn"));
            update.set.approved_hash = Some(None);
            update.set.approved_by = Some(None);
        } else {
            update.event = Some(EventNote {
                kind: "edited".into(),
                note: Some(format!("edited {fields}")),
            });
        }
        Ok(self.store().update_post(update).await?)
    }

    /// Approves a draft (critic): the content policy must pass, and a token never approves
    /// a post whose content it wrote: one it created, last edited, or changed since the
    /// last approval ([`Post::authors`]; separation of duties).
    pub async fn approve(&self, who: &Principal, id: PostId) -> Result<Post> {
        self.approve_at(who, id, None).await
    }

    /// [`App::approve`], but only the post as it stood at `version` (the version the
    /// caller looked at); any change since is [`Error::Conflict`] and approves nothing.
    pub async fn approve_version(&self, who: &Principal, id: PostId, version: i64) -> Result<Post> {
        self.approve_at(who, id, Some(version)).await
    }

    async fn approve_at(&self, who: &Principal, id: PostId, version: Option<i64>) -> Result<Post> {
        who.require(Action::Approve)?;
        let post = self
            .post_in(id, &[PostStatus::Draft], "only drafts can be approved")
            .await?;
        if version.is_some_and(|v| v != post.version) {
            return Err(Error::Conflict(format!(
                "post {id} changed since it was looked at: look at it again before approving"
            )));
        }
        let actor = who.actor.to_string();
        if !who.sod_exempt && post.is_authored_by(&actor) {
            return Err(Error::Forbidden(format!(
                "{actor} wrote content of post {id} (created it, or changed its content since the last approval) and may not approve it: another critic must (separation of duties)"
            )));
        }
        let channel = self.channel(post.content.channel.as_str())?;
        let violations = channel.policy.check(&post.content);
        if !violations.is_empty() {
            return Err(Error::Policy(violations));
        }
        let mut update = self.change_by(who, &post);
        update.to = Some(PostStatus::Approved);
        update.note = Some(format!("approved content {}", post.content_hash));
        update.set.approved_hash = Some(Some(post.content_hash.clone()));
        update.set.approved_by = Some(Some(actor));
        update.set.error = Some(None);
        let approved = self.store().update_post(update).await?;
        self.wake_dispatcher();
        Ok(approved)
    }

    /// Rejects a draft or an approved post (critic), with a reason; it stays (or returns
    /// to) draft for the writer to revise.
    pub async fn reject(&self, who: &Principal, id: PostId, reason: &str) -> Result<Post> {
        who.require(Action::Reject)?;
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Invalid(
                "a rejection needs a reason (--reason)".into(),
            ));
        }
        limits::check_chars("rejection reason", reason, MAX_REASON_CHARS)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let post = self
            .post_in(
                id,
                &[PostStatus::Draft, PostStatus::Approved],
                "only drafts and approved posts can be rejected",
            )
            .await?;
        let actor = who.actor.to_string();
        let mut update = self.change_by(who, &post);
        update.set.error = Some(Some(format!("rejected by {actor}: {reason}")));
        if post.status == PostStatus::Approved {
            update.to = Some(PostStatus::Draft);
            update.note = Some(format!("rejected: {reason}"));
            update.set.approved_hash = Some(None);
            update.set.approved_by = Some(None);
        } else {
            update.event = Some(EventNote {
                kind: "rejected".into(),
                note: Some(reason.to_owned()),
            });
        }
        Ok(self.store().update_post(update).await?)
    }

    /// Withdraws an approval (critic): `approved -> draft`.
    pub async fn unapprove(&self, who: &Principal, id: PostId) -> Result<Post> {
        who.require(Action::Unapprove)?;
        let post = self
            .post_in(
                id,
                &[PostStatus::Approved],
                "only approved posts can be unapproved",
            )
            .await?;
        let mut update = self.change_by(who, &post);
        update.to = Some(PostStatus::Draft);
        update.note = Some("approval withdrawn".into());
        update.set.approved_hash = Some(None);
        update.set.approved_by = Some(None);
        Ok(self.store().update_post(update).await?)
    }

    /// Discards a draft (writer or operator); its events stay in the ledger.
    pub async fn discard(&self, who: &Principal, id: PostId) -> Result<()> {
        who.require(Action::Discard)?;
        let post = self
            .post_in(
                id,
                &[PostStatus::Draft],
                "only drafts can be discarded (unapprove it first)",
            )
            .await?;
        self.store()
            .delete_draft(id, post.version, &who.actor.to_string(), self.now())
            .await?;
        Ok(())
    }

    /// One post with its events, intents and reservations.
    pub async fn get_post(&self, who: &Principal, id: PostId) -> Result<PostDetail> {
        who.require(Action::Read)?;
        Ok(self.store().post_detail(id).await?)
    }

    /// Posts, newest first.
    pub async fn list_posts(&self, who: &Principal, filter: &PostFilter) -> Result<Vec<Post>> {
        who.require(Action::Read)?;
        Ok(self.store().list_posts(filter).await?)
    }

    /// Posts as lists show them, newest first: facts and the first `excerpt_chars`
    /// characters of the text (plus one, to show a cut), cut by the store.
    pub async fn list_summaries(
        &self,
        who: &Principal,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<PostSummary>> {
        who.require(Action::Read)?;
        Ok(self.store().list_summaries(filter, excerpt_chars).await?)
    }

    /// How many posts are in each state, counted by the store.
    pub async fn status_counts(&self, who: &Principal) -> Result<Vec<(PostStatus, i64)>> {
        who.require(Action::Read)?;
        Ok(self.store().status_counts().await?)
    }

    /// Events across the ledger after an event id.
    pub async fn events_after(
        &self,
        who: &Principal,
        after: i64,
        limit: u32,
    ) -> Result<Vec<PostEvent>> {
        who.require(Action::Read)?;
        Ok(self
            .store()
            .events_after(after, limit.clamp(1, 1000))
            .await?)
    }

    /// Adds a note to a post's timeline (operator).
    pub async fn add_note(&self, who: &Principal, id: PostId, note: &str) -> Result<()> {
        who.require(Action::Note)?;
        let note = note.trim();
        if note.is_empty() {
            return Err(Error::Invalid(format!(
                "a note is 1-{MAX_NOTE_CHARS} characters"
            )));
        }
        limits::check_chars("note", note, MAX_NOTE_CHARS)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let event = EventNote {
            kind: "note".into(),
            note: Some(note.to_owned()),
        };
        self.store()
            .add_event(id, event, &who.actor.to_string(), self.now(), Vec::new())
            .await?;
        Ok(())
    }
}

/// Shape checks every draft meets: a text, well-formed URLs, and the size limits of
/// [`airlock_core::limits`], global and the channel's own (its length and media count).
/// The rest of the policy is checked at approval.
fn check_content(content: &PostContent, channel: &crate::ChannelSettings) -> Result<()> {
    if content.text.trim().is_empty() {
        return Err(Error::Invalid(
            "the text is empty: give --text or --text-file".into(),
        ));
    }
    limits::check_content(
        content,
        &channel.policy,
        &format!("channel {} ({})", channel.name, channel.kind),
    )
    .map_err(|e| Error::Invalid(e.to_string()))?;
    if let Some(link) = &content.link {
        check_url("link", link).map_err(|e| Error::Invalid(e.to_string()))?;
    }
    for media in &content.media {
        check_url("media url", &media.url).map_err(|e| Error::Invalid(e.to_string()))?;
    }
    Ok(())
}
