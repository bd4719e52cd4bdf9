//! Checks that keep airlock's prose true to its code. `cargo test -p airlock-tidy` runs
//! them on the repository (so `scripts/test.sh` does too); each check is a function that
//! returns the problems it found, so its own tests can plant one.
//!
//! - [`numbers`]: every number the docs state is listed in `docs/numbers.toml`, as
//!   airlock's own (then it must equal the constant or the code that decides it), as a
//!   fact about something outside airlock (a platform's documented limit), or as an
//!   example; and every constant a doc names exists.
//!
//! Commit subjects are checked by `scripts/check-commits.sh`, not here: it needs the
//! repository's history, which a test should not depend on.

pub mod code;
pub mod numbers;
pub mod prose;
pub mod value;
