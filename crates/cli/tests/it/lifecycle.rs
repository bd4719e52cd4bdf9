//! The post lifecycle from the command line: exit codes, JSON shapes, refusals.

use crate::support::*;

/// Media at example addresses, which are not fetched: the hash stays the spec's.
const UNCHECKED_MEDIA: &str = "\n[media]\ncheck = false\n";

const POST_FIELDS: [&str; 20] = [
    "id",
    "channel",
    "status",
    "title",
    "text",
    "media",
    "link",
    "scheduled_at",
    "content_hash",
    "approved_hash",
    "generation",
    "attempts",
    "platform_post_id",
    "permalink",
    "posted_at",
    "verified_at",
    "error",
    "test",
    "created_at",
    "updated_at",
];

fn add(ws: &Workspace, text: &str) -> i64 {
    let run = ws.ok(&["post", "add", "--channel", "sandbox", "--text", text]);
    run.stdout.trim().parse().expect("post add prints the id")
}

#[test]
fn a_draft_is_added_edited_approved_unapproved_by_an_edit_and_rejected() {
    let ws = Workspace::new(&sandbox_config(UNCHECKED_MEDIA));
    let id = add(&ws, "Mochi naps. #cats");
    let id_s = id.to_string();

    let post = ws
        .ok(&[
            "post",
            "edit",
            &id_s,
            "--text",
            "Mochi naps again. #cats",
            "--media",
            "https://inn.example/m.jpg|Mochi asleep",
            "--json",
        ])
        .json();
    assert_eq!(post["status"], "draft");
    for field in POST_FIELDS {
        assert!(post.get(field).is_some(), "post JSON lacks {field}: {post}");
    }
    assert_eq!(post["media"][0]["alt"], "Mochi asleep");

    let approved = ws.ok(&["post", "approve", &id_s, "--json"]).json();
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["approved_hash"], approved["content_hash"]);

    let edited = ws
        .ok(&[
            "post",
            "edit",
            &id_s,
            "--text",
            "Mochi woke up. #cats",
            "--json",
        ])
        .json();
    assert_eq!(edited["status"], "draft");
    assert_eq!(edited["approved_hash"], serde_json::Value::Null);

    let rejected = ws
        .ok(&[
            "post",
            "reject",
            &id_s,
            "--reason",
            "needs a photo credit",
            "--json",
        ])
        .json();
    assert_eq!(rejected["status"], "draft");
    assert!(rejected["error"].as_str().unwrap().contains("photo credit"));

    let shown = ws.ok(&["post", "show", &id_s, "--json"]).json();
    let events = shown["events"].as_array().unwrap();
    for event in events {
        for key in ["at", "from", "to", "actor", "note"] {
            assert!(event.get(key).is_some(), "event lacks {key}: {event}");
        }
    }
    let moves: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["kind"] == "status")
        .map(|e| (e["from"].to_string(), e["to"].to_string()))
        .collect();
    assert_eq!(
        moves,
        [
            ("null".into(), "\"draft\"".into()),
            ("\"draft\"".into(), "\"approved\"".into()),
            ("\"approved\"".into(), "\"draft\"".into()),
        ]
    );
    assert!(events.iter().all(|e| e["actor"] == "cli"));
}

#[test]
fn the_approved_hash_is_the_spec_hash_recomputed_outside_airlock() {
    let ws = Workspace::new(&sandbox_config(UNCHECKED_MEDIA));
    let id = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "猫の宿 🐈 \"quoted\" #cats",
            "--title",
            "Inn",
            "--link",
            "https://inn.example/",
            "--media",
            "https://inn.example/a.jpg|A cat",
            "--media",
            "https://inn.example/b.jpg",
            "--json",
        ])
        .json()["id"]
        .clone();
    let post = ws
        .ok(&["post", "approve", &id.to_string(), "--json"])
        .json();
    let script = r#"
import hashlib, json, sys
p = json.load(sys.stdin)
doc = {"channel": p["channel"], "title": p["title"], "text": p["text"],
       "media": [{"url": m["url"], "alt": m["alt"]} for m in p["media"]],
       "link": p["link"], "source": None}
canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
print(hashlib.sha256(canon.encode("utf-8")).hexdigest())
"#;
    let mut python = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(post.to_string().as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    let recomputed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(post["approved_hash"].as_str().unwrap(), recomputed.trim());
}

#[test]
fn policy_violations_are_refused_at_approval_with_exit_2() {
    let ws = Workspace::new(&sandbox_config(""));
    let id = add(&ws, "This is guaranteed, the cats say").to_string();
    let run = ws.run(&["post", "approve", &id]);
    assert_refused(&run, "content policy");
    assert!(
        run.stderr.contains("guaranteed") && run.stderr.contains("#cats"),
        "{}",
        run.stderr
    );
    let post = ws.ok(&["post", "show", &id, "--json"]).json();
    assert_eq!(post["status"], "draft");
}

