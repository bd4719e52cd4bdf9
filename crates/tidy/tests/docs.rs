//! The repository's docs against its code (see `airlock_tidy::numbers`).

use std::path::PathBuf;

#[test]
fn docs_and_code_agree_on_every_number_a_doc_states() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let problems = airlock_tidy::numbers::check(&root);
    assert!(
        problems.is_empty(),
        "{} problem(s) between the docs and the code:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
