//! The platform adapters end to end, through the real `airlock` binary, as a new user
//! would try them: a config with `base_url` pointed at local fakes of Threads and
//! Instagram (`airlock_testkit::fake::meta`), a `webhook` notification sink pointed at a
//! local receiver,
//! and `airlock dispatch --once` from the command line.
//!
//! Every scenario runs with a fresh canary token (`CANARY-tok-9f3e-<random>`) in its
//! token files and every command with `AIRLOCK_LOG=trace`; at the end the canary is
//! searched for in everything airlock wrote or sent: stdout and stderr, the SQLite files,
//! every other file beside the config, the notifications received (bodies and headers),
//! and the requests the fakes received (where it may travel only in `Authorization`).

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;
use airlock_testkit::fake::meta::{Expect, Flavour, GraphFake, PublishMode, Route, State};
use airlock_testkit::fake::receiver::Receiver;

/// A Graph fake accepting only `canary`, with one status read `IN_PROGRESS` per container
/// as real containers take a moment; `configure` adjusts it further.
async fn graph_fake(
    flavour: Flavour,
    canary: &str,
    expect: Expect,
    configure: impl FnOnce(&mut State),
) -> GraphFake {
    GraphFake::start_with(flavour, expect, |state| {
        state.token = canary.to_owned();
        state.in_progress_reads = 1;
        configure(state);
    })
    .await
}

/// A token nobody else has: the fixed prefix makes a truncated leak findable too.
fn canary() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    format!("CANARY-tok-9f3e-{:016x}", hasher.finish())
}

/// One channel of a session's config.
struct Channel<'a> {
    name: &'a str,
    kind: &'a str,
    base_url: String,
}

fn threads(fake: &GraphFake) -> Channel<'static> {
    Channel {
        name: "threads-main",
        kind: "threads",
        base_url: fake.uri(),
    }
}

fn instagram(fake: &GraphFake) -> Channel<'static> {
    Channel {
        name: "ig-main",
        kind: "instagram",
        base_url: fake.uri(),
    }
}

/// A workspace with platform channels, their token files (mode 0600, holding the
/// canary), a webhook sink, and a transcript of every command run.
struct Session {
    ws: Workspace,
    canary: String,
    token_files: Vec<PathBuf>,
    transcript: Mutex<Vec<String>>,
}

impl Session {
    fn new(canary: &str, channels: &[Channel], receiver: &Receiver) -> Session {
        // stale_after must exceed 4 x request_timeout + poll_timeout (7s here).
        let mut config = format!(
            r#"timezone = "UTC"
database = "sqlite://airlock.db"

[dispatcher]
stale_after = "1m"
max_attempts = 3

[quota]
window = "60m"
window_limit = 100

# Meta fetches the images itself; the example addresses are not fetched here.
[media]
check = false

[notify.ops]
kind = "webhook"
url = "{}"
events = ["published", "failed", "needs_review", "paused"]
"#,
            receiver.url()
        );
        for channel in channels {
            config.push_str(&format!(
                r#"
[channels.{name}]
kind = "{kind}"
token_file = "credentials/{name}.token"
account = "inn_cats"
base_url = "{base_url}"
request_timeout = "1s"
poll_interval = "100ms"
poll_timeout = "3s"
daily_limit = 10
"#,
                name = channel.name,
                kind = channel.kind,
                base_url = channel.base_url,
            ));
        }
        let ws = Workspace::new(&config);
        std::fs::create_dir(ws.path("credentials")).unwrap();
        let token_files = channels
            .iter()
            .map(|channel| {
                let file = ws.path(&format!("credentials/{}.token", channel.name));
                std::fs::write(&file, format!("{canary}\n")).unwrap();
                chmod(&file, 0o600);
                file
            })
            .collect();
        Session {
            ws,
            canary: canary.to_owned(),
            token_files,
            transcript: Mutex::new(Vec::new()),
        }
    }

    fn token_file(&self, channel: &str) -> PathBuf {
        self.ws.path(&format!("credentials/{channel}.token"))
    }

