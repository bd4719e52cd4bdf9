//! The critic's tools in-process over rmcp: a critic agent fetches the review packet,
//! fails a draft twice with reasons its writer reads back, and the third try is
//! quarantined until an operator releases it; two required approvals need two critics;
//! a verdict on content the critic did not read is refused.

use std::sync::Arc;

use airlock_app::Principal;
use airlock_app::critic::RubricSource;
use airlock_core::review::Rubric;
use airlock_core::{PostId, PostStatus, Role};
use serde_json::{Value, json};

use crate::support::*;

const RUBRIC: &str =
    "# Inn rubric\n\n- tone: Warm, never pushy.\n- claims: Only what is true of the inn.\n";

#[derive(Debug)]
struct InnRubric;

impl RubricSource for InnRubric {
    fn read(&self) -> Result<Rubric, String> {
        Ok(Rubric::parse(RUBRIC))
    }

    fn origin(&self) -> String {
        "rubrics/inn.md".into()
    }
}

async fn harness(approvals_required: u32) -> Harness {
    Harness::with_review(3, move |channel| {
        channel.review.rules.approvals_required = approvals_required;
        channel.review.rubric = Arc::new(InnRubric);
    })
    .await
}

fn verdict(packet: &Value, verdict: &str, reasons: &[&str]) -> Value {
    json!({
        "id": packet["post"]["id"],
        "verdict": verdict,
        "content_hash": packet["content_hash"],
        "rubric_hash": packet["rubric"]["hash"],
        "reasons": reasons,
    })
}

fn code(result: &rmcp::model::CallToolResult) -> String {
    result.structured_content.as_ref().unwrap()["error"]["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_critic_agent_fails_a_draft_twice_and_the_third_try_waits_for_an_operator() {
    let h = harness(1).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;

    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "Guaranteed: every guest gets a cat on the lap!"}),
        )
        .await,
    );
    let id = post["id"].clone();

    let packet = ok_json(&call(&critic, "get_review_packet", json!({"id": id})).await);
    assert_eq!(packet["content_hash"], post["content_hash"]);
    assert_eq!(packet["rubric"]["origin"], "rubrics/inn.md");
    assert_eq!(packet["rubric"]["items"][0]["id"], "tone");
    assert_eq!(packet["channel"]["max_revisions"], 2);
    assert_eq!(packet["revisions"]["left"], 2);
    assert_eq!(packet["verdict_allowed"], true);
    assert!(
        packet["instructions"]
            .as_str()
            .unwrap()
            .contains("submit_verdict")
    );

    // Reasons must name rubric items.
    let unnamed = call(
        &critic,
        "submit_verdict",
        verdict(&packet, "fail", &["no guarantees"]),
    )
    .await;
    assert!(refusal(&unnamed).contains("tone, claims"));

    let first = ok_json(
        &call(
            &critic,
            "submit_verdict",
            verdict(
                &packet,
                "fail",
                &[
                    "claims: no guest is guaranteed a cat",
                    "tone: drop the exclamation",
                ],
            ),
        )
        .await,
    );
    assert_eq!(first["effect"], "returned_to_writer");
    assert_eq!(first["post"]["status"], "draft");
    assert_eq!(first["verdict"]["verdict"], "fail");

    // The writer reads the reasons back and revises the same post.
    let seen = ok_json(&call(&writer, "get_post", json!({"id": id})).await);
    assert!(
        seen["error"]
            .as_str()
            .unwrap()
            .contains("claims: no guest is guaranteed a cat")
    );
    assert_eq!(
        seen["verdicts"][0]["reasons"],
        json!([
            "claims: no guest is guaranteed a cat",
            "tone: drop the exclamation"
        ])
    );
    ok_json(
        &call(
            &writer,
            "update_draft",
            json!({"id": id, "text": "Many guests find a cat on their lap!"}),
        )
        .await,
    );

    // A verdict on the text the critic read before the edit is refused.
    let stale = call(&critic, "submit_verdict", verdict(&packet, "pass", &[])).await;
    assert!(refusal(&stale).contains("changed since it was reviewed"));
    assert_eq!(code(&stale), "conflict");

    let packet = ok_json(&call(&critic, "get_review_packet", json!({"id": id})).await);
    assert_eq!(
        packet["changes_since_last_verdict"]["fields"],
        json!(["text"])
    );
    let second = ok_json(
        &call(
            &critic,
            "submit_verdict",
            verdict(&packet, "fail", &["tone: still an exclamation"]),
        )
        .await,
    );
    assert_eq!(second["effect"], "quarantined");
    assert!(second["post"]["quarantined_at"].is_string());

    // The third try, by the writer or the critic, is refused and says why.
    let edit = call(
        &writer,
        "update_draft",
        json!({"id": id, "text": "Some guests meet a cat."}),
    )
    .await;
    assert!(refusal(&edit).contains("airlock post release"));
    assert_eq!(code(&edit), "quarantined");
    let packet = ok_json(&call(&critic, "get_review_packet", json!({"id": id})).await);
    assert_eq!(packet["verdict_allowed"], false);
    let pass = call(&critic, "submit_verdict", verdict(&packet, "pass", &[])).await;
    assert_eq!(code(&pass), "quarantined");
    let approve = call(
        &critic,
        "approve_post",
        json!({"id": id, "content_hash": packet["content_hash"]}),
    )
    .await;
    assert_eq!(code(&approve), "quarantined");

    // An operator releases it; the writer revises; a critic passes.
    let post_id = PostId(id.as_i64().unwrap());
    h.app.release(&Principal::cli(), post_id).await.unwrap();
    ok_json(
        &call(
            &writer,
            "update_draft",
            json!({"id": id, "text": "Some guests meet a cat."}),
        )
        .await,
    );
    let packet = ok_json(&call(&critic, "get_review_packet", json!({"id": id})).await);
    let passed = ok_json(&call(&critic, "submit_verdict", verdict(&packet, "pass", &[])).await);
    assert_eq!(passed["effect"], "approved");
    assert_eq!(passed["post"]["status"], "approved");
}

