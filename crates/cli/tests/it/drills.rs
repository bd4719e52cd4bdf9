//! Drills at every boundary of the guarded path: a worker (`airlock dispatch --once`) is
//! stopped exactly at one boundary by a failpoint, then either killed (SIGKILL) or left
//! frozen past its lease, while another process (SQLite: the same ledger file) or
//! another installation (PostgreSQL: its own config on the same database) takes over.
//! Against stateful fakes of Threads (containers), WordPress (articles found by the key
//! they carry) and a webhook receiver (no prepare step: once the worker has checked the
//! channel, with a first post, the drilled post's intent commits with its claim), every
//! cell asserts at most one copy on the platform, the post's final state,
//! its reservation, whether the channel is paused — and that the worker really was held
//! at the boundary (a killed worker died of the signal; a frozen one slept).
//!
//! | boundary      | kill                        | freeze past the lease                |
//! |---------------|-----------------------------|--------------------------------------|
//! | after claim (and reservation; a webhook's intent too) | reaped, republished: posted (webhook: needs review) | fenced at the intent: posted (webhook: needs review) |
//! | after prepare | reaped, republished: posted | fenced at the intent: posted         |
//! | after intent  | nothing sent: needs review  | wakes, sees its lease too short to send: needs review |
//! | after send    | settled by proof: posted (webhook: no proof, needs review) | late outcome refused; the same |
//! | after outcome | posted, nothing to take over| posted, nothing to take over         |
//!
//! One more cell per platform and backend freezes the worker after its intent while a
//! person settles the post as "not published", requeues it and resumes the channel: the
//! post goes out once (WordPress) or waits until the earlier container can no longer be
//! processing (Threads), and the frozen worker, waking, sends nothing.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use airlock_testkit::fake::meta::{self, Flavour, GraphFake};
use airlock_testkit::fake::receiver::Receiver;
use airlock_testkit::fake::wordpress::{self, WordpressFake};
use airlock_testkit::pg::TestDb;

use crate::support::*;

/// Where the first worker stops: right after this step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Boundary {
    /// The claim, its reservation and (without a prepare step) its intent: one commit.
    Claim,
    Prepare,
    Intent,
    Send,
    Outcome,
}

impl Boundary {
    fn failpoint(self) -> &'static str {
        match self {
            Boundary::Claim => "publish::after_claim",
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
    /// Frozen after its intent while a person resolves "not published", requeues and
    /// resumes, and the other side publishes.
    FreezeWhileRequeued,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Threads,
    Wordpress,
    Webhook,
}

/// The lease: longer than either channel's longest publish (Threads: 5 requests of
/// 500 ms, 1 s of container polling, 500 ms of slack), as the configuration demands.
const LEASE: Duration = Duration::from_secs(5);
/// How long a frozen worker stays frozen: well past its lease and the takeover.
const FREEZE: Duration = Duration::from_secs(10);

/// The fake a drill publishes to.
enum Fake {
    Threads(GraphFake),
    Wordpress(WordpressFake),
    Webhook(Receiver),
}

impl Fake {
    async fn start(kind: Kind) -> Fake {
        match kind {
            Kind::Threads => Fake::Threads(
                GraphFake::start_with(Flavour::Threads, meta::Expect::ANY, |s| {
                    s.in_progress_reads = 1
                })
                .await,
            ),
            Kind::Wordpress => Fake::Wordpress(WordpressFake::start(wordpress::Expect::ANY).await),
            Kind::Webhook => Fake::Webhook(Receiver::start().await),
        }
    }

    /// Copies of post `id` on the platform.
    async fn copies(&self, id: &str) -> usize {
        match self {
            Fake::Threads(fake) => fake.with(|s| s.published()),
            Fake::Wordpress(fake) => fake.with(|s| s.articles.len()),
            Fake::Webhook(receiver) => receiver
                .requests()
                .await
                .iter()
                .filter(|r| {
                    serde_json::from_slice::<Value>(&r.body).is_ok_and(|body| {
                        body["id"].as_i64().map(|n| n.to_string()).as_deref() == Some(id)
                    })
                })
                .count(),
        }
    }

    fn channel(&self) -> String {
        match self {
            Fake::Threads(fake) => format!(
                "kind = \"threads\"\nbase_url = \"{}\"\naccount = \"inn_cats\"\npoll_interval = \"100ms\"\npoll_timeout = \"1s\"\ntoken_file = \"blog.token\"",
                fake.uri()
            ),
            Fake::Wordpress(fake) => format!(
                "kind = \"wordpress\"\nbase_url = \"{}\"\naccount = \"{}\"\nusername = \"{}\"\ntoken_file = \"blog.token\"",
                fake.server.uri(),
                wordpress::USER_SLUG,
                wordpress::USERNAME
            ),
            Fake::Webhook(receiver) => format!("kind = \"webhook\"\nurl = \"{}\"", receiver.url()),
        }
    }

