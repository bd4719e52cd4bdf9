//! Bluesky, Mastodon and X through the real `airlock` binary, as a new user would try
//! them: a config with each channel's `base_url` pointed at a stateful fake
//! (`airlock_testkit::fake::{bluesky, mastodon, x}`), a webhook notification sink, and
//! `airlock dispatch --once` from the command line.
//!
//! Every scenario gives the fakes a fresh canary credential (`CANARY-tok-7c1d-<random>`:
//! the Bluesky app password, the Mastodon token, the X access and refresh tokens; the
//! fakes derive the session and rotated tokens they hand out from it) and runs every
//! command with `AIRLOCK_LOG=trace`; at the end the canary is searched for in everything
//! airlock wrote or sent: command output, every file beside the config except the token
//! files, the notifications, and the requests the fakes received, where it may travel only
//! in `Authorization` — and, where the protocol puts it there, in the body of the
//! platform's own login or token endpoint (`createSession`, `POST /2/oauth2/token`).

use std::hash::{BuildHasher, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;
use airlock_testkit::fake::receiver::Receiver;
use airlock_testkit::fake::{bluesky, mastodon, x};

fn canary() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    format!("CANARY-tok-7c1d-{:016x}", hasher.finish())
}

/// The three fakes of a session, any of them absent.
#[derive(Default)]
struct Fakes {
    bluesky: Option<bluesky::BlueskyFake>,
    mastodon: Option<mastodon::MastodonFake>,
    x: Option<x::XFake>,
}

/// A workspace with channels `bsky`, `masto` and `x-main` for the fakes present.
struct Session {
    ws: Workspace,
    canary: String,
    token_files: Vec<PathBuf>,
    transcript: Mutex<Vec<String>>,
}

const TEXT: &str = "Mochi naps in the sun. Please respect the cats' own pace.";

