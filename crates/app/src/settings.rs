//! What `app` needs to know about the configuration, as plain data. The CLI builds it
//! from `airlock.toml`; tests build it directly.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Duration;
use chrono_tz::Tz;

use airlock_core::budget::{BudgetRule, Charge};
use airlock_core::quota::{DailyRule, WindowRule};
use airlock_core::review::ReviewRules;
use airlock_core::{ChannelKind, ChannelName, ContentPolicy};

use crate::critic::{BuiltinRubric, RubricSource};

/// Settings of the guarded operations.
#[derive(Debug, Clone)]
pub struct AppSettings {
    /// The default calendar for daily limits.
    pub timezone: Tz,
    /// Configured channels.
    pub channels: BTreeMap<ChannelName, ChannelSettings>,
    /// The rolling window across channels.
    pub window: WindowRule,
    /// Lease length of a claim.
    pub stale_after: Duration,
    /// Attempts that never reached the irreversible step before a post fails.
    pub max_attempts: u32,
    /// Consecutive definite failures that pause a channel.
    pub pause_after_failures: u32,
    /// Which sinks receive which notification events.
    pub notify: Vec<NotifyRoute>,
    /// How long a creation idempotency key is honoured.
    pub create_key_ttl: Duration,
    /// The shortest wait a platform's "not now" (`Retry-After`) is read as: a `0` or a
    /// second would make the dispatcher spin. The dispatcher's poll interval.
    pub min_retry_after: Duration,
    /// The longest: a platform's number can hold a post for at most this long per try.
    pub max_retry_after: Duration,
    /// The most live drafts one token may hold (`[server] max_drafts_per_token`); a
    /// draft past it is refused naming the limit. The CLI and the scheduler are not held to it.
    pub max_drafts_per_token: u32,
    /// Fetch every media item when it is drafted or edited, and again before a post goes
    /// out (docs/media.md), waiting at most this long per fetch; `None` takes media as
    /// given, unchecked (embedded uses and tests without a network).
    pub media_fetch_timeout: Option<Duration>,
}

impl AppSettings {
    /// Settings with defaults and no channels: a 3-per-60-minutes window, 15-minute
    /// leases, 3 attempts, pause after 3 failures, keys kept 24 hours, platform waits
    /// between 30 seconds and 24 hours.
    pub fn new(timezone: Tz) -> Self {
        AppSettings {
            timezone,
            channels: BTreeMap::new(),
            window: WindowRule {
                window: Duration::minutes(60),
                limit: 3,
            },
            stale_after: Duration::minutes(15),
            max_attempts: 3,
            pause_after_failures: 3,
            notify: Vec::new(),
            create_key_ttl: Duration::hours(24),
            min_retry_after: Duration::seconds(30),
            max_retry_after: Duration::hours(24),
            max_drafts_per_token: 1000,
            media_fetch_timeout: None,
        }
    }

    /// Adds a channel.
    pub fn with_channel(mut self, channel: ChannelSettings) -> Self {
        self.channels.insert(channel.name.clone(), channel);
        self
    }
}

/// One configured channel.
#[derive(Debug, Clone)]
pub struct ChannelSettings {
    /// Its name.
    pub name: ChannelName,
    /// Its kind.
    pub kind: ChannelKind,
    /// The account its credential must belong to (HTTP platforms).
    pub account: Option<String>,
    /// Publishes per local calendar day.
    pub daily_limit: u32,
    /// Its calendar.
    pub timezone: Tz,
    /// Its content policy (platform rules narrowed by configuration).
    pub policy: ContentPolicy,
    /// Where source files of its posts live, to re-hash them before publishing.
    pub source_dir: Option<PathBuf>,
    /// The longest one request to the platform may take; the lease must outlast the
    /// irreversible request by at least this when it is sent.
    pub request_timeout: Duration,
    /// A monthly money budget (X's pay-per-use API), reserved with the post quota.
    pub budget: Option<Budget>,
    /// How its posts are reviewed.
    pub review: ReviewSettings,
}

/// How a channel's posts are reviewed (the critic's workflow).
#[derive(Debug, Clone)]
pub struct ReviewSettings {
    /// `approvals_required` and `max_revisions`.
    pub rules: ReviewRules,
    /// A draft whose normalised text is that of a post on the channel going out within
    /// this long of it is refused; zero checks nothing.
    pub duplicate_window: Duration,
    /// Where the rubric comes from; read on every packet and verdict.
    pub rubric: Arc<dyn RubricSource>,
}

impl Default for ReviewSettings {
    /// One approval, quarantine after two fails, a seven-day duplicate window, the
    /// built-in rubric.
    fn default() -> Self {
        ReviewSettings {
            rules: ReviewRules::default(),
            duplicate_window: Duration::days(7),
            rubric: Arc::new(BuiltinRubric),
        }
    }
}

pub use airlock_core::budget::Budget;

impl ChannelSettings {
    /// A channel with the platform's policy and the default calendar.
    pub fn new(name: ChannelName, kind: ChannelKind, daily_limit: u32, timezone: Tz) -> Self {
        ChannelSettings {
            name,
            kind,
            account: None,
            daily_limit,
            timezone,
            policy: kind.platform_policy(),
            source_dir: None,
            request_timeout: Duration::seconds(30),
            budget: None,
            review: ReviewSettings::default(),
        }
    }

    /// What publishing `content` charges the channel's budget, if it has one: each part
    /// and the first comment is a request the platform charges, all reserved when the
    /// post is claimed, so a thread is never stopped halfway by the budget.
    pub fn charge(&self, content: &airlock_core::PostContent) -> Option<Charge> {
        self.budget.map(|budget| {
            let later = content
                .more
                .iter()
                .map(|part| part.text.as_str())
                .chain(content.first_comment.as_deref())
                .map(|text| budget.costs.of(text, None));
            Charge {
                rule: BudgetRule {
                    monthly: budget.monthly,
                    tz: self.timezone,
                },
                cost: later.fold(
                    budget.costs.of(&content.text, content.link.as_deref()),
                    |a, b| a.saturating_add(b),
                ),
            }
        })
    }

    /// The longest the irreversible step may take, with the slack a lease keeps beyond
    /// it: a lease must outlast this when the intent is recorded and the request sent.
    pub fn publish_time(&self) -> Duration {
        self.request_timeout * self.kind.requests_in_publish() + crate::publish::LEASE_SLACK
    }

    /// Its daily rule.
    pub fn daily(&self) -> DailyRule {
        DailyRule {
            limit: self.daily_limit,
            tz: self.timezone,
        }
    }
}

/// A sink and the events it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyRoute {
    /// The sink's configured name.
    pub sink: String,
    /// Events it receives (`published`, `failed`, `needs_review`, `quota_deferred`,
    /// `paused`, `resumed`, `verify_failed`).
    pub events: Vec<String>,
}
