//! Running airlock for real, as an operator does: `backup` while `serve` runs (a 0600
//! file that passes `integrity_check` and serves), `export` (one JSON line per post with
//! its timeline), JSON logs on stderr, `--version` and `--help`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::Connection;

use crate::hardened::{Hardened, sql_as};
use crate::support::*;

/// A copy of the first release's SQLite ledger (ten posts in every state) in a temp dir,
/// its config listening on a free port.
fn fixture_workspace() -> (Workspace, String) {
    let dir = tempfile::tempdir().unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0.1.0/sqlite");
    for name in ["ledger.db", "airlock.toml"] {
        std::fs::copy(from.join(name), dir.path().join(name)).unwrap();
    }
    let address = free_address();
    let config = std::fs::read_to_string(dir.path().join("airlock.toml")).unwrap();
    let config: Vec<String> = config
        .lines()
        .map(|l| {
            if l.starts_with("listen = ") {
                format!("listen = \"{address}\"")
            } else {
                l.to_owned()
            }
        })
        .collect();
    std::fs::write(dir.path().join("airlock.toml"), config.join("\n")).unwrap();
    (Workspace { dir }, address)
}

fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// `GET path` with an optional bearer token: status and body.
fn http_get(address: &str, path: &str, token: Option<&str>) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(address).ok()?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer.get(9..12)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    // Chunked bodies: good enough to find JSON in them for these small answers.
    Some((status, body))
}

/// A running `airlock serve`, stopped with SIGTERM (as systemd does) when dropped.
pub struct Serving {
    child: Child,
    pub address: String,
    log: std::path::PathBuf,
}

