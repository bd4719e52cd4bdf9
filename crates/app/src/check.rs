//! Checking a draft without drafting it ([`App::check_draft`]; MCP's `check_draft`, the
//! HTTP API's `POST /posts/check`): every problem the channel finds, each with a machine
//! `kind` and what it stops (the draft, its approval, its publishing), the length of each
//! part as the platform counts it, what publishing it would cost, and when the channel's
//! next quota slot frees. Nothing is written.
//!
//! A draft that only breaks the content policy (a phrase rule, a missing title) is still
//! drafted: its problems stop its approval, not the draft ([`Blocks::Approval`]), and
//! [`App::create_post`] returns them and records them on the post's timeline.

use chrono::{DateTime, Utc};
use serde::Serialize;

use airlock_core::budget::{Spend, to_usd};
use airlock_core::limits::{self, TooLarge};
use airlock_core::policy::with_appended_link;
use airlock_core::post::check_url;
use airlock_core::quota::Usage;
use airlock_core::time::{check_schedule, parse_time};
use airlock_core::{Action, Actor, ChannelName, PostContent, Violation};
use airlock_store::{Pause, StoreError};

use crate::posts::DraftInput;
use crate::{App, ChannelSettings, Error, Principal, Result};

/// What a problem stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Blocks {
    /// The draft itself: drafting it is refused (`invalid`) until it is fixed.
    Draft,
    /// Its approval: it is drafted, but no pass approves it until it is fixed.
    Approval,
    /// Its publishing: approved, it would still never go out.
    Publish,
}

/// One problem with a draft.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckViolation {
    /// A stable machine name: a content policy's (`too_long`, `forbidden_phrase`,
    /// `missing_required_phrase`, `missing_title`, `missing_media`, `too_many_media`,
    /// `media_type`, ...) or the draft's own (`empty_text`, `too_large`, `invalid_url`,
    /// `invalid_parts`, `invalid_schedule`, `past_schedule`, `media_unreadable`,
    /// `draft_limit`, `test_post_never_published`).
    pub kind: String,
    /// What it stops.
    pub blocks: Blocks,
    /// The part it is in, from 1 (the first comment is the part after the last), when the
    /// post has several parts; `null` for the post as a whole.
    pub part: Option<usize>,
    /// What is wrong and what to change.
    pub message: String,
}

impl CheckViolation {
    fn new(kind: &str, blocks: Blocks, message: String) -> Self {
        CheckViolation {
            kind: kind.to_owned(),
            blocks,
            part: None,
            message,
        }
    }

    fn in_part(mut self, part: Option<usize>) -> Self {
        self.part = part;
        self
    }

    /// A content policy's violation: a shape the platform cannot take stops the draft,
    /// anything else its approval.
    pub fn of_policy(violation: &Violation) -> Self {
        let blocks = if violation.is_shape() {
            Blocks::Draft
        } else {
            Blocks::Approval
        };
        CheckViolation::new(violation.kind(), blocks, violation.to_string())
            .in_part(violation.part())
    }

    fn of_too_large(error: &TooLarge) -> Self {
        let kind = match error.field {
            "text" => "too_long",
            "media list" => "too_many_media",
            "thread" => "too_many_parts",
            _ => "too_large",
        };
        CheckViolation::new(kind, Blocks::Draft, error.to_string()).in_part(error.part)
    }
}

/// The length of one part as the platform counts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PartLength {
    /// The part, from 1; the first comment is the part after the last.
    pub part: usize,
    /// Whether it is the first comment.
    pub first_comment: bool,
    /// Its length in the channel's unit (`length_unit`), counting the link a channel
    /// appends to the text (X) as it is sent.
    pub length: usize,
    /// The channel's most (`null`: no limit).
    pub max_chars: Option<usize>,
    /// Whether it fits.
    pub fits: bool,
}

/// What publishing the draft would charge its channel's monthly budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DraftCost {
    /// Its cost, in US dollars: every part and the first comment, reserved when it is
    /// claimed.
    pub usd: f64,
    /// The channel's spending this month against its budget.
    pub budget: Spend,
}

/// The channel's quota now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DraftQuota {
    /// When the channel can publish next, every limit considered (`null`: now).
    pub next_slot_at: Option<DateTime<Utc>>,
    /// The channel's local day.
    pub daily: Usage,
    /// The rolling window across channels.
    pub window: Usage,
    /// Approved posts on the channel waiting for a quota slot.
    pub waiting: usize,
}

