//! The tools in-process over a duplex pipe with the rmcp client: schemas, annotations,
//! roles, separation of duties, quotas, pauses and idempotent drafts.

use std::collections::BTreeMap;

use airlock_app::Principal;
use airlock_core::Role;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn tools_list_returns_the_thirteen_tools_with_schemas_and_annotations() {
    let h = Harness::new(3).await;
    let client = h.client_for("reader", &[Role::Writer]).await;

    let info = client.peer_info().expect("the server introduced itself");
    let instructions = info.instructions.clone().unwrap_or_default();
    for needle in ["approve_post", "critic", "quota", "needs_review"] {
        assert!(
            instructions.contains(needle),
            "instructions lack {needle}: {instructions}"
        );
    }

    let tools = client.list_all_tools().await.unwrap();
    let by_name: BTreeMap<String, _> = tools.iter().map(|t| (t.name.to_string(), t)).collect();
    assert_eq!(by_name.keys().cloned().collect::<Vec<_>>(), TOOLS);

    for (name, tool) in &by_name {
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(
            description.contains("role"),
            "{name}'s description names no role: {description}"
        );
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{name}"
        );
        assert_eq!(
            tool.input_schema.get("additionalProperties"),
            Some(&json!(false)),
            "{name} must refuse unknown arguments"
        );
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert!(annotations.read_only_hint.is_some(), "{name}");
        assert!(annotations.destructive_hint.is_some(), "{name}");
        assert!(annotations.idempotent_hint.is_some(), "{name}");
    }

    let draft = by_name["draft_post"];
    let properties = draft.input_schema["properties"].as_object().unwrap();
    let mut fields: Vec<&str> = properties.keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "allow_past",
            "channel",
            "first_comment",
            "idempotency_key",
            "link",
            "media",
            "parts",
            "scheduled_at",
            "test",
            "text",
            "title"
        ]
    );
    let mut required: Vec<&str> = draft.input_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    // A thread gives `parts` instead of `text`; a client that sends `text` as before works.
    assert_eq!(required, ["channel"]);
    for (field, schema) in properties {
        assert!(
            schema.get("description").is_some(),
            "draft_post.{field} has no description"
        );
    }
    let update = by_name["update_draft"].input_schema["properties"]
        .as_object()
        .unwrap();
    let mut fields: Vec<&str> = update.keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "allow_past",
            "first_comment",
            "id",
            "link",
            "media",
            "parts",
            "scheduled_at",
            "text",
            "title"
        ]
    );
    assert!(by_name["reject_post"].input_schema["properties"]["reason"].is_object());
    assert!(
        by_name["list_posts"].input_schema["properties"]
            .as_object()
            .unwrap()
            .contains_key("status")
    );

    for name in [
        "list_posts",
        "get_post",
        "get_review_packet",
        "quota_status",
        "list_channels",
        "check_draft",
    ] {
        let annotations = by_name[name].annotations.as_ref().unwrap();
        assert_eq!(annotations.read_only_hint, Some(true), "{name}");
    }
    for name in [
        "draft_post",
        "update_draft",
        "approve_post",
        "reject_post",
        "submit_verdict",
        "publish_post",
        "discard_post",
    ] {
        let annotations = by_name[name].annotations.as_ref().unwrap();
        assert_eq!(annotations.read_only_hint, Some(false), "{name}");
    }
    let verdict = &by_name["submit_verdict"].input_schema;
    let mut required: Vec<&str> = verdict["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(
        required,
        ["content_hash", "id", "rubric_hash", "verdict"],
        "the critic tool always carries the hashes the critic read"
    );
    for tool in ["approve_post", "reject_post"] {
        assert!(
            by_name[tool].input_schema["properties"]["content_hash"].is_object(),
            "{tool} takes the reviewed content_hash"
        );
    }
    let publish = by_name["publish_post"].annotations.as_ref().unwrap();
    assert_eq!(publish.destructive_hint, Some(true));
    assert_eq!(publish.open_world_hint, Some(true));
    assert_eq!(publish.idempotent_hint, Some(true));
    let draft = by_name["draft_post"].annotations.as_ref().unwrap();
    assert_eq!(draft.destructive_hint, Some(false));
    assert_eq!(draft.idempotent_hint, Some(false));
}