impl Serving {
    /// Starts `serve` with extra environment and waits until `/healthz` answers 200.
    pub fn start(ws: &Workspace, address: &str, env: &[(&str, &str)]) -> Serving {
        let log = ws.path(&format!("serve-{}.log", address.replace(':', "_")));
        let mut command = ws.command(&["serve"]);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut serving = Serving {
            child,
            address: address.to_owned(),
            log,
        };
        let start = Instant::now();
        while http_get(address, "/healthz", None).map(|(s, _)| s) != Some(200) {
            if let Some(status) = serving.child.try_wait().unwrap() {
                panic!("airlock serve exited ({status}): {}", serving.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "airlock serve never answered /healthz on {address}: {}",
                serving.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        serving
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then waits for the process to end on its own; its stderr.
    pub fn stop(mut self) -> String {
        self.terminate();
        self.log()
    }

    fn terminate(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .ok();
        self.child.wait().ok();
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn integrity(path: &Path) -> Vec<String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let url = format!("sqlite://{}?mode=ro", path.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let report: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_all(&mut conn)
                .await
                .unwrap();
            conn.close().await.ok();
            report
        })
}

#[test]
fn a_backup_taken_while_serve_runs_is_private_passes_integrity_check_and_serves() {
    let (ws, address) = fixture_workspace();
    let token = ws
        .ok(&[
            "token", "create", "--name", "auditor", "--role", "writer", "--json",
        ])
        .json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let serving = Serving::start(&ws, &address, &[]);
    std::fs::create_dir(ws.path("backups")).unwrap();
    let to = ws.path("backups/ledger-copy.db");
    let run = ws.ok(&["backup", "--to", to.to_str().unwrap()]);
    assert!(run.stdout.contains("integrity_check ok"), "{}", run.stdout);
    drop(serving);

    let mode = std::fs::metadata(&to).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the backup is private");
    assert_eq!(integrity(&to), ["ok"]);

    // Restoring is pointing `database` at the copy: it serves the same ledger.
    let restored = tempfile::tempdir().unwrap();
    std::fs::copy(&to, restored.path().join("ledger.db")).unwrap();
    let config = std::fs::read_to_string(ws.config()).unwrap();
    let address = free_address();
    let config = config.replace(
        &config
            .lines()
            .find(|l| l.starts_with("listen = "))
            .unwrap()
            .to_owned(),
        &format!("listen = \"{address}\""),
    );
    std::fs::write(restored.path().join("airlock.toml"), config).unwrap();
    let restored = Workspace { dir: restored };
    let doctor = restored.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    let serving = Serving::start(&restored, &address, &[]);
    let (status, body) = http_get(&address, "/api/v1/posts", Some(&token)).unwrap();
    assert_eq!(status, 200, "{body}");
    for id in 1..=10 {
        assert!(
            body.contains(&format!("\"id\":{id},")),
            "post {id} in {body}"
        );
    }
    drop(serving);
}

#[test]
fn a_backup_refuses_to_overwrite_and_says_what_to_run_for_postgres() {
    let (ws, _) = fixture_workspace();
    ws.ok(&["migrate"]);
    std::fs::write(ws.path("taken.db"), "precious").unwrap();
    let run = ws.run(&["backup", "--to", ws.path("taken.db").to_str().unwrap()]);
    assert_refused(&run, "already exists");
    assert_eq!(
        std::fs::read_to_string(ws.path("taken.db")).unwrap(),
        "precious"
    );
    let run = ws.run(&[
        "backup",
        "--to",
        ws.path("no/such/dir/b.db").to_str().unwrap(),
    ]);
    assert_refused(&run, "does not exist");

    let pg = Workspace::new(
        "database = \"postgres://airlock:s3cret@127.0.0.1:1/airlock\"\n\n[channels.sandbox]\nkind = \"sandbox\"\ndaily_limit = 1\n",
    );
    let run = pg.run(&["backup", "--to", "/tmp/x.dump"]);
    assert_refused(&run, "pg_dump --format=custom");
    assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
}

#[test]
fn export_prints_one_json_line_per_post_with_its_timeline() {
    let (ws, _) = fixture_workspace();
    ws.ok(&["migrate"]);
    let run = ws.ok(&["export"]);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 10);
    for (i, line) in lines.iter().enumerate() {
        let id = i as i64 + 1;
        assert_eq!(line["id"], id, "oldest first");
        let show = ws.ok(&["post", "show", &id.to_string(), "--json"]).json();
        assert_eq!(line, &show, "post {id} as `post show --json` gives it");
        assert!(!line["events"].as_array().unwrap().is_empty());
    }
    let count = |args: &[&str]| ws.ok(args).stdout.lines().count();
    assert_eq!(count(&["export", "--status", "posted"]), 3);
    assert_eq!(count(&["export", "--channel", "strict"]), 2);
    assert_eq!(
        count(&["export", "--channel", "strict", "--status", "failed"]),
        1
    );
    assert_eq!(count(&["export", "--since", "2030-01-01T00:00:00Z"]), 0);
    assert_eq!(
        count(&["export", "--since", "2020-01-01T00:00:00+09:00"]),
        10
    );

    // A note is a change worth exporting again.
    let before_note = (chrono::Utc::now() - chrono::Duration::seconds(1)).to_rfc3339();
    ws.ok(&["post", "note", "2", "--text", "checked again"]);
    let since = ws.ok(&["export", "--since", &before_note]).stdout;
    let ids: Vec<i64> = since
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, [2]);

    assert_refused(&ws.run(&["export", "--status", "sent"]), "--status");
    assert_refused(&ws.run(&["export", "--since", "yesterday"]), "--since");
    assert_refused(&ws.run(&["export", "--channel", "Bad Name"]), "--channel");
}

/// Every stderr line parses as one JSON object with time, level and message.
fn assert_json_lines(stderr: &str) -> Vec<Value> {
    assert!(!stderr.trim().is_empty(), "something was logged");
    stderr
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stderr line is not JSON ({e}): {line}"));
            for key in ["time", "level", "message"] {
                assert!(value.get(key).is_some(), "{key} missing in {line}");
            }
            value
        })
        .collect()
}

