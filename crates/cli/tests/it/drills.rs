//! Drills at every boundary of the guarded path: a worker (`airlock dispatch --once`) is
//! stopped exactly at one boundary by a failpoint, then either killed (SIGKILL) or left
//! frozen past its lease, while another process (SQLite: the same ledger file) or
//! another installation (PostgreSQL: its own config on the same database) takes over.
//! Against a stateful Threads fake, every cell asserts at most one copy on the platform,
//! the post's final state, its reservation, and whether the channel is paused.
//!
//! | boundary       | kill                          | freeze past the lease          |
//! |----------------|-------------------------------|--------------------------------|
//! | after claim    | reaped, republished: posted   | the stale worker is fenced     |
//! | after reserve  | reaped, republished: posted   | fenced at the intent           |
//! | after prepare  | reaped, republished: posted   | fenced at the intent           |
//! | after intent   | nothing sent: needs review    | sent late, settled by proof    |
//! | after send     | settled by proof: posted      | late outcome refused; proof    |
//! | after outcome  | posted, nothing to take over  | posted, nothing to take over   |

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use airlock_testkit::fake::meta::{Expect, Flavour, GraphFake};
use airlock_testkit::pg::TestDb;

use crate::support::*;

/// Where the first worker stops: right after this step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Boundary {
    Claim,
    Reserve,
    Prepare,
    Intent,
    Send,
    Outcome,
}