#[tokio::test]
async fn two_required_approvals_take_two_different_critics_passing_the_same_content() {
    let h = harness(2).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let first = h.client_for("critic-one", &[Role::Critic]).await;
    let second = h.client_for("critic-two", &[Role::Critic]).await;
    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "dogs", "text": "Dogs welcome in the garden."}),
        )
        .await,
    );
    let id = post["id"].clone();
    let packet = ok_json(&call(&first, "get_review_packet", json!({"id": id})).await);
    let one = ok_json(&call(&first, "submit_verdict", verdict(&packet, "pass", &[])).await);
    assert_eq!(one["effect"], "awaiting_approvals");
    assert_eq!(one["post"]["status"], "draft");
    // The same critic again counts once: a retry answers as the first did.
    let twice = ok_json(&call(&first, "submit_verdict", verdict(&packet, "pass", &[])).await);
    assert_eq!(twice["effect"], "awaiting_approvals");
    assert_eq!(twice["verdict"], one["verdict"]);
    assert!(
        twice["message"]
            .as_str()
            .unwrap()
            .contains("already recorded")
    );
    let packet = ok_json(&call(&second, "get_review_packet", json!({"id": id})).await);
    assert_eq!(
        packet["approvals"]["passed_by"],
        json!(["token:critic-one"])
    );
    let two = ok_json(&call(&second, "submit_verdict", verdict(&packet, "pass", &[])).await);
    assert_eq!(two["effect"], "approved");
    assert_eq!(
        h.app
            .store()
            .get_post(PostId(id.as_i64().unwrap()))
            .await
            .unwrap()
            .status,
        PostStatus::Approved
    );
}

#[tokio::test]
async fn submit_verdict_without_the_hashes_is_refused_as_invalid_arguments() {
    let h = harness(1).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;
    let result = call(
        &critic,
        "submit_verdict",
        json!({"id": 1, "verdict": "pass"}),
    )
    .await;
    let message = refusal(&result);
    assert!(message.contains("submit_verdict"), "{message}");
    assert_eq!(code(&result), "invalid");
}

