//! Posts of several parts through the guarded path: each part once, in a chain, resumed
//! at the first part not out after a lost answer or a dead worker, one publish counted,
//! and media bytes bound to the approval.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::publish::PublishResult;
use airlock_app::{App, Principal};
use airlock_core::{ChannelKind, Media, Outcome, Part, PostId, PostStatus};
use airlock_platforms::sandbox::{Sandbox, Simulate};
use airlock_platforms::{
    Account, Evidence, Platform, Prepared, PublishRequest, ReconcileRequest, StepError,
};

use crate::support::*;

/// A sandbox that loses the answer of one part (the line is written, the worker hears
/// nothing) or dies right after sending it.
#[derive(Debug)]
struct Flaky {
    inner: Sandbox,
    part: u32,
    panics: bool,
    armed: AtomicBool,
}

#[async_trait]
impl Platform for Flaky {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Sandbox
    }
    fn prepares(&self) -> bool {
        false
    }
    async fn account(&self) -> Result<Option<Account>, StepError> {
        Ok(None)
    }
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        let outcome = self.inner.publish(req, prepared).await;
        if req.part.number == self.part && self.armed.swap(false, Ordering::SeqCst) {
            if self.panics {
                panic!("killed after part {} left", self.part);
            }
            return Outcome::Unknown {
                reason: "timed out after sending".into(),
            };
        }
        outcome
    }
    async fn reconcile(&self, req: &ReconcileRequest) -> Evidence {
        self.inner.reconcile(req).await
    }
}

fn flaky(dir: &std::path::Path, part: u32, panics: bool) -> TestChannel {
    let mut channel = sandbox(dir, "thread", Simulate::Ok, 1);
    channel.platform = Arc::new(Flaky {
        inner: Sandbox::new(name("thread"), dir.join("thread.jsonl"), Simulate::Ok),
        part,
        panics,
        armed: AtomicBool::new(true),
    });
    channel
}

fn thread(channel: &str, texts: &[&str], comment: Option<&str>) -> DraftInput {
    DraftInput {
        channel: channel.into(),
        parts: Some(
            texts
                .iter()
                .map(|t| Part {
                    text: (*t).into(),
                    media: vec![],
                })
                .collect(),
        ),
        first_comment: comment.map(str::to_owned),
        ..DraftInput::default()
    }
}

async fn approved_thread(app: &App, input: DraftInput) -> PostId {
    let me = Principal::cli();
    let post = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap().id
}