impl Boundary {
    fn failpoint(self) -> &'static str {
        match self {
            Boundary::Claim => "publish::after_claim",
            Boundary::Reserve => "publish::after_reserve",
            Boundary::Prepare => "publish::after_prepare",
            Boundary::Intent => "publish::after_intent",
            Boundary::Send => "publish::after_send",
            Boundary::Outcome => "publish::after_outcome",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// SIGKILL at the boundary.
    Kill,
    /// Frozen at the boundary until long after its lease, then it carries on.
    Freeze,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

/// The lease: longer than the Threads channel's longest publish (4 requests of 500 ms,
/// 1 s of container polling, 500 ms of slack), as the configuration demands.
const LEASE: Duration = Duration::from_secs(4);
/// How long a frozen worker stays frozen: well past its lease and the takeover.
const FREEZE_MS: u64 = 9000;

fn config(database: &str, fake: &GraphFake) -> String {
    format!(
        r#"timezone = "Asia/Tokyo"
database = "{database}"

[dispatcher]
stale_after = "{lease}s"
poll_interval = "30s"

[quota]
window = "60m"
window_limit = 100

[channels.threads]
kind = "threads"
base_url = "{base_url}"
token_file = "threads.token"
account = "inn_cats"
daily_limit = 10
request_timeout = "500ms"
poll_interval = "100ms"
poll_timeout = "1s"
"#,
        lease = LEASE.as_secs(),
        base_url = fake.uri(),
    )
}

fn installation(database: &str, fake: &GraphFake) -> Workspace {
    let ws = Workspace::new(&config(database, fake));
    let token = ws.path("threads.token");
    std::fs::write(&token, airlock_testkit::CANARY).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    ws
}

fn show(ws: &Workspace, id: &str) -> Value {
    ws.ok(&["post", "show", id, "--json"]).json()
}

fn spawn_worker(ws: &Workspace, boundary: Boundary) -> Child {
    ws.command(&["dispatch", "--once"])
        .env(
            "FAILPOINTS",
            format!("{}=sleep({FREEZE_MS})", boundary.failpoint()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Polls `check` until it holds, for at most `within`.
async fn until(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the worker has reached `boundary`, seen from the ledger or the platform.
async fn reached(boundary: Boundary, ws: &Workspace, id: &str, fake: &GraphFake) {
    let within = Duration::from_secs(20);
    let what = format!("{boundary:?}");
    match boundary {
        Boundary::Claim => until(within, &what, || show(ws, id)["status"] == "posting").await,
        Boundary::Reserve => {
            until(within, &what, || {
                show(ws, id)["reservations"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty())
            })
            .await
        }
        Boundary::Prepare => {
            until(within, &what, || {
                fake.with(|s| {
                    s.containers()
                        .iter()
                        .any(|c| s.container_state(c) == Some("FINISHED"))
                })
            })
            .await
        }
        Boundary::Intent => {
            until(within, &what, || {
                show(ws, id)["intents"]
                    .as_array()
                    .is_some_and(|i| !i.is_empty())
            })
            .await
        }
        Boundary::Send => until(within, &what, || fake.with(|s| s.published()) == 1).await,
        Boundary::Outcome => until(within, &what, || show(ws, id)["status"] == "posted").await,
    }
    // The failpoint is the next thing the worker does.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn drill(backend: Backend, boundary: Boundary, mode: Mode) {
    let fake =
        GraphFake::start_with(Flavour::Threads, Expect::ANY, |s| s.in_progress_reads = 1).await;
    let db = (backend == Backend::Postgres).then(TestDb::create);
    let (first, second) = match &db {
        // Another process on the same ledger file.
        None => {
            let first = installation("sqlite://airlock.db", &fake);
            let second = Workspace {
                dir: tempfile::TempDir::new_in(first.dir.path()).unwrap(),
            };
            let url = format!("sqlite://{}", first.db().display());
            std::fs::write(second.config(), config(&url, &fake)).unwrap();
            std::fs::copy(first.path("threads.token"), second.path("threads.token")).unwrap();
            (first, second)
        }
        // Another installation (its own config and files) on the same database.
        Some(db) => (installation(&db.url, &fake), installation(&db.url, &fake)),
    };
    let id = first
        .ok(&[
            "post",
            "add",
            "--channel",
            "threads",
            "--text",
            "Cats rest here.",
            "--at",
            "now",
        ])
        .stdout
        .trim()
        .to_owned();
    first.ok(&["post", "approve", &id]);

    let mut worker = spawn_worker(&first, boundary);
    reached(boundary, &first, &id, &fake).await;
    if mode == Mode::Kill {
        worker.kill().unwrap();
    }

    // The other side takes over once the lease has run out: the reaper settles the post,
    // and a post provably never sent is published again.
    let lease_end = show(&second, &id)["lease_expires_at"].clone();
    if lease_end.is_string() {
        tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
    }
    second.run(&["dispatch", "--once"]);
    if show(&second, &id)["status"] == "approved" {
        second.ok(&["post", "publish", &id]);
    }
    // A frozen worker wakes long after its lease and carries on to its end.
    let status = worker.wait().unwrap();
    if mode == Mode::Freeze {
        assert!(
            status.code().is_some(),
            "the frozen worker exited: {status:?}"
        );
    }
    // Reconcile settles what the platform proves.
    second.run(&["dispatch", "--once"]);

    let post = show(&second, &id);
    let copies = fake.with(|s| s.published());
    let reservations: Vec<&str> = post["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["state"].as_str())
        .collect();
    let paused = second.ok(&["channels", "--json"]).json()[0]["paused"] == true;
    let cell = format!("{backend:?} {boundary:?} {mode:?}: {post}");
    assert!(copies <= 1, "{copies} copies on the platform; {cell}");
    assert_ne!(post["status"], "posting", "{cell}");
    match (boundary, mode) {
        // Killed after recording its intent, before sending: nothing went out, and only a
        // person can know that.
        (Boundary::Intent, Mode::Kill) => {
            assert_eq!(copies, 0, "{cell}");
            assert_eq!(post["status"], "needs_review", "{cell}");
            assert!(reservations.contains(&"reserved"), "kept counted; {cell}");
            assert!(paused, "{cell}");
        }
        // The request went out (late, for a frozen worker): the platform proves it.
        (Boundary::Intent, Mode::Freeze) | (Boundary::Send, _) => {
            assert_eq!(copies, 1, "{cell}");
            assert_eq!(post["status"], "posted", "{cell}");
            assert!(reservations.contains(&"committed"), "{cell}");
            assert!(paused, "the unknown outcome paused the channel; {cell}");
        }
        // Before the intent nothing was sent: the takeover published once.
        _ => {
            assert_eq!(copies, 1, "{cell}");
            assert_eq!(post["status"], "posted", "{cell}");
            assert_eq!(
                reservations.iter().filter(|r| **r == "committed").count(),
                1,
                "{cell}"
            );
            assert!(!reservations.contains(&"reserved"), "{cell}");
            assert!(!paused, "{cell}");
        }
    }
    drop(db);
}

macro_rules! drills {
    ($($name:ident: $backend:ident $boundary:ident $mode:ident;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                drill(Backend::$backend, Boundary::$boundary, Mode::$mode).await;
            }
        )*
    };
}

drills! {
    sqlite_killed_after_claim: Sqlite Claim Kill;
    sqlite_frozen_after_claim: Sqlite Claim Freeze;
    sqlite_killed_after_reserve: Sqlite Reserve Kill;
    sqlite_frozen_after_reserve: Sqlite Reserve Freeze;
    sqlite_killed_after_prepare: Sqlite Prepare Kill;
    sqlite_frozen_after_prepare: Sqlite Prepare Freeze;
    sqlite_killed_after_intent: Sqlite Intent Kill;
    sqlite_frozen_after_intent: Sqlite Intent Freeze;
    sqlite_killed_after_send: Sqlite Send Kill;
    sqlite_frozen_after_send: Sqlite Send Freeze;
    sqlite_killed_after_outcome: Sqlite Outcome Kill;
    sqlite_frozen_after_outcome: Sqlite Outcome Freeze;
    postgres_killed_after_claim: Postgres Claim Kill;
    postgres_frozen_after_claim: Postgres Claim Freeze;
    postgres_killed_after_reserve: Postgres Reserve Kill;
    postgres_frozen_after_reserve: Postgres Reserve Freeze;
    postgres_killed_after_prepare: Postgres Prepare Kill;
    postgres_frozen_after_prepare: Postgres Prepare Freeze;
    postgres_killed_after_intent: Postgres Intent Kill;
    postgres_frozen_after_intent: Postgres Intent Freeze;
    postgres_killed_after_send: Postgres Send Kill;
    postgres_frozen_after_send: Postgres Send Freeze;
    postgres_killed_after_outcome: Postgres Outcome Kill;
    postgres_frozen_after_outcome: Postgres Outcome Freeze;
}