#[tokio::test]
async fn a_writer_drafts_but_approving_is_refused_with_a_tool_error_naming_the_missing_role() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;

    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "Mochi naps in the sun", "media": [{"url": "https://inn.example/m.jpg", "alt": "Mochi"}]}),
        )
        .await,
    );
    assert_eq!(post["status"], "draft");
    assert_eq!(post["channel"], "cats");
    assert_eq!(post["media"][0]["alt"], "Mochi");

    let refused = refusal(&call(&writer, "approve_post", json!({"id": post["id"]})).await);
    assert!(refused.contains("critic"), "{refused}");
    assert!(
        refused.contains("forbidden"),
        "the code is given: {refused}"
    );

    let refused = refusal(&call(&writer, "publish_post", json!({"id": post["id"]})).await);
    assert!(refused.contains("publisher"), "{refused}");
}

#[tokio::test]
async fn a_critic_approves_a_draft_another_token_wrote() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;

    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "hello"}),
        )
        .await,
    );
    let approved = ok_json(&call(&critic, "approve_post", json!({"id": post["id"]})).await);
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["approved_hash"], approved["content_hash"]);

    let refused = refusal(
        &call(
            &critic,
            "draft_post",
            json!({"channel": "cats", "text": "x"}),
        )
        .await,
    );
    assert!(refused.contains("writer"), "{refused}");
}

#[tokio::test]
async fn the_drafting_token_cannot_approve_its_own_draft() {
    let h = Harness::new(3).await;
    let both = h
        .client_for("both-agent", &[Role::Writer, Role::Critic])
        .await;
    let other = h.client_for("other-critic", &[Role::Critic]).await;

    let post = ok_json(
        &call(
            &both,
            "draft_post",
            json!({"channel": "cats", "text": "mine"}),
        )
        .await,
    );
    let refused = refusal(&call(&both, "approve_post", json!({"id": post["id"]})).await);
    assert!(refused.contains("separation of duties"), "{refused}");

    // An edit by the same token keeps it the last editor; another critic may approve.
    ok_json(
        &call(
            &both,
            "update_draft",
            json!({"id": post["id"], "text": "mine, edited"}),
        )
        .await,
    );
    let approved = ok_json(&call(&other, "approve_post", json!({"id": post["id"]})).await);
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["text"], "mine, edited");
}

#[tokio::test]
async fn a_publisher_publishes_and_over_quota_is_told_when_the_next_slot_frees() {
    let h = Harness::new(1).await;
    let publisher = h.client_for("publisher-agent", &[Role::Publisher]).await;
    let first = h.approved("cats", "first").await;
    let second = h.approved("dogs", "second").await;

    let posted = ok_json(&call(&publisher, "publish_post", json!({"id": first.id})).await);
    assert_eq!(posted["status"], "posted");
    assert!(
        posted["permalink"]
            .as_str()
            .unwrap()
            .starts_with("sandbox://cats/")
    );

    let result = call(&publisher, "publish_post", json!({"id": second.id})).await;
    let refused = refusal(&result);
    assert!(refused.contains("over quota"), "{refused}");
    assert!(refused.contains("the next slot frees at"), "{refused}");
    assert!(refused.contains("over_quota"), "{refused}");
    let structured = result.structured_content.expect("the HTTP error shape");
    assert_eq!(structured["error"]["code"], "over_quota");

    let again = ok_json(&call(&publisher, "get_post", json!({"id": second.id})).await);
    assert_eq!(again["status"], "approved", "over quota is not a failure");

    let quota = ok_json(&call(&publisher, "quota_status", json!({})).await);
    assert_eq!(quota["window"]["used"], 1);
    assert_eq!(quota["window"]["remaining"], 0);
    assert!(quota["window"]["next_free_at"].is_string(), "{quota}");
}

#[tokio::test]
async fn a_paused_channel_refuses_publishing_and_names_the_reason() {
    let h = Harness::new(3).await;
    let publisher = h.client_for("publisher-agent", &[Role::Publisher]).await;
    let post = h.approved("cats", "later").await;
    h.app
        .pause(&Principal::cli(), Some("cats"), "the vet visit runs late")
        .await
        .unwrap();

    let refused = refusal(&call(&publisher, "publish_post", json!({"id": post.id})).await);
    assert!(refused.contains("paused"), "{refused}");
    assert!(refused.contains("the vet visit runs late"), "{refused}");

    let channels = ok_json(&call(&publisher, "list_channels", json!({})).await);
    let cats = channels
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cats")
        .unwrap();
    assert_eq!(cats["paused"], true);
    assert_eq!(cats["pause_reason"], "the vet visit runs late");
    assert_eq!(cats["kind"], "sandbox");
}

