//! The deliverer: claims due outbox rows, sends each to its sink, and records the result.
//!
//! One pass ([`Deliverer::deliver_once`]):
//! 1. lease up to [`DeliverySettings::batch`] due rows to this worker until
//!    `now + lease` ([`Admin::claim_notifications`](airlock_store::Admin::claim_notifications)); another deliverer on the same store
//!    skips leased rows, so each row is sent by one worker at a time;
//! 2. send each row to the sink it names, one after another. A row whose send could
//!    outlast the lease is left alone; its lease lapses and it is claimed again later;
//! 3. mark it delivered, or failed with a retry time (exponential backoff, at least
//!    the sink's `Retry-After`), or abandoned (`retry_at = None`) after
//!    [`DeliverySettings::max_attempts`] failures or when its sink is no longer configured.
//!
//! [`Deliverer::run`] repeats passes until its `CancellationToken` is cancelled. It
//! never changes a post: the only writes are to outbox rows.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use tokio_util::sync::CancellationToken;

use airlock_store::{Notification, Store, StoreError};

use crate::sink::{SendFailure, Sink};

/// The deliverer's clock: `Utc::now` in production, a settable one in tests.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// How the deliverer leases, retries and gives up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliverySettings {
    /// How long a claimed row is reserved for this worker. Must exceed every sink's
    /// request timeout (plus [`LEASE_MARGIN`]) so a row is never sent by two workers.
    pub lease: Duration,
    /// Rows claimed per pass.
    pub batch: u32,
    /// Wait after the first failure; it doubles with each further failure.
    pub first_backoff: Duration,
    /// The longest computed wait between attempts.
    pub max_backoff: Duration,
    /// Failed attempts after which a row is abandoned.
    pub max_attempts: u32,
}

impl Default for DeliverySettings {
    /// Lease 2 min, batches of 10, backoff 5 s doubling up to 1 h, 12 attempts
    /// (about two and a half hours from the first failure to giving up).
    fn default() -> Self {
        DeliverySettings {
            lease: Duration::minutes(2),
            batch: 10,
            first_backoff: Duration::seconds(5),
            max_backoff: Duration::hours(1),
            max_attempts: 12,
        }
    }
}

/// Time kept free at the end of a lease, beyond a request's timeout, for recording the
/// result.
pub const LEASE_MARGIN: Duration = Duration::seconds(5);

/// A `Retry-After` longer than this is treated as this long.
pub const MAX_RETRY_AFTER: Duration = Duration::hours(24);

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Rows the sink accepted.
    pub delivered: u32,
    /// Rows that failed and will be tried again.
    pub retried: u32,
    /// Rows given up on (too many failures, or the sink is not configured).
    pub abandoned: u32,
}

impl DeliveryReport {
    /// Rows settled one way or another in this pass.
    pub fn total(&self) -> u32 {
        self.delivered + self.retried + self.abandoned
    }
}

/// Why a [`Deliverer`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelivererError {
    /// Two sinks share a name.
    #[error("notify sink {0:?} is configured twice")]
    DuplicateSink(String),
    /// A sink's request could outlast the lease, and the row could be sent twice.
    #[error(
        "notify sink {sink:?}: request_timeout {timeout_secs}s must be shorter than the delivery lease of {lease_secs}s by at least {margin_secs}s",
        margin_secs = LEASE_MARGIN.num_seconds()
    )]
    LeaseTooShort {
        /// The sink.
        sink: String,
        /// Its request timeout, in seconds.
        timeout_secs: u64,
        /// The lease, in seconds.
        lease_secs: i64,
    },
    /// Settings that cannot work.
    #[error("delivery settings: {0}")]
    InvalidSettings(&'static str),
}

/// Why a pass stopped. Sink failures are not errors (they are recorded on the row);
/// only the store failing stops a pass.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// The outbox could not be read or written.
    #[error("notification outbox: {0}")]
    Store(#[from] StoreError),
}

