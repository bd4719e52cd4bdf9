//! Integration tests of the PostgreSQL backend, one binary: the conformance suite, the
//! triggers against hand-written SQL, several pools racing as separate processes, and
//! LISTEN/NOTIFY wake-ups. Each test gets a fresh database (see [`support`]).

mod clock;
mod conformance;
mod durability;
mod hardened;
mod migrate;
mod processes;
mod support;
mod triggers;
mod wake;
