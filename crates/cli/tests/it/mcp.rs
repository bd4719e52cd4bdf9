//! `airlock mcp`: the real binary serving MCP over stdio, driven by the rmcp client
//! spawning it as a child process, as Claude Code or Claude Desktop would.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::support::*;

fn create_token(ws: &Workspace, name: &str, roles: &str) -> String {
    let issued = ws
        .ok(&["token", "create", "--name", name, "--role", roles, "--json"])
        .json();
    issued["token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn airlock_mcp_over_stdio_lists_the_tools_and_drafts_a_post_as_the_token() {
    let ws = Workspace::new(&sandbox_config(""));
    let token = create_token(&ws, "stdio-writer", "writer");

    let command = tokio::process::Command::new(binary()).configure(|cmd| {
        cmd.arg("--config")
            .arg(ws.config())
            .arg("mcp")
            .env_remove("AIRLOCK_CONFIG")
            // Every level of every target: libraries' too.
            .env("AIRLOCK_LOG", "trace")
            .env("AIRLOCK_TOKEN", &token);
    });
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.expect("airlock mcp answers the handshake");

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "approve_post",
            "check_draft",
            "discard_post",
            "draft_post",
            "get_post",
            "get_review_packet",
            "list_channels",
            "list_posts",
            "publish_post",
            "quota_status",
            "reject_post",
            "submit_verdict",
            "update_draft"
        ]
    );

    let params = CallToolRequestParams::new("draft_post").with_arguments(
        json!({"channel": "sandbox", "text": "Mochi naps. #cats"})
            .as_object()
            .cloned()
            .unwrap(),
    );
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text: String = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect();
    let post: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(post["status"], "draft");

    let params = CallToolRequestParams::new("approve_post")
        .with_arguments(json!({"id": post["id"]}).as_object().cloned().unwrap());
    let refused = client.call_tool(params).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "a writer cannot approve");
    client.cancel().await.unwrap();

    let listed = ws.ok(&["post", "list", "--json"]).json();
    assert_eq!(listed[0]["id"], post["id"], "the draft is in the ledger");

    let mut logs = String::new();
    stderr
        .expect("stderr is piped")
        .read_to_string(&mut logs)
        .await
        .unwrap();
    assert!(
        logs.contains("serving MCP over stdio"),
        "logs go to stderr: {logs}"
    );
    assert!(!logs.contains(&token), "the token is never logged");
    let leaks: Vec<&str> = logs.lines().filter(|l| l.contains("Mochi naps")).collect();
    assert!(
        leaks.is_empty(),
        "no library logs a post's text, whatever the level: {leaks:#?}"
    );
}

#[test]
fn airlock_mcp_without_a_token_is_refused_with_exit_2() {
    let ws = Workspace::new(&sandbox_config(""));
    let run = finish(
        ws.command(&["mcp"])
            .env_remove("AIRLOCK_TOKEN")
            .output()
            .unwrap(),
    );
    assert_refused(&run, "AIRLOCK_TOKEN is not set");
    assert_eq!(run.stdout, "", "nothing but MCP frames on stdout");
}

#[test]
fn airlock_mcp_with_an_unknown_or_revoked_token_is_refused_with_exit_2() {
    let ws = Workspace::new(&sandbox_config(""));
    let token = create_token(&ws, "gone", "writer");
    ws.ok(&["token", "revoke", "gone"]);

    for secret in [token.as_str(), "alk_0000"] {
        let run = finish(
            ws.command(&["mcp"])
                .env("AIRLOCK_TOKEN", secret)
                .output()
                .unwrap(),
        );
        assert_refused(&run, "unknown or revoked");
        assert_eq!(run.stdout, "");
        assert!(!run.stderr.contains(secret), "the token is never printed");
    }
}
