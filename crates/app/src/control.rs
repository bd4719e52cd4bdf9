//! Pauses, quota status and deferrals, and channel status.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use airlock_core::budget::{BudgetRule, Spend, month_bounds, spend};
use airlock_core::quota::{CLOCK_ALLOWANCE, Usage, daily_usage, day_bounds, window_usage};
use airlock_core::time::format_utc;
use airlock_core::{Action, Actor, ChannelKind, ChannelName, PostId, PostStatus, Span};
use airlock_store::{Change, Pause, PauseScope, PostChange, PostFilter, StoreError};

use crate::{App, Error, Principal, Result};

/// Quota use now (`airlock quota --json`, `GET /quota`, `quota_status`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuotaStatus {
    /// When this was computed.
    pub now: DateTime<Utc>,
    /// The rolling window across channels.
    pub window: WindowStatus,
    /// Each channel's daily limit.
    pub channels: Vec<ChannelQuota>,
}

/// The rolling window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WindowStatus {
    /// Its length (`60m`).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "60m"))]
    pub window: Span,
    /// Use.
    #[serde(flatten)]
    pub usage: Usage,
}

/// One channel's daily quota.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelQuota {
    /// The channel.
    pub channel: ChannelName,
    /// Its calendar (IANA zone).
    pub timezone: String,
    /// The local day's start.
    pub day_start: DateTime<Utc>,
    /// Use.
    #[serde(flatten)]
    pub usage: Usage,
    /// When this channel can publish next, every limit considered (`null`: now).
    pub next_slot_at: Option<DateTime<Utc>>,
    /// The channel's money spent this month against its budget (X channels with
    /// `monthly_budget_usd`); absent for channels without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Spend>,
}

/// One channel as `channels --json` shows it (docs/cli.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelStatus {
    /// Name.
    pub name: ChannelName,
    /// Kind.
    pub kind: ChannelKind,
    /// Expected account.
    pub account: Option<String>,
    /// Whether publishing on it is paused (by itself or by a global pause).
    pub paused: bool,
    /// Why.
    pub pause_reason: Option<String>,
    /// Publishes counted today (local day).
    pub daily_used: u32,
    /// Daily limit.
    pub daily_limit: u32,
    /// The content policy a post must meet to be approved and published.
    pub policy: ChannelPolicy,
    /// What media it takes.
    pub media: MediaRules,
    /// How its posts are reviewed.
    pub review: ReviewRulesView,
    /// Its money spent and left this month, and what a post costs (X channels with
    /// `monthly_budget_usd`); absent for channels without a budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<ChannelBudget>,
}

/// A channel's content policy, for reading: what a post must meet to be approved and
/// published. The review packet's `policy` adds what it finds wrong with the post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelPolicy {
    /// Longest text (`null`: no limit), in `length_unit`.
    pub max_chars: Option<usize>,
    /// How length is counted.
    pub length_unit: String,
    /// Phrases that must not appear (case-insensitive), anywhere in the post.
    pub forbidden: Vec<String>,
    /// Phrases that must appear verbatim, in the first part's text.
    pub required: Vec<String>,
    /// A title is required.
    pub require_title: bool,
    /// At least one media item is required.
    pub require_media: bool,
    /// Most media items per part.
    pub max_media: Option<usize>,
    /// Most parts of a thread (1: single posts only).
    pub max_parts: usize,
    /// Whether the platform takes a first comment.
    pub first_comment: bool,
    /// Most UTF-8 bytes of a text (`null`: no limit besides `max_chars`).
    pub max_bytes: Option<usize>,
    /// Most `#hashtags` in a text.
    pub max_hashtags: Option<usize>,
    /// Most `@mentions` in a text.
    pub max_mentions: Option<usize>,
    /// Most distinct links in a text.
    pub max_links: Option<usize>,
}

impl ChannelPolicy {
    /// The policy as configured.
    pub fn of(policy: &airlock_core::ContentPolicy) -> Self {
        ChannelPolicy {
            max_chars: policy.max_chars,
            length_unit: policy.unit.describe().to_owned(),
            forbidden: policy.forbidden.clone(),
            required: policy.required.clone(),
            require_title: policy.require_title,
            require_media: policy.require_media,
            max_media: policy.max_media,
            max_parts: policy.max_parts.max(1),
            first_comment: policy.first_comment,
            max_bytes: policy.max_bytes,
            max_hashtags: policy.max_hashtags,
            max_mentions: policy.max_mentions,
            max_links: policy.max_links,
        }
    }
}