/// What the channel would make of a draft ([`App::check_draft`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DraftCheck {
    /// The channel.
    pub channel: ChannelName,
    /// Whether drafting it would be accepted now: nothing in `violations` stops the draft.
    /// (A duplicate of a queued text is found only when drafting.)
    pub accepted: bool,
    /// Whether a critic's pass could approve it as it is: nothing stops the draft or its
    /// approval.
    pub approvable: bool,
    /// Every problem found, in the order the draft's checks find them.
    pub violations: Vec<CheckViolation>,
    /// How lengths are counted.
    pub length_unit: String,
    /// Each part's length against the channel's `max_chars`.
    pub lengths: Vec<PartLength>,
    /// When it would be due (`null`: `scheduled_at` does not read).
    pub scheduled_at: Option<DateTime<Utc>>,
    /// What publishing it would cost (`null`: the channel has no money budget).
    pub cost: Option<DraftCost>,
    /// The channel's quota now.
    pub quota: DraftQuota,
    /// Why publishing on the channel is paused (`null`: it is not).
    pub pause_reason: Option<String>,
}

impl App {
    /// What the channel would make of `input` (writer), without drafting it: every
    /// problem (the draft's shape and limits, the content policy, its schedule, the
    /// caller's drafts limit), the length of each part as the platform counts it, the cost
    /// against the channel's budget, and the next quota slot. Content problems are the
    /// answer; only input that cannot be read at all (an unknown channel) and a caller
    /// without the writer role are errors. Media are not fetched: what only their bytes
    /// show is checked when drafting.
    pub async fn check_draft(&self, who: &Principal, input: DraftInput) -> Result<DraftCheck> {
        who.require(Action::Create)?;
        let now = self.now();
        let channel = self.channel(&input.channel)?;
        let mut violations = Vec::new();
        let mut content = PostContent {
            channel: channel.name.clone(),
            title: crate::posts::non_empty(input.title),
            text: input.text,
            media: input.media,
            more: vec![],
            first_comment: crate::posts::non_empty(input.first_comment),
            link: crate::posts::non_empty(input.link),
            source: None,
        };
        if let Some(parts) = input.parts {
            match crate::posts::with_parts(content.clone(), parts) {
                Ok(with) => content = with,
                Err(e) => violations.push(CheckViolation::new(
                    "invalid_parts",
                    Blocks::Draft,
                    e.to_string(),
                )),
            }
        }
        // Media bytes are not fetched: a check writes nothing and is asked as the writer
        // types, so fetching would let anyone with the writer role make airlock download
        // without limit or trace. Their type and size are checked when drafting.
        violations.extend(content_problems(&content, channel));
        for violation in channel.policy.check(&content) {
            let found = CheckViolation::of_policy(&violation);
            // The draft's own limits already named it (the channel's length, media count).
            let named = violations
                .iter()
                .any(|v| v.kind == found.kind && v.part == found.part);
            if !named {
                violations.push(found);
            }
        }
        let scheduled_at = match input.scheduled_at.as_deref() {
            None => Some(now),
            Some(at) => match parse_time(at, now) {
                Ok(at) => {
                    if let Err(past) = check_schedule(at, now, input.allow_past) {
                        violations.push(CheckViolation::new(
                            "past_schedule",
                            Blocks::Draft,
                            past.to_string(),
                        ));
                    }
                    Some(at)
                }
                Err(e) => {
                    violations.push(CheckViolation::new(
                        "invalid_schedule",
                        Blocks::Draft,
                        e.to_string(),
                    ));
                    None
                }
            },
        };
        if input.test && !channel.kind.publishes_test_posts() {
            violations.push(CheckViolation::new(
                "test_post_never_published",
                Blocks::Publish,
                format!(
                    "a test post is published only on sandbox channels: channel {} ({}) never publishes it; leave test out to draft a real post",
                    channel.name, channel.kind
                ),
            ));
        }
        if matches!(who.actor, Actor::Token(_)) {
            let actor = who.actor.to_string();
            let held = self.store().live_drafts_by(&actor).await?;
            let max = self.settings().max_drafts_per_token;
            if held >= i64::from(max) {
                let refusal = Error::from(StoreError::DraftLimit { actor, held, max });
                violations.push(CheckViolation::new(
                    "draft_limit",
                    Blocks::Draft,
                    refusal.to_string(),
                ));
            }
        }

        let quota = self.quota_now().await?;
        let mine = quota.channels.iter().find(|q| q.channel == channel.name);
        let waiting = self
            .store()
            .deferred_posts()
            .await?
            .iter()
            .filter(|d| d.channel == channel.name)
            .count();
        let cost = channel
            .charge(&content)
            .zip(mine.and_then(|q| q.budget))
            .map(|(charge, budget)| DraftCost {
                usd: to_usd(charge.cost),
                budget,
            });
        let pause_reason = pause_reason(&self.pauses_now().await?, &channel.name);
        let accepted = !violations.iter().any(|v| v.blocks == Blocks::Draft);
        let approvable = accepted && !violations.iter().any(|v| v.blocks == Blocks::Approval);
        Ok(DraftCheck {
            channel: channel.name.clone(),
            accepted,
            approvable,
            violations,
            length_unit: channel.policy.unit.describe().to_owned(),
            lengths: lengths(&content, channel),
            scheduled_at,
            cost,
            quota: DraftQuota {
                next_slot_at: mine.and_then(|q| q.next_slot_at),
                daily: mine.map(|q| q.usage).unwrap_or(Usage {
                    used: 0,
                    limit: channel.daily_limit,
                    remaining: channel.daily_limit,
                    next_free_at: None,
                }),
                window: quota.window.usage,
                waiting,
            },
            pause_reason,
        })
    }
}