/// Sends queued notifications to their sinks (see the module docs).
pub struct Deliverer {
    store: Arc<dyn Store>,
    sinks: HashMap<String, Sink>,
    worker: String,
    clock: Clock,
    settings: DeliverySettings,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("sinks", &self.sinks)
            .field("worker", &self.worker)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Deliverer {
    /// A deliverer for `store` with these sinks, claiming rows as `worker` (unique per
    /// process, like the dispatcher's worker id). Uses the system clock; see
    /// [`Deliverer::with_clock`].
    pub fn new(
        store: Arc<dyn Store>,
        sinks: Vec<Sink>,
        worker: impl Into<String>,
        settings: DeliverySettings,
    ) -> Result<Self, DelivererError> {
        if settings.batch == 0 {
            return Err(DelivererError::InvalidSettings("batch must be at least 1"));
        }
        if settings.max_attempts == 0 {
            return Err(DelivererError::InvalidSettings(
                "max_attempts must be at least 1",
            ));
        }
        if settings.first_backoff <= Duration::zero()
            || settings.max_backoff < settings.first_backoff
        {
            return Err(DelivererError::InvalidSettings(
                "first_backoff must be positive and no longer than max_backoff",
            ));
        }
        let mut by_name = HashMap::new();
        for sink in sinks {
            let timeout = Duration::from_std(sink.request_timeout()).unwrap_or(Duration::MAX);
            if timeout
                .checked_add(&LEASE_MARGIN)
                .is_none_or(|t| t > settings.lease)
            {
                return Err(DelivererError::LeaseTooShort {
                    sink: sink.name().to_owned(),
                    timeout_secs: sink.request_timeout().as_secs(),
                    lease_secs: settings.lease.num_seconds(),
                });
            }
            let name = sink.name().to_owned();
            if by_name.insert(name.clone(), sink).is_some() {
                return Err(DelivererError::DuplicateSink(name));
            }
        }
        Ok(Deliverer {
            store,
            sinks: by_name,
            worker: worker.into(),
            clock: Arc::new(Utc::now),
            settings,
        })
    }

    /// Replaces the clock (tests drive time with it).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// A configured sink by name.
    pub fn sink(&self, name: &str) -> Option<&Sink> {
        self.sinks.get(name)
    }

    /// The worker id written to leased rows.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// One pass over the due rows (see the module docs). Returns what it did; an error
    /// only when the store fails.
    pub async fn deliver_once(&self) -> Result<DeliveryReport, DeliveryError> {
        self.pass(None).await.map(|(report, _)| report)
    }

    /// Runs passes until `shutdown` is cancelled: immediately again after a full batch,
    /// otherwise after `interval`. A store error is logged and retried after `interval`.
    /// Cancellation is honoured between rows, so a send in flight is finished and
    /// recorded rather than cut off (rows not yet sent wait for their lease to lapse).
    pub async fn run(&self, shutdown: CancellationToken, interval: StdDuration) {
        tracing::info!(worker = %self.worker, sinks = self.sinks.len(), "notification deliverer started");
        while !shutdown.is_cancelled() {
            let busy = match self.pass(Some(&shutdown)).await {
                Ok((_, full)) => full,
                Err(e) => {
                    tracing::warn!(error = %e, "notification delivery pass failed; trying again later");
                    false
                }
            };
            if busy {
                continue;
            }
            tokio::select! {
                _ = shutdown.cancelled() => {}
                _ = tokio::time::sleep(interval) => {}
            }
        }
        tracing::info!(worker = %self.worker, "notification deliverer stopped");
    }

    /// One pass; also says whether it claimed a full batch (more may be due).
    async fn pass(
        &self,
        shutdown: Option<&CancellationToken>,
    ) -> Result<(DeliveryReport, bool), DeliveryError> {
        let now = (self.clock)();
        let lease_until = now + self.settings.lease;
        let claimed = self
            .store
            .claim_notifications(now, &self.worker, lease_until, self.settings.batch)
            .await?;
        let full = claimed.len() >= self.settings.batch as usize;
        let mut report = DeliveryReport::default();
        for notification in &claimed {
            if shutdown.is_some_and(CancellationToken::is_cancelled) {
                break;
            }
            let Some(sink) = self.sinks.get(&notification.sink) else {
                let error = format!(
                    "sink {:?} is not configured: notification abandoned (add [notify.{}] to deliver such rows)",
                    notification.sink, notification.sink
                );
                tracing::warn!(notification = notification.id, sink = %notification.sink, "{error}");
                self.store
                    .notification_failed(
                        notification.id,
                        &self.worker,
                        &error,
                        None,
                        (self.clock)(),
                    )
                    .await?;
                report.abandoned += 1;
                continue;
            };
            let timeout = Duration::from_std(sink.request_timeout()).unwrap_or(Duration::MAX);
            if (self.clock)() + timeout + LEASE_MARGIN > lease_until {
                // The rest of the batch would outlive its lease: let it lapse.
                break;
            }
            match sink.send(notification).await {
                Ok(()) => {
                    let recorded = self
                        .store
                        .notification_delivered(notification.id, &self.worker, (self.clock)())
                        .await?;
                    if recorded {
                        tracing::debug!(notification = notification.id, sink = %notification.sink, event = %notification.event, "notification delivered");
                    } else {
                        // The lease passed to another deliverer, which sends it again with
                        // the same event id; the receiver drops the repeat.
                        tracing::warn!(notification = notification.id, sink = %notification.sink, "notification delivered after its lease passed to another deliverer");
                    }
                    report.delivered += 1;
                }
                Err(failure) => {
                    if self.record_failure(notification, &failure).await? {
                        report.retried += 1;
                    } else {
                        report.abandoned += 1;
                    }
                }
            }
        }
        Ok((report, full))
    }

    /// Records a failed attempt; `true` if the row will be retried.
    async fn record_failure(
        &self,
        notification: &Notification,
        failure: &SendFailure,
    ) -> Result<bool, DeliveryError> {
        let n_failures = notification.attempts.saturating_add(1);
        let retry_at = retry_at(
            &self.settings,
            n_failures,
            (self.clock)(),
            failure.retry_after,
        );
        match retry_at {
            Some(at) => {
                tracing::warn!(
                    notification = notification.id,
                    sink = %notification.sink,
                    attempt = n_failures,
                    retry_at = %at,
                    reason = %failure.reason,
                    "notification not delivered; will retry"
                );
                self.store
                    .notification_failed(
                        notification.id,
                        &self.worker,
                        &failure.reason,
                        Some(at),
                        (self.clock)(),
                    )
                    .await?;
                Ok(true)
            }
            None => {
                let error = format!("gave up after {n_failures} attempts: {}", failure.reason);
                tracing::error!(notification = notification.id, sink = %notification.sink, "{error}");
                self.store
                    .notification_failed(
                        notification.id,
                        &self.worker,
                        &error,
                        None,
                        (self.clock)(),
                    )
                    .await?;
                Ok(false)
            }
        }
    }
}

/// When to try again after `n_failures` failed attempts, or `None` to give up:
/// `first_backoff * 2^(n_failures - 1)`, capped at `max_backoff`, and never sooner
/// than the sink's `Retry-After` hint (itself capped at [`MAX_RETRY_AFTER`]).
pub fn retry_at(
    settings: &DeliverySettings,
    n_failures: i64,
    now: DateTime<Utc>,
    hint: Option<Duration>,
) -> Option<DateTime<Utc>> {
    if n_failures >= i64::from(settings.max_attempts) {
        return None;
    }
    let exponent = u32::try_from(n_failures.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
    let backoff = settings
        .first_backoff
        .checked_mul(1 << exponent)
        .unwrap_or(settings.max_backoff)
        .min(settings.max_backoff);
    let wait = match hint {
        Some(hint) => backoff.max(hint.clamp(Duration::zero(), MAX_RETRY_AFTER)),
        None => backoff,
    };
    Some(now + wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[test]
    fn backoff_doubles_from_five_seconds_up_to_an_hour_then_gives_up() {
        let settings = DeliverySettings::default();
        let waits: Vec<i64> = (1..12)
            .map(|n| (retry_at(&settings, n, at(0), None).unwrap() - at(0)).num_seconds())
            .collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600]);
        assert_eq!(retry_at(&settings, 12, at(0), None), None);
        assert_eq!(retry_at(&settings, 40, at(0), None), None);
    }

    #[test]
    fn retry_after_is_honoured_but_never_shortens_the_backoff() {
        let settings = DeliverySettings::default();
        assert_eq!(
            retry_at(&settings, 1, at(0), Some(Duration::seconds(30))),
            Some(at(30))
        );
        assert_eq!(
            retry_at(&settings, 3, at(0), Some(Duration::seconds(1))),
            Some(at(20))
        );
        assert_eq!(
            retry_at(&settings, 1, at(0), Some(Duration::days(30))),
            Some(at(0) + MAX_RETRY_AFTER)
        );
    }

    #[test]
    fn huge_attempt_counts_do_not_overflow() {
        let settings = DeliverySettings {
            max_attempts: u32::MAX,
            ..DeliverySettings::default()
        };
        assert_eq!(
            retry_at(&settings, 1_000, at(0), None),
            Some(at(0) + settings.max_backoff)
        );
    }
}
