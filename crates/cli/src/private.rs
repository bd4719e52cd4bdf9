//! Files and directories only their owner may read: whatever `init`, `demo` (and
//! `backup`) write holds the ledger, its configuration or secrets, so files are created
//! with mode 0600 and directories with 0700, set explicitly after creation because the
//! process umask can only take bits away (a umask of 0 would otherwise leave 0644).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` and any missing parents with mode 0700. Directories that already
/// exist keep their mode: they belong to someone who chose it.
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at {
        if path.as_os_str().is_empty() || path.exists() {
            break;
        }
        missing.push(path.to_path_buf());
        at = path.parent();
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for path in missing {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes `contents` to a new file at `path` with mode 0600; refuses to overwrite.
pub fn write_new(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_0600_and_new_directories_0700() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        create_dir_all(&nested).unwrap();
        for path in [dir.path().join("a"), nested.clone()] {
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", path.display());
        }
        let file = nested.join("f");
        write_new(&file, b"x").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(write_new(&file, b"y").is_err(), "never overwrites");
    }
}
