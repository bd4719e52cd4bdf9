//! Records the commit the binary is built from, for `airlock --version`: the
//! `AIRLOCK_GIT_COMMIT` environment variable when set (a container build or a tarball
//! has no `.git`), else `git rev-parse` when git's top level is this workspace (not some
//! other repository that happens to enclose it), with `-dirty` when tracked files
//! differ from that commit, else `unknown`. Plain `git`, no crate: a fresh clone in CI
//! builds the same way. (`-dirty` is as of the last time this script ran: it reruns
//! when HEAD, the branch or the index move.)

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/build_info.rs"]
#[allow(dead_code)]
mod build_info;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/build_info.rs");
    println!("cargo:rerun-if-env-changed=AIRLOCK_GIT_COMMIT");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let workspace = manifest
        .parent()
        .and_then(Path::parent)
        .unwrap_or(&manifest)
        .to_path_buf();
    let git = |args: &[&str]| git(&manifest, args);
    let from_git = || {
        let toplevel = git(&["rev-parse", "--show-toplevel"]).map(PathBuf::from);
        let dirty = Command::new("git")
            .current_dir(&manifest)
            .args(["status", "--porcelain", "--untracked-files=no"])
            .output()
            .ok()
            .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
        build_info::commit_of(
            toplevel.as_deref(),
            &workspace,
            git(&["rev-parse", "--short=12", "HEAD"]).as_deref(),
            dirty,
        )
    };
    let commit = std::env::var("AIRLOCK_GIT_COMMIT")
        .ok()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-'))
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=AIRLOCK_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself, the branch it points at, packed refs, and
    // the index (staging or committing changes the dirty mark).
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    watched.push(git(&["rev-parse", "--git-path", "index"]));
    for path in watched.into_iter().flatten() {
        let path = if Path::new(&path).is_absolute() {
            PathBuf::from(path)
        } else {
            manifest.join(path)
        };
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// A git command's trimmed output in `dir`, or `None` when git or the repository is
/// missing.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}