/// The sandbox lines of a post, in order: (part, text, reply_to).
fn lines(h: &Harness, file: &str, id: PostId) -> Vec<(u64, String, Option<String>, String)> {
    std::fs::read_to_string(h.path(file))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["post_id"] == id.0)
        .map(|l| {
            (
                l["part"].as_u64().unwrap_or(1),
                l["text"].as_str().unwrap().to_owned(),
                l["reply_to"].as_str().map(str::to_owned),
                l["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn assert_chain(found: &[(u64, String, Option<String>, String)], texts: &[&str]) {
    assert_eq!(
        found.iter().map(|l| l.1.as_str()).collect::<Vec<_>>(),
        texts,
        "each part once, in order"
    );
    for pair in found.windows(2) {
        assert_eq!(
            pair[1].2.as_deref(),
            Some(pair[0].3.as_str()),
            "a reply to the part before"
        );
    }
}

#[tokio::test]
async fn a_thread_goes_out_part_by_part_and_counts_one_publish() {
    let h = Harness::new(|dir| vec![sandbox(dir, "thread", Simulate::Ok, 1)]).await;
    let app = h.app();
    let id = approved_thread(
        &app,
        thread("thread", &["1/3", "2/3", "3/3"], Some("more below")),
    )
    .await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.result, PublishResult::Posted);
    assert_chain(
        &lines(&h, "thread.jsonl", id),
        &["1/3", "2/3", "3/3", "more below"],
    );
    let detail = app.store().post_detail(id).await.unwrap();
    assert_eq!(detail.post.status, PostStatus::Posted);
    assert_eq!(
        detail
            .intents
            .iter()
            .map(|i| (i.part, i.phase.as_str()))
            .collect::<Vec<_>>(),
        [
            (1, "succeeded"),
            (2, "succeeded"),
            (3, "succeeded"),
            (4, "succeeded")
        ]
    );
    assert_eq!(
        detail.post.platform_post_id.as_deref(),
        detail.intents[0].platform_post_id.as_deref(),
        "the post is named by its first part"
    );
    let committed = detail
        .reservations
        .iter()
        .filter(|r| r.state == "committed")
        .count();
    assert_eq!(
        (committed, detail.reservations.len()),
        (1, 1),
        "one publish counted"
    );
    // The daily limit of 1 is taken by the whole thread.
    let single = approved(&app, "thread", "another").await;
    assert!(matches!(
        app.publish_next(None).await.unwrap().unwrap().result,
        PublishResult::Deferred { .. }
    ));
    assert_eq!(status(&app, single.id).await, PostStatus::Approved);
}

#[tokio::test]
async fn a_lost_answer_of_part_three_is_settled_by_its_key_and_the_rest_follows_once() {
    let h = Harness::new(|dir| vec![flaky(dir, 3, false)]).await;
    let app = h.app();
    let texts = ["1/5", "2/5", "3/5", "4/5", "5/5"];
    let id = approved_thread(&app, thread("thread", &texts, None)).await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(
        matches!(&report.result, PublishResult::NeedsReview { reason } if reason.contains("part 3 of 5") && reason.contains("parts 1 to 2 are out")),
        "{:?}",
        report.result
    );
    assert_eq!(lines(&h, "thread.jsonl", id).len(), 3);
    // Reconcile proves part 3 by its record (its key): the post goes on, its pause lifted.
    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!(status(&app, id).await, PostStatus::Approved);
    assert!(app.store().pauses().await.unwrap().is_empty());
    // What is out stays as approved: the rest goes out under that same approval.
    let edit = airlock_app::posts::EditInput {
        text: Some("1/5, rewritten".into()),
        ..Default::default()
    };
    let err = app
        .edit_post(&Principal::cli(), id, edit)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("parts 1 to 3 are already out"),
        "{err}"
    );
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(
        report.result,
        PublishResult::Posted,
        "{:?}",
        report.post.error
    );
    assert_chain(&lines(&h, "thread.jsonl", id), &texts);
    let detail = app.store().post_detail(id).await.unwrap();
    let committed = detail
        .reservations
        .iter()
        .filter(|r| r.state == "committed")
        .count();
    assert_eq!(
        (committed, detail.reservations.len()),
        (1, 1),
        "resuming reserves nothing more"
    );
}

#[tokio::test]
async fn a_worker_killed_after_part_two_left_resumes_at_part_three() {
    let h = Harness::new(|dir| vec![flaky(dir, 2, true)]).await;
    let app = h.app();
    let texts = ["1/5", "2/5", "3/5", "4/5", "5/5"];
    let id = approved_thread(&app, thread("thread", &texts, None)).await;
    // The panic is caught and the post settled as the reaper would: part 2's intent is
    // there, so a person or proof must settle it.
    assert!(app.publish_next(None).await.is_err());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    app.reconcile().await.unwrap();
    assert_eq!(status(&app, id).await, PostStatus::Approved);
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.result, PublishResult::Posted);
    assert_chain(&lines(&h, "thread.jsonl", id), &texts);
}

