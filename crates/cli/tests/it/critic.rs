//! The critic's workflow as a new user tries it with the real binary: critic and writer
//! agents on `airlock mcp` (stdio), a rubric file edited while they run, an operator at
//! the CLI; two required approvals before `dispatch --once` publishes; the same text
//! queued twice refused the second time.

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

use crate::support::*;

const RUBRIC_A: &str =
    "# Cats rubric\n\n- tone: Warm, never pushy.\n- claims: Only what is true.\n";
const RUBRIC_B: &str = "# Cats rubric, revised\n\n- tone: Warm, never pushy.\n- claims: Only what is true.\n- pace: The cats' own pace.\n";

pub(crate) type Agent = RunningService<RoleClient, ()>;

pub(crate) fn config(review: &str) -> String {
    sandbox_config(&format!("rubric = \"rubrics/cats.md\"\n{review}"))
}

pub(crate) fn workspace(review: &str) -> Workspace {
    let ws = Workspace::new(&config(review));
    std::fs::create_dir(ws.path("rubrics")).unwrap();
    std::fs::write(ws.path("rubrics/cats.md"), RUBRIC_A).unwrap();
    ws
}

pub(crate) fn token(ws: &Workspace, name: &str, roles: &str) -> String {
    ws.ok(&["token", "create", "--name", name, "--role", roles, "--json"])
        .json()["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `airlock mcp` over stdio acting as `token`, as Claude Code would start it.
pub(crate) async fn agent(ws: &Workspace, token: &str) -> Agent {
    let command = tokio::process::Command::new(binary()).configure(|cmd| {
        cmd.arg("--config")
            .arg(ws.config())
            .arg("mcp")
            .env_remove("AIRLOCK_CONFIG")
            .env("AIRLOCK_LOG", "warn")
            .env("AIRLOCK_TOKEN", token);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.expect("airlock mcp answers")
}

pub(crate) async fn call(agent: &Agent, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap());
    agent.call_tool(params).await.unwrap()
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

pub(crate) async fn ok(agent: &Agent, tool: &str, args: Value) -> Value {
    let result = call(agent, tool, args).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
    serde_json::from_str(&text(&result)).unwrap()
}

pub(crate) async fn refused(agent: &Agent, tool: &str, args: Value) -> String {
    let result = call(agent, tool, args).await;
    assert_eq!(result.is_error, Some(true), "{tool}: {}", text(&result));
    text(&result)
}

pub(crate) fn verdict(packet: &Value, kind: &str, reasons: &[&str]) -> Value {
    json!({
        "id": packet["post"]["id"],
        "verdict": kind,
        "content_hash": packet["content_hash"],
        "rubric_hash": packet["rubric"]["hash"],
        "reasons": reasons,
    })
}

#[tokio::test]
async fn a_critic_agent_fails_a_draft_twice_the_writer_reads_why_and_an_operator_releases_it() {
    let ws = workspace("");
    let writer = agent(&ws, &token(&ws, "writer", "writer")).await;
    let critic = agent(&ws, &token(&ws, "critic", "critic")).await;

    let post = ok(
        &writer,
        "draft_post",
        json!({"channel": "sandbox", "text": "Cats promise laps! #cats"}),
    )
    .await;
    let id = post["id"].as_i64().unwrap();

    let packet = ok(&critic, "get_review_packet", json!({"id": id})).await;
    assert_eq!(
        packet["rubric"]["hash"],
        airlock_core::review::rubric_hash(RUBRIC_A)
    );
    assert!(
        packet["rubric"]["origin"]
            .as_str()
            .unwrap()
            .ends_with("rubrics/cats.md")
    );
    let first = ok(
        &critic,
        "submit_verdict",
        verdict(&packet, "fail", &["claims: cats promise nothing"]),
    )
    .await;
    assert_eq!(first["effect"], "returned_to_writer");
    assert_eq!(
        first["verdict"]["rubric_hash"],
        airlock_core::review::rubric_hash(RUBRIC_A)
    );

    // The writer reads the reasons back and revises.
    let seen = ok(&writer, "get_post", json!({"id": id})).await;
    assert!(
        seen["error"]
            .as_str()
            .unwrap()
            .contains("claims: cats promise nothing")
    );
    ok(
        &writer,
        "update_draft",
        json!({"id": id, "text": "Cats may nap on you. #cats"}),
    )
    .await;

    // A person edits the rubric while both agents run: the next verdict is under it.
    std::fs::write(ws.path("rubrics/cats.md"), RUBRIC_B).unwrap();
    let stale = refused(
        &critic,
        "submit_verdict",
        verdict(&packet, "fail", &["tone: x"]),
    )
    .await;
    assert!(stale.contains("changed since"), "{stale}");
    let packet = ok(&critic, "get_review_packet", json!({"id": id})).await;
    assert_eq!(
        packet["rubric"]["hash"],
        airlock_core::review::rubric_hash(RUBRIC_B)
    );
    assert_eq!(packet["rubric"]["items"][2]["id"], "pace");
    let second = ok(
        &critic,
        "submit_verdict",
        verdict(&packet, "fail", &["pace: naps are the cats' choice"]),
    )
    .await;
    assert_eq!(second["effect"], "quarantined");
    assert_eq!(
        second["verdict"]["rubric_hash"],
        airlock_core::review::rubric_hash(RUBRIC_B)
    );

    // The third try is refused, saying why.
    let third = refused(
        &writer,
        "update_draft",
        json!({"id": id, "text": "Cats nap. #cats"}),
    )
    .await;
    assert!(
        third.contains("quarantined") && third.contains(&format!("airlock post release {id}")),
        "{third}"
    );
    let id_arg = id.to_string();
    let edit = ws.run(&["post", "edit", &id_arg, "--text", "Cats nap. #cats"]);
    assert_refused(&edit, "quarantined");
    let approve = ws.run(&["post", "approve", &id_arg]);
    assert_refused(&approve, "quarantined");

    // The operator finds it, reads the verdicts, and releases it.
    let listed = ws.ok(&["post", "list", "--quarantined", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], id);
    let shown = ws.ok(&["post", "show", &id_arg]);
    assert!(shown.stdout.contains("quarantined:"), "{}", shown.stdout);
    assert!(shown.stdout.contains("- pace: naps are the cats' choice"));
    let detail = ws.ok(&["post", "show", &id_arg, "--json"]).json();
    assert_eq!(detail["verdicts"].as_array().unwrap().len(), 2);
    assert!(detail["quarantined_at"].is_string());
    let released = ws.ok(&["post", "release", &id_arg, "--json"]).json();
    assert_eq!(released["status"], "draft");
    assert_eq!(released["quarantined_at"], Value::Null);
    assert_eq!(released["revisions"], 0);
    ok(
        &writer,
        "update_draft",
        json!({"id": id, "text": "Cats nap where they like. #cats"}),
    )
    .await;
    let packet = ok(&critic, "get_review_packet", json!({"id": id})).await;
    let passed = ok(&critic, "submit_verdict", verdict(&packet, "pass", &[])).await;
    assert_eq!(passed["effect"], "approved");
    writer.cancel().await.unwrap();
    critic.cancel().await.unwrap();
}

#[tokio::test]
async fn a_channel_with_two_required_approvals_publishes_only_after_two_critics_pass_the_same_text()
{
    let ws = workspace("approvals_required = 2\n");
    let writer = agent(&ws, &token(&ws, "writer", "writer")).await;
    let critic = agent(&ws, &token(&ws, "critic-one", "critic")).await;
    let second = agent(&ws, &token(&ws, "critic-two", "critic")).await;
    let post = ok(
        &writer,
        "draft_post",
        json!({"channel": "sandbox", "text": "Breakfast at eight. #cats"}),
    )
    .await;
    let id = post["id"].as_i64().unwrap();
    let id_arg = id.to_string();
    let hash = post["content_hash"].as_str().unwrap().to_owned();

    let first = ok(
        &critic,
        "approve_post",
        json!({"id": id, "content_hash": hash}),
    )
    .await;
    assert_eq!(first["status"], "draft", "one pass of two");
    // The same pass again is a retry: it answers the post as it stands and counts once.
    let again = ok(
        &critic,
        "approve_post",
        json!({"id": id, "content_hash": hash}),
    )
    .await;
    assert_eq!(again["status"], "draft", "still one pass of two");
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), id), 0);

    // The operator at the CLI is no second critic (it is whoever runs it); a stale hash
    // approves nothing; the second critic passes the same text.
    let cli = ws.run(&["post", "approve", &id_arg, "--hash", &hash]);
    assert_refused(&cli, "approvals_required = 2");
    let stale = refused(
        &second,
        "approve_post",
        json!({"id": id, "content_hash": "0".repeat(64)}),
    )
    .await;
    assert!(stale.contains("changed since it was reviewed"), "{stale}");
    let approved = ok(
        &second,
        "approve_post",
        json!({"id": id, "content_hash": hash}),
    )
    .await;
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["approved_hash"], hash);
    assert_eq!(
        approved["approved_by"],
        "token:critic-one, token:critic-two"
    );
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), id), 1);
    let shown = ws.ok(&["post", "show", &id_arg, "--json"]).json();
    assert_eq!(shown["status"], "posted");
    writer.cancel().await.unwrap();
    critic.cancel().await.unwrap();
    second.cancel().await.unwrap();
}