/// What media a channel takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MediaRules {
    /// The image types it takes (`image/jpeg`, ...); empty takes any image.
    pub image_types: Vec<String>,
    /// Only JPEG images (`.jpg`/`.jpeg`).
    pub jpeg_only: bool,
    /// The largest image, in bytes (`null`: no limit airlock knows of).
    pub max_image_bytes: Option<u64>,
    /// Video: `none`, `alone` (one video, alone in its part) or `in_albums`.
    pub video: String,
    /// The largest video, in bytes.
    pub max_video_bytes: Option<u64>,
    /// Whether each media item is fetched when drafted, so a type or size the channel
    /// does not take is refused then (otherwise it is checked before publishing).
    pub checked_when_drafted: bool,
}

impl MediaRules {
    /// The rules of `policy`; `checked` when drafts fetch their media.
    pub fn of(policy: &airlock_core::ContentPolicy, checked: bool) -> Self {
        use airlock_core::policy::VideoRule;
        MediaRules {
            image_types: if policy.jpeg_only {
                vec!["image/jpeg".to_owned()]
            } else {
                policy.image_types.iter().map(|t| (*t).to_owned()).collect()
            },
            jpeg_only: policy.jpeg_only,
            max_image_bytes: policy.max_image_bytes,
            video: match policy.video {
                VideoRule::None => "none",
                VideoRule::Alone => "alone",
                VideoRule::InAlbums => "in_albums",
            }
            .to_owned(),
            max_video_bytes: policy.max_video_bytes,
            checked_when_drafted: checked,
        }
    }
}

/// How a channel's posts are reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewRulesView {
    /// Distinct critics that must pass the same content.
    pub approvals_required: u32,
    /// Fail verdicts before quarantine.
    pub max_revisions: u32,
    /// A draft whose text is that of a post going out on the channel within this long is
    /// refused as a duplicate (`0s`: not checked).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "7d"))]
    pub duplicate_window: Span,
    /// Where the rubric comes from (a path, or the built-in rubric).
    pub rubric_origin: String,
    /// The SHA-256 of the rubric as it reads now (`null` when it cannot be read).
    pub rubric_hash: Option<String>,
    /// Its item ids: each fail reason starts with one, or with `policy:`.
    pub rubric_items: Vec<String>,
    /// Why the rubric cannot be read (`null` when it can).
    pub rubric_error: Option<String>,
}

/// A channel's money budget this month.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelBudget {
    /// Spent and left.
    #[serde(flatten)]
    pub spend: Spend,
    /// What a post without a link costs, in US dollars.
    pub post_usd: f64,
    /// What a post with a link costs, in US dollars.
    pub url_post_usd: f64,
}

/// An active pause with, when a post's unknown outcome set it, where that post stands
/// ([`App::explained_pauses`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainedPause {
    /// The pause, its reason as stored.
    pub pause: Pause,
    /// The post whose unknown outcome set it, if one did.
    pub unknown: Option<UnknownOutcome>,
}

/// The post whose unknown outcome set a pause, now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOutcome {
    /// The post.
    pub post: PostId,
    /// Its channel.
    pub channel: ChannelName,
    /// What happened (`post 12 has an unknown outcome (timed out)`), without the step to
    /// take, which depends on who reads it.
    pub what: String,
    /// Where it stands once a person settled it; `None` while it is still `needs_review`.
    pub settled: Option<PostStatus>,
    /// Another post on the same channel that still needs review, if any.
    pub waiting: Option<PostId>,
}

