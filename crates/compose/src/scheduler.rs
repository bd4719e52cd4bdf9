//! The slot scheduler inside `serve`: fills each configured slot once, a little ahead of
//! its time, day after day.
//!
//! - **When**: a slot opens [`ScheduleSettings::lead`] before its instant (default 60
//!   minutes), so a post that is auto-approved is already `approved` and due exactly at
//!   the slot time, and a person has that long to look at a draft. It stays open until
//!   [`ScheduleSettings::catch_up`] after its instant (default 60 minutes), so a server
//!   that was down at the opening still fills it late; after that a missed slot is left
//!   empty rather than posted hours off.
//! - **Across days**: each pass looks at yesterday's, today's and tomorrow's slots in each
//!   channel's time zone, so a 00:30 slot opens at 23:30 the day before.
//! - **Once**: filling goes through [`compose()`](crate::compose()) with the slot, whose key is
//!   unique per channel in the store. A restarted server, or several servers on one
//!   ledger, find the slot filled and draft nothing. In memory, a filled slot is not
//!   looked at again; a slot with nothing eligible (or a failure) is retried every
//!   [`ScheduleSettings::retry`] while it is open.
//! - **Pace**: a pass runs every [`ScheduleSettings::tick`] (default 60 s) until the
//!   shutdown token is cancelled.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Days, Duration, Utc};
use tokio_util::sync::CancellationToken;

use airlock_app::App;
use airlock_core::{ChannelKind, ChannelName, PostId};

use crate::compose::{Composed, compose_slot};
use crate::head::Checker;
use crate::slot::SlotInstance;
use crate::{ComposeSettings, Error, Result, Target};

/// When slots are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleSettings {
    /// How long before its instant a slot is filled.
    pub lead: Duration,
    /// How long after its instant a slot that is still empty is filled late.
    pub catch_up: Duration,
    /// How often the scheduler looks.
    pub tick: StdDuration,
    /// How soon an open slot that could not be filled is tried again.
    pub retry: Duration,
}

impl Default for ScheduleSettings {
    /// Lead 60 minutes, catch-up 60 minutes, a pass every 60 seconds, retry after 5 minutes.
    fn default() -> Self {
        ScheduleSettings {
            lead: Duration::minutes(60),
            catch_up: Duration::minutes(60),
            tick: StdDuration::from_secs(60),
            retry: Duration::minutes(5),
        }
    }
}

/// What one slot's fill did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRun {
    /// The channel.
    pub channel: ChannelName,
    /// The slot key.
    pub key: String,
    /// What happened.
    pub outcome: SlotOutcome,
}

/// How filling one slot ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotOutcome {
    /// This run drafted the post.
    Drafted(PostId),
    /// The slot already had its post.
    Filled(PostId),
    /// No article was eligible; retried while the slot is open.
    NothingEligible {
        /// How many articles were passed over.
        skipped: usize,
    },
    /// Compose failed; retried while the slot is open.
    Failed(String),
}

/// The slot scheduler of `serve`.
#[derive(Debug)]
pub struct Scheduler {
    app: App,
    settings: ComposeSettings,
    schedule: ScheduleSettings,
    checker: Checker,
    state: Mutex<SlotState>,
}

/// Per (channel, slot key): filled (`None`) or the earliest next try.
type SlotState = HashMap<(ChannelName, String), Option<DateTime<Utc>>>;

impl Scheduler {
    /// A scheduler for every channel in `settings` that has slots. Refuses settings that
    /// could never work: a channel the app does not have, a site that is not configured,
    /// an Instagram channel on a site without `media_prefix`.
    pub fn new(app: App, settings: ComposeSettings, schedule: ScheduleSettings) -> Result<Self> {
        for compose in settings.channels.values() {
            let channel = app.channel(compose.channel.as_str())?;
            let site = settings.sites.get(&compose.site).ok_or_else(|| {
                Error::Invalid(format!(
                    "channel {} draws from site {:?}, which is not configured",
                    compose.channel, compose.site
                ))
            })?;
            if channel.kind == ChannelKind::Instagram && site.media_prefix.is_none() {
                return Err(Error::Invalid(format!(
                    "site {} has no media_prefix, which Instagram channel {} needs",
                    site.name, compose.channel
                )));
            }
        }
        let checker = Checker::new(settings.check);
        Ok(Scheduler {
            app,
            settings,
            schedule,
            checker,
            state: Mutex::new(HashMap::new()),
        })
    }