    /// Runs `airlock` with trace logging, keeping its output for the canary search.
    fn run(&self, args: &[&str]) -> Run {
        let output = self
            .ws
            .command(args)
            .env("AIRLOCK_LOG", "trace")
            .output()
            .unwrap();
        let run = finish(output);
        self.transcript.lock().unwrap().push(format!(
            "$ airlock {}\n--- stdout\n{}\n--- stderr\n{}",
            args.join(" "),
            run.stdout,
            run.stderr
        ));
        run
    }

    /// Runs and insists on exit 0.
    fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code, 0,
            "airlock {args:?} failed: {}{}",
            run.stdout, run.stderr
        );
        run
    }

    /// Adds a post and approves it; its id.
    fn approved(&self, channel: &str, text: &str, media: &[&str]) -> String {
        let mut args = vec!["post", "add", "--channel", channel, "--text", text];
        for item in media {
            args.extend(["--media", item]);
        }
        let id = self.ok(&args).stdout.trim().to_owned();
        self.ok(&["post", "approve", &id]);
        id
    }

    fn show(&self, id: &str) -> Value {
        self.ok(&["post", "show", id, "--json"]).json()
    }

    fn channel(&self, name: &str) -> Value {
        let channels = self.ok(&["channels", "--json"]).json();
        channels
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no channel {name} in {channels}"))
            .clone()
    }

    /// The canary appears nowhere airlock wrote or sent anything, and travelled to the
    /// fakes only in the `Authorization` header.
    async fn assert_canary_nowhere(&self, fakes: &[&GraphFake], receiver: &Receiver) {
        let suffix = self.canary.rsplit('-').next().unwrap().to_owned();
        let needles = [self.canary.clone(), "CANARY-tok".to_owned(), suffix];
        let leak = |haystack: &[u8]| {
            needles
                .iter()
                .find(|n| contains(haystack, n.as_bytes()))
                .cloned()
        };

        {
            let transcript = self.transcript.lock().unwrap();
            assert!(!transcript.is_empty(), "no command was run");
            for entry in transcript.iter() {
                if let Some(needle) = leak(entry.as_bytes()) {
                    panic!("the token ({needle}) leaked into command output:\n{entry}");
                }
            }
        }

        assert!(self.ws.db().exists(), "no database to search");
        let skip: HashSet<&Path> = self.token_files.iter().map(PathBuf::as_path).collect();
        let mut searched = 0;
        for file in files_under(self.ws.dir.path()) {
            if skip.contains(file.as_path()) {
                continue;
            }
            let bytes = std::fs::read(&file).unwrap();
            searched += 1;
            if let Some(needle) = leak(&bytes) {
                panic!("the token ({needle}) leaked into {}", file.display());
            }
        }
        assert!(searched >= 2, "only {searched} files searched");

        for request in receiver.requests().await {
            assert!(
                leak(request.url.as_str().as_bytes()).is_none(),
                "{}",
                request.url
            );
            if let Some(needle) = leak(&request.body) {
                panic!("the token ({needle}) leaked into a notification body");
            }
            for (name, value) in &request.headers {
                let header = format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()));
                if let Some(needle) = leak(header.as_bytes()) {
                    panic!("the token ({needle}) leaked into a notification header {name}");
                }
            }
        }

        for fake in fakes {
            for request in fake.requests().await {
                // The needle is right: the token airlock read is the one it sent.
                assert_eq!(
                    request.headers.get("authorization").map(|v| v.as_bytes()),
                    Some(format!("Bearer {}", self.canary).as_bytes()),
                    "{}",
                    request.url
                );
                assert!(
                    leak(request.url.as_str().as_bytes()).is_none(),
                    "the token travelled in a URL: {}",
                    request.url
                );
                assert!(
                    leak(&request.body).is_none(),
                    "the token travelled in the body of {}",
                    request.url
                );
                for (name, value) in &request.headers {
                    if name.as_str() != "authorization" {
                        assert!(
                            leak(value.as_bytes()).is_none(),
                            "the token travelled in header {name} of {}",
                            request.url
                        );
                    }
                }
            }
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every regular file under `dir`, recursively (symlinks are not followed).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

fn events(post: &Value) -> &Vec<Value> {
    post["events"].as_array().unwrap()
}

/// The last status event that moved the post to `to`.
fn moved_to<'a>(post: &'a Value, to: &str) -> &'a Value {
    events(post)
        .iter()
        .rev()
        .find(|e| e["kind"] == "status" && e["to"] == to)
        .unwrap_or_else(|| panic!("no move to {to}: {post}"))
}