/// Why publishing on `channel` is paused, by its own pause or everything's; `None` when
/// it is not.
pub(crate) fn pause_reason(pauses: &[Pause], channel: &ChannelName) -> Option<String> {
    let own = pauses.iter().find(|p| p.scope == channel.as_str());
    let global = pauses.iter().find(|p| p.scope == "*");
    own.map(|p| p.reason.clone())
        .or_else(|| global.map(|p| format!("all channels paused: {}", p.reason)))
}

/// Every problem with a draft's shape that stops it being drafted, in the order drafting
/// checks them: a text in every part, the limits of [`airlock_core::limits`] (global and
/// the channel's own length and media count), well-formed URLs. Drafting refuses with the
/// first.
pub(crate) fn content_problems(
    content: &PostContent,
    channel: &ChannelSettings,
) -> Vec<CheckViolation> {
    let mut found = Vec::new();
    let empty = |message: String| CheckViolation::new("empty_text", Blocks::Draft, message);
    if content.text.trim().is_empty() {
        found.push(empty(
            "the text is empty: give --text or --text-file".into(),
        ));
    }
    for (index, part) in content.more.iter().enumerate() {
        if part.text.trim().is_empty() {
            found.push(
                empty(format!(
                    "part {} has no text: write it, or leave the part out",
                    index + 2
                ))
                .in_part(Some(index + 2)),
            );
        }
    }
    if content
        .first_comment
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        found.push(empty(
            "the first comment is empty: write it, or leave it out".into(),
        ));
    }
    found.extend(
        limits::content_too_large(
            content,
            &channel.policy,
            &format!("channel {} ({})", channel.name, channel.kind),
        )
        .iter()
        .map(CheckViolation::of_too_large),
    );
    let invalid_url = |e: airlock_core::InvalidValue| {
        CheckViolation::new("invalid_url", Blocks::Draft, e.to_string())
    };
    if let Some(link) = &content.link {
        found.extend(check_url("link", link).err().map(invalid_url));
    }
    for media in content.all_media() {
        found.extend(check_url("media url", &media.url).err().map(invalid_url));
    }
    found
}

/// Each part's length (and the first comment's) as the channel's platform counts it.
fn lengths(content: &PostContent, channel: &ChannelSettings) -> Vec<PartLength> {
    let policy = &channel.policy;
    let measure = |part: usize, text: &str, link: Option<&str>, first_comment: bool| {
        let sent = if policy.appends_link {
            with_appended_link(text, link)
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        let length = policy.unit.count(&sent);
        PartLength {
            part,
            first_comment,
            length,
            max_chars: policy.max_chars,
            fits: policy.max_chars.is_none_or(|max| length <= max),
        }
    };
    let parts = content.parts();
    let mut found: Vec<PartLength> = parts
        .iter()
        .enumerate()
        .map(|(index, part)| {
            let link = (index == 0).then_some(content.link.as_deref()).flatten();
            measure(index + 1, &part.text, link, false)
        })
        .collect();
    if let Some(comment) = &content.first_comment {
        found.push(measure(parts.len() + 1, comment, None, true));
    }
    found
}
