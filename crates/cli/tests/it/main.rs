//! The `airlock` binary as a user runs it: exit codes, JSON, processes.

mod approvals;
mod channels;
mod compose;
mod critic;
mod dispatch;
mod drills;
mod edge;
mod hardened;
mod lifecycle;
mod mcp;
mod operations;
mod packaging;
mod part_drills;
mod platforms;
mod postgres;
mod quotas;
mod security;
mod support;
mod telegram;
mod upgrade;
