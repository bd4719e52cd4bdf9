//! How `build.rs` names the commit a binary is built from, as plain functions so that
//! they are tested (the build script includes this file with `#[path]`).
//!
//! `git` answers for whatever repository encloses the current directory: building from
//! a tarball unpacked inside some other checkout (a packaging tree, a home directory
//! under version control) would otherwise stamp that repository's commit on airlock.
//! The commit is trusted only when git's top level is this workspace, and marked
//! `-dirty` when tracked files differ from it.

use std::path::Path;

/// The commit to record: `git`'s short `head` when git's `toplevel` is `workspace`
/// (both as given by the file system, compared after canonicalizing), with `-dirty` when
/// the tree has changes; `None` when git does not describe this workspace.
pub fn commit_of(
    toplevel: Option<&Path>,
    workspace: &Path,
    head: Option<&str>,
    dirty: bool,
) -> Option<String> {
    let toplevel = std::fs::canonicalize(toplevel?).ok()?;
    let workspace = std::fs::canonicalize(workspace).ok()?;
    if toplevel != workspace {
        return None;
    }
    let head = head?.trim();
    if head.is_empty() || !head.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some(if dirty {
        format!("{head}-dirty")
    } else {
        head.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_is_trusted_only_for_this_workspace_and_dirt_is_named() {
        let workspace = tempfile::tempdir().unwrap();
        let inner = workspace.path().join("crates");
        std::fs::create_dir(&inner).unwrap();
        let top = Some(workspace.path());
        assert_eq!(
            commit_of(top, workspace.path(), Some("1a2b3c4d5e6f"), false).as_deref(),
            Some("1a2b3c4d5e6f")
        );
        assert_eq!(
            commit_of(top, workspace.path(), Some("1a2b3c4d5e6f"), true).as_deref(),
            Some("1a2b3c4d5e6f-dirty")
        );
        // Another repository encloses the build: its commit is not airlock's.
        assert_eq!(commit_of(top, &inner, Some("1a2b3c4d5e6f"), false), None);
        assert_eq!(commit_of(None, workspace.path(), Some("1a2b"), false), None);
        assert_eq!(
            commit_of(top, workspace.path(), Some("not a sha"), false),
            None
        );
    }
}