/// Requests a fake received on paths ending with `suffix`.
async fn hits(fake: &GraphFake, method: &str, suffix: &str) -> Vec<wiremock::Request> {
    fake.requests()
        .await
        .into_iter()
        .filter(|r| r.method.as_str() == method && r.url.path().ends_with(suffix))
        .collect()
}

const TEXT: &str = "Mochi naps in the sun. Please respect the cats' own pace.";
const IMAGE: &str = "https://inn.example/wp-content/uploads/mochi.jpg|Mochi asleep on a cushion";

#[tokio::test]
async fn a_threads_text_post_and_an_instagram_image_post_go_out_once_each_with_permalinks() {
    let canary = canary();
    let threads_fake = graph_fake(Flavour::Threads, &canary, Expect::ONE_POST, |_| {}).await;
    let ig_fake = graph_fake(Flavour::Instagram, &canary, Expect::ONE_POST, |_| {}).await;
    let receiver = Receiver::start().await;
    let s = Session::new(
        &canary,
        &[threads(&threads_fake), instagram(&ig_fake)],
        &receiver,
    );
    let text_id = s.approved("threads-main", TEXT, &[]);
    let image_id = s.approved("ig-main", "Mochi asleep on the veranda.", &[IMAGE]);

    let report = s.ok(&["dispatch", "--once", "--json"]).json();
    let published = report["published"].as_array().unwrap();
    assert_eq!(published.len(), 2, "{report}");
    assert!(
        published.iter().all(|p| p["status"] == "posted"),
        "{report}"
    );
    assert_eq!(report["notifications_delivered"], 2, "{report}");

    let text = s.show(&text_id);
    assert_eq!(text["status"], "posted", "{text}");
    let media_id = text["platform_post_id"].as_str().unwrap();
    assert_eq!(
        text["permalink"],
        format!("https://www.threads.com/@inn_cats/post/C{media_id}")
    );
    assert!(text["verified_at"].is_string(), "{text}");
    let container = text["intents"][0]["platform_ref"].as_str().unwrap();
    assert_eq!(
        threads_fake.with(|f| f.container_state(container)),
        Some("PUBLISHED")
    );
    let created = hits(&threads_fake, "POST", "/threads").await;
    let params = airlock_testkit::params(&created[0]);
    assert_eq!(params["media_type"], "TEXT");
    assert_eq!(params["text"], TEXT);

    let image = s.show(&image_id);
    assert_eq!(image["status"], "posted", "{image}");
    let media_id = image["platform_post_id"].as_str().unwrap();
    assert_eq!(
        image["permalink"],
        format!("https://www.instagram.com/p/C{media_id}/")
    );
    assert!(image["verified_at"].is_string(), "{image}");
    assert_eq!(image["reservations"][0]["state"], "committed");
    let created = hits(&ig_fake, "POST", "/media").await;
    let params = airlock_testkit::params(&created[0]);
    assert_eq!(
        params["image_url"],
        "https://inn.example/wp-content/uploads/mochi.jpg"
    );
    assert_eq!(params["alt_text"], "Mochi asleep on a cushion");
    assert_eq!(params["caption"], "Mochi asleep on the veranda.");

    // Once each: the next pass has nothing to do.
    let again = s.ok(&["dispatch", "--once"]);
    assert!(again.stdout.contains("nothing due"), "{}", again.stdout);
    assert_eq!(threads_fake.with(|f| f.published()), 1);
    assert_eq!(ig_fake.with(|f| f.published()), 1);
    assert_eq!(receiver.events().await, ["published", "published"]);

    s.assert_canary_nowhere(&[&threads_fake, &ig_fake], &receiver)
        .await;
}

