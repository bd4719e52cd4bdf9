//! Drafting and review: create, edit, approve, reject, unapprove, discard, read, note.

use chrono::{DateTime, Utc};

use airlock_core::hash::{canonical_json, sha256_hex};
use airlock_core::limits::{self, MAX_IDEMPOTENCY_KEY_CHARS, MAX_NOTE_CHARS, MAX_REASON_CHARS};
use airlock_core::review;
use airlock_core::time::{check_schedule, parse_time};
use airlock_core::{
    Action, ChannelName, Media, NewPost, Part, Post, PostContent, PostDetail, PostEdit, PostEvent,
    PostId, PostStatus, PostSummary, Source,
};
use airlock_store::{Change, CreateKey, EventNote, PostFilter, StoreError};
use serde::{Deserialize, Serialize};

use crate::check::CheckViolation;
use crate::critic::VerdictInput;
use crate::{App, Error, Principal, Result};

/// A draft as agents and people submit it (the field names of the post JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DraftInput {
    /// Configured channel.
    pub channel: String,
    /// Text (Markdown for article channels); with `parts`, the first part's (or empty).
    #[serde(default)]
    pub text: String,
    /// Title (articles).
    #[serde(default)]
    pub title: Option<String>,
    /// Media `[{url, alt}]`; with `parts`, the first part's (or empty).
    #[serde(default)]
    pub media: Vec<Media>,
    /// Every part of a thread, in order, `[{text, media}]` (docs/parts.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
    /// A comment published under the post once it is out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_comment: Option<String>,
    /// Link.
    #[serde(default)]
    pub link: Option<String>,
    /// RFC 3339 or `now` (default `now`).
    #[serde(default)]
    pub scheduled_at: Option<String>,
    /// A test post: published only by sandbox channels, never counted.
    #[serde(default)]
    pub test: bool,
    /// Take a `scheduled_at` in the past (it is due at once); without it a time more
    /// than [`airlock_core::time::PAST_SCHEDULE_GRACE`] ago is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_past: bool,
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
    /// New media (of the first part).
    #[serde(default)]
    pub media: Option<Vec<Media>>,
    /// Every part anew, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
    /// A new first comment; empty removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_comment: Option<String>,
    /// New link.
    #[serde(default)]
    pub link: Option<String>,
    /// New schedule (RFC 3339 or `now`).
    #[serde(default)]
    pub scheduled_at: Option<String>,
    /// Take a new `scheduled_at` in the past, as when drafting.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_past: bool,
}

/// How an edit is made, beside its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditOptions {
    /// Change the text even when it becomes that of a post already queued or published on
    /// the channel within its duplicate window (operators only; `post edit
    /// --allow-duplicate`, `PATCH ...?allow_duplicate=true`).
    pub allow_duplicate: bool,
}

/// Extra inputs of machine-made drafts (docs/sites.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftOrigin {
    /// The article it was made from.
    pub source: Option<Source>,
    /// The slot it fills.
    pub slot: Option<String>,
    /// Draft it even when the same text is already queued or published on the channel
    /// (operators only; `post add --allow-duplicate`, `?allow_duplicate=true`).
    pub allow_duplicate: bool,
}

/// The start of the note that marks a post an operator drafted as a duplicate on purpose
/// (`allow_duplicate`): the duplicate checks of its approval and edits do not apply.
pub const DUPLICATE_ALLOWED_NOTE: &str = "drafted as a duplicate on purpose (allow_duplicate)";

/// How much of each text a list of posts carries, in characters.
pub const LIST_EXCERPT_CHARS: u32 = 500;

/// A post as the HTTP API (`GET /posts`) and MCP (`list_posts`) list it: the post JSON
/// with `text` cut to [`LIST_EXCERPT_CHARS`] characters, plus `text_truncated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ListedPost {
    /// The post; its `text` is the start of the text when `text_truncated`.
    #[serde(flatten)]
    pub post: Post,
    /// Whether `text` was cut: the whole text is in `GET /posts/{id}` (`get_post`).
    pub text_truncated: bool,
}

