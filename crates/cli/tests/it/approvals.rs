//! N of M approvals mean N people's verdicts that still stand (issue 26, item 5), as an
//! outside attacker tried it on a channel with `approvals_required = 2`: the operator's
//! token and the CLI are one person, a revoked token's pass stands for nobody, and a
//! pass given for one schedule does not carry over to another.

use serde_json::{Value, json};

use crate::critic::{agent, ok, token, workspace};
use crate::support::*;

fn events(ws: &Workspace, id: &str) -> Vec<Value> {
    ws.ok(&["post", "show", id, "--json"]).json()["events"]
        .as_array()
        .unwrap()
        .clone()
}

/// (a) The CLI has no identity of its own: it is whoever runs it, the operator, who also
/// holds an operator token. Where several passes are required, it gives none of them.
#[tokio::test]
async fn the_cli_gives_none_of_several_required_passes() {
    let ws = workspace("approvals_required = 2\n");
    let ops = agent(&ws, &token(&ws, "ops", "operator")).await;

    // The operator writes at the CLI and passes with its own token...
    let post = ws
        .ok(&[
            "post",
            "add",
            "--channel",
            "sandbox",
            "--text",
            "Naps at noon. #cats",
            "--json",
        ])
        .json();
    let id = post["id"].as_i64().unwrap();
    let id_arg = id.to_string();
    let hash = post["content_hash"].as_str().unwrap().to_owned();
    let first = ok(
        &ops,
        "approve_post",
        json!({"id": id, "content_hash": hash}),
    )
    .await;
    assert_eq!(first["status"], "draft", "one pass of two");

    // ...then passes again at the CLI: refused, saying what to do instead.
    let second = ws.run(&["post", "approve", &id_arg, "--hash", &hash]);
    assert_refused(&second, "approvals_required = 2");
    assert!(second.stderr.contains("token create"), "{}", second.stderr);
    let shown = ws.ok(&["post", "show", &id_arg, "--json"]).json();
    assert_eq!(shown["status"], "draft");
    assert_eq!(shown["verdicts"].as_array().unwrap().len(), 1);
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), id), 0);

    // The packet tells the operator at the CLI before it tries; a fail stays open to it.
    let packet = ws.ok(&["post", "review", &id_arg, "--json"]).json();
    assert_eq!(packet["verdict_allowed"], false);
    assert!(
        packet["verdict_refused"]
            .as_str()
            .unwrap()
            .contains("approvals_required = 2"),
        "{packet}"
    );
    let failed = ws
        .ok(&["post", "reject", &id_arg, "--reason", "tone: not yet"])
        .stdout;
    assert!(!failed.is_empty());

    // A post the operator's token wrote: the CLI's pass is refused the same way.
    let other = ok(
        &ops,
        "draft_post",
        json!({"channel": "sandbox", "text": "Tea at four. #cats"}),
    )
    .await;
    let other_arg = other["id"].as_i64().unwrap().to_string();
    let cli = ws.run(&["post", "approve", &other_arg]);
    assert_refused(&cli, "approvals_required = 2");
    ops.cancel().await.unwrap();
}

/// (b) A pass by a token revoked since no longer counts; an approval that rested on it
/// is withdrawn when the token is revoked.
#[tokio::test]
async fn a_pass_by_a_token_revoked_since_counts_no_more() {
    let ws = workspace("approvals_required = 2\n");
    let writer = agent(&ws, &token(&ws, "writer", "writer")).await;
    let one = agent(&ws, &token(&ws, "critic-one", "critic")).await;
    let two = agent(&ws, &token(&ws, "critic-two", "critic")).await;
    let three = agent(&ws, &token(&ws, "critic-three", "critic")).await;
    let post = ok(
        &writer,
        "draft_post",
        json!({"channel": "sandbox", "text": "Brushing at nine. #cats"}),
    )
    .await;
    let id = post["id"].as_i64().unwrap();
    let id_arg = id.to_string();
    let hash = post["content_hash"].as_str().unwrap().to_owned();
    let pass = json!({"id": id, "content_hash": hash});

    ok(&one, "approve_post", pass.clone()).await;
    ws.ok(&["token", "revoke", "critic-one"]);
    let after = ok(&two, "approve_post", pass.clone()).await;
    assert_eq!(after["status"], "draft", "the revoked pass does not count");
    let packet = ws.ok(&["post", "review", &id_arg, "--json"]).json();
    assert_eq!(
        packet["approvals"]["passed_by"],
        json!(["token:critic-two"])
    );
    assert_eq!(packet["approvals"]["needed"], 1);
    let not_counted = &packet["approvals"]["not_counted"];
    assert_eq!(not_counted[0]["actor"], "token:critic-one", "{packet}");
    assert!(
        not_counted[0]["reason"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{packet}"
    );
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), id), 0);

    let approved = ok(&three, "approve_post", pass.clone()).await;
    assert_eq!(approved["status"], "approved");
    assert_eq!(
        approved["approved_by"],
        "token:critic-two, token:critic-three"
    );

    // Revoking a token whose pass the approval needs withdraws the approval, saying why.
    let revoked = ws.ok(&["token", "revoke", "critic-two"]);
    assert!(
        revoked.stdout.contains(&format!("post {id}")),
        "{}",
        revoked.stdout
    );
    let shown = ws.ok(&["post", "show", &id_arg, "--json"]).json();
    assert_eq!(shown["status"], "draft");
    assert_eq!(shown["approved_by"], Value::Null);
    let last = events(&ws, &id_arg).last().cloned().unwrap();
    assert_eq!(last["to"], "draft", "{last}");
    assert!(
        last["note"].as_str().unwrap().contains("token:critic-two")
            && last["note"].as_str().unwrap().contains("revoked"),
        "{last}"
    );
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), id), 0);
    for agent in [writer, one, two, three] {
        agent.cancel().await.unwrap();
    }
}

