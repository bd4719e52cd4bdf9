//! Several `airlock` processes (and installations: one config file each) sharing one
//! PostgreSQL queue: each post published exactly once, a daily limit held across
//! processes, a dispatcher killed mid-request reaped by another installation's `serve`,
//! and `serve` woken by LISTEN/NOTIFY when another process approves or resumes.
//!
//! Each test gets a fresh database on the server named by `AIRLOCK_TEST_PG` (default
//! `postgres://postgres@127.0.0.1:5432`), dropped when the test ends, also on panic.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use airlock_testkit::pg::TestDb;

use crate::support::*;

/// An installation's config on the test database: sandbox channels `sandbox` and
/// `second`, a window too wide to matter, a free port for `serve`.
fn pg_config(db: &TestDb, daily: [u32; 2], dispatcher: &str) -> String {
    format!(
        r#"timezone = "Asia/Tokyo"
database = "{url}"

[server]
listen = "127.0.0.1:{port}"

[dispatcher]
{dispatcher}

[quota]
window = "60m"
window_limit = 1000

[channels.sandbox]
kind = "sandbox"
daily_limit = {first}

[channels.second]
kind = "sandbox"
daily_limit = {second}
"#,
        url = db.url,
        port = free_port(),
        first = daily[0],
        second = daily[1],
    )
}

