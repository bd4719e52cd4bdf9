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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_tools_drafts_and_is_told_when_the_next_slot_frees() {
    let root = repo_root();
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh once, it creates .venv with the MCP Python SDK (pip install \"mcp>=2,<3\")",
        python.display()
    );

    let h = Harness::new(1).await;
    // Fill the one-per-hour window, and leave an approved post waiting.
    let first = h.approved("dogs", "fills the window").await;
    h.app
        .publish_now(&airlock_app::Principal::cli(), first.id)
        .await
        .unwrap();
    h.approved("cats", "waits for a slot").await;

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
    assert_eq!(seen["tools"].as_array().unwrap().len(), 11);
    assert!(
        seen["over_quota"]
            .as_str()
            .unwrap()
            .contains("the next slot frees at")
    );
    assert!(
        !stderr.contains(&secret),
        "the token never appears in output"
    );
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
}
