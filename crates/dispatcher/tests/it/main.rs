//! The dispatcher and the guarded path under failures acted out by failpoints in this
//! process: a store that is briefly unreachable when the outcome or the verification is
//! written, a publish that panics, a worker that panics. The `fail` registry is global,
//! so each test holds a `FailScenario`, which runs them one at a time. And `serve`'s
//! workers taking batches.

mod batches;
mod failures;
mod support;
