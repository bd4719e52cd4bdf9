//! An independent client: the official MCP Python SDK (`mcp` 2.x, installed into `.venv`
//! at the repository root by `scripts/test.sh`) drives the HTTP endpoint, as a writer
//! and publisher (`python_client.py`) and as a critic with its writer (`python_critic.py`).

use std::path::PathBuf;

use airlock_core::Role;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::support::*;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A writer agent through the official SDK: it reads a channel's rules, checks a draft,
/// drafts, discards, lists only its own posts page by page (the SDK checks every
/// structured result against its tool's output schema), is told when the next slot frees,
/// and closes its session without a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_tools_drafts_and_is_told_when_the_next_slot_frees() {
    let root = repo_root();
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh once, it creates .venv with the MCP Python SDK (pip install \"mcp>=2,<3\")",
        python.display()
    );

    // `cats` requires a disclosure.
    let h = Harness::with_review(1, |channel| {
        if channel.name.as_str() == "cats" {
            channel.policy.required = vec!["#ad".into()];
        }
    })
    .await;
    // Fill the one-per-hour window, and leave an approved post waiting.
    let first = h.approved("dogs", "fills the window").await;
    h.app
        .publish_now(&airlock_app::Principal::cli(), first.id)
        .await
        .unwrap();
    h.approved("cats", "waits for a slot #ad").await;

    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let url = h.serve_http(&shutdown).await;
    let secret = h
        .token("python-agent", &[Role::Writer, Role::Publisher])
        .await;

    let output = tokio::process::Command::new(&python)
        .arg(root.join("crates/mcp/tests/python_client.py"))
        .arg(&url)
        .arg(&secret)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(seen["tools"].as_array().unwrap().len(), 13);
    assert!(
        seen["over_quota"]
            .as_str()
            .unwrap()
            .contains("the next slot frees at")
    );
    assert_eq!(seen["pages"], 2, "{seen}");
    assert_eq!(seen["mine"].as_array().unwrap().len(), 2, "{seen}");
    let discarded = airlock_core::PostId(seen["discarded"].as_i64().unwrap());
    assert!(
        h.app
            .get_post(&airlock_app::Principal::cli(), discarded)
            .await
            .is_err(),
        "the discarded draft is gone"
    );
    assert!(
        !stderr.contains(&secret),
        "the token never appears in output"
    );
    // The SDK logs a warning when closing a session fails (it did on rmcp's 202), and
    // when a result does not match its tool's output schema.
    assert!(
        !stderr.to_lowercase().contains("warn") && !stderr.contains("Session termination failed"),
        "the client closed without a warning:\n{stderr}"
    );
    assert!(stderr.trim().is_empty(), "nothing on stderr:\n{stderr}");
}

/// The review packet and verdicts through the official Python SDK: a critic fails a
/// draft twice with reasons its writer reads back, the third try is quarantined, and an
/// operator's release makes it a draft again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_critic_fails_a_draft_twice_and_the_third_try_is_quarantined() {
    use airlock_app::critic::RubricSource;
    use airlock_core::review::Rubric;

    #[derive(Debug)]
    struct InnRubric;
    impl RubricSource for InnRubric {
        fn read(&self) -> Result<Rubric, String> {
            Ok(Rubric::parse(
                "# Inn\n\n- claims: Only what is true.\n- tone: Warm, never pushy.\n",
            ))
        }
        fn origin(&self) -> String {
            "rubrics/inn.md".into()
        }
    }

    let root = repo_root();
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh once, it creates .venv with the MCP Python SDK (pip install \"mcp>=2,<3\")",
        python.display()
    );
    let h = Harness::with_review(3, |channel| {
        channel.review.rubric = std::sync::Arc::new(InnRubric);
    })
    .await;
    let writer = h.token("python-writer", &[Role::Writer]).await;
    let critic = h.token("python-critic", &[Role::Critic]).await;
    let post = h
        .app
        .create_post(
            &h.app.authenticate(&writer).await.unwrap(),
            airlock_app::posts::DraftInput {
                channel: "cats".into(),
                text: "Every guest is guaranteed a cat on the lap!".into(),
                ..Default::default()
            },
            None,
            Default::default(),
        )
        .await
        .unwrap()
        .post;

    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let url = h.serve_http(&shutdown).await;
    let output = tokio::process::Command::new(&python)
        .arg(root.join("crates/mcp/tests/python_critic.py"))
        .arg(&url)
        .arg(&writer)
        .arg(&critic)
        .arg(post.id.to_string())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python critic failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(seen["items"], serde_json::json!(["claims", "tone"]));
    assert_eq!(seen["first"], "returned_to_writer");
    assert_eq!(seen["second"], "quarantined");
    assert_eq!(seen["verdicts"], 2);

    let quarantined = h.app.store().get_post(post.id).await.unwrap();
    assert!(quarantined.quarantined_at.is_some());
    let released = h
        .app
        .release(&airlock_app::Principal::cli(), post.id)
        .await
        .unwrap();
    assert_eq!(released.status, airlock_core::PostStatus::Draft);
    assert_eq!(released.quarantined_at, None);
    for token in [&writer, &critic] {
        assert!(!stderr.contains(token.as_str()), "no token in the output");
    }
    assert!(
        !stderr.contains("Session termination failed"),
        "both sessions closed cleanly:\n{stderr}"
    );
}