#[test]
fn with_airlock_log_format_json_every_stderr_line_is_a_json_object() {
    let (ws, address) = fixture_workspace();
    let json = [("AIRLOCK_LOG_FORMAT", "json"), ("AIRLOCK_LOG", "debug")];
    let serving = Serving::start(&ws, &address, &json);
    http_get(&address, "/metrics", None).unwrap();
    http_get(&address, "/api/v1/posts", Some("alk_wrong")).unwrap();

    let mut publish = ws.command(&[
        "post",
        "add",
        "--channel",
        "cats",
        "--text",
        "JSON logs. Please respect the cats' own pace.",
        // Not due: the running `serve` leaves it to `post publish` below.
        "--at",
        "2099-01-01T00:00:00Z",
        "--json",
    ]);
    publish
        .env("AIRLOCK_LOG_FORMAT", "json")
        .env("AIRLOCK_LOG", "info");
    let added = finish(publish.output().unwrap());
    let id = added.json()["id"].as_i64().unwrap().to_string();
    ws.ok(&["post", "approve", &id]);
    let mut publish = ws.command(&["post", "publish", &id]);
    publish
        .env("AIRLOCK_LOG_FORMAT", "json")
        .env("AIRLOCK_LOG", "info");
    let published = finish(publish.output().unwrap());
    assert_eq!(published.code, 0, "{}", published.stderr);
    let events = assert_json_lines(&published.stderr);
    let number: i64 = id.parse().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["post_id"] == number && e["channel"] == "cats"),
        "a publish is logged with its post id (a number) and channel: {}",
        published.stderr
    );
    // Fields are plain values: no quoted strings, no Rust debug text.
    for event in &events {
        for (key, value) in event.as_object().unwrap() {
            let text = value.as_str().unwrap_or("");
            assert!(
                !text.starts_with('"') && !text.contains(" { "),
                "{key} is not a plain value: {event}"
            );
        }
    }
    assert!(
        events.iter().any(|e| e["outcome"] == "published"),
        "the outcome is a plain string: {}",
        published.stderr
    );

    // A refusal and a usage error are JSON too.
    let mut refused = ws.command(&["post", "approve", "999"]);
    refused.env("AIRLOCK_LOG_FORMAT", "json");
    let refused = finish(refused.output().unwrap());
    assert_ne!(refused.code, 0);
    let lines = assert_json_lines(&refused.stderr);
    assert_eq!(lines.len(), 1, "one line: {}", refused.stderr);
    assert_eq!(lines[0]["level"], "ERROR");
    let mut usage = ws.command(&["post", "frobnicate"]);
    usage.env("AIRLOCK_LOG_FORMAT", "json");
    let usage = finish(usage.output().unwrap());
    assert_eq!(usage.code, 2);
    assert_eq!(assert_json_lines(&usage.stderr).len(), 1);

    let log = serving.stop();
    let lines = assert_json_lines(&log);
    assert!(
        lines.iter().any(|l| l["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("serving http://")),
        "the serve banner is JSON too"
    );

    // The default stays human-readable.
    let plain = ws.run(&["post", "approve", "999"]);
    assert!(plain.stderr.starts_with("airlock: "), "{}", plain.stderr);
    let mut unknown = ws.command(&["channels"]);
    unknown.env("AIRLOCK_LOG_FORMAT", "xml");
    assert_refused(&finish(unknown.output().unwrap()), "AIRLOCK_LOG_FORMAT");
}

#[test]
fn version_names_the_release_and_the_commit_and_help_describes_airlock() {
    let ws = Workspace::new(&sandbox_config(""));
    let version = ws.ok(&["--version"]).stdout;
    let version = version.trim();
    let rest = version
        .strip_prefix(&format!("airlock {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version: {version}"));
    let sha = rest.strip_suffix("-dirty").unwrap_or(rest);
    assert!(
        rest == "unknown" || (sha.len() >= 7 && sha.chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );
    let help = ws.ok(&["--help"]).stdout;
    for needle in [
        "The one door between AI agents and public platforms",
        "at most once",
        "airlock init",
        "AIRLOCK_LOG_FORMAT=json",
        "Exit codes",
        "backup",
        "export",
    ] {
        assert!(help.contains(needle), "{needle:?} not in --help:\n{help}");
    }
    assert!(
        !help.contains("configuration, wiring"),
        "no internal doc line:\n{help}"
    );
}

/// The hardened PostgreSQL mode of docs/deploy.md, step by step: the owner migrates
/// (creating the runtime role, airlock's functions and the grants), a login role holding
/// only the runtime role publishes through those functions, and that role can neither
/// write a table by hand nor read a secret.
#[test]
fn the_hardened_postgres_mode_publishes_through_functions_and_refuses_hand_written_writes() {
    let h = Hardened::new("[channels.sandbox]\nkind = \"sandbox\"\ndaily_limit = 5\n");
    let ws = &h.app;
    // Before the owner migrates, the app role cannot, and says who must.
    let early = ws.run(&["post", "list"]);
    assert_eq!(early.code, 1, "{}{}", early.stdout, early.stderr);
    assert!(
        early
            .stderr
            .contains("needs `airlock migrate` run with the owner's URL"),
        "{}",
        early.stderr
    );

    // The owner migrates; the DBA's one line: the app's login role gets the runtime
    // role, nothing else.
    h.migrate();

    let id = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "hardened",
            "--json",
        ])
        .json()["id"]
        .to_string();
    ws.ok(&["post", "approve", &id]);
    ws.ok(&["post", "publish", &id]);
    ws.ok(&[
        "token", "create", "--name", "agent", "--role", "writer", "--json",
    ]);
    ws.ok(&["pause", "sandbox", "--reason", "maintenance"]);
    ws.ok(&["resume", "sandbox"]);
    ws.ok(&["dispatch", "--once"]);
    let doctor = ws.ok(&["doctor"]);
    assert!(doctor.stdout.contains("hardened"), "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains("functions current"),
        "{}",
        doctor.stdout
    );
    let doctor = h.owner.ok(&["doctor"]);
    assert!(doctor.stdout.contains("owner"), "{}", doctor.stdout);

    let app_url = &h.app_url;
    for forbidden in [
        "UPDATE posts SET text = 'rewritten'",
        "UPDATE posts SET status = 'approved' WHERE status = 'posted'",
        "DELETE FROM post_events",
        "UPDATE post_events SET note = 'rewritten'",
        "TRUNCATE post_events",
        "INSERT INTO reservations (post_id, generation, channel, state, created_at) \
         SELECT id, 99, channel, 'committed', now() FROM posts",
        "INSERT INTO pauses (scope, reason, actor, created_at) VALUES ('x', 'y', 'z', now())",
        "DELETE FROM outbox",
        "SELECT * FROM tokens",
        "SELECT secret_sha256 FROM tokens",
        "SELECT * FROM dashboard_sessions",
        "SELECT * FROM server_secrets",
        "SELECT nextval('post_events_id_seq')",
        "CREATE TABLE sneaky (id int)",
        "DROP TABLE post_events",
        "ALTER TABLE posts DISABLE TRIGGER USER",
        // Helpers are for airlock's functions only.
        "SELECT airlock_insert_outbox('[]', now())",
    ] {
        let refused = sql_as(app_url, &[forbidden]).unwrap_err();
        assert!(
            refused.contains("permission denied") || refused.contains("must be owner"),
            "{forbidden}: {refused}"
        );
    }
    sql_as(
        app_url,
        &[
            "SELECT id, status FROM posts",
            "SELECT name, roles, revoked_at FROM tokens",
            "SELECT kind FROM post_events",
        ],
    )
    .unwrap();
    let shown = ws.ok(&["post", "show", &id, "--json"]).json();
    assert_eq!(shown["status"], "posted");
    assert!(shown["events"].as_array().unwrap().len() >= 4);
}

