//! An independent client: the official MCP Python SDK (`mcp` 2.x, installed into `.venv`
//! at the repository root by `scripts/test.sh`) drives the HTTP endpoint.

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
    assert_eq!(seen["tools"].as_array().unwrap().len(), 9);
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