    /// Runs passes every `tick` until `shutdown` is cancelled.
    pub async fn run(self, shutdown: CancellationToken) {
        let channels: Vec<&str> = self
            .settings
            .channels
            .values()
            .filter(|c| !c.slots.is_empty())
            .map(|c| c.channel.as_str())
            .collect();
        tracing::info!(channels = %channels.join(","), lead = %self.schedule.lead, "slot scheduler started");
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.run_once() => {}
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(self.schedule.tick) => {}
            }
        }
        tracing::info!("slot scheduler stopped");
    }

    /// One pass at the app's `now`: fills every open slot not yet filled or due for a retry.
    pub async fn run_once(&self) -> Vec<SlotRun> {
        let now = self.app.now();
        let mut runs = Vec::new();
        for (compose_channel, instance) in self.open_slots(now) {
            let state_key = (compose_channel.channel.clone(), instance.key.clone());
            let skip = match self.state.lock().expect("never poisoned").get(&state_key) {
                Some(None) => true,
                Some(Some(next_try)) => *next_try > now,
                None => false,
            };
            if skip {
                continue;
            }
            let Some(site) = self.settings.sites.get(&compose_channel.site) else {
                continue;
            };
            let target = Target {
                site,
                channel: compose_channel,
            };
            let outcome = match compose_slot(
                &self.app,
                target,
                &self.checker,
                Some(instance.clone()),
                false,
            )
            .await
            {
                Ok(Composed::Drafted { post, .. }) => {
                    tracing::info!(channel = %compose_channel.channel, slot = %instance.key, post_id = post.id.0, status = %post.status, "slot filled");
                    SlotOutcome::Drafted(post.id)
                }
                Ok(Composed::SlotFilled { post }) => SlotOutcome::Filled(post.id),
                Ok(Composed::NothingEligible { skipped }) => {
                    tracing::warn!(channel = %compose_channel.channel, slot = %instance.key, skipped = skipped.len(), "no eligible article for the slot: see `airlock candidates`");
                    SlotOutcome::NothingEligible {
                        skipped: skipped.len(),
                    }
                }
                Ok(Composed::WouldDraft(_)) => unreachable!("not a dry run"),
                Err(e) => {
                    tracing::error!(channel = %compose_channel.channel, slot = %instance.key, error = %e, "filling the slot failed");
                    SlotOutcome::Failed(e.to_string())
                }
            };
            let next = match outcome {
                SlotOutcome::Drafted(_) | SlotOutcome::Filled(_) => None,
                _ => Some(now + self.schedule.retry),
            };
            self.state
                .lock()
                .expect("never poisoned")
                .insert(state_key, next);
            runs.push(SlotRun {
                channel: compose_channel.channel.clone(),
                key: instance.key,
                outcome,
            });
        }
        self.forget_closed(now);
        runs
    }

    /// Slots open at `now`: from `lead` before their instant to `catch_up` after.
    fn open_slots(&self, now: DateTime<Utc>) -> Vec<(&crate::ChannelCompose, SlotInstance)> {
        let mut open = Vec::new();
        for compose_channel in self.settings.channels.values() {
            let tz = self.channel_tz(compose_channel);
            let today = now.with_timezone(&tz).date_naive();
            let days = [
                today.checked_sub_days(Days::new(1)),
                Some(today),
                today.checked_add_days(Days::new(1)),
            ];
            for date in days.into_iter().flatten() {
                for slot in &compose_channel.slots {
                    let instance = slot.on(date, tz);
                    if instance.at - self.schedule.lead <= now
                        && now <= instance.at + self.schedule.catch_up
                    {
                        open.push((compose_channel, instance));
                    }
                }
            }
        }
        open.sort_by_key(|(_, instance)| instance.at);
        open
    }

    fn channel_tz(&self, compose_channel: &crate::ChannelCompose) -> chrono_tz::Tz {
        self.app
            .channel(compose_channel.channel.as_str())
            .map(|c| c.timezone)
            .unwrap_or(self.app.settings().timezone)
    }

    /// Drops state of slots that closed more than two days ago, so memory stays flat.
    fn forget_closed(&self, now: DateTime<Utc>) {
        let horizon = now - Duration::days(2) - self.schedule.catch_up;
        self.state
            .lock()
            .expect("never poisoned")
            .retain(|(_, key), _| key_date(key).is_none_or(|at| at >= horizon));
    }
}

/// The local date of a slot key, at midnight UTC (precise enough to expire state).
fn key_date(key: &str) -> Option<DateTime<Utc>> {
    chrono::NaiveDate::parse_from_str(key.get(..10)?, "%Y-%m-%d")
        .ok()
        .map(|d| d.and_time(chrono::NaiveTime::MIN).and_utc())
}