/// Runs one SQL query on a SQLite file and returns its first column as text.
fn sqlite_scalar(path: &Path, sql: &str) -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let url = format!("sqlite://{}", path.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let value: String =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT CAST(({sql}) AS TEXT)")))
                    .fetch_one(&mut conn)
                    .await
                    .unwrap();
            conn.close().await.ok();
            value
        })
}

#[test]
fn backup_and_export_of_a_missing_ledger_are_refused_and_create_nothing() {
    let ws = Workspace::new(&sandbox_config(""));
    let to = ws.path("copy.db");
    let run = ws.run(&["backup", "--to", to.to_str().unwrap()]);
    assert_refused(&run, "no ledger");
    let run = ws.run(&["export"]);
    assert_refused(&run, "no ledger");
    assert!(!ws.db().exists(), "a ledger was created");
    assert!(!to.exists(), "a backup was written");
}

#[test]
fn backup_and_export_refuse_a_ledger_with_pending_or_unknown_migrations_and_leave_it_as_it_was() {
    // The first release's ledger lacks this release's later migrations.
    let (ws, _) = fixture_workspace();
    let ledger = ws.path("ledger.db");
    let applied = sqlite_scalar(&ledger, "SELECT count(*) FROM _sqlx_migrations");
    let to = ws.path("copy.db");
    let run = ws.run(&["backup", "--to", to.to_str().unwrap()]);
    assert_refused(&run, "airlock migrate");
    let run = ws.run(&["export"]);
    assert_refused(&run, "airlock migrate");
    assert!(!to.exists());
    assert_eq!(
        sqlite_scalar(&ledger, "SELECT count(*) FROM _sqlx_migrations"),
        applied,
        "backup or export migrated the live ledger"
    );

    // A ledger a newer release migrated.
    ws.ok(&["migrate"]);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let url = format!("sqlite://{}", ledger.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::query(
                "INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) \
                 VALUES (9999, 'from the future', '2030-01-01', 1, x'00', 0)",
            )
            .execute(&mut conn)
            .await
            .unwrap();
            conn.close().await.ok();
        });
    let run = ws.run(&["backup", "--to", to.to_str().unwrap()]);
    assert_refused(&run, "newer airlock");
    let run = ws.run(&["export"]);
    assert_refused(&run, "newer airlock");
    assert!(!to.exists());
}

