//! `SqliteStore::backup_into`: a consistent, checked, private copy while another handle
//! (a stand-in for `serve`) keeps writing; never overwriting; nothing left on failure.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use airlock_core::PostStatus;
use airlock_store::Reads;
use airlock_store_sqlite::{BackupError, SqliteStore};
use airlock_store_tests::fixture::*;

use crate::fresh;

#[tokio::test]
async fn a_backup_taken_while_another_process_writes_is_private_checked_and_opens() {
    let (store, dir) = fresh().await;
    for status in PostStatus::ALL {
        in_status(&store, status, "alpha").await;
    }
    // Another handle on the same file keeps writing during the copy.
    let writer = Arc::new(
        SqliteStore::open(&dir.path().join("airlock.db"))
            .await
            .unwrap(),
    );
    let busy = {
        let writer = writer.clone();
        tokio::spawn(async move {
            for i in 0..50 {
                draft(writer.as_ref(), "beta", &format!("meanwhile {i}"), t0()).await;
            }
        })
    };
    let to = dir.path().join("backup.db");
    let backup = store.backup_into(&to).await.unwrap();
    busy.await.unwrap();

    assert_eq!(backup.path, to);
    let meta = std::fs::metadata(&to).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(backup.bytes, meta.len());
    assert!(backup.posts >= 6, "{backup:?}");
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The copy is a ledger: it opens, and holds the posts of its moment.
    let copy = SqliteStore::open(&to).await.unwrap();
    let counts = copy.status_counts().await.unwrap();
    let total: i64 = counts.iter().map(|(_, n)| n).sum();
    assert_eq!(total, backup.posts);
    assert!(copy.check_invariants(t0()).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_backup_never_overwrites_and_needs_an_existing_directory() {
    let (store, dir) = fresh().await;
    let taken = dir.path().join("taken.db");
    std::fs::write(&taken, "precious").unwrap();
    assert!(matches!(
        store.backup_into(&taken).await,
        Err(BackupError::Exists(_))
    ));
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "precious");

    let nowhere = dir.path().join("missing").join("b.db");
    let refused = store.backup_into(&nowhere).await.unwrap_err();
    assert!(matches!(refused, BackupError::NoDirectory(_)), "{refused}");
    assert!(refused.to_string().contains("create the backup directory"));
    assert!(!nowhere.exists());
}

#[tokio::test]
async fn a_backup_removes_what_killed_backups_left_more_than_a_day_ago() {
    let (store, dir) = fresh().await;
    in_status(&store, PostStatus::Draft, "alpha").await;
    let day_and_more = std::time::SystemTime::now() - std::time::Duration::from_secs(25 * 3600);
    let file = |name: &str, old: bool| {
        let path = dir.path().join(name);
        std::fs::write(&path, "a full copy of the ledger").unwrap();
        if old {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(day_and_more)
                .unwrap();
        }
        path
    };
    let stale = [
        file(".old.db.partial-4242", true),
        file(".old.db.partial-4242-journal", true),
        file(".old.db.partial-4242-wal", true),
        file(".old.db.partial-4242-shm", true),
    ];
    // A backup that may still be running, and files that are not partial copies.
    let running = file(".now.db.partial-4343", false);
    let unrelated = file("notes.partial-old.txt", true);
    store.backup_into(&dir.path().join("b.db")).await.unwrap();
    for path in &stale {
        assert!(!path.exists(), "{} was left", path.display());
    }
    assert!(running.exists());
    assert!(unrelated.exists());
}