/// A Threads publish whose answer is lost (`mode`): `needs_review` and a paused channel,
/// then the next pass settles it from the container, without publishing again.
async fn an_ambiguous_threads_publish_is_settled_from_the_container(mode: PublishMode) {
    let canary = canary();
    let expect = Expect {
        // Polling until FINISHED, then the reconcile read.
        status_at_least: 3,
        // A post settled from evidence has no media id to read back.
        media_read: 0,
        ..Expect::ONE_POST
    };
    let threads_fake = graph_fake(Flavour::Threads, &canary, expect, |f| {
        f.publish_mode = mode;
    })
    .await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[threads(&threads_fake)], &receiver);
    let id = s.approved("threads-main", TEXT, &[]);

    let first = s.run(&["dispatch", "--once"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    assert!(first.stderr.contains("needing review"), "{}", first.stderr);
    let post = s.show(&id);
    assert_eq!(post["status"], "needs_review", "{post}");
    if let PublishMode::PublishThenStatus(_) = mode {
        // The error page echoed the token; the stored summary keeps the status and the
        // page's size, never its text.
        let error = post["error"].as_str().unwrap();
        assert!(
            error.contains("HTTP 500") && error.contains("not kept"),
            "{error}"
        );
    }
    assert_eq!(post["reservations"][0]["state"], "reserved");
    let container = post["intents"][0]["platform_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        threads_fake.with(|f| f.container_state(&container)),
        Some("PUBLISHED"),
        "the fake published it although the answer was lost"
    );
    let channel = s.channel("threads-main");
    assert_eq!(channel["paused"], true, "{channel}");
    assert!(
        channel["pause_reason"]
            .as_str()
            .unwrap()
            .contains(&format!("post {id}")),
        "{channel}"
    );

    // The next pass reconciles, although the channel is paused.
    let second = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(second["reconciled"][0]["status"], "posted", "{second}");
    assert_eq!(second["published"], serde_json::json!([]), "{second}");
    let post = s.show(&id);
    assert_eq!(post["status"], "posted", "{post}");
    assert!(post["posted_at"].is_string(), "{post}");
    assert_eq!(post["reservations"][0]["state"], "committed");
    assert_eq!(post["intents"].as_array().unwrap().len(), 1);
    let settled = moved_to(&post, "posted");
    assert_eq!(settled["from"], "needs_review");
    assert_eq!(settled["actor"], "reconciler");
    let note = settled["note"].as_str().unwrap();
    assert!(note.contains(&container), "{note}");
    assert!(note.contains("PUBLISHED"), "{note}");

    // Settled for good: later passes publish nothing.
    s.ok(&["dispatch", "--once"]);
    assert_eq!(threads_fake.with(|f| f.published()), 1);
    assert_eq!(
        receiver.events().await,
        ["needs_review", "paused", "published"]
    );

    s.assert_canary_nowhere(&[&threads_fake], &receiver).await;
}

#[tokio::test]
async fn a_threads_publish_answered_with_500_needs_review_and_is_settled_without_a_second_publish()
{
    an_ambiguous_threads_publish_is_settled_from_the_container(PublishMode::PublishThenStatus(500))
        .await;
}

#[tokio::test]
async fn a_threads_publish_answered_after_the_timeout_needs_review_and_is_settled_without_a_second_publish()
 {
    // The request timeout is 1s; the answer comes after 3s.
    an_ambiguous_threads_publish_is_settled_from_the_container(PublishMode::PublishThenDelay(
        Duration::from_secs(3),
    ))
    .await;
}

#[tokio::test]
async fn a_token_file_readable_by_others_stops_everything_before_a_byte_is_sent() {
    let canary = canary();
    let threads_fake = graph_fake(Flavour::Threads, &canary, Expect::NONE, |_| {}).await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[threads(&threads_fake)], &receiver);
    let id = s.approved("threads-main", TEXT, &[]);
    let token_file = s.token_file("threads-main");
    chmod(&token_file, 0o644);

    let run = s.run(&["dispatch", "--once"]);
    let refusal: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("airlock:"))
        .collect();
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert_eq!(refusal.len(), 1, "one line: {}", run.stderr);
    assert!(
        refusal[0].contains(&token_file.display().to_string()),
        "{}",
        refusal[0]
    );
    assert!(refusal[0].contains("0644"), "{}", refusal[0]);
    // Without trace logging the refusal is all there is on stderr.
    let quiet = finish(s.ws.command(&["dispatch", "--once"]).output().unwrap());
    assert_refused(&quiet, "0644");

    let doctor = s.run(&["doctor"]);
    assert_ne!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    let fail = doctor
        .stdout
        .lines()
        .find(|l| l.starts_with("FAIL"))
        .unwrap_or_else(|| panic!("no FAIL line: {}", doctor.stdout));
    assert!(
        fail.contains(&token_file.display().to_string()) && fail.contains("0644"),
        "{fail}"
    );

    assert_eq!(s.show(&id)["status"], "approved");
    assert!(threads_fake.requests().await.is_empty());
    assert!(receiver.requests().await.is_empty());
    s.assert_canary_nowhere(&[&threads_fake], &receiver).await;
}

