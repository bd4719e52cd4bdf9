//! The at-most-once scenarios at the platform edge, tried as a new user would: the real
//! `airlock` binary, a config whose `base_url`s point at stateful fakes, and the CLI (or
//! `serve` over HTTP). Each ends with at most one copy on the platform, no post left
//! `posting`, and no panic.

use std::io::Write;
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use airlock_testkit::fake::meta::{self, Flavour, GraphFake, PublishMode};
use airlock_testkit::fake::wordpress::{self, WordpressFake};

use crate::support::*;

fn workspace(channel: &str, extra: &str) -> Workspace {
    let ws = Workspace::new(&format!(
        r#"timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[server]
listen = "127.0.0.1:{port}"

[dispatcher]
stale_after = "10s"
{extra}

[quota]
window = "60m"
window_limit = 100

[channels.edge]
{channel}
daily_limit = 10
"#,
        port = free_port(),
    ));
    let token = ws.path("edge.token");
    std::fs::write(&token, airlock_testkit::CANARY).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    ws
}

fn threads_channel(fake: &GraphFake) -> String {
    format!(
        "kind = \"threads\"\nbase_url = \"{}\"\ntoken_file = \"edge.token\"\naccount = \"inn_cats\"\nrequest_timeout = \"500ms\"\npoll_interval = \"100ms\"\npoll_timeout = \"5s\"",
        fake.uri()
    )
}

fn show(ws: &Workspace, id: &str) -> Value {
    ws.ok(&["post", "show", id, "--json"]).json()
}

fn approved(ws: &Workspace, args: &[&str]) -> String {
    let mut add = vec!["post", "add", "--channel", "edge"];
    add.extend_from_slice(args);
    let id = ws.ok(&add).stdout.trim().to_owned();
    ws.ok(&["post", "approve", &id]);
    id
}

/// Threads takes the publish late: the answer never comes and the container reads
/// FINISHED meanwhile. Passes of `dispatch --once` leave the post with a person until the
/// late publish lands, then settle it from the container. One post on Threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_publish_threads_processes_late_goes_out_once() {
    let fake = GraphFake::start_with(Flavour::Threads, meta::Expect::ANY, |s| {
        s.in_progress_reads = 1;
        s.publish_mode = PublishMode::ProcessLate(Duration::from_secs(3));
    })
    .await;
    let ws = workspace(&threads_channel(&fake), "");
    let id = approved(&ws, &["--text", "Cats rest here."]);
    assert_eq!(ws.run(&["dispatch", "--once"]).code, 1, "needs review");
    assert_eq!(show(&ws, &id)["status"], "needs_review");
    // A later pass: the container still reads FINISHED, which proves nothing.
    ws.run(&["dispatch", "--once"]);
    assert_eq!(show(&ws, &id)["status"], "needs_review");
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.with(|s| s.published()) == 0 {
        assert!(Instant::now() < deadline, "the late publish never landed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ws.ok(&["dispatch", "--once"]);
    let post = show(&ws, &id);
    assert_eq!(post["status"], "posted", "{post}");
    assert_eq!(fake.with(|s| s.published()), 1);
}

/// WordPress stores the all-digit slug `3` as `3-2` and a plugin fails the create after
/// saving: the article is found by the key it carries, and nothing is created twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wordpress_article_saved_before_a_500_goes_out_once() {
    let fake = WordpressFake::start(wordpress::Expect::ANY).await;
    fake.with(|s| s.publish_mode = wordpress::PublishMode::CreateThenStatus(500));
    let ws = workspace(
        &format!(
            "kind = \"wordpress\"\nbase_url = \"{}\"\ntoken_file = \"edge.token\"\naccount = \"{}\"\nusername = \"{}\"\nrequest_timeout = \"1s\"",
            fake.server.uri(),
            wordpress::USER_SLUG,
            wordpress::USERNAME
        ),
        "",
    );
    let id = approved(
        &ws,
        &["--title", "3つの理由", "--text", "Three reasons cats rest."],
    );
    assert_eq!(ws.run(&["dispatch", "--once"]).code, 1, "needs review");
    ws.ok(&["dispatch", "--once"]);
    let post = show(&ws, &id);
    assert_eq!(post["status"], "posted", "{post}");
    assert!(
        post["permalink"].as_str().unwrap().ends_with("/3-2/"),
        "{post}"
    );
    // Even a person's wrong "not published" and a requeue make nothing twice.
    assert_eq!(fake.with(|s| s.articles.len()), 1);
}

