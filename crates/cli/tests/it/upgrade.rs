//! Upgrades: ledgers written by earlier releases (`tests/fixtures/`, made by those
//! releases' own binaries) open with this binary, migrate forward, and keep every row:
//! each post in its state with its whole timeline, tokens, pauses, outbox, reservations
//! and intents, byte for byte, and `doctor` finds the ledger healthy.
//!
//! Also the rule that makes this possible: a migration never drops or rewrites history
//! (checked on the migration files of both backends).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sqlx::{Connection, Executor, Row};

use crate::support::*;
use airlock_testkit::pg::TestDb;

/// The releases whose ledgers must keep opening.
const RELEASES: &[&str] = &["v0.1.0"];

/// The ledger tables of docs/stores.md plus the first release's own bookkeeping.
const TABLES: &[&str] = &[
    "posts",
    "post_events",
    "intents",
    "reservations",
    "pauses",
    "outbox",
    "tokens",
    "create_keys",
    "channel_failures",
    "_sqlx_migrations",
];

fn fixture_dir(release: &str, backend: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(release)
        .join(backend)
}

/// A copy of a release's fixture directory in a temp dir (the committed files are
/// never opened for writing).
fn copy_fixture(release: &str, backend: &str) -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture_dir(release, backend), dir.path());
    Workspace { dir }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn migration_count(backend: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(format!("store-{backend}"))
        .join("migrations");
    migration_files(&dir).len()
}

fn migration_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    files
}

/// `expected` is contained in `actual`: every field the old release printed is there
/// with the same value (a later release may add fields, never change or drop one).
fn assert_contains(actual: &Value, expected: &Value, path: &str) {
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, value) in want {
                let Some(found) = got.get(key) else {
                    panic!("{path}.{key} is missing after the upgrade");
                };
                assert_contains(found, value, &format!("{path}.{key}"));
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            assert_eq!(
                got.len(),
                want.len(),
                "{path} has {} entries after the upgrade, {} before",
                got.len(),
                want.len()
            );
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert_contains(g, w, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(actual, expected, "{path} changed in the upgrade"),
    }
}

/// What the new binary shows equals what the old one showed, post by post and token by
/// token; `doctor` is happy; the ledger keeps working (a new post takes the next id).
fn check_upgraded_workspace(ws: &Workspace, release: &str, backend: &str) {
    let doctor = ws.run(&["doctor"]);
    assert_eq!(
        doctor.code, 0,
        "doctor on the {release} {backend} ledger: {}{}",
        doctor.stdout, doctor.stderr
    );
    assert!(
        doctor.stdout.contains("ledger invariants hold"),
        "{}",
        doctor.stdout
    );

    let expected =
        std::fs::read_to_string(fixture_dir(release, backend).join("expected-posts.jsonl"))
            .unwrap();
    let expected: Vec<Value> = expected
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(expected.len(), 10, "the fixture has ten posts");
    let mut states = BTreeMap::new();
    for want in &expected {
        let id = want["id"].as_i64().unwrap();
        let got = ws.ok(&["post", "show", &id.to_string(), "--json"]).json();
        assert_contains(&got, want, &format!("post {id}"));
        assert!(
            !got["events"].as_array().unwrap().is_empty(),
            "post {id} keeps its timeline"
        );
        *states
            .entry(got["status"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    let want_states: BTreeMap<String, i32> = [
        ("approved", 2),
        ("draft", 2),
        ("failed", 1),
        ("needs_review", 1),
        ("posted", 3),
        ("posting", 1),
    ]
    .into_iter()
    .map(|(s, n)| (s.to_owned(), n))
    .collect();
    assert_eq!(states, want_states);

    let list = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 10);

    let tokens: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir(release, backend).join("expected-tokens.json"))
            .unwrap(),
    )
    .unwrap();
    assert_contains(
        &ws.ok(&["token", "list", "--json"]).json(),
        &tokens,
        "tokens",
    );

    // Still a working ledger: pauses are still in force, the next post takes id 11.
    let channels = ws.ok(&["channels", "--json"]).json();
    let paused: Vec<&str> = channels
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["paused"] == true)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(paused, ["drill", "strict"]);
    let added = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "cats",
            "--text",
            "After the upgrade. Please respect the cats' own pace.",
            "--json",
        ])
        .json();
    assert_eq!(added["id"], 11);
}

