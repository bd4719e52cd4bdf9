//! Counters of what the guarded operations did, for `/metrics`.
//!
//! A handful of labelled counters kept per `App` (no global registry, so tests and
//! several apps in one process do not mix). The HTTP layer renders them in the
//! Prometheus text format next to gauges it reads from the ledger at scrape time.

use std::collections::BTreeMap;
use std::sync::Mutex;

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