#[test]
fn a_draft_longer_than_its_channel_allows_is_refused_when_added_naming_the_limit() {
    let ws = Workspace::new(&sandbox_config(""));
    let run = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text",
        "This is far too long for the forty character limit #cats",
    ]);
    assert_refused(&run, "allows at most 40");
    assert!(run.stderr.contains("channel sandbox"), "{}", run.stderr);
    let listed = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(listed, serde_json::json!([]), "nothing written");
}

#[test]
fn bad_input_is_refused_with_one_line_and_nothing_written() {
    let ws = Workspace::new(&sandbox_config(""));
    assert_refused(
        &ws.run(&["post", "add", "--channel", "dogs", "--text", "x"]),
        "unknown channel \"dogs\"",
    );
    assert_refused(
        &ws.run(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "x",
            "--at",
            "tomorrow",
        ]),
        "RFC 3339",
    );
    // A typo in the year does not mean "now"; saying so does.
    let year_ago = (chrono::Utc::now() - chrono::Duration::days(365)).to_rfc3339();
    let typo = [
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text",
        "x",
        "--at",
        &year_ago,
    ];
    assert_refused(&ws.run(&typo), "in the past");
    assert_refused(
        &ws.run(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text-file",
            "/nonexistent/post.txt",
        ]),
        "/nonexistent/post.txt",
    );
    assert_refused(
        &ws.run(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "x",
            "--media",
            "not-a-url",
        ]),
        "media url",
    );
    assert_refused(&ws.run(&["post", "approve", "abc"]), "post id");
    assert_refused(&ws.run(&["post", "approve", "999"]), "not found");
    let listed = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 0, "nothing was written");
    ws.ok(&[&typo[..], &["--allow-past"]].concat());
}

#[test]
fn illegal_transitions_are_refused() {
    let ws = Workspace::new(&sandbox_config(""));
    let id = add(&ws, "hello #cats").to_string();
    assert_refused(&ws.run(&["post", "unapprove", &id]), "only approved posts");
    assert_refused(&ws.run(&["post", "publish", &id]), "approve it first");
    assert_refused(&ws.run(&["post", "requeue", &id]), "only failed posts");
    assert_refused(
        &ws.run(&["post", "resolve", &id, "--not-published"]),
        "need review",
    );
    ws.ok(&["post", "approve", &id]);
    assert_refused(&ws.run(&["post", "discard", &id]), "only drafts");
}

#[test]
fn a_hand_written_update_skipping_states_is_refused_by_the_store() {
    let ws = Workspace::new(&sandbox_config(""));
    let id = add(&ws, "hello #cats");
    let statement = format!("UPDATE posts SET status = 'posted' WHERE id = {id};");
    let refused = std::process::Command::new("sqlite3")
        .arg(ws.db())
        .arg(&statement)
        .output();
    match refused {
        // The sqlite3 shell, as an operator would type it.
        Ok(out) => {
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("illegal status transition"));
        }
        // No sqlite3 shell on this machine: the same statement through a plain connection.
        Err(_) => {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let err = rt.block_on(async {
                let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", ws.db().display()))
                    .await
                    .unwrap();
                sqlx::query(sqlx::AssertSqlSafe(statement.clone()))
                    .execute(&pool)
                    .await
                    .unwrap_err()
            });
            assert!(err.to_string().contains("illegal status transition"));
        }
    }
    let post = ws.ok(&["post", "show", &id.to_string(), "--json"]).json();
    assert_eq!(post["status"], "draft");
}

#[test]
fn an_unknown_config_key_is_refused_by_name() {
    let ws = Workspace::new(&sandbox_config("colour = \"blue\"\n"));
    let run = ws.run(&["post", "list"]);
    assert_refused(&run, "colour");
    assert!(run.stderr.contains("airlock.toml"), "{}", run.stderr);
    assert!(!ws.db().exists(), "nothing was created");
}

