//! The dashboard's integration tests, compiled as one binary: HTTP-level tests with
//! `oneshot` on the router, and one browser test in headless Chromium.

mod actions;
mod browser;
mod memory;
mod restart;
mod review;
mod security;
mod support;
