//! The `airlock` binary as a user runs it: exit codes, JSON, processes.

mod dispatch;
mod lifecycle;
mod platforms;
mod support;