#[tokio::test]
async fn drafting_twice_with_the_same_idempotency_key_returns_the_same_post() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let args = json!({"channel": "cats", "text": "once", "idempotency_key": "run-42"});

    let first = ok_json(&call(&writer, "draft_post", args.clone()).await);
    let second = ok_json(&call(&writer, "draft_post", args).await);
    assert_eq!(first["id"], second["id"]);

    let posts = ok_json(&call(&writer, "list_posts", json!({"channel": "cats"})).await);
    assert_eq!(posts.as_array().unwrap().len(), 1);

    let refused = refusal(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "different", "idempotency_key": "run-42"}),
        )
        .await,
    );
    assert!(refused.contains("conflict"), "{refused}");
}

#[tokio::test]
async fn unknown_or_invalid_arguments_are_tool_errors_that_say_what_is_wrong() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;

    let refused = refusal(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "body": "x"}),
        )
        .await,
    );
    assert!(refused.contains("draft_post"), "{refused}");
    assert!(refused.contains("body"), "{refused}");

    let refused = refusal(&call(&writer, "get_post", json!({"id": "seven"})).await);
    assert!(refused.contains("get_post"), "{refused}");

    let refused = refusal(&call(&writer, "list_posts", json!({"status": "published"})).await);
    assert!(refused.contains("published"), "{refused}");

    let refused = refusal(&call(&writer, "quota_status", json!({"verbose": true})).await);
    assert!(refused.contains("verbose"), "{refused}");

    let refused = refusal(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "birds", "text": "x"}),
        )
        .await,
    );
    assert!(refused.contains("unknown channel"), "{refused}");
    assert!(
        refused.contains("cats"),
        "names the configured ones: {refused}"
    );

    let refused = refusal(&call(&writer, "get_post", json!({"id": 999})).await);
    assert!(refused.contains("not found"), "{refused}");
}

#[tokio::test]
async fn reads_answer_with_the_json_of_the_http_api() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;
    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "dogs", "text": "woof", "title": "Rex"}),
        )
        .await,
    );

    let rejected = ok_json(
        &call(
            &critic,
            "reject_post",
            json!({"id": post["id"], "reason": "too short"}),
        )
        .await,
    );
    assert_eq!(rejected["status"], "draft");
    assert!(rejected["error"].as_str().unwrap().contains("too short"));

    let detail = ok_json(&call(&writer, "get_post", json!({"id": post["id"]})).await);
    for field in ["id", "channel", "status", "text", "content_hash", "events"] {
        assert!(
            detail.get(field).is_some(),
            "get_post lacks {field}: {detail}"
        );
    }
    assert!(!detail["events"].as_array().unwrap().is_empty());

    let drafts = ok_json(&call(&writer, "list_posts", json!({"status": "draft"})).await);
    assert_eq!(drafts[0]["id"], post["id"]);
    let posted = ok_json(&call(&writer, "list_posts", json!({"status": "posted"})).await);
    assert_eq!(posted, json!([]));

    let quota = ok_json(&call(&writer, "quota_status", json!({})).await);
    assert_eq!(quota["channels"].as_array().unwrap().len(), 2);
}

/// stdio: the server authenticates its token on every call, so a token revoked while it
/// runs refuses the very next call and drafts nothing.
#[tokio::test]
async fn a_token_revoked_while_the_server_runs_stops_at_the_next_call() {
    let h = Harness::new(3).await;
    let client = h.client_for("stdio-agent", &[Role::Writer]).await;
    ok_json(&call(&client, "list_posts", json!({})).await);
    h.app
        .revoke_token(&Principal::cli(), "stdio-agent")
        .await
        .unwrap();
    let refused = refusal(
        &call(
            &client,
            "draft_post",
            json!({"channel": "cats", "text": "after revocation"}),
        )
        .await,
    );
    assert!(refused.contains("revoked"), "{refused}");
    let posts = h
        .app
        .list_posts(&Principal::cli(), &airlock_store::PostFilter::default())
        .await
        .unwrap();
    assert!(posts.is_empty(), "nothing was drafted after revocation");
}

#[tokio::test]
async fn list_posts_gives_each_text_as_an_excerpt_and_get_post_the_whole_text() {
    let h = Harness::new(3).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let long = "猫".repeat(2000);
    let drafted = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": long}),
        )
        .await,
    );
    let posts = ok_json(&call(&writer, "list_posts", json!({})).await);
    let listed = &posts.as_array().unwrap()[0];
    assert_eq!(listed["id"], drafted["id"]);
    assert_eq!(listed["text"].as_str().unwrap().chars().count(), 500);
    assert_eq!(listed["text_truncated"], true);
    assert_eq!(listed["content_hash"], drafted["content_hash"]);
    let whole = ok_json(&call(&writer, "get_post", json!({"id": drafted["id"]})).await);
    assert_eq!(whole["text"].as_str().unwrap().chars().count(), 2000);
}