#[tokio::test]
async fn doctor_refuses_loose_symlinked_or_non_file_credentials_and_checks_the_account_online() {
    let canary = canary();
    let expect = Expect {
        identity: 2,
        ..Expect::NONE
    };
    let threads_fake = graph_fake(Flavour::Threads, &canary, expect, |_| {}).await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[threads(&threads_fake)], &receiver);
    let token_file = s.token_file("threads-main");
    let shown = token_file.display().to_string();
    // A symlink's target lives outside the workspace, like a shared secrets directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let real = elsewhere.path().join("real.token");
    std::fs::write(&real, &canary).unwrap();
    chmod(&real, 0o600);

    let doctor_fails = |what: &str, needle: &str| {
        let doctor = s.run(&["doctor"]);
        assert_ne!(doctor.code, 0, "{what}: {}{}", doctor.stdout, doctor.stderr);
        let fail = doctor
            .stdout
            .lines()
            .find(|l| l.starts_with("FAIL"))
            .unwrap_or_else(|| panic!("{what}: no FAIL line: {}", doctor.stdout));
        assert!(fail.contains(&shown), "{what}: {fail}");
        assert!(fail.contains(needle), "{what}: {fail}");
    };
    for mode in [0o644, 0o640] {
        chmod(&token_file, mode);
        doctor_fails(&format!("mode {mode:o}"), &format!("{mode:04o}"));
    }
    std::fs::remove_file(&token_file).unwrap();
    std::os::unix::fs::symlink(&real, &token_file).unwrap();
    doctor_fails("a symlink", "symlink");
    std::fs::remove_file(&token_file).unwrap();
    std::fs::create_dir(&token_file).unwrap();
    chmod(&token_file, 0o700);
    doctor_fails("a directory", "directory");

    std::fs::remove_dir(&token_file).unwrap();
    std::fs::write(&token_file, &canary).unwrap();
    chmod(&token_file, 0o600);
    let doctor = s.ok(&["doctor"]);
    assert!(
        doctor
            .stdout
            .lines()
            .any(|l| l.starts_with("ok") && l.contains(&shown)),
        "{}",
        doctor.stdout
    );
    assert!(!doctor.stdout.contains("FAIL"), "{}", doctor.stdout);

    let online = s.ok(&["doctor", "--online"]);
    assert!(
        online
            .stdout
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("\"inn_cats\"")),
        "{}",
        online.stdout
    );
    threads_fake.with(|f| f.username = "someone_else".into());
    let online = s.run(&["doctor", "--online"]);
    assert_eq!(online.code, 1, "{}{}", online.stdout, online.stderr);
    let fail = online
        .stdout
        .lines()
        .find(|l| l.starts_with("FAIL"))
        .unwrap_or_else(|| panic!("no FAIL line: {}", online.stdout));
    assert!(
        fail.contains("someone_else") && fail.contains("inn_cats"),
        "{fail}"
    );

    s.assert_canary_nowhere(&[&threads_fake], &receiver).await;
}

