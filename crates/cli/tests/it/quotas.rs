//! Exact quotas through the binary (docs/quotas.md), against stateful fakes: a post
//! recovered by proof of an earlier attempt is counted once, at that attempt's send;
//! processes whose clocks disagree by minutes never give a day or a month more than its
//! limit across midnight, on SQLite and PostgreSQL; two processes reconciling a Mastodon
//! post with slow media make one status.
//!
//! A process's clock is moved by `AIRLOCK_DRILL_CLOCK_SKEW` (seconds; test builds only),
//! which is how a machine whose clock is off, or a ledger read minutes later, is acted
//! out without waiting.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use chrono::{DateTime, Datelike, TimeZone, Utc};
use chrono_tz::Tz;
use serde_json::Value;

use crate::support::*;
use airlock_testkit::CANARY;
use airlock_testkit::fake::{bluesky, mastodon, x};
use airlock_testkit::pg::TestDb;

fn config(database: &str, quota: &str, channels: &str) -> String {
    format!(
        r#"timezone = "Asia/Tokyo"
database = "{database}"

[dispatcher]
stale_after = "60m"
max_attempts = 3

[quota]
{quota}
{channels}"#
    )
}

fn workspace(config: &str, tokens: &[&str]) -> Workspace {
    let ws = Workspace::new(config);
    std::fs::create_dir(ws.path("credentials")).unwrap();
    for channel in tokens {
        let file = ws.path(&format!("credentials/{channel}.token"));
        std::fs::write(&file, format!("{CANARY}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    ws
}

/// Runs the binary with its clock moved by `skew`.
fn run_at(ws: &Workspace, skew: chrono::Duration, args: &[&str]) -> Run {
    finish(
        ws.command(args)
            .env("AIRLOCK_DRILL_CLOCK_SKEW", skew.num_seconds().to_string())
            .output()
            .unwrap(),
    )
}

fn ok_at(ws: &Workspace, skew: chrono::Duration, args: &[&str]) -> Run {
    let run = run_at(ws, skew, args);
    assert_eq!(
        run.code, 0,
        "airlock {args:?}: {}{}",
        run.stdout, run.stderr
    );
    run
}

fn approved(
    ws: &Workspace,
    skew: chrono::Duration,
    channel: &str,
    text: &str,
    extra: &[&str],
) -> String {
    let mut args = vec![
        "post",
        "add",
        "--channel",
        channel,
        "--text",
        text,
        "--at",
        "now",
    ];
    args.extend_from_slice(extra);
    let id = ok_at(ws, skew, &args).stdout.trim().to_owned();
    ok_at(ws, skew, &["post", "approve", &id]);
    id
}

fn show(ws: &Workspace, id: &str) -> Value {
    ws.ok(&["post", "show", id, "--json"]).json()
}

/// The scenario of the review: a Bluesky post whose create answered 502 (nothing made),
/// settled by a person as "not published" and requeued; meanwhile the first request
/// landed. The retry finds the record at the first attempt's key and sends nothing. With
/// `window = "1m"` and `window_limit = 1`, once the window has passed the first send it
/// is free again (before, the recovered post held its slot for ever), and the day counts
/// exactly one publish.
#[tokio::test]
async fn a_recovered_post_is_counted_once_and_frees_the_window_when_it_passes() {
    let fake = bluesky::BlueskyFake::start_with(bluesky::Expect::ANY, |s| {
        s.create_mode = bluesky::CreateMode::StatusWithoutCreating(502)
    })
    .await;
    let ws = workspace(
        &config(
            "sqlite://airlock.db",
            "window = \"1m\"\nwindow_limit = 1",
            &format!(
                r#"
[channels.bsky]
kind = "bluesky"
token_file = "credentials/bsky.token"
account = "{}"
base_url = "{}"
request_timeout = "1s"
daily_limit = 10
"#,
                bluesky::HANDLE,
                fake.uri()
            ),
        ),
        &["bsky"],
    );
    let now = chrono::Duration::zero();
    let id = approved(&ws, now, "bsky", "Mochi naps in the sun.", &[]);
    let first = ws.run(&["dispatch", "--once"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    assert_eq!(show(&ws, &id)["status"], "needs_review");
    ws.ok(&["post", "resolve", &id, "--not-published"]);
    ws.ok(&["post", "requeue", &id]);
    ws.ok(&["resume", "bsky"]);
    let key = show(&ws, &id)["intents"][0]["platform_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    fake.with(|s| {
        s.create_mode = bluesky::CreateMode::Normal;
        s.records.push(bluesky::Record {
            rkey: key.clone(),
            value: serde_json::json!({"text": "Mochi naps in the sun."}),
            cid: "bafyreilate".into(),
        });
    });
    let retry = ws.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(retry["published"][0]["result"], "posted", "{retry}");
    let post = show(&ws, &id);
    let committed: Vec<&Value> = post["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["state"] == "committed")
        .collect();
    assert_eq!(committed.len(), 1, "{post}");
    assert_eq!(committed[0]["sent_at"], post["intents"][0]["created_at"]);
    assert_eq!(post["posted_at"], post["intents"][0]["created_at"]);

    // Two minutes later by the clock: the window is free, the day holds one publish, and
    // the next post goes out at once.
    let later = chrono::Duration::minutes(2);
    let quota = ok_at(&ws, later, &["quota", "--json"]).json();
    assert_eq!(quota["window"]["used"], 0, "{quota}");
    assert_eq!(quota["channels"][0]["used"], 1, "{quota}");
    let next = approved(&ws, later, "bsky", "Mochi eats.", &[]);
    let pass = ok_at(&ws, later, &["dispatch", "--once", "--json"]).json();
    assert_eq!(pass["published"][0]["id"].to_string(), next, "{pass}");
    assert_eq!(pass["published"][0]["result"], "posted", "{pass}");
    assert_eq!(fake.with(|s| s.posts()), 2);
    let doctor = ok_at(&ws, later, &["doctor"]);
    assert!(
        doctor.stdout.contains("ledger invariants hold"),
        "{}",
        doctor.stdout
    );
}

/// The next start of a calendar month in Tokyo: a day's and a month's end at once.
fn next_tokyo_month(now: DateTime<Utc>) -> DateTime<Utc> {
    let tz: Tz = "Asia/Tokyo".parse().unwrap();
    let local = now.with_timezone(&tz);
    let (year, month) = if local.month() == 12 {
        (local.year() + 1, 1)
    } else {
        (local.year(), local.month() + 1)
    };
    tz.with_ymd_and_hms(year, month, 1, 0, 0, 0)
        .single()
        .unwrap()
        .with_timezone(&Utc)
}

/// Three processes whose clocks are two minutes apart each (four between the slowest and
/// the fastest) publish around the true midnight that starts a month in Tokyo
/// (`post publish`, so each decides by its own clock): a
/// sandbox channel with `daily_limit = 2` and an X channel with a $0.04 budget at
/// $0.015 a post. However their clocks put the requests on either side of midnight, no
/// true day holds more than two sandbox posts and no true month more than three X posts
/// (the third starts below the budget). Before, a process a few minutes behind still
/// decided for the old day while the others granted the new one in full: four and six.
async fn clocks_minutes_apart_never_exceed_a_day_or_a_month(database: &str) {
    let fake = x::XFake::start(x::Expect::ANY).await;
    let ws = workspace(
        &config(
            database,
            "window = \"60m\"\nwindow_limit = 100",
            &format!(
                r#"
[channels.cats]
kind = "sandbox"
daily_limit = 2

[channels.x-main]
kind = "x"
token_file = "credentials/x-main.token"
account = "{}"
base_url = "{}"
request_timeout = "5s"
daily_limit = 100
monthly_budget_usd = 0.04
"#,
                x::USERNAME,
                fake.uri()
            ),
        ),
        &["x-main"],
    );
    let started = Utc::now();
    // The true clock of the scenario: twenty seconds before the month turns.
    let truth = next_tokyo_month(started) - chrono::Duration::seconds(20) - started;
    let slow = truth - chrono::Duration::minutes(2);
    let fast = truth + chrono::Duration::minutes(2);
    // Drafted by the slowest clock, so every process may publish them.
    let mut waiting = Vec::new();
    for n in 0..4 {
        let early = slow - chrono::Duration::minutes(2);
        waiting.push(approved(
            &ws,
            early,
            "cats",
            &format!("Mochi naps, {n}."),
            &[],
        ));
        waiting.push(approved(
            &ws,
            early,
            "x-main",
            &format!("Mochi eats, {n}."),
            &[],
        ));
    }
    if database.starts_with("postgres") {
        // The binary follows the database's clock, which no test can move: this ledger
        // decides by each process's own clock instead, the case the counting must hold.
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(database)
            .await
            .unwrap();
        sqlx::query("UPDATE ledger_clock SET source = 'caller'")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let tz: Tz = "Asia/Tokyo".parse().unwrap();
    // (true time, channel) of each publish. Each process asks to publish every post still
    // waiting now (a deferral decided by one process would hide it from the others, and
    // each must decide by its own clock).
    let mut published: Vec<(DateTime<Utc>, String)> = Vec::new();
    for skew in [fast, slow, truth, fast, slow] {
        for id in waiting.clone() {
            let at = Utc::now() + truth;
            let run = run_at(&ws, skew, &["post", "publish", &id, "--json"]);
            match run.code {
                0 => {
                    let post = run.json();
                    assert_eq!(post["status"], "posted", "{post}");
                    published.push((at, post["channel"].as_str().unwrap().to_owned()));
                    waiting.retain(|w| *w != id);
                }
                2 => assert!(run.stderr.contains("over quota"), "{}", run.stderr),
                _ => panic!("post publish {id}: {}{}", run.stdout, run.stderr),
            }
        }
    }
    let mut per_day = std::collections::BTreeMap::new();
    let mut per_month = std::collections::BTreeMap::new();
    for (at, channel) in &published {
        let local = at.with_timezone(&tz);
        if channel == "cats" {
            *per_day.entry(local.date_naive()).or_insert(0) += 1;
        } else {
            *per_month.entry((local.year(), local.month())).or_insert(0) += 1;
        }
    }
    assert!(
        !per_day.is_empty() && !per_month.is_empty(),
        "{published:?}"
    );
    for (day, n) in &per_day {
        assert!(*n <= 2, "{n} sandbox posts on {day}: {published:?}");
    }
    for (month, n) in &per_month {
        assert!(*n <= 3, "{n} X posts in {month:?}: {published:?}");
    }
    assert_eq!(
        fake.with(|s| s.posts()),
        published.iter().filter(|p| p.1 == "x-main").count()
    );
}

#[tokio::test]
async fn sqlite_clocks_minutes_apart_never_exceed_a_day_or_a_month() {
    clocks_minutes_apart_never_exceed_a_day_or_a_month("sqlite://airlock.db").await;
}

#[tokio::test]
async fn postgres_clocks_minutes_apart_never_exceed_a_day_or_a_month() {
    let db = TestDb::create();
    clocks_minutes_apart_never_exceed_a_day_or_a_month(&db.url).await;
}

/// Process A sends a Mastodon post again with its key (its first create answered 502
/// and made nothing) and uploads slow media; process B, whose clock reads six minutes
/// later, reconciles meanwhile. A's re-send may run for four requests of three minutes,
/// so B sends nothing, and the instance — which stores a key only once it made the
/// status — holds one status. Before, B sent after five minutes and the instance made
/// two.
#[tokio::test]
async fn two_processes_reconciling_a_mastodon_post_with_slow_media_make_one_status() {
    let images = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/cat.jpg"))
        .respond_with(
            wiremock::ResponseTemplate::new(200)
                .insert_header("content-type", "image/jpeg")
                .set_body_bytes(vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4]),
        )
        .mount(&images)
        .await;
    let fake = mastodon::MastodonFake::start_with(mastodon::Expect::ANY, |s| {
        s.create_mode = mastodon::CreateMode::StatusWithoutCreating(502)
    })
    .await;
    let ws = workspace(
        &config(
            "sqlite://airlock.db",
            "window = \"60m\"\nwindow_limit = 100",
            &format!(
                r#"
[channels.masto]
kind = "mastodon"
token_file = "credentials/masto.token"
account = "{}"
base_url = "{}"
request_timeout = "3m"
daily_limit = 10
"#,
                mastodon::ACCT,
                fake.uri()
            ),
        ),
        &["masto"],
    );
    let now = chrono::Duration::zero();
    let media = format!("{}/cat.jpg|a cat", images.uri());
    let id = approved(&ws, now, "masto", "Mochi naps.", &["--media", &media]);
    let first = ws.run(&["dispatch", "--once"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    assert_eq!(show(&ws, &id)["status"], "needs_review");
    fake.with(|s| {
        s.create_mode = mastodon::CreateMode::Normal;
        s.upload_delay = Some(Duration::from_secs(3));
        s.key_stored_after = Some(Duration::from_secs(10));
    });
    // Ten minutes after the first send, A re-sends; B's clock reads six minutes later.
    let a_at = chrono::Duration::minutes(10);
    let a = {
        let mut cmd = ws.command(&["dispatch", "--once", "--json"]);
        cmd.env("AIRLOCK_DRILL_CLOCK_SKEW", a_at.num_seconds().to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = run_at(
        &ws,
        a_at + chrono::Duration::minutes(6),
        &["dispatch", "--once", "--json"],
    );
    assert_eq!(b.code, 0, "{}{}", b.stdout, b.stderr);
    assert_eq!(
        b.json()["reconciled"],
        serde_json::json!([]),
        "{}",
        b.stdout
    );
    let a = finish(a.wait_with_output().unwrap());
    assert_eq!(a.code, 0, "{}{}", a.stdout, a.stderr);
    assert_eq!(
        a.json()["reconciled"][0]["status"],
        "posted",
        "{}",
        a.stdout
    );
    assert_eq!(fake.with(|s| s.posts()), 1, "one status");
    assert_eq!(show(&ws, &id)["status"], "posted");
}

/// A Mastodon `request_timeout` a re-send cannot cover is refused at load, naming the
/// key and both values.
#[test]
fn a_mastodon_timeout_a_resend_cannot_cover_is_refused_at_load() {
    let ws = workspace(
        &config(
            "sqlite://airlock.db",
            "window = \"60m\"\nwindow_limit = 100",
            r#"
[channels.masto]
kind = "mastodon"
token_file = "credentials/masto.token"
account = "inn_cats"
base_url = "https://cats.example"
request_timeout = "6m"
daily_limit = 10
"#,
        ),
        &["masto"],
    );
    let run = ws.run(&["channels"]);
    assert_refused(&run, "channels.masto.request_timeout");
    assert!(
        run.stderr.contains("360s") && run.stderr.contains("225s"),
        "{}",
        run.stderr
    );
}

/// A machine whose clock is further from the database's than airlock allows does not
/// follow it: the ledger refuses its publishes, naming both times, while the emergency
/// stop and `doctor` still work; within the allowance a process follows the database.
#[tokio::test]
async fn a_machine_whose_clock_is_far_from_the_databases_may_not_publish_but_may_pause() {
    let db = TestDb::create();
    let ws = workspace(
        &config(
            &db.url,
            "window = \"60m\"\nwindow_limit = 100",
            "\n[channels.cats]\nkind = \"sandbox\"\ndaily_limit = 10\n",
        ),
        &[],
    );
    let now = chrono::Duration::zero();
    let id = approved(&ws, now, "cats", "Mochi naps.", &[]);
    let far = chrono::Duration::minutes(10);
    let refused = run_at(&ws, far, &["post", "publish", &id]);
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("clock reads") && refused.stderr.contains("database's reads"),
        "{}",
        refused.stderr
    );
    assert_eq!(show(&ws, &id)["status"], "approved");
    ok_at(&ws, far, &["pause", "--all", "--reason", "clock drill"]);
    ws.ok(&["resume", "--all"]);
    let doctor = run_at(&ws, far, &["doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(
        doctor
            .stdout
            .contains("FAIL  clock: this machine's clock reads"),
        "{}",
        doctor.stdout
    );
    // Four minutes off: within the allowance, it follows the database's clock.
    let near = ok_at(
        &ws,
        chrono::Duration::minutes(4),
        &["post", "publish", &id, "--json"],
    );
    assert_eq!(near.json()["status"], "posted");
    let posted: DateTime<Utc> = show(&ws, &id)["posted_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (posted - Utc::now()).abs() < chrono::Duration::seconds(30),
        "{posted}"
    );
}