    /// Whether `prepare` has done its work on the platform.
    async fn prepared(&self) -> bool {
        match self {
            Fake::Threads(fake) => fake.with(|s| {
                s.containers()
                    .iter()
                    .any(|c| s.container_state(c) == Some("FINISHED"))
            }),
            Fake::Wordpress(fake) => fake
                .server
                .received_requests()
                .await
                .unwrap_or_default()
                .iter()
                .any(|r| r.url.query().is_some_and(|q| q.contains("search="))),
            Fake::Webhook(_) => unreachable!("a webhook has no prepare step"),
        }
    }
}

fn config(database: &str, fake: &Fake) -> String {
    format!(
        r#"timezone = "Asia/Tokyo"
database = "{database}"

[dispatcher]
stale_after = "{lease}s"
poll_interval = "30s"

[quota]
window = "60m"
window_limit = 100

[channels.blog]
{channel}
daily_limit = 10
request_timeout = "500ms"
"#,
        lease = LEASE.as_secs(),
        channel = fake.channel(),
    )
}

fn installation(database: &str, fake: &Fake) -> Workspace {
    let ws = Workspace::new(&config(database, fake));
    let token = ws.path("blog.token");
    std::fs::write(&token, airlock_testkit::CANARY).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    ws
}

fn show(ws: &Workspace, id: &str) -> Value {
    ws.ok(&["post", "show", id, "--json"]).json()
}

/// A worker held at `boundary`; with `warm_up`, only on its second publish (its first
/// one checks the channel's account, after which a webhook's intent commits with its
/// claim).
fn spawn_worker(ws: &Workspace, boundary: Boundary, warm_up: bool) -> Child {
    let first = if warm_up { "1*off->" } else { "" };
    ws.command(&["dispatch", "--once"])
        .env(
            "FAILPOINTS",
            format!(
                "{}={first}sleep({})",
                boundary.failpoint(),
                FREEZE.as_millis()
            ),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Polls `check` until it holds, for at most 20 s.
async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the worker has reached `boundary`, seen from the ledger or the platform.
async fn reached(boundary: Boundary, ws: &Workspace, id: &str, fake: &Fake) {
    let what = format!("{boundary:?}");
    let non_empty = |post: Value, key: &str| post[key].as_array().is_some_and(|a| !a.is_empty());
    match boundary {
        Boundary::Claim => until(&what, async || show(ws, id)["status"] == "posting").await,
        Boundary::Prepare => until(&what, async || fake.prepared().await).await,
        Boundary::Intent => until(&what, async || non_empty(show(ws, id), "intents")).await,
        Boundary::Send => until(&what, async || fake.copies(id).await == 1).await,
        Boundary::Outcome => until(&what, async || show(ws, id)["status"] == "posted").await,
    }
    // The failpoint is the next thing the worker does.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn drill(backend: Backend, kind: Kind, boundary: Boundary, mode: Mode) {
    let fake = Fake::start(kind).await;
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
            std::fs::copy(first.path("blog.token"), second.path("blog.token")).unwrap();
            (first, second)
        }
        // Another installation (its own config and files) on the same database.
        Some(db) => (installation(&db.url, &fake), installation(&db.url, &fake)),
    };
    let mut add = vec![
        "post",
        "add",
        "--channel",
        "blog",
        "--text",
        "Cats rest here.",
    ];
    if kind == Kind::Wordpress {
        add.extend(["--title", "Why cats rest"]);
    }
    // A webhook worker publishes a first post before the drilled one, so the drilled
    // post's intent commits with its claim.
    let warm_up = kind == Kind::Webhook;
    if warm_up {
        let warm = first
            .ok(&[
                "post",
                "add",
                "--channel",
                "blog",
                "--text",
                "Cats wake up.",
            ])
            .stdout
            .trim()
            .to_owned();
        first.ok(&["post", "approve", &warm]);
    }
    let id = first.ok(&add).stdout.trim().to_owned();
    first.ok(&["post", "approve", &id]);

    let started = Instant::now();
    let mut worker = spawn_worker(&first, boundary, warm_up);
    reached(boundary, &first, &id, &fake).await;
    if mode == Mode::Kill {
        worker.kill().unwrap();
    }

    // The other side takes over once the lease has run out: the reaper settles the post,
    // and a post provably never sent is published again.
    if show(&second, &id)["lease_expires_at"].is_string() {
        tokio::time::sleep(LEASE + Duration::from_millis(300)).await;
    }
    second.run(&["dispatch", "--once"]);
    if mode == Mode::FreezeWhileRequeued {
        assert_eq!(show(&second, &id)["status"], "needs_review");
        second.ok(&["post", "resolve", &id, "--not-published"]);
        second.ok(&["post", "requeue", &id]);
        second.ok(&["resume", "blog"]);
    }
    if show(&second, &id)["status"] == "approved" {
        second.run(&["post", "publish", &id]);
    }
    // A frozen worker wakes long after its lease and carries on to its end.
    let status = worker.wait().unwrap();
    match mode {
        Mode::Kill => assert!(
            status.code().is_none(),
            "the worker was still held at {boundary:?} when it was killed: {status:?}"
        ),
        Mode::Freeze | Mode::FreezeWhileRequeued => assert!(
            started.elapsed() >= FREEZE,
            "the worker slept at {boundary:?}"
        ),
    }
    // Reconcile settles what the platform proves.
    second.run(&["dispatch", "--once"]);

    let post = show(&second, &id);
    let copies = fake.copies(&id).await;
    let reservations: Vec<&str> = post["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["state"].as_str())
        .collect();
    let paused = second.ok(&["channels", "--json"]).json()[0]["paused"] == true;
    let cell = format!("{backend:?} {kind:?} {boundary:?} {mode:?}: {post}");
    assert!(copies <= 1, "{copies} copies on the platform; {cell}");
    assert_ne!(post["status"], "posting", "{cell}");
    match (boundary, mode, kind) {
        // A webhook's intent commits with its claim: held there, nothing went out, and
        // only a person can know that.
        (Boundary::Claim, _, Kind::Webhook) => {
            assert_eq!(copies, 0, "{cell}");
            assert_eq!(post["status"], "needs_review", "{cell}");
            assert!(reservations.contains(&"reserved"), "kept counted; {cell}");
            assert!(paused, "{cell}");
        }
        // A webhook's receiver cannot be asked what it got: the post waits for a person.
        (Boundary::Send, _, Kind::Webhook) => {
            assert_eq!(copies, 1, "{cell}");
            assert_eq!(post["status"], "needs_review", "{cell}");
            assert!(reservations.contains(&"reserved"), "kept counted; {cell}");
            assert!(paused, "{cell}");
        }
        // Held after recording its intent, before sending: nothing went out, and only a
        // person can know that (a frozen worker, waking, sees its lease too short to send).
        (Boundary::Intent, Mode::Kill | Mode::Freeze, _) => {
            assert_eq!(copies, 0, "{cell}");
            assert_eq!(post["status"], "needs_review", "{cell}");
            assert!(reservations.contains(&"reserved"), "kept counted; {cell}");
            assert!(paused, "{cell}");
        }
        // Requeued by a person while the first worker was frozen with its intent: the
        // retry publishes once; the frozen worker sends nothing.
        (Boundary::Intent, Mode::FreezeWhileRequeued, Kind::Wordpress) => {
            assert_eq!(copies, 1, "{cell}");
            assert_eq!(post["status"], "posted", "{cell}");
        }
        // ... or, on Threads, waits until the first container can no longer be processing,
        // and publishes that same container then, never a new one.
        (Boundary::Intent, Mode::FreezeWhileRequeued, Kind::Threads) => {
            assert_eq!(copies, 0, "{cell}");
            assert_eq!(post["status"], "approved", "{cell}");
            assert!(
                post["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("published again once")),
                "{cell}"
            );
        }
        // The request went out: the platform proves it.
        (Boundary::Send, _, _) => {
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
    if boundary != Boundary::Outcome {
        assert!(
            post["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["actor"] == "reaper"),
            "the other side took over; {cell}"
        );
    }
    drop(db);
}

macro_rules! drills {
    ($($name:ident: $backend:ident $kind:ident $boundary:ident $mode:ident;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                drill(Backend::$backend, Kind::$kind, Boundary::$boundary, Mode::$mode).await;
            }
        )*
    };
}

drills! {
    sqlite_threads_killed_after_claim: Sqlite Threads Claim Kill;
    sqlite_threads_frozen_after_claim: Sqlite Threads Claim Freeze;
    sqlite_threads_killed_after_prepare: Sqlite Threads Prepare Kill;
    sqlite_threads_frozen_after_prepare: Sqlite Threads Prepare Freeze;
    sqlite_threads_killed_after_intent: Sqlite Threads Intent Kill;
    sqlite_threads_frozen_after_intent: Sqlite Threads Intent Freeze;
    sqlite_threads_frozen_after_intent_while_requeued: Sqlite Threads Intent FreezeWhileRequeued;
    sqlite_threads_killed_after_send: Sqlite Threads Send Kill;
    sqlite_threads_frozen_after_send: Sqlite Threads Send Freeze;
    sqlite_threads_killed_after_outcome: Sqlite Threads Outcome Kill;
    sqlite_threads_frozen_after_outcome: Sqlite Threads Outcome Freeze;
    postgres_threads_killed_after_claim: Postgres Threads Claim Kill;
    postgres_threads_frozen_after_claim: Postgres Threads Claim Freeze;
    postgres_threads_killed_after_prepare: Postgres Threads Prepare Kill;
    postgres_threads_frozen_after_prepare: Postgres Threads Prepare Freeze;
    postgres_threads_killed_after_intent: Postgres Threads Intent Kill;
    postgres_threads_frozen_after_intent: Postgres Threads Intent Freeze;
    postgres_threads_frozen_after_intent_while_requeued: Postgres Threads Intent FreezeWhileRequeued;
    postgres_threads_killed_after_send: Postgres Threads Send Kill;
    postgres_threads_frozen_after_send: Postgres Threads Send Freeze;
    postgres_threads_killed_after_outcome: Postgres Threads Outcome Kill;
    postgres_threads_frozen_after_outcome: Postgres Threads Outcome Freeze;
    sqlite_wordpress_killed_after_claim: Sqlite Wordpress Claim Kill;
    sqlite_wordpress_frozen_after_claim: Sqlite Wordpress Claim Freeze;
    sqlite_wordpress_killed_after_prepare: Sqlite Wordpress Prepare Kill;
    sqlite_wordpress_frozen_after_prepare: Sqlite Wordpress Prepare Freeze;
    sqlite_wordpress_killed_after_intent: Sqlite Wordpress Intent Kill;
    sqlite_wordpress_frozen_after_intent: Sqlite Wordpress Intent Freeze;
    sqlite_wordpress_frozen_after_intent_while_requeued: Sqlite Wordpress Intent FreezeWhileRequeued;
    sqlite_wordpress_killed_after_send: Sqlite Wordpress Send Kill;
    sqlite_wordpress_frozen_after_send: Sqlite Wordpress Send Freeze;
    sqlite_wordpress_killed_after_outcome: Sqlite Wordpress Outcome Kill;
    sqlite_wordpress_frozen_after_outcome: Sqlite Wordpress Outcome Freeze;
    postgres_wordpress_killed_after_claim: Postgres Wordpress Claim Kill;
    postgres_wordpress_frozen_after_claim: Postgres Wordpress Claim Freeze;
    postgres_wordpress_killed_after_prepare: Postgres Wordpress Prepare Kill;
    postgres_wordpress_frozen_after_prepare: Postgres Wordpress Prepare Freeze;
    postgres_wordpress_killed_after_intent: Postgres Wordpress Intent Kill;
    postgres_wordpress_frozen_after_intent: Postgres Wordpress Intent Freeze;
    postgres_wordpress_frozen_after_intent_while_requeued: Postgres Wordpress Intent FreezeWhileRequeued;
    postgres_wordpress_killed_after_send: Postgres Wordpress Send Kill;
    postgres_wordpress_frozen_after_send: Postgres Wordpress Send Freeze;
    postgres_wordpress_killed_after_outcome: Postgres Wordpress Outcome Kill;
    postgres_wordpress_frozen_after_outcome: Postgres Wordpress Outcome Freeze;
    sqlite_webhook_killed_after_claim: Sqlite Webhook Claim Kill;
    sqlite_webhook_frozen_after_claim: Sqlite Webhook Claim Freeze;
    sqlite_webhook_killed_after_send: Sqlite Webhook Send Kill;
    sqlite_webhook_frozen_after_send: Sqlite Webhook Send Freeze;
    sqlite_webhook_killed_after_outcome: Sqlite Webhook Outcome Kill;
    sqlite_webhook_frozen_after_outcome: Sqlite Webhook Outcome Freeze;
    postgres_webhook_killed_after_claim: Postgres Webhook Claim Kill;
    postgres_webhook_frozen_after_claim: Postgres Webhook Claim Freeze;
    postgres_webhook_killed_after_send: Postgres Webhook Send Kill;
    postgres_webhook_frozen_after_send: Postgres Webhook Send Freeze;
    postgres_webhook_killed_after_outcome: Postgres Webhook Outcome Kill;
    postgres_webhook_frozen_after_outcome: Postgres Webhook Outcome Freeze;
}
