//! A clock tests move by hand. `airlock-app`, `airlock-notify` and the other crates take
//! their time from an `Arc<dyn Fn() -> DateTime<Utc>>`; [`TestClock::clock`] is one.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, TimeZone, Utc};

/// The clock type every airlock crate takes.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// Time that moves only when the test moves it. Clones share one time.
#[derive(Clone)]
pub struct TestClock(Arc<Mutex<DateTime<Utc>>>);

impl TestClock {
    /// 2026-12-01T00:00:00Z (09:00 in Tokyo).
    pub fn new() -> Self {
        Self::at(Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap())
    }

    /// Starting at `at`.
    pub fn at(at: DateTime<Utc>) -> Self {
        TestClock(Arc::new(Mutex::new(at)))
    }

    /// Starting at an RFC 3339 time.
    pub fn at_rfc3339(at: &str) -> Self {
        Self::at(
            DateTime::parse_from_rfc3339(at)
                .expect("an RFC 3339 time")
                .with_timezone(&Utc),
        )
    }

    /// The time now.
    pub fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("the clock lock is never poisoned")
    }

    /// Moves to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().expect("the clock lock is never poisoned") = at;
    }

    /// Moves forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.0.lock().expect("the clock lock is never poisoned") += by;
    }

    /// This clock in the form airlock's crates take.
    pub fn clock(&self) -> Clock {
        let this = self.clone();
        Arc::new(move || this.now())
    }
}

impl Default for TestClock {
    fn default() -> Self {
        Self::new()
    }
}