/// Every row of every ledger table, as text, keyed by table; only the columns the old
/// release had, so that added columns do not count as changes.
async fn sqlite_rows(
    db: &Path,
    columns_of: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, Vec<String>> {
    let url = format!("sqlite://{}?mode=ro", db.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let mut out = BTreeMap::new();
    for (table, columns) in columns_of {
        let select = columns
            .iter()
            .map(|c| format!("quote(\"{c}\")"))
            .collect::<Vec<_>>()
            .join(" || '|' || ");
        let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT {select} FROM \"{table}\" ORDER BY rowid"
        )))
        .fetch_all(&mut conn)
        .await
        .unwrap();
        out.insert(table.clone(), rows);
    }
    conn.close().await.ok();
    out
}

async fn sqlite_columns(db: &Path) -> BTreeMap<String, Vec<String>> {
    let url = format!("sqlite://{}?mode=ro", db.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let mut out = BTreeMap::new();
    for table in TABLES {
        let columns: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
        )))
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
        assert!(!columns.is_empty(), "the fixture has table {table}");
        out.insert((*table).to_owned(), columns);
    }
    conn.close().await.ok();
    out
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn sqlite_ledgers_of_every_earlier_release_migrate_with_every_row_intact() {
    for release in RELEASES {
        let ws = copy_fixture(release, "sqlite");
        let ledger = ws.path("ledger.db");
        let before_copy = ws.path("before.db");
        std::fs::copy(&ledger, &before_copy).unwrap();
        let columns = block_on(sqlite_columns(&before_copy));
        let before = block_on(sqlite_rows(&before_copy, &columns));
        let triggers_before = block_on(sqlite_triggers(&before_copy));
        assert!(
            !triggers_before.is_empty(),
            "{release}: the fixture has triggers"
        );

        let migrate = ws.ok(&["migrate"]);
        assert!(
            migrate.stdout.contains("migrations applied"),
            "{}",
            migrate.stdout
        );
        let after = block_on(sqlite_rows(&ledger, &columns));
        for (table, rows) in &before {
            let now = &after[table];
            if table == "_sqlx_migrations" {
                // The old release's migrations stay recorded as they were; new ones follow.
                assert_eq!(&now[..rows.len()], &rows[..], "{release}: {table}");
                continue;
            }
            assert_eq!(now, rows, "{release}: every row of {table} is intact");
        }
        let applied: i64 = block_on(async {
            let url = format!("sqlite://{}?mode=ro", ledger.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let n = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            conn.close().await.ok();
            n
        });
        assert_eq!(
            applied as usize,
            migration_count("sqlite"),
            "{release}: all migrations applied"
        );

        check_upgraded_workspace(&ws, release, "sqlite");

        // The lifecycle is still enforced by the store: every trigger of the old release
        // is there, and an illegal status change by hand is refused.
        let triggers_after = block_on(sqlite_triggers(&ledger));
        let lost: Vec<&String> = triggers_before.difference(&triggers_after).collect();
        assert!(
            lost.is_empty(),
            "{release}: migrating lost triggers {lost:?}"
        );
        let refused = block_on(async {
            let url = format!("sqlite://{}", ledger.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let draft: i64 = sqlx::query_scalar("SELECT min(id) FROM posts WHERE status = 'draft'")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            let refused = sqlx::query("UPDATE posts SET status = 'posted' WHERE id = ?")
                .bind(draft)
                .execute(&mut conn)
                .await;
            conn.close().await.ok();
            refused
        });
        let err = refused.expect_err("a draft went straight to posted by hand-written SQL");
        assert!(
            err.to_string().contains("illegal status transition"),
            "{release}: {err}"
        );
    }
}

async fn sqlite_triggers(path: &Path) -> std::collections::BTreeSet<String> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    conn.close().await.ok();
    names.into_iter().collect()
}

/// Every user trigger on a PostgreSQL ledger: its table, its name and whether it fires
/// (`O`: origin and local; `D`: disabled).
async fn pg_triggers(url: &str) -> std::collections::BTreeSet<(String, String, String)> {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.relname::text, t.tgname::text, t.tgenabled::text FROM pg_trigger t \
         JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.ok();
    rows.into_iter().collect()
}

/// The dump as `psql` would run it, minus psql's own meta-commands (`\restrict`).
fn dump_statements(dump: &str) -> String {
    dump.lines()
        .filter(|l| !l.starts_with('\\'))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn pg_rows(url: &str) -> BTreeMap<String, Vec<Value>> {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let mut out = BTreeMap::new();
    for table in TABLES {
        let order = if *table == "tokens" {
            "name"
        } else if *table == "create_keys" {
            "scope, key"
        } else if *table == "channel_failures" {
            "channel"
        } else if *table == "_sqlx_migrations" {
            "version"
        } else {
            "id"
        };
        let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT to_jsonb(t)::text FROM \"{table}\" t ORDER BY {order}"
        )))
        .fetch_all(&mut conn)
        .await
        .unwrap();
        out.insert(
            (*table).to_owned(),
            rows.iter()
                .map(|r| serde_json::from_str(r).unwrap())
                .collect(),
        );
    }
    conn.close().await.ok();
    out
}