#[tokio::test]
async fn a_person_settles_a_part_by_its_id_and_refuses_without_one() {
    // Unknown at part 2, and a platform that can prove nothing: a person settles it.
    let h = Harness::new(|dir| {
        let mut channel = flaky(dir, 2, false);
        channel.platform = Arc::new(Flaky {
            inner: Sandbox::new(name("thread"), dir.join("elsewhere.jsonl"), Simulate::Ok),
            part: 2,
            panics: false,
            armed: AtomicBool::new(true),
        });
        vec![channel]
    })
    .await;
    let app = h.app();
    let id = approved_thread(&app, thread("thread", &["a", "b", "c"], None)).await;
    app.publish_next(None).await.unwrap();
    std::fs::remove_file(h.path("elsewhere.jsonl")).unwrap();
    assert!(
        app.reconcile().await.unwrap().is_empty(),
        "nothing proves it"
    );
    let me = Principal::cli();
    let err = app
        .resolve(
            &me,
            id,
            airlock_app::review::Resolution::Published {
                permalink: None,
                platform_post_id: None,
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--platform-post-id"), "{err}");
    let post = app
        .resolve(
            &me,
            id,
            airlock_app::review::Resolution::Published {
                permalink: None,
                platform_post_id: Some("b-id".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(post.status, PostStatus::Approved);
    app.resume(&me, Some("thread")).await.unwrap();
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.result, PublishResult::Posted);
    let sent = lines(&h, "elsewhere.jsonl", id);
    assert_eq!(sent.len(), 1, "only part 3 went out after");
    assert_eq!(
        sent[0].2.as_deref(),
        Some("b-id"),
        "replying to the id the person gave"
    );
}

#[tokio::test]
async fn parts_a_platform_cannot_take_are_refused_when_drafted() {
    let h = Harness::new(|dir| {
        vec![
            sandbox(dir, "thread", Simulate::Ok, 10),
            webhook(
                "hook",
                "http://127.0.0.1:9/",
                std::time::Duration::from_secs(1),
                10,
            ),
        ]
    })
    .await;
    let app = h.app();
    let me = Principal::cli();
    let err = app
        .create_post(
            &me,
            thread("hook", &["a", "b"], None),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("single posts only"), "{err}");
    let err = app
        .create_post(
            &me,
            thread("hook", &["a"], Some("c")),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no first comment"), "{err}");
    let err = app
        .create_post(
            &me,
            thread("thread", &["a", ""], None),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("part 2"), "{err}");
    let mut input = thread("thread", &["a", "b"], None);
    input.text = "not a".into();
    let err = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("part 1"), "{err}");
    assert!(
        app.list_posts(&me, &Default::default())
            .await
            .unwrap()
            .is_empty(),
        "nothing half-written"
    );
}

#[tokio::test]
async fn an_image_swapped_after_approval_stops_the_post_before_anything_is_sent() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let images = MockServer::start().await;
    // A PNG header of a 2x3 image; the last byte tells two files apart.
    let png = |seed: u8| {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x03\x08\x02\0\0\0".to_vec();
        bytes.push(seed);
        bytes
    };
    Mock::given(method("GET"))
        .and(path("/cat.png"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(png(1)))
        .up_to_n_times(1)
        .mount(&images)
        .await;
    let mut h = Harness::new(|dir| vec![sandbox(dir, "thread", Simulate::Ok, 10)]).await;
    h.settings.media_fetch_timeout = Some(chrono::Duration::seconds(5));
    let app = h.app();
    let me = Principal::cli();
    let mut input = thread("thread", &["look", "a cat"], None);
    input.parts.as_mut().unwrap()[1].media = vec![Media::new(
        format!("{}/cat.png", images.uri()),
        Some("a cat".into()),
    )];
    let post = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    let image = &post.content.more[0].media[0];
    assert_eq!(image.content_type.as_deref(), Some("image/png"));
    assert_eq!((image.width, image.height), (Some(2), Some(3)));
    assert_eq!(
        image.sha256.as_deref(),
        Some(airlock_core::hash::sha256_hex(&png(1)).as_str())
    );
    app.approve(&me, post.id).await.unwrap();
    // Swapped at the URL after approval.
    Mock::given(method("GET"))
        .and(path("/cat.png"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(png(2)))
        .mount(&images)
        .await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    let PublishResult::Failed { reason } = &report.result else {
        panic!("{:?}", report.result)
    };
    assert!(
        reason.contains("part 2") && reason.contains("changed since it was approved"),
        "{reason}"
    );
    assert!(
        reason.contains(&airlock_core::hash::sha256_hex(&png(2))),
        "both digests: {reason}"
    );
    assert_eq!(
        lines(&h, "thread.jsonl", post.id).len(),
        0,
        "nothing was sent"
    );

    // A URL that does not answer is refused when drafted, naming the part.
    let mut input = thread("thread", &["one", "two"], None);
    input.parts.as_mut().unwrap()[1].media =
        vec![Media::new(format!("{}/missing.png", images.uri()), None)];
    let err = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("part 2") && err.to_string().contains("404"),
        "{err}"
    );
}

#[tokio::test]
async fn an_operators_pause_outlasts_the_proof_of_a_part() {
    let h = Harness::new(|dir| vec![flaky(dir, 2, false)]).await;
    let app = h.app();
    let id = approved_thread(&app, thread("thread", &["a", "b", "c"], None)).await;
    app.publish_next(None).await.unwrap();
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    // The channel is paused by the unknown outcome; an operator pauses it too.
    let me = Principal::cli();
    app.pause(&me, Some("thread"), "maintenance until Monday")
        .await
        .unwrap();
    app.reconcile().await.unwrap();
    assert_eq!(
        status(&app, id).await,
        PostStatus::Approved,
        "part 2 proved out"
    );
    let pauses = app.store().pauses().await.unwrap();
    assert_eq!(pauses.len(), 1, "the operator's pause holds");
    assert_eq!(pauses[0].reason, "maintenance until Monday");
    assert!(
        app.publish_next(None).await.unwrap().is_none(),
        "nothing goes out while paused"
    );
    assert_eq!(lines(&h, "thread.jsonl", id).len(), 2);
}

/// A sandbox whose answer to part 1 asks to stop the channel (as a Bluesky server that
/// ignored airlock's record key does).
#[derive(Debug)]
struct AsksToPause(Sandbox);

#[async_trait]
impl Platform for AsksToPause {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Sandbox
    }
    fn prepares(&self) -> bool {
        false
    }
    async fn account(&self) -> Result<Option<Account>, StepError> {
        Ok(None)
    }
    async fn publish(&self, req: &PublishRequest, prepared: &Prepared) -> Outcome {
        match self.0.publish(req, prepared).await {
            Outcome::Published(mut published) if req.part.number == 1 => {
                published.pause = Some("the server chose its own key".into());
                Outcome::Published(published)
            }
            outcome => outcome,
        }
    }
}

#[tokio::test]
async fn a_part_whose_answer_asks_for_a_pause_stops_the_thread_there() {
    let h = Harness::new(|dir| {
        let mut channel = sandbox(dir, "thread", Simulate::Ok, 1);
        channel.platform = Arc::new(AsksToPause(Sandbox::new(
            name("thread"),
            dir.join("thread.jsonl"),
            Simulate::Ok,
        )));
        vec![channel]
    })
    .await;
    let app = h.app();
    let id = approved_thread(&app, thread("thread", &["a", "b", "c"], None)).await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(
        matches!(report.result, PublishResult::Held { .. }),
        "{:?}",
        report.result
    );
    assert_eq!(status(&app, id).await, PostStatus::Approved);
    assert_eq!(
        lines(&h, "thread.jsonl", id).len(),
        1,
        "only part 1 went out"
    );
    let pauses = app.store().pauses().await.unwrap();
    assert!(pauses[0].reason.contains("its own key"), "{pauses:?}");
    // A person resumes: the rest goes out once, after part 1.
    app.resume(&Principal::cli(), Some("thread")).await.unwrap();
    app.publish_next(None).await.unwrap();
    assert_chain(&lines(&h, "thread.jsonl", id), &["a", "b", "c"]);
}
