//! The conformance suite of `airlock-store-tests` against `PgStore`, a fresh database per case.

airlock_store_tests::conformance_suite!(crate::support::fresh);