#[test]
fn postgres_ledgers_of_every_earlier_release_migrate_with_every_row_intact() {
    for release in RELEASES {
        let db = TestDb::create();
        let dump =
            std::fs::read_to_string(fixture_dir(release, "postgres").join("ledger.sql")).unwrap();
        block_on(async {
            let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
            conn.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(dump_statements(&dump))))
                .await
                .unwrap();
            conn.close().await.ok();
        });
        let before = block_on(pg_rows(&db.url));
        let triggers_before = block_on(pg_triggers(&db.url));
        assert!(
            !triggers_before.is_empty(),
            "{release}: the fixture has triggers"
        );

        let ws = copy_fixture(release, "postgres");
        let config = std::fs::read_to_string(ws.config()).unwrap();
        let config: String = config
            .lines()
            .map(|l| {
                if l.starts_with("database = ") {
                    format!("database = \"{}\"", db.url)
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(ws.config(), config).unwrap();

        ws.ok(&["migrate"]);
        let after = block_on(pg_rows(&db.url));
        for (table, rows) in &before {
            let now = &after[table];
            assert!(now.len() >= rows.len(), "{release}: {table} lost rows");
            if table != "_sqlx_migrations" {
                assert_eq!(
                    now.len(),
                    rows.len(),
                    "{release}: {table} gained rows by migrating"
                );
            }
            for (got, want) in now.iter().zip(rows) {
                assert_contains(got, want, &format!("{release}: {table}"));
            }
        }
        let applied = after["_sqlx_migrations"].len();
        assert_eq!(
            applied,
            migration_count("postgres"),
            "{release}: all migrations applied"
        );

        check_upgraded_workspace(&ws, release, "postgres");

        // Every trigger of the old release is still there and enabled, and an illegal
        // status change by hand is refused.
        let triggers_after = block_on(pg_triggers(&db.url));
        let lost: Vec<_> = triggers_before.difference(&triggers_after).collect();
        assert!(
            lost.is_empty(),
            "{release}: migrating lost or disabled triggers {lost:?}"
        );
        let refused = block_on(async {
            let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
            let draft: i64 = sqlx::query_scalar("SELECT min(id) FROM posts WHERE status = 'draft'")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            let refused = sqlx::query("UPDATE posts SET status = 'posted' WHERE id = $1")
                .bind(draft)
                .execute(&mut conn)
                .await;
            conn.close().await.ok();
            refused
        });
        let err = refused.expect_err("a draft went straight to posted by hand-written SQL");
        assert!(
            err.to_string().contains("illegal status transition"),
            "{release}: {err}"
        );
    }
}

/// The ledger tables whose rows are history: a migration only ever adds to them.
const HISTORY: &[&str] = &[
    "POSTS",
    "POST_EVENTS",
    "INTENTS",
    "RESERVATIONS",
    "PAUSES",
    "OUTBOX",
    "TOKENS",
];

/// Every migration after the first only adds: no dropped, truncated, renamed or
/// rewritten ledger table, no dropped column or trigger (but those `REMADE`), no
/// disabled trigger, no deleted row of history, and no updated one except to fill in a
/// column the same migration added. (The first migration is frozen anyway: sqlx refuses a
/// ledger whose applied migration changed, and `tests/fixtures` proves old ledgers still
/// open.)
#[test]
fn migrations_never_drop_or_rewrite_history() {
    for backend in ["sqlite", "postgres"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(format!("store-{backend}"))
            .join("migrations");
        let files = migration_files(&dir);
        assert!(!files.is_empty());
        for file in files.iter().skip(1) {
            let sql = std::fs::read_to_string(file).unwrap();
            let words = sql_words(&sql);
            let code = format!(" {} ", words.join(" "));
            let added: Vec<&str> = words
                .windows(3)
                .filter(|w| w[0] == "ADD" && w[1] == "COLUMN")
                .map(|w| w[2].as_str())
                .collect();
            for forbidden in [" DROP COLUMN ", " DISABLE TRIGGER "] {
                assert!(
                    !code.contains(forbidden),
                    "{} contains `{}`: migrations only add to the ledger",
                    file.display(),
                    forbidden.trim()
                );
            }
            // A trigger is dropped only to be made again where SQLite cannot replace it,
            // each time reviewed (`REMADE`).
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            let drops = (0..words.len()).filter(|&i| {
                words[i] == "DROP" && words.get(i + 1).is_some_and(|w| w == "TRIGGER")
            });
            for at in drops {
                let name = words[at + 2..]
                    .iter()
                    .find(|w| !matches!(w.as_str(), "IF" | "EXISTS"))
                    .map_or("", String::as_str);
                assert!(
                    REMADE.contains(&(backend, stem.as_str(), name))
                        && code.contains(&format!(" CREATE TRIGGER {name} ")),
                    "{} drops trigger {name}: migrations only add to the ledger (a trigger made again in the same file is listed in REMADE)",
                    file.display(),
                );
            }
            for table in HISTORY {
                for forbidden in [
                    format!(" DROP TABLE {table} "),
                    format!(" DROP TABLE IF EXISTS {table} "),
                    format!(" TRUNCATE {table} "),
                    format!(" TRUNCATE TABLE {table} "),
                    format!(" DELETE FROM {table} "),
                    format!(" ALTER TABLE {table} RENAME "),
                ] {
                    assert!(
                        !code.contains(&forbidden),
                        "{} contains `{}`: migrations only add to the ledger",
                        file.display(),
                        forbidden.trim()
                    );
                }
                // An UPDATE may only fill in columns this migration added, or values an
                // earlier release left missing, one reviewed repair at a time (`FILLS`).
                for (columns, filter) in updates(&sql, table) {
                    for column in columns {
                        let repair = FILLS.contains(&(stem.as_str(), *table, column.as_str()))
                            && filter.contains(&format!("{column} IS NULL"));
                        assert!(
                            added.contains(&column.as_str()) || repair,
                            "{} updates {table}.{column}: migrations only fill in columns they add, or a missing value listed in FILLS",
                            file.display(),
                        );
                    }
                }
            }
        }
    }
}

/// Triggers a migration drops and creates again in the same file, each reviewed:
/// (backend, migration, trigger). SQLite cannot replace a trigger in place.
const REMADE: &[(&str, &str, &str)] = &[
    // The quota_hours update trigger, the same but for a WHEN clause passing over a
    // settle that counts nothing.
    (
        "sqlite",
        "0015_settle_counts_nothing",
        "RESERVATIONS_QUOTA_HOURS_UPDATE",
    ),
];

/// Values an earlier release left missing that a migration fills in, each reviewed:
/// (migration, table, column), updated only where the column `IS NULL`.
const FILLS: &[(&str, &str, &str)] = &[
    // Committed reservations of posts settled by an earlier attempt's proof had no send
    // time: given the time they were made.
    ("0008_exact_quotas", "RESERVATIONS", "SENT_AT"),
];

/// The `UPDATE table SET ...` statements of `sql`: the columns each assigns, and its
/// `WHERE` clause, upper-cased with comments dropped.
fn updates(sql: &str, table: &str) -> Vec<(Vec<String>, String)> {
    let code: String = sql
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase()
        .replace(['"', '`'], "")
        .replace("PUBLIC.", "");
    let code = code.split_whitespace().collect::<Vec<_>>().join(" ");
    code.split(';')
        .filter_map(|statement| {
            let rest = statement
                .trim()
                .strip_prefix(&format!("UPDATE {table} SET "))?;
            let (set, filter) = rest.split_once(" WHERE ").unwrap_or((rest, ""));
            // Assignments are split at the commas outside parentheses and brackets.
            let mut columns = Vec::new();
            let (mut depth, mut start) = (0, 0);
            for (i, c) in set.char_indices().chain([(set.len(), ',')]) {
                match c {
                    '(' | '[' => depth += 1,
                    ')' | ']' => depth -= 1,
                    ',' if depth == 0 => {
                        let assignment = &set[start..i];
                        let column = assignment.split('=').next().unwrap_or("").trim();
                        columns.push(column.to_owned());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            Some((columns, filter.to_owned()))
        })
        .collect()
}

#[test]
fn the_history_check_reads_every_column_an_update_assigns() {
    let sql = "-- a comment; UPDATE posts SET x = 1\nUPDATE posts SET a = f(b, c), d = 2 WHERE a IS NULL;\nupdate reservations set sent_at = created_at where sent_at is null;";
    assert_eq!(
        updates(sql, "POSTS"),
        [(vec!["A".to_owned(), "D".to_owned()], "A IS NULL".to_owned())]
    );
    assert_eq!(
        updates(sql, "RESERVATIONS"),
        [(vec!["SENT_AT".to_owned()], "SENT_AT IS NULL".to_owned())]
    );
}

/// The words of SQL code: comments out (line and block), case normalised, quotes, schema
/// prefixes and punctuation split off, so `DELETE FROM public.post_events;` reads as its
/// words.
fn sql_words(sql: &str) -> Vec<String> {
    let mut code = String::new();
    let mut rest = sql;
    while let Some((before, after)) = rest.split_once("/*") {
        code.push_str(before);
        code.push(' ');
        rest = after.split_once("*/").map_or("", |(_, after)| after);
    }
    code.push_str(rest);
    code.lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase()
        .replace(['"', '`'], "")
        .replace("PUBLIC.", "")
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '(' | ')' | ',' | '='))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_history_check_sees_through_punctuation_and_schemas() {
    assert_eq!(
        sql_words("DROP/**/TRIGGER x; DROP /* a\n */ TRIGGER y"),
        ["DROP", "TRIGGER", "X", "DROP", "TRIGGER", "Y"]
    );
    let words = sql_words("delete from public.post_events;\nUPDATE posts SET authors='[]';");
    assert_eq!(
        words,
        [
            "DELETE",
            "FROM",
            "POST_EVENTS",
            "UPDATE",
            "POSTS",
            "SET",
            "AUTHORS",
            "'[]'"
        ]
    );
}
