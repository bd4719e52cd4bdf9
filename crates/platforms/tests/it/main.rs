//! Adapter tests against local fakes of the platforms: one binary, one module per kind.
//!
//! Every test uses the canary token [`support::CANARY`] and checks that nothing an adapter
//! returns (reasons, notes, evidence, outcomes, accounts, its own `Debug`) and no URL or
//! body it sends carries it.

mod bluesky;
mod instagram;
mod linkedin;
mod mastodon;
mod support;
mod telegram;
mod threads;
mod webhook;
mod wordpress;
mod x;
