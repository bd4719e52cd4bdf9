//! Rubric files at the edge: the configured `rubric = "rubrics/threads.md"` read for
//! `app` through [`airlock_app::critic::RubricSource`].
//!
//! The file is read again on every review packet and every verdict, so an edited rubric
//! applies at once, without a restart, and every verdict records the hash of the text
//! it was given under. A rubric is small (at most
//! [`airlock_core::review::MAX_RUBRIC_BYTES`]) and read rarely, so re-reading costs
//! nothing worth a cache that could serve a stale text. The configuration checks the
//! file once at load (a missing or unreadable rubric is refused by key and path); a
//! rubric that disappears later makes verdicts on its channel fail with an error naming
//! the path, never a verdict under an unknown rubric.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock_app::ReviewSettings;
use airlock_app::critic::{BuiltinRubric, RubricSource};
use airlock_core::review::{MAX_RUBRIC_BYTES, ReviewRules, Rubric};

use crate::config::ReviewConfig;

/// A rubric read from a file on every use.
#[derive(Debug, Clone)]
pub struct FileRubric {
    path: PathBuf,
}

impl FileRubric {
    /// A rubric at `path` (absolute, or relative to the working directory).
    pub fn new(path: PathBuf) -> Self {
        FileRubric { path }
    }

    /// Checks that `path` reads as a rubric now; the reason it does not, otherwise.
    pub fn check(path: &Path) -> Result<(), String> {
        read_text(path).map(|_| ())
    }
}

impl RubricSource for FileRubric {
    fn read(&self) -> Result<Rubric, String> {
        read_text(&self.path)
            .map(|text| Rubric::parse(&text))
            .map_err(|why| format!("{}: {why}", self.path.display()))
    }

    fn origin(&self) -> String {
        self.path.display().to_string()
    }
}

/// The text of a rubric file: a regular UTF-8 file of at most `MAX_RUBRIC_BYTES`.
fn read_text(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            "no such file: write the rubric there, or remove the key to use the built-in one"
                .to_owned()
        }
        _ => format!("cannot be read: {e}"),
    })?;
    let metadata = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !metadata.is_file() {
        return Err("is not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    file.take(MAX_RUBRIC_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() > MAX_RUBRIC_BYTES {
        return Err(format!(
            "is larger than {MAX_RUBRIC_BYTES} bytes: a rubric is a page a critic reads, keep it short"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

/// The review settings `app` runs a channel with.
pub fn review_settings(config: &ReviewConfig) -> ReviewSettings {
    ReviewSettings {
        rules: ReviewRules {
            approvals_required: config.approvals_required,
            max_revisions: config.max_revisions,
        },
        duplicate_window: config
            .duplicate_window
            .map(|span| span.as_chrono())
            .unwrap_or_else(chrono::Duration::zero),
        rubric: match &config.rubric {
            Some(path) => Arc::new(FileRubric::new(path.clone())),
            None => Arc::new(BuiltinRubric),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_rubric_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rubric.md");
        std::fs::write(&path, "- tone: Warm.\n").unwrap();
        let rubric = FileRubric::new(path.clone());
        let first = rubric.read().unwrap();
        assert_eq!(first.items[0].id, "tone");
        std::fs::write(&path, "- tone: Warm.\n- claims: True.\n").unwrap();
        let second = rubric.read().unwrap();
        assert_ne!(first.hash, second.hash);
        assert_eq!(second.items.len(), 2);
        assert_eq!(rubric.origin(), path.display().to_string());
    }

    #[test]
    fn a_missing_large_or_binary_rubric_is_refused_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = FileRubric::new(dir.path().join("nope.md"));
        let err = missing.read().unwrap_err();
        assert!(
            err.contains("nope.md") && err.contains("no such file"),
            "{err}"
        );
        let large = dir.path().join("large.md");
        std::fs::write(&large, "x".repeat(MAX_RUBRIC_BYTES + 1)).unwrap();
        assert!(
            FileRubric::check(&large)
                .unwrap_err()
                .contains("larger than")
        );
        let binary = dir.path().join("binary.md");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        assert!(FileRubric::check(&binary).unwrap_err().contains("UTF-8"));
        assert!(FileRubric::check(dir.path()).is_err());
    }
}