impl App {
    /// Pauses one channel or everything (operator). `false` if already paused.
    pub async fn pause(
        &self,
        who: &Principal,
        channel: Option<&str>,
        reason: &str,
    ) -> Result<bool> {
        who.require(Action::Pause)?;
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Invalid("a pause needs a reason (--reason)".into()));
        }
        airlock_core::limits::check_chars(
            "pause reason",
            reason,
            airlock_core::limits::MAX_REASON_CHARS,
        )
        .map_err(|e| Error::Invalid(e.to_string()))?;
        if unknown_pause_post(reason).is_some() {
            // It would read as the pause a post in doubt sets, and be lifted with it.
            return Err(Error::Invalid(format!(
                "a pause reason may not start with \"post N{}\": that is how airlock marks the pause a post in doubt sets; word it otherwise",
                airlock_store::UNKNOWN_PAUSE_MARK.trim_end_matches(" (")
            )));
        }
        let scope = self.scope(channel)?;
        let label = scope_label(&scope);
        let notify = self.notifications(
            "paused",
            None,
            format!("{label} paused by {}: {reason}", who.actor),
            json!({"scope": scope.as_key(), "reason": reason}),
        );
        Ok(self
            .store()
            .pause(&scope, reason, &who.actor.to_string(), self.now(), notify)
            .await?)
    }

    /// Lifts a pause (operator only). `false` if it was not paused.
    pub async fn resume(&self, who: &Principal, channel: Option<&str>) -> Result<bool> {
        who.require(Action::Pause)?;
        let scope = self.scope(channel)?;
        let notify = self.notifications(
            "resumed",
            None,
            format!("{} resumed by {}", scope_label(&scope), who.actor),
            json!({"scope": scope.as_key()}),
        );
        let resumed = self
            .store()
            .resume(&scope, &who.actor.to_string(), self.now(), notify)
            .await?;
        if resumed {
            if let PauseScope::Channel(name) = &scope {
                self.forget_account(name);
            }
            self.wake_dispatcher();
        }
        Ok(resumed)
    }

    fn scope(&self, channel: Option<&str>) -> Result<PauseScope> {
        match channel {
            None => Ok(PauseScope::All),
            Some(name) => Ok(PauseScope::Channel(self.channel(name)?.name.clone())),
        }
    }

    /// Active pauses, as people read them: the pause a post with an unknown outcome set
    /// says, once that post is settled, what is left to do.
    pub async fn pauses(&self, who: &Principal) -> Result<Vec<Pause>> {
        who.require(Action::Read)?;
        self.pauses_now().await
    }

    /// Active pauses as stored, each with where the post whose unknown outcome set it
    /// stands now, so that a front end can say the one step left in its own words (the
    /// dashboard points to its buttons, the CLI to its commands).
    pub async fn explained_pauses(&self, who: &Principal) -> Result<Vec<ExplainedPause>> {
        who.require(Action::Read)?;
        self.explain_pauses().await
    }

    async fn explain_pauses(&self) -> Result<Vec<ExplainedPause>> {
        let pauses = self.store().pauses().await?;
        let mut explained = Vec::with_capacity(pauses.len());
        for pause in pauses {
            let unknown = match unknown_pause_post(&pause.reason) {
                Some(id) if set_by_doubt(&pause) => self.unknown_outcome(id, &pause.reason).await?,
                _ => None,
            };
            explained.push(ExplainedPause { pause, unknown });
        }
        Ok(explained)
    }

    async fn unknown_outcome(&self, id: PostId, reason: &str) -> Result<Option<UnknownOutcome>> {
        let post = match self.store().get_post(id).await {
            Ok(post) => post,
            Err(StoreError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let waiting = self
            .store()
            .list_posts(&PostFilter {
                status: Some(PostStatus::NeedsReview),
                channel: Some(post.content.channel.clone()),
                limit: Some(2),
                ..PostFilter::default()
            })
            .await?
            .into_iter()
            .map(|p| p.id)
            .find(|other| *other != id);
        Ok(Some(UnknownOutcome {
            post: id,
            channel: post.content.channel,
            what: reason
                .split("; settle it with")
                .next()
                .unwrap_or(reason)
                .to_owned(),
            settled: (post.status != PostStatus::NeedsReview).then_some(post.status),
            waiting,
        }))
    }

    pub(crate) async fn pauses_now(&self) -> Result<Vec<Pause>> {
        Ok(self
            .explain_pauses()
            .await?
            .into_iter()
            .map(|ExplainedPause { mut pause, unknown }| {
                if let Some(u) = unknown
                    && let Some(status) = u.settled
                {
                    pause.reason = settled_pause_reason(
                        &pause.reason,
                        (u.post, status),
                        u.waiting,
                        &pause.scope,
                    );
                }
                pause
            })
            .collect())
    }

    /// Quota use: the window, and each channel's day, with when slots free.
    pub async fn quota_status(&self, who: &Principal) -> Result<QuotaStatus> {
        who.require(Action::Read)?;
        self.quota_now().await
    }

    /// Re-decides every quota deferral (each pass of the dispatcher and the reaper): a post
    /// whose channel has a slot free now is due again at once (as many per channel as it has
    /// free slots, the earliest deferred first), one whose slot now frees sooner waits for
    /// that instead. A raised limit or a freed slot so never leaves a post waiting for a slot
    /// decided under the old figures. Returns how many posts it released.
    pub async fn recheck_deferrals(&self) -> Result<usize> {
        let deferred = self.store().deferred_posts().await?;
        if deferred.is_empty() {
            return Ok(0);
        }
        let quota = match self.quota_now().await {
            Ok(quota) => quota,
            // Rows that cannot be trusted stop publishing, as they do for a claim.
            Err(Error::CorruptQuota(reason)) => {
                let reason = reason.trim_start_matches("quota state is corrupt: ");
                return Err(self.corrupt_quota(reason.to_owned()).await);
            }
            Err(e) => return Err(e),
        };
        let mut window_free = quota.window.usage.remaining;
        let mut free: std::collections::HashMap<&ChannelName, u32> = quota
            .channels
            .iter()
            .filter(|c| c.next_slot_at.is_none())
            .map(|c| {
                // A money budget says only that one more may start.
                let slots = if c.budget.is_some() {
                    1
                } else {
                    c.usage.remaining
                };
                (&c.channel, slots)
            })
            .collect();
        let mut released = 0;
        for post in &deferred {
            let next = match free.get_mut(&post.channel) {
                Some(slots) if *slots > 0 && window_free > 0 => {
                    *slots -= 1;
                    window_free -= 1;
                    None
                }
                _ => match quota.channels.iter().find(|c| c.channel == post.channel) {
                    Some(c) => match c.next_slot_at {
                        Some(at) if at < post.until => Some(at),
                        _ => continue,
                    },
                    // A channel no longer configured: its posts stay as they are.
                    None => continue,
                },
            };
            let change = Change::DeferralLifted {
                version: post.version,
                until: next,
                note: match next {
                    None => "a quota slot is free now (one freed, or a limit was raised)".into(),
                    Some(at) => format!("the next quota slot frees sooner, at {}", format_utc(at)),
                },
            };
            let actor = Actor::Dispatcher(self.worker().to_owned()).to_string();
            let change = PostChange::new(post.id, actor, quota.now, change);
            match self.store().change_post(change).await {
                Ok(_) => released += usize::from(next.is_none()),
                // Claimed, edited or deferred again meanwhile: that write decided.
                Err(StoreError::Conflict(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if released > 0 {
            self.wake_dispatcher();
        }
        Ok(released)
    }

    /// Posts waiting on quota: how many, and the soonest a slot frees for one.
    pub async fn waiting_on_quota(&self) -> Result<Option<(usize, DateTime<Utc>)>> {
        let deferred = self.store().deferred_posts().await?;
        Ok(deferred
            .first()
            .map(|soonest| (deferred.len(), soonest.until)))
    }

    pub(crate) async fn quota_now(&self) -> Result<QuotaStatus> {
        let now = self.now();
        let settings = self.settings();
        // As airlock_store::quota_since reads for a decision, for every channel at once.
        let earliest = now - CLOCK_ALLOWANCE;
        let earliest_day = settings
            .channels
            .values()
            .map(|c| day_bounds(earliest, c.timezone).0)
            .min()
            .unwrap_or(now);
        let earliest_month = settings
            .channels
            .values()
            .filter(|c| c.budget.is_some())
            .map(|c| month_bounds(earliest, c.timezone).0)
            .min()
            .unwrap_or(now);
        let since = earliest_day
            .min(now - settings.window.window)
            .min(earliest_month)
            - CLOCK_ALLOWANCE * 2;
        let rows = self.store().quota_rows(since, now).await?;
        let all = rows.window_counted(now);
        let window = window_usage(now, settings.window, &all);
        let channels = settings
            .channels
            .values()
            .map(|channel| {
                let mine = rows.daily_counted(&channel.name);
                let usage = daily_usage(now, channel.daily(), &mine);
                let budget = channel.budget.map(|budget| {
                    let rule = BudgetRule {
                        monthly: budget.monthly,
                        tz: channel.timezone,
                    };
                    spend(now, rule, &rows.charges(&channel.name))
                });
                let next_slot_at = [
                    window.next_free_at,
                    usage.next_free_at,
                    budget.and_then(|b| b.next_free_at),
                ]
                .into_iter()
                .flatten()
                .max();
                ChannelQuota {
                    channel: channel.name.clone(),
                    timezone: channel.timezone.name().to_owned(),
                    day_start: day_bounds(now, channel.timezone).0,
                    usage,
                    next_slot_at,
                    budget,
                }
            })
            .collect();
        Ok(QuotaStatus {
            now,
            window: WindowStatus {
                window: Span::new(settings.window.window),
                usage: window,
            },
            channels,
        })
    }

    /// Every configured channel with its pause state and today's use, its content policy,
    /// media rules, review settings (the rubric read now) and money budget.
    pub async fn channel_statuses(&self, who: &Principal) -> Result<Vec<ChannelStatus>> {
        who.require(Action::Read)?;
        let pauses = self.pauses_now().await?;
        let quota = self.quota_status(who).await?;
        let media_checked = self.settings().media_fetch_timeout.is_some();
        Ok(self
            .settings()
            .channels
            .values()
            .map(|channel| {
                let pause_reason = crate::check::pause_reason(&pauses, &channel.name);
                let mine = quota.channels.iter().find(|q| q.channel == channel.name);
                let rubric = channel.review.rubric.read();
                let rules = channel.review.rules;
                ChannelStatus {
                    name: channel.name.clone(),
                    kind: channel.kind,
                    account: channel.account.clone(),
                    paused: pause_reason.is_some(),
                    pause_reason,
                    daily_used: mine.map(|q| q.usage.used).unwrap_or(0),
                    daily_limit: channel.daily_limit,
                    policy: ChannelPolicy::of(&channel.policy),
                    media: MediaRules::of(&channel.policy, media_checked),
                    review: ReviewRulesView {
                        approvals_required: rules.approvals_required,
                        max_revisions: rules.max_revisions,
                        duplicate_window: Span::new(channel.review.duplicate_window),
                        rubric_origin: channel.review.rubric.origin(),
                        rubric_hash: rubric.as_ref().ok().map(|r| r.hash.clone()),
                        rubric_items: rubric
                            .as_ref()
                            .map(|r| r.items.iter().map(|i| i.id.clone()).collect())
                            .unwrap_or_default(),
                        rubric_error: rubric.err(),
                    },
                    budget: channel.budget.zip(mine.and_then(|q| q.budget)).map(
                        |(budget, spend)| ChannelBudget {
                            spend,
                            post_usd: airlock_core::budget::to_usd(budget.costs.post),
                            url_post_usd: airlock_core::budget::to_usd(budget.costs.url_post),
                        },
                    ),
                }
            })
            .collect())
    }
}

/// Whether the dispatcher or the reaper set `pause` (for an unknown outcome), not a
/// person: only such a pause is explained as a post's doubt, or lifted with it.
pub(crate) fn set_by_doubt(pause: &Pause) -> bool {
    pause.actor.starts_with("dispatcher:") || pause.actor == Actor::Reaper.to_string()
}

/// The post whose unknown outcome set a pause, read from the reason the worker wrote
/// (`unknown_pause_prefix`).
pub(crate) fn unknown_pause_post(reason: &str) -> Option<PostId> {
    let rest = reason.strip_prefix("post ")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let (id, rest) = rest.split_at(digits);
    rest.starts_with(airlock_store::UNKNOWN_PAUSE_MARK)
        .then(|| id.parse().ok().map(PostId))
        .flatten()
}

/// A pause's reason once the post that set it is settled: what happened, and the one
/// step left (settle the next post in doubt, or resume).
fn settled_pause_reason(
    reason: &str,
    (id, status): (PostId, PostStatus),
    waiting: Option<PostId>,
    scope: &str,
) -> String {
    let head = reason.split("; settle it with").next().unwrap_or(reason);
    let settled = format!("{head}; settled since (post {id} is {status})");
    match waiting {
        Some(next) => format!(
            "{settled}, but post {next} still needs review: settle it with `airlock post resolve {next}` (or the dashboard's inbox), then resume"
        ),
        None => format!(
            "{settled}: nothing on it is in doubt, resume it with `airlock resume {}` (or Resume on the dashboard)",
            crate::publish::scope_arg(scope)
        ),
    }
}

fn scope_label(scope: &PauseScope) -> String {
    match scope {
        PauseScope::All => "all publishing".into(),
        PauseScope::Channel(name) => format!("channel {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_outcomes_pause_names_its_post() {
        let reason = format!(
            "post 12{}timed out); settle it with `airlock post resolve 12`",
            airlock_store::UNKNOWN_PAUSE_MARK
        );
        assert_eq!(unknown_pause_post(&reason), Some(PostId(12)));
        assert_eq!(unknown_pause_post("post 12 is odd"), None);
        assert_eq!(unknown_pause_post("maintenance"), None);
    }

    #[test]
    fn a_settled_pause_names_the_one_step_left() {
        let reason =
            "post 3 has an unknown outcome (timed out); settle it with `airlock post resolve 3`";
        let post = (PostId(3), PostStatus::Failed);
        let left = settled_pause_reason(reason, post, None, "cats");
        assert_eq!(
            left,
            "post 3 has an unknown outcome (timed out); settled since (post 3 is failed): nothing on it is in doubt, resume it with `airlock resume cats` (or Resume on the dashboard)"
        );
        let left = settled_pause_reason(reason, post, Some(PostId(5)), "cats");
        assert!(left.contains("post 5 still needs review"), "{left}");
        assert!(left.contains("`airlock post resolve 5`"), "{left}");
    }
}
