//! The conformance suite of `airlock-store-tests` against `PgStore`, a fresh database per
//! case: connected as the ledger's owner, and again as a login role that holds only the
//! runtime role (the hardened mode: every write through airlock's functions).

airlock_store_tests::conformance_suite!(crate::support::fresh);

/// The same cases as a role with only `airlock_runtime`, after the owner migrated.
mod hardened {
    airlock_store_tests::conformance_suite!(crate::support::fresh_hardened);
}
