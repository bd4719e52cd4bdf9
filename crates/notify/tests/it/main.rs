//! Integration tests of airlock-notify: a real SQLite store in a temp dir and wiremock
//! fakes of Slack, Discord and webhook receivers shaped like docs/platforms.md (Slack,
//! Discord).

mod deliverer;
mod discord;
mod fakes;
mod helpers;
mod slack;
mod webhook;
