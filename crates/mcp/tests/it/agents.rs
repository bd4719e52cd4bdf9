//! What a writer agent needs (issue 27): a channel's rules, a check before drafting,
//! drafts that keep their policy problems, test posts, discarding, its own posts page by
//! page, retried verdicts, and structured results with declared output schemas.

use std::collections::BTreeMap;

use airlock_core::Role;
use serde_json::{Value, json};

use crate::support::*;

/// `cats` requires a disclosure and forbids a promise.
async fn harness() -> Harness {
    Harness::with_review(3, |channel| {
        if channel.name.as_str() == "cats" {
            channel.policy.required = vec!["#ad".into()];
            channel.policy.forbidden = vec!["guaranteed".into()];
            channel.policy.max_chars = Some(100);
        }
    })
    .await
}

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{}", text(result));
    result
        .structured_content
        .clone()
        .expect("every tool answers with structured content")
}

#[tokio::test]
async fn a_writer_reads_the_rules_checks_drafts_and_discards() {
    let h = harness().await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;

    let listed = call(&writer, "list_channels", json!({})).await;
    let channels = structured(&listed);
    assert_eq!(
        ok_json(&listed),
        channels["channels"],
        "the text is the list"
    );
    let cats = channels["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cats")
        .unwrap()
        .clone();
    assert_eq!(cats["policy"]["required"], json!(["#ad"]));
    assert_eq!(cats["policy"]["forbidden"], json!(["guaranteed"]));
    assert_eq!(cats["policy"]["max_chars"], 100);
    assert_eq!(cats["review"]["approvals_required"], 1);
    assert!(cats["review"]["rubric_hash"].is_string(), "{cats}");
    assert!(cats["media"]["video"].is_string(), "{cats}");

    // A check drafts nothing and says what the channel finds.
    let check = structured(
        &call(
            &writer,
            "check_draft",
            json!({"channel": "cats", "text": "A cat on every lap, guaranteed."}),
        )
        .await,
    );
    assert_eq!(check["accepted"], true);
    assert_eq!(check["approvable"], false);
    let kinds: Vec<&str> = check["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["forbidden_phrase", "missing_required_phrase"]);
    assert_eq!(check["lengths"][0]["length"], 31);
    assert_eq!(check["lengths"][0]["max_chars"], 100);
    assert!(check["quota"]["next_slot_at"].is_null());
    let too_long = structured(
        &call(
            &writer,
            "check_draft",
            json!({"channel": "cats", "text": "#ad ".repeat(30)}),
        )
        .await,
    );
    assert_eq!(too_long["accepted"], false);
    assert_eq!(too_long["violations"][0]["kind"], "too_long");
    assert_eq!(too_long["violations"][0]["blocks"], "draft");
    let posts = ok_json(&call(&writer, "list_posts", json!({})).await);
    assert_eq!(posts, json!([]), "checks draft nothing");
    let refused = refusal(
        &call(
            &writer,
            "check_draft",
            json!({"channel": "birds", "text": "x"}),
        )
        .await,
    );
    assert!(refused.contains("unknown channel"), "{refused}");

    // Drafted all the same, with its problems in the answer and on the timeline.
    let drafted = call(
        &writer,
        "draft_post",
        json!({"channel": "cats", "text": "A cat on every lap, guaranteed.", "test": true}),
    )
    .await;
    let post = structured(&drafted);
    assert_eq!(ok_json(&drafted), post, "the text is the JSON");
    assert_eq!(post["status"], "draft");
    assert_eq!(post["test"], true);
    assert_eq!(post["violations"][0]["kind"], "forbidden_phrase");
    let detail = ok_json(&call(&writer, "get_post", json!({"id": post["id"]})).await);
    assert!(
        detail["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "policy_warning"),
        "{detail}"
    );

    // Discarded: gone from the list, its events kept.
    let discarded = structured(&call(&writer, "discard_post", json!({"id": post["id"]})).await);
    assert_eq!(discarded, json!({"id": post["id"], "discarded": true}));
    let gone = refusal(&call(&writer, "get_post", json!({"id": post["id"]})).await);
    assert!(gone.contains("not found"), "{gone}");
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;
    let refused = refusal(&call(&critic, "discard_post", json!({"id": 1})).await);
    assert!(refused.contains("forbidden"), "{refused}");
}

#[tokio::test]
async fn a_writer_pages_through_its_own_posts() {
    let h = harness().await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let other = h.client_for("other-writer", &[Role::Writer]).await;
    let mut mine = Vec::new();
    for n in 0..5 {
        let client = if n % 2 == 0 { &writer } else { &other };
        let post = ok_json(
            &call(
                client,
                "draft_post",
                json!({"channel": "dogs", "text": format!("Dog number {n}")}),
            )
            .await,
        );
        if n % 2 == 0 {
            mine.push(post["id"].clone());
        }
    }
    mine.reverse();
    let first = call(&writer, "list_posts", json!({"mine": true, "limit": 2})).await;
    let page = structured(&first);
    let ids: Vec<Value> = page["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].clone())
        .collect();
    assert_eq!(ids, mine[..2]);
    assert_eq!(page["next"], mine[1]);
    assert_eq!(ok_json(&first), page["posts"], "the text is the list");
    let second = structured(
        &call(
            &writer,
            "list_posts",
            json!({"mine": true, "limit": 2, "before": page["next"]}),
        )
        .await,
    );
    assert_eq!(second["posts"].as_array().unwrap().len(), 1);
    assert_eq!(second["posts"][0]["id"], mine[2]);
    assert!(second["next"].is_null(), "the last page");
    let everyone = structured(&call(&writer, "list_posts", json!({})).await);
    assert_eq!(everyone["posts"].as_array().unwrap().len(), 5);
    let refused = refusal(&call(&writer, "list_posts", json!({"limit": 0})).await);
    assert!(refused.contains("limit"), "{refused}");
}

/// A retried pass (its answer lost) answers as the first did instead of 409.
#[tokio::test]
async fn a_retried_submit_verdict_pass_answers_the_same_result() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;
    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "Breakfast at eight."}),
        )
        .await,
    );
    let packet = ok_json(&call(&critic, "get_review_packet", json!({"id": post["id"]})).await);
    let args = json!({
        "id": post["id"],
        "verdict": "pass",
        "content_hash": packet["content_hash"],
        "rubric_hash": packet["rubric"]["hash"],
    });
    let first = structured(&call(&critic, "submit_verdict", args.clone()).await);
    let again = structured(&call(&critic, "submit_verdict", args).await);
    assert_eq!(first["effect"], "approved");
    assert_eq!(again["effect"], "approved");
    assert_eq!(again["verdict"], first["verdict"]);
    assert_eq!(again["post"]["status"], "approved");
}

