//! Drafting the next post for a channel from its site, optionally for a slot.
//!
//! 1. With a slot: its instant on the current local day in the channel's time zone and
//!    its key ([`crate::slot`]). If the ledger already has a post for that key, stop:
//!    the slot is filled.
//! 2. The first eligible article ([`crate::candidate`]), checking `HEAD`s only until one
//!    passes. None: nothing is drafted, and every reason is reported.
//! 3. The draft, as [`Principal::scheduler`]: the template's text, the image as media on
//!    Instagram, `source` = the article's path, SHA-256 and `updated`, `scheduled_at` =
//!    the slot's instant (or now), `slot` = its key. The store allows one post per slot
//!    and channel, so when two runs race for a slot, the second gets the first's post
//!    back and drafts nothing ([`Composed::SlotFilled`]).
//! 4. When the channel names `auto_approve`, the draft (which passed the policy in step
//!    2) is approved as that principal. A slot's draft that nobody has touched since it
//!    was created (a run that stopped between drafting and approving) is approved by the
//!    next run; one a person edited, rejected or unapproved is left alone.
//!
//! A dry run does steps 1 and 2 and reports the post it would draft, writing nothing.
//!
//! Without a slot every run drafts: the reuse window keeps consecutive runs from taking
//! the same article, but only a slot makes a run idempotent.

use chrono::{DateTime, Utc};

use airlock_app::PostFilter;
use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, Principal};
use airlock_core::time::format_utc;
use airlock_core::{Actor, Post, PostContent, PostStatus};

use crate::candidate::{Eligible, Skipped, first_eligible};
use crate::head::Checker;
use crate::slot::{Slot, SlotInstance};
use crate::{Result, Target};

/// What to compose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ComposeRequest {
    /// Fill this slot on the current local day (else draft for now, without a slot).
    pub slot: Option<Slot>,
    /// Report what would be drafted; write nothing.
    pub dry_run: bool,
}

/// What compose did.
// One value per call, never stored in bulk: boxing would only complicate matching.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Composed {
    /// A post was drafted (and approved, when the channel auto-approves).
    Drafted {
        /// The post as it stands now.
        post: Post,
        /// The article it was made from.
        article: Eligible,
    },
    /// Dry run: the post that would be drafted.
    WouldDraft(Plan),
    /// The slot already has a post; nothing was drafted.
    SlotFilled {
        /// The slot's post as it stands now.
        post: Post,
    },
    /// No article is eligible; nothing was drafted.
    NothingEligible {
        /// Every article passed over, with its reason.
        skipped: Vec<Skipped>,
    },
}

/// A post about to be drafted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The article.
    pub article: Eligible,
    /// The post's content (its `source` included).
    pub content: PostContent,
    /// When it is scheduled.
    pub scheduled_at: DateTime<Utc>,
    /// The slot key, if for a slot.
    pub slot: Option<String>,
    /// The principal that will approve it, if the channel auto-approves.
    pub auto_approve: Option<String>,
}

/// Drafts the next post for the target's channel (see the module docs).
#[tracing::instrument(skip_all, fields(channel = %target.channel.channel, slot = request.slot.map(|s| s.to_string()).unwrap_or_default()))]
pub async fn compose(
    app: &App,
    target: Target<'_>,
    checker: &Checker,
    request: ComposeRequest,
) -> Result<Composed> {
    let channel = app.channel(target.channel.channel.as_str())?;
    let instance = request
        .slot
        .map(|slot| slot.today(app.now(), channel.timezone));
    compose_slot(app, target, checker, instance, request.dry_run).await
}

/// [`compose`] for a given slot instance (the scheduler fills tomorrow's early slots
/// before midnight).
pub(crate) async fn compose_slot(
    app: &App,
    target: Target<'_>,
    checker: &Checker,
    instance: Option<SlotInstance>,
    dry_run: bool,
) -> Result<Composed> {
    let now = app.now();
    if let Some(instance) = &instance
        && let Some(post) = slot_post(app, target, &instance.key).await?
    {
        let post = if dry_run {
            post
        } else {
            approve_untouched(app, target, post).await?
        };
        return Ok(Composed::SlotFilled { post });
    }

    let (article, skipped) = first_eligible(app, target, checker).await?;
    let Some(article) = article else {
        return Ok(Composed::NothingEligible { skipped });
    };
    let plan = Plan {
        content: article.content.clone(),
        article,
        scheduled_at: instance.as_ref().map_or(now, |i| i.at),
        slot: instance.map(|i| i.key),
        auto_approve: target.channel.auto_approve.clone(),
    };
    if dry_run {
        return Ok(Composed::WouldDraft(plan));
    }

    let content = plan.content.clone();
    let input = DraftInput {
        channel: content.channel.to_string(),
        text: content.text.clone(),
        title: content.title.clone(),
        media: content.media.clone(),
        link: content.link.clone(),
        scheduled_at: Some(format_utc(plan.scheduled_at)),
        test: false,
        // The time is the plan's, not typed: a slot this run reached late is due at once.
        allow_past: true,
        parts: (!content.more.is_empty()).then(|| content.parts()),
        first_comment: content.first_comment,
    };
    let origin = DraftOrigin {
        source: content.source,
        slot: plan.slot.clone(),
        allow_duplicate: false,
    };
    let created = app
        .create_post(&Principal::scheduler(), input, None, origin)
        .await?;
    let post = approve_untouched(app, target, created.post).await?;
    if created.existing {
        return Ok(Composed::SlotFilled { post });
    }
    tracing::info!(post_id = post.id.0, path = %plan.article.path, status = %post.status, "drafted from the site");
    Ok(Composed::Drafted {
        post,
        article: plan.article,
    })
}

/// The post already filling `key` on the channel, if any. Only a shortcut that saves
/// `HEAD` checks: the store's uniqueness of (channel, slot) is what guarantees one post
/// per slot.
async fn slot_post(app: &App, target: Target<'_>, key: &str) -> Result<Option<Post>> {
    let filter = PostFilter {
        channel: Some(target.channel.channel.clone()),
        slot: Some(key.to_owned()),
        limit: Some(1),
        ..PostFilter::default()
    };
    Ok(app
        .list_posts(&Principal::scheduler(), &filter)
        .await?
        .into_iter()
        .next())
}

/// Approves a post as the channel's `auto_approve` principal when it is a draft the
/// scheduler made and nobody has touched since (its only event is its creation). The
/// approval is bound to the version that was found untouched: an edit between the look
/// and the approval is a conflict and approves nothing. A concurrent approval by another
/// run is not an error.
async fn approve_untouched(app: &App, target: Target<'_>, post: Post) -> Result<Post> {
    let Some(approver) = &target.channel.auto_approve else {
        return Ok(post);
    };
    if post.status != PostStatus::Draft || post.created_by != Actor::Scheduler.to_string() {
        return Ok(post);
    }
    let detail = app.get_post(&Principal::scheduler(), post.id).await?;
    if detail.post.status != PostStatus::Draft || detail.events.len() != 1 {
        return Ok(detail.post);
    }
    match app
        .approve_version(
            &Principal::auto_approver(approver),
            post.id,
            detail.post.version,
        )
        .await
    {
        Ok(approved) => Ok(approved),
        Err(airlock_app::Error::Conflict(_) | airlock_app::Error::IllegalTransition(_)) => {
            Ok(app.get_post(&Principal::scheduler(), post.id).await?.post)
        }
        Err(e) => Err(e.into()),
    }
}
