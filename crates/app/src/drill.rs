//! Failpoints at the boundaries of the guarded path, so drills can freeze, kill or fail a
//! worker exactly there and check that another worker, process or installation takes
//! over without a second copy on the platform.
//!
//! Compiled in only with the `failpoints` feature, which only test builds enable; in every
//! other build [`boundary`] and [`injected`] do nothing and [`from_env`] reads nothing.
//!
//! The boundaries, in the order a publish passes them:
//! `publish::after_claim` (the claim and its reservation — and, for a channel without a
//! prepare step, its intent — commit together), `publish::after_prepare`,
//! `publish::after_intent`, `publish::after_send` (the platform answered, the outcome is
//! not written yet) and `publish::after_outcome` (before verification); the dispatcher
//! adds `dispatcher::worker` at the top of each worker's loop. Two more make a store
//! write fail: `publish::outcome_write` and `publish::verify_write`. A process takes its
//! configuration from the `FAILPOINTS` environment variable in the `fail` crate's syntax,
//! e.g. `FAILPOINTS='publish::after_intent=sleep(4000)'`, and a clock moved from the
//! machine's from `AIRLOCK_DRILL_CLOCK_SKEW` ([`clock_skew`]).

/// Reads `FAILPOINTS` once at start-up (a no-op without the `failpoints` feature).
pub fn from_env() {
    #[cfg(feature = "failpoints")]
    std::mem::forget(fail::FailScenario::setup());
}

/// A boundary: acts out whatever the drill configured there (`sleep(ms)`, `panic`,
/// `pause`).
pub fn boundary(name: &str) {
    #[cfg(feature = "failpoints")]
    fail::fail_point!(name);
    let _ = name;
}

/// A store failure a drill injects at `name` (configured as `return`), standing in for a
/// database that is briefly unreachable.
pub fn injected(name: &str) -> Option<airlock_store::StoreError> {
    #[cfg(feature = "failpoints")]
    fail::fail_point!(name, |_| Some(airlock_store::StoreError::Unavailable(
        format!("failpoint {name}: the store is unreachable").into()
    )));
    let _ = name;
    None
}

/// How far a drill moves this process's clock (`AIRLOCK_DRILL_CLOCK_SKEW`, whole seconds,
/// negative for a clock behind), to act out machines whose clocks disagree; zero without
/// the `failpoints` feature.
pub fn clock_skew() -> chrono::Duration {
    #[cfg(feature = "failpoints")]
    if let Some(seconds) = std::env::var("AIRLOCK_DRILL_CLOCK_SKEW")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
    {
        return chrono::Duration::seconds(seconds);
    }
    chrono::Duration::zero()
}