/// Every tool declares an object output schema, and its results carry structured content
/// (an object) whose text is the same JSON, or the list it wraps.
#[tokio::test]
async fn every_tool_declares_an_output_schema_and_answers_with_structured_content() {
    let h = harness().await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let tools = writer.list_all_tools().await.unwrap();
    let by_name: BTreeMap<String, _> = tools.iter().map(|t| (t.name.to_string(), t)).collect();
    assert_eq!(by_name.keys().cloned().collect::<Vec<_>>(), TOOLS);
    for (name, tool) in &by_name {
        let schema = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{name} declares no output schema"));
        assert_eq!(schema.get("type"), Some(&json!("object")), "{name}");
        // The result, or the refusal envelope every error result carries.
        let any_of = schema["anyOf"].as_array().expect("anyOf");
        assert_eq!(any_of.len(), 2, "{name}");
        assert!(
            any_of[0].get("properties").is_some() || any_of[0].get("allOf").is_some(),
            "{name}: {schema:?}"
        );
        assert_eq!(any_of[1], json!({"$ref": "#/$defs/ErrorBody"}), "{name}");
    }
    let post = structured(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "dogs", "text": "Rex"}),
        )
        .await,
    );
    for (tool, args) in [
        ("get_post", json!({"id": post["id"]})),
        ("get_review_packet", json!({"id": post["id"]})),
        ("update_draft", json!({"id": post["id"], "text": "Rex!"})),
        ("quota_status", json!({})),
        ("list_channels", json!({})),
        ("list_posts", json!({})),
        ("check_draft", json!({"channel": "dogs", "text": "Rex"})),
    ] {
        let result = call(&writer, tool, args).await;
        assert!(structured(&result).is_object(), "{tool}");
    }
}