#[tokio::test]
async fn approve_post_with_a_stale_content_hash_approves_nothing() {
    let h = harness(1).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;
    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "Harmless words."}),
        )
        .await,
    );
    ok_json(
        &call(
            &writer,
            "update_draft",
            json!({"id": post["id"], "text": "Words nobody reviewed."}),
        )
        .await,
    );
    let stale = call(
        &critic,
        "approve_post",
        json!({"id": post["id"], "content_hash": post["content_hash"]}),
    )
    .await;
    assert_eq!(code(&stale), "conflict");
    let rejected = call(
        &critic,
        "reject_post",
        json!({"id": post["id"], "reason": "tone: fine", "content_hash": post["content_hash"]}),
    )
    .await;
    assert_eq!(code(&rejected), "conflict");
    let now = ok_json(&call(&critic, "get_post", json!({"id": post["id"]})).await);
    assert_eq!(now["status"], "draft");
    assert_eq!(now["verdicts"], json!([]));
}

/// `reject_post` is annotated idempotent, and is: the same critic calling it again on the
/// same content (a retry, whatever its reason) records nothing more, counts no second
/// failed review (so a retry never quarantines a post), and answers the same post; after
/// a revision a fail counts again.
#[tokio::test]
async fn a_repeated_reject_post_is_a_no_op_answering_the_same_post() {
    let h = harness(1).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let critic = h.client_for("critic-agent", &[Role::Critic]).await;
    let tools = critic.list_all_tools().await.unwrap();
    let reject_tool = tools.iter().find(|t| t.name == "reject_post").unwrap();
    assert_eq!(
        reject_tool.annotations.as_ref().unwrap().idempotent_hint,
        Some(true)
    );
    let post = ok_json(
        &call(
            &writer,
            "draft_post",
            json!({"channel": "cats", "text": "Book now or miss out!"}),
        )
        .await,
    );
    let args =
        json!({"id": post["id"], "reason": "tone: pushy", "content_hash": post["content_hash"]});
    let first = ok_json(&call(&critic, "reject_post", args.clone()).await);
    assert_eq!(first["revisions"], 1);
    for _ in 0..2 {
        let again = ok_json(&call(&critic, "reject_post", args.clone()).await);
        assert_eq!(again, first, "a repeat answers the same post");
    }
    // Without the content hash, the same: the content is still what was failed.
    let no_hash = json!({"id": post["id"], "reason": "tone: pushy"});
    assert_eq!(ok_json(&call(&critic, "reject_post", no_hash).await), first);
    let detail = ok_json(&call(&critic, "get_post", json!({"id": post["id"]})).await);
    assert_eq!(detail["verdicts"].as_array().unwrap().len(), 1);
    assert_eq!(detail["revisions"], 1);
    assert_eq!(detail["quarantined_at"], Value::Null);

    // Another reason on the same content is still the same review: nothing more counts
    // until the writer revises.
    let other = json!({"id": post["id"], "reason": "claims: not true", "content_hash": post["content_hash"]});
    assert_eq!(ok_json(&call(&critic, "reject_post", other).await), first);
    let revised = ok_json(
        &call(
            &writer,
            "update_draft",
            json!({"id": post["id"], "text": "Book now, or later!"}),
        )
        .await,
    );
    // The fail of the revision is the second of max_revisions (2): it quarantines.
    let other = json!({"id": post["id"], "reason": "claims: not true", "content_hash": revised["content_hash"]});
    let second = ok_json(&call(&critic, "reject_post", other.clone()).await);
    assert_eq!(second["revisions"], 2);
    assert_ne!(second["quarantined_at"], Value::Null);
    // Its repeat, on the now quarantined post, answers the same post too.
    assert_eq!(ok_json(&call(&critic, "reject_post", other).await), second);
    let detail = ok_json(&call(&critic, "get_post", json!({"id": post["id"]})).await);
    assert_eq!(detail["verdicts"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_same_text_drafted_twice_on_a_channel_is_refused_naming_the_first() {
    let h = harness(1).await;
    let writer = h.client_for("writer-agent", &[Role::Writer]).await;
    let first = h.approved("cats", "Breakfast at eight.").await;
    let again = call(
        &writer,
        "draft_post",
        json!({"channel": "cats", "text": "breakfast at  eight."}),
    )
    .await;
    assert!(refusal(&again).contains(&format!("post {}", first.id)));
    assert_eq!(code(&again), "duplicate");
}
