//! Integration tests of the PostgreSQL backend, one binary: the conformance suite, the
//! triggers against hand-written SQL, several pools racing as separate processes,
//! LISTEN/NOTIFY wake-ups, and properties holding the rules written both in Rust and in
//! SQL equal. Each test gets a fresh database (see [`support`]).

mod batches;
mod bounded;
mod clock;
mod conformance;
mod durability;
mod equal_decisions;
mod hardened;
mod migrate;
mod plans;
mod processes;
mod support;
mod triggers;
mod waiting;
mod wake;