#[test]
fn a_backup_of_a_ledger_without_posts_needs_allow_empty() {
    let ws = Workspace::new(&sandbox_config(""));
    ws.ok(&["migrate"]);
    let to = ws.path("copy.db");
    let run = ws.run(&["backup", "--to", to.to_str().unwrap()]);
    assert_refused(&run, "--allow-empty");
    assert!(!to.exists());
    let run = ws.ok(&["backup", "--to", to.to_str().unwrap(), "--allow-empty"]);
    assert!(run.stdout.contains("0 posts"), "{}", run.stdout);
    assert!(to.exists());
}

#[test]
fn post_verify_reads_a_post_back_and_records_what_it_found() {
    let ws = Workspace::new(&sandbox_config(""));
    let id = ws
        .ok(&["post", "add", "--channel", "sandbox", "--text", "Hi #cats"])
        .stdout
        .trim()
        .to_owned();
    ws.ok(&["post", "approve", &id]);
    ws.ok(&["dispatch", "--once"]);
    let log = ws.path("sandbox/sandbox.jsonl");
    let published = std::fs::read_to_string(&log).unwrap();
    assert_eq!(published.lines().count(), 1);

    // The platform no longer shows it.
    std::fs::write(&log, "").unwrap();
    let run = ws.run(&["post", "verify", &id]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("does not show it"), "{}", run.stderr);
    let kinds = |ws: &Workspace| -> Vec<String> {
        ws.ok(&["post", "show", &id, "--json"]).json()["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(kinds(&ws).last().map(String::as_str), Some("verify_failed"));

    // It is back: a person clears the failure.
    std::fs::write(&log, &published).unwrap();
    let run = ws.ok(&["post", "verify", &id, "--json"]);
    assert!(run.json()["verified_at"].is_string(), "{}", run.stdout);
    assert_eq!(kinds(&ws).last().map(String::as_str), Some("verified"));

    // Only published posts can be read back.
    let draft = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "Hi again #cats",
        ])
        .stdout
        .trim()
        .to_owned();
    assert_refused(&ws.run(&["post", "verify", &draft]), "only published posts");
}

#[test]
fn every_json_log_line_of_a_publish_carries_its_post_id_and_channel() {
    // An unknown outcome: the guarded path logs the post, the pause and the notification.
    let ws = Workspace::new(&sandbox_config(
        "simulate = \"unknown\"\n\n[notify.ops]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/hook\"\nevents = [\"needs_review\", \"paused\"]\n",
    ));
    let id = ws
        .ok(&["post", "add", "--channel", "sandbox", "--text", "Hi #cats"])
        .stdout
        .trim()
        .to_owned();
    ws.ok(&["post", "approve", &id]);
    let mut dispatch = ws.command(&["dispatch", "--once"]);
    dispatch.env("AIRLOCK_LOG_FORMAT", "json").env(
        "AIRLOCK_LOG",
        "airlock_app=debug,airlock_platforms=debug,info",
    );
    let run = finish(dispatch.output().unwrap());
    assert_eq!(run.code, 1, "needs review: {}", run.stderr);
    let lines = assert_json_lines(&run.stderr);
    let of_publish: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("airlock_app"))
        })
        .collect();
    assert!(
        !of_publish.is_empty(),
        "the publish logged something: {}",
        run.stderr
    );
    for line in of_publish {
        assert_eq!(line["post_id"], id.parse::<i64>().unwrap(), "{line}");
        assert_eq!(line["channel"], "sandbox", "{line}");
    }
}

#[test]
fn doctor_restored_lists_what_a_restored_backup_brought_back() {
    let ws = Workspace::new(&sandbox_config(""));
    for name in ["ops", "agent", "gone"] {
        ws.ok(&["token", "create", "--name", name, "--role", "writer"]);
    }
    ws.ok(&["token", "revoke", "gone"]);
    let id = ws
        .ok(&["post", "add", "--channel", "sandbox", "--text", "Hi #cats"])
        .stdout
        .trim()
        .to_owned();
    ws.ok(&["post", "approve", &id]);
    let plain = ws.ok(&["doctor"]).stdout;
    assert!(!plain.contains("restored ledger"), "{plain}");
    let run = ws.ok(&["doctor", "--restored"]).stdout;
    assert!(run.contains("2 active token(s)"), "{run}");
    assert!(
        run.contains("token ops [writer]") && run.contains("token agent [writer]"),
        "{run}"
    );
    assert!(!run.contains("token gone"), "{run}");
    assert!(run.contains("0 dashboard session(s)"), "{run}");
    assert!(run.contains("1 post(s) approved"), "{run}");
    assert!(run.contains("airlock token revoke"), "{run}");
}

