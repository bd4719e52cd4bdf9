//! Stateful fakes of the platforms, each a wiremock server whose responders share one
//! `Arc<Mutex<State>>`, so they hold what canned answers cannot: container state
//! machines, counters, rolling-window quotas, duplicate detection, renamed slugs, and
//! work a slow backend finishes after the client gave up. Each endpoint is its own mock
//! with `.expect(n)`, so an extra publish (or any unexpected call) fails the test when the
//! server is dropped.
//!
//! - [`meta`]: Threads and Instagram (Graph API containers);
//! - [`wordpress`]: the WordPress REST API;
//! - [`linkedin`]: LinkedIn's `userinfo` and Posts API;
//! - [`bluesky`]: a Bluesky PDS (sessions, records at client-chosen keys, blobs);
//! - [`mastodon`]: a Mastodon instance (idempotency keys kept an hour on a fake clock);
//! - [`x`]: X's API v2 (OAuth 2.0 refresh with rotation, duplicate content);
//! - [`receiver`]: a receiver for `webhook` notifications.

pub mod bluesky;
pub mod linkedin;
pub mod mastodon;
pub mod meta;
pub mod receiver;
pub mod wordpress;
pub mod x;