#[test]
fn the_same_text_queued_twice_on_a_channel_is_refused_the_second_time() {
    let ws = workspace("");
    let first = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "Tea at four. #cats",
            "--json",
        ])
        .json();
    let id = first["id"].as_i64().unwrap().to_string();
    ws.ok(&["post", "approve", &id]);
    let again = ws.run(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text",
        "tea at  FOUR. #cats",
    ]);
    assert_refused(&again, &format!("post {id} (approved)"));
    let on_purpose = ws.ok(&[
        "post",
        "add",
        "--channel",
        "sandbox",
        "--text",
        "Tea at four. #cats",
        "--allow-duplicate",
        "--json",
    ]);
    assert_eq!(on_purpose.json()["status"], "draft");

    // The review packet for a person at the terminal.
    let packet = ws.ok(&["post", "review", &id, "--json"]).json();
    assert_eq!(packet["content_hash"], first["content_hash"]);
    assert_eq!(packet["approvals"]["passed_by"], json!(["cli"]));
    let text = ws.ok(&["post", "review", &id]);
    assert!(text.stdout.contains("rubric:"), "{}", text.stdout);
}

/// Issue 26: lookalike letters, combining marks and blank symbols drafted the same text
/// again on one channel, and a quarantined text again in disguise.
#[test]
fn a_text_in_disguise_is_refused_as_the_duplicate_it_reads_as() {
    let ws = workspace("max_revisions = 1\n");
    let add = |text: &str| {
        ws.run(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            text,
            "--json",
        ])
    };
    let queued = add("Tea at four. #cats").json()["id"].as_i64().unwrap();
    ws.ok(&["post", "approve", &queued.to_string()]);
    for disguised in [
        "T\u{0435}a at four. #cats",   // Cyrillic е
        "Tea \u{0430}t four. #cats",   // Cyrillic а
        "Tea at f\u{03BF}ur. #cats",   // Greek ο
        "Tea at four. #cats\u{2800}",  // braille blank
        "Tea at four. #cats\u{1D159}", // null notehead
        "Tea at fo\u{0307}ur. #cats",  // combining dot above
        "T\u{0435}\u{0430} at f\u{03BF}ur.\u{2800}#cats",
    ] {
        assert_refused(&add(disguised), &format!("post {queued} (approved)"));
    }

    let quarantined = add("Naps on the sofa. #cats").json()["id"]
        .as_i64()
        .unwrap();
    let rejected = ws
        .ok(&[
            "post",
            "reject",
            &quarantined.to_string(),
            "--reason",
            "tone: too pushy",
            "--json",
        ])
        .json();
    assert!(rejected["quarantined_at"].is_string(), "{rejected}");
    for disguised in [
        "N\u{0430}ps on the sofa. #cats",
        "Naps \u{03BF}n the s\u{043E}fa. #cats\u{2800}",
        "Naps on the so\u{0307}fa.\u{1D159}#cats",
    ] {
        assert_refused(
            &add(disguised),
            &format!("post {quarantined} (quarantined)"),
        );
    }
    // A text that reads differently is a new post.
    assert_eq!(add("Naps on the floor. #cats").code, 0);
}

