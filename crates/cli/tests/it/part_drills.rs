//! Drills at the boundaries of one part of a thread: a worker publishing a 3-part
//! Bluesky thread is stopped right after part 2's intent or right after part 2's request
//! left, then killed or frozen past its lease, while another process (SQLite) or
//! installation (PostgreSQL) takes over. Every cell ends with each part on the platform
//! at most once, in a chain; when a person must settle part 2 they do, and the thread
//! completes with every part exactly once. On X (no key, no client-chosen id) a 5-part
//! thread whose worker is killed after part 2's request left is proven by part 2's reply
//! to part 1 and goes on with parts 3 to 5, once each.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use airlock_testkit::fake::bluesky::{self, BlueskyFake};
use airlock_testkit::fake::x::{self, XFake};
use airlock_testkit::pg::TestDb;

use crate::support::*;

/// The lease: longer than a publish of either channel (Bluesky: 22 requests of 300 ms,
/// X: 14 of 400 ms, and 500 ms of slack), as the configuration demands.
const LEASE: Duration = Duration::from_secs(8);
/// How long a frozen worker stays frozen: well past its lease and the takeover.
const FREEZE: Duration = Duration::from_secs(16);
const PARTS: [&str; 3] = ["Cats, part one.", "Cats, part two.", "Cats, part three."];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Boundary {
    /// Part 2's intent is recorded; its request has not left.
    Intent,
    /// Part 2's request left; its answer is not written.
    Send,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Kill,
    Freeze,
}

fn config(database: &str, fake: &BlueskyFake) -> String {
    format!(
        r#"timezone = "Asia/Tokyo"
database = "{database}"

[dispatcher]
stale_after = "{lease}s"
poll_interval = "30s"

[quota]
window = "60m"
window_limit = 100

[channels.bsky]
kind = "bluesky"
token_file = "bsky.token"
account = "{handle}"
base_url = "{uri}"
request_timeout = "300ms"
daily_limit = 10
"#,
        lease = LEASE.as_secs(),
        handle = bluesky::HANDLE,
        uri = fake.uri(),
    )
}

fn installation(database: &str, fake: &BlueskyFake) -> Workspace {
    let ws = Workspace::new(&config(database, fake));
    let token = ws.path("bsky.token");
    std::fs::write(&token, airlock_testkit::CANARY).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    ws
}

fn show(ws: &Workspace, id: &str) -> Value {
    ws.ok(&["post", "show", id, "--json"]).json()
}

