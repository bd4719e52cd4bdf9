//! airlock-compose against a real SQLite ledger and a local HTTP server.

mod candidates;
mod compose;
mod scheduler;
mod support;
mod templates;