/// Every tool's structured result matches the output schema it declares, as the official
/// SDK checks it (`jsonschema`, with refs resolved only inside the schema): the tools the
/// SDK tests do not reach included, a post with a thread, media and a first comment, a
/// channel with a money budget, and a verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_structured_result_matches_its_declared_output_schema() {
    use std::collections::BTreeMap;

    let root = repo_root();
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh once",
        python.display()
    );
    let h = Harness::with_review(3, |channel| {
        if channel.name.as_str() == "dogs" {
            channel.budget = Some(airlock_app::Budget {
                monthly: 1_000_000,
                costs: airlock_core::budget::Costs::X_DEFAULT,
            });
        }
    })
    .await;
    let writer = h.client_for("schema-writer", &[Role::Writer]).await;
    let critic = h.client_for("schema-critic", &[Role::Critic]).await;
    let publisher = h.client_for("schema-publisher", &[Role::Publisher]).await;
    let schemas: BTreeMap<String, Value> = writer
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| {
            let schema = Value::Object(t.output_schema.expect("an output schema").as_ref().clone());
            (t.name.to_string(), schema)
        })
        .collect();
    let mut seen: Vec<(String, Value)> = Vec::new();
    let mut run = async |client: &Client, tool: &str, args: Value| -> Value {
        let result = call(client, tool, args).await;
        assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
        let value = result.structured_content.expect("structured content");
        seen.push((tool.to_owned(), value.clone()));
        value
    };
    let thread = serde_json::json!({
        "channel": "cats",
        "parts": [
            {"text": "One", "media": [{"url": "https://inn.example/a.jpg", "alt": "a cat"}]},
            {"text": "Two"}
        ],
        "first_comment": "Three",
        "title": "Cats",
        "link": "https://inn.example/",
    });
    run(&writer, "check_draft", thread.clone()).await;
    let post = run(&writer, "draft_post", thread).await;
    let id = post["id"].clone();
    run(
        &writer,
        "update_draft",
        serde_json::json!({"id": id, "first_comment": "Four"}),
    )
    .await;
    let packet = run(&critic, "get_review_packet", serde_json::json!({"id": id})).await;
    run(
        &critic,
        "submit_verdict",
        serde_json::json!({"id": id, "verdict": "fail", "reasons": ["tone: cold"],
            "content_hash": packet["content_hash"], "rubric_hash": packet["rubric"]["hash"]}),
    )
    .await;
    run(&critic, "approve_post", serde_json::json!({"id": id})).await;
    run(
        &critic,
        "reject_post",
        serde_json::json!({"id": id, "reason": "too cold"}),
    )
    .await;
    run(&critic, "approve_post", serde_json::json!({"id": id})).await;
    run(&publisher, "publish_post", serde_json::json!({"id": id})).await;
    run(&writer, "get_post", serde_json::json!({"id": id})).await;
    let dog = run(
        &writer,
        "draft_post",
        serde_json::json!({"channel": "dogs", "text": "Rex", "test": true}),
    )
    .await;
    run(
        &writer,
        "check_draft",
        serde_json::json!({"channel": "dogs", "text": "Rex https://inn.example"}),
    )
    .await;
    run(&writer, "list_posts", serde_json::json!({"limit": 1})).await;
    run(&writer, "list_channels", serde_json::json!({})).await;
    run(&writer, "quota_status", serde_json::json!({})).await;
    run(
        &writer,
        "discard_post",
        serde_json::json!({"id": dog["id"]}),
    )
    .await;

    // A refusal's structured content ({"error": {code, message}}) matches the schema too:
    // clients that check it on errors would otherwise hide "over quota until ..." from
    // the agent.
    for tool in TOOLS {
        let args = match tool {
            "list_posts" => serde_json::json!({"status": "posting", "limit": 0}),
            "list_channels" | "quota_status" => continue,
            "draft_post" | "check_draft" => serde_json::json!({"channel": "nope", "text": "x"}),
            _ => serde_json::json!({"id": 999_999}),
        };
        let result = call(&writer, tool, args).await;
        if result.is_error == Some(true) {
            let value = result
                .structured_content
                .expect("a refusal's structured content");
            seen.push((tool.to_owned(), value));
        }
    }

    let tools_seen: std::collections::BTreeSet<&str> =
        seen.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tools_seen.len(),
        TOOLS.len(),
        "every tool is checked: {tools_seen:?}"
    );
    let pairs: Vec<Value> = seen
        .iter()
        .map(|(tool, value)| serde_json::json!([tool, schemas[tool], value]))
        .collect();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec(&pairs).unwrap()).unwrap();
    let output = tokio::process::Command::new(&python)
        .arg("-c")
        .arg(VALIDATE)
        .arg(file.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "results that do not match their schema:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Checks `[tool, schema, value]` triples as the MCP Python SDK's `ClientSession` does.
const VALIDATE: &str = r#"
import json, sys
from jsonschema.validators import validator_for
from referencing import Registry
bad = []
for tool, schema, value in json.load(open(sys.argv[1])):
    cls = validator_for(schema)
    cls.check_schema(schema)
    for error in cls(schema, registry=Registry()).iter_errors(value):
        bad.append(f"{tool}: {error.message} at {list(error.absolute_path)}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
"#;
