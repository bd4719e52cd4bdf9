//! Counters of what the guarded operations did, and what `/metrics` and `/healthz`
//! read from the ledger.
//!
//! A handful of labelled counters kept per `App` (no global registry, so tests and
//! several apps in one process do not mix). The HTTP layer renders them in the
//! Prometheus text format next to the gauges it reads from the ledger at scrape time
//! ([`App::ledger_gauges`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use airlock_core::PostStatus;
use airlock_store::{ChannelDue, HealthStats, OutboxStats, Pause, StoreError};

use crate::App;

/// One counter series: name, labels, value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// Metric name (`airlock_publishes_total`).
    pub name: &'static str,
    /// Label pairs, sorted.
    pub labels: Vec<(&'static str, String)>,
    /// Count since the process started.
    pub value: u64,
}

/// A series' identity: metric name and sorted label pairs.
type SeriesKey = (&'static str, Vec<(&'static str, String)>);

/// What `/metrics` reads from the ledger at scrape time.
#[derive(Debug, Clone)]
pub struct LedgerGauges {
    /// Post counts per status.
    pub counts: Vec<(PostStatus, i64)>,
    /// Outbox counts.
    pub outbox: OutboxStats,
    /// Active pauses.
    pub pauses: Vec<Pause>,
    /// When `health` and `due_by_channel` were read.
    pub now: DateTime<Utc>,
    /// Ledger figures for health alerts, at `now`.
    pub health: HealthStats,
    /// Due posts per channel at `now`.
    pub due_by_channel: Vec<ChannelDue>,
    /// Waits for another database session this process gave up: `(lock, statement)`.
    pub timeouts: (u64, u64),
    /// Quota and budget use now; `None` while the quota rows cannot be read or trusted
    /// (publishing stops then, and `doctor` says why).
    pub quota: Option<crate::control::QuotaStatus>,
}

/// Labelled counters.
#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<SeriesKey, u64>>,
}

impl Metrics {
    /// Adds one to a series.
    pub fn incr(&self, name: &'static str, labels: &[(&'static str, &str)]) {
        let mut labels: Vec<(&'static str, String)> =
            labels.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        labels.sort();
        *self
            .counters
            .lock()
            .expect("lock is never poisoned")
            .entry((name, labels))
            .or_default() += 1;
    }

    /// Every series, in a stable order.
    pub fn snapshot(&self) -> Vec<Series> {
        self.counters
            .lock()
            .expect("lock is never poisoned")
            .iter()
            .map(|((name, labels), value)| Series {
                name,
                labels: labels.clone(),
                value: *value,
            })
            .collect()
    }
}

impl App {
    /// What `/healthz` asks the ledger: its active pauses, or why it cannot be read.
    /// Unauthenticated (the HTTP layer shows the pauses only to a caller with a token),
    /// and the store's own error, so the answer says exactly what failed.
    pub async fn health(&self) -> Result<Vec<Pause>, StoreError> {
        self.store().pauses().await
    }

    /// The ledger's gauges for `/metrics`, read now; the store's own error when one read
    /// fails.
    pub async fn ledger_gauges(&self) -> Result<LedgerGauges, StoreError> {
        let store = self.store();
        let counts = store.status_counts().await?;
        let outbox = store.outbox_stats().await?;
        let pauses = store.pauses().await?;
        let now = self.now();
        let health = store.health_stats(now).await?;
        let due_by_channel = store.due_by_channel(now).await?;
        let quota = match self.quota_now().await {
            Ok(quota) => Some(quota),
            Err(e) => {
                tracing::warn!(error = %e, "/metrics: quota use could not be read");
                None
            }
        };
        Ok(LedgerGauges {
            quota,
            counts,
            outbox,
            pauses,
            now,
            health,
            due_by_channel,
            timeouts: store.timeouts(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_per_label_set() {
        let metrics = Metrics::default();
        metrics.incr(
            "airlock_publishes_total",
            &[("result", "posted"), ("channel", "a")],
        );
        metrics.incr(
            "airlock_publishes_total",
            &[("channel", "a"), ("result", "posted")],
        );
        metrics.incr(
            "airlock_publishes_total",
            &[("channel", "b"), ("result", "failed")],
        );
        let series = metrics.snapshot();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].value, 2);
        assert_eq!(series[0].labels[0], ("channel", "a".to_owned()));
    }
}
