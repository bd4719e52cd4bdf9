//! Integration tests of the guarded operations over a real SQLite store and local fakes.

mod channels;
mod check;
mod concurrency;
mod critic;
mod edge;
mod guarded;
mod outcomes;
mod parts;
mod reaper;
mod security;
mod support;
