//! Online backups of a SQLite ledger: a consistent copy taken while other processes
//! (`serve`, cron dispatchers) keep writing, checked before anyone relies on it.
//!
//! `VACUUM INTO` reads the ledger inside one read transaction, so the copy is one
//! snapshot; in WAL mode writers are not blocked meanwhile. The copy is written to a
//! hidden temporary file beside the target, created `0600` before SQLite writes a byte
//! (a ledger copy is as confidential as the ledger), switched to a rollback journal so
//! that it is one self-contained file, checked with `PRAGMA integrity_check`, synced,
//! and only then renamed to the target. A failure at any step leaves no target file.
//!
//! A backup killed half-way (a power cut, `kill -9`, a timer's timeout) leaves its
//! hidden `.NAME.partial-PID` file behind, a full copy of the ledger: every backup first
//! removes such files (and their `-journal`, `-wal`, `-shm`) older than a day from the
//! target's directory, so they do not pile up; younger ones may belong to a backup
//! still running and are left alone.
//!
//! What this does not do: choose where or how often backups go (see
//! `packaging/systemd/airlock-backup.timer`), or back up PostgreSQL (`pg_dump` does).

use std::path::{Path, PathBuf};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{ConnectOptions, Connection};

use crate::SqliteStore;

/// Why a backup was not written. Nothing exists at the target afterwards.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The target exists: a backup never overwrites anything.
    #[error("{0} already exists: a backup never overwrites a file; choose a new name")]
    Exists(PathBuf),
    /// The target's directory does not exist.
    #[error("{0} does not exist: create the backup directory first")]
    NoDirectory(PathBuf),
    /// A file operation failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// SQLite could not copy the ledger.
    #[error("cannot copy the ledger: {0}")]
    Copy(#[source] sqlx::Error),
    /// The copy failed its integrity check; it was deleted.
    #[error("the copy failed PRAGMA integrity_check and was deleted: {0}")]
    Integrity(String),
}

/// What a successful backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    /// The backup file (mode 0600).
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Posts in the copy.
    pub posts: i64,
}

impl SqliteStore {
    /// Writes a consistent, checked copy of the ledger to `to`, which must not exist.
    pub async fn backup_into(&self, to: &Path) -> Result<Backup, BackupError> {
        if to.exists() || to.is_symlink() {
            return Err(BackupError::Exists(to.to_path_buf()));
        }
        let dir = match to.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(BackupError::NoDirectory(dir));
        }
        let name = to
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "backup".into());
        remove_stale_partials(&dir, STALE_PARTIAL);
        let partial = dir.join(format!(".{name}.partial-{}", std::process::id()));
        let result = self.write_checked_copy(&partial).await;
        let result = match result {
            Ok(posts) => finish(&partial, to, &dir).map(|bytes| Backup {
                path: to.to_path_buf(),
                bytes,
                posts,
            }),
            Err(e) => Err(e),
        };
        if result.is_err() {
            for leftover in with_companions(&partial) {
                let _ = std::fs::remove_file(leftover);
            }
        }
        result
    }

    async fn write_checked_copy(&self, partial: &Path) -> Result<i64, BackupError> {
        let io = |source| BackupError::Io {
            path: partial.to_path_buf(),
            source,
        };
        // Created empty and private first: SQLite writes into an empty file as into a
        // new one, and keeps its mode.
        create_private(partial).map_err(io)?;
        let target = partial.to_str().ok_or_else(|| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the path is not UTF-8",
            ))
        })?;
        sqlx::query("VACUUM INTO ?")
            .bind(target)
            .execute(self.pool())
            .await
            .map_err(BackupError::Copy)?;

        let mut copy = SqliteConnectOptions::new()
            .filename(partial)
            .create_if_missing(false)
            .journal_mode(SqliteJournalMode::Delete)
            .connect()
            .await
            .map_err(BackupError::Copy)?;
        let checked: Result<i64, BackupError> = async {
            let report: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_all(&mut copy)
                .await
                .map_err(BackupError::Copy)?;
            if report != ["ok"] {
                return Err(BackupError::Integrity(report.join("; ")));
            }
            sqlx::query_scalar("SELECT count(*) FROM posts")
                .fetch_one(&mut copy)
                .await
                .map_err(BackupError::Copy)
        }
        .await;
        copy.close().await.map_err(BackupError::Copy)?;
        checked
    }
}

/// How old an abandoned partial copy must be before a backup removes it.
pub const STALE_PARTIAL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A file and the files SQLite may keep beside it.
fn with_companions(path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf()];
    for suffix in ["-journal", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files
}

/// Removes `.NAME.partial-PID` files (and their companions) in `dir` last changed more
/// than `older_than` ago: what killed backups left. Best effort; errors are logged.
pub fn remove_stale_partials(dir: &Path, older_than: std::time::Duration) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((_, tail)) = name.split_once(".partial-") else {
            continue;
        };
        let pid = tail
            .trim_end_matches("-journal")
            .trim_end_matches("-wal")
            .trim_end_matches("-shm");
        if !name.starts_with('.') || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|age| age > older_than);
        if !stale {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => {
                tracing::info!(file = %entry.path().display(), "removed a partial copy a killed backup left behind");
                removed.push(entry.path());
            }
            Err(e) => {
                tracing::warn!(file = %entry.path().display(), error = %e, "cannot remove a partial copy a killed backup left behind")
            }
        }
    }
    removed
}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map(drop)
}

/// Syncs the checked copy, renames it to the target (refusing to replace one that
/// appeared meanwhile) and syncs the directory; the copy's size.
fn finish(partial: &Path, to: &Path, dir: &Path) -> Result<u64, BackupError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BackupError::Io { path, source }
    };
    let file = std::fs::File::open(partial).map_err(io(partial))?;
    file.sync_all().map_err(io(partial))?;
    let bytes = file.metadata().map_err(io(partial))?.len();
    drop(file);
    // A hard link fails if the target exists, where a rename would replace it.
    match std::fs::hard_link(partial, to) {
        Ok(()) => std::fs::remove_file(partial).map_err(io(partial))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(BackupError::Exists(to.to_path_buf()));
        }
        // A filesystem without hard links: check, then rename.
        Err(_) if to.exists() => return Err(BackupError::Exists(to.to_path_buf())),
        Err(_) => std::fs::rename(partial, to).map_err(io(to))?,
    }
    if let Ok(dir) = std::fs::File::open(dir) {
        // Makes the new name durable; not every filesystem supports it.
        let _ = dir.sync_all();
    }
    Ok(bytes)
}