#[tokio::test]
async fn a_token_of_another_account_creates_nothing_and_pauses_the_channel_naming_both() {
    let canary = canary();
    let expect = Expect {
        identity: 1,
        ..Expect::NONE
    };
    let threads_fake = graph_fake(Flavour::Threads, &canary, expect, |f| {
        f.username = "someone_else".into();
    })
    .await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[threads(&threads_fake)], &receiver);
    let id = s.approved("threads-main", TEXT, &[]);

    // Not a publish that failed or needs review: the pass itself succeeds, the post is held.
    let run = s.ok(&["dispatch", "--once"]);
    assert!(run.stdout.contains("held (paused)"), "{}", run.stdout);
    let post = s.show(&id);
    assert_eq!(post["status"], "approved", "{post}");
    assert_eq!(post["attempts"], 0, "not an attempt: {post}");
    assert!(post["intents"].as_array().unwrap().is_empty(), "{post}");
    assert!(
        post["reservations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] == "released"),
        "{post}"
    );
    let back = moved_to(&post, "approved");
    assert_eq!(back["from"], "posting");
    let channel = s.channel("threads-main");
    assert_eq!(channel["paused"], true, "{channel}");
    let reason = channel["pause_reason"].as_str().unwrap();
    assert!(
        reason.contains("someone_else") && reason.contains("inn_cats"),
        "{reason}"
    );

    // Paused: the next pass does not even ask who the token belongs to.
    s.ok(&["dispatch", "--once"]);
    assert_eq!(s.show(&id)["status"], "approved");
    assert_eq!(receiver.events().await, ["paused"]);
    s.assert_canary_nowhere(&[&threads_fake], &receiver).await;
}