/// A draft as created ([`App::create_post`]): the post, and what the content policy
/// finds wrong with it. Serialized as the post JSON with `violations` beside its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Drafted {
    /// The post.
    #[serde(flatten)]
    pub post: Post,
    /// An earlier request with the same idempotency key (or for the same slot) made it.
    #[serde(skip)]
    pub existing: bool,
    /// What stops its approval until it is revised (phrase rules, a missing title, ...;
    /// `blocks` is `approval`): the draft is taken all the same, and they are on its
    /// timeline ([`POLICY_WARNING_EVENT`]). Empty when the content policy passes.
    pub violations: Vec<CheckViolation>,
}

/// The most posts one page of a list holds, and how many it holds unless asked for fewer.
pub const MAX_LIST_LIMIT: u32 = 100;

/// A page of posts ([`App::list_post_page`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostPage {
    /// The posts, newest first, each with `text` cut as in lists.
    pub posts: Vec<ListedPost>,
    /// The cursor of the next page: give it as `before` (the ids below it); `null` when
    /// this page is the last.
    pub next: Option<PostId>,
}

/// The kind of the event that records, on a new draft's timeline, what the content policy
/// finds wrong with it.
pub const POLICY_WARNING_EVENT: &str = "policy_warning";

pub(crate) fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