/// A client that hangs up in the middle of `POST /api/v1/posts/{id}/publish` on `serve`
/// changes nothing: the publish goes on to `posted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_hangs_up_on_serve_does_not_strand_the_post() {
    let platform = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_millis(1500)))
        .expect(1)
        .mount(&platform)
        .await;
    let ws = workspace(
        &format!(
            "kind = \"webhook\"\nurl = \"{}/hook\"\nrequest_timeout = \"5s\"",
            platform.uri()
        ),
        "",
    );
    let id = approved(&ws, &["--text", "hello", "--at", "2099-01-01T00:00:00Z"]);
    let token = ws
        .ok(&[
            "token",
            "create",
            "--name",
            "p",
            "--role",
            "publisher",
            "--json",
        ])
        .json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let serving = Serving::start(&ws);
    let address = serving.address().to_owned();
    {
        let mut stream = TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "POST /api/v1/posts/{id}/publish HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        stream.flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // The client hangs up before the answer.
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let post = show(&ws, &id);
        if post["status"] == "posted" {
            break;
        }
        assert!(Instant::now() < deadline, "stranded: {post}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !ws.ok(&["channels", "--json"]).json()[0]["paused"]
            .as_bool()
            .unwrap()
    );
    drop(serving);
}

/// A platform's `Retry-After: 99999999999999` is clamped to a day: no panic, the post
/// waits and is not counted as an attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_absurd_retry_after_is_clamped_not_a_crash() {
    let platform = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "99999999999999"))
        .mount(&platform)
        .await;
    let ws = workspace(
        &format!(
            "kind = \"webhook\"\nurl = \"{}/hook\"\nrequest_timeout = \"5s\"",
            platform.uri()
        ),
        "",
    );
    let id = approved(&ws, &["--text", "hello"]);
    let run = ws.run(&["dispatch", "--once"]);
    assert_eq!(run.code, 0, "no panic: {}{}", run.stdout, run.stderr);
    let post = show(&ws, &id);
    assert_eq!(post["status"], "approved", "{post}");
    assert_eq!(post["attempts"], 0);
    let not_before = chrono::DateTime::parse_from_rfc3339(post["not_before"].as_str().unwrap())
        .unwrap()
        .to_utc();
    assert!(
        not_before <= chrono::Utc::now() + chrono::Duration::hours(24),
        "{post}"
    );
}

/// `airlock pause --all` while a post's container is still processing stops it before
/// its intent: nothing is published, the post is back in the queue, no attempt counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pause_all_stops_a_post_that_is_still_preparing() {
    let fake = GraphFake::start_with(Flavour::Threads, meta::Expect::ANY, |s| {
        s.in_progress_reads = 30;
    })
    .await;
    let ws = workspace(&threads_channel(&fake), "");
    let id = approved(&ws, &["--text", "Cats rest here."]);
    let mut worker = ws
        .command(&["dispatch", "--once"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.with(|s| s.containers().is_empty()) {
        assert!(Instant::now() < deadline, "never started preparing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ws.ok(&["pause", "--all", "--reason", "stop everything"]);
    worker.wait().unwrap();
    let post = show(&ws, &id);
    assert_eq!(post["status"], "approved", "{post}");
    assert_eq!(post["attempts"], 0);
    assert!(post["intents"].as_array().unwrap().is_empty(), "{post}");
    assert_eq!(fake.with(|s| s.published()), 0);
}