/// The token expires when `route` is first called: the post fails and the channel pauses.
async fn an_expired_token_fails_the_post_and_pauses_the_channel(route: Route, expect: Expect) {
    let canary = canary();
    let threads_fake = graph_fake(Flavour::Threads, &canary, expect, |f| {
        f.expire_at = Some(route);
    })
    .await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[threads(&threads_fake)], &receiver);
    let id = s.approved("threads-main", TEXT, &[]);

    let run = s.run(&["dispatch", "--once"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let post = s.show(&id);
    assert_eq!(post["status"], "failed", "{post}");
    let error = post["error"].as_str().unwrap();
    assert!(error.contains("190"), "{error}");
    let channel = s.channel("threads-main");
    assert_eq!(channel["paused"], true, "{channel}");
    assert!(
        channel["pause_reason"]
            .as_str()
            .unwrap()
            .contains("credential"),
        "{channel}"
    );
    assert_eq!(threads_fake.with(|f| f.published()), 0);

    // Failed is final until a person requeues it; the paused channel sends nothing.
    s.ok(&["dispatch", "--once"]);
    assert_eq!(s.show(&id)["status"], "failed");
    assert_eq!(receiver.events().await, ["failed", "paused"]);
    s.assert_canary_nowhere(&[&threads_fake], &receiver).await;
}

#[tokio::test]
async fn a_token_expired_at_container_creation_fails_the_post_and_pauses_the_channel() {
    let expect = Expect {
        identity: 1,
        limit: 1,
        create: 1,
        ..Expect::NONE
    };
    an_expired_token_fails_the_post_and_pauses_the_channel(Route::Create, expect).await;
}

#[tokio::test]
async fn a_token_expired_at_publish_fails_the_post_and_pauses_the_channel() {
    let expect = Expect {
        media_read: 0,
        ..Expect::ONE_POST
    };
    an_expired_token_fails_the_post_and_pauses_the_channel(Route::Publish, expect).await;
}

#[tokio::test]
async fn a_reached_platform_limit_sends_nothing_and_the_post_waits_for_a_later_pass() {
    let canary = canary();
    let expect = Expect {
        identity: 2,
        limit: 2,
        ..Expect::ONE_POST
    };
    let threads_fake = graph_fake(Flavour::Threads, &canary, expect, |f| {
        f.quota_total = 5;
        f.fill_quota();
    })
    .await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[threads(&threads_fake)], &receiver);
    let id = s.approved("threads-main", TEXT, &[]);

    let run = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(run["published"][0]["result"], "retrying", "{run}");
    let post = s.show(&id);
    assert_eq!(post["status"], "approved", "{post}");
    let not_before = chrono::DateTime::parse_from_rfc3339(post["not_before"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert!(
        not_before > chrono::Utc::now() + chrono::Duration::minutes(30),
        "{post}"
    );
    let error = post["error"].as_str().unwrap();
    assert!(error.contains("publishing limit"), "{error}");
    assert!(
        post["reservations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] == "released"),
        "{post}"
    );
    assert_eq!(s.channel("threads-main")["paused"], false);

    // Not before its time: the next pass leaves it alone.
    let again = s.ok(&["dispatch", "--once"]);
    assert!(again.stdout.contains("nothing due"), "{}", again.stdout);
    assert!(hits(&threads_fake, "POST", "/threads").await.is_empty());
    assert!(
        hits(&threads_fake, "POST", "/threads_publish")
            .await
            .is_empty()
    );

    // Later (the clock cannot be moved inside the binary, so the wait is written into
    // the ledger) the platform has room again and the post goes out once.
    threads_fake.with(|f| f.quota_total = 250);
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", s.ws.db().display()))
        .await
        .unwrap();
    sqlx::query("UPDATE posts SET not_before = '2000-01-01T00:00:00.000Z' WHERE id = ?")
        .bind(id.parse::<i64>().unwrap())
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    s.ok(&["dispatch", "--once"]);
    let post = s.show(&id);
    assert_eq!(post["status"], "posted", "{post}");
    assert!(post["permalink"].is_string(), "{post}");
    assert_eq!(receiver.events().await, ["published"]);
    s.assert_canary_nowhere(&[&threads_fake], &receiver).await;
}

#[tokio::test]
async fn an_instagram_carousel_of_three_images_and_a_first_comment_goes_out_once() {
    let canary = canary();
    let fake = graph_fake(Flavour::Instagram, &canary, Expect::ANY, |_| {}).await;
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &[instagram(&fake)], &receiver);
    let images: Vec<String> = (1..=3)
        .map(|n| format!("https://inn.example/wp-content/uploads/cat-{n}.jpg|Cat {n}"))
        .collect();
    let mut args = vec![
        "post",
        "add",
        "--channel",
        "ig-main",
        "--text",
        "Three cats, one veranda.",
        "--first-comment",
        "Which one is your favourite?",
    ];
    for image in &images {
        args.extend(["--media", image]);
    }
    let id = s.ok(&args).stdout.trim().to_owned();
    s.ok(&["post", "approve", &id]);

    let report = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(report["published"][0]["status"], "posted", "{report}");
    let post = s.show(&id);
    assert_eq!(post["status"], "posted", "{post}");
    let media_id = post["platform_post_id"].as_str().unwrap().to_owned();
    assert!(post["permalink"].is_string(), "one permalink: {post}");
    fake.with(|f| {
        assert_eq!(f.published(), 1, "one carousel");
        let container = f.media_container(&media_id).unwrap();
        assert_eq!(f.children(&container).len(), 3, "of three images");
        let comments = f.own_comments();
        assert_eq!(comments.len(), 1, "one first comment");
        assert_eq!(comments[0].on, media_id);
        assert_eq!(comments[0].text, "Which one is your favourite?");
    });
    assert_eq!(
        post["intents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["part"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2],
        "the carousel, then its comment: {post}"
    );
    let again = s.ok(&["dispatch", "--once"]);
    assert!(again.stdout.contains("nothing due"), "{}", again.stdout);
    assert_eq!(receiver.events().await, ["published"]);
    s.assert_canary_nowhere(&[&fake], &receiver).await;
}