/// (b) An approval that still has `approvals_required` standing passes without the
/// revoked one stays approved.
#[tokio::test]
async fn an_approval_with_enough_passes_left_stays_when_a_token_is_revoked() {
    let ws = workspace("approvals_required = 2\n");
    let writer = agent(&ws, &token(&ws, "writer", "writer")).await;
    let one = agent(&ws, &token(&ws, "critic-one", "critic")).await;
    let two = agent(&ws, &token(&ws, "critic-two", "critic")).await;
    let post = ok(
        &writer,
        "draft_post",
        json!({"channel": "sandbox", "text": "Sun at two. #cats"}),
    )
    .await;
    let id = post["id"].as_i64().unwrap();
    let pass = json!({"id": id, "content_hash": post["content_hash"]});
    ok(&one, "approve_post", pass.clone()).await;
    assert_eq!(ok(&two, "approve_post", pass).await["status"], "approved");

    // The channel now needs one pass: the other still stands.
    let config = std::fs::read_to_string(ws.config()).unwrap();
    std::fs::write(
        ws.config(),
        config.replace("approvals_required = 2", "approvals_required = 1"),
    )
    .unwrap();
    let revoked = ws.ok(&["token", "revoke", "critic-one"]);
    assert!(!revoked.stdout.contains("withdrawn"), "{}", revoked.stdout);
    let shown = ws.ok(&["post", "show", &id.to_string(), "--json"]).json();
    assert_eq!(shown["status"], "approved");
    for agent in [writer, one, two] {
        agent.cancel().await.unwrap();
    }
}

/// (c) A pass given for one schedule does not carry over to another: moving a draft that
/// holds passes starts a new review round, and the packet lists the move.
#[tokio::test]
async fn moving_a_draft_that_holds_passes_starts_a_new_review_round() {
    let ws = workspace("approvals_required = 2\n");
    let writer = agent(&ws, &token(&ws, "writer", "writer")).await;
    let one = agent(&ws, &token(&ws, "critic-one", "critic")).await;
    let two = agent(&ws, &token(&ws, "critic-two", "critic")).await;
    let post = ok(
        &writer,
        "draft_post",
        json!({
            "channel": "sandbox",
            "text": "New year naps. #cats",
            "scheduled_at": "2030-01-01T09:00:00+09:00"
        }),
    )
    .await;
    let id = post["id"].as_i64().unwrap();
    let id_arg = id.to_string();
    let pass = json!({"id": id, "content_hash": post["content_hash"]});
    ok(&one, "approve_post", pass.clone()).await;

    // The writer moves it to now; the second critic passes what it reads.
    ok(
        &writer,
        "update_draft",
        json!({"id": id, "scheduled_at": "now"}),
    )
    .await;
    let packet = ok(&two, "get_review_packet", json!({"id": id})).await;
    assert_eq!(packet["approvals"]["passed_by"], json!([]), "{packet}");
    assert_eq!(packet["approvals"]["needed"], 2);
    let moves = packet["schedule_moves"].as_array().unwrap();
    assert_eq!(moves.len(), 1, "{packet}");
    assert_eq!(moves[0]["from"], "2030-01-01T00:00:00Z");
    let to = moves[0]["to"].as_str().unwrap();
    let scheduled = packet["post"]["scheduled_at"].as_str().unwrap();
    assert_eq!(to[..19], scheduled[..19], "{packet}");
    assert_eq!(moves[0]["actor"], "token:writer");
    assert!(moves[0]["at"].is_string());
    let text = ws.ok(&["post", "review", &id_arg]).stdout;
    assert!(text.contains("from 2030-01-01T00:00:00.000Z to "), "{text}");

    let second = ok(&two, "approve_post", pass.clone()).await;
    assert_eq!(second["status"], "draft", "the first pass was for 2030");
    ws.ok(&["dispatch", "--once"]);
    assert_eq!(count_lines_for(&ws.path("sandbox/sandbox.jsonl"), id), 0);

    // The first critic reviews the moved draft again, and it is approved.
    let again = ok(&one, "approve_post", pass).await;
    assert_eq!(again["status"], "approved");
    // A draft without passes moves freely: no new round, nothing to review again.
    let other = ok(
        &writer,
        "draft_post",
        json!({"channel": "sandbox", "text": "Later naps. #cats"}),
    )
    .await;
    let moved = ok(
        &writer,
        "update_draft",
        json!({"id": other["id"], "scheduled_at": "2030-01-02T09:00:00+09:00"}),
    )
    .await;
    assert_eq!(moved["review_round"], other["review_round"]);
    for agent in [writer, one, two] {
        agent.cancel().await.unwrap();
    }
}
