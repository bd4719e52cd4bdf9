//! The dashboard's integration tests, compiled as one binary: HTTP-level tests with
//! `oneshot` on the router, and one browser test in headless Chromium.

mod actions;
mod browser;
mod browser_compose;
mod browser_desk;
mod calendar;
mod compose;
mod edit;
mod hints;
mod memory;
mod origin;
mod parts;
mod restart;
mod review;
mod security;
mod support;
mod tokens;