#[test]
fn a_backup_taken_while_serve_publishes_is_sound_and_holds_every_post_committed_before_it() {
    let address = free_address();
    let ws = Workspace::new(&sandbox_config(&format!(
        "\n[server]\nlisten = \"{address}\"\n\n[dispatcher]\npoll_interval = \"1s\"\n"
    )));
    let added = std::sync::atomic::AtomicU32::new(0);
    let add_and_approve = |ws: &Workspace| {
        let n = added.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let text = format!("Hi #cats, number {n}");
        let id = ws
            .ok(&["post", "add", "--channel", "sandbox", "--text", &text])
            .stdout
            .trim()
            .to_owned();
        ws.ok(&["post", "approve", &id]);
    };
    for _ in 0..20 {
        add_and_approve(&ws);
    }
    // serve publishes the due posts while a writer keeps drafting and approving more.
    let serving = Serving::start(&ws, &address, &[]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let started = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut written = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && written < 200 {
                add_and_approve(&ws);
                written += 1;
                started.store(written, std::sync::atomic::Ordering::SeqCst);
            }
            written
        });
        // Take the backup once serve is publishing and the writer is writing.
        let waiting = Instant::now();
        while started.load(std::sync::atomic::Ordering::SeqCst) < 3
            || sqlite_scalar(
                &ws.db(),
                "SELECT count(*) FROM posts WHERE status = 'posted'",
            ) == "0"
        {
            assert!(
                waiting.elapsed() < Duration::from_secs(60),
                "serve published nothing: {}",
                serving.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let committed_before: i64 = sqlite_scalar(&ws.db(), "SELECT max(id) FROM posts")
            .parse()
            .unwrap();
        std::fs::create_dir(ws.path("backups")).unwrap();
        let to = ws.path("backups/while-writing.db");
        let run = ws.ok(&["backup", "--to", to.to_str().unwrap()]);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let written = writer.join().unwrap();
        assert!(written >= 3, "the writer ran during the backup");
        assert!(run.stdout.contains("integrity_check ok"), "{}", run.stdout);
        assert_eq!(integrity(&to), ["ok"]);
        let kept: i64 = sqlite_scalar(
            &to,
            &format!("SELECT count(*) FROM posts WHERE id <= {committed_before}"),
        )
        .parse()
        .unwrap();
        assert_eq!(
            kept, committed_before,
            "every post committed before the backup started is in it"
        );
        // Each post in the copy with its timeline as of the copy's moment: its creation,
        // and, once it left draft, the status change that took it out.
        let short: i64 = sqlite_scalar(
            &to,
            &format!(
                "SELECT count(*) FROM posts p WHERE id <= {committed_before} AND \
                 (SELECT count(*) FROM post_events e WHERE e.post_id = p.id) \
                 < CASE WHEN p.status = 'draft' THEN 1 ELSE 2 END"
            ),
        )
        .parse()
        .unwrap();
        assert_eq!(short, 0, "a post in the copy lacks its events");
    });
    serving.stop();
}

/// `airlock post show 7 | head`: a reader that closes its end early ends the command
/// quietly (exit 0), never with a panic (exit 101).
#[test]
fn a_reader_that_closes_stdout_early_ends_the_command_quietly() {
    let ws = Workspace::new(&sandbox_config(""));
    let id = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "Shown to a closed pipe.",
            "--json",
        ])
        .json()["id"]
        .to_string();
    for _ in 0..3 {
        let mut child = ws
            .command(&["post", "show", &id])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Text logs written to a file or a pipe carry no colour codes.
#[test]
fn text_logs_to_a_pipe_carry_no_colour_codes() {
    let ws = Workspace::new(&sandbox_config(""));
    let run = finish(
        ws.command(&["post", "list"])
            .env("AIRLOCK_LOG", "debug")
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.is_empty(), "debug logs something");
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
}