/// A worker held at part 2's `boundary` (the second time the path passes it).
fn spawn_worker(ws: &Workspace, boundary: Boundary) -> Child {
    let failpoint = match boundary {
        Boundary::Intent => "publish::after_intent",
        Boundary::Send => "publish::after_send",
    };
    ws.command(&["dispatch", "--once"])
        .env(
            "FAILPOINTS",
            format!("{failpoint}=1*off->sleep({})", FREEZE.as_millis()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The thread's records on the fake, in order: each part's text.
fn texts(fake: &BlueskyFake) -> Vec<String> {
    fake.with(|f| f.records.iter().map(|r| r.text().to_owned()).collect())
}

fn assert_chain(fake: &BlueskyFake) {
    fake.with(|f| {
        for pair in f.records.windows(2) {
            assert_eq!(
                pair[1].parent(),
                Some(pair[0].strong_ref()),
                "a chain of replies"
            );
        }
    });
}

async fn drill(postgres: bool, boundary: Boundary, mode: Mode) {
    let fake = BlueskyFake::start_with(bluesky::Expect::ANY, |s| {
        s.password = airlock_testkit::CANARY.to_owned();
    })
    .await;
    let db = postgres.then(TestDb::create);
    let (first, second) = match &db {
        None => {
            let first = installation("sqlite://airlock.db", &fake);
            let second = Workspace {
                dir: tempfile::TempDir::new_in(first.dir.path()).unwrap(),
            };
            let url = format!("sqlite://{}", first.db().display());
            std::fs::write(second.config(), config(&url, &fake)).unwrap();
            std::fs::copy(first.path("bsky.token"), second.path("bsky.token")).unwrap();
            (first, second)
        }
        Some(db) => (installation(&db.url, &fake), installation(&db.url, &fake)),
    };
    let file = first.path("thread.md");
    std::fs::write(&file, PARTS.join("\n---\n")).unwrap();
    let add = [
        "post",
        "add",
        "--channel",
        "bsky",
        "--thread-file",
        file.to_str().unwrap(),
    ];
    let id = first.ok(&add).stdout.trim().to_owned();
    first.ok(&["post", "approve", &id]);

    let started = Instant::now();
    let mut worker = spawn_worker(&first, boundary);
    match boundary {
        Boundary::Intent => {
            until("part 2's intent", async || {
                show(&first, &id)["intents"]
                    .as_array()
                    .is_some_and(|i| i.iter().any(|i| i["part"] == 2))
            })
            .await
        }
        Boundary::Send => until("part 2's record", async || texts(&fake).len() == 2).await,
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    if mode == Mode::Kill {
        worker.kill().unwrap();
    }
    tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
    // The other side reaps, reconciles what the platform proves, and goes on.
    second.run(&["dispatch", "--once"]);
    let status = worker.wait().unwrap();
    match mode {
        Mode::Kill => assert!(status.code().is_none(), "killed while held: {status:?}"),
        Mode::Freeze => assert!(started.elapsed() >= FREEZE, "the worker slept"),
    }
    for _ in 0..2 {
        second.run(&["dispatch", "--once"]);
    }
    let post = show(&second, &id);
    let cell = format!("postgres={postgres} {boundary:?} {mode:?}: {post}");
    let sent = texts(&fake);
    assert!(
        sent.len() <= 3 && PARTS.starts_with(&sent.iter().map(String::as_str).collect::<Vec<_>>()),
        "each part at most once, in order; {cell}"
    );
    assert_chain(&fake);
    match (boundary, post["status"].as_str()) {
        // Part 2 left: its record at its key proves it, and the thread went on; or part 2
        // provably never landed and went out on the takeover.
        (_, Some("posted")) => assert_eq!(sent.len(), 3, "{cell}"),
        // Part 2 never left, and its absence proves nothing while a request could still
        // land: a person settles it, and the thread goes on from part 2.
        (Boundary::Intent, Some("needs_review")) => {
            assert_eq!(sent.len(), 1, "{cell}");
            second.ok(&["post", "resolve", &id, "--not-published"]);
            second.ok(&["post", "requeue", &id]);
            second.ok(&["resume", "bsky"]);
            second.ok(&["post", "publish", &id]);
            assert_eq!(texts(&fake), PARTS, "{cell}");
            assert_chain(&fake);
        }
        _ => panic!("unexpected end; {cell}"),
    }
    let post = show(&second, &id);
    let reservations = post["reservations"].as_array().unwrap();
    assert_eq!(reservations.len(), 1, "one publish counted; {cell}");
    drop(db);
}

macro_rules! drills {
    ($($name:ident: $pg:literal $boundary:ident $mode:ident;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                drill($pg, Boundary::$boundary, Mode::$mode).await;
            }
        )*
    };
}

drills! {
    sqlite_thread_killed_after_part_2_intent: false Intent Kill;
    sqlite_thread_frozen_after_part_2_intent: false Intent Freeze;
    sqlite_thread_killed_after_part_2_send: false Send Kill;
    sqlite_thread_frozen_after_part_2_send: false Send Freeze;
    postgres_thread_killed_after_part_2_intent: true Intent Kill;
    postgres_thread_frozen_after_part_2_intent: true Intent Freeze;
    postgres_thread_killed_after_part_2_send: true Send Kill;
    postgres_thread_frozen_after_part_2_send: true Send Freeze;
}

fn x_config(database: &str, fake: &XFake) -> String {
    format!(
        r#"timezone = "Asia/Tokyo"
database = "{database}"

[dispatcher]
stale_after = "{lease}s"
poll_interval = "30s"

[quota]
window = "60m"
window_limit = 100

[channels.x-main]
kind = "x"
token_file = "x.token"
account = "{user}"
base_url = "{uri}"
request_timeout = "400ms"
daily_limit = 10
"#,
        lease = LEASE.as_secs(),
        user = x::USERNAME,
        uri = fake.uri(),
    )
}

/// The thread's posts on the X fake, in order, and whether each replies to the one before.
fn x_chain(fake: &XFake) -> Vec<String> {
    fake.with(|f| {
        for pair in f.tweets.windows(2) {
            assert_eq!(
                f.attached
                    .get(&pair[1].id)
                    .and_then(|a| a.in_reply_to.clone()),
                Some(pair[0].id.clone()),
                "a chain of replies"
            );
        }
        f.tweets.iter().map(|t| t.text.clone()).collect()
    })
}

async fn x_drill(postgres: bool) {
    let fake = x::XFake::start_with(x::Expect::ANY, |s| {
        s.access_token = airlock_testkit::CANARY.to_owned();
    })
    .await;
    let db = postgres.then(TestDb::create);
    let install = |database: &str| {
        let ws = Workspace::new(&x_config(database, &fake));
        let token = ws.path("x.token");
        std::fs::write(&token, airlock_testkit::CANARY).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        ws
    };
    let (first, second) = match &db {
        None => {
            let first = install("sqlite://airlock.db");
            let second = Workspace {
                dir: tempfile::TempDir::new_in(first.dir.path()).unwrap(),
            };
            let url = format!("sqlite://{}", first.db().display());
            std::fs::write(second.config(), x_config(&url, &fake)).unwrap();
            std::fs::copy(first.path("x.token"), second.path("x.token")).unwrap();
            (first, second)
        }
        Some(db) => (install(&db.url), install(&db.url)),
    };
    let parts = [
        "Thread 1/5",
        "Thread 2/5",
        "Thread 3/5",
        "Thread 4/5",
        "Thread 5/5",
    ];
    let file = first.path("thread.md");
    std::fs::write(&file, parts.join("\n---\n")).unwrap();
    let add = [
        "post",
        "add",
        "--channel",
        "x-main",
        "--thread-file",
        file.to_str().unwrap(),
    ];
    let id = first.ok(&add).stdout.trim().to_owned();
    first.ok(&["post", "approve", &id]);

    let mut worker = spawn_worker(&first, Boundary::Send);
    until("part 2's post", async || fake.with(|f| f.tweets.len()) == 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    worker.kill().unwrap();
    assert!(worker.wait().unwrap().code().is_none(), "killed while held");
    tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
    for _ in 0..3 {
        second.run(&["dispatch", "--once"]);
        if show(&second, &id)["status"] == "posted" {
            break;
        }
    }
    let post = show(&second, &id);
    assert_eq!(post["status"], "posted", "postgres={postgres}: {post}");
    assert_eq!(x_chain(&fake), parts, "each part once, in a chain");
    assert_eq!(post["reservations"].as_array().unwrap().len(), 1, "{post}");
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_x_thread_killed_after_part_2_left_goes_on_with_parts_3_to_5() {
    x_drill(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_x_thread_killed_after_part_2_left_goes_on_with_parts_3_to_5() {
    x_drill(true).await;
}