impl App {
    /// Creates a draft (writer). With an idempotency key, a retry returns the first post.
    /// A draft that only breaks the content policy (a phrase rule, a missing title) is
    /// created, with what the policy finds returned and recorded on its timeline: it is
    /// refused at approval until revised ([`App::check_draft`] tells the same beforehand).
    pub async fn create_post(
        &self,
        who: &Principal,
        input: DraftInput,
        idempotency_key: Option<String>,
        origin: DraftOrigin,
    ) -> Result<Drafted> {
        who.require(Action::Create)?;
        refuse_duplicate_override(who, origin.allow_duplicate)?;
        let now = self.now();
        let channel = self.channel(&input.channel)?;
        if input.test && !channel.kind.publishes_test_posts() {
            // Allowed, but say so: test posts only ever publish on sandboxes.
            tracing::info!(channel = %channel.name, "test post on a non-sandbox channel will never be due");
        }
        let request_hash = sha256_hex(
            canonical_json(&serde_json::to_value(&input).expect("input serializes")).as_bytes(),
        );
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
        // A retry is answered first: the request was checked when it made the post, and
        // checking it again against a clock that moved on (a schedule now past) or media
        // that changed would refuse the retry and invite a second draft.
        if let Some(key) = &idempotency
            && let Some(created) = self.store().created_with_key(key, now).await?
        {
            let violations = channel
                .policy
                .check(&created.post.content)
                .iter()
                .map(CheckViolation::of_policy)
                .collect();
            return Ok(Drafted {
                post: created.post,
                existing: true,
                violations,
            });
        }
        let mut content = PostContent {
            channel: channel.name.clone(),
            title: non_empty(input.title),
            text: input.text,
            media: input.media,
            more: vec![],
            first_comment: non_empty(input.first_comment),
            link: non_empty(input.link),
            source: origin.source,
        };
        if let Some(parts) = input.parts {
            content = with_parts(content, parts)?;
        }
        check_content(&content, channel)?;
        // Every cheap refusal before the media are fetched, so a draft refused anyway
        // never makes airlock download (the store counts the drafts again, exactly).
        let scheduled_at = match input.scheduled_at.as_deref() {
            Some(at) => parse_schedule(at, now, input.allow_past)?,
            None => now,
        };
        if let airlock_core::Actor::Token(_) = &who.actor {
            let actor = who.actor.to_string();
            let held = self.store().live_drafts_by(&actor).await?;
            let max = self.settings().max_drafts_per_token;
            if held >= i64::from(max) {
                return Err(StoreError::DraftLimit { actor, held, max }.into());
            }
        }
        let content = self.inspect_media(content).await?;
        check_shape(&content, channel)?;
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
                duplicate_window: duplicate_window(channel, origin.allow_duplicate),
                // Counted by the store inside the creating transaction, so concurrent
                // creates by one token cannot pass it together.
                max_live_drafts: matches!(who.actor, airlock_core::Actor::Token(_))
                    .then(|| self.settings().max_drafts_per_token),
            })
            .await?;
        if origin.allow_duplicate && !created.existing {
            // Its approval and edits are checked for duplicates too: the mark says not to.
            self.mark_duplicate_allowed(who, &created.post, now).await?;
        }
        let found = channel.policy.check(&created.post.content);
        let violations: Vec<CheckViolation> = found.iter().map(CheckViolation::of_policy).collect();
        if !created.existing && !violations.is_empty() {
            let messages: Vec<String> = found.iter().map(ToString::to_string).collect();
            let event = EventNote {
                kind: POLICY_WARNING_EVENT.into(),
                note: Some(limits::fit_chars(
                    &format!(
                        "drafted with content the policy refuses at approval: {}",
                        messages.join("; ")
                    ),
                    limits::MAX_EVENT_NOTE_CHARS,
                )),
            };
            // The draft stands even when the record cannot be written: failing here
            // would invite a retry that drafts it twice.
            if let Err(e) = self
                .store()
                .add_event(
                    created.post.id,
                    event,
                    &who.actor.to_string(),
                    now,
                    Vec::new(),
                )
                .await
            {
                tracing::warn!(post_id = created.post.id.0, error = %e, "cannot record a new draft's content policy violations");
            }
        }
        Ok(Drafted {
            post: created.post,
            existing: created.existing,
            violations,
        })
    }

    /// The duplicate window a write that approves `post`, changes its text or moves it is
    /// checked against inside the store (`duplicate_window` of [`airlock_store::Change::Edited`]):
    /// the channel's, unless it is off or an operator drafted the post as a duplicate on
    /// purpose ([`DUPLICATE_ALLOWED_NOTE`]).
    pub(crate) async fn duplicate_window_for(
        &self,
        post: &Post,
    ) -> Result<Option<chrono::Duration>> {
        let Some(window) = duplicate_window(self.channel(post.content.channel.as_str())?, false)
        else {
            return Ok(None);
        };
        let allowed = self
            .store()
            .post_detail(post.id)
            .await?
            .events
            .iter()
            .any(|e| {
                e.kind == "note"
                    && e.note
                        .as_deref()
                        .is_some_and(|n| n.starts_with(DUPLICATE_ALLOWED_NOTE))
            });
        Ok((!allowed).then_some(window))
    }

    /// Edits a draft (writer). An approved post first returns to draft, withdrawing the approval.
    pub async fn edit_post(&self, who: &Principal, id: PostId, input: EditInput) -> Result<Post> {
        self.edit_post_with(who, id, input, EditOptions::default())
            .await
    }

    /// [`App::edit_post`] with its options. A text or schedule that makes the post, by its
    /// normalised text, a duplicate of a post on the channel that is quarantined, or
    /// approved, in flight or posted within its `duplicate_window`, is refused as drafting
    /// it would be ([`Error::Duplicate`]), unless an operator allows it (which marks the
    /// post, so its approval is not refused either).
    pub async fn edit_post_with(
        &self,
        who: &Principal,
        id: PostId,
        input: EditInput,
        options: EditOptions,
    ) -> Result<Post> {
        who.require(Action::Edit)?;
        refuse_duplicate_override(who, options.allow_duplicate)?;
        let now = self.now();
        let edit = PostEdit {
            text: input.text,
            title: input.title.map(|t| non_empty(Some(t))),
            media: input.media,
            parts: input.parts,
            first_comment: input.first_comment.map(|c| non_empty(Some(c))),
            link: input.link.map(|l| non_empty(Some(l))),
            scheduled_at: input
                .scheduled_at
                .as_deref()
                .map(|at| parse_schedule(at, now, input.allow_past))
                .transpose()?,
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
        crate::critic::refuse_if_quarantined(&post, Action::Edit)?;
        if edit.parts.is_some() && (edit.text.is_some() || edit.media.is_some()) {
            return Err(Error::Invalid(
                "give either parts or text and media, not both: parts replaces every part, the first included".into(),
            ));
        }
        let content = edit.apply_to(&post.content);
        // Parts already out are on the platform as they were approved: a thread that
        // resumes sends the rest of that same approval, never an edited one.
        if content != post.content && post.generation > 0 && post.content.is_multipart() {
            let detail = self.store().post_detail(post.id).await?;
            let out = crate::publish::landed_parts(&detail).len();
            if out > 0 {
                let which = if out == 1 {
                    "part 1 is".to_owned()
                } else {
                    format!("parts 1 to {out} are")
                };
                return Err(Error::IllegalTransition(format!(
                    "post {id}: {which} already out, so its content cannot change; only its schedule can"
                )));
            }
        }
        let channel = self.channel(post.content.channel.as_str())?;
        check_content(&content, channel)?;
        // New media (or new parts) are fetched and bound anew; the others keep what was
        // found when they were drafted.
        let content = if edit.media.is_some() || edit.parts.is_some() {
            self.inspect_media(content).await?
        } else {
            content
        };
        check_shape(&content, channel)?;
        let hash = content.hash();
        // Only a change of content makes the editor an author (the store records it in
        // `authors`); moving the schedule changes no authorship.
        let content_changed = hash != post.content_hash;
        // Decided by the store in the transaction of the change, as at creation; the store
        // checks only a change of the normalised text or of the schedule.
        let moved = edit.scheduled_at.is_some_and(|at| at != post.scheduled_at);
        let duplicate_window = if !options.allow_duplicate && (content_changed || moved) {
            self.duplicate_window_for(&post).await?
        } else {
            None
        };
        let change = Change::Edited {
            version: post.version,
            content: content_changed.then_some((content, hash)),
            scheduled_at: edit.scheduled_at,
            // A move names its from and to, for the timeline and the review packet.
            fields: edit
                .field_names()
                .into_iter()
                .map(|field| match edit.scheduled_at {
                    Some(at) if field == "scheduled_at" && moved => {
                        review::schedule_move_note(post.scheduled_at, at)
                    }
                    _ => field.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(", "),
            duplicate_window,
        };
        let post = self
            .store()
            .change_post(self.change_by(who, &post, change))
            .await?;
        if options.allow_duplicate {
            self.mark_duplicate_allowed(who, &post, now).await?;
        }
        Ok(post)
    }

    /// Marks `post` as a duplicate an operator allowed ([`DUPLICATE_ALLOWED_NOTE`]), so
    /// its approval and later edits are not refused as duplicates either; nothing when the
    /// channel checks no duplicates.
    async fn mark_duplicate_allowed(
        &self,
        who: &Principal,
        post: &Post,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<()> {
        if duplicate_window(self.channel(post.content.channel.as_str())?, false).is_none() {
            return Ok(());
        }
        let event = EventNote {
            kind: "note".into(),
            note: Some(format!("{DUPLICATE_ALLOWED_NOTE} by {}", who.actor)),
        };
        self.store()
            .add_event(post.id, event, &who.actor.to_string(), now, Vec::new())
            .await?;
        Ok(())
    }

    /// Approves a draft (critic): a pass verdict ([`App::give_verdict`]) on the content as
    /// it is now, under the channel's rubric. The content policy must pass, and a token
    /// never approves a post whose content it wrote: one it created, last edited, or
    /// changed since the last approval ([`Post::authors`]; separation of duties). On a
    /// channel with `approvals_required` above one, the post stays a draft until enough
    /// distinct critics have passed the same content. Callers that showed the content to
    /// someone use [`App::approve_hash`], so that what is approved is what was read.
    pub async fn approve(&self, who: &Principal, id: PostId) -> Result<Post> {
        self.approve_hash(who, id, None).await
    }

    /// [`App::approve`], bound to the content hash the critic read: when the post's
    /// content changed since, nothing is recorded and the answer is [`Error::Conflict`].
    pub async fn approve_hash(
        &self,
        who: &Principal,
        id: PostId,
        content_hash: Option<String>,
    ) -> Result<Post> {
        Ok(self
            .verdict_at(who, id, VerdictInput::pass(content_hash), false, None)
            .await?
            .post)
    }

    /// [`App::approve`], but only the post as it stood at `version` (the version the
    /// caller looked at); any change since is [`Error::Conflict`] and approves nothing.
    pub async fn approve_version(&self, who: &Principal, id: PostId, version: i64) -> Result<Post> {
        Ok(self
            .verdict_at(who, id, VerdictInput::pass(None), false, Some(version))
            .await?
            .post)
    }

    /// Rejects a draft or an approved post (critic): a fail verdict with one reason
    /// (free text, or naming a rubric item as `item: ...`); it stays (or returns to) draft
    /// for the writer to revise, and the `max_revisions`-th fail quarantines it.
    pub async fn reject(&self, who: &Principal, id: PostId, reason: &str) -> Result<Post> {
        self.reject_hash(who, id, reason, None).await
    }

    /// [`App::reject`], bound to the content hash the critic read.
    pub async fn reject_hash(
        &self,
        who: &Principal,
        id: PostId,
        reason: &str,
        content_hash: Option<String>,
    ) -> Result<Post> {
        who.require(Action::Reject)?;
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Invalid(
                "a rejection needs a reason (--reason)".into(),
            ));
        }
        limits::check_chars("rejection reason", reason, MAX_REASON_CHARS)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let input = VerdictInput::fail(vec![reason.to_owned()], content_hash);
        Ok(self.verdict_at(who, id, input, false, None).await?.post)
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
        let change = Change::Withdrawn {
            version: post.version,
            note: "approval withdrawn".into(),
            error: None,
        };
        Ok(self
            .store()
            .change_post(self.change_by(who, &post, change))
            .await?)
    }

    /// Discards a draft (writer or operator); its events stay in the ledger. A draft that
    /// failed review (`revisions > 0`), and a quarantined one, only an operator discards.
    pub async fn discard(&self, who: &Principal, id: PostId) -> Result<()> {
        who.require(Action::Discard)?;
        let post = self
            .post_in(
                id,
                &[PostStatus::Draft],
                "only drafts can be discarded (unapprove it first)",
            )
            .await?;
        if post.is_quarantined() && !who.roles.grants(airlock_core::Role::Operator) {
            return Err(Error::Quarantined(format!(
                "post {id} is quarantined after {} failed reviews: only an operator may discard or release it",
                post.revisions
            )));
        }
        let operator = who.roles.grants(airlock_core::Role::Operator);
        if !operator && post.created_by != who.actor.to_string() {
            return Err(Error::Forbidden(format!(
                "post {id} was drafted by {}: only its writer or an operator may discard it",
                post.created_by
            )));
        }
        if post.revisions > 0 && !operator {
            return Err(Error::Forbidden(format!(
                "post {id} failed review {} time(s) and only an operator may discard it: revise it instead (discarding and drafting it again would escape the cap on failed reviews)",
                post.revisions
            )));
        }
        self.store()
            .delete_draft(id, post.version, &who.actor.to_string(), self.now())
            .await?;
        Ok(())
    }

    /// When each source path was last used on a channel since `since` (sites'
    /// `reuse_after`, docs/sites.md).
    pub async fn sources_used(
        &self,
        who: &Principal,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        who.require(Action::Read)?;
        Ok(self.store().sources_used(channel, since).await?)
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

    /// Posts as the HTTP API and MCP list them, newest first: the post JSON with `text`
    /// cut to its first [`LIST_EXCERPT_CHARS`] characters (by the store, so a page costs
    /// what it shows) and `text_truncated` saying whether it was cut. The whole text is
    /// in [`App::get_post`].
    pub async fn list_post_excerpts(
        &self,
        who: &Principal,
        filter: &PostFilter,
    ) -> Result<Vec<ListedPost>> {
        who.require(Action::Read)?;
        let max = LIST_EXCERPT_CHARS as usize;
        Ok(self
            .store()
            .list_excerpts(filter, LIST_EXCERPT_CHARS)
            .await?
            .into_iter()
            .map(|mut post| {
                let text_truncated = match post.content.text.char_indices().nth(max) {
                    Some((at, _)) => {
                        post.content.text.truncate(at);
                        true
                    }
                    None => false,
                };
                ListedPost {
                    post,
                    text_truncated,
                }
            })
            .collect())
    }

    /// One page of [`App::list_post_excerpts`]: at most `filter.limit` posts (default and
    /// most [`MAX_LIST_LIMIT`]), newest first, and where the next page starts (`before`),
    /// `None` when there are no more.
    pub async fn list_post_page(&self, who: &Principal, filter: &PostFilter) -> Result<PostPage> {
        let limit = filter
            .limit
            .unwrap_or(MAX_LIST_LIMIT)
            .clamp(1, MAX_LIST_LIMIT);
        // One more than the page, to know whether another follows.
        let probe = PostFilter {
            limit: Some(limit + 1),
            ..filter.clone()
        };
        let mut posts = self.list_post_excerpts(who, &probe).await?;
        let more = posts.len() > limit as usize;
        posts.truncate(limit as usize);
        let next = if more {
            posts.last().map(|p| p.post.id)
        } else {
            None
        };
        Ok(PostPage { posts, next })
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

/// Refuses ([`Error::Forbidden`]) a duplicate on purpose by anyone but an operator.
fn refuse_duplicate_override(who: &Principal, allow_duplicate: bool) -> Result<()> {
    if allow_duplicate && !who.roles.grants(airlock_core::Role::Operator) {
        return Err(Error::Forbidden(format!(
            "{} holds roles [{}]: only an operator may draft a duplicate on purpose (allow_duplicate); change the text, or revise the earlier post",
            who.actor,
            who.roles.to_list()
        )));
    }
    Ok(())
}

/// The duplicate window the store checks a new or edited text against: the channel's,
/// unless it is off or an operator allowed a duplicate.
fn duplicate_window(
    channel: &crate::ChannelSettings,
    allow_duplicate: bool,
) -> Option<chrono::Duration> {
    let window = channel.review.duplicate_window;
    (!allow_duplicate && window > chrono::Duration::zero()).then_some(window)
}

impl App {
    /// `content` with what its media's bytes are (docs/media.md): each fetched, hashed and
    /// typed, so approval binds them. A URL that does not answer or serves something that
    /// is not an image or video is refused, naming the part; a digest the caller gave
    /// must be the bytes'. Without media checks configured, content is taken as given.
    pub(crate) async fn inspect_media(&self, mut content: PostContent) -> Result<PostContent> {
        let Some(client) = self.draft_media_client() else {
            return Ok(content);
        };
        let multipart = content.is_multipart();
        let mut checked = Vec::new();
        for (index, part) in content.parts().iter().enumerate() {
            let label = if multipart {
                format!("part {}: ", index + 1)
            } else {
                String::new()
            };
            for media in &part.media {
                let found = airlock_platforms::media::inspect(
                    client,
                    media,
                    airlock_platforms::media::MAX_CHECKED_BYTES,
                )
                .await
                .map_err(|e| Error::Invalid(format!("{label}{e}")))?;
                if let (Some(given), Some(digest)) = (&media.sha256, &found.sha256)
                    && given != digest
                {
                    return Err(Error::Invalid(format!(
                        "{label}media {}: its bytes have sha256 {digest}, not the {given} given: give the URL of the file you meant",
                        media.url
                    )));
                }
                checked.push(found);
            }
        }
        let mut checked = checked.into_iter();
        for media in content.all_media_mut() {
            *media = checked.next().expect("one checked item per media item");
        }
        Ok(content)
    }
}

/// A schedule as written, refused when it lies in the past and was not asked for.
fn parse_schedule(at: &str, now: DateTime<Utc>, allow_past: bool) -> Result<DateTime<Utc>> {
    let at = parse_time(at, now).map_err(|e| Error::Invalid(e.to_string()))?;
    check_schedule(at, now, allow_past).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(at)
}

/// The shape of a post (parts, media types and sizes, a first comment) against what the
/// channel's platform takes: refused when drafted, naming the part and the limit.
fn check_shape(content: &PostContent, channel: &crate::ChannelSettings) -> Result<()> {
    let problems: Vec<String> = channel
        .policy
        .check(content)
        .into_iter()
        .filter(airlock_core::Violation::is_shape)
        .map(|v| v.to_string())
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "channel {} ({}) cannot take this post: {}",
        channel.name,
        channel.kind,
        problems.join("; ")
    )))
}

/// `content` with its parts given as a list: the first part may also be given as `text`
/// and `media`, but then they must be that part's.
pub(crate) fn with_parts(mut content: PostContent, parts: Vec<Part>) -> Result<PostContent> {
    let Some(first) = parts.first() else {
        return Err(Error::Invalid(
            "parts is empty: give at least one part {text, media}".into(),
        ));
    };
    let text_differs = !content.text.is_empty() && content.text != first.text;
    let media_differs = !content.media.is_empty() && content.media != first.media;
    if text_differs || media_differs {
        return Err(Error::Invalid(
            "text and media with parts must be those of part 1: give the post's text in parts only"
                .into(),
        ));
    }
    content.set_parts(parts);
    Ok(content)
}

/// Shape checks every draft meets: a text, well-formed URLs, and the size limits of
/// [`airlock_core::limits`], global and the channel's own (its length and media count);
/// refused with the first problem [`crate::check::content_problems`] finds. The rest of
/// the policy is checked at approval.
fn check_content(content: &PostContent, channel: &crate::ChannelSettings) -> Result<()> {
    match crate::check::content_problems(content, channel)
        .into_iter()
        .next()
    {
        Some(first) => Err(Error::Invalid(first.message)),
        None => Ok(()),
    }
}