#[test]
fn editing_a_draft_into_a_queued_text_is_refused_naming_the_earlier_post() {
    let ws = workspace("");
    let add = |text: &str| {
        let post = ws
            .ok(&[
                "post",
                "add",
                "--channel",
                "sandbox",
                "--text",
                text,
                "--json",
            ])
            .json();
        post["id"].as_i64().unwrap().to_string()
    };
    let queued = add("Tea at four. #cats");
    ws.ok(&["post", "approve", &queued]);
    let other = add("Coffee at five. #cats");
    let edit = ws.run(&["post", "edit", &other, "--text", "tea at  FOUR. #cats"]);
    assert_refused(&edit, &format!("post {queued} (approved)"));
    let shown = ws.ok(&["post", "show", &other, "--json"]).json();
    assert_eq!(shown["text"], "Coffee at five. #cats", "nothing changed");
    let on_purpose = ws.ok(&[
        "post",
        "edit",
        &other,
        "--text",
        "tea at  FOUR. #cats",
        "--allow-duplicate",
        "--json",
    ]);
    assert_eq!(on_purpose.json()["text"], "tea at  FOUR. #cats");
}

#[test]
fn a_missing_rubric_file_is_refused_at_load_naming_the_key() {
    let ws = Workspace::new(&config(""));
    let run = ws.run(&["post", "list"]);
    assert_refused(&run, "channels.sandbox.rubric");
}