#[test]
fn tokens_are_shown_once_and_stored_as_hashes() {
    let ws = Workspace::new(&sandbox_config(""));
    let issued = ws
        .ok(&[
            "token",
            "create",
            "--name",
            "agent",
            "--role",
            "writer,critic",
            "--json",
        ])
        .json();
    assert_eq!(issued["name"], "agent");
    assert_eq!(issued["roles"], serde_json::json!(["writer", "critic"]));
    let secret = issued["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("alk_"));
    let listed = ws.ok(&["token", "list", "--json"]);
    assert!(!listed.stdout.contains(&secret));
    assert_refused(
        &ws.run(&["token", "create", "--name", "agent", "--role", "writer"]),
        "already exists",
    );
    assert_refused(
        &ws.run(&["token", "create", "--name", "x", "--role", "admin"]),
        "unknown role",
    );
    ws.ok(&["token", "revoke", "agent"]);
    assert_refused(&ws.run(&["token", "revoke", "agent"]), "no active token");
    let db = std::fs::read(ws.db()).unwrap();
    let wal = std::fs::read(ws.path("airlock.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&secret),
            "the secret reached the database"
        );
    }
}

#[test]
fn channels_json_has_the_spec_fields_and_pause_state() {
    let ws = Workspace::new(&sandbox_config(""));
    ws.ok(&["pause", "sandbox", "--reason", "maintenance"]);
    let channels = ws.ok(&["channels", "--json"]).json();
    let channel = &channels[0];
    for key in [
        "name",
        "kind",
        "account",
        "paused",
        "pause_reason",
        "daily_used",
        "daily_limit",
    ] {
        assert!(channel.get(key).is_some(), "channels JSON lacks {key}");
    }
    assert_eq!(channel["paused"], true);
    assert_eq!(channel["pause_reason"], "maintenance");
    ws.ok(&["resume", "sandbox"]);
    assert_eq!(ws.ok(&["channels", "--json"]).json()[0]["paused"], false);
    assert_refused(&ws.run(&["pause", "--all"]), "--reason");
}

#[test]
fn discarding_a_draft_keeps_its_events() {
    let ws = Workspace::new(&sandbox_config(""));
    let id = add(&ws, "temporary #cats").to_string();
    ws.ok(&["post", "discard", &id]);
    assert_refused(&ws.run(&["post", "show", &id]), "not found");
}

#[test]
fn demo_sets_up_posts_in_every_state_on_a_fresh_machine() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("demo");
    let run = finish(
        std::process::Command::new(binary())
            .args(["demo", "--no-serve", "--dir"])
            .arg(&workspace)
            .env_remove("AIRLOCK_CONFIG")
            .current_dir(dir.path())
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for status in [
        "draft",
        "approved",
        "posting",
        "posted",
        "failed",
        "needs_review",
    ] {
        assert!(
            run.stdout.contains(status),
            "no {status} post in:\n{}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("operator token: alk_"));
    assert!(workspace.join("airlock.toml").exists());
    assert!(workspace.join("sandbox/cats.jsonl").exists());
    // Running it again recreates the workspace; a foreign directory is refused.
    let again = std::process::Command::new(binary())
        .args(["demo", "--no-serve", "--dir"])
        .arg(&workspace)
        .output()
        .unwrap();
    assert!(again.status.success());
    std::fs::create_dir_all(dir.path().join("mine")).unwrap();
    let refused = finish(
        std::process::Command::new(binary())
            .args(["demo", "--no-serve", "--dir"])
            .arg(dir.path().join("mine"))
            .output()
            .unwrap(),
    );
    assert_refused(&refused, "not an airlock demo workspace");
}

/// A 1x1 PNG's header; `seed` tells two files apart.
fn png(seed: u8) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    bytes.push(seed);
    bytes
}

#[tokio::test]
async fn an_image_swapped_at_its_url_after_approval_is_refused_before_anything_is_sent() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let images = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/cat.png"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(png(1)))
        .up_to_n_times(1)
        .mount(&images)
        .await;
    let ws = Workspace::new(&sandbox_config(""));
    let media = format!("{}/cat.png|A cat", images.uri());
    let post = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "A cat. #cats",
            "--media",
            &media,
            "--json",
        ])
        .json();
    let approved_sha = airlock_core::hash::sha256_hex(&png(1));
    assert_eq!(post["media"][0]["sha256"], approved_sha.as_str(), "{post}");
    assert_eq!(post["media"][0]["content_type"], "image/png");
    assert_eq!(post["media"][0]["width"], 1);
    let id = post["id"].to_string();
    ws.ok(&["post", "approve", &id]);

    // Someone swaps the picture at the same URL.
    Mock::given(method("GET"))
        .and(path("/cat.png"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(png(2)))
        .mount(&images)
        .await;
    let run = ws.run(&["post", "publish", &id]);
    assert_ne!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let post = ws.ok(&["post", "show", &id, "--json"]).json();
    assert_eq!(post["status"], "failed", "{post}");
    let error = post["error"].as_str().unwrap();
    assert!(
        error.contains(&approved_sha) && error.contains(&airlock_core::hash::sha256_hex(&png(2))),
        "both digests: {error}"
    );
    assert_eq!(
        count_lines_for(
            &ws.path("sandbox/sandbox.jsonl"),
            post["id"].as_i64().unwrap()
        ),
        0,
        "nothing sent"
    );

    // A media URL that does not answer is refused when drafted: exit 2, nothing stored.
    let missing = format!("{}/missing.png", images.uri());
    let run = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text",
        "x #cats",
        "--media",
        &missing,
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("404"), "{}", run.stderr);
}

#[test]
fn a_thread_with_more_parts_than_the_channel_takes_is_refused_naming_the_part() {
    let ws = Workspace::new(&sandbox_config(""));
    let thread = ws.path("thread.md");
    std::fs::write(
        &thread,
        "Part one #cats\n---\nPart two is far too long for forty characters\n",
    )
    .unwrap();
    let run = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--thread-file",
        thread.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("part 2"), "{}", run.stderr);
    let run = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--part",
        "One #cats",
        "--part",
        "Two",
        "--first-comment",
        "More",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let post = run.json();
    assert_eq!(post["parts"].as_array().unwrap().len(), 2, "{post}");
    assert_eq!(post["first_comment"], "More");
    assert_eq!(post["text"], "One #cats", "part 1 stays the post's text");
    let listed = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "the refused thread left nothing"
    );
}