/// Runs `f(0..n)` on four threads; the results in index order.
fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    const THREADS: usize = 4;
    let mut results: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let f = &f;
                scope.spawn(move || {
                    (t..n)
                        .step_by(THREADS)
                        .map(|i| (i, f(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, t)| t).collect()
}

fn add(ws: &Workspace, channel: &str, text: &str) -> i64 {
    ws.ok(&["post", "add", "--channel", channel, "--text", text])
        .stdout
        .trim()
        .parse()
        .unwrap()
}

/// `n` drafts on `channel`, created by concurrent CLI runs.
fn drafts(ws: &Workspace, channel: &str, n: usize) -> Vec<i64> {
    in_parallel(n, |i| add(ws, channel, &format!("{channel} post {i}")))
}

fn approve_all(installations: &[&Workspace], ids: &[i64]) {
    in_parallel(ids.len(), |i| {
        installations[i % installations.len()].ok(&["post", "approve", &ids[i].to_string()]);
    });
}

fn show(ws: &Workspace, id: i64) -> Value {
    ws.ok(&["post", "show", &id.to_string(), "--json"]).json()
}

fn list(ws: &Workspace, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["post", "list", "--json"];
    all.extend_from_slice(args);
    ws.ok(&all).json().as_array().unwrap().clone()
}

/// Polls `post show` every 50 ms until the post has `status`; panics after `limit`.
fn wait_for_status(ws: &Workspace, id: i64, status: &str, limit: Duration) -> Value {
    let start = Instant::now();
    loop {
        let post = show(ws, id);
        if post["status"] == status {
            return post;
        }
        assert!(
            start.elapsed() < limit,
            "post {id} is still {} after {limit:?}, not {status}: {post}",
            post["status"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many lines each post has in the sandbox files of all `installations`.
fn published_lines(installations: &[&Workspace], channel: &str, ids: &[i64]) -> Vec<usize> {
    ids.iter()
        .map(|id| {
            installations
                .iter()
                .map(|ws| count_lines_for(&ws.path(&format!("sandbox/{channel}.jsonl")), *id))
                .sum()
        })
        .collect()
}

#[test]
fn five_dispatch_processes_on_postgres_publish_each_of_sixty_posts_exactly_once() {
    let db = TestDb::create();
    let ws = Workspace::new(&pg_config(&db, [100, 100], ""));
    let first = drafts(&ws, "sandbox", 30);
    let second = drafts(&ws, "second", 30);
    approve_all(&[&ws], &first);
    approve_all(&[&ws], &second);

    let children: Vec<_> = (0..5)
        .map(|_| {
            ws.command(&["dispatch", "--once"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a dispatch process failed");
    }

    assert_eq!(published_lines(&[&ws], "sandbox", &first), vec![1; 30]);
    assert_eq!(published_lines(&[&ws], "second", &second), vec![1; 30]);
    assert_eq!(list(&ws, &["--status", "posted"]).len(), 60);
    assert_eq!(list(&ws, &[]).len(), 60, "nothing else is in the ledger");
}

#[test]
fn three_installations_serving_one_database_publish_each_post_exactly_once() {
    let db = TestDb::create();
    let installations: Vec<Workspace> = (0..3)
        .map(|_| Workspace::new(&pg_config(&db, [100, 100], "poll_interval = \"2s\"")))
        .collect();
    let all: Vec<&Workspace> = installations.iter().collect();
    let first = drafts(all[0], "sandbox", 30);
    let second = drafts(all[1], "second", 30);
    // Half of them are due before the servers start, half are approved while they run.
    approve_all(&all, &first);

    let servers: Vec<Serving> = all.iter().map(|ws| Serving::start(ws)).collect();
    approve_all(&all, &second);

    let start = Instant::now();
    loop {
        let posted = list(all[2], &["--status", "posted"]).len();
        if posted == 60 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "only {posted} of 60 posts were published: {}",
            servers
                .iter()
                .map(Serving::log)
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(servers);

    assert_eq!(published_lines(&all, "sandbox", &first), vec![1; 30]);
    assert_eq!(published_lines(&all, "second", &second), vec![1; 30]);
    let statuses: BTreeMap<String, usize> =
        list(all[0], &[]).iter().fold(BTreeMap::new(), |mut n, p| {
            *n.entry(p["status"].as_str().unwrap().to_owned())
                .or_default() += 1;
            n
        });
    assert_eq!(statuses, BTreeMap::from([("posted".to_owned(), 60)]));
}

#[test]
fn a_daily_limit_shared_by_processes_of_three_installations_is_never_exceeded() {
    let db = TestDb::create();
    let installations: Vec<Workspace> = (0..3)
        .map(|_| Workspace::new(&pg_config(&db, [3, 2], "")))
        .collect();
    let all: Vec<&Workspace> = installations.iter().collect();
    let first = drafts(all[0], "sandbox", 12);
    let second = drafts(all[0], "second", 12);
    approve_all(&all, &first);
    approve_all(&all, &second);

    let children: Vec<_> = (0..6)
        .map(|i| {
            all[i % 3]
                .command(&["dispatch", "--once"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a dispatch process failed");
    }

    for (channel, limit, ids) in [("sandbox", 3, &first), ("second", 2, &second)] {
        let posted = list(all[1], &["--status", "posted", "--channel", channel]);
        assert_eq!(posted.len(), limit, "{channel}: {posted:?}");
        let approved = list(all[1], &["--status", "approved", "--channel", channel]);
        assert_eq!(approved.len(), 12 - limit, "the rest wait for tomorrow");
        let lines: usize = published_lines(&all, channel, ids).iter().sum();
        assert_eq!(lines, limit, "{channel}: sandbox lines");
    }
    let quota = all[2].ok(&["quota", "--json"]).json();
    for (channel, limit) in [("sandbox", 3), ("second", 2)] {
        let day = quota["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["channel"] == channel)
            .unwrap();
        assert_eq!(day["used"], limit, "{quota}");
        assert_eq!(day["limit"], limit);
        assert_eq!(day["remaining"], 0);
        assert!(day["next_free_at"].is_string(), "{quota}");
    }
    assert_eq!(quota["window"]["used"], 5);
}

#[test]
fn a_dispatcher_killed_mid_request_is_reaped_by_another_installations_serve() {
    let (url, requests) = silent_server();
    let db = TestDb::create();
    let config = |dispatcher: &str| {
        format!(
            r#"timezone = "UTC"
database = "{db}"

[server]
listen = "127.0.0.1:{port}"

[dispatcher]
stale_after = "3s"
{dispatcher}

[channels.hook]
kind = "webhook"
url = "{url}"
request_timeout = "2s"
daily_limit = 10
"#,
            db = db.url,
            port = free_port(),
        )
    };
    let first = Workspace::new(&config(""));
    let other = Workspace::new(&config("poll_interval = \"1s\""));
    let id = add(&first, "hook", "once only");
    first.ok(&["post", "approve", &id.to_string()]);

    let mut child = first
        .command(&["dispatch", "--once"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while requests.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the request never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: no cleanup, no outcome write.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(show(&other, id)["status"], "posting");

    // The other installation's reaper settles the expired lease.
    let serving = Serving::start(&other);
    let post = wait_for_status(&other, id, "needs_review", Duration::from_secs(20));
    let last = post["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["from"], "posting", "{post}");
    assert_eq!(last["to"], "needs_review");
    assert_eq!(last["actor"], "reaper");
    assert_eq!(post["reservations"][0]["state"], "reserved", "{post}");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "the request was received exactly once"
    );

    // Neither the serving installation nor another pass sends it again.
    std::thread::sleep(Duration::from_millis(1500));
    first.ok(&["dispatch", "--once"]);
    drop(serving);
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    let post = show(&first, id);
    assert_eq!(post["status"], "needs_review");
    assert_eq!(post["reservations"][0]["state"], "reserved");
}

#[test]
fn serve_publishes_a_post_approved_by_another_process_long_before_its_poll_interval() {
    let db = TestDb::create();
    let ws = Workspace::new(&pg_config(&db, [10, 10], "poll_interval = \"10m\""));
    let id = add(&ws, "sandbox", "approved elsewhere");
    let _serving = Serving::start(&ws);

    // A separate process: only LISTEN/NOTIFY can tell the server about it.
    ws.ok(&["post", "approve", &id.to_string()]);
    let post = wait_for_status(&ws, id, "posted", Duration::from_secs(10));
    assert!(post["permalink"].is_string(), "{post}");
    assert_eq!(published_lines(&[&ws], "sandbox", &[id]), vec![1]);
}

#[test]
fn serve_publishes_a_due_post_soon_after_another_process_resumes_its_channel() {
    let db = TestDb::create();
    let ws = Workspace::new(&pg_config(&db, [10, 10], "poll_interval = \"10m\""));
    ws.ok(&["pause", "sandbox", "--reason", "drill"]);
    let id = add(&ws, "sandbox", "held by a pause");
    ws.ok(&["post", "approve", &id.to_string()]);
    let _serving = Serving::start(&ws);
    assert_eq!(show(&ws, id)["status"], "approved", "the pause holds it");

    // A separate process: only LISTEN/NOTIFY can tell the server about it.
    ws.ok(&["resume", "sandbox"]);
    wait_for_status(&ws, id, "posted", Duration::from_secs(10));
    assert_eq!(published_lines(&[&ws], "sandbox", &[id]), vec![1]);
}
