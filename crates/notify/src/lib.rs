//! Delivery of airlock's notification outbox (docs/notifications.md): the sinks a
//! notification can go to, and the [`Deliverer`] that sends queued outbox rows to them.
//!
//! The outbox rows are written by `airlock-app` in the same transaction as the change
//! they report; this crate only reads them back through the [`airlock_store::Store`]
//! trait, sends each to its sink and records the result on the row (delivered, retry
//! later, or abandoned).
//!
//! **Architecture Invariant:** delivery never changes a post. The deliverer touches
//! outbox rows only, so a sink that fails, disappears or lies cannot move a post out
//! of its state, and a published post stays published whatever happens here.
//!
//! Delivery is at least once. A row is leased to one deliverer while it is sent, and
//! each kind carries what the receiver needs to drop a repeat when an answer was lost:
//! Discord gets a `nonce` derived from the outbox id with `enforce_nonce`, webhooks get
//! `X-Airlock-Event-Id` and `Idempotency-Key`. Slack incoming webhooks have no such key;
//! a lost answer there can repeat a message.
//!
//! Secrets (the Slack webhook URL, the Discord bot token, a webhook signing secret)
//! never appear in errors, logs or the stored `last_error`: every summary passes
//! through [`airlock_platforms::http::Redactor`], and `reqwest` errors are described
//! without their URL.
//!
//! Layout:
//! - [`sink`]: [`SinkSettings`] (plain data the CLI builds from `[notify.NAME]`) and
//!   [`Sink`], one delivery attempt to one sink.
//! - [`slack`], [`discord`], [`webhook`]: each kind's request and how its answers read.
//! - [`deliverer`]: [`Deliverer`]: claiming due rows, backoff, giving up, the run loop.
//!
//! This crate does not decide which sinks want which events (that routing happens in
//! `airlock-app` when the rows are queued) and reads no files or environment.

pub mod deliverer;
pub mod discord;
pub mod sink;
pub mod slack;
pub mod webhook;

pub use deliverer::{
    Clock, Deliverer, DelivererError, DeliveryError, DeliveryReport, DeliverySettings,
};
pub use sink::{
    DEFAULT_REQUEST_TIMEOUT, DISCORD_API, EVENTS, SendFailure, Sink, SinkError, SinkKind,
    SinkSettings,
};