impl Session {
    fn new(
        canary: &str,
        fakes: &Fakes,
        receiver: &Receiver,
        x_extra: &str,
        x_token: &str,
    ) -> Session {
        let mut config = format!(
            r#"timezone = "Asia/Tokyo"
database = "sqlite://airlock.db"

[dispatcher]
stale_after = "1m"
max_attempts = 3

[quota]
window = "60m"
window_limit = 100

[notify.ops]
kind = "webhook"
url = "{}"
events = ["published", "failed", "needs_review", "paused", "quota_deferred"]
"#,
            receiver.url()
        );
        let mut files = Vec::new();
        if let Some(fake) = &fakes.bluesky {
            config.push_str(&format!(
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
            ));
            files.push(("bsky", canary.to_owned()));
        }
        if let Some(fake) = &fakes.mastodon {
            config.push_str(&format!(
                r#"
[channels.masto]
kind = "mastodon"
token_file = "credentials/masto.token"
account = "{}"
base_url = "{}"
visibility = "unlisted"
request_timeout = "1s"
daily_limit = 10
"#,
                mastodon::ACCT,
                fake.uri()
            ));
            files.push(("masto", canary.to_owned()));
        }
        if let Some(fake) = &fakes.x {
            config.push_str(&format!(
                r#"
[channels.x-main]
kind = "x"
token_file = "credentials/x-main.token"
account = "{}"
base_url = "{}"
request_timeout = "1s"
daily_limit = 10
{x_extra}
"#,
                x::USERNAME,
                fake.uri()
            ));
            files.push(("x-main", x_token.to_owned()));
        }
        let ws = Workspace::new(&config);
        std::fs::create_dir(ws.path("credentials")).unwrap();
        let token_files = files
            .into_iter()
            .map(|(channel, secret)| {
                let file = ws.path(&format!("credentials/{channel}.token"));
                std::fs::write(&file, format!("{secret}\n")).unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
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

    fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code, 0,
            "airlock {args:?} failed: {}{}",
            run.stdout, run.stderr
        );
        run
    }

    fn approved(&self, channel: &str, text: &str) -> String {
        let id = self
            .ok(&["post", "add", "--channel", channel, "--text", text])
            .stdout
            .trim()
            .to_owned();
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

    /// Moves the post's intents `minutes` into the past: the clock cannot be moved inside
    /// the binary, so the time that passed is written into the ledger.
    async fn age_intents(&self, id: &str, minutes: i64) {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", self.ws.db().display()))
            .await
            .unwrap();
        let at = (chrono::Utc::now() - chrono::Duration::minutes(minutes))
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        sqlx::query("UPDATE intents SET created_at = ? WHERE post_id = ?")
            .bind(at)
            .bind(id.parse::<i64>().unwrap())
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    }

    /// The canary appears nowhere airlock wrote or sent anything.
    async fn assert_canary_nowhere(&self, fakes: &Fakes, receiver: &Receiver) {
        let suffix = self.canary.rsplit('-').next().unwrap().to_owned();
        let needles = [self.canary.clone(), "CANARY-tok".to_owned(), suffix];
        let leak = |haystack: &[u8]| {
            needles
                .iter()
                .find(|n| haystack.windows(n.len()).any(|w| w == n.as_bytes()))
                .cloned()
        };
        for entry in self.transcript.lock().unwrap().iter() {
            if let Some(needle) = leak(entry.as_bytes()) {
                panic!("the token ({needle}) leaked into command output:\n{entry}");
            }
        }
        assert!(self.ws.db().exists());
        let mut searched = 0;
        for file in files_under(self.ws.dir.path()) {
            if self.token_files.contains(&file) {
                continue;
            }
            searched += 1;
            if let Some(needle) = leak(&std::fs::read(&file).unwrap()) {
                panic!("the token ({needle}) leaked into {}", file.display());
            }
        }
        assert!(searched >= 2, "only {searched} files searched");
        for request in receiver.requests().await {
            assert!(leak(request.url.as_str().as_bytes()).is_none());
            assert!(leak(&request.body).is_none(), "token in a notification");
            for (name, value) in &request.headers {
                assert!(
                    leak(value.as_bytes()).is_none(),
                    "token in notification header {name}"
                );
            }
        }
        let mut requests = Vec::new();
        if let Some(fake) = &fakes.bluesky {
            requests.extend(
                fake.requests()
                    .await
                    .into_iter()
                    .map(|r| (r, "/xrpc/com.atproto.server.createSession")),
            );
        }
        if let Some(fake) = &fakes.mastodon {
            requests.extend(fake.requests().await.into_iter().map(|r| (r, "")));
        }
        if let Some(fake) = &fakes.x {
            requests.extend(
                fake.requests()
                    .await
                    .into_iter()
                    .map(|r| (r, "/2/oauth2/token")),
            );
        }
        assert!(!requests.is_empty());
        for (request, login) in requests {
            assert!(
                leak(request.url.as_str().as_bytes()).is_none(),
                "the token travelled in a URL: {}",
                request.url
            );
            if request.url.path() != login {
                assert!(
                    leak(&request.body).is_none(),
                    "the token travelled in the body of {}",
                    request.url
                );
            }
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

fn moved_to<'a>(post: &'a Value, to: &str) -> &'a Value {
    post["events"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["kind"] == "status" && e["to"] == to)
        .unwrap_or_else(|| panic!("no move to {to}: {post}"))
}

async fn bluesky_fake(
    canary: &str,
    expect: bluesky::Expect,
    configure: impl FnOnce(&mut bluesky::State),
) -> bluesky::BlueskyFake {
    let canary = canary.to_owned();
    bluesky::BlueskyFake::start_with(expect, move |s| {
        s.password = canary;
        configure(s);
    })
    .await
}

async fn mastodon_fake(
    canary: &str,
    expect: mastodon::Expect,
    configure: impl FnOnce(&mut mastodon::State),
) -> mastodon::MastodonFake {
    let canary = canary.to_owned();
    mastodon::MastodonFake::start_with(expect, move |s| {
        s.token = canary;
        configure(s);
    })
    .await
}

async fn x_fake(
    canary: &str,
    expect: x::Expect,
    configure: impl FnOnce(&mut x::State),
) -> x::XFake {
    let canary = canary.to_owned();
    x::XFake::start_with(expect, move |s| {
        s.access_token = canary;
        configure(s);
    })
    .await
}

#[tokio::test]
async fn one_post_to_each_of_bluesky_mastodon_and_x_goes_out_once_with_its_permalink() {
    let canary = canary();
    let fakes = Fakes {
        bluesky: Some(bluesky_fake(&canary, bluesky::Expect::ONE_POST, |_| {}).await),
        mastodon: Some(mastodon_fake(&canary, mastodon::Expect::ONE_POST, |_| {}).await),
        x: Some(x_fake(&canary, x::Expect::ONE_POST, |_| {}).await),
    };
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &fakes, &receiver, "", &canary);
    let ids = [
        s.approved("bsky", TEXT),
        s.approved("masto", TEXT),
        s.approved("x-main", TEXT),
    ];

    let report = s.ok(&["dispatch", "--once", "--json"]).json();
    let published = report["published"].as_array().unwrap();
    assert_eq!(published.len(), 3, "{report}");
    assert!(
        published.iter().all(|p| p["status"] == "posted"),
        "{report}"
    );

    let bsky = s.show(&ids[0]);
    let rkey = bsky["intents"][0]["platform_ref"].as_str().unwrap();
    assert_eq!(
        bsky["permalink"],
        format!("https://bsky.app/profile/{}/post/{rkey}", bluesky::HANDLE)
    );
    assert!(bsky["verified_at"].is_string(), "{bsky}");
    let masto = s.show(&ids[1]);
    let status = masto["platform_post_id"].as_str().unwrap();
    let mastodon_uri = fakes.mastodon.as_ref().unwrap().uri();
    assert_eq!(
        masto["permalink"],
        format!("{mastodon_uri}/@{}/{status}", mastodon::ACCT)
    );
    let xpost = s.show(&ids[2]);
    let tweet = xpost["platform_post_id"].as_str().unwrap();
    assert_eq!(
        xpost["permalink"],
        format!("https://x.com/{}/status/{tweet}", x::USERNAME)
    );
    for post in [&bsky, &masto, &xpost] {
        assert_eq!(post["reservations"][0]["state"], "committed", "{post}");
    }

    let again = s.ok(&["dispatch", "--once"]);
    assert!(again.stdout.contains("nothing due"), "{}", again.stdout);
    assert_eq!(fakes.bluesky.as_ref().unwrap().with(|f| f.posts()), 1);
    assert_eq!(fakes.mastodon.as_ref().unwrap().with(|f| f.posts()), 1);
    assert_eq!(fakes.x.as_ref().unwrap().with(|f| f.posts()), 1);
    assert_eq!(
        fakes
            .mastodon
            .as_ref()
            .unwrap()
            .with(|f| f.statuses[0].visibility.clone()),
        "unlisted"
    );
    assert_eq!(
        receiver.events().await,
        ["published", "published", "published"]
    );
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[tokio::test]
async fn a_bluesky_create_whose_answer_never_comes_ends_posted_with_one_record() {
    let canary = canary();
    let expect = bluesky::Expect {
        create_session: 1,
        get_session: 1,
        create: 1,
        get_record: 1,
        ..bluesky::Expect::NONE
    };
    let fakes = Fakes {
        bluesky: Some(
            bluesky_fake(&canary, expect, |f| {
                f.create_mode = bluesky::CreateMode::CreateThenDelay(Duration::from_secs(3));
            })
            .await,
        ),
        ..Fakes::default()
    };
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &fakes, &receiver, "", &canary);
    let id = s.approved("bsky", TEXT);

    let first = s.run(&["dispatch", "--once"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    let post = s.show(&id);
    assert_eq!(post["status"], "needs_review", "{post}");
    assert_eq!(s.channel("bsky")["paused"], true);
    let rkey = post["intents"][0]["platform_ref"]
        .as_str()
        .unwrap()
        .to_owned();

    let second = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(second["reconciled"][0]["status"], "posted", "{second}");
    let post = s.show(&id);
    assert_eq!(post["status"], "posted", "{post}");
    assert!(
        post["permalink"].as_str().unwrap().ends_with(&rkey),
        "{post}"
    );
    let note = moved_to(&post, "posted")["note"].as_str().unwrap();
    assert!(note.contains(&rkey), "{note}");
    assert_eq!(post["reservations"][0]["state"], "committed");
    s.ok(&["dispatch", "--once"]);
    assert_eq!(fakes.bluesky.as_ref().unwrap().with(|f| f.posts()), 1);
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[tokio::test]
async fn a_mastodon_create_whose_answer_never_comes_ends_posted_with_one_status() {
    let canary = canary();
    let expect = mastodon::Expect {
        // The publish's account check, and the re-send's.
        identity: 2,
        instance: 1,
        create: 2,
        ..mastodon::Expect::NONE
    };
    let fakes = Fakes {
        mastodon: Some(
            mastodon_fake(&canary, expect, |f| {
                f.create_mode = mastodon::CreateMode::CreateThenDelay(Duration::from_secs(3));
            })
            .await,
        ),
        ..Fakes::default()
    };
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &fakes, &receiver, "", &canary);
    let id = s.approved("masto", TEXT);

    let first = s.run(&["dispatch", "--once"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    assert_eq!(s.show(&id)["status"], "needs_review");
    // Right away the first request could still be processing: nothing is sent.
    let soon = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(soon["reconciled"], serde_json::json!([]), "{soon}");
    assert_eq!(s.show(&id)["status"], "needs_review");

    // Ten minutes later, well inside the hour the instance keeps the key.
    fakes
        .mastodon
        .as_ref()
        .unwrap()
        .with(|f| f.create_mode = mastodon::CreateMode::Normal);
    s.age_intents(&id, 10).await;
    let later = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(later["reconciled"][0]["status"], "posted", "{later}");
    let post = s.show(&id);
    assert_eq!(post["status"], "posted", "{post}");
    let original = fakes
        .mastodon
        .as_ref()
        .unwrap()
        .with(|f| f.statuses[0].id.clone());
    assert_eq!(post["platform_post_id"], original);
    let note = moved_to(&post, "posted")["note"].as_str().unwrap();
    assert!(note.contains("Idempotency-Key"), "{note}");
    assert_eq!(fakes.mastodon.as_ref().unwrap().with(|f| f.posts()), 1);
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[tokio::test]
async fn x_duplicate_content_never_marks_a_post_posted_and_a_lost_answer_waits_for_a_person() {
    let canary = canary();
    // Two passes publish, each a process of its own that checks the account once.
    let expect = x::Expect {
        identity: 2,
        create: 2,
        ..x::Expect::NONE
    };
    let fakes = Fakes {
        x: Some(
            x_fake(&canary, expect, |f| {
                f.tweets.push(x::Tweet {
                    id: "1866000000000000001".into(),
                    author: x::USERNAME.into(),
                    text: TEXT.into(),
                });
            })
            .await,
        ),
        ..Fakes::default()
    };
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &fakes, &receiver, "", &canary);
    let dup = s.approved("x-main", TEXT);
    let run = s.run(&["dispatch", "--once"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let post = s.show(&dup);
    assert_eq!(post["status"], "failed", "{post}");
    assert!(post["platform_post_id"].is_null(), "{post}");
    assert!(
        post["error"]
            .as_str()
            .unwrap()
            .contains("duplicate content"),
        "{post}"
    );
    assert_eq!(
        s.channel("x-main")["paused"],
        false,
        "not a credential problem"
    );

    // A create whose answer never comes: X has no key, so a person decides.
    fakes
        .x
        .as_ref()
        .unwrap()
        .with(|f| f.create_mode = x::CreateMode::CreateThenDelay(Duration::from_secs(3)));
    let lost = s.approved(
        "x-main",
        "Mochi naps in the shade. Please respect the cats' own pace.",
    );
    let run = s.run(&["dispatch", "--once"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(s.show(&lost)["status"], "needs_review");
    let again = s.ok(&["dispatch", "--once", "--json"]).json();
    assert_eq!(again["reconciled"], serde_json::json!([]), "{again}");
    assert_eq!(s.show(&lost)["status"], "needs_review");
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[tokio::test]
async fn with_a_budget_of_four_cents_the_third_x_post_goes_out_and_the_fourth_is_held_before_any_request()
 {
    let canary = canary();
    let expect = x::Expect {
        identity: 1,
        create: 3,
        read: 3,
        ..x::Expect::NONE
    };
    let fakes = Fakes {
        x: Some(x_fake(&canary, expect, |_| {}).await),
        ..Fakes::default()
    };
    let receiver = Receiver::start().await;
    let s = Session::new(
        &canary,
        &fakes,
        &receiver,
        "monthly_budget_usd = 0.04",
        &canary,
    );
    let ids: Vec<String> = (1..=4)
        .map(|n| {
            s.approved(
                "x-main",
                &format!("Day {n}: Mochi naps. Please respect the cats' own pace."),
            )
        })
        .collect();

    let report = s.ok(&["dispatch", "--once", "--json"]).json();
    let results: Vec<&str> = report["published"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["result"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        ["posted", "posted", "posted", "deferred"],
        "{report}"
    );
    for id in &ids[..3] {
        assert_eq!(s.show(id)["status"], "posted");
    }
    let held = s.show(&ids[3]);
    assert_eq!(held["status"], "approved", "{held}");
    assert_eq!(held["attempts"], 0);
    assert!(held["intents"].as_array().unwrap().is_empty(), "{held}");
    // Held before its claim: the deferral is an event on the approved post.
    let note = held["events"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| e["kind"] == "quota_deferred")
        .and_then(|e| e["note"].as_str())
        .unwrap_or_else(|| panic!("no deferral: {held}"));
    assert!(
        note.contains("monthly budget") && note.contains("$0.045 of $0.04"),
        "{note}"
    );
    assert_eq!(fakes.x.as_ref().unwrap().with(|f| f.posts()), 3);

    let quota = s.ok(&["quota", "--json"]).json();
    let budget = &quota["channels"][0]["budget"];
    assert_eq!(budget["budget_usd"], 0.04, "{quota}");
    assert_eq!(budget["remaining_usd"], 0.0, "{quota}");
    assert!(budget["next_free_at"].is_string(), "{quota}");
    let text = s.ok(&["quota"]).stdout;
    assert!(text.contains("$0.045 of $0.04 budget spent"), "{text}");
    let publish = s.ws.run(&["post", "publish", &ids[3]]);
    assert_refused(&publish, "monthly budget is spent ($0.045 of $0.04)");
    assert_eq!(fakes.x.as_ref().unwrap().with(|f| f.posts()), 3);
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[tokio::test]
async fn an_expired_x_token_is_refreshed_and_the_rotated_pair_written_back_0600() {
    let canary = canary();
    let expect = x::Expect {
        identity: 1,
        refresh: 1,
        create: 2,
        read: 1,
        upload: 0,
        timeline: 0,
    };
    let fakes = Fakes {
        x: Some(
            x_fake(&canary, expect, |f| {
                f.refresh_token = Some(format!("{}-refresh-0", f.access_token));
                f.expire_token_at = Some(x::Route::Create);
            })
            .await,
        ),
        ..Fakes::default()
    };
    let receiver = Receiver::start().await;
    let file = format!(
        r#"{{"access_token": "{canary}", "refresh_token": "{canary}-refresh-0", "client_id": "{}"}}"#,
        x::CLIENT_ID
    );
    let s = Session::new(&canary, &fakes, &receiver, "", &file);
    let id = s.approved("x-main", TEXT);
    s.ok(&["dispatch", "--once"]);
    assert_eq!(s.show(&id)["status"], "posted");
    let path = s.ws.path("credentials/x-main.token");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["refresh_token"], format!("{canary}-refresh-1"));
    assert_eq!(written["access_token"], format!("{canary}-access-1"));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    s.ok(&["doctor"]);
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[tokio::test]
async fn tokens_of_other_accounts_send_nothing_and_pause_each_channel_and_doctor_names_them() {
    let canary = canary();
    let fakes = Fakes {
        bluesky: Some(
            bluesky_fake(
                &canary,
                // A session per process: the dispatch pass and doctor.
                bluesky::Expect {
                    create_session: 2,
                    get_session: 2,
                    ..bluesky::Expect::NONE
                },
                |f| f.handle = "someone-else.bsky.social".into(),
            )
            .await,
        ),
        mastodon: Some(
            mastodon_fake(
                &canary,
                mastodon::Expect {
                    identity: 2,
                    ..mastodon::Expect::NONE
                },
                |f| f.acct = "someone_else".into(),
            )
            .await,
        ),
        x: Some(
            x_fake(
                &canary,
                x::Expect {
                    identity: 2,
                    ..x::Expect::NONE
                },
                |f| f.username = "someone_else".into(),
            )
            .await,
        ),
    };
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &fakes, &receiver, "", &canary);
    // A session created with the account's email names whichever handle it has now.
    let config = std::fs::read_to_string(s.ws.config()).unwrap().replace(
        "kind = \"bluesky\"",
        "kind = \"bluesky\"\nidentifier = \"cats@inn.example\"",
    );
    std::fs::write(s.ws.config(), config).unwrap();
    fakes
        .bluesky
        .as_ref()
        .unwrap()
        .with(|f| f.email = "cats@inn.example".into());
    let ids = [
        s.approved("bsky", TEXT),
        s.approved("masto", TEXT),
        s.approved("x-main", TEXT),
    ];

    let run = s.ok(&["dispatch", "--once"]);
    assert!(run.stdout.contains("held (paused)"), "{}", run.stdout);
    for (id, channel) in ids.iter().zip(["bsky", "masto", "x-main"]) {
        let post = s.show(id);
        assert_eq!(post["status"], "approved", "{post}");
        assert!(post["intents"].as_array().unwrap().is_empty(), "{post}");
        let reason = s.channel(channel)["pause_reason"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(reason.contains("someone"), "{reason}");
    }
    let doctor = s.run(&["doctor", "--online"]);
    assert_eq!(doctor.code, 1, "{}{}", doctor.stdout, doctor.stderr);
    let fails = doctor
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAIL"))
        .count();
    assert_eq!(fails, 3, "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains("someone-else.bsky.social"),
        "{}",
        doctor.stdout
    );
    assert_eq!(fakes.bluesky.as_ref().unwrap().with(|f| f.posts()), 0);
    assert_eq!(fakes.mastodon.as_ref().unwrap().with(|f| f.posts()), 0);
    assert_eq!(fakes.x.as_ref().unwrap().with(|f| f.posts()), 0);
    s.assert_canary_nowhere(&fakes, &receiver).await;
}

#[test]
fn a_key_of_another_kind_or_a_bad_amount_is_refused_by_its_name() {
    let base = |extra: &str| {
        format!(
            r#"timezone = "UTC"
database = "sqlite://airlock.db"

[channels.masto]
kind = "mastodon"
token_file = "m.token"
account = "inn_cats"
base_url = "https://cats.example"
daily_limit = 3
{extra}
"#
        )
    };
    let ws = Workspace::new(&base("monthly_budget_usd = 5"));
    assert_refused(
        &ws.run(&["channels"]),
        "channels.masto.monthly_budget_usd does not apply to a mastodon channel",
    );
    let ws = Workspace::new(&base("visibility = \"friends\""));
    assert_refused(&ws.run(&["channels"]), "visibility");
    let x = |extra: &str| {
        format!(
            r#"timezone = "UTC"
database = "sqlite://airlock.db"

[channels.x-main]
kind = "x"
token_file = "x.token"
account = "inn_cats"
daily_limit = 3
{extra}
"#
        )
    };
    let ws = Workspace::new(&x("monthly_budget_usd = -1.0"));
    assert_refused(&ws.run(&["channels"]), "channels.x-main.monthly_budget_usd");
    let ws = Workspace::new(&x("post_cost_usd = 0.02"));
    assert_refused(
        &ws.run(&["channels"]),
        "need channels.x-main.monthly_budget_usd",
    );
    let ws = Workspace::new(&x("monthly_budget_usd = 5\nurl_post_cost_usd = 0.0000001"));
    assert_refused(&ws.run(&["channels"]), "channels.x-main.url_post_cost_usd");
    let ws = Workspace::new(&x("identifier = \"cats@inn.example\""));
    assert_refused(
        &ws.run(&["channels"]),
        "channels.x-main.identifier does not apply to a x channel",
    );
}

/// A webhook channel's `url` and a webhook notification sink's `url` are refused at
/// load by the same rule with the same message, naming the key as written.
#[test]
fn a_bad_webhook_url_is_refused_the_same_for_a_channel_and_a_sink() {
    for url in [
        "http://example.com/hook",
        "https://user:hunter2@example.com/hook",
        "ftp://example.com/hook",
    ] {
        let channel = Workspace::new(&sandbox_config(&format!(
            "\n[channels.w]\nkind = \"webhook\"\ndaily_limit = 1\nurl = \"{url}\"\n"
        )))
        .run(&["channels"]);
        let sink = Workspace::new(&sandbox_config(&format!(
            "\n[notify.w]\nkind = \"webhook\"\nurl = \"{url}\"\nevents = [\"published\"]\n"
        )))
        .run(&["channels"]);
        assert_refused(&channel, "channels.w.url: url ");
        assert_refused(&sink, "notify.w.url: url ");
        let after = |run: &Run, key: &str| {
            let at = run.stderr.find(key).expect("the key") + key.len();
            run.stderr[at..].trim_end().to_owned()
        };
        assert_eq!(
            after(&channel, "channels.w.url"),
            after(&sink, "notify.w.url"),
            "{url}"
        );
        assert!(!channel.stderr.contains("hunter2"), "{}", channel.stderr);
    }
}

/// A thread from a Markdown file, drafted and approved through the binary.
fn approved_thread(s: &Session, channel: &str, parts: &[&str]) -> String {
    let file = s.ws.path("thread.md");
    std::fs::write(&file, parts.join("\n---\n")).unwrap();
    let id = s
        .ok(&[
            "post",
            "add",
            "--channel",
            channel,
            "--thread-file",
            file.to_str().unwrap(),
        ])
        .stdout
        .trim()
        .to_owned();
    s.ok(&["post", "approve", &id]);
    id
}

#[tokio::test]
async fn a_bluesky_thread_whose_part_3_answer_is_lost_is_settled_by_its_key_and_goes_on_once() {
    let canary = canary();
    let fakes = Fakes {
        bluesky: Some(
            bluesky_fake(&canary, bluesky::Expect::ANY, |f| {
                f.create_mode_of
                    .insert(3, bluesky::CreateMode::CreateThenStatus(500));
            })
            .await,
        ),
        ..Fakes::default()
    };
    let receiver = Receiver::start().await;
    let s = Session::new(&canary, &fakes, &receiver, "", &canary);
    let parts = [
        "Part one of five.",
        "Part two.",
        "Part three.",
        "Part four.",
        "Part five.",
    ];
    let id = approved_thread(&s, "bsky", &parts);

    let first = s.run(&["dispatch", "--once"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    let post = s.show(&id);
    assert_eq!(post["status"], "needs_review", "{post}");
    assert!(
        post["error"].as_str().unwrap().contains("part 3 of 5"),
        "the part in doubt is named: {post}"
    );
    assert_eq!(fakes.bluesky.as_ref().unwrap().with(|f| f.posts()), 3);

    // Reconcile reads part 3's record at its key; the thread goes on from part 4.
    for _ in 0..3 {
        s.run(&["dispatch", "--once"]);
        if s.show(&id)["status"] == "posted" {
            break;
        }
    }
    let post = s.show(&id);
    assert_eq!(post["status"], "posted", "{post}");
    let bsky = fakes.bluesky.as_ref().unwrap();
    let texts = bsky.with(|f| {
        f.records
            .iter()
            .map(|r| r.text().to_owned())
            .collect::<Vec<_>>()
    });
    assert_eq!(texts, parts, "each part once, in order");
    bsky.with(|f| {
        let root = f.records[0].strong_ref();
        for pair in f.records.windows(2) {
            assert_eq!(
                pair[1].parent(),
                Some(pair[0].strong_ref()),
                "a chain of replies"
            );
            assert_eq!(pair[1].root(), Some(root.clone()));
        }
    });
    let intents = post["intents"].as_array().unwrap();
    assert_eq!(
        intents
            .iter()
            .map(|i| i["part"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3, 4, 5],
        "{post}"
    );
    assert_eq!(
        post["reservations"].as_array().unwrap().len(),
        1,
        "one publish counted"
    );
    s.assert_canary_nowhere(&fakes, &receiver).await;
}
